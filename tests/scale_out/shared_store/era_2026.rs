//! Scale-out: two `travel-server` processes sharing `ELICIT_STATE_KEYS` and one Redis
//! (`--store redis://…`) serve each other's rounds, payment step included.
//!
//! Each test starts its own `redis-server` on a free loopback port (no persistence) and its own
//! servers, and stops them when it ends. Without `redis-server` installed the tests are skipped
//! with a message — except under `CI`, where its absence fails them (scripts/test.sh installs it).
#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use elicit_examples::loadgen::{self, LoadConfig, McpClient, Round, requested_url, trip_answer};
use elicit_runtime::server::store::{RedisStore, UrlCompletions, UrlStatus};
use elicit_test_support::process;
use elicit_test_support::redis::{self, Redis};
use elicit_test_support::server::process::travel_server_bin;
use elicit_test_support::wait;
use serde_json::{Value, json};

/// One fixed sealing key shared by both instances (base64 of 32 bytes).
const STATE_KEYS: &str = "c2NhbGUtb3V0LXRlc3Qta2V5LTMyLWJ5dGVzLWxvbmc=";
/// Bound on each test, so a hang fails instead of stalling the suite.
const TEST_BOUND: Duration = Duration::from_secs(45);
/// How long a wait for the store (a wake-up, an expiry) may take before the test fails.
const WOKEN: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------------------------
// Processes

/// A `travel-server --store redis://…` on a free loopback port; killed when dropped.
struct Travel {
    server: Option<process::Listening>,
    base: String,
}

impl Travel {
    fn start(redis: &Redis) -> Travel {
        let mut command = Command::new(travel_server_bin());
        command
            .args(["--listen", "127.0.0.1:0", "--store", &redis.url()])
            .env("ELICIT_STATE_KEYS", STATE_KEYS)
            .env_remove("RUST_LOG");
        let server = process::Listening::start(command);
        let base = server.base_url();
        Travel { server: Some(server), base }
    }

    fn mcp(&self) -> String {
        loadgen::mcp_endpoint(&self.base)
    }

    fn kill(&mut self) {
        self.server.take();
    }
}

async fn bounded<F: Future<Output = ()>>(test: F) {
    tokio::time::timeout(TEST_BOUND, test).await.expect("the test finished within its bound");
}

// ---------------------------------------------------------------------------------------------
// Flow steps

fn asked(reply: Value, key: &str) -> (serde_json::Map<String, Value>, Option<String>) {
    Round::from_reply(&reply).expect("a JSON-RPC response").expect_asked(key).unwrap_or_else(|e| panic!("{e}"))
}

fn complete_text(reply: Value) -> String {
    match Round::from_reply(&reply).expect("a JSON-RPC response") {
        Round::Complete { text, is_error: false } => text,
        other => panic!("expected a complete result, got {other:?}"),
    }
}

fn store_error(reply: Value) -> String {
    match Round::from_reply(&reply).expect("a JSON-RPC response") {
        Round::Error { code, message } => {
            assert_eq!(code, -32603, "{message}");
            assert!(message.contains("completion store"), "the error does not name the completion store: {message}");
            message
        }
        other => panic!("expected a JSON-RPC error naming the completion store, got {other:?}"),
    }
}

/// Runs `book_trip` up to its payment step: returns the trip answer, the state and the page URL.
async fn book_until_payment(
    client: &McpClient,
    first: &str,
    second: &str,
    n: usize,
) -> (serde_json::Map<String, Value>, Option<String>, String) {
    let (_, state) = asked(client.call_tool(first, "book_trip", None, None).await.expect("call"), "trip");
    let content = trip_answer("scale-out", n);
    let answers = json!({"trip": {"action": "accept", "content": content}});
    let (requests, state) = asked(
        client.call_tool(second, "book_trip", Some(answers), state.as_deref()).await.expect("trip form"),
        "payment",
    );
    let page = requested_url(&requests, "payment").expect("a payment URL");
    (content, state, page)
}

/// The consent retry, expected to move on to the confirmation; then the confirmation.
async fn pay_and_confirm(client: &McpClient, at: &str, state: Option<String>, email: &str) {
    let consent = json!({"payment": {"action": "accept"}});
    let (_, state) =
        asked(client.call_tool(at, "book_trip", Some(consent), state.as_deref()).await.expect("consent"), "confirm");
    let confirm = json!({"confirm": {"action": "accept", "content": {"confirm": true}}});
    let text =
        complete_text(client.call_tool(at, "book_trip", Some(confirm), state.as_deref()).await.expect("confirm"));
    assert!(text.starts_with("Booked!") && text.contains(email), "{text}");
}

fn rating_answers() -> Value {
    json!({
        "rating": {"action": "accept", "content": {"stars": 4}},
        "contact": {"action": "accept", "content": {"email": "rater@example.com"}},
    })
}

