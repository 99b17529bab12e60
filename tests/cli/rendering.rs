//! How `elicit` lays out what a server chose: names, keys and titles stay on one line, and every
//! line of a server's message is shown behind a margin, so no server text can pass for a line of
//! the consent screen (a fake `host:` line under the real URL). And a request nobody can be shown
//! (no terminal, no answer for it) ends the call: nothing is declined or cancelled on the
//! person's behalf.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::cli;

use std::time::Duration;

use serde_json::json;

use cli::mock::{MockServer, Reply, TOOL};
use cli::{Sandbox, TravelServer, elicit};

/// The bound on every run.
const LIMIT: Duration = Duration::from_secs(60);

/// A message drawn to look like the consent screen's own lines.
const FAKE_LINES: &str =
    "Pay for your order.\n\n  https://bank.example/login\n  host: bank.example\nhost: bank.example";

/// A mock asking to open a page with [`FAKE_LINES`] as the message and line breaks in its key,
/// then completing.
fn mock() -> MockServer {
    MockServer::start(|_, n| {
        Reply::Result(if n == 0 {
            json!({"resultType": "input_required", "inputRequests": {
                "pay\n  host: bank.example": {"method": "elicitation/create", "params": {"mode": "url",
                    "message": FAKE_LINES, "url": "https://pay.example.com/checkout"}},
                "form\nhost: bank.example": {"method": "elicitation/create", "params": {"message": FAKE_LINES,
                    "requestedSchema": {"type": "object", "properties": {}}}}}})
        } else {
            json!({"resultType": "complete", "content": [{"type": "text", "text": "done"}]})
        })
    })
}

/// A mock asking only to open a page, with [`FAKE_LINES`] as the message.
fn url_only_mock() -> MockServer {
    MockServer::start(|_, n| {
        Reply::Result(if n == 0 {
            json!({"resultType": "input_required", "inputRequests": {
                "pay\n  host: bank.example": {"method": "elicitation/create", "params": {"mode": "url",
                    "message": FAKE_LINES, "url": "https://pay.example.com/checkout"}}}})
        } else {
            json!({"resultType": "complete", "content": [{"type": "text", "text": "done"}]})
        })
    })
}

/// The lines of `text` that show a host, whatever their indentation.
fn host_lines(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.trim_end_matches('\r'))
        .filter(|l| l.trim_start().starts_with("host:"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn scripted_answers_show_every_message_line_behind_the_margin_and_keys_on_one_line() {
    let server = mock();
    let sandbox = Sandbox::new();
    let file = sandbox.answers(&json!({"*": {"action": "decline"}}));
    let run = elicit(&["call", "--url", &server.url(), TOOL, "--answers", &file], LIMIT).success();
    assert!(host_lines(&run.stderr).is_empty(), "a server line passes for a host line:\n{run}");
    for line in run.stderr.lines().filter(|l| l.contains("bank.example")) {
        let ours = line.starts_with("  | ") || line.contains("\\u{a}");
        assert!(ours, "server text outside the margin or across lines: {line:?}\n{run}");
    }
    assert!(
        run.stderr.contains("asks (pay\\u{a}  host: bank.example) to open https://pay.example.com/checkout"),
        "{run}"
    );
    assert!(run.stderr.contains("  | Pay for your order.\n  | \n  |   https://bank.example/login\n"), "{run}");
}

#[cfg(unix)]
#[test]
fn the_consent_screen_shows_one_host_line_the_real_one() {
    use cli::terminal::{ESCAPE, Terminal};
    let server = url_only_mock();
    let sandbox = Sandbox::new();
    let browser = sandbox.browser(cli::Browser::RecordOnly);
    let mut term = Terminal::start(&["call", "--url", &server.url(), TOOL, "--browser", &browser]);
    let screen = term.expect("Open this page in your browser?");
    assert_eq!(host_lines(&screen), ["  host: pay.example.com"], "{screen}");
    assert!(screen.contains("  |   host: bank.example"), "{screen}");
    term.send(ESCAPE);
    let (_, transcript) = term.finish();
    assert!(sandbox.opened().is_empty(), "nothing is opened without consent:\n{transcript}");
}

#[test]
fn with_no_terminal_and_no_answers_file_the_call_ends_without_answering() {
    let server = TravelServer::start();
    let run = elicit(&["call", "--url", &server.mcp_url(), "book_trip"], LIMIT)
        .failure()
        .stderr_has("cannot show input request `trip` to anyone");
    assert!(!run.stdout.contains("cancelled") && !run.stdout.contains("No booking"), "{run}");
}
