//! The store contract (`elicit_runtime::server` store module docs), one suite run against every
//! store: the in-process one and `SqliteStore` on a real file (time moved by a manual clock),
//! `RedisStore` on a real redis-server (time passes; every wait is bounded and polls for its
//! condition), then on a Redis Cluster of three masters and three replicas. Two connections to the
//! same Redis act as two instances.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::redis::{Cluster, Redis};
use elicit_test_support::wait;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use elicit_runtime::server::{ManualClock, PageLogin, PageLoginError};

use elicit_runtime::server::store::{
    Claim, ClaimToken, Finish, FlowLedger, FlowOwner, InProcessStore, LedgerSnapshot, RecordKind, RedisStore, Slot,
    SqliteStore, Store, StoreError, UrlCompletions, UrlStatus,
};
use elicit_runtime::state::KeyRing;
use serde_json::json;
use serde_json::value::RawValue;

/// A flow's answers as the engine hands them to `finish`: their JSON text.
fn answers(value: serde_json::Value) -> Box<RawValue> {
    serde_json::value::to_raw_value(&value).unwrap()
}

const LONG: Duration = Duration::from_secs(60);
/// A lease or TTL that the test lets pass.
const SHORT: Duration = Duration::from_millis(200);

/// The caps a test wants.
#[derive(Clone, Copy, PartialEq)]
struct Caps {
    urls: usize,
    flows: usize,
    per_principal: usize,
    flows_per_owner: usize,
}

const ROOMY: Caps = Caps { urls: 1000, flows: 1000, per_principal: 1000, flows_per_owner: 1000 };

/// Whom the flow records count against where a test is not about the quota.
const ANON: FlowOwner = FlowOwner::Anonymous;

/// One of the stores, and how time passes for it.
enum Backend {
    Memory(ManualClock),
    /// A folder of its own; each `stores` call opens a new file in it.
    Sqlite(ManualClock, tempfile::TempDir),
    Redis(Redis, String),
    /// A cluster: records spread over the default shards, except where the test counts a cap
    /// exactly (one shard; the split caps have their own test in `cluster`).
    Cluster(Cluster, String),
}

impl Backend {
    /// Two handles on one store (two instances, for Redis).
    async fn stores(&self, caps: Caps) -> (Arc<dyn Store>, Arc<dyn Store>) {
        match self {
            Backend::Sqlite(clock, dir) => {
                let file = dir.path().join(format!("store-{}.db", ClaimToken::mint().as_str()));
                let store: Arc<dyn Store> = Arc::new(
                    SqliteStore::builder(file)
                        .clock(Arc::new(clock.clone()))
                        .max_url_records(caps.urls)
                        .max_flow_records(caps.flows)
                        .max_url_records_per_principal(caps.per_principal)
                        .max_flow_records_per_principal(caps.flows_per_owner)
                        .open()
                        .await
                        .unwrap(),
                );
                (store.clone(), store)
            }
            Backend::Memory(clock) => {
                let store: Arc<dyn Store> = Arc::new(
                    InProcessStore::new()
                        .clock(Arc::new(clock.clone()))
                        .max_url_records(caps.urls)
                        .max_flow_records(caps.flows)
                        .max_url_records_per_principal(caps.per_principal)
                        .max_flow_records_per_principal(caps.flows_per_owner),
                );
                (store.clone(), store)
            }
            Backend::Redis(redis, prefix) => redis_pair(redis.url(), 1, prefix, caps).await,
            Backend::Cluster(cluster, prefix) => {
                redis_pair(cluster.url(), if caps == ROOMY { 16 } else { 1 }, prefix, caps).await
            }
        }
    }

