//! `elicit` against a 2025-era server that misbehaves, built on the
//! official TypeScript SDK v1 (`tests/peers/ts_v1_server.mjs`): a flood of pushed requests, an
//! `elicitation/create` outside any call, a completion notification for an unknown id, and a URL
//! step that never completes. Each run is bounded and ends clearly. Also: a URL step whose browser
//! cannot be started stays pending with the URL printed instead of being cancelled.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::cli;
use elicit_test_support::peers;

use std::time::Duration;

use serde_json::json;

use cli::{Browser, Run, Sandbox, bins};
use peers::servers::{CONNECT_NEVER_COMPLETING, peer_logged, ts_stdio};

const LIMIT: Duration = Duration::from_secs(60);

fn elicit(args: &[&str]) -> Run {
    bins();
    cli::elicit(args, LIMIT)
}

#[test]
fn a_flood_of_pushed_requests_is_bounded() {
    let sandbox = Sandbox::new();
    let answers = sandbox.answers(&json!({"*": {"action": "accept", "content": {"x": "y"}}}));
    let stdio = ts_stdio(&[]);
    let run = elicit(&["call", "--stdio", &stdio, "flood", "--args", r#"{"count": 500}"#, "--answers", &answers]);
    // Either the call ends with the server's count of answers, or the client gives up on it:
    // never 500 forms shown.
    let shown = run.stderr.matches("ts-v1-peer asks (").count();
    assert!((1..=64).contains(&shown), "{shown} forms shown:\n{run}");
    if run.status.success() {
        let answered: usize = run
            .stdout
            .trim()
            .strip_prefix("flood: ")
            .and_then(|rest| rest.strip_suffix(" answered"))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{run}"));
        assert!(answered <= 64, "{run}");
    } else {
        run.failure().stderr_has("requests during one call");
    }
}

#[test]
fn an_elicitation_outside_any_call_is_refused() {
    let sandbox = Sandbox::new();
    let log = sandbox.path("peer.log");
    let env_log = format!("ELICIT_PEER_LOG='{}'", log.display());
    let stdio = ts_stdio(&["ELICIT_PEER_PUSH_ON_INIT=1", &env_log]);
    let run = elicit(&["tools", "--stdio", &stdio]).success();
    assert!(run.stdout.contains("profile\t"), "{run}");
    let outside = peer_logged(&log, "outside", LIMIT);
    assert_eq!(outside["outside"], "refused", "{outside}");
    assert_eq!(outside["code"], -32600, "{outside}");
}

#[test]
fn a_completion_for_an_unknown_id_is_ignored_with_a_note() {
    let stdio = ts_stdio(&[]);
    elicit(&["call", "--stdio", &stdio, "stray"])
        .success()
        .stdout_has("stray: done")
        .stderr_has("nobody-asked-for-this")
        .stderr_has("not waiting for; ignored");
}

#[test]
fn a_url_step_that_never_completes_is_given_up_after_wait_and_the_call_cancelled() {
    let sandbox = Sandbox::new();
    let answers = sandbox.answers(&json!({"*": {"action": "accept"}}));
    let browser = sandbox.browser(Browser::RecordOnly);
    let log = sandbox.path("peer.log");
    let env_log = format!("ELICIT_PEER_LOG='{}'", log.display());
    let stdio = ts_stdio(&[&env_log]);
    let mut args = vec!["call", "--stdio", &stdio];
    args.extend(CONNECT_NEVER_COMPLETING);
    args.extend(["--answers", &answers, "--browser", &browser, "--wait", "2"]);
    let run = elicit(&args).failure().stderr_has("gave up waiting for").stderr_has("elicit: cancelled");
    assert!(!run.stdout.contains("connect:"), "{run}");
    assert_eq!(peer_logged(&log, "cancelled", LIMIT)["cancelled"], "connect");
}

#[test]
fn without_a_browser_the_url_is_printed_and_the_step_stays_pending() {
    let sandbox = Sandbox::new();
    let answers = sandbox.answers(&json!({"*": {"action": "accept"}}));
    let stdio = ts_stdio(&[]);
    let run = elicit(&["call", "--stdio", &stdio, "connect", "--answers", &answers, "--browser", "false"])
        .success()
        .stdout_has("connect: action=accept, completed")
        .stderr_has("could not start a browser");
    assert!(run.stderr.contains("open this page yourself: https://auth.example.com/connect?session="), "{run}");
}
