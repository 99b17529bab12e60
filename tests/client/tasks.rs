//! The client driver on calls the server runs as a task, against a scripted in-process server:
//! the extension declared on every request, polling until a terminal status, each input request
//! answered once through the responder and sent with `tasks/update`, the task's error as the
//! call's, cancellation by the user, and the bounds (interval clamped, deadline, a task that keeps
//! asking, a malformed answer) each ending with `tasks/cancel`.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use std::collections::VecDeque;
use std::time::Duration;

use elicit_runtime::client::{
    AskContext, CallError, CheckedUrl, DriveError, Driver, PendingAction, PendingUrl, Responder, TaskAction, TaskError,
    TaskPolicy, TaskWait,
};
use elicit_runtime::schema::RequestedSchema;
use elicit_runtime::wire::tasks::TaskStatus;
use elicit_runtime::wire::{Capabilities, ElicitAction, ElicitResult};
use serde_json::{Map, Value, json};

use crate::fake_server::{FakeServer, Received};

// ---- a scripted server ----

impl FakeServer {
    /// Answers `tools/call` with a task handle, `tasks/get` with `polls` in order (the last one
    /// again once they run out), and `tasks/update`/`tasks/cancel` with an ack.
    fn task(polls: Vec<Value>) -> Self {
        let mut polls: VecDeque<Value> = polls.into();
        FakeServer::new(move |method, _| match method {
            "tools/call" => Ok(handle()),
            "tasks/get" => {
                let next = if polls.len() > 1 { polls.pop_front() } else { polls.front().cloned() };
                Ok(next.unwrap_or_else(|| panic!("no poll scripted")))
            }
            "tasks/update" | "tasks/cancel" => Ok(json!({"resultType": "complete"})),
            other => panic!("unexpected `{other}`"),
        })
    }

    fn methods(&self) -> Vec<String> {
        self.received().into_iter().map(|r| r.method).collect()
    }

    fn updates(&self) -> Vec<Value> {
        self.received()
            .into_iter()
            .filter(|r| r.method == "tasks/update")
            .map(|r| r.params["inputResponses"].clone())
            .collect()
    }
}

const TASK_ID: &str = "task-1";

fn task_fields(status: &str) -> Map<String, Value> {
    let value = json!({"taskId": TASK_ID, "status": status, "createdAt": "2026-08-01T10:00:00Z",
        "lastUpdatedAt": "2026-08-01T10:00:00Z", "ttlMs": 60000, "pollIntervalMs": 1});
    value.as_object().cloned().unwrap()
}

fn handle() -> Value {
    let mut object = task_fields("working");
    object.insert("resultType".into(), json!("task"));
    Value::Object(object)
}

fn got(status: &str, extra: Value) -> Value {
    let mut object = task_fields(status);
    object.insert("resultType".into(), json!("complete"));
    if let Value::Object(extra) = extra {
        object.extend(extra);
    }
    Value::Object(object)
}

