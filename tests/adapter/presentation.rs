//! The presentation policy per tool, with real clients that cannot show forms: a 2026-07-28
//! request without `elicitation` and the official Python SDK v2 without an elicitation callback,
//! against a real `travel-server` (whose tools each pick a policy: `book_trip` explains,
//! `rate_trip` is hidden, `plan_trip` requires). A client that can show forms sees every tool.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_examples::travel::NO_FORMS;
use elicit_test_support::peers;
use elicit_test_support::server;

use serde_json::{Value, json};

use peers::clients::{Conversation, Sdk, Target};
use server::http::Client;
use server::key_b64;
use server::process::ServerProcess;

fn listed(tools: &Value) -> Vec<&str> {
    tools["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn a_2026_request_without_elicitation_gets_each_tools_policy() {
    let server = ServerProcess::travel(&key_b64());
    let bare = Client::new(&server.mcp_url()).with_capabilities(json!({}));
    // Hide: not offered to a request that cannot show its form; the others are.
    let tools = bare.request("tools/list", json!({})).await;
    let names = listed(tools.result());
    assert!(!names.contains(&"rate_trip"), "{names:?}");
    assert!(names.contains(&"book_trip") && names.contains(&"plan_trip"), "{names:?}");
    // Explain: an ordinary error result the model can relay, not a protocol error.
    let (text, is_error) = bare.call("book_trip", json!({})).await.complete();
    assert_eq!((text.as_str(), is_error), (NO_FORMS, true));
    // Require: -32021 only here, when the handler must ask (and for a hidden tool called anyway).
    let planned = bare.call("plan_trip", json!({})).await;
    let (code, _, data) = planned.error();
    assert_eq!(code, -32021);
    assert_eq!(data.unwrap()["requiredCapabilities"], json!({"elicitation": {"form": {}}}));
    assert_eq!(bare.call("rate_trip", json!({})).await.error().0, -32021);

    // Control: the same requests declaring form mode see and run every tool.
    let forms = Client::new(&server.mcp_url()).with_capabilities(json!({"elicitation": {}}));
    let tools = forms.request("tools/list", json!({})).await;
    assert!(listed(tools.result()).contains(&"rate_trip"));
    forms.call("book_trip", json!({})).await.asked();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_without_an_elicitation_callback_gets_each_tools_policy() {
    let server = ServerProcess::travel(&key_b64());
    let plan = json!({"calls": ["book_trip", "plan_trip", "rate_trip"]});
    let mut peer =
        Conversation::start_script(Sdk::PyV2, "tests/peers/py_v2_no_elicitation.py", &plan, Target::Http(&server));
    let connected = peer.expect("connected").await;
    assert_eq!(connected["elicitation"], false, "the SDK declared no elicitation: {connected}");
    let tools = peer.expect("tools").await;
    let names: Vec<&str> = tools["names"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    assert!(!names.contains(&"rate_trip") && names.contains(&"book_trip"), "{names:?}");
    let booked = peer.expect("result").await;
    assert_eq!(booked["result"]["isError"], true, "{booked}");
    assert_eq!(booked["result"]["content"][0]["text"], NO_FORMS);
    // Require on a 2025-era session: the session did not declare the mode (this wire's -32600).
    let planned = peer.expect("error").await;
    assert_eq!((planned["tool"].as_str(), planned["code"].as_i64()), (Some("plan_trip"), Some(-32600)), "{planned}");
    let rated = peer.expect("error").await;
    assert_eq!(rated["tool"], "rate_trip", "{rated}");
    peer.exited().await;
}
