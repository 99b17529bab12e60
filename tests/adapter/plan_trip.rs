//! `plan_trip` over HTTP against a real travel-server: the tool's parameters are an `Elicit`
//! struct, and the user is asked only for what the model left out or got wrong.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::server;

use serde_json::{Value, json};
use server::http::Client;
use server::process::ServerProcess;

fn schema_keys(params: &Value) -> Vec<String> {
    params["requestedSchema"]["properties"].as_object().expect("a form").keys().cloned().collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn complete_arguments_need_no_elicitation() {
    let server = ServerProcess::travel(&server::key_b64());
    let client = Client::new(&server.mcp_url());
    let args = json!({"from": "CDG", "to": "LHR", "depart": "2027-01-02", "travellers": 3, "cabin": "business"});
    let reply = client.call("plan_trip", args).await;
    let (text, is_error) = reply.complete();
    assert!(!is_error);
    assert_eq!(text, "Planned: CDG → LHR on 2027-01-02, 3 traveller(s), business class.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_missing_fields_are_asked_in_one_round_and_nothing_else() {
    let server = ServerProcess::travel(&server::key_b64());
    let client = Client::new(&server.mcp_url());
    // `to` and `depart` are missing; `travellers` has a default; `cabin` is optional.
    let args = json!({"from": "CDG"});
    let asked = client.call("plan_trip", args.clone()).await.asked();
    assert_eq!(asked.keys(), ["plan"]);
    let params = asked.params("plan");
    assert_eq!(schema_keys(params), ["to", "depart"], "exactly the missing fields, in declaration order");
    assert_eq!(params["requestedSchema"]["required"], json!(["to", "depart"]));
    let message = params["message"].as_str().unwrap();
    assert!(message.contains("Missing: `to`, `depart`."), "{message}");

    let answer = json!({"plan": {"action": "accept", "content": {"to": "JFK", "depart": "2027-03-04"}}});
    let reply = client.retry("plan_trip", args, answer, Some(asked.state())).await;
    assert_eq!(reply.complete().0, "Planned: CDG → JFK on 2027-03-04, 1 traveller(s), economy.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_argument_is_asked_again_with_the_error_and_not_trusted() {
    let server = ServerProcess::travel(&server::key_b64());
    let client = Client::new(&server.mcp_url());
    let args = json!({"from": "CDG", "to": "London", "depart": "2027-01-02", "travellers": 12});
    let asked = client.call("plan_trip", args.clone()).await.asked();
    let params = asked.params("plan");
    assert_eq!(schema_keys(params), ["to", "travellers"]);
    let message = params["message"].as_str().unwrap();
    assert!(message.contains("`to` must be at most 3 characters long"), "{message}");
    assert!(message.contains("`travellers` must be at most 9"), "{message}");
    // The model's invalid values are not offered as defaults (the declared default stays).
    let properties = &params["requestedSchema"]["properties"];
    assert_eq!(properties["to"].get("default"), None);
    assert_eq!(properties["travellers"]["default"], json!(1));

    // The user's answer replaces them; a stray key cannot overwrite the model's valid `from`.
    let answer = json!({"plan": {"action": "accept", "content": {"to": "LHR", "travellers": 2, "from": "XXX"}}});
    let reply = client.retry("plan_trip", args, answer, Some(asked.state())).await;
    assert_eq!(reply.complete().0, "Planned: CDG → LHR on 2027-01-02, 2 traveller(s), economy.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decline_and_cancel_are_handled() {
    let server = ServerProcess::travel(&server::key_b64());
    let client = Client::new(&server.mcp_url());
    let args = json!({"from": "CDG"});
    for (action, expected) in
        [("decline", "No plan made: you declined to complete the trip details."), ("cancel", "Planning cancelled.")]
    {
        let asked = client.call("plan_trip", args.clone()).await.asked();
        let answer = json!({"plan": {"action": action}});
        let reply = client.retry("plan_trip", args.clone(), answer, Some(asked.state())).await;
        assert_eq!(reply.complete().0, expected);
    }
}