fn form(message: &str) -> Value {
    json!({"method": "elicitation/create", "params": {"mode": "form", "message": message,
        "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}}})
}

fn asking(keys: &[&str]) -> Value {
    let requests: Map<String, Value> = keys.iter().map(|k| ((*k).to_owned(), form(k))).collect();
    got("input_required", json!({ "inputRequests": requests }))
}

fn completed(text: &str) -> Value {
    got("completed", json!({"result": {"content": [{"type": "text", "text": text}], "isError": false}}))
}

// ---- a scripted user ----

#[derive(Default)]
struct User {
    asked: Vec<(String, usize)>,
    waits: Vec<(TaskStatus, Option<String>, Duration)>,
    cancel_after_waits: Option<usize>,
}

impl Responder for User {
    async fn form(&mut self, ctx: AskContext<'_>, _message: &str, _schema: &RequestedSchema) -> ElicitResult {
        self.asked.push((ctx.key.to_owned(), ctx.round));
        let mut content = Map::new();
        content.insert("ok".into(), json!(true));
        ElicitResult::accept(content)
    }

    async fn url(&mut self, ctx: AskContext<'_>, _message: &str, _url: &CheckedUrl) -> ElicitAction {
        self.asked.push((ctx.key.to_owned(), ctx.round));
        ElicitAction::Accept
    }

    async fn pending(&mut self, ctx: AskContext<'_>, _pending: PendingUrl<'_>) -> PendingAction {
        panic!("no pending state in a task: `{}`", ctx.key)
    }

    async fn task_waiting(&mut self, wait: TaskWait<'_>) -> TaskAction {
        self.waits.push((wait.task.status, wait.task.status_message.clone(), wait.next_poll));
        if self.cancel_after_waits.is_some_and(|n| self.waits.len() >= n) {
            return TaskAction::Cancel;
        }
        tokio::time::sleep(wait.next_poll).await;
        TaskAction::Poll
    }
}

fn driver() -> Driver {
    Driver::new(Capabilities { form: true, ..Capabilities::default() }, json!({"name": "t", "version": "0"}), "fake")
        .tasks(TaskPolicy::default().poll_interval_range(Duration::from_millis(1), Duration::from_millis(5)))
}

fn tool() -> Map<String, Value> {
    json!({"name": "deploy", "arguments": {}}).as_object().cloned().unwrap()
}

async fn run(driver: &Driver, server: &FakeServer, user: &mut User) -> Result<Value, DriveError> {
    driver.call(&mut server.caller(), user, "tools/call", tool()).await
}

// ---- behaviour ----

#[tokio::test]
async fn every_request_declares_the_extension() {
    let server = FakeServer::task(vec![got("working", json!({})), asking(&["a"]), completed("done")]);
    run(&driver(), &server, &mut User::default()).await.unwrap();
    let received = server.received();
    assert_eq!(server.methods(), ["tools/call", "tasks/get", "tasks/get", "tasks/update", "tasks/get"]);
    for Received { method, params } in &received {
        let caps = &params["_meta"]["io.modelcontextprotocol/clientCapabilities"];
        assert_eq!(caps["extensions"]["io.modelcontextprotocol/tasks"], json!({}), "{method}");
        assert_eq!(caps["elicitation"], json!({"form": {}}), "{method}");
        if method.starts_with("tasks/") {
            assert_eq!(params["taskId"], TASK_ID, "{method}");
        }
    }
}

#[tokio::test]
async fn input_requests_are_answered_once_each_and_the_result_returned() {
    // The snapshot after the update still lists `a` (the ack is eventually consistent), then `b`
    // arrives beside the stale `a`.
    let server = FakeServer::task(vec![
        asking(&["a"]),
        asking(&["a"]),
        asking(&["a", "b"]),
        asking(&["b"]),
        got("working", json!({"statusMessage": "deploying 3/4"})),
        completed("deployed"),
    ]);
    let mut user = User::default();
    let result = run(&driver(), &server, &mut user).await.unwrap();
    assert_eq!(result["content"][0]["text"], "deployed");
    assert_eq!(user.asked, [("a".to_owned(), 1), ("b".to_owned(), 2)]);
    assert_eq!(
        server.updates(),
        [
            json!({"a": {"action": "accept", "content": {"ok": true}}}),
            json!({"b": {"action": "accept", "content": {"ok": true}}})
        ]
    );
    assert!(!server.methods().contains(&"tasks/cancel".to_owned()));
    assert!(
        user.waits
            .iter()
            .any(|(status, message, _)| *status == TaskStatus::Working && message.as_deref() == Some("deploying 3/4"))
    );
}

#[tokio::test]
async fn several_requests_at_once_go_in_one_update() {
    let server = FakeServer::task(vec![asking(&["x", "y"]), completed("ok")]);
    let mut user = User::default();
    run(&driver(), &server, &mut user).await.unwrap();
    assert_eq!(user.asked, [("x".to_owned(), 1), ("y".to_owned(), 1)]);
    let updates = server.updates();
    assert_eq!(updates.len(), 1);
    assert_eq!(updates[0].as_object().unwrap().keys().collect::<Vec<_>>(), ["x", "y"]);
}

#[tokio::test]
async fn a_failed_task_is_the_calls_error_and_a_tool_error_its_result() {
    let failed = got("failed", json!({"error": {"code": -32603, "message": "rate limited", "data": {"retry": 5}}}));
    let error = run(&driver(), &FakeServer::task(vec![failed]), &mut User::default()).await.unwrap_err();
    assert_eq!(
        error,
        DriveError::Call(CallError::Rpc {
            code: -32603,
            message: "rate limited".into(),
            data: Some(json!({"retry": 5}))
        })
    );

    let tool_error = got("completed", json!({"result": {"content": [], "isError": true}}));
    let result = run(&driver(), &FakeServer::task(vec![tool_error]), &mut User::default()).await.unwrap();
    assert_eq!(result["isError"], true);
}

#[tokio::test]
async fn a_task_cancelled_by_the_server_says_so() {
    let cancelled = got("cancelled", json!({"statusMessage": "operator stopped it"}));
    let error = run(&driver(), &FakeServer::task(vec![cancelled]), &mut User::default()).await.unwrap_err();
    assert_eq!(error, DriveError::Task(TaskError::CancelledByServer(Some("operator stopped it".into()))));
}

#[tokio::test]
async fn the_user_cancels_while_it_works() {
    let server = FakeServer::task(vec![got("working", json!({}))]);
    let mut user = User { cancel_after_waits: Some(3), ..User::default() };
    let error = run(&driver(), &server, &mut user).await.unwrap_err();
    assert_eq!(error, DriveError::Cancelled);
    assert_eq!(server.methods(), ["tools/call", "tasks/get", "tasks/get", "tasks/cancel"]);
    let cancel = server.received().pop().unwrap().params;
    assert_eq!(cancel["taskId"], TASK_ID);
    assert!(cancel["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"].is_object());
}

#[tokio::test]
async fn the_servers_interval_is_clamped() {
    let huge = json!({"taskId": TASK_ID, "status": "working", "createdAt": "2026-08-01T10:00:00Z",
        "lastUpdatedAt": "2026-08-01T10:00:00Z", "ttlMs": null, "pollIntervalMs": 1_000_000_000_000u64, "resultType": "complete"});
    let server = FakeServer::task(vec![huge, completed("ok")]);
    let mut user = User::default();
    run(&driver(), &server, &mut user).await.unwrap();
    // The handle suggests 1 ms; the huge suggestion is cut to the driver's 5 ms ceiling.
    let waits: Vec<Duration> = user.waits.iter().map(|(_, _, wait)| *wait).collect();
    assert_eq!(waits, [Duration::from_millis(1), Duration::from_millis(5)]);
}

#[tokio::test]
async fn a_task_that_never_ends_is_cancelled_at_the_deadline() {
    let server = FakeServer::task(vec![got("working", json!({}))]);
    let driver = driver().tasks(
        TaskPolicy::default()
            .deadline(Duration::from_millis(30))
            .poll_interval_range(Duration::from_millis(1), Duration::from_millis(5)),
    );
    let error = run(&driver, &server, &mut User::default()).await.unwrap_err();
    assert!(matches!(&error, DriveError::Task(TaskError::Deadline { task_id, .. }) if task_id == TASK_ID), "{error:?}");
    assert_eq!(server.methods().last().map(String::as_str), Some("tasks/cancel"));
}

#[tokio::test]
async fn a_task_that_keeps_asking_is_stopped() {
    let mut n = 0;
    let server = FakeServer::new(move |method, _| match method {
        "tools/call" => Ok(handle()),
        "tasks/get" => {
            n += 1;
            Ok(asking(&[&format!("k{n}")]))
        }
        _ => Ok(json!({"resultType": "complete"})),
    });
    let driver = driver().tasks(
        TaskPolicy::default()
            .max_input_requests(3)
            .poll_interval_range(Duration::from_millis(1), Duration::from_millis(5)),
    );
    let mut user = User::default();
    let error = run(&driver, &server, &mut user).await.unwrap_err();
    assert_eq!(error, DriveError::Task(TaskError::TooManyInputRequests { task_id: TASK_ID.into(), limit: 3 }));
    assert_eq!(user.asked.len(), 3);
    assert_eq!(server.methods().last().map(String::as_str), Some("tasks/cancel"));
}

#[tokio::test]
async fn too_many_requests_at_once_are_refused() {
    let keys: Vec<String> = (0..70).map(|i| format!("k{i}")).collect();
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let server = FakeServer::task(vec![asking(&keys)]);
    let mut user = User::default();
    let error = run(&driver(), &server, &mut user).await.unwrap_err();
    assert!(matches!(error, DriveError::Protocol(_)), "{error:?}");
    assert!(user.asked.is_empty());
    assert_eq!(server.methods().last().map(String::as_str), Some("tasks/cancel"));
}

#[tokio::test]
async fn an_undeclared_mode_is_refused_and_the_task_cancelled() {
    let url = json!({"method": "elicitation/create", "params": {"mode": "url", "message": "pay",
        "url": "https://pay.example/1"}});
    let server = FakeServer::task(vec![got("input_required", json!({"inputRequests": {"pay": url}}))]);
    let error = run(&driver(), &server, &mut User::default()).await.unwrap_err();
    assert!(matches!(&error, DriveError::Refused { key, .. } if key == "pay"), "{error:?}");
    assert!(server.updates().is_empty());
    assert_eq!(server.methods().last().map(String::as_str), Some("tasks/cancel"));
}

#[tokio::test]
async fn a_malformed_poll_is_a_protocol_error() {
    for bad in [
        json!({"resultType": "complete", "taskId": TASK_ID, "status": "sleeping"}),
        got("completed", json!({})),
        json!({"resultType": "complete", "taskId": "another", "status": "working", "createdAt": "x",
            "lastUpdatedAt": "x", "ttlMs": null}),
        json!([1, 2]),
    ] {
        let server = FakeServer::task(vec![bad.clone()]);
        let error = run(&driver(), &server, &mut User::default()).await.unwrap_err();
        assert!(matches!(error, DriveError::Protocol(_)), "{bad}: {error:?}");
        assert_eq!(server.methods().last().map(String::as_str), Some("tasks/cancel"), "{bad}");
    }
}

#[tokio::test]
async fn without_the_extension_a_task_handle_is_refused() {
    let plain = Driver::new(Capabilities::ELICITATION, json!({"name": "t", "version": "0"}), "fake");
    assert!(!plain.declares_tasks());
    let server = FakeServer::task(vec![]);
    let error = run(&plain, &server, &mut User::default()).await.unwrap_err();
    assert!(matches!(error, DriveError::Protocol(_)), "{error:?}");
    let params = &server.received()[0].params;
    assert!(params["_meta"]["io.modelcontextprotocol/clientCapabilities"].get("extensions").is_none());
    assert_eq!(server.methods(), ["tools/call"]);
}

#[tokio::test]
async fn a_task_handle_is_valid_only_for_tools_call() {
    let server = FakeServer::new(|_, _| Ok(handle()));
    let error = driver().call(&mut server.caller(), &mut User::default(), "prompts/get", tool()).await.unwrap_err();
    assert_eq!(error, DriveError::Task(TaskError::NotATaskRequest("prompts/get".into())));
}

#[tokio::test]
async fn rounds_before_the_task_are_multi_round_trips() {
    // The server asks once synchronously (MRTR), then creates the task on the retry.
    let mut calls = 0;
    let server = FakeServer::new(move |method, params| match method {
        "tools/call" => {
            calls += 1;
            if calls == 1 {
                Ok(
                    json!({"resultType": "input_required", "inputRequests": {"name": form("name")}, "requestState": "s"}),
                )
            } else {
                assert_eq!(params["requestState"], "s");
                Ok(handle())
            }
        }
        "tasks/get" => Ok(completed("Hello")),
        other => panic!("unexpected `{other}`"),
    });
    let mut user = User::default();
    let result = run(&driver(), &server, &mut user).await.unwrap();
    assert_eq!(result["content"][0]["text"], "Hello");
    assert_eq!(server.methods(), ["tools/call", "tools/call", "tasks/get"]);
}

#[tokio::test]
async fn a_huge_snapshot_is_refused_before_it_is_read() {
    let requests: Map<String, Value> = (0..100_000).map(|i| (format!("k{i}"), json!({"method": "nonsense"}))).collect();
    let server = FakeServer::task(vec![got("input_required", json!({ "inputRequests": requests }))]);
    let mut user = User::default();
    let error = run(&driver(), &server, &mut user).await.unwrap_err();
    assert!(matches!(&error, DriveError::Protocol(m) if m.message().contains("listed 100000")), "{error:?}");
    assert!(user.asked.is_empty());
    assert_eq!(server.methods().last().map(String::as_str), Some("tasks/cancel"));
}

#[tokio::test]
async fn a_task_is_resumed_by_its_id() {
    let server = FakeServer::task(vec![asking(&["a"]), completed("resumed")]);
    let mut user = User::default();
    let result = driver().resume_task(&mut server.caller(), &mut user, TASK_ID).await.unwrap();
    assert_eq!(result["content"][0]["text"], "resumed");
    // The first poll goes out at once; the user answers `a` once.
    assert_eq!(server.methods(), ["tasks/get", "tasks/update", "tasks/get"]);
    assert_eq!(user.asked, [("a".to_owned(), 1)]);
    assert_eq!(user.waits.len(), 1);

    let unknown = FakeServer::new(|_, _| {
        Err(CallError::Rpc { code: -32602, message: "Failed to retrieve task: Task not found".into(), data: None })
    });
    let error = driver().resume_task(&mut unknown.caller(), &mut User::default(), "gone").await.unwrap_err();
    assert!(matches!(error, DriveError::Call(CallError::Rpc { code: -32602, .. })), "{error:?}");
}
