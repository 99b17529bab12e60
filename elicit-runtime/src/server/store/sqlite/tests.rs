//! The SQLite store's own tests (the store contract suites run on it from `tests/scale_out`).

use serde_json::json;

use super::*;
use crate::server::store::{RecordKind, mint_id};

/// Schema 1, as the version before flow owners wrote it (copied from its `db.rs`).
const SCHEMA_1: &str = "
CREATE TABLE IF NOT EXISTS urls (
  id TEXT PRIMARY KEY NOT NULL, owner TEXT, done INTEGER NOT NULL, outcome TEXT, expires INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS urls_expires ON urls (expires);
CREATE INDEX IF NOT EXISTS urls_owner ON urls (owner, expires);
CREATE TABLE IF NOT EXISTS flows (
  id TEXT PRIMARY KEY NOT NULL, slots TEXT NOT NULL, finished TEXT, expires INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS flows_expires ON flows (expires);
CREATE TABLE IF NOT EXISTS tasks (
  id TEXT PRIMARY KEY NOT NULL, doc TEXT NOT NULL, owner TEXT, running INTEGER NOT NULL,
  live_until INTEGER NOT NULL, updated INTEGER NOT NULL, expires INTEGER NOT NULL,
  answers TEXT NOT NULL, cancel INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS tasks_expires ON tasks (expires);
CREATE INDEX IF NOT EXISTS tasks_live ON tasks (running, live_until);
CREATE INDEX IF NOT EXISTS tasks_live_owner ON tasks (owner, running, live_until);
CREATE INDEX IF NOT EXISTS tasks_changed ON tasks (running, updated);
";

/// A fresh file in a folder of its own, removed when the test ends.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new(what: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("elicit-sqlite-{what}-{}", mint_id()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn file(&self) -> std::path::PathBuf {
        self.0.join("store.db")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

/// A call made after a release sees the step released, whether the call runs on the caller's
/// thread (`Normal`, nothing waiting), behind the release that waits for the connection, or on
/// the store's thread (`Full`): a call never runs ahead of one made before it.
#[tokio::test]
async fn a_call_after_a_release_sees_it_released_on_either_thread() {
    for synchronous in [Synchronous::Normal, Synchronous::Full] {
        let scratch = Scratch::new("order");
        let store = SqliteStore::builder(scratch.file()).synchronous(synchronous).open().await.unwrap();
        let minute = Duration::from_secs(60);
        for round in 0..50 {
            let id = format!("step-{round}");
            store.register(&id, minute, None).await.unwrap();
            assert_eq!(store.status(&id).await.unwrap(), UrlStatus::Pending, "{synchronous:?}");
            store.release(&id);
            assert_eq!(store.status(&id).await.unwrap(), UrlStatus::Unknown, "{synchronous:?}, round {round}");
        }
    }
}

/// Calls made together from many tasks on several threads are all answered, each with what
/// it committed: a call that finds the connection held waits for whoever holds it, and none
/// is left waiting once the connection is let go (the holder looks again after letting go).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn calls_made_together_are_all_run_by_whoever_holds_the_connection() {
    for synchronous in [Synchronous::Normal, Synchronous::Full] {
        let scratch = Scratch::new("together");
        let store = Arc::new(SqliteStore::builder(scratch.file()).synchronous(synchronous).open().await.unwrap());
        let minute = Duration::from_secs(60);
        let callers: Vec<_> = (0..16)
            .map(|caller| {
                let store = Arc::clone(&store);
                tokio::spawn(async move {
                    for n in 0..100 {
                        let id = format!("step-{caller}-{n}");
                        store.register(&id, minute, None).await.unwrap();
                        assert!(store.complete(&id, json!(n), None).await.unwrap());
                        store.release(&id);
                        // Released by the time it is looked at: the release went first.
                        assert_eq!(store.status(&id).await.unwrap(), UrlStatus::Unknown, "{id}");
                    }
                })
            })
            .collect();
        // A call left waiting would hang its caller: the test's own limit fails it instead.
        let all = async {
            for caller in callers {
                caller.await.unwrap();
            }
        };
        tokio::time::timeout(Duration::from_secs(120), all).await.expect("every call answered");
        assert_eq!(db::lock(&store.db).url_rows, 0, "{synchronous:?}");
    }
}

/// A call registering `late` (its answer on the receiver), and a first call registering
/// `first` whose own answer queues the late one, then panics if `panics`: the last moment before
/// the thread holding the connection looks at the waiting calls again.
fn first_then_late(store: &SqliteStore, panics: bool) -> (Job, oneshot::Receiver<Result<(), StoreError>>) {
    let minute = Duration::from_secs(60);
    let (tx, rx) = oneshot::channel();
    let late: Job = Box::new(move |db: &mut Db| -> Delivery {
        let result = db.job(|db| db.register("late", minute, None));
        Box::new(move |committed: Result<(), StoreError>| {
            let _ = tx.send(committed.and(result));
        })
    });
    let pending = Arc::clone(&store.pending);
    let first: Job = Box::new(move |db: &mut Db| -> Delivery {
        let result = db.job(|db| db.register("first", minute, None));
        Box::new(move |committed: Result<(), StoreError>| {
            committed.and(result).unwrap();
            pending.push(late);
            #[allow(clippy::panic, reason = "the panic is what the test is about")]
            if panics {
                panic!("an answer that panics");
            }
        })
    });
    (first, rx)
}

/// A call queued just as the holder lets the connection go (after its last look at the
/// waiting calls, before it lets go: as a call from another thread may be) is run: the holder
/// looks again once it has let go. Here the holder's own answer queues that call, which is
/// the last moment before the holder looks again.
#[tokio::test]
async fn a_call_queued_as_the_connection_is_let_go_is_run() {
    let scratch = Scratch::new("let-go");
    let store = SqliteStore::open(scratch.file()).await.unwrap();
    let (first, rx) = first_then_late(&store, false);
    store.queue(first).unwrap();
    // Left waiting, the late call would never be answered: the test's own limit fails it.
    let answered = tokio::time::timeout(Duration::from_secs(60), rx).await;
    answered.expect("the late call was run").unwrap().unwrap();
    assert_eq!(store.status("late").await.unwrap(), UrlStatus::Pending);
}

/// A call left waiting when the thread running the waiting calls unwinds (here an answer that
/// panics after queueing it, at the last moment) is run by the store's thread: no later call
/// need come along for it.
#[tokio::test]
async fn a_call_left_waiting_by_a_panic_is_run_by_the_stores_thread() {
    let scratch = Scratch::new("panic");
    let store = SqliteStore::open(scratch.file()).await.unwrap();
    let (first, rx) = first_then_late(&store, true);
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| store.queue(first)));
    assert!(unwound.is_err(), "the answer panicked on this thread");
    // Left waiting, the late call would never be answered: the test's own limit fails it.
    let answered = tokio::time::timeout(Duration::from_secs(60), rx).await;
    answered.expect("the late call was run").unwrap().unwrap();
    assert_eq!(store.status("late").await.unwrap(), UrlStatus::Pending);
    assert_eq!(store.status("first").await.unwrap(), UrlStatus::Pending);
}

