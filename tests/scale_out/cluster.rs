//! Past one Redis: `RedisStore` on a Redis Cluster (three masters, three replicas, every node a
//! real `redis-server` on loopback, started by the test support): every key a script touches on
//! one slot, the caps split over the shards, two `travel-server` processes on
//! `--store redis+cluster://…` serving each other's rounds and payment page, and a master killed
//! mid-load with its replica promoted while the ledger's writes wait for a replica (`WAIT`).
//! Then one Redis with the persistence the store's docs ask for (the append-only file, synced
//! at every write): what it acknowledged survives Redis' own crash.
//!
//! Without `redis-server` the tests skip with a message, except under `CI`.

use std::collections::{BTreeMap, HashMap};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use elicit_examples::loadgen::{self, LoadConfig, McpClient, Round, requested_url, trip_answer};
use elicit_runtime::rmcp::McpServer;
use elicit_runtime::server::store::{
    Claim, ClaimToken, FlowLedger, FlowOwner, RecordKind, RedisStore, Slot, Store, StoreError, TaskLimits, TaskRecord,
    TaskRecords, UrlCompletions, UrlStatus,
};
use elicit_runtime::server::task::TaskConfig;
use elicit_runtime::server::{Answer, Engine, Flow, FlowError};
use elicit_runtime::state::KeyRing;
use elicit_test_support::process;
use elicit_test_support::redis::{Cluster, Redis};
use elicit_test_support::server::engine::Name;
use elicit_test_support::server::http::{Client, Reply};
use elicit_test_support::server::process::travel_server_bin;
use elicit_test_support::{server, wait};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use serde_json::{Value, json};

/// Whom the flow records count against where a test is not about the quota.
const ANON: FlowOwner = FlowOwner::Anonymous;

/// Bound on each test (a cluster takes a few seconds to form), so a hang fails the suite.
const TEST_BOUND: Duration = Duration::from_secs(120);
const LONG: Duration = Duration::from_secs(60);

async fn bounded<F: Future<Output = ()>>(test: F) {
    tokio::time::timeout(TEST_BOUND, test).await.expect("the test finished within its bound");
}

/// Every key of each prefix-`prefix` record (a flow's hash, a URL step, a task) and the sets its
/// scripts count it in are on one slot, by `CLUSTER KEYSLOT`; and the records spread over
/// several slots.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_key_a_script_touches_lands_on_one_slot() {
    let Some(cluster) = Cluster::start_or_skip("every_key_a_script_touches_lands_on_one_slot") else { return };
    bounded(async {
        let store = RedisStore::builder(cluster.url()).key_prefix("slots").connect().await.unwrap();
        let token = ClaimToken::mint();
        let mut config = TaskConfig::default();
        config.ttl = LONG;
        let limits = TaskLimits { max_live: 100, max_live_per_principal: 100, now_ms: 0 };
        let alice = FlowOwner::Principal("alice".into());
        for i in 0..12 {
            let (flow, step, task) = (format!("flow-{i}"), format!("step-{i}"), format!("task-{i}"));
            let slot = Slot::Once("charge".into());
            assert_eq!(store.claim(&flow, &alice, &slot, &token, LONG, LONG).await.unwrap(), Claim::Run);
            store.record(&flow, &slot, &token, json!(i), LONG).await.unwrap();
            store.register(&step, LONG, Some("alice")).await.unwrap();
            assert!(store.complete(&step, json!({"approved": true}), Some("alice")).await.unwrap());
            let record = TaskRecord::working(&task, Some("alice"), 0, &config);
            store.create(&record, limits).await.unwrap();
        }
        // Each record key, with the slot of every key sharing its tag.
        let keys = cluster.keys("*slots*");
        let slot_of: HashMap<&str, u16> = keys.iter().map(|k| (k.as_str(), cluster.keyslot(k))).collect();
        let tag = |key: &str| key.split_once('}').map(|(tag, _)| tag.to_owned()).unwrap_or_default();
        let companions = [(":flow:", ":live:flow"), (":url:", ":live:url"), (":task:", ":live:task")];
        let mut records = 0;
        for key in &keys {
            let kind = key.split_once('}').map_or("", |(_, rest)| rest);
            let Some((_, set)) = companions.iter().find(|(record, _)| kind.starts_with(record)) else { continue };
            records += 1;
            let (tag, slot) = (tag(key), slot_of[key.as_str()]);
            assert!(tag.starts_with("{slots#"), "{key} carries no hash tag");
            // The set counting it exists, and every key of its tag (owner sets included) is on its slot.
            assert!(keys.contains(&format!("{tag}}}{set}")), "{key}: no {set} beside it in {keys:?}");
            for other in keys.iter().filter(|k| k.starts_with(&format!("{tag}}}"))) {
                assert_eq!(slot_of[other.as_str()], slot, "{other} is not on the slot of {key}");
            }
        }
        assert_eq!(records, 36, "{keys:?}");
        let slots: std::collections::BTreeSet<u16> = slot_of.values().copied().collect();
        assert!(slots.len() > 3, "the records did not spread: {slots:?}");
    })
    .await;
}

