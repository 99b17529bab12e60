//! Exactly-once over HTTP, with one instance and the in-process store, and
//! with two instances sharing one Redis (each with its own `RedisStore` connection and the same
//! keys; rounds alternate between them). The real `book_trip` of the travel example is served:
//! its last state replayed twice in a row and four times at once gives one reference; a
//! changed-answer replay after the finish does not contradict it; the payment round's response,
//! dropped and retried, gives the confirmation step, not a new payment page. A `count` tool counts
//! the runs of its `once` computation: 1, across every replay.
//!
//! Without `redis-server` the Redis half is skipped with a message, except under `CI`.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::redis::Redis;
use elicit_test_support::server;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use elicit_examples::loadgen::trip_answer;
use elicit_examples::travel::{self, PaymentSummaries};
use elicit_runtime::rmcp::McpServer;
use elicit_runtime::server::store::{InProcessStore, RedisStore, Store};
use elicit_runtime::server::{Answer, Engine, Flow, FlowError};
use elicit_runtime::state::KeyRing;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use serde_json::{Value, json};

use server::engine::Name;
use server::http::Client;

/// Bound on each test, so a hang fails instead of stalling the suite.
const TEST_BOUND: Duration = Duration::from_secs(60);

/// Book it?
#[derive(elicit_runtime::Elicit, Debug, Clone, PartialEq)]
struct Sure {
    /// Tick to go on
    sure: bool,
}

/// `count`: a name, a counted `once`, a confirmation.
async fn count(flow: Flow, runs: Arc<AtomicUsize>) -> Result<CallToolResult, FlowError> {
    let Answer::Accepted(who) = flow.form::<Name>("who").await? else { return Ok(text("no name".into())) };
    let n = flow
        .once("count", || async {
            let n = runs.fetch_add(1, Ordering::SeqCst) + 1;
            // A side effect that takes a moment, so concurrent copies of the round overlap it.
            tokio::time::sleep(Duration::from_millis(30)).await;
            Ok(n)
        })
        .await?;
    let _ = flow.form::<Sure>("sure").await?;
    Ok(text(format!("{} counted {n}", who.name)))
}

fn text(message: String) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(message)])
}

/// Serves one instance on loopback: `book_trip` of the travel example and `count`.
async fn instance(keys: KeyRing, store: Arc<dyn Store>, runs: Arc<AtomicUsize>) -> String {
    let engine = Engine::builder(travel::AUDIENCE, keys).store(store.clone()).build();
    let summaries = PaymentSummaries::new(store);
    let public_url: Arc<str> = Arc::from("https://pay.example");
    let schema = || {
        let mut schema = JsonObject::new();
        schema.insert("type".into(), json!("object"));
        Arc::new(schema)
    };
    let server = McpServer::builder(travel::AUDIENCE, "1.0.0", engine)
        .tool(Tool::new("book_trip", "book", schema()), move |flow| {
            travel::book_trip(flow, public_url.clone(), summaries.clone())
        })
        .tool(Tool::new("count", "count", schema()), move |flow| count(flow, runs.clone()))
        .build()
        .unwrap();
    server::serve(server).await
}

fn trip() -> Value {
    json!({"trip": {"action": "accept", "content": trip_answer("exactly-once", 1)}})
}

fn confirm(yes: bool) -> Value {
    json!({"confirm": {"action": "accept", "content": {"confirm": yes}}})
}

/// Two clients, one per instance (the same instance twice in the in-process setup).
struct Pair([Arc<Client>; 2]);

impl Pair {
    fn new(urls: &[String; 2]) -> Pair {
        Pair([Arc::new(Client::new(&urls[0])), Arc::new(Client::new(&urls[1]))])
    }

    fn at(&self, i: usize) -> Arc<Client> {
        self.0[i % 2].clone()
    }
}

