//! The real `elicit` binary, scripted (`--answers` with the `"*"` key:
//! 2025-era pushes have no keys), against a 2025-11-25 server built on the official TypeScript SDK
//! v1 (`tests/peers/ts_v1_server.mjs`), over stdio and over Streamable HTTP: accept, decline and
//! cancel for the form tool (every schema kind, legacy `enumNames` included), the URL tool (pending
//! until `notifications/elicitation/complete`) and the tool answering `-32042`. The probe finds
//! the era by itself (no `--protocol`), and `--protocol` forces one.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::cli;
use elicit_test_support::peers;

use std::time::Duration;

use serde_json::{Value, json};

use cli::{Browser, Run, Sandbox, bins};
use peers::servers::{HttpPeer, ts_stdio};

/// The bound on every run.
const LIMIT: Duration = Duration::from_secs(60);

/// `elicit ARGS`, bounded; the binaries are built before the clock starts.
fn elicit(args: &[&str], limit: Duration) -> Run {
    bins();
    cli::elicit(args, limit)
}

#[derive(Clone, Copy, Debug)]
enum Via {
    Stdio,
    Http,
}

const BOTH: [Via; 2] = [Via::Stdio, Via::Http];

fn profile() -> Value {
    json!({"action": "accept", "content": {
        "name": "Ada Lovelace", "email": "ada@example.com", "plan": "pro", "seat": "a",
        "meal": "fish", "tags": ["red", "blue"], "extras": ["wifi"], "height": 1.65}})
}

/// `elicit call <server> TOOL --answers {"*": answer} --browser <recorder> EXTRA...`.
fn call(via: Via, sandbox: &Sandbox, tool: &str, answer: &Value, extra: &[&str]) -> Run {
    let answers = sandbox.answers(&json!({"*": answer}));
    let browser = sandbox.browser(Browser::RecordOnly);
    let peer;
    let stdio;
    let mut args = vec!["call"];
    match via {
        Via::Stdio => {
            stdio = ts_stdio(&[]);
            args.extend(["--stdio", &stdio]);
        }
        Via::Http => {
            peer = HttpPeer::ts(&[]);
            args.extend(["--url", peer.url()]);
        }
    }
    args.extend([tool, "--answers", &answers, "--browser", &browser]);
    args.extend(extra);
    elicit(&args, LIMIT)
}

#[test]
fn form_accepted_sends_every_kind_of_answer_with_defaults_filled() {
    for via in BOTH {
        let sandbox = Sandbox::new();
        let run = call(via, &sandbox, "profile", &profile(), &[])
            .success()
            .stderr_has("ts-v1-peer asks (#1)")
            .stderr_has("Tell us about you");
        let line = run
            .stdout
            .lines()
            .find(|l| l.starts_with("profile: action=accept content="))
            .unwrap_or_else(|| panic!("{via:?}: {run}"));
        let content: Value = serde_json::from_str(line.trim_start_matches("profile: action=accept content=")).unwrap();
        assert_eq!(content["meal"], "fish", "{via:?}: the legacy enumNames choice went through: {run}");
        assert_eq!(content["seat"], "a");
        assert_eq!(content["tags"], json!(["red", "blue"]));
        assert_eq!(content["extras"], json!(["wifi"]));
        // Left untouched: the defaults stand, as an interactive user would have left them.
        assert_eq!(content["age"], 30, "{via:?}: {run}");
        assert_eq!(content["newsletter"], false);
        // The header names the endpoint beside the server's own name.
        let endpoint = match via {
            Via::Stdio => "ts_v1_server.mjs".to_owned(),
            Via::Http => "[127.0.0.1:".to_owned(),
        };
        assert!(run.stderr.contains(&endpoint), "{via:?}: {run}");
    }
}

#[test]
fn form_declined_and_cancelled_reach_the_server() {
    for via in BOTH {
        let sandbox = Sandbox::new();
        call(via, &sandbox, "profile", &json!({"action": "decline"}), &[])
            .success()
            .stdout_has("profile: action=decline");
        call(via, &sandbox, "profile", &json!({"action": "cancel"}), &[])
            .success()
            .stdout_has("profile: action=cancel");
    }
}

#[test]
fn an_invalid_scripted_answer_is_not_sent() {
    for via in BOTH {
        let sandbox = Sandbox::new();
        let bad = json!({"action": "accept", "content": {"name": "A", "email": "not-an-email", "plan": "gold"}});
        let run = call(via, &sandbox, "profile", &bad, &[]).failure().stderr_has("was not sent because it is invalid");
        assert!(!run.stdout.contains("profile: action=accept"), "{via:?}: {run}");
    }
}

