//! The task store contract ([`TaskRecords`]), one suite run against every store: the in-process
//! one, `SqliteStore` on a real file, and `RedisStore` on a real redis-server, then on a Redis
//! Cluster (three masters, three replicas), where two connections act as two instances.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use elicit_runtime::server::store::{
    InProcessTasks, RedisStore, SqliteStore, StoreError, StoredJson, TaskLimits, TaskRecord, TaskRecords,
};

use elicit_runtime::server::task::{TaskConfig, TaskStatus};
use elicit_test_support::redis::{Cluster, Redis};
use serde_json::{Map, Value, json};

fn now_ms() -> u64 {
    u64::try_from(SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis()).unwrap()
}

fn record(id: &str, owner: Option<&str>, lease_ms: u64) -> TaskRecord {
    let mut config = TaskConfig::default();
    config.ttl = Duration::from_secs(60);
    config.lease = Duration::from_millis(lease_ms);
    TaskRecord::working(id, owner, now_ms(), &config)
}

fn limits(max_live: usize, per_principal: usize) -> TaskLimits {
    TaskLimits { max_live, max_live_per_principal: per_principal, now_ms: now_ms() }
}

fn answers(pairs: &[(&str, Value)]) -> Map<String, Value> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect()
}

/// Runs `check` on two handles of the in-process store, of a SQLite store, of a Redis store, then
/// of one on a cluster (one shard: the contract counts the caps exactly).
async fn both<F, Fut>(test: &str, check: F)
where
    F: Fn(Arc<dyn TaskRecords>, Arc<dyn TaskRecords>) -> Fut,
    Fut: Future<Output = ()>,
{
    let memory: Arc<dyn TaskRecords> = Arc::new(InProcessTasks::new());
    check(memory.clone(), memory).await;
    let dir = tempfile::tempdir().unwrap();
    let sqlite: Arc<dyn TaskRecords> = Arc::new(SqliteStore::open(dir.path().join("tasks.db")).await.unwrap());
    check(sqlite.clone(), sqlite).await;
    let Some(redis) = Redis::start_or_skip(test, None) else { return };
    let connect = || async {
        let store: Arc<dyn TaskRecords> =
            Arc::new(RedisStore::builder(redis.url()).key_prefix("task-contract").connect().await.unwrap());
        store
    };
    check(connect().await, connect().await).await;
    let Some(cluster) = Cluster::start_or_skip(test) else { return };
    let connect = || async {
        let store = RedisStore::builder(cluster.url()).cluster_shards(1).key_prefix("task-contract").connect().await;
        Arc::new(store.unwrap()) as Arc<dyn TaskRecords>
    };
    check(connect().await, connect().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_created_task_is_found_everywhere_and_answers_keep_the_first_per_key() {
    both("a_created_task_is_found_everywhere_and_answers_keep_the_first_per_key", |a, b| async move {
        let mut task = record("t1", Some("alice"), 30_000);
        task.status = TaskStatus::InputRequired;
        task.input_requests.insert("who".into(), StoredJson::from_json(&json!({"method": "elicitation/create"})));
        a.create(&task, limits(10, 10)).await.unwrap();
        let view = b.load("t1").await.unwrap().unwrap();
        assert_eq!(view.record, task);
        assert!(view.answered.is_empty() && !view.cancel_requested);
        b.answer("t1", answers(&[("who", json!({"action": "accept"}))])).await.unwrap();
        b.answer("t1", answers(&[("who", json!({"action": "decline"}))])).await.unwrap();
        assert_eq!(a.answers("t1").await.unwrap()["who"], json!({"action": "accept"}));
        assert!(a.load("t1").await.unwrap().unwrap().answered.contains("who"));
        // The running instance took the answer: it is forgotten with its key.
        task.input_requests.clear();
        task.status = TaskStatus::Working;
        assert!(a.save(&task).await.unwrap());
        assert!(b.answers("t1").await.unwrap().is_empty());
        // Nothing lands on a task that does not exist.
        b.answer("nope", answers(&[("who", json!({}))])).await.unwrap();
        b.cancel("nope").await.unwrap();
        assert!(a.load("nope").await.unwrap().is_none());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminal_record_is_never_overwritten_and_cancel_is_seen_everywhere() {
    both("a_terminal_record_is_never_overwritten_and_cancel_is_seen_everywhere", |a, b| async move {
        let mut task = record("t2", None, 30_000);
        a.create(&task, limits(10, 10)).await.unwrap();
        b.cancel("t2").await.unwrap();
        assert!(a.load("t2").await.unwrap().unwrap().cancel_requested);
        // Another instance marks it failed (its lease passed): the running one cannot write again.
        let mut failed = task.clone();
        failed.status = TaskStatus::Failed;
        failed.outcome = Some(StoredJson::from_json(&json!({"code": -32603, "message": "gone"})));
        assert!(b.save(&failed).await.unwrap());
        task.status_message = Some("still here".into());
        assert!(!a.save(&task).await.unwrap());
        assert_eq!(a.load("t2").await.unwrap().unwrap().record, failed);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_tasks_are_capped_in_total_and_per_principal_until_they_end_or_their_lease_passes() {
    both("live_tasks_are_capped_in_total_and_per_principal_until_they_end_or_their_lease_passes", |a, b| async move {
        let mut first = record("c1", Some("alice"), 30_000);
        a.create(&first, limits(2, 1)).await.unwrap();
        let refused = b.create(&record("c2", Some("alice"), 30_000), limits(2, 1)).await.unwrap_err();
        assert_eq!(refused, StoreError::TaskCap { cap: 1, per_principal: true });
        let bob = record("c3", Some("bob"), 400);
        b.create(&bob, limits(2, 1)).await.unwrap();
        let refused = a.create(&record("c4", Some("carol"), 30_000), limits(2, 1)).await.unwrap_err();
        assert_eq!(refused, StoreError::TaskCap { cap: 2, per_principal: false });
        // Bob's lease (400 ms) passes: his task no longer counts.
        for _ in 0..2000 {
            if now_ms() > bob.lease_until_ms {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        a.create(&record("c4", Some("carol"), 30_000), limits(2, 1)).await.unwrap();
        // Alice's task ends: she may start another.
        first.status = TaskStatus::Completed;
        first.outcome = Some(StoredJson::from_json(&json!({"content": []})));
        assert!(a.save(&first).await.unwrap());
        b.create(&record("c5", Some("alice"), 30_000), limits(3, 1)).await.unwrap();
    })
    .await;
}
