//! The real `elicit`, without `--answers`, driven through a
//! pseudo-terminal against the official TypeScript SDK v1 server (2025-11-25, stdio): a form with
//! every schema kind filled by typing (the review shows a choice's title, not its wire value), a
//! URL step pending until the server's completion notification, and cancelling the call while
//! the step is pending (the server sees `notifications/cancelled`), and a `-32042` error whose URL
//! is consented to, then the call made again once the server reports the step complete.
//!
//! Keys are what inquire 0.9.4 (crossterm backend) reads: Enter is `\r`, arrows are CSI
//! sequences.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]
#![cfg(unix)]

use elicit_test_support::cli;
use elicit_test_support::peers;

use cli::terminal::{DOWN, ENTER, STEP, Terminal};
use cli::{Browser, Sandbox};
use peers::servers::{CONNECT_NEVER_COMPLETING, peer_logged, ts_stdio};

#[test]
fn a_pushed_form_is_filled_by_typing_and_reviewed_with_titles() {
    let stdio = ts_stdio(&[]);
    let mut term = Terminal::start(&["call", "--stdio", &stdio, "profile"]);
    term.expect("ts-v1-peer asks for information (#1) [");
    term.expect("Tell us about you");
    term.answer("Answer this request?", ENTER); // Fill in the form
    term.answer("Full name *", &format!("Ada Lovelace{ENTER}"));
    term.answer("E-mail *", &format!("ada@example.com{ENTER}"));
    term.answer("Age", ENTER); // the default, 30, is pre-filled
    term.answer("Height (m)", ENTER); // optional: left empty
    term.answer("Newsletter", ENTER); // default No
    term.answer("Plan *", &format!("{DOWN}{ENTER}")); // pro
    // Optional choices start on "(no answer)", the last entry; down wraps to the first.
    term.answer("Seat", &format!("{DOWN}{DOWN}{ENTER}")); // Aisle
    term.answer("Meal", &format!("{DOWN}{DOWN}{ENTER}")); // the legacy enumNames: "Fish of the day"
    term.answer("Tags", ENTER);
    term.answer("Extras", ENTER);
    term.expect("Your answers for ts-v1-peer:");
    // The review shows titles, never wire values.
    term.expect("Seat: Aisle");
    term.expect("Meal: Fish of the day");
    term.answer("Send these answers?", ENTER);
    let (code, screen) = term.finish();
    assert_eq!(code, 0, "{screen}");
    assert!(screen.contains("profile: action=accept"), "{screen}");
    for sent in [r#""seat":"a""#, r#""meal":"fish""#, r#""plan":"pro""#, r#""age":30"#, r#""newsletter":false"#] {
        assert!(screen.contains(sent), "{sent} was not sent:\n{screen}");
    }
}

/// `elicit call --stdio COMMAND ARGS --browser SCRIPT` on a terminal, COMMAND starting the
/// TypeScript v1 server with `env` set, SCRIPT a stand-in browser of `sandbox` that only records
/// the URLs it is asked to open.
fn call_recording_pages(sandbox: &Sandbox, env: &[&str], args: &[&str]) -> Terminal {
    let browser = sandbox.browser(Browser::RecordOnly);
    let stdio = ts_stdio(env);
    let mut words = vec!["call", "--stdio", &stdio];
    words.extend_from_slice(args);
    words.extend(["--browser", &browser]);
    Terminal::start(&words)
}

/// Consents to the page the server asks to open (`asks`, showing `page`), then waits for each of
/// `then` in turn; the call must end with 0. Returns the screen.
fn consent_then(mut term: Terminal, asks: &str, page: &str, then: &[&str]) -> String {
    term.expect(asks);
    term.expect(page);
    term.answer("Open this page in your browser?", ENTER);
    for text in then {
        term.expect(text);
    }
    let (code, screen) = term.finish();
    assert_eq!(code, 0, "{screen}");
    screen
}

#[test]
fn a_url_step_shows_as_pending_until_the_server_reports_it_complete() {
    let sandbox = Sandbox::new();
    let term = call_recording_pages(&sandbox, &[], &["connect", "--args", r#"{"completeAfterMs": 1500}"#]);
    consent_then(
        term,
        "ts-v1-peer asks you to open a page (",
        "https://auth.example.com/connect?session=",
        &["Waiting for ts-v1-peer to report the page at auth.example.com done", "connect: action=accept, completed"],
    );
    let opened = sandbox.opened();
    assert_eq!(opened.len(), 1, "{opened:?}");
    assert!(opened[0].starts_with("https://auth.example.com/connect?session="), "{opened:?}");
}

#[test]
fn cancelling_while_pending_cancels_the_call_on_the_server() {
    let sandbox = Sandbox::new();
    let log = sandbox.path("peer.log");
    let env = format!("ELICIT_PEER_LOG='{}'", log.display());
    let mut term = call_recording_pages(&sandbox, &[&env], &CONNECT_NEVER_COMPLETING);
    term.answer("Open this page in your browser?", ENTER);
    term.expect("Waiting for ts-v1-peer to report the page at auth.example.com done");
    term.expect("c to cancel the call");
    term.send("c");
    let (code, screen) = term.finish();
    assert_ne!(code, 0, "{screen}");
    assert!(screen.contains("cancelled"), "{screen}");
    // The server learnt it: its tool saw the abort of notifications/cancelled.
    assert_eq!(peer_logged(&log, "cancelled", STEP)["cancelled"], "connect");
}

#[test]
fn a_url_required_error_asks_consent_then_calls_again_when_the_server_reports_completion() {
    let sandbox = Sandbox::new();
    let term = call_recording_pages(&sandbox, &[], &["needs_url"]);
    let screen = consent_then(
        term,
        "ts-v1-peer asks you to open a page (needs_url:",
        "https://auth.example.com/authorize?id=needs_url:",
        &["Press r to call again now, o to open it again, c to cancel the call.", "needs_url: done"],
    );
    assert_eq!(sandbox.opened().len(), 1, "{screen}");
}