/// On a cluster each cap is split over the shards (⌈cap / shards⌉ each): with 4 shards and a cap
/// of 8 flows, exactly 8 are taken in all however many ids try, and a refusal names the cap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_caps_hold_split_over_the_shards() {
    let Some(cluster) = Cluster::start_or_skip("the_caps_hold_split_over_the_shards") else { return };
    bounded(async {
        let connect = || async {
            let builder = RedisStore::builder(cluster.url()).key_prefix("caps").cluster_shards(4);
            builder.max_flow_records(8).max_url_records(8).connect().await.unwrap()
        };
        let (a, b) = (connect().await, connect().await);
        let token = ClaimToken::mint();
        let (mut flows, mut steps) = (0, 0);
        for i in 0..200 {
            let on = if i % 2 == 0 { &a } else { &b };
            match on.claim(&format!("f{i}"), &ANON, &Slot::Once("x".into()), &token, LONG, LONG).await {
                Ok(Claim::Run) => flows += 1,
                Err(StoreError::Full { kind: RecordKind::Flow, cap: 8 }) => {}
                other => panic!("claim {i}: {other:?}"),
            }
            match on.register(&format!("s{i}"), LONG, None).await {
                Ok(()) => steps += 1,
                Err(StoreError::Full { kind: RecordKind::Url, cap: 8 }) => {}
                other => panic!("register {i}: {other:?}"),
            }
        }
        assert_eq!((flows, steps), (8, 8), "the split caps let {flows} flows and {steps} steps in");
        // A flow that has its record is never refused.
        assert_eq!(a.claim("f0", &ANON, &Slot::Once("y".into()), &token, LONG, LONG).await.unwrap(), Claim::Run);

        // The quota of flow records per owner is split the same way: 8 over 4 shards, 8 in all.
        let connect = || async {
            let builder = RedisStore::builder(cluster.url()).key_prefix("quota").cluster_shards(4);
            builder.max_flow_records_per_principal(8).connect().await.unwrap()
        };
        let (a, b) = (connect().await, connect().await);
        let (mallory, bob) = (FlowOwner::Principal("mallory".into()), FlowOwner::Principal("bob".into()));
        let mut held = 0;
        for i in 0..200 {
            let on = if i % 2 == 0 { &a } else { &b };
            match on.claim(&format!("m{i}"), &mallory, &Slot::Once("x".into()), &token, LONG, LONG).await {
                Ok(Claim::Run) => held += 1,
                Err(StoreError::Quota { kind: RecordKind::Flow, cap: 8 }) => {}
                other => panic!("mallory's claim {i}: {other:?}"),
            }
        }
        assert_eq!(held, 8, "the split quota let mallory hold {held} flows");
        // Every shard holds mallory's share; another owner is still served (two flows: within
        // his share of 2 on whichever shards they land).
        for i in 0..2 {
            let claimed = b.claim(&format!("b{i}"), &bob, &Slot::Once("x".into()), &token, LONG, LONG).await;
            assert_eq!(claimed.unwrap(), Claim::Run, "bob's flow {i}, mallory at her quota");
        }
    })
    .await;
}

/// A `travel-server --store redis+cluster://…` on a free loopback port; killed when dropped.
struct Travel {
    _server: process::Listening,
    base: String,
}

impl Travel {
    fn start(cluster: &Cluster, keys: &str) -> Travel {
        let mut command = Command::new(travel_server_bin());
        command
            .args(["--listen", "127.0.0.1:0", "--store", &cluster.url()])
            .env("ELICIT_STATE_KEYS", keys)
            .env_remove("RUST_LOG");
        let server = process::Listening::start(command);
        let base = server.base_url();
        Travel { _server: server, base }
    }

