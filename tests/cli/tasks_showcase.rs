//! The showcase's long-running tool, `group_booking` of `travel-server`, driven by `elicit call`:
//! with `--tasks` it runs as a task (status and progress shown while it works, the choice of
//! departure answered as the task's input request: accept, decline, cancel; `c` at the terminal
//! cancels the working task), and without it the same handler is an ordinary Multi Round-Trip
//! call.

use std::time::Duration;

use elicit_test_support::cli::terminal::{ENTER, Terminal};
use elicit_test_support::cli::{Run, Sandbox, TravelServer, elicit};

/// How long one `elicit` run may take.
const LIMIT: Duration = Duration::from_secs(120);

fn call(server: &TravelServer, tasks: bool, answer: serde_json::Value) -> Run {
    let sandbox = Sandbox::new();
    let answers = sandbox.answers(&serde_json::json!({ "departure": answer }));
    let url = server.mcp_url();
    let mut args = vec!["call", "--url", &url, "group_booking", "--args", r#"{"travellers": 8, "checks": 3}"#];
    if tasks {
        args.push("--tasks");
    }
    args.extend(["--answers", &answers]);
    elicit(&args, LIMIT)
}

#[test]
fn with_tasks_the_group_booking_runs_as_a_task_and_takes_the_choice() {
    let server = TravelServer::start();
    let accept = serde_json::json!({"action": "accept", "content": {"departure": "evening"}});
    let run = call(&server, true, accept).success();
    assert!(run.stdout.trim().starts_with("Held 8 seats to LIS on the evening departure, reference BK-"), "{run}");
    run.stderr_has("travel-server runs the call as task")
        .stderr_has(": working")
        .stderr_has("checked 1 of 3 airlines for 8 seats to LIS")
        .stderr_has("Which departure should we hold for your group?");
}

#[test]
fn declined_and_cancelled_choices_reach_the_task() {
    let server = TravelServer::start();
    for (action, expected) in [
        ("decline", "No seats held: you declined the departures offered."),
        ("cancel", "Group booking cancelled at the choice of departure."),
    ] {
        let run = call(&server, true, serde_json::json!({ "action": action })).success();
        assert_eq!(run.stdout.trim(), expected, "{run}");
        run.stderr_has("runs the call as task");
    }
}

#[test]
fn without_tasks_the_same_handler_is_a_multi_round_call() {
    let server = TravelServer::start();
    let accept = serde_json::json!({"action": "accept", "content": {"departure": "morning"}});
    let run = call(&server, false, accept).success();
    assert!(run.stdout.trim().starts_with("Held 8 seats to LIS on the morning departure"), "{run}");
    assert!(!run.stderr.contains("runs the call as task"), "{run}");
}

#[test]
fn at_the_terminal_c_cancels_the_working_task() {
    let server = TravelServer::start();
    let url = server.mcp_url();
    let mut term = Terminal::start(&["call", "--url", &url, "group_booking", "--args", r#"{"checks": 20}"#, "--tasks"]);
    term.expect("runs the call as task");
    let screen = term.cancel_task();
    assert!(!screen.contains("Held"), "{screen}");
}

#[test]
fn at_the_terminal_the_status_shows_while_working_and_the_choice_is_answered_by_typing() {
    let server = TravelServer::start();
    let url = server.mcp_url();
    let mut term = Terminal::start(&["call", "--url", &url, "group_booking", "--args", r#"{"checks": 2}"#, "--tasks"]);
    term.expect("travel-server runs the call as task");
    term.expect("checked 1 of 2 airlines for 6 seats to LIS");
    term.expect("Which departure should we hold for your group?");
    term.answer("Answer this request?", ENTER);
    term.answer("Departure *", ENTER);
    term.answer("Send these answers?", ENTER);
    term.expect("Held 6 seats to LIS on the morning departure");
    let (code, screen) = term.finish();
    assert_eq!(code, 0, "{screen}");
}