/// The log is checkpointed every few hundred commits, by the store's thread, on either
/// setting: it is reused from its start rather than growing with every commit (SQLite's own
/// checkpoints are off, so without these it would grow without end).
#[tokio::test]
async fn the_log_is_checkpointed_and_does_not_grow_with_every_commit() {
    for synchronous in [Synchronous::Normal, Synchronous::Full] {
        let scratch = Scratch::new("checkpoint");
        let store = SqliteStore::builder(scratch.file()).synchronous(synchronous).open().await.unwrap();
        let log = scratch.0.join("store.db-wal");
        let log_size = || std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0);
        let commits = |from: usize, to: usize| {
            let store = &store;
            async move {
                for n in from..to {
                    store.register(&format!("step-{n}"), Duration::from_secs(60), None).await.unwrap();
                }
            }
        };
        commits(0, db::CHECKPOINT_EVERY).await;
        let one_stretch = log_size();
        assert!(one_stretch > 0, "{synchronous:?}: the commits went to the log");
        commits(db::CHECKPOINT_EVERY, 8 * db::CHECKPOINT_EVERY).await;
        let after = log_size();
        assert!(after < 3 * one_stretch, "{synchronous:?}: the log grew from {one_stretch} to {after} bytes");
    }
}

/// The sweep that starts every transaction finds expired records through the expiry
/// indexes and deletes them, and its statements are prepared once: binding the time and the
/// budget anew for each transaction does not make SQLite prepare them again (it did, a
/// third of the store's time under load). Steps, flows and tasks alike, with records due.
#[tokio::test]
async fn the_sweep_deletes_what_expired_and_its_statements_stay_prepared() {
    let scratch = Scratch::new("sweep");
    let clock = crate::server::clock::ManualClock::new();
    let store = SqliteStore::builder(scratch.file()).clock(Arc::new(clock.clone())).open().await.unwrap();
    let (second, alice) = (Duration::from_secs(1), FlowOwner::Principal("alice".into()));
    for round in 0..40 {
        store.register(&format!("step-{round}"), second, None).await.unwrap();
        let x = Slot::Once("x".into());
        let flow = format!("flow-{round}");
        assert_eq!(store.claim(&flow, &alice, &x, &ClaimToken::mint(), second, second).await.unwrap(), Claim::Run);
        clock.advance(Duration::from_millis(600));
    }
    clock.advance(Duration::from_secs(5));
    // Each commit sweeps a few: the rest go over the next commits.
    for round in 0..10 {
        store.register(&format!("late-{round}"), Duration::from_secs(60), None).await.unwrap();
    }
    let db = db::lock(&store.db);
    let count = |table: &str| -> i64 {
        db.conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |row| row.get(0)).unwrap()
    };
    assert_eq!((count("urls"), count("flows")), (10, 0), "every expired step and flow is swept");
    assert_eq!((db.url_rows, db.flow_rows), (10, 0), "and uncounted");
    for expiry in [db::URLS_EXPIRY, db::FLOWS_EXPIRY, db::TASKS_EXPIRY] {
        let statement = db.conn.prepare_cached(expiry.select).unwrap();
        let again = statement.get_status(rusqlite::StatementStatus::RePrepare);
        assert_eq!(again, 0, "{} was prepared again {again} times", expiry.select);
    }
}

