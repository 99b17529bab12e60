//! A real browser on the payment page: the real `elicit` books a trip against a real
//! `travel-server`, its `--browser` command hands the consented URL to this test, and a headless
//! Chromium, driven over the Chrome DevTools protocol, opens the page and clicks Approve (or
//! Deny). The browser keeps the page's nonce cookie and posts the form's hidden token by itself,
//! so this is the anti-forgery check as users meet it; elicit's next retry then completes.
//!
//! With bearer tokens on, the browser signs in with the one-time ticket of the payment link (a
//! session cookie, then the clean page) and approves as the user who started the payment, while
//! a browser that did not sign in, or replays the link, is refused.
//!
//! Everything stays on loopback. Without Chromium installed the tests are skipped with a message
//! — except under `CI`, where its absence fails them (scripts/test.sh installs it).

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::cli;

use elicit_test_support::chromium::{Chromium, chromium_or_skip};

use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use cli::{Browser, Run, Sandbox, TravelServer, elicit};

/// The bound on each test: the `elicit` run, and every wait on the browser.
const LIMIT: Duration = Duration::from_secs(55);

/// One Chromium at a time: the machine is small and each test starts its own.
static ONE_BROWSER: Mutex<()> = Mutex::new(());
/// How often the page is looked at while waiting for it.
const POLL: Duration = Duration::from_millis(100);

fn answers() -> Value {
    json!({
        "trip": {"action": "accept", "content": {
            "from": "CDG", "to": "JFK", "depart": "2026-09-01", "travellers": 2, "cabin": "business",
            "meals": ["vegan"], "extras": ["lounge"], "email": "ada@example.com"}},
        "payment": {"action": "accept"},
        "confirm": {"action": "accept", "content": {"confirm": true}},
    })
}

/// Runs `elicit call … book_trip --answers FILE --browser CMD`; the browser command only records
/// the URL, and the test opens it in Chromium and clicks `button`. Returns the run and the title
/// of the page the click led to.
fn book_in_chromium(test: &str, button: &str) -> Option<(Run, String)> {
    let path = chromium_or_skip(test)?;
    // Building the binaries (a no-op when they are fresh) is not part of the bounded flow.
    cli::bins();
    let _one = ONE_BROWSER.lock().unwrap_or_else(|e| e.into_inner());
    let started = Instant::now();
    let mut browser = Chromium::start(&path);
    let server = TravelServer::start();
    let sandbox = Sandbox::new();
    let file = sandbox.answers(&answers());
    let command = sandbox.browser(Browser::RecordOnly);
    let mcp = server.mcp_url();
    let run = std::thread::spawn(move || {
        elicit(&["call", "--url", &mcp, "book_trip", "--answers", &file, "--browser", &command], LIMIT)
    });

    // The consented URL, as the `--browser` command received it.
    let url = loop {
        if let Some(url) = sandbox.opened().into_iter().next() {
            break url;
        }
        if run.is_finished() {
            let run = run.join().unwrap_or_else(|_| panic!("the elicit thread panicked"));
            panic!("elicit ended without opening the payment page:\n{run}");
        }
        assert!(started.elapsed() < LIMIT, "elicit did not open the payment page within {LIMIT:?}");
        std::thread::sleep(POLL);
    };
    assert!(url.starts_with(&format!("{}/pay/", server.base_url())), "{url}");

    let tab = browser.open(&url);
    let left = LIMIT.saturating_sub(started.elapsed());
    browser.click(&tab, button, left);
    let done = "(() => document.getElementById('done') ? document.title : null)()";
    let title = browser.wait_for(&tab, done, LIMIT.saturating_sub(started.elapsed()), "the decision was not recorded");
    let run = run.join().unwrap_or_else(|_| panic!("the elicit thread panicked"));
    Some((run, title.as_str().unwrap_or_default().to_owned()))
}

#[test]
fn chromium_approves_the_payment_and_elicit_books() {
    let Some((run, title)) = book_in_chromium("chromium_approves_the_payment_and_elicit_books", "approve") else {
        return;
    };
    assert_eq!(title, "Payment approved");
    run.success()
        .stdout_has("Booked!")
        .stdout_has("CDG → JFK on 2026-09-01, 2 traveller(s), €1888.00 paid")
        .stderr_has("travel-server asks (payment) to open");
}

#[test]
fn chromium_denies_the_payment_and_elicit_says_so() {
    let Some((run, title)) = book_in_chromium("chromium_denies_the_payment_and_elicit_says_so", "deny") else { return };
    assert_eq!(title, "Payment denied");
    run.success().stdout_has("Payment denied on the payment page: nothing was booked.");
}

// ---- with bearer tokens: the browser signs in with the link ----