async fn rate(client: &McpClient, first: &str, second: &str) -> String {
    let (requests, state) = asked(client.call_tool(first, "rate_trip", None, None).await.expect("rate_trip"), "rating");
    assert!(requests.contains_key("contact"), "{requests:?}");
    complete_text(
        client
            .call_tool(second, "rate_trip", Some(rating_answers()), state.as_deref())
            .await
            .expect("rate_trip answers"),
    )
}

// ---------------------------------------------------------------------------------------------
// Tests

/// The store itself, through two connections as two instances would hold: pending until
/// completed, completed once, consumed once, expiring, and a waiter on one instance woken by a
/// completion on the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_store_keeps_the_completion_contract_across_instances() {
    if !redis::installed("redis_store_keeps_the_completion_contract_across_instances") {
        return;
    }
    let redis = Redis::start(None);
    bounded(async {
        let a = Arc::new(RedisStore::builder(redis.url()).key_prefix("contract").connect().await.expect("connect a"));
        let b = Arc::new(RedisStore::builder(redis.url()).key_prefix("contract").connect().await.expect("connect b"));

        a.register("step-1", Duration::from_secs(60), None).await.unwrap();
        assert_eq!(b.status("step-1").await.unwrap(), UrlStatus::Pending);
        assert_eq!(b.take("step-1", Duration::from_millis(10)).await.unwrap(), UrlStatus::Pending);

        // A retry waiting on b is answered when the page completes the step on a: the take would
        // wait an hour on its own, so only the completion's wake-up ends it within the bound.
        let mut waiter = b.take("step-1", Duration::from_secs(3600));
        wait::first_look(&mut waiter).await;
        assert!(a.complete("step-1", json!({"approved": true}), None).await.unwrap());
        assert!(!a.complete("step-1", json!({"approved": false}), None).await.unwrap(), "completed twice");
        let taken = wait::finished(WOKEN, "the waiting take to be woken", waiter).await;
        assert_eq!(taken.unwrap(), UrlStatus::Completed(json!({"approved": true})));
        // Consumed: a replayed state does not get the approval again, on either instance.
        assert_eq!(a.take("step-1", Duration::from_millis(10)).await.unwrap(), UrlStatus::Unknown);
        assert_eq!(b.status("step-1").await.unwrap(), UrlStatus::Unknown);

        // Never minted: cannot be completed.
        assert!(!b.complete("never-minted", json!(null), None).await.unwrap());

        // A step minted for a principal completes only for that principal, on any instance.
        a.register("owned", Duration::from_secs(60), Some("alice")).await.unwrap();
        assert!(!b.complete("owned", json!(true), Some("bob")).await.unwrap(), "completed by another user");
        assert!(!b.complete("owned", json!(true), None).await.unwrap(), "completed anonymously");
        assert_eq!(a.status("owned").await.unwrap(), UrlStatus::Pending);
        assert!(b.complete("owned", json!(true), Some("alice")).await.unwrap());
        assert_eq!(a.take("owned", Duration::ZERO).await.unwrap(), UrlStatus::Completed(json!(true)));
        assert_eq!(a.status("never-minted").await.unwrap(), UrlStatus::Unknown);

        // Expired: gone, and cannot be completed late.
        a.register("step-2", Duration::from_millis(50), None).await.unwrap();
        wait::until_async(WOKEN, "the 50 ms step to expire", || async {
            b.status("step-2").await.unwrap() == UrlStatus::Unknown
        })
        .await;
        assert!(!b.complete("step-2", json!(null), None).await.unwrap());

        // Many retries racing for one completion, waiting on both instances: exactly one wins.
        a.register("step-3", Duration::from_secs(60), None).await.unwrap();
        let mut racers: Vec<_> =
            (0..8).map(|i| if i % 2 == 0 { a.take("step-3", WOKEN) } else { b.take("step-3", WOKEN) }).collect();
        for racer in &mut racers {
            wait::first_look(racer).await;
        }
        assert!(b.complete("step-3", json!({"approved": true}), None).await.unwrap());
        let mut winners = 0;
        for racer in racers {
            match racer.await.unwrap() {
                UrlStatus::Completed(_) => winners += 1,
                UrlStatus::Unknown => {}
                UrlStatus::Pending => panic!("a racer timed out instead of being woken"),
            }
        }
        assert_eq!(winners, 1, "a completion was taken {winners} times");

        // Another prefix is another deployment: it does not see these steps.
        let other = RedisStore::builder(redis.url()).key_prefix("other").connect().await.expect("connect other");
        a.register("step-4", Duration::from_secs(60), None).await.unwrap();
        assert_eq!(other.status("step-4").await.unwrap(), UrlStatus::Unknown);
    })
    .await;
}