#[test]
fn url_accepted_is_opened_then_pending_until_the_server_reports_completion() {
    for via in BOTH {
        let sandbox = Sandbox::new();
        let run = call(via, &sandbox, "connect", &json!({"action": "accept"}), &[])
            .success()
            .stdout_has("connect: action=accept, completed")
            .stderr_has("to open https://auth.example.com/connect?session=")
            .stderr_has("waiting for the page at auth.example.com to be completed");
        let opened = sandbox.opened();
        assert_eq!(opened.len(), 1, "{via:?}: {opened:?}\n{run}");
        assert!(opened[0].starts_with("https://auth.example.com/connect?session="), "{opened:?}");
        assert!(run.stderr.contains(&opened[0]), "the URL opened is the URL shown: {run}");
    }
}

#[test]
fn url_declined_or_cancelled_is_never_opened() {
    for via in BOTH {
        for action in ["decline", "cancel"] {
            let sandbox = Sandbox::new();
            call(via, &sandbox, "connect", &json!({"action": action}), &[])
                .success()
                .stdout_has(&format!("connect: action={action}"));
            assert!(sandbox.opened().is_empty(), "{via:?} {action}: opened {:?}", sandbox.opened());
        }
    }
}

#[test]
fn url_required_error_is_consented_then_the_call_is_retried_after_completion() {
    for via in BOTH {
        let sandbox = Sandbox::new();
        let run = call(via, &sandbox, "needs_url", &json!({"action": "accept"}), &[])
            .success()
            .stdout_has("needs_url: done")
            .stderr_has("to open https://auth.example.com/authorize?id=needs_url:");
        assert_eq!(sandbox.opened().len(), 1, "{via:?}: {run}");
        // Retried on the completion notification, not after --wait (300 s by default).
        assert!(!run.stderr.contains("calling again"), "{via:?}: {run}");
    }
}

#[test]
fn url_required_error_declined_or_cancelled_ends_the_run_without_retrying() {
    for via in BOTH {
        for (action, said) in [("decline", "declined"), ("cancel", "cancelled")] {
            let sandbox = Sandbox::new();
            let run = call(via, &sandbox, "needs_url", &json!({"action": action}), &[]).failure().stderr_has(said);
            assert!(!run.stdout.contains("needs_url: done"), "{via:?}: {run}");
            assert!(sandbox.opened().is_empty(), "{via:?}: {run}");
        }
    }
}

#[test]
fn a_missing_answer_ends_the_call_on_the_legacy_wire_too() {
    let sandbox = Sandbox::new();
    let answers = sandbox.answers(&json!({"some-other-key": {"action": "accept"}}));
    let stdio = ts_stdio(&[]);
    let run = elicit(&["call", "--stdio", &stdio, "profile", "--answers", &answers], LIMIT)
        .failure()
        .stderr_has("cannot show input request `#1` to anyone: the answers file has no answer for it");
    assert!(!run.stdout.contains("action="), "no answer was sent for the person:\n{run}");
}

#[test]
fn tools_lists_a_legacy_server_and_protocol_forces_the_era() {
    let stdio = ts_stdio(&[]);
    for protocol in [None, Some("2025-11-25"), Some("2025-06-18")] {
        let mut args = vec!["tools", "--stdio", &stdio];
        if let Some(protocol) = protocol {
            args.extend(["--protocol", protocol]);
        }
        let run = elicit(&args, LIMIT).success();
        let names: Vec<&str> = run.stdout.lines().filter_map(|l| l.split('\t').next()).collect();
        assert_eq!(names, ["profile", "connect", "needs_url", "flood", "stray"], "{protocol:?}: {run}");
    }
    // Forced modern: no fallback, and the error says why.
    let run = elicit(&["tools", "--stdio", &stdio, "--protocol", "2026-07-28"], LIMIT).failure();
    assert!(run.stderr.contains("cannot talk to"), "{run}");
}

#[test]
fn a_2025_06_18_session_declares_form_mode_only() {
    let sandbox = Sandbox::new();
    call(Via::Stdio, &sandbox, "profile", &profile(), &["--protocol", "2025-06-18"])
        .success()
        .stdout_has("profile: action=accept");
    // The server cannot send URL mode to a client that did not declare it: its own error, not ours.
    let run = call(Via::Stdio, &sandbox, "connect", &json!({"action": "accept"}), &["--protocol", "2025-06-18"]);
    assert!(!run.stdout.contains("connect: action=accept"), "{run}");
    assert!(sandbox.opened().is_empty(), "{run}");
}