    /// Lets `by` pass, then waits (bounded) until `condition` holds.
    async fn after<F, Fut>(&self, by: Duration, condition: F)
    where
        F: Fn() -> Fut,
        Fut: Future<Output = bool>,
    {
        match self {
            Backend::Memory(clock) | Backend::Sqlite(clock, _) => {
                clock.advance(by);
                assert!(condition().await, "not so once the time passed");
            }
            Backend::Redis(..) | Backend::Cluster(..) => {
                let deadline = tokio::time::Instant::now() + by + Duration::from_secs(10);
                while !condition().await {
                    assert!(tokio::time::Instant::now() < deadline, "not so within the bound");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
    }
}

/// Two connections to one Redis or cluster, with these caps over `shards` (on a cluster).
async fn redis_pair(url: String, shards: u32, prefix: &str, caps: Caps) -> (Arc<dyn Store>, Arc<dyn Store>) {
    let connect = || async {
        let store = RedisStore::builder(url.as_str())
            .cluster_shards(shards)
            .key_prefix(prefix)
            .max_url_records(caps.urls)
            .max_flow_records(caps.flows)
            .max_url_records_per_principal(caps.per_principal)
            .max_flow_records_per_principal(caps.flows_per_owner)
            .connect()
            .await
            .unwrap();
        Arc::new(store) as Arc<dyn Store>
    };
    (connect().await, connect().await)
}

/// Runs `check` against the in-process store, a SQLite file, then Redis and a Redis Cluster
/// (skipped without redis-server).
async fn both<F, Fut>(test: &str, check: F)
where
    F: Fn(Backend) -> Fut,
    Fut: Future<Output = ()>,
{
    check(Backend::Memory(ManualClock::new())).await;
    check(Backend::Sqlite(ManualClock::new(), tempfile::tempdir().unwrap())).await;
    if let Some(redis) = Redis::start_or_skip(test, None) {
        tokio::time::timeout(Duration::from_secs(60), check(Backend::Redis(redis, test.to_owned())))
            .await
            .expect("the Redis half finished within its bound");
    }
    if let Some(cluster) = Cluster::start_or_skip(test) {
        tokio::time::timeout(Duration::from_secs(60), check(Backend::Cluster(cluster, test.to_owned())))
            .await
            .expect("the cluster half finished within its bound");
    }
}

fn once(key: &str) -> Slot {
    Slot::Once(key.to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_completes_once_for_its_owner_and_is_taken_once() {
    both("a_step_completes_once_for_its_owner_and_is_taken_once", |on| async move {
        let (a, b) = on.stores(ROOMY).await;
        a.register("s1", LONG, None).await.unwrap();
        assert_eq!(b.status("s1").await.unwrap(), UrlStatus::Pending);
        assert_eq!(b.take("s1", Duration::ZERO).await.unwrap(), UrlStatus::Pending);
        assert!(b.complete("s1", json!({"approved": true}), None).await.unwrap());
        assert!(!a.complete("s1", json!({"approved": false}), None).await.unwrap(), "completed twice");
        // Registering a live id again changes nothing: the completion stays.
        a.register("s1", LONG, None).await.unwrap();
        assert_eq!(a.take("s1", Duration::ZERO).await.unwrap(), UrlStatus::Completed(json!({"approved": true})));
        assert_eq!(b.take("s1", Duration::ZERO).await.unwrap(), UrlStatus::Unknown, "taken twice");
        assert!(!b.complete("never-minted", json!(null), None).await.unwrap());
        assert_eq!(b.status("never-minted").await.unwrap(), UrlStatus::Unknown);

        a.register("owned", LONG, Some("alice")).await.unwrap();
        assert!(!b.complete("owned", json!(true), Some("bob")).await.unwrap(), "completed by another user");
        assert!(!b.complete("owned", json!(true), None).await.unwrap(), "completed anonymously");
        assert!(b.complete("owned", json!(true), Some("alice")).await.unwrap());

        a.register("released", LONG, None).await.unwrap();
        a.release("released");
        on.after(Duration::ZERO, || async { b.status("released").await.unwrap() == UrlStatus::Unknown }).await;
        assert!(!b.complete("released", json!(null), None).await.unwrap());

        a.register("brief", SHORT, None).await.unwrap();
        on.after(SHORT, || async { b.status("brief").await.unwrap() == UrlStatus::Unknown }).await;
        assert!(!b.complete("brief", json!(null), None).await.unwrap(), "an expired step completed");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_take_wakes_on_the_other_instances_completion() {
    both("a_waiting_take_wakes_on_the_other_instances_completion", |on| async move {
        let (a, b) = on.stores(ROOMY).await;
        a.register("w", LONG, None).await.unwrap();
        // The take would wait an hour on its own: only the completion's wake-up ends it within
        // the bound. Its first look is taken before the completion, so it is waiting by then.
        let mut waiter = b.take("w", Duration::from_secs(3600));
        assert!(wait::first_look(&mut waiter).await, "the step was pending, yet the take did not wait");
        assert!(a.complete("w", json!(1), None).await.unwrap());
        let taken = wait::finished(Duration::from_secs(30), "the waiting take to be woken", waiter).await;
        assert_eq!(taken.unwrap(), UrlStatus::Completed(json!(1)));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_belongs_to_its_token_until_recorded_abandoned_or_its_lease_passes() {
    both("a_claim_belongs_to_its_token_until_recorded_abandoned_or_its_lease_passes", |on| async move {
        let (a, b) = on.stores(ROOMY).await;
        let (mine, theirs) = (ClaimToken::mint(), ClaimToken::mint());
        assert_ne!(mine, theirs);
        assert_eq!(a.claim("f", &ANON, &once("x"), &mine, LONG, LONG).await.unwrap(), Claim::Run);
        assert_eq!(b.claim("f", &ANON, &once("x"), &theirs, LONG, LONG).await.unwrap(), Claim::Busy);
        // A retried claim (its reply lost) finds its own token and carries on.
        assert_eq!(b.claim("f", &ANON, &once("x"), &mine, LONG, LONG).await.unwrap(), Claim::Run);
        // Only the token records or abandons.
        assert_eq!(b.record("f", &once("x"), &theirs, json!(1), LONG).await, Err(StoreError::ClaimLost));
        b.abandon("f", &once("x"), &theirs).await.unwrap();
        assert_eq!(b.claim("f", &ANON, &once("x"), &theirs, LONG, LONG).await.unwrap(), Claim::Busy);
        a.record("f", &once("x"), &mine, json!({"ref": "A"}), LONG).await.unwrap();
        // A retried record of the same value is fine; the slot is done for everyone.
        b.record("f", &once("x"), &mine, json!({"ref": "A"}), LONG).await.unwrap();
        assert_eq!(
            b.claim("f", &ANON, &once("x"), &theirs, LONG, LONG).await.unwrap(),
            Claim::Done(json!({"ref": "A"}))
        );
        a.abandon("f", &once("x"), &mine).await.unwrap();
        assert_eq!(
            b.claim("f", &ANON, &once("x"), &theirs, LONG, LONG).await.unwrap(),
            Claim::Done(json!({"ref": "A"}))
        );

        // Abandoned: the next claimant runs it.
        assert_eq!(a.claim("f", &ANON, &once("y"), &mine, LONG, LONG).await.unwrap(), Claim::Run);
        a.abandon("f", &once("y"), &mine).await.unwrap();
        assert_eq!(b.claim("f", &ANON, &once("y"), &theirs, LONG, LONG).await.unwrap(), Claim::Run);

        // A claimant that crashed: its lease passes and another round takes the slot over; the
        // crashed one can no longer record.
        assert_eq!(a.claim("f", &ANON, &once("z"), &mine, SHORT, LONG).await.unwrap(), Claim::Run);
        let fresh = ClaimToken::mint();
        on.after(SHORT, || async { b.claim("f", &ANON, &once("z"), &fresh, LONG, LONG).await.unwrap() == Claim::Run })
            .await;
        assert_eq!(a.record("f", &once("z"), &mine, json!(1), LONG).await, Err(StoreError::ClaimLost));
        b.record("f", &once("z"), &fresh, json!(2), LONG).await.unwrap();
        assert_eq!(a.claim("f", &ANON, &once("z"), &mine, LONG, LONG).await.unwrap(), Claim::Done(json!(2)));

        // Flows are apart, and a URL id never names a flow record.
        assert_eq!(a.claim("g", &ANON, &once("x"), &theirs, LONG, LONG).await.unwrap(), Claim::Run);
        assert!(!a.complete("f", json!(null), None).await.unwrap());
        assert_eq!(a.status("f").await.unwrap(), UrlStatus::Unknown);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flow_finishes_once_and_only_having_seen_every_slot() {
    both("a_flow_finishes_once_and_only_having_seen_every_slot", |on| async move {
        let (a, b) = on.stores(ROOMY).await;
        let token = ClaimToken::mint();
        let (x, paid) = (once("x"), Slot::Url("payment".into()));
        assert_eq!(a.finished("f").await.unwrap(), None);
        assert_eq!(a.claim("f", &ANON, &x, &token, LONG, LONG).await.unwrap(), Claim::Run);
        // A slot held under a live lease, or recorded, that the round did not see: a conflict.
        assert_eq!(b.finish("f", &ANON, &answers(json!({"a": 1})), &[], LONG).await.unwrap(), Finish::Conflict);
        a.record("f", &x, &token, json!("X"), LONG).await.unwrap();
        assert_eq!(a.claim("f", &ANON, &paid, &token, LONG, LONG).await.unwrap(), Claim::Run);
        a.record("f", &paid, &token, json!({"approved": true}), LONG).await.unwrap();
        assert_eq!(
            b.finish("f", &ANON, &answers(json!({"a": 1})), std::slice::from_ref(&x), LONG).await.unwrap(),
            Finish::Conflict
        );
        assert_eq!(b.finished("f").await.unwrap(), None);
        assert_eq!(
            b.finish("f", &ANON, &answers(json!({"a": 1})), &[x.clone(), paid.clone()], LONG).await.unwrap(),
            Finish::Recorded
        );
        assert_eq!(a.finished("f").await.unwrap(), Some(json!({"a": 1})));
        assert_eq!(
            a.finish("f", &ANON, &answers(json!({"a": 2})), &[x.clone(), paid], LONG).await.unwrap(),
            Finish::Already(json!({"a": 1}))
        );
        // Finished: recorded slots are still read, nothing new runs.
        assert_eq!(b.claim("f", &ANON, &x, &ClaimToken::mint(), LONG, LONG).await.unwrap(), Claim::Done(json!("X")));
        assert_eq!(b.claim("f", &ANON, &once("new"), &token, LONG, LONG).await.unwrap(), Claim::Finished);

        // A flow with nothing recorded finishes too; a claim whose lease passed is no conflict.
        assert_eq!(a.finish("plain", &ANON, &answers(json!({})), &[], LONG).await.unwrap(), Finish::Recorded);
        assert_eq!(a.claim("crashed", &ANON, &x, &token, SHORT, LONG).await.unwrap(), Claim::Run);
        on.after(SHORT, || async {
            b.finish("crashed", &ANON, &answers(json!({"b": 1})), &[], LONG).await.unwrap() == Finish::Recorded
        })
        .await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_claim_is_not_handed_out_to_run_once_its_flow_finished() {
    both("a_stale_claim_is_not_handed_out_to_run_once_its_flow_finished", |on| async move {
        let (a, b) = on.stores(ROOMY).await;
        let (crashed, retried) = (ClaimToken::mint(), ClaimToken::mint());
        // A round claims a slot and dies; its lease passes and the flow finishes without it.
        assert_eq!(a.claim("f", &ANON, &once("x"), &crashed, SHORT, LONG).await.unwrap(), Claim::Run);
        on.after(SHORT, || async {
            b.finish("f", &ANON, &answers(json!({"done": true})), &[], LONG).await.unwrap() == Finish::Recorded
        })
        .await;
        // The stale claim is not run again, by another token nor by the one that held it.
        assert_eq!(b.claim("f", &ANON, &once("x"), &retried, LONG, LONG).await.unwrap(), Claim::Finished);
        assert_eq!(a.claim("f", &ANON, &once("x"), &crashed, LONG, LONG).await.unwrap(), Claim::Finished);
        assert_eq!(a.finished("f").await.unwrap(), Some(json!({"done": true})));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_live_their_ttl_from_the_last_extension_and_empty_ones_are_gone() {
    both("records_live_their_ttl_from_the_last_extension_and_empty_ones_are_gone", |on| async move {
        let (a, b) = on.stores(Caps { flows: 1, ..ROOMY }).await;
        let token = ClaimToken::mint();
        // Extending a flow without a record creates none: the one room is still free.
        a.extend("nothing", LONG).await.unwrap();
        assert_eq!(a.claim("f", &ANON, &once("x"), &token, LONG, SHORT).await.unwrap(), Claim::Run);
        // An abandon that empties the record removes it: its room is free again.
        a.abandon("f", &once("x"), &token).await.unwrap();
        assert_eq!(b.claim("g", &ANON, &once("x"), &token, LONG, SHORT).await.unwrap(), Claim::Run);
        b.record("g", &once("x"), &token, json!(1), SHORT).await.unwrap();
        // Extended, the record outlives its first TTL...
        a.extend("g", LONG).await.unwrap();
        let other = ClaimToken::mint();
        on.after(SHORT * 2, || async { true }).await;
        assert_eq!(a.claim("g", &ANON, &once("x"), &other, LONG, SHORT).await.unwrap(), Claim::Done(json!(1)));
        // ...and a shorter TTL never shortens it.
        b.record("g", &once("x"), &token, json!(1), SHORT).await.unwrap();
        on.after(SHORT * 2, || async { true }).await;
        assert_eq!(a.claim("g", &ANON, &once("x"), &other, LONG, SHORT).await.unwrap(), Claim::Done(json!(1)));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_reads_what_a_flow_holds_for_good_and_extends_its_record() {
    both("a_snapshot_reads_what_a_flow_holds_for_good_and_extends_its_record", |on| async move {
        let (a, b) = on.stores(Caps { flows: 1, ..ROOMY }).await;
        let token = ClaimToken::mint();
        let (x, held, paid) = (once("x"), once("held"), Slot::Url("payment".into()));
        for slot in [&x, &paid] {
            assert_eq!(Slot::from_name(&slot.name()).as_ref(), Some(slot));
        }
        assert_eq!(Slot::from_name("final"), None);
        // A flow without a record: an empty snapshot, and no record made (the one room is free).
        assert_eq!(a.snapshot("nothing", LONG).await.unwrap(), LedgerSnapshot::default());
        assert_eq!(a.claim("f", &ANON, &x, &token, LONG, SHORT).await.unwrap(), Claim::Run);
        // A slot only claimed is not held for good.
        assert_eq!(b.snapshot("f", SHORT).await.unwrap(), LedgerSnapshot::default());
        a.record("f", &x, &token, json!({"ref": "A"}), SHORT).await.unwrap();
        assert_eq!(a.claim("f", &ANON, &paid, &token, LONG, SHORT).await.unwrap(), Claim::Run);
        a.record("f", &paid, &token, json!({"approved": true}), SHORT).await.unwrap();
        assert_eq!(a.claim("f", &ANON, &held, &token, LONG, SHORT).await.unwrap(), Claim::Run);
        // Every recorded slot with its value, nothing else; the record extended to LONG...
        let recorded = HashMap::from([(x.clone(), json!({"ref": "A"})), (paid.clone(), json!({"approved": true}))]);
        let snapshot = b.snapshot("f", LONG).await.unwrap();
        assert_eq!(snapshot, LedgerSnapshot { finished: None, recorded: recorded.clone() });
        // ...so it outlives the TTL of its writes, and a shorter TTL never shortens it.
        on.after(SHORT * 2, || async { true }).await;
        assert_eq!(a.snapshot("f", SHORT).await.unwrap(), snapshot);
        on.after(SHORT * 2, || async { true }).await;
        // What it holds is what a claim answers.
        assert_eq!(
            b.claim("f", &ANON, &x, &ClaimToken::mint(), LONG, LONG).await.unwrap(),
            Claim::Done(json!({"ref": "A"}))
        );
        a.abandon("f", &held, &token).await.unwrap();
        assert_eq!(
            b.finish("f", &ANON, &answers(json!({"a": 1})), &[x.clone(), paid.clone()], LONG).await.unwrap(),
            Finish::Recorded
        );
        // Finished: the answers too, which a later finish answers with.
        let finished = a.snapshot("f", LONG).await.unwrap();
        assert_eq!(finished, LedgerSnapshot { finished: Some(json!({"a": 1})), recorded });
        assert_eq!(
            b.finish("f", &ANON, &answers(json!({"a": 2})), &[x, paid], LONG).await.unwrap(),
            Finish::Already(json!({"a": 1}))
        );
        // A flow that finished with nothing recorded.
        let (c, _) = on.stores(ROOMY).await;
        assert_eq!(c.finish("plain", &ANON, &answers(json!({})), &[], LONG).await.unwrap(), Finish::Recorded);
        let plain = c.snapshot("plain", LONG).await.unwrap();
        assert_eq!(plain, LedgerSnapshot { finished: Some(json!({})), recorded: HashMap::new() });
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_kind_of_record_has_its_cap_and_each_principal_its_quota() {
    both("each_kind_of_record_has_its_cap_and_each_principal_its_quota", |on| async move {
        let (a, b) = on.stores(Caps { urls: 4, flows: 2, per_principal: 2, ..ROOMY }).await;
        let token = ClaimToken::mint();
        a.register("m1", LONG, Some("mallory")).await.unwrap();
        b.register("m2", LONG, Some("mallory")).await.unwrap();
        // One principal at its quota: refused, with the quota named; others are not.
        match a.register("m3", LONG, Some("mallory")).await {
            Err(error @ StoreError::Quota { kind: RecordKind::Url, cap: 2 }) => {
                assert!(error.to_string().contains("per principal"), "{error}")
            }
            other => panic!("expected the quota, got {other:?}"),
        }
        b.register("a1", LONG, Some("alice")).await.unwrap();
        b.register("anonymous", LONG, None).await.unwrap();
        // The URL cap is reached: anyone is refused, flows are not.
        match b.register("a2", LONG, Some("alice")).await {
            Err(error @ StoreError::Full { kind: RecordKind::Url, cap: 4 }) => {
                assert!(error.to_string().contains("full"), "{error}")
            }
            other => panic!("expected the URL cap, got {other:?}"),
        }
        assert_eq!(a.claim("f1", &ANON, &once("x"), &token, LONG, LONG).await.unwrap(), Claim::Run);
        assert_eq!(b.finish("f2", &ANON, &answers(json!({})), &[], LONG).await.unwrap(), Finish::Recorded);
        assert!(matches!(
            a.claim("f3", &ANON, &once("x"), &token, LONG, LONG).await,
            Err(StoreError::Full { kind: RecordKind::Flow, cap: 2 })
        ));
        // A flow that has its record is not refused.
        assert_eq!(a.claim("f1", &ANON, &once("y"), &token, LONG, LONG).await.unwrap(), Claim::Run);
        // A step taken frees its room and its owner's quota.
        assert!(a.complete("m1", json!(1), Some("mallory")).await.unwrap());
        assert_eq!(b.take("m1", Duration::ZERO).await.unwrap(), UrlStatus::Completed(json!(1)));
        a.register("m3", LONG, Some("mallory")).await.unwrap();
        assert!(b.register("m4", LONG, Some("mallory")).await.is_err());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_owner_at_its_quota_of_flow_records_leaves_room_for_every_other_owner() {
    both("one_owner_at_its_quota_of_flow_records_leaves_room_for_every_other_owner", |on| async move {
        let (a, b) = on.stores(Caps { flows_per_owner: 2, ..ROOMY }).await;
        let (mallory, alice) = (FlowOwner::Principal("mallory".into()), FlowOwner::Principal("alice".into()));
        let token = ClaimToken::mint();
        let quota = |refused: Result<_, StoreError>| match refused {
            Err(error @ StoreError::Quota { kind: RecordKind::Flow, cap: 2 }) => {
                let text = error.to_string();
                assert!(text.contains("flow records") && text.contains("per principal"), "{text}");
            }
            other => panic!("expected the quota of flow records, got {other:?}"),
        };
        // Mallory makes two records, one by a claim and one by a finish: her quota.
        assert_eq!(a.claim("m1", &mallory, &once("x"), &token, LONG, LONG).await.unwrap(), Claim::Run);
        assert_eq!(b.finish("m2", &mallory, &answers(json!({})), &[], LONG).await.unwrap(), Finish::Recorded);
        // A third is refused on either instance, by a claim or a finish.
        quota(a.claim("m3", &mallory, &once("x"), &token, LONG, LONG).await.map(drop));
        quota(b.finish("m3", &mallory, &answers(json!({})), &[], LONG).await.map(drop));
        assert_eq!(a.finished("m3").await.unwrap(), None, "a refused finish recorded nothing");
        // The records she holds carry on: a new slot, a retried claim, the finish.
        assert_eq!(b.claim("m1", &mallory, &once("y"), &token, LONG, LONG).await.unwrap(), Claim::Run);
        assert_eq!(a.claim("m1", &mallory, &once("x"), &token, LONG, LONG).await.unwrap(), Claim::Run);
        // Every other owner is served: a principal, a client whose address reads as her name,
        // the anonymous callers.
        assert_eq!(b.claim("a1", &alice, &once("x"), &token, LONG, LONG).await.unwrap(), Claim::Run);
        let lookalike = FlowOwner::Client("mallory".into());
        assert_eq!(b.claim("c1", &lookalike, &once("x"), &token, LONG, LONG).await.unwrap(), Claim::Run);
        assert_eq!(a.finish("n1", &ANON, &answers(json!({})), &[], LONG).await.unwrap(), Finish::Recorded);

        // A record an abandon leaves empty frees its place...
        a.abandon("m1", &once("x"), &token).await.unwrap();
        a.abandon("m1", &once("y"), &token).await.unwrap();
        assert_eq!(a.claim("m4", &mallory, &once("x"), &token, LONG, SHORT).await.unwrap(), Claim::Run);
        quota(b.claim("m5", &mallory, &once("x"), &token, LONG, LONG).await.map(drop));
        // ...and so does one that expires...
        on.after(SHORT, || async {
            match b.claim("m5", &mallory, &once("x"), &token, LONG, LONG).await {
                Ok(claim) => claim == Claim::Run,
                Err(StoreError::Quota { .. }) => false,
                Err(error) => panic!("{error}"),
            }
        })
        .await;
        // ...but a finished record holds its place while it lives: it is what a replay reads.
        quota(a.claim("m6", &mallory, &once("x"), &token, LONG, LONG).await.map(drop));
        assert_eq!(b.finished("m2").await.unwrap(), Some(json!({})));

        // A record extended past its first TTL (its flow's rounds go on) still counts after it.
        let eve = FlowOwner::Client("10.0.0.66".into());
        assert_eq!(a.claim("e1", &eve, &once("x"), &token, LONG, SHORT).await.unwrap(), Claim::Run);
        a.record("e1", &once("x"), &token, json!(1), SHORT).await.unwrap();
        assert_eq!(b.snapshot("e1", LONG).await.unwrap().recorded.len(), 1);
        assert_eq!(b.finish("e2", &eve, &answers(json!({})), &[], LONG).await.unwrap(), Finish::Recorded);
        // A probe that lives SHORT: once it is gone, e1's first TTL has passed too.
        assert_eq!(a.finish("probe", &ANON, &answers(json!({})), &[], SHORT).await.unwrap(), Finish::Recorded);
        on.after(SHORT, || async { a.finished("probe").await.unwrap().is_none() }).await;
        assert_eq!(a.finished("e2").await.unwrap(), Some(json!({})));
        quota(b.claim("e3", &eve, &once("x"), &token, LONG, LONG).await.map(drop));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sign_in_tickets_of_a_step_share_one_record_however_often_the_round_replays() {
    both("the_sign_in_tickets_of_a_step_share_one_record_however_often_the_round_replays", |on| async move {
        const STEP: &str = "c3RlcC1vZi1hbGljZTAwMDA";
        let (a, b) = on.stores(Caps { per_principal: 2, ..ROOMY }).await;
        a.register(STEP, LONG, Some("alice")).await.unwrap();
        // Two instances sharing the keys and the store: one builds the links, the other serves
        // the page.
        let ring = KeyRing::generate();
        let (minting, redeeming) = (PageLogin::new(ring.clone(), a.clone()), PageLogin::new(ring, b.clone()));
        // The client retries the round five times: five links, each with a ticket.
        let tickets: Vec<String> = (0..5).map(|_| minting.ticket(STEP, "alice").unwrap()).collect();
        assert_eq!(redeeming.redeem(STEP, &tickets[4]).await, Ok("alice".to_owned()));
        // One sign-in per step: every other ticket of it is used.
        assert_eq!(redeeming.redeem(STEP, &tickets[0]).await, Err(PageLoginError::Used));
        // Alice holds two records, the step and its sign-in, at her quota of two.
        match a.register("c3RlcC10d28tb2YtYWxpY2U", LONG, Some("alice")).await {
            Err(StoreError::Quota { kind: RecordKind::Url, cap: 2 }) => {}
            other => panic!("expected the quota, got {other:?}"),
        }
        assert_eq!(a.status(STEP).await.unwrap(), UrlStatus::Pending, "the step itself is untouched");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_file_is_one_stores_and_keeps_what_it_acknowledged_across_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("one.db");
    let store = SqliteStore::open(&file).await.unwrap();
    store.register("paid", LONG, Some("alice")).await.unwrap();
    assert!(store.complete("paid", json!({"approved": true}), Some("alice")).await.unwrap());
    let token = ClaimToken::mint();
    let alice = FlowOwner::Principal("alice".into());
    assert_eq!(store.claim("f", &alice, &once("charge"), &token, LONG, LONG).await.unwrap(), Claim::Run);
    store.record("f", &once("charge"), &token, json!({"ref": "C-1"}), LONG).await.unwrap();

    // A second store on the same file is refused, saying why, and the first one carries on.
    match SqliteStore::open(&file).await {
        Err(error @ StoreError::Unavailable { .. }) => {
            let text = error.to_string();
            assert!(text.contains("in use by another process") && text.contains("one.db"), "{text}");
        }
        other => panic!("a second store opened the file: {other:?}"),
    }
    assert_eq!(store.status("paid").await.unwrap(), UrlStatus::Completed(json!({"approved": true})));

    // Closed (its thread lets the file go), the file opens again with everything acknowledged.
    drop(store);
    let reopened = std::sync::Mutex::new(None);
    wait::until_async(Duration::from_secs(10), "the closed store to let its file go", || async {
        let opened = SqliteStore::builder(&file).max_flow_records_per_principal(1).open().await.ok();
        let found = opened.is_some();
        *reopened.lock().unwrap() = opened;
        found
    })
    .await;
    let reopened = reopened.into_inner().unwrap().unwrap();
    assert_eq!(reopened.take("paid", Duration::ZERO).await.unwrap(), UrlStatus::Completed(json!({"approved": true})));
    assert_eq!(
        reopened.claim("f", &ANON, &once("charge"), &ClaimToken::mint(), LONG, LONG).await.unwrap(),
        Claim::Done(json!({"ref": "C-1"}))
    );
    // The file knows whose flows it holds: alice's one record fills her quota of one.
    assert_eq!(
        reopened.claim("g", &alice, &once("charge"), &token, LONG, LONG).await,
        Err(StoreError::Quota { kind: RecordKind::Flow, cap: 1 })
    );
    let bob = FlowOwner::Principal("bob".into());
    assert_eq!(reopened.claim("g", &bob, &once("charge"), &token, LONG, LONG).await.unwrap(), Claim::Run);
}
