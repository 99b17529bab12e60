//! Against the official Python SDK v2 server (`mcp==2.3.0`,
//! `tests/peers/py_v2_server.py`), in legacy mode (it refuses the 2026-07-28 probe as a 2025-era
//! server does) and in modern mode, `elicit call` completes a form and a URL flow with the same
//! command line: the probe decides the era, and the result shows which one the server served.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::cli;
use elicit_test_support::peers;

use std::time::Duration;

use serde_json::json;

use cli::{Browser, Run, Sandbox, bins};
use peers::servers::HttpPeer;

const LIMIT: Duration = Duration::from_secs(60);

/// The one command line both modes get.
fn call(peer: &HttpPeer, sandbox: &Sandbox, tool: &str) -> Run {
    bins();
    let answers =
        sandbox.answers(&json!({"*": {"action": "accept", "content": {"name": "Ada", "email": "ada@example.com"}}}));
    let browser = sandbox.browser(Browser::RecordOnly);
    cli::elicit(&["call", "--url", peer.url(), tool, "--answers", &answers, "--browser", &browser], LIMIT)
}

#[test]
fn the_same_command_line_completes_a_form_and_a_url_flow_in_both_modes() {
    for (mode, era, form_key) in [("legacy", "2025-11-25", "(#1)"), ("modern", "2026-07-28", "(__main__:ask_contact)")]
    {
        let peer = HttpPeer::python(mode);
        let sandbox = Sandbox::new();
        // The form: pushed mid-call on the legacy wire (keyed #1), an input request on the modern one.
        call(&peer, &sandbox, "contact")
            .success()
            .stdout_has("contact: accept Ada <ada@example.com>")
            .stderr_has(&format!("py-v2-peer asks {form_key}"));
        let run = call(&peer, &sandbox, "connect").success().stdout_has(&format!("connect: accept ({era})"));
        let opened = sandbox.opened();
        assert_eq!(opened.len(), 1, "{mode}: {opened:?}\n{run}");
        assert!(opened[0].starts_with("https://auth.example.com/py-connect"), "{mode}: {opened:?}");
    }
}