/// Concurrent flows with unique answers, every request on the other instance
/// than the one before, all booked with their own answers; the payment retries are woken by the
/// page, not by the engine's 2 s wait running out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_over_two_instances_loses_and_crosses_no_answers() {
    if !redis::installed("load_over_two_instances_loses_and_crosses_no_answers") {
        return;
    }
    let redis = Redis::start(None);
    let (one, two) = (Travel::start(&redis), Travel::start(&redis));
    bounded(async {
        let config = LoadConfig::new(vec![one.base.clone(), two.base.clone()], 40, 10);
        let report = loadgen::run(&config).await;
        eprintln!("{report}");
        assert_eq!(report.booked, 40, "{report}");
        assert_eq!(report.errors, 0, "{report}");
        assert_eq!(report.lost_or_crossed, 0, "{report}");
        let payment = report.steps.iter().find(|s| s.step == "payment").expect("payment figures");
        assert!(payment.p50 < Duration::from_secs(1), "payment retries were not woken by the page: {report}");
    })
    .await;
}

/// The instance that started a flow dies between rounds; the other one serves
/// the payment page and finishes the flow from the sealed state and the shared store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flow_outlives_the_instance_that_started_it() {
    if !redis::installed("a_flow_outlives_the_instance_that_started_it") {
        return;
    }
    let redis = Redis::start(None);
    let (mut one, two) = (Travel::start(&redis), Travel::start(&redis));
    bounded(async {
        let client = McpClient::default();
        let (content, state, page) = book_until_payment(&client, &one.mcp(), &one.mcp(), 1).await;
        assert!(page.starts_with(&one.base), "the page is on the instance that minted it: {page}");
        one.kill();
        // Behind a load balancer the page's host reaches whichever instance is alive.
        let page = page.replacen(&one.base, &two.base, 1);
        client.approve_payment(&page).await.expect("the surviving instance records the payment");
        let email = content["email"].as_str().expect("an e-mail");
        pay_and_confirm(&client, &two.mcp(), state, email).await;
    })
    .await;
}

/// With Redis gone, URL asks fail with a JSON-RPC error naming the
/// completion store, quickly, while form-only flows go on; once Redis is back on the same port,
/// URL flows work again — an interrupted flow gets a fresh payment step (its record was lost).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_outage_fails_url_asks_clearly_and_recovery_restores_them() {
    if !redis::installed("redis_outage_fails_url_asks_clearly_and_recovery_restores_them") {
        return;
    }
    let mut redis = Redis::start(None);
    let (one, two) = (Travel::start(&redis), Travel::start(&redis));
    bounded(async {
        let client = McpClient::default();
        let (interrupted, interrupted_state, old_page) = book_until_payment(&client, &one.mcp(), &two.mcp(), 2).await;

        redis.stop();

        // (c) A round that carries a state must read the flow's ledger: with the store down it fails
        // clearly, even in a form-only flow (the check is never skipped); a first round still asks.
        let (_, state) =
            asked(client.call_tool(&one.mcp(), "rate_trip", None, None).await.expect("rate_trip"), "rating");
        store_error(
            client.call_tool(&two.mcp(), "rate_trip", Some(rating_answers()), state.as_deref()).await.expect("rating"),
        );

        // (c) A new URL ask fails, clearly; so does the interrupted flow's consent.
        let (_, state) = asked(client.call_tool(&one.mcp(), "book_trip", None, None).await.expect("call"), "trip");
        let answers = json!({"trip": {"action": "accept", "content": trip_answer("scale-out", 3)}});
        let message = store_error(
            client.call_tool(&two.mcp(), "book_trip", Some(answers), state.as_deref()).await.expect("trip form"),
        );
        // Where the store lives is for the server's log, not the client.
        assert!(!message.contains(&format!("127.0.0.1:{}", redis.port)), "{message}");
        let consent = json!({"payment": {"action": "accept"}});
        store_error(
            client
                .call_tool(&one.mcp(), "book_trip", Some(consent.clone()), interrupted_state.as_deref())
                .await
                .expect("consent"),
        );

        // (d) Redis is back (empty: no persistence): form and URL flows work again on both instances.
        redis.restart();
        let text = rate(&client, &one.mcp(), &two.mcp()).await;
        assert!(text.contains("4 star(s)") && text.contains("rater@example.com"), "{text}");
        let (content, state, page) = book_until_payment(&client, &two.mcp(), &one.mcp(), 4).await;
        client.approve_payment(&page).await.expect("the page records the payment");
        pay_and_confirm(&client, &two.mcp(), state, content["email"].as_str().expect("an e-mail")).await;

        // The interrupted flow's step was lost with Redis: its retry registers the step again (under
        // the same id: a step's id is derived from its flow's, so the page the user has still works).
        let (requests, state) = asked(
            client
                .call_tool(&two.mcp(), "book_trip", Some(consent), interrupted_state.as_deref())
                .await
                .expect("consent"),
            "payment",
        );
        let new_page = requested_url(&requests, "payment").expect("a payment URL");
        assert_eq!(new_page, old_page, "the step keeps its id");
        client.approve_payment(&new_page).await.expect("the fresh page records the payment");
        pay_and_confirm(&client, &one.mcp(), state, interrupted["email"].as_str().expect("an e-mail")).await;

        // And under a little concurrency, across both instances.
        let report = loadgen::run(&LoadConfig::new(vec![one.base.clone(), two.base.clone()], 8, 4)).await;
        assert_eq!((report.booked, report.errors), (8, 0), "{report}");
    })
    .await;
}