    fn mcp(&self) -> String {
        loadgen::mcp_endpoint(&self.base)
    }
}

fn asked(reply: Value, key: &str) -> (serde_json::Map<String, Value>, Option<String>) {
    Round::from_reply(&reply).expect("a JSON-RPC response").expect_asked(key).unwrap_or_else(|e| panic!("{e}"))
}

/// Two instances on one cluster: a booking whose rounds alternate between them, its payment
/// page submitted to the instance that did not mint it; then load over both, every request on
/// the other instance than the one before, no answer lost or crossed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_on_a_cluster_serve_each_others_rounds_and_pages() {
    let Some(cluster) = Cluster::start_or_skip("two_instances_on_a_cluster_serve_each_others_rounds_and_pages") else {
        return;
    };
    let keys = server::key_b64();
    let (one, two) = (Travel::start(&cluster, &keys), Travel::start(&cluster, &keys));
    bounded(async {
        let client = McpClient::default();
        let (_, state) = asked(client.call_tool(&one.mcp(), "book_trip", None, None).await.unwrap(), "trip");
        let content = trip_answer("cluster", 1);
        let answers = json!({"trip": {"action": "accept", "content": content}});
        let (requests, state) =
            asked(client.call_tool(&two.mcp(), "book_trip", Some(answers), state.as_deref()).await.unwrap(), "payment");
        let page = requested_url(&requests, "payment").expect("a payment URL");
        assert!(page.starts_with(&two.base), "{page}");
        // Behind a load balancer the page's host reaches either instance.
        client.approve_payment(&page.replacen(&two.base, &one.base, 1)).await.unwrap();
        let consent = json!({"payment": {"action": "accept"}});
        let (_, state) =
            asked(client.call_tool(&one.mcp(), "book_trip", Some(consent), state.as_deref()).await.unwrap(), "confirm");
        let confirm = json!({"confirm": {"action": "accept", "content": {"confirm": true}}});
        let done = client.call_tool(&two.mcp(), "book_trip", Some(confirm), state.as_deref()).await.unwrap();
        match Round::from_reply(&done).expect("a JSON-RPC response") {
            Round::Complete { text, is_error: false } => {
                assert!(text.starts_with("Booked!") && text.contains(content["email"].as_str().unwrap()), "{text}")
            }
            other => panic!("expected the booking, got {other:?}"),
        }

        let report = loadgen::run(&LoadConfig::new(vec![one.base.clone(), two.base.clone()], 24, 6)).await;
        eprintln!("{report}");
        assert_eq!((report.booked, report.errors, report.lost_or_crossed), (24, 0, 0), "{report}");
    })
    .await;
}

/// The `charge` tool's effects, by name: what a second effect would show.
type Charges = Arc<Mutex<BTreeMap<String, usize>>>;

/// `charge`: a name, the charge (`once`, counted by name), a confirmation.
async fn charge(flow: Flow, charges: Charges, ran: Arc<AtomicUsize>) -> Result<CallToolResult, FlowError> {
    let Answer::Accepted(who) = flow.form::<Name>("who").await? else { return Ok(text("no name".into())) };
    let name = who.name.clone();
    let n = flow
        .once("charge", || async {
            ran.fetch_add(1, Ordering::SeqCst);
            let mut charges = charges.lock().unwrap();
            let n = charges.entry(name).or_default();
            *n += 1;
            Ok(*n)
        })
        .await?;
    let _ = flow.form::<Sure>("sure").await?;
    Ok(text(format!("{} charged {n}", who.name)))
}

/// Go on?
#[derive(elicit_runtime::Elicit, Debug, Clone, PartialEq)]
struct Sure {
    /// Tick to go on
    sure: bool,
}

fn text(message: String) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(message)])
}

async fn instance(keys: KeyRing, store: Arc<dyn Store>, charges: Charges, ran: Arc<AtomicUsize>) -> String {
    let engine = Engine::builder("cluster-failover", keys).store(store).build();
    let mut schema = JsonObject::new();
    schema.insert("type".into(), json!("object"));
    let server = McpServer::builder("cluster-failover", "1.0.0", engine)
        .tool(Tool::new("charge", "charge", Arc::new(schema)), move |flow| charge(flow, charges.clone(), ran.clone()))
        .build()
        .unwrap();
    server::serve(server).await
}

