//! `elicit call --tasks` against a real server of the Tasks extension: FastMCP with fastmcp-tasks
//! (pinned, installed by `scripts/install-peers.sh` into `.tools/peers/py-tasks`), serving
//! `tests/peers/fastmcp_tasks_server.py`. Its tools always run as tasks: the status is shown while
//! the task works, the task's input request is answered (accept, decline, cancel) from a file or
//! at the terminal, a tool error is printed as such, the user cancels a working task, and without
//! `--tasks` the server's `-32021` is reported.

#![allow(clippy::panic, reason = "a test reports a failure by panicking, with the offending output")]

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use elicit_test_support::cli::terminal::{ENTER, Terminal};
use elicit_test_support::cli::{Run, Sandbox, elicit};
use elicit_test_support::peers::servers::{HttpPeer, peer_log};
use elicit_test_support::wait;

/// The fastmcp-tasks server, killed (and reaped) when dropped.
struct TaskPeer {
    /// The server process, killed when the peer is dropped.
    _peer: HttpPeer,
    url: String,
    /// One peer at a time: a Python server starting takes seconds of CPU, and the tests share
    /// the machine.
    _turn: MutexGuard<'static, ()>,
}

static TURN: Mutex<()> = Mutex::new(());

impl TaskPeer {
    fn start() -> TaskPeer {
        TaskPeer::start_logging(None)
    }

    /// With `log`, the server appends what its `sleepy` tool did there (`ELICIT_PEER_LOG`).
    fn start_logging(log: Option<&std::path::Path>) -> TaskPeer {
        let turn = TURN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let peer = HttpPeer::fastmcp_tasks(log);
        TaskPeer { url: peer.url().to_owned(), _peer: peer, _turn: turn }
    }
}

/// How long one `elicit` run may take.
const LIMIT: Duration = Duration::from_secs(120);

/// `elicit call --tasks` answering every input request with `answer`.
fn call_answering(peer: &TaskPeer, tool: &str, args: &str, answer: serde_json::Value) -> Run {
    let sandbox = Sandbox::new();
    let answers = sandbox.answers(&serde_json::json!({ "*": answer }));
    elicit(&["call", "--url", &peer.url, tool, "--args", args, "--tasks", "--answers", &answers], LIMIT)
}

#[test]
fn an_accepted_input_request_lets_the_task_finish() {
    let peer = TaskPeer::start();
    let accept = serde_json::json!({"action": "accept", "content": {"confirm": true}});
    let run = call_answering(&peer, "migrate", r#"{"tables": 40}"#, accept).success();
    assert_eq!(run.stdout.trim(), "Migrated 40 tables", "{run}");
    run.stderr_has("fastmcp-tasks-peer runs the call as task")
        .stderr_has(": working")
        .stderr_has("The migration touches 40 tables: go on?");
}

#[test]
fn declined_and_cancelled_input_requests_reach_the_task() {
    let peer = TaskPeer::start();
    for (action, expected) in [("decline", "Migration decline"), ("cancel", "Migration cancel")] {
        let run = call_answering(&peer, "migrate", r#"{"tables": 3}"#, serde_json::json!({ "action": action }));
        let run = run.success();
        assert_eq!(run.stdout.trim(), expected, "{run}");
    }
}

#[test]
fn a_tool_error_ends_the_task_completed_with_the_error() {
    let peer = TaskPeer::start();
    call_answering(&peer, "crash", "{}", serde_json::json!({"action": "cancel"}))
        .success()
        .stdout_has("The tool reported an error:")
        .stdout_has("the disk is full");
}

#[test]
fn without_tasks_a_task_only_tool_is_refused_by_the_server() {
    let peer = TaskPeer::start();
    elicit(&["call", "--url", &peer.url, "crash"], LIMIT).failure().stderr_has("server error -32021");
}

#[test]
fn at_the_terminal_the_request_is_answered_by_typing() {
    let peer = TaskPeer::start();
    let mut term = Terminal::start(&["call", "--url", &peer.url, "migrate", "--args", r#"{"tables": 7}"#, "--tasks"]);
    term.expect("runs the call as task");
    term.expect("working");
    term.expect("Press r to check now, c to cancel the task.");
    term.expect("The migration touches 7 tables: go on?");
    term.answer("Answer this request?", ENTER);
    term.answer("Go on?", &format!("y{ENTER}"));
    term.answer("Send these answers?", ENTER);
    term.expect("Migrated 7 tables");
    let (code, screen) = term.finish();
    assert_eq!(code, 0, "{screen}");
}

#[test]
fn at_the_terminal_c_cancels_a_working_task() {
    let sandbox = Sandbox::new();
    let log = sandbox.path("peer.log");
    let peer = TaskPeer::start_logging(Some(&log));
    let mut term = Terminal::start(&["call", "--url", &peer.url, "sleepy", "--args", r#"{"seconds": 120}"#, "--tasks"]);
    term.expect("runs the call as task");
    term.expect("working");
    let screen = term.cancel_task();
    assert!(!screen.contains("slept"), "{screen}");
    // The server got tasks/cancel and stopped the work.
    let cancelled = serde_json::json!({"cancelled": "sleepy"});
    wait::until(Duration::from_secs(30), "the server's work to be cancelled", || peer_log(&log).contains(&cancelled));
}

#[test]
fn a_task_past_the_deadline_is_cancelled() {
    let sandbox = Sandbox::new();
    let log = sandbox.path("peer.log");
    let peer = TaskPeer::start_logging(Some(&log));
    let answers = sandbox.answers(&serde_json::json!({}));
    let args = ["call", "--url", &peer.url, "sleepy", "--args", r#"{"seconds": 120}"#, "--tasks"];
    elicit(&[&args[..], &["--task-deadline", "2", "--answers", &answers]].concat(), LIMIT)
        .failure()
        .stderr_has("had not ended after 2 s; cancelled it");
    let cancelled = serde_json::json!({"cancelled": "sleepy"});
    wait::until(Duration::from_secs(30), "the server's work to be cancelled", || peer_log(&log).contains(&cancelled));
}
