//! The real `elicit` binary, answering from a file (`--answers`), against a real `travel-server`
//! process: every outcome of the form and URL steps of `book_trip`, the pending out-of-band step,
//! missing and invalid answers, `tools`, `--json`, and the stdio transport.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::cli;

use std::time::Duration;

use serde_json::{Value, json};

use cli::mock::{MockServer, Reply, TOOL};
use cli::{Browser, Run, Sandbox, TravelServer, bins, elicit};

/// The bound on every run.
const LIMIT: Duration = Duration::from_secs(60);

fn trip() -> Value {
    json!({"action": "accept", "content": {
        "from": "CDG", "to": "JFK", "depart": "2026-09-01", "travellers": 2, "cabin": "business",
        "meals": ["vegan"], "extras": ["lounge"], "email": "ada@example.com"}})
}

fn confirm() -> Value {
    json!({"action": "accept", "content": {"confirm": true}})
}

/// `elicit call --url SERVER book_trip --answers FILE --browser SCRIPT`.
fn book_trip(server: &TravelServer, sandbox: &Sandbox, answers: &Value, browser: Browser) -> Run {
    let file = sandbox.answers(answers);
    let browser = sandbox.browser(browser);
    elicit(&["call", "--url", &server.mcp_url(), "book_trip", "--answers", &file, "--browser", &browser], LIMIT)
}

#[test]
fn tools_lists_the_travel_tools() {
    let server = TravelServer::start();
    let run = elicit(&["tools", "--url", &server.mcp_url()], LIMIT).success();
    let names: Vec<&str> = run.stdout.lines().filter_map(|l| l.split('\t').next()).collect();
    assert!(names.contains(&"book_trip") && names.contains(&"rate_trip"), "{run}");
}

#[test]
fn form_and_url_accepted_books_the_trip() {
    let server = TravelServer::start();
    let sandbox = Sandbox::new();
    let answers = json!({"trip": trip(), "payment": {"action": "accept"}, "confirm": confirm()});
    let run = book_trip(&server, &sandbox, &answers, Browser::Approve)
        .success()
        .stdout_has("Booked!")
        .stdout_has("CDG → JFK on 2026-09-01, 2 traveller(s), €1888.00 paid")
        .stdout_has("ada@example.com")
        // The user is told which server asks, and the full URL before it is opened.
        .stderr_has("travel-server asks (trip)")
        .stderr_has(&format!("travel-server asks (payment) to open {}/pay/", server.base_url()));
    let opened = sandbox.opened();
    assert_eq!(opened.len(), 1, "{opened:?}\n{run}");
    assert!(opened[0].starts_with(&format!("{}/pay/", server.base_url())), "{opened:?}");
    assert!(run.stderr.contains(&opened[0]), "the URL opened is the URL shown:\n{run}");
    assert_eq!(sandbox.page_answers(), ["HTTP/1.1 200 OK"]);
}

#[test]
fn form_declined() {
    let server = TravelServer::start();
    let sandbox = Sandbox::new();
    book_trip(&server, &sandbox, &json!({"trip": {"action": "decline"}}), Browser::Approve)
        .success()
        .stdout_has("No booking made: you declined to give the trip details.");
    assert!(sandbox.opened().is_empty());
}

#[test]
fn form_cancelled() {
    let server = TravelServer::start();
    let sandbox = Sandbox::new();
    book_trip(&server, &sandbox, &json!({"trip": {"action": "cancel"}}), Browser::Approve)
        .success()
        .stdout_has("Booking cancelled before any details were given.");
    assert!(sandbox.opened().is_empty());
}

#[test]
fn url_declined_is_never_opened() {
    let server = TravelServer::start();
    let sandbox = Sandbox::new();
    let answers = json!({"trip": trip(), "payment": {"action": "decline"}, "confirm": confirm()});
    book_trip(&server, &sandbox, &answers, Browser::Approve)
        .success()
        .stdout_has("You declined to open the payment page: nothing was booked.");
    assert!(sandbox.opened().is_empty(), "opened without consent: {:?}", sandbox.opened());
}

#[test]
fn url_cancelled_is_never_opened() {
    let server = TravelServer::start();
    let sandbox = Sandbox::new();
    let answers = json!({"trip": trip(), "payment": {"action": "cancel"}, "confirm": confirm()});
    book_trip(&server, &sandbox, &answers, Browser::Approve)
        .success()
        .stdout_has("Payment cancelled: nothing was booked.");
    assert!(sandbox.opened().is_empty(), "opened without consent: {:?}", sandbox.opened());
}

#[test]
fn url_denied_on_the_page() {
    let server = TravelServer::start();
    let sandbox = Sandbox::new();
    let answers = json!({"trip": trip(), "payment": {"action": "accept"}, "confirm": confirm()});
    book_trip(&server, &sandbox, &answers, Browser::Deny)
        .success()
        .stdout_has("Payment denied on the payment page: nothing was booked.");
    assert_eq!(sandbox.opened().len(), 1);
    assert_eq!(sandbox.page_answers(), ["HTTP/1.1 200 OK"]);
}