/// How one flow through a failover ended.
#[derive(Debug)]
enum Ended {
    /// Its text, and the state its last round answered (to replay).
    Done(String, String),
    /// The store's clear error, at some round.
    StoreError(String),
}

/// A reply that is the store's clear error: JSON-RPC -32603 naming the store.
fn store_error(reply: &Reply) -> Option<String> {
    reply.body.get("error")?;
    let (code, message, _) = reply.error();
    assert_eq!(code, -32603, "{}", reply.body);
    assert!(message.contains("completion store"), "an error that does not name the store: {}", reply.body);
    Some(message.to_owned())
}

/// One `charge` flow for `name`, its rounds alternating over `clients`.
async fn charge_flow(clients: [Arc<Client>; 2], name: String) -> Ended {
    let first = clients[0].call("charge", json!({})).await;
    if let Some(error) = store_error(&first) {
        return Ended::StoreError(error);
    }
    let who = json!({"who": {"action": "accept", "content": {"name": name}}});
    let second = clients[1].retry("charge", json!({}), who, Some(first.asked().state())).await;
    if let Some(error) = store_error(&second) {
        return Ended::StoreError(error);
    }
    let second = second.asked().state().to_owned();
    let sure = json!({"sure": {"action": "accept", "content": {"sure": true}}});
    let third = clients[0].retry("charge", json!({}), sure, Some(&second)).await;
    if let Some(error) = store_error(&third) {
        return Ended::StoreError(error);
    }
    Ended::Done(third.text(), second)
}

/// A master killed while flows run on two instances: its replica is promoted (bounded), flows
/// in flight finish with one outcome or fail with the store's clear error (never a hang), the
/// cluster serves new flows again, and replaying every finished flow's rounds on both instances
/// gives the same outcome without charging again: with the ledger's writes waiting for a
/// replica, what a flow recorded survived its master.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_killed_mid_load_fails_over_without_a_second_effect() {
    let test = "a_master_killed_mid_load_fails_over_without_a_second_effect";
    let Some(mut cluster) = Cluster::start_or_skip(test) else { return };
    let charges: Charges = Arc::default();
    let ran = Arc::new(AtomicUsize::new(0));
    let keys = KeyRing::generate();
    let connect = || async {
        let store = RedisStore::builder(cluster.url())
            .key_prefix("failover")
            .command_timeout(Duration::from_secs(3))
            .wait_for_replicas(1, Duration::from_secs(1))
            .connect()
            .await
            .unwrap();
        Arc::new(store) as Arc<dyn Store>
    };
    let urls = [
        instance(keys.clone(), connect().await, charges.clone(), ran.clone()).await,
        instance(keys, connect().await, charges.clone(), ran.clone()).await,
    ];
    let clients = [Arc::new(Client::new(&urls[0])), Arc::new(Client::new(&urls[1]))];
    let flows = 48;
    let load = {
        let clients = clients.clone();
        tokio::spawn(async move {
            let mut ended = Vec::new();
            for batch in 0..flows / 4 {
                let runs: Vec<_> = (0..4)
                    .map(|i| {
                        let (clients, name) = (clients.clone(), format!("person-{batch}-{i}"));
                        tokio::spawn(async move { (name.clone(), charge_flow(clients, name).await) })
                    })
                    .collect();
                for run in runs {
                    ended.push(run.await.unwrap());
                }
            }
            ended
        })
    };
    // Mid-load: a dozen charges made, then the master of slot 0 goes.
    wait::until_async(Duration::from_secs(60), "a dozen flows to charge", || async {
        ran.load(Ordering::SeqCst) >= 12
    })
    .await;
    let master = cluster.master_of(0);
    // Promoted, the replica has no replica of its own: writes there wait in vain (a clear error)
    // until the old master comes back, as its replica.
    let promoted = tokio::task::spawn_blocking(move || {
        let promoted = cluster.fail_over(master);
        cluster.rejoin(master);
        (cluster, promoted)
    });
    let (cluster, promoted) = wait::finished(TEST_BOUND, "the failover", promoted).await.unwrap();
    assert_ne!(promoted, master);
    let ended = wait::finished(TEST_BOUND, "the flows in flight to end", load).await.unwrap();

    let errors: Vec<&str> =
        ended.iter().filter_map(|(_, e)| if let Ended::StoreError(m) = e { Some(m.as_str()) } else { None }).collect();
    let finished = ended.len() - errors.len();
    eprintln!(
        "{} flows: {finished} finished, {} failed with the store's error {:?}",
        ended.len(),
        errors.len(),
        errors.first()
    );
    // After the failover the cluster serves: a new flow finishes.
    let after = charge_flow(clients.clone(), "after-failover".into()).await;
    assert!(matches!(&after, Ended::Done(text, ..) if text == "after-failover charged 1"), "{after:?}");

    // Every finished flow: one outcome, one charge, also when its last rounds are replayed.
    let sure = json!({"sure": {"action": "accept", "content": {"sure": true}}});
    for (name, end) in &ended {
        let Ended::Done(done, second) = end else { continue };
        assert_eq!(done, &format!("{name} charged 1"));
        for client in &clients {
            let again = client.retry("charge", json!({}), sure.clone(), Some(second)).await;
            assert_eq!(&again.text(), done, "a replay after the failover gave another outcome");
        }
    }
    let charges = charges.lock().unwrap();
    for (name, end) in ended.iter().chain([("after-failover".to_owned(), after)].iter()) {
        let n = charges.get(name).copied().unwrap_or(0);
        match end {
            Ended::Done(..) => assert_eq!(n, 1, "{name} was charged {n} times"),
            Ended::StoreError(_) => assert!(n <= 1, "{name} was charged {n} times"),
        }
    }
    drop(cluster);
}

