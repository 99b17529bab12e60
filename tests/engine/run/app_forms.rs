//! The draft app-rendered forms (SEP-3118) in the engine: a form ask of a type the engine offers
//! as an MCP App carries `_meta.ui.resourceUri` for a client that negotiated it, on the
//! 2026-07-28 wire (inside `inputRequests[key].params`) and on the 2025-era push
//! (`elicitation/create`'s params), and nothing else about the ask changes. A client that did not
//! negotiate every part sees the same form without `_meta`.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::server;

use elicit_runtime::Elicit;
use elicit_runtime::apps::AppForm;
use elicit_runtime::server::{Answer, Engine, Flow, FlowError};
use elicit_runtime::state::KeyRing;
use elicit_runtime::wire::Revision;
use serde_json::{Value, json};

use super::era_2025::{Harness, accept, describe_person, finished};
use super::forms::{Colour, Person};

use server::engine::{Call, asked, complete, request_json};

const PERSON_APP: &str = "ui://engine-tests/person";

fn engine() -> Engine {
    Engine::builder("engine-tests", KeyRing::generate()).app_form(AppForm::new::<Person>(PERSON_APP).unwrap()).build()
}

/// Every part the draft requires: form elicitation, the UI extension rendering the app MIME type,
/// and its `elicitation` member.
fn negotiating() -> Value {
    json!({"elicitation": {"form": {}}, "extensions": {"io.modelcontextprotocol/ui": {
        "mimeTypes": ["text/html;profile=mcp-app"], "elicitation": {}}}})
}

/// Declarations that lack one part each (or rely on the UI extension alone): no hint.
fn not_negotiating() -> Vec<(&'static str, Value)> {
    let ui =
        |settings: Value| json!({"elicitation": {"form": {}}, "extensions": {"io.modelcontextprotocol/ui": settings}});
    vec![
        ("form only", json!({"elicitation": {"form": {}}})),
        ("MCP Apps without its elicitation member", ui(json!({"mimeTypes": ["text/html;profile=mcp-app"]}))),
        ("no app MIME type", ui(json!({"mimeTypes": ["text/html"], "elicitation": {}}))),
        ("no mimeTypes", ui(json!({"elicitation": {}}))),
        ("elicitation not an object", ui(json!({"mimeTypes": ["text/html;profile=mcp-app"], "elicitation": true}))),
        (
            "another extension id",
            json!({"elicitation": {"form": {}}, "extensions": {"io.modelcontextprotocol/ui-elicitation": {
            "mimeTypes": ["text/html;profile=mcp-app"], "elicitation": {}}}}),
        ),
    ]
}

async fn pick_colour(flow: Flow) -> Result<String, FlowError> {
    Ok(match flow.form::<Colour>("colour").await? {
        Answer::Accepted(c) => c.colour,
        Answer::Declined | Answer::Cancelled => String::new(),
    })
}

#[tokio::test]
async fn a_negotiating_client_gets_the_hint_inside_input_requests_and_the_same_form() {
    let engine = engine();
    // A bare `elicitation: {}` is form mode (core's backwards compatibility): it negotiates too.
    let bare = json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/ui": {
        "mimeTypes": ["text/plain", "text/html;profile=mcp-app"], "elicitation": {}}}});
    for declared in [negotiating(), bare] {
        let call = Call::tool("describe").capabilities(declared.clone());
        let first = asked(engine.run(&call.request(), describe_person).await);
        let request = request_json(&first, "person");
        assert_eq!(request["method"], "elicitation/create");
        assert_eq!(request["params"]["_meta"], json!({"ui": {"resourceUri": PERSON_APP}}), "{declared}");
        assert_eq!(request["params"]["mode"], "form");
        assert_eq!(request["params"]["requestedSchema"], Person::requested_schema().to_json());
        assert_eq!(request["params"]["message"], Person::MESSAGE);

        // An invalid answer is asked again: the same hint, the schema prefilled as for any client.
        let state = first.request_state.clone();
        let wrong = json!({"person": accept(json!({"name": "A", "age": 36}))});
        let again = asked(engine.run(&call.retry(wrong, state.as_deref()).request(), describe_person).await);
        let request = request_json(&again, "person");
        assert_eq!(request["params"]["_meta"]["ui"]["resourceUri"], PERSON_APP);
        assert_eq!(request["params"]["requestedSchema"]["properties"]["age"]["default"], 36);

        // The answer the App collected is an ordinary answer: parsed and validated the same way.
        let right = json!({"person": accept(json!({"name": "Ada", "age": 36}))});
        let state = again.request_state.clone();
        assert_eq!(
            complete(engine.run(&call.retry(right, state.as_deref()).request(), describe_person).await),
            "Ada is 36"
        );
    }
}

