//! The Tasks extension's own examples (`tests/fixtures/tasks/`) read with the wire types and written
//! back unchanged: the task handle, every `tasks/get` status, the update and cancel requests and
//! their acknowledgements, the listen request and the status notification, the capability
//! declarations and the missing-capability error.

#![allow(clippy::panic, reason = "a test reports a failure by panicking, with the offending input")]

use std::path::PathBuf;

use elicit_runtime::client::request_meta;
use elicit_runtime::wire::tasks::{
    self, CallResult, CreateTaskResult, DetailedTask, ErrorObject, TaskNotification, TaskState, TaskStatus,
};
use elicit_runtime::wire::{Capabilities, ElicitAction, ElicitParams, ElicitResult, InputRequest, codes};
use serde_json::{Map, Value, json};

fn fixture(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/tasks").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn result(name: &str) -> Value {
    fixture(name)["result"].clone()
}

fn params(name: &str) -> Map<String, Value> {
    fixture(name)["params"].as_object().cloned().unwrap_or_else(|| panic!("{name} has params"))
}

/// The params of a request without its `_meta` (what the wire helpers build; the driver adds `_meta`).
fn without_meta(mut params: Map<String, Value>) -> Value {
    params.remove("_meta");
    Value::Object(params)
}

#[test]
fn the_task_handle_round_trips() {
    let value = result("tools-call-create-task-result.json");
    let CallResult::Task(created) = CallResult::from_json(&value).expect("reads") else {
        panic!("a task handle: {value}")
    };
    assert_eq!(created.task.task_id, "786512e2-9e0d-44bd-8f29-789f320fe840");
    assert_eq!(created.task.status, TaskStatus::Working);
    assert_eq!(created.task.ttl_ms, Some(3_600_000));
    assert_eq!(created.task.poll_interval_ms, Some(5000));
    assert_eq!(created.task.status_message.as_deref(), Some("The operation is now in progress."));
    assert_eq!(created.to_json(), value);
    for absent in ["result", "error", "inputRequests", "requestState", "task", "ttl", "pollInterval"] {
        assert!(created.to_json().get(absent).is_none(), "{absent}");
    }
}

#[test]
fn every_tasks_get_status_round_trips() {
    let cases = [
        ("tasks-get-working.json", TaskStatus::Working),
        ("tasks-get-input-required.json", TaskStatus::InputRequired),
        ("tasks-get-completed.json", TaskStatus::Completed),
        ("tasks-get-failed.json", TaskStatus::Failed),
        ("tasks-get-cancelled.json", TaskStatus::Cancelled),
    ];
    for (name, status) in cases {
        let value = result(name);
        let detailed = DetailedTask::from_result(&value).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(detailed.task.status, status, "{name}");
        assert_eq!(detailed.state.status(), status, "{name}");
        assert_eq!(detailed.to_result(), value, "{name}");
    }
}

#[test]
fn status_payloads_read_as_their_types() {
    let asked = DetailedTask::from_result(&result("tasks-get-input-required.json")).expect("reads");
    let TaskState::InputRequired(requests) = asked.state else { panic!("input_required") };
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].0, "name");
    assert!(
        matches!(&requests[0].1, InputRequest::Elicit(ElicitParams::Form { message, .. }) if message == "Please enter your name.")
    );

    let done = DetailedTask::from_result(&result("tasks-get-completed.json")).expect("reads");
    let TaskState::Completed(call_result) = done.state else { panic!("completed") };
    assert_eq!(call_result["content"][0]["text"], "Hello, Luca!");

    let failed = DetailedTask::from_result(&result("tasks-get-failed.json")).expect("reads");
    assert_eq!(
        failed.state,
        TaskState::Failed(ErrorObject { code: -32603, message: "API rate limit exceeded".into(), data: None })
    );
    assert_eq!(failed.task.status_message.as_deref(), Some("Tool execution failed: API rate limit exceeded"));
}