/// One Redis with the documented persistence (`appendonly yes`, `appendfsync always`): killed
/// without a shutdown and started again on the same files, it still holds a recorded ledger slot,
/// a finished flow and a completed step, so no effect runs twice and no approval is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_redis_keeps_what_it_acknowledged_through_its_own_crash() {
    if !elicit_test_support::redis::installed("a_durable_redis_keeps_what_it_acknowledged_through_its_own_crash") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut redis = Redis::start_durable(None, dir.path());
    bounded(async {
        let store = RedisStore::builder(redis.url()).key_prefix("durable").connect().await.unwrap();
        let token = ClaimToken::mint();
        let slot = Slot::Once("charge".into());
        assert_eq!(store.claim("f", &ANON, &slot, &token, LONG, LONG).await.unwrap(), Claim::Run);
        store.record("f", &slot, &token, json!({"ref": "A"}), LONG).await.unwrap();
        let answers = serde_json::value::to_raw_value(&json!({"ok": true})).unwrap();
        store.finish("g", &ANON, &answers, &[], LONG).await.unwrap();
        store.register("paid", LONG, None).await.unwrap();
        assert!(store.complete("paid", json!({"approved": true}), None).await.unwrap());

        redis.stop();
        redis.restart();
        let fresh = ClaimToken::mint();
        wait::until_async(LONG, "the store to answer again", || async { store.status("paid").await.is_ok() }).await;
        assert_eq!(store.claim("f", &ANON, &slot, &fresh, LONG, LONG).await.unwrap(), Claim::Done(json!({"ref": "A"})));
        assert_eq!(store.finished("g").await.unwrap(), Some(json!({"ok": true})));
        assert_eq!(store.take("paid", Duration::ZERO).await.unwrap(), UrlStatus::Completed(json!({"approved": true})));
    })
    .await;
}

/// With `wait_for_replicas`, a write no replica acknowledged in time is the store's clear error
/// (here one Redis without replicas); without it the same write goes through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_no_replica_acknowledged_is_a_clear_store_error() {
    let Some(redis) = Redis::start_or_skip("a_write_no_replica_acknowledged_is_a_clear_store_error", None) else {
        return;
    };
    bounded(async {
        let waiting = RedisStore::builder(redis.url()).wait_for_replicas(1, Duration::from_millis(100));
        let waiting = waiting.key_prefix("acks").connect().await.unwrap();
        let slot = Slot::Once("charge".into());
        match waiting.claim("f", &ANON, &slot, &ClaimToken::mint(), LONG, LONG).await {
            Err(error @ StoreError::Unavailable { .. }) => {
                assert!(error.to_string().contains("0 of 1 replicas acknowledged"), "{error}")
            }
            other => panic!("expected the replicas' silence, got {other:?}"),
        }
        let plain = RedisStore::builder(redis.url()).key_prefix("acks").connect().await.unwrap();
        assert_eq!(plain.claim("g", &ANON, &slot, &ClaimToken::mint(), LONG, LONG).await.unwrap(), Claim::Run);
    })
    .await;
}