/// `book_trip` through all its rounds, with every replay of acceptance a; returns the reference.
async fn book_with_replays(pair: &Pair, page_store: &Arc<dyn Store>) -> String {
    let first = pair.at(0).call("book_trip", json!({})).await.asked();
    assert_eq!(first.keys(), ["trip"]);
    let second = pair.at(1).retry("book_trip", json!({}), trip(), Some(first.state())).await.asked();
    assert_eq!(second.keys(), ["payment"]);
    let page = second.params("payment")["url"].as_str().unwrap().to_owned();
    let id = page.rsplit('/').next().unwrap();
    // The page records the approval (as the payment page would, through the same store).
    assert!(page_store.complete(id, json!({"approved": true}), None).await.unwrap());

    // The payment round: its response is dropped (we ignore the first reply) and the client retries
    // the same state, on the other instance: the confirmation step, not a new payment page.
    let consent = json!({"payment": {"action": "accept"}});
    let dropped = pair.at(0).retry("book_trip", json!({}), consent.clone(), Some(second.state())).await.asked();
    assert_eq!(dropped.keys(), ["confirm"]);
    let third = pair.at(1).retry("book_trip", json!({}), consent, Some(second.state())).await.asked();
    assert_eq!(third.keys(), ["confirm"], "the retried payment round asked {:?}", third.keys());

    let done = pair.at(0).retry("book_trip", json!({}), confirm(true), Some(third.state())).await.text();
    let reference = elicit_test_support::reference::booking_reference(&done)
        .unwrap_or_else(|| panic!("no reference in {done}"))
        .to_owned();
    assert!(reference.starts_with("BK-") && reference.len() == 13, "{reference}");

    // The last state, replayed twice in a row...
    for i in 0..2 {
        let again = pair.at(i + 1).retry("book_trip", json!({}), confirm(true), Some(third.state())).await.text();
        assert_eq!(again, done);
    }
    // ...and four times at once, over both instances.
    let copies: Vec<_> = (0..4)
        .map(|i| {
            let (client, state) = (pair.at(i), third.state().to_owned());
            tokio::spawn(async move { client.retry("book_trip", json!({}), confirm(true), Some(&state)).await.text() })
        })
        .collect();
    for copy in copies {
        assert_eq!(copy.await.unwrap(), done, "a concurrent replay got another result");
    }
    // Changed answers after the finish never contradict it.
    for (i, changed) in [confirm(false), json!({"confirm": {"action": "decline"}})].into_iter().enumerate() {
        let reply = pair.at(i).retry("book_trip", json!({}), changed, Some(third.state())).await;
        assert_eq!(reply.text(), done, "a changed answer after the finish: {}", reply.body);
    }
    // Nor does replaying the payment round or the trip round now.
    let consent = json!({"payment": {"action": "accept"}});
    assert_eq!(pair.at(1).retry("book_trip", json!({}), consent, Some(second.state())).await.text(), done);
    assert_eq!(pair.at(0).retry("book_trip", json!({}), trip(), Some(first.state())).await.text(), done);
    reference
}

/// The trip form's answer for the `n`th trip of the load generator: 0 is one traveller in economy
/// (€129.00), 71 nine in business with every extra (€8,982.00).
fn trip_of(n: usize) -> Value {
    json!({"trip": {"action": "accept", "content": trip_answer("price-fork", n)}})
}

/// The price fork, rounds alternating between the instances: the trip priced for one traveller,
/// then the first state replayed with nine in business. The quote belongs to the first answer: the
/// fork fails as a conflict, and the flow books what it priced.
async fn price_fork(pair: &Pair, page_store: &Arc<dyn Store>) {
    let first = pair.at(0).call("book_trip", json!({})).await.asked();
    let cheap = pair.at(1).retry("book_trip", json!({}), trip_of(0), Some(first.state())).await.asked();
    let shown = cheap.params("payment")["message"].as_str().unwrap().to_owned();
    assert!(shown.contains("€129.00"), "{shown}");
    let dear = pair.at(0).retry("book_trip", json!({}), trip_of(71), Some(first.state())).await;
    let (code, message, _) = dear.error();
    assert_eq!((code, message), (-32603, elicit_runtime::server::FLOW_CONFLICT), "the dear fork: {}", dear.body);

    let page = cheap.params("payment")["url"].as_str().unwrap().to_owned();
    let id = page.rsplit('/').next().unwrap();
    assert!(page_store.complete(id, json!({"approved": true}), None).await.unwrap());
    let consent = json!({"payment": {"action": "accept"}});
    let confirming = pair.at(1).retry("book_trip", json!({}), consent, Some(cheap.state())).await.asked();
    let done = pair.at(0).retry("book_trip", json!({}), confirm(true), Some(confirming.state())).await.text();
    assert!(done.contains("1 traveller(s), €129.00 paid"), "{done}");
    // The dear fork after the finish gets what was booked, never nine travellers at that price.
    let after = pair.at(1).retry("book_trip", json!({}), trip_of(71), Some(first.state())).await.text();
    assert_eq!(after, done);
}