const ALICE: &str = "token-alice";

/// One 2026-07-28 `tools/call book_trip` as Alice over HTTP (an API client with her bearer
/// token): the JSON-RPC reply.
fn alice_calls(runtime: &tokio::runtime::Runtime, mcp: &str, responses: Option<Value>, state: Option<&str>) -> Value {
    let mut params = json!({"name": "book_trip", "arguments": {}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}, "url": {}}}}});
    if let Some(responses) = responses {
        params["inputResponses"] = responses;
    }
    if let Some(state) = state {
        params["requestState"] = json!(state);
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    runtime.block_on(async {
        let response = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap()
            .post(mcp)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", "tools/call")
            .header("Mcp-Name", "book_trip")
            .header("Authorization", format!("Bearer {ALICE}"))
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        response.json().await.unwrap()
    })
}

fn state_of(reply: &Value) -> String {
    assert_eq!(reply["result"]["resultType"], json!("input_required"), "{reply}");
    reply["result"]["requestState"].as_str().unwrap().to_owned()
}

#[test]
fn with_tokens_chromium_signs_in_with_the_link_approves_and_alice_books() {
    let Some(path) = chromium_or_skip("with_tokens_chromium_signs_in_with_the_link_approves_and_alice_books") else {
        return;
    };
    let bins = cli::bins();
    let _one = ONE_BROWSER.lock().unwrap_or_else(|e| e.into_inner());
    let started = Instant::now();
    let left = || LIMIT.saturating_sub(started.elapsed());
    let mut browser = Chromium::start(&path);
    let mut command = Command::new(&bins.travel_server);
    command
        .args(["--listen", "127.0.0.1:0", "--store", "memory"])
        .env_remove("ELICIT_STATE_KEYS")
        .env_remove("RUST_LOG")
        .env("ELICIT_BEARER_TOKENS", format!("{ALICE}=alice,token-bob=bob"));
    let server = elicit_test_support::process::Listening::start(command);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mcp = server.mcp_url();

    // Alice's client, to the payment step.
    let first = alice_calls(&runtime, &mcp, None, None);
    let mut trip = json!({"trip": answers()["trip"].clone()});
    // `elicit` fills in the form's defaults; a client of its own sends every field.
    trip["trip"]["content"]["alerts"] = json!(false);
    let payment = alice_calls(&runtime, &mcp, Some(trip), Some(&state_of(&first)));
    let state = state_of(&payment);
    let link = payment["result"]["inputRequests"]["payment"]["params"]["url"]
        .as_str()
        .unwrap_or_else(|| panic!("no payment step: {payment}"))
        .to_owned();
    let (page, ticket) = link.split_once("?login=").unwrap_or_else(|| panic!("no sign-in ticket: {link}"));
    assert!(page.starts_with(&format!("{}/pay/", server.base_url())) && !ticket.is_empty(), "{link}");

    // A browser that did not sign in: no form, and it is asked to open the link.
    let anonymous = browser.open(page);
    let asked = "(() => document.getElementById('sign-in') && !document.getElementById('approve') ? true : null)()";
    browser.wait_for(&anonymous, asked, left(), "the anonymous page did not ask to sign in");

    // The user opens the link: signed in as Alice, on the page without the ticket; approves.
    let tab = browser.open(&link);
    let user = "(() => document.getElementById('user') ? [document.getElementById('user').textContent, location.search] : null)()";
    let signed_in = browser.wait_for(&tab, user, left(), "the link did not sign the browser in");
    assert_eq!(signed_in, json!(["alice", ""]), "signed in as Alice, ticket out of the address bar");
    browser.click(&tab, "approve", left());
    let done = "(() => document.getElementById('done') ? document.title : null)()";
    let title = browser.wait_for(&tab, done, left(), "the decision was not recorded");
    assert_eq!(title, json!("Payment approved"));

    // The same link in another browser: used already, nobody signed in.
    let replay = browser.open_isolated(&link);
    let refused = "(() => document.getElementById('login-refused') ? document.body.textContent : null)()";
    let said = browser.wait_for(&replay, refused, left(), "the replayed link was not refused");
    assert!(said.as_str().unwrap_or_default().contains("used already"), "{said}");

    // Alice's client goes on: the approval is hers, and she books.
    let confirm = alice_calls(&runtime, &mcp, Some(json!({"payment": answers()["payment"].clone()})), Some(&state));
    let state = state_of(&confirm);
    assert!(confirm["result"]["inputRequests"]["confirm"].is_object(), "{confirm}");
    let booked = alice_calls(&runtime, &mcp, Some(json!({"confirm": answers()["confirm"].clone()})), Some(&state));
    let text = booked["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.starts_with("Booked!"), "{booked}");
}