/// A file of schema 1 opens: its flows read as they were, owned by no one (they count against
/// no owner's quota), and new flows have owners.
#[tokio::test]
async fn a_file_of_the_schema_without_flow_owners_opens_with_its_flows_owned_by_no_one() {
    let scratch = Scratch::new("schema-1");
    let file = scratch.file();
    {
        let conn = rusqlite::Connection::open(&file).unwrap();
        conn.execute_batch(SCHEMA_1).unwrap();
        let expires = db::ms(std::time::SystemTime::now()) + 3_600_000;
        conn.execute(
            r#"INSERT INTO flows (id, slots, finished, expires) VALUES ('old', '{"o:x":{"v":7}}', NULL, ?1)"#,
            [expires],
        )
        .unwrap();
        conn.pragma_update(None, "user_version", 1).unwrap();
    }
    let store = SqliteStore::builder(&file).max_flow_records_per_principal(1).open().await.unwrap();
    let (alice, token, long) = (FlowOwner::Principal("alice".into()), ClaimToken::mint(), Duration::from_secs(60));
    let x = Slot::Once("x".into());
    assert_eq!(store.claim("old", &alice, &x, &token, long, long).await.unwrap(), Claim::Done(json!(7)));
    // The old flow is no one's: alice's quota of one is still free, then full.
    assert_eq!(store.claim("new", &alice, &x, &token, long, long).await.unwrap(), Claim::Run);
    assert_eq!(
        store.claim("newer", &alice, &x, &token, long, long).await,
        Err(StoreError::Quota { kind: RecordKind::Flow, cap: 1 })
    );
    drop(store);
}
