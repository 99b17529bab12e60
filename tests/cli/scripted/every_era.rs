//! One answers file, every era: an ask is keyed by its place in the call (`#1`, `#2`) on
//! 2026-07-28, on a 2025-era session and in a task alike, and a cancel shows the handler's own
//! final text with the same exit status everywhere.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::cli;

use std::time::Duration;

use serde_json::{Value, json};

use cli::{Browser, Run, Sandbox, TravelServer, elicit};

/// The bound on every run.
const LIMIT: Duration = Duration::from_secs(60);

/// The eras `elicit` can be told to speak.
const ERAS: [&str; 2] = ["2026-07-28", "2025-11-25"];

fn trip() -> Value {
    json!({"action": "accept", "content": {
        "from": "CDG", "to": "JFK", "depart": "2026-09-01", "travellers": 2, "cabin": "business",
        "meals": ["vegan"], "extras": ["lounge"], "email": "ada@example.com"}})
}

fn call(server: &TravelServer, sandbox: &Sandbox, extra: &[&str], tool: &str, answers: &Value) -> Run {
    let file = sandbox.answers(answers);
    let browser = sandbox.browser(Browser::RecordOnly);
    let mcp = server.mcp_url();
    let mut args = vec!["call", "--url", &mcp];
    args.extend(extra);
    args.extend([tool, "--answers", &file, "--browser", &browser]);
    elicit(&args, LIMIT)
}

#[test]
fn the_same_answers_file_cancels_the_same_step_in_every_era_with_the_handlers_text() {
    let server = TravelServer::start();
    // The form accepted, then the payment page cancelled: keyed by place, not by era.
    let by_place = json!({"#1": trip(), "#2": {"action": "cancel"}});
    for era in ERAS {
        let sandbox = Sandbox::new();
        call(&server, &sandbox, &["--protocol", era], "book_trip", &by_place)
            .success()
            .stdout_has("Payment cancelled: nothing was booked.");
        assert!(sandbox.opened().is_empty(), "{era}: a cancelled page is never opened");
    }
    // Cancelled at the form, in every era: the handler's text, exit 0.
    for era in ERAS {
        let sandbox = Sandbox::new();
        call(&server, &sandbox, &["--protocol", era], "book_trip", &json!({"#1": {"action": "cancel"}}))
            .success()
            .stdout_has("Booking cancelled before any details were given.");
    }
    // And in a task: the same key, the same rule.
    let sandbox = Sandbox::new();
    call(&server, &sandbox, &["--tasks"], "group_booking", &json!({"#1": {"action": "cancel"}}))
        .success()
        .stdout_has("Group booking cancelled at the choice of departure.");
}

#[test]
fn a_servers_own_key_wins_over_the_place_where_the_protocol_gives_one() {
    let server = TravelServer::start();
    let sandbox = Sandbox::new();
    // On 2026-07-28 `trip` is the server's key: it answers, and `#1` (a decline) is not used.
    let answers = json!({"trip": {"action": "cancel"}, "#1": {"action": "decline"}});
    call(&server, &sandbox, &["--protocol", "2026-07-28"], "book_trip", &answers)
        .success()
        .stdout_has("Booking cancelled before any details were given.");
    // A 2025-era push has no key of its own: its place answers.
    call(&server, &sandbox, &["--protocol", "2025-11-25"], "book_trip", &answers)
        .success()
        .stdout_has("No booking made: you declined to give the trip details.");
}
