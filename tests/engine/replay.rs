//! The showcase under the replay check (`elicit_runtime::testing::ReplayCheck`): each of
//! `travel-server`'s tools is driven through every round, then every round is replayed as a
//! hostile client may, and no replay answers differently.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use std::sync::Arc;

use elicit_examples::loadgen::trip_answer;
use elicit_examples::travel::{self, PaymentSummaries};
use elicit_runtime::server::store::UrlCompletions;
use elicit_runtime::server::{Engine, Flow, Request};
use elicit_runtime::state::KeyRing;
use elicit_runtime::testing::ReplayCheck;
use elicit_runtime::wire::{ElicitParams, InputRequest};
use rmcp::model::CallToolResult;
use serde_json::{Value, json};

fn engine() -> Engine {
    Engine::builder(travel::AUDIENCE, KeyRing::generate()).build()
}

fn text(result: &CallToolResult) -> String {
    serde_json::to_value(result).unwrap()["content"][0]["text"].as_str().unwrap().to_owned()
}

fn meta() -> Value {
    json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}, "url": {}}}})
}

/// What the user answers `book_trip`'s ask `key`: the trip `trip`, the payment approved on the page
/// before the client answers, the booking confirmed.
async fn book_trip_answer(
    store: &Arc<dyn UrlCompletions>,
    trip: serde_json::Map<String, Value>,
    key: &str,
    asked: &InputRequest,
) -> Value {
    match (key, asked) {
        ("trip", _) => json!({"action": "accept", "content": trip}),
        ("payment", InputRequest::Elicit(ElicitParams::Url { url, .. })) => {
            let id = url.rsplit('/').next().unwrap();
            assert!(store.complete(id, json!({"approved": true}), None).await.unwrap(), "{url}");
            json!({"action": "accept"})
        }
        ("confirm", _) => json!({"action": "accept", "content": {"confirm": true}}),
        other => panic!("unexpected ask {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn book_trip_answers_every_replay_the_same() {
    let engine = engine();
    let summaries = PaymentSummaries::new(engine.url_completions().clone());
    let public_url: Arc<str> = Arc::from("https://travel.example");
    let handler = |flow: Flow| travel::book_trip(flow, public_url.clone(), summaries.clone());
    let meta = meta();
    let request = Request::new("tools/call", "book_trip").meta(meta.as_object());
    let store = engine.url_completions().clone();
    let result = ReplayCheck::new(&engine, request)
        .run(handler, async |key, asked| book_trip_answer(&store, trip_answer("replay", 3), key, asked).await)
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    assert!(text(&result).starts_with("Booked! Reference "), "{}", text(&result));
}

/// The fork a hostile client tries: the trip form answered with one traveller in economy, then the
/// same state answered with nine in business with every extra. The fork fails as a conflict
/// instead of booking nine travellers at the price quoted for one; a declined payment page, which
/// comes after the quote, is a fork that answers as a new flow would.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn book_trip_passes_the_fork_with_changed_answers() {
    let engine = engine();
    let summaries = PaymentSummaries::new(engine.url_completions().clone());
    let public_url: Arc<str> = Arc::from("https://travel.example");
    let handler = |flow: Flow| travel::book_trip(flow, public_url.clone(), summaries.clone());
    let meta = meta();
    let request = Request::new("tools/call", "book_trip").meta(meta.as_object());
    let store = engine.url_completions().clone();
    let result = ReplayCheck::new(&engine, request)
        .forks(|key, _answer| match key {
            // Nine travellers in business with every extra: €8,982.00 where one in economy is €129.00.
            "trip" => Some(json!({"action": "accept", "content": trip_answer("dear", 71)})),
            "payment" => Some(json!({"action": "decline"})),
            _ => None,
        })
        .run(handler, async |key, asked| book_trip_answer(&store, trip_answer("cheap", 0), key, asked).await)
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    let text = text(&result);
    assert!(text.contains("1 traveller(s), €129.00 paid"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_trip_and_plan_trip_answer_every_replay_the_same() {
    let engine = engine();
    let meta = meta();
    let rated = ReplayCheck::new(&engine, Request::new("tools/call", "rate_trip").meta(meta.as_object()))
        .run(travel::rate_trip, async |key, _| match key {
            "rating" => json!({"action": "accept", "content": {"stars": 5, "comment": "Smooth"}}),
            "contact" => json!({"action": "accept", "content": {"email": "ada@example.com"}}),
            other => panic!("unexpected ask {other}"),
        })
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    assert!(text(&rated).contains('5'), "{}", text(&rated));

    let arguments = json!({"from": "LHR"});
    let request = Request::new("tools/call", "plan_trip").meta(meta.as_object()).arguments(Some(&arguments));
    let planned = ReplayCheck::new(&engine, request)
        .run(
            travel::plan_trip,
            async |_, _| json!({"action": "accept", "content": {"to": "JFK", "depart": "2027-03-04"}}),
        )
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    assert!(text(&planned).contains("JFK"), "{}", text(&planned));
}
