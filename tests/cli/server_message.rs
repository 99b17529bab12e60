//! `elicit` shows a server's error message whole (a handler's reason is often longer than a log
//! line), bounded, and neutralised: nothing in it acts on the terminal.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use std::time::Duration;

use elicit_test_support::cli;
use serde_json::json;

use cli::mock::{MockServer, Reply, TOOL};
use cli::{Sandbox, elicit};

const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn a_long_server_message_is_shown_whole_then_bounded() {
    // 300 characters, the last words past what a log line keeps.
    let message = format!("{} and the reason is at the very end", "the booking failed because ".repeat(10));
    let shown = message.clone();
    let server = MockServer::start(move |_, _| Reply::Error { code: -32603, message: shown.clone() });
    let sandbox = Sandbox::new();
    let file = sandbox.answers(&json!({}));
    elicit(&["call", "--url", &server.url(), TOOL, "--answers", &file], LIMIT)
        .failure()
        .stderr_has(&format!("server error -32603: {message}"));

    // A message of 100,000 characters, with a control character: bounded, neutralised.
    let server =
        MockServer::start(|_, _| Reply::Error { code: -32603, message: format!("\u{1b}[2J{}", "x".repeat(100_000)) });
    let run = elicit(&["call", "--url", &server.url(), TOOL, "--answers", &file], LIMIT).failure();
    assert!(!run.stderr.contains('\u{1b}'), "{run}");
    assert!(run.stderr.contains("…"), "{run}");
    assert!(run.stderr.len() < 10_000, "{} bytes on stderr", run.stderr.len());
}