/// The `count` flow with its rounds replayed in a row and at once: the counter stays at 1.
async fn count_with_replays(pair: &Pair, runs: &AtomicUsize) {
    let first = pair.at(0).call("count", json!({})).await.asked();
    let who = json!({"who": {"action": "accept", "content": {"name": "Ada"}}});
    let copies: Vec<_> = (0..4)
        .map(|i| {
            let (client, state, who) = (pair.at(i), first.state().to_owned(), who.clone());
            tokio::spawn(async move { client.retry("count", json!({}), who, Some(&state)).await.asked() })
        })
        .collect();
    let mut asked = Vec::new();
    for copy in copies {
        asked.push(copy.await.unwrap());
    }
    assert!(asked.iter().all(|a| a.keys() == ["sure"]));
    let again = pair.at(1).retry("count", json!({}), who, Some(first.state())).await.asked();
    let sure = json!({"sure": {"action": "accept", "content": {"sure": true}}});
    let done = pair.at(0).retry("count", json!({}), sure.clone(), Some(again.state())).await.text();
    assert_eq!(done, "Ada counted 1");
    for (i, round) in asked.iter().enumerate() {
        assert_eq!(pair.at(i).retry("count", json!({}), sure.clone(), Some(round.state())).await.text(), done);
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the once computation ran more than once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_instance_in_process_store() {
    tokio::time::timeout(TEST_BOUND, async {
        let store: Arc<dyn Store> = Arc::new(InProcessStore::new());
        let runs = Arc::new(AtomicUsize::new(0));
        let url = instance(KeyRing::generate(), store.clone(), runs.clone()).await;
        let pair = Pair::new(&[url.clone(), url]);
        let one = book_with_replays(&pair, &store).await;
        // Unique per booking: the same trip booked again gets another reference.
        let two = book_with_replays(&pair, &store).await;
        assert_ne!(one, two, "two bookings of the same trip share a reference");
        count_with_replays(&pair, &runs).await;
        price_fork(&pair, &store).await;
    })
    .await
    .expect("the test finished within its bound");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_sharing_redis() {
    let Some(redis) = Redis::start_or_skip("two_instances_sharing_redis", None) else { return };
    tokio::time::timeout(TEST_BOUND, async {
        let keys = KeyRing::generate();
        let runs = Arc::new(AtomicUsize::new(0));
        let connect = || async {
            Arc::new(RedisStore::builder(redis.url()).key_prefix("once").connect().await.unwrap()) as Arc<dyn Store>
        };
        let (a, b) = (connect().await, connect().await);
        let urls = [instance(keys.clone(), a.clone(), runs.clone()).await, instance(keys, b, runs.clone()).await];
        let pair = Pair::new(&urls);
        let one = book_with_replays(&pair, &a).await;
        let two = book_with_replays(&pair, &a).await;
        assert_ne!(one, two, "two bookings of the same trip share a reference");
        count_with_replays(&pair, &runs).await;
        price_fork(&pair, &a).await;
        // Every key the store wrote carries a TTL.
        let keys = redis.command("KEYS once:*");
        assert!(keys.iter().any(|k| k.starts_with("once:flow:")), "{keys:?}");
        for key in keys {
            let ttl = redis.command(&format!("PTTL {key}"));
            let ttl: i64 = ttl[0].parse().unwrap();
            assert!(ttl > 0, "{key} has no TTL ({ttl})");
        }
    })
    .await
    .expect("the test finished within its bound");
}