#[tokio::test]
async fn without_every_part_negotiated_the_form_carries_no_meta() {
    let engine = engine();
    for (case, declared) in not_negotiating() {
        let call = Call::tool("describe").capabilities(declared);
        let request = request_json(&asked(engine.run(&call.request(), describe_person).await), "person");
        assert!(request["params"].get("_meta").is_none(), "{case}: {request}");
        assert_eq!(request["params"]["requestedSchema"], Person::requested_schema().to_json(), "{case}");
    }
}

#[tokio::test]
async fn a_form_without_an_app_and_an_engine_without_apps_send_no_hint() {
    // Negotiated, but `Colour` has no App on this engine.
    let call = Call::tool("colour").capabilities(negotiating());
    let request = request_json(&asked(engine().run(&call.request(), pick_colour).await), "colour");
    assert!(request["params"].get("_meta").is_none(), "{request}");
    // Negotiated, but the engine offers no App at all.
    let plain = Engine::builder("engine-tests", KeyRing::generate()).build();
    let call = Call::tool("describe").capabilities(negotiating());
    let request = request_json(&asked(plain.run(&call.request(), describe_person).await), "person");
    assert!(request["params"].get("_meta").is_none(), "{request}");
}

#[tokio::test]
async fn the_pushed_elicitation_carries_the_hint_on_a_negotiated_2025_session_only() {
    let with_app = |b: elicit_runtime::server::EngineBuilder| b.app_form(AppForm::new::<Person>(PERSON_APP).unwrap());
    for version in [Revision::V2025_06_18, Revision::V2025_11_25] {
        let mut h = Harness::with(version, negotiating(), with_app);
        let task = h.spawn(describe_person);
        let pushed = h.next().await;
        assert_eq!(pushed.method, "elicitation/create");
        let params = pushed.params.clone().unwrap();
        assert_eq!(params["_meta"], json!({"ui": {"resourceUri": PERSON_APP}}), "{version:?}");
        assert_eq!(params["requestedSchema"], Person::requested_schema().to_json());
        pushed.answer(accept(json!({"name": "Ada", "age": 36})));
        assert_eq!(finished(task).await.unwrap(), "Ada is 36");

        for (case, declared) in not_negotiating() {
            let mut h = Harness::with(version, declared, with_app);
            let task = h.spawn(describe_person);
            let pushed = h.next().await;
            assert!(pushed.params.as_ref().unwrap().get("_meta").is_none(), "{version:?} {case}");
            pushed.answer(json!({"action": "decline"}));
            assert_eq!(finished(task).await.unwrap(), "declined");
        }
    }
}

#[test]
fn an_app_is_refused_when_it_is_made_unless_its_uri_is_absolute_ui_with_an_authority() {
    assert!(AppForm::new::<Person>("ui://engine-tests/person").is_ok());
    for bad in ["ui:///person", "ui:person", "https://example.com/person", "person", "ui://", "ui://a b/c"] {
        let error = AppForm::new::<Person>(bad).unwrap_err();
        assert!(error.to_string().contains("app form URI"), "{bad}: {error}");
    }
}
