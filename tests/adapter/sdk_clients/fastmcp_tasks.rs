//! A real client of the Tasks extension against the showcase: FastMCP with fastmcp-tasks (pinned,
//! installed by `scripts/install-peers.sh` into `.tools/peers/py-tasks`), running
//! `tests/peers/fastmcp_tasks_client.py`, calls `travel-server`'s `group_booking`. The client
//! declares the extension, so the call runs as a task: FastMCP polls `tasks/get` (without the
//! `Mcp-Name` header the extension asks for, which the server supplies from `taskId`), answers
//! the choice of departure through its elicitation handler with `tasks/update`, and reads the
//! result; accept, decline and cancel each reach the handler.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use elicit_test_support::cli::TravelServer;
use elicit_test_support::process::workspace_dir;
use serde_json::{Value, json};

/// Runs the FastMCP task client once and returns the JSON line it printed.
fn fastmcp_call(server: &TravelServer, answer: &Value) -> Value {
    let python = workspace_dir().join(".tools/peers/py-tasks/bin/python");
    assert!(python.is_file(), "{} is missing: run scripts/install-peers.sh", python.display());
    let mut child = Command::new(python)
        .arg(workspace_dir().join("tests/peers/fastmcp_tasks_client.py"))
        .arg(server.mcp_url())
        .arg("group_booking")
        .arg(r#"{"travellers": 4, "checks": 2}"#)
        .arg(answer.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the FastMCP task client");
    let started = Instant::now();
    while child.try_wait().expect("wait for the client").is_none() {
        if started.elapsed() > Duration::from_secs(180) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the FastMCP task client did not finish within 180 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let output = child.wait_with_output().expect("the client's output");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|e| {
        panic!("the client printed no JSON line ({e}): {stdout}\n{}", String::from_utf8_lossy(&output.stderr))
    })
}

#[test]
fn fastmcp_drives_the_group_booking_task_through_accept_decline_and_cancel() {
    let server = TravelServer::start();
    let cases = [
        (
            json!({"action": "accept", "content": {"departure": "afternoon"}}),
            "Held 4 seats to LIS on the afternoon departure",
        ),
        (json!({"action": "decline"}), "No seats held: you declined the departures offered."),
        (json!({"action": "cancel"}), "Group booking cancelled at the choice of departure."),
    ];
    for (answer, expected) in cases {
        let outcome = fastmcp_call(&server, &answer);
        assert!(outcome.get("error").is_none(), "{outcome}");
        assert_eq!(outcome["asked"], json!(["Which departure should we hold for your group?"]), "{outcome}");
        assert_eq!(outcome["isError"], false, "{outcome}");
        let text = outcome["text"].as_str().unwrap_or_default();
        assert!(text.starts_with(expected), "{answer}: {outcome}");
    }
}