#[test]
fn a_pending_page_is_waited_for_then_completes() {
    let server = TravelServer::start();
    let sandbox = Sandbox::new();
    let answers = json!({"trip": trip(), "payment": {"action": "accept"}, "confirm": confirm()});
    // The user takes 4 s on the page; the server waits 2 s per retry, so at least one retry finds
    // the step pending and gets the same URL request again.
    let run = book_trip(&server, &sandbox, &answers, Browser::ApproveAfter(Duration::from_secs(4)))
        .success()
        .stderr_has("waiting for the page at 127.0.0.1 to be completed")
        .stdout_has("Booked!");
    assert!(run.elapsed >= Duration::from_millis(3500), "completed before the page was submitted:\n{run}");
    assert_eq!(sandbox.opened().len(), 1, "the page is opened once, not on every retry:\n{run}");
    assert_eq!(run.stderr.matches("asks (payment) to open").count(), 1, "consent is asked once:\n{run}");
    assert_eq!(sandbox.wait_for_page_answers(1, Duration::from_secs(5)), ["HTTP/1.1 200 OK"]);
}

#[test]
fn a_key_missing_from_the_answers_file_ends_the_call_without_answering_for_the_person() {
    let server = TravelServer::start();
    let sandbox = Sandbox::new();
    let run = book_trip(&server, &sandbox, &json!({"payment": {"action": "accept"}}), Browser::Approve)
        .failure()
        .stderr_has("cannot show input request `trip` to anyone: the answers file has no answer for it");
    assert!(!run.stdout.contains("Booking cancelled"), "no cancel or decline was sent for the person:\n{run}");
}

#[test]
fn an_invalid_answer_fails_clearly() {
    let server = TravelServer::start();
    let sandbox = Sandbox::new();
    let mut bad = trip();
    bad["content"]["from"] = json!("Paris");
    bad["content"]["travellers"] = json!(12);
    let run = book_trip(&server, &sandbox, &json!({"trip": bad}), Browser::Approve)
        .failure()
        .stderr_has("the answer to `trip` was not sent because it is invalid")
        .stderr_has("`from` must be at most 3 characters long")
        .stderr_has("`travellers` must be at most 9");
    assert!(run.stdout.is_empty(), "{run}");
}

#[test]
fn an_invalid_answer_is_not_sent() {
    // A recording server shows what reached it: only the first call.
    let server = MockServer::start(|_, _| {
        Reply::Result(json!({"resultType": "input_required", "requestState": "s", "inputRequests": {"trip": {
            "method": "elicitation/create", "params": {"message": "Where to?", "requestedSchema": {"type": "object",
                "properties": {"from": {"type": "string", "minLength": 3, "maxLength": 3}}, "required": ["from"]}}}}}))
    });
    let sandbox = Sandbox::new();
    let file = sandbox.answers(&json!({"trip": {"action": "accept", "content": {"from": "Paris"}}}));
    elicit(&["call", "--url", &server.url(), TOOL, "--answers", &file], LIMIT)
        .failure()
        .stderr_has("`from` must be at most 3 characters long");
    let calls = server.calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert!(calls[0].get("inputResponses").is_none());
}

#[test]
fn an_unreadable_answers_file_fails_before_connecting() {
    let sandbox = Sandbox::new();
    let file = sandbox.answers(&json!({"trip": {"action": "maybe"}}));
    // Nothing listens on this URL: the file is checked first.
    elicit(&["call", "--url", "http://127.0.0.1:9/mcp", "book_trip", "--answers", &file], LIMIT)
        .failure()
        .stderr_has("answer `trip`");
}

#[test]
fn an_unknown_tool_exits_non_zero() {
    let server = TravelServer::start();
    let sandbox = Sandbox::new();
    let file = sandbox.answers(&json!({}));
    elicit(&["call", "--url", &server.mcp_url(), "no_such_tool", "--answers", &file], LIMIT)
        .failure()
        .stderr_has("elicit: ");
}

#[test]
fn json_output_parses() {
    let server = TravelServer::start();
    let sandbox = Sandbox::new();
    let file = sandbox.answers(&json!({
        "rating": {"action": "accept", "content": {"stars": 4, "comment": "smooth"}},
        "contact": {"action": "decline"}}));
    let run = elicit(&["call", "--url", &server.mcp_url(), "rate_trip", "--answers", &file, "--json"], LIMIT).success();
    let result: Value =
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("--json is not JSON ({e}):\n{run}"));
    assert_eq!(result["content"][0]["text"], json!("Thanks for 4 star(s) (smooth); we will not contact you."), "{run}");
    assert_ne!(result["isError"], json!(true));
}

#[test]
fn stdio_transport_runs_a_form_only_flow() {
    let sandbox = Sandbox::new();
    let file = sandbox.answers(&json!({
        "rating": {"action": "accept", "content": {"stars": 5}},
        "contact": {"action": "accept", "content": {"email": "ada@example.com"}}}));
    let command = format!("{} --stdio --page-listen 127.0.0.1:0 --store memory", bins().travel_server.display());
    elicit(&["call", "--stdio", &command, "rate_trip", "--answers", &file, "--modes", "form"], LIMIT)
        .success()
        .stdout_has("Thanks for 5 star(s) (no comment); we will write to ada@example.com.");
}