#[test]
fn a_tasks_get_result_written_as_task_is_still_read() {
    // Some of the extension's own examples wrote `"task"` on a `tasks/get` result.
    let mut value = result("tasks-get-failed.json");
    value["resultType"] = json!("task");
    assert_eq!(DetailedTask::from_result(&value).expect("tolerated").task.status, TaskStatus::Failed);
    value["resultType"] = json!("input_required");
    assert!(DetailedTask::from_result(&value).is_err());
}

#[test]
fn requests_are_built_as_the_extension_shows_them() {
    let task_id = "786512e2-9e0d-44bd-8f29-789f320fe840";
    assert_eq!(Value::Object(tasks::task_params(task_id)), without_meta(params("tasks-get-request.json")));
    assert_eq!(Value::Object(tasks::task_params(task_id)), without_meta(params("tasks-cancel-request.json")));
    let mut content = Map::new();
    content.insert("name".into(), json!("Luca"));
    let mut answers = Map::new();
    answers.insert("name".into(), ElicitResult::accept(content).to_json());
    assert_eq!(
        Value::Object(tasks::update_params(task_id, answers)),
        without_meta(params("tasks-update-request.json"))
    );
    let listen = params("subscriptions-listen-request.json");
    assert_eq!(Value::Object(tasks::listen_params(&[task_id.to_owned()])), without_meta(listen.clone()));
    assert_eq!(tasks::listened_task_ids(&listen).expect("reads"), [task_id]);
    let acknowledged = params("subscriptions-acknowledged.json");
    assert_eq!(tasks::listened_task_ids(&acknowledged).expect("reads"), [task_id]);
}

#[test]
fn acknowledgements_are_empty_complete_results() {
    for name in ["tasks-update-ack.json", "tasks-cancel-ack.json"] {
        assert_eq!(tasks::ack(), result(name), "{name}");
        assert_eq!(tasks::read_ack(&result(name)), Ok(()), "{name}");
    }
}

#[test]
fn the_status_notification_round_trips() {
    let params = params("notifications-tasks-completed.json");
    let notification = TaskNotification::from_params(&params).expect("reads");
    assert_eq!(notification.subscription_id, Some(json!(12)));
    assert!(matches!(notification.task.state, TaskState::Completed(_)));
    assert_eq!(Value::Object(notification.to_params()), Value::Object(params));
}

#[test]
fn capability_declarations_match_the_examples() {
    let expected = fixture("client-request-meta.json")["_meta"].clone();
    let mut meta = request_meta(Capabilities { form: true, ..Capabilities::default() }, &json!({}));
    meta.remove("io.modelcontextprotocol/clientInfo");
    assert!(!tasks::declared_in_meta(Some(&meta)));
    tasks::declare_in_meta(&mut meta);
    assert_eq!(Value::Object(meta.clone()), expected);
    assert!(tasks::declared_in_meta(Some(&meta)));

    let mut server = json!({});
    tasks::declare(&mut server);
    assert_eq!(server, fixture("server-capabilities.json"));
}

#[test]
fn the_missing_capability_error_carries_its_data() {
    let error = fixture("error-missing-capability.json")["error"].clone();
    assert_eq!(error["code"], json!(codes::MISSING_REQUIRED_CLIENT_CAPABILITY));
    assert_eq!(tasks::errors::EXTENSION_NOT_DECLARED, codes::MISSING_REQUIRED_CLIENT_CAPABILITY);
    assert_eq!(error["data"], tasks::missing_extension_data());
}

#[test]
fn a_create_task_result_is_not_a_tasks_get_result() {
    let handle = result("tools-call-create-task-result.json");
    assert!(CreateTaskResult::from_json(&result("tasks-get-working.json")).is_err());
    assert!(CreateTaskResult::from_json(&handle).is_ok());
    // An answer to an elicitation inside a task is the same value as in Multi Round-Trip Requests.
    let answer = params("tasks-update-request.json")["inputResponses"]["name"].clone();
    assert_eq!(ElicitResult::from_json(&answer).expect("reads").action, ElicitAction::Accept);
}
