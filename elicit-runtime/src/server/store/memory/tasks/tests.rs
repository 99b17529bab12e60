//! The in-process task store against a model that scans every record, and the indices recounted
//! after every step.

use super::*;
use crate::server::clock::ManualClock;
use crate::server::task::{TaskConfig, TaskStatus};
use crate::test_rng::Rng;

fn record(id: &str, now: u64) -> TaskRecord {
    let config = TaskConfig { ttl: Duration::from_secs(60), ..TaskConfig::default() };
    TaskRecord::working(id, None, now, &config)
}

fn limits(max_live: usize, per_principal: usize, now_ms: u64) -> TaskLimits {
    TaskLimits { max_live, max_live_per_principal: per_principal, now_ms }
}

fn task(id: &str, owner: Option<&str>, now: u64, ttl_ms: u64, lease_ms: u64) -> TaskRecord {
    TaskRecord { owner: owner.map(str::to_owned), ttl_ms, lease_until_ms: now + lease_ms, ..record(id, now) }
}

/// The entries of a lazy index still valid for their records, as a set.
fn valid<'a>(
    marks: impl Iterator<Item = &'a Mark>,
    keep: impl Fn(&Entry, &Mark) -> bool,
    records: &Records,
) -> BTreeSet<(u64, String)> {
    marks
        .filter(|mark| records.map.get(&mark.1).is_some_and(|entry| keep(entry, mark)))
        .map(|(at, id, _)| (*at, id.to_string()))
        .collect()
}

/// Recounts everything the indices say from the records themselves: the counts never drift, and
/// no index holds more than twice its members in stale entries (and the slack).
fn assert_indices_agree(store: &InProcessTasks) {
    let records = store.records();
    let at = records.counted_at;
    let all = || records.map.values().map(|entry| &entry.record);
    let live: Vec<&TaskRecord> = all().filter(|r| r.live(at)).collect();
    assert_eq!(records.live, live.len());
    let mut by_owner: HashMap<Option<String>, usize> = HashMap::new();
    for r in &live {
        *by_owner.entry(r.owner.clone()).or_default() += 1;
    }
    assert_eq!(records.live_by_owner, by_owner);
    let written = |entry: &Entry, mark: &Mark| entry.stamp == mark.2;
    let ended: BTreeSet<(u64, String)> = all().filter(|r| !r.live(at)).map(|r| (r.updated_ms, r.id.clone())).collect();
    let ended_index =
        valid(records.ended.iter().map(|m| &m.0), |e, m| written(e, m) && !live_at(&e.record, at), &records);
    assert_eq!(ended_index, ended);
    let running: BTreeSet<(u64, String)> =
        all().filter(|r| !r.status.is_terminal()).map(|r| (live_until_ms(r), r.id.clone())).collect();
    // Every running record has exactly one valid entry, in `live_until` or in `lapsed`.
    let live_index: Vec<&Mark> = records
        .live_until
        .iter()
        .map(|m| &m.0)
        .filter(|m| records.map.get(&m.1).is_some_and(|e| written(e, m) && live_at(&e.record, at)))
        .collect();
    let lapsed_index: Vec<&Mark> = records
        .lapsed
        .iter()
        .filter(|m| {
            records
                .map
                .get(&m.1)
                .is_some_and(|e| written(e, m) && !e.record.status.is_terminal() && !live_at(&e.record, at))
        })
        .collect();
    assert_eq!(live_index.len() + lapsed_index.len(), running.len());
    assert_eq!(records.running, running.len());
    let running_index: BTreeSet<(u64, String)> =
        live_index.iter().chain(&lapsed_index).map(|(at, id, _)| (*at, id.to_string())).collect();
    assert_eq!(running_index, running);
    let expiries: BTreeSet<(u64, String)> = all().map(|r| (expires_ms(r), r.id.clone())).collect();
    let expiry_index =
        valid(records.expiries.iter().map(|m| &m.0), |e, m| e.born == m.2 && expires_ms(&e.record) == m.0, &records);
    assert_eq!(expiry_index, expiries);
    let bound = |members: usize| 2 * members + INDEX_SLACK;
    assert!(records.expiries.len() <= bound(records.map.len()));
    assert!(records.live_until.len() <= bound(records.live));
    assert!(records.lapsed.len() <= bound(records.running - records.live));
    assert!(records.ended.len() <= bound(records.map.len() - records.live));
}

/// The store as a scan of every record keeps it: what [`InProcessTasks`] must decide alike.
struct Scan {
    records: HashMap<String, TaskRecord>,
    max_records: usize,
}

impl Scan {
    fn create(&mut self, record: &TaskRecord, limits: TaskLimits, now: u64) -> Result<(), StoreError> {
        self.records.retain(|_, r| !r.expired(now));
        if self.records.len() >= self.max_records {
            let mut ended: Vec<(u64, String)> = self
                .records
                .values()
                .filter(|r| !r.live(limits.now_ms))
                .map(|r| (r.updated_ms, r.id.clone()))
                .collect();
            ended.sort_unstable();
            let excess = self.records.len() + 1 - self.max_records;
            for (_, id) in ended.into_iter().take(excess) {
                self.records.remove(&id);
            }
            if self.records.len() >= self.max_records {
                return Err(StoreError::TaskCap { cap: self.max_records, per_principal: false });
            }
        }
        let live: Vec<&TaskRecord> = self.records.values().filter(|r| r.live(limits.now_ms)).collect();
        let mine = live.iter().filter(|r| r.owner == record.owner).count();
        if live.len() >= limits.max_live {
            return Err(StoreError::TaskCap { cap: limits.max_live, per_principal: false });
        }
        if mine >= limits.max_live_per_principal {
            return Err(StoreError::TaskCap { cap: limits.max_live_per_principal, per_principal: true });
        }
        self.records.insert(record.id.clone(), record.clone());
        Ok(())
    }

    fn save(&mut self, record: &TaskRecord) -> bool {
        match self.records.get_mut(&record.id) {
            Some(stored) if !stored.status.is_terminal() => {
                *stored = record.clone();
                true
            }
            _ => false,
        }
    }
}

/// Drives the store and [`Scan`] through the same random creates, saves (status changes,
/// renewed and lapsed leases) and clock moves, and compares every decision and a sample of
/// lookups after each step.
/// Returns how many creates left expired records for later ones to sweep.
async fn model_check(seed: u64, max_records: usize, max_live: usize, per_principal: usize) -> usize {
    const OWNERS: [Option<&str>; 4] = [None, Some("a"), Some("b"), Some("c")];
    const STATUSES: [TaskStatus; 5] = TaskStatus::ALL;
    let clock = ManualClock::new();
    let store = InProcessTasks::new().clock(Arc::new(clock.clone())).max_records(max_records);
    let mut scan = Scan { records: HashMap::new(), max_records };
    // The last record written of every task ever accepted, to tell which are expired.
    let mut known: HashMap<String, TaskRecord> = HashMap::new();
    let mut ids: Vec<String> = Vec::new();
    let mut rng = Rng(seed);
    let (mut accepted, mut refused, mut saved, mut lingered) = (0, 0, 0, 0);
    for step in 0..4_000 {
        let now = millis(clock.now());
        match rng.below(100) {
            0..45 => {
                let id = format!("t{step}");
                let owner = OWNERS[rng.below(4) as usize];
                let new = task(&id, owner, now, 20 + rng.below(300), 1 + rng.below(150));
                // Callers may count a moment earlier than the store's clock reads.
                let at = now - rng.below(3);
                let limits = limits(max_live, per_principal, at);
                let expected = scan.create(&new, limits, now);
                assert_eq!(store.create(&new, limits).await, expected, "seed {seed} step {step}: create {id}");
                if store.records().map.len() > scan.records.len() {
                    lingered += 1;
                }
                if expected.is_ok() {
                    accepted += 1;
                    known.insert(id.clone(), new);
                    ids.push(id);
                } else {
                    refused += 1;
                }
            }
            45..80 if !ids.is_empty() => {
                // Among the latest tasks: most older ones have expired. An expired record may
                // linger in the store until swept, where the scan dropped it: left alone.
                let id = &ids[ids.len() - 1 - rng.below(ids.len().min(30) as u64) as usize];
                let mut next = known[id].clone();
                if !next.expired(now) {
                    // Mostly still running, so that tasks live long enough to be saved again.
                    next.status = STATUSES.get(rng.below(9) as usize).copied().unwrap_or(TaskStatus::Working);
                    next.updated_ms = now;
                    match rng.below(3) {
                        0 => next.lease_until_ms = now + 1 + rng.below(150),
                        1 => next.lease_until_ms = now.saturating_sub(rng.below(20)),
                        _ => {}
                    }
                    let expected = scan.save(&next);
                    assert_eq!(store.save(&next).await.unwrap(), expected, "seed {seed} step {step}: save {id}");
                    if expected {
                        saved += 1;
                        known.insert(id.clone(), next);
                    }
                }
            }
            _ => clock.advance(Duration::from_millis(if rng.below(50) == 0 { 400 } else { rng.below(25) })),
        }
        assert_indices_agree(&store);
        let now = millis(clock.now());
        for i in 0..4.min(ids.len()) {
            let among = if i % 2 == 0 { ids.len().min(30) } else { ids.len() };
            let id = &ids[ids.len() - 1 - rng.below(among as u64) as usize];
            let view = store.load(id).await.unwrap().map(|view| view.record);
            if known[id].expired(now) {
                assert!(view.is_none() || view.as_ref() == Some(&known[id]), "seed {seed} step {step}: {id}");
            } else {
                assert_eq!(view.as_ref(), scan.records.get(id), "seed {seed} step {step}: load {id}");
            }
        }
    }
    // The run went through every branch, not just one.
    assert!(accepted > 500 && refused > 50 && saved > 300, "{accepted} accepted, {refused} refused, {saved} saved");
    lingered
}

#[tokio::test]
async fn past_its_bound_the_store_drops_ended_tasks_never_live_ones() {
    let store = InProcessTasks::new().max_records(2);
    let now = millis(SystemClock.now());
    let limits = TaskLimits { max_live: 100, max_live_per_principal: 100, now_ms: now };
    let mut first = record("t1", now);
    store.create(&first, limits).await.unwrap();
    store.create(&record("t2", now), limits).await.unwrap();
    let refused = store.create(&record("t3", now), limits).await.unwrap_err();
    assert_eq!(refused, StoreError::TaskCap { cap: 2, per_principal: false });
    first.status = TaskStatus::Completed;
    assert!(store.save(&first).await.unwrap());
    store.create(&record("t3", now), limits).await.unwrap();
    assert!(store.load("t1").await.unwrap().is_none());
    assert!(store.load("t2").await.unwrap().is_some() && store.load("t3").await.unwrap().is_some());
}

#[tokio::test]
async fn the_store_decides_as_a_scan_of_every_record_would() {
    // Small: the bound on records is reached often, and ended tasks make room.
    for seed in [0x9e37_79b9_7f4a_7c15, 7, 0xdead_beef] {
        model_check(seed, 12, 8, 3).await;
    }
    // Larger: expired records outnumber what one create sweeps, and linger a while.
    for seed in [42, 0x1234_5678] {
        let lingered = model_check(seed, 100, 20, 8).await;
        assert!(lingered > 2, "seed {seed}: {lingered} creates left expired records behind");
    }
}

#[tokio::test]
async fn live_caps_hold_and_free_when_a_task_ends_or_its_lease_passes() {
    let store = InProcessTasks::new().clock(Arc::new(ManualClock::new()));
    let now = millis(SystemClock.now());
    let caps = |at| limits(3, 2, now + at);
    let mut a1 = task("a1", Some("alice"), now, 60_000, 1_000);
    let mut a2 = task("a2", Some("alice"), now, 60_000, 1_000);
    store.create(&a1, caps(0)).await.unwrap();
    store.create(&a2, caps(0)).await.unwrap();
    let per_principal = StoreError::TaskCap { cap: 2, per_principal: true };
    let total = StoreError::TaskCap { cap: 3, per_principal: false };
    let a3 = task("a3", Some("alice"), now, 60_000, 1_000);
    assert_eq!(store.create(&a3, caps(0)).await, Err(per_principal.clone()));
    store.create(&task("b1", Some("bob"), now, 60_000, 5_000), caps(0)).await.unwrap();
    assert_eq!(store.create(&task("n1", None, now, 60_000, 5_000), caps(0)).await, Err(total.clone()));
    // A task that ends frees its place, for its owner and in total.
    a1.status = TaskStatus::Completed;
    assert!(store.save(&a1).await.unwrap());
    store.create(&a3, caps(0)).await.unwrap();
    assert_eq!(store.create(&task("n1", None, now, 60_000, 5_000), caps(0)).await, Err(total.clone()));
    // A lease that passes frees it too, with no save: a2 and a3 stop being live at +1000.
    store.create(&task("n1", None, now, 60_000, 5_000), caps(1_000)).await.unwrap();
    store.create(&task("a4", Some("alice"), now, 60_000, 9_000), caps(1_000)).await.unwrap();
    // Renewed while still running, a lapsed task counts again: four live, over the total.
    a2.lease_until_ms = now + 10_000;
    a2.updated_ms = now + 1_000;
    assert!(store.save(&a2).await.unwrap());
    assert_indices_agree(&store);
    let a5 = task("a5", Some("alice"), now, 60_000, 5_000);
    assert_eq!(store.create(&a5, caps(1_000)).await, Err(total.clone()));
    // Past b1's and n1's leases (+5000), alice's two remain live: her cap, not the total's.
    assert_eq!(store.create(&a5, caps(5_000)).await, Err(per_principal));
    store.create(&task("b2", Some("bob"), now, 60_000, 9_000), caps(5_000)).await.unwrap();
    assert_indices_agree(&store);
}

#[tokio::test]
async fn room_is_made_from_expired_then_least_recently_changed_ended_tasks() {
    let clock = ManualClock::new();
    let store = InProcessTasks::new().clock(Arc::new(clock.clone())).max_records(4);
    let now = millis(clock.now());
    let caps = |at| limits(100, 100, now + at);
    // Ended in the order t2, t1, t3: t3 expires first, though it changed last.
    for (id, ttl, changed) in [("t1", 60_000, 20), ("t2", 60_000, 10), ("t3", 50, 30)] {
        let mut t = task(id, None, now, ttl, 30_000);
        store.create(&t, caps(0)).await.unwrap();
        t.status = TaskStatus::Failed;
        t.updated_ms = now + changed;
        assert!(store.save(&t).await.unwrap());
    }
    store.create(&task("live", None, now, 60_000, 30_000), caps(0)).await.unwrap();
    clock.advance(Duration::from_millis(100));
    let gone = |id: &'static str| {
        let store = &store;
        async move { store.load(id).await.unwrap().is_none() }
    };
    store.create(&task("n1", None, now, 60_000, 30_000), caps(100)).await.unwrap();
    assert!(gone("t3").await && !gone("t1").await && !gone("t2").await);
    store.create(&task("n2", None, now, 60_000, 30_000), caps(100)).await.unwrap();
    assert!(gone("t2").await && !gone("t1").await);
    store.create(&task("n3", None, now, 60_000, 30_000), caps(100)).await.unwrap();
    assert!(gone("t1").await);
    // Only live tasks left: nothing is dropped, the new one is refused.
    let refused = store.create(&task("n4", None, now, 60_000, 30_000), caps(100)).await;
    assert_eq!(refused, Err(StoreError::TaskCap { cap: 4, per_principal: false }));
    assert!(!gone("live").await && !gone("n3").await);
    assert_indices_agree(&store);
}

#[tokio::test]
async fn expired_records_are_swept_a_few_per_create() {
    let clock = ManualClock::new();
    let store = InProcessTasks::new().clock(Arc::new(clock.clone()));
    let now = millis(clock.now());
    for i in 0..100 {
        store.create(&task(&format!("old-{i}"), None, now, 1, 1), limits(1000, 1000, now)).await.unwrap();
    }
    clock.advance(Duration::from_millis(5));
    let now = now + 5;
    store.create(&task("new", None, now, 60_000, 30_000), limits(1000, 1000, now)).await.unwrap();
    assert_eq!(store.records().map.len(), 101 - SWEEP_BUDGET);
    // An expired record not swept yet is still found: the engine answers that it expired.
    let lingering = store.load("old-99").await.unwrap().unwrap();
    assert!(lingering.record.expired(now));
    for i in 0..3 {
        store.create(&task(&format!("new-{i}"), None, now, 60_000, 30_000), limits(1000, 1000, now)).await.unwrap();
    }
    assert_eq!(store.records().map.len(), 4, "every expired record is gone after a few creates");
    assert!(store.load("old-99").await.unwrap().is_none());
    assert_indices_agree(&store);
}

/// The store's own `cancel_requested` says what `load` says in `cancel_requested` (what the
/// trait's default reads), for a task before and after `tasks/cancel` and for an unknown id.
#[tokio::test]
async fn cancel_requested_reads_what_load_reads() {
    let store = InProcessTasks::new();
    let now = millis(SystemClock.now());
    store.create(&record("t1", now), limits(10, 10, now)).await.unwrap();
    let loaded = |id: &'static str| {
        let store = &store;
        async move { store.load(id).await.unwrap().is_some_and(|view| view.cancel_requested) }
    };
    for id in ["t1", "unknown"] {
        assert!(!store.cancel_requested(id).await.unwrap(), "{id}");
        assert!(!loaded(id).await, "{id}");
    }
    store.cancel("t1").await.unwrap();
    assert!(store.cancel_requested("t1").await.unwrap());
    assert!(loaded("t1").await);
    assert!(!store.cancel_requested("unknown").await.unwrap());
}

/// A task written over and over (each save leaves its old index entries stale), and counts moved
/// back and forth across its lease (each crossing pushes entries again), never grows the indices
/// past twice their members: they are compacted, and the decisions stay those of a scan.
#[tokio::test]
async fn rewriting_a_task_keeps_its_indices_bounded() {
    let clock = ManualClock::new();
    let store = InProcessTasks::new().clock(Arc::new(clock.clone()));
    let now = millis(clock.now());
    let mut hot = task("hot", Some("mallory"), now, 3_600_000, 100);
    store.create(&hot, limits(1000, 1000, now)).await.unwrap();
    let mut longest = 0;
    for step in 0..20_000u64 {
        // The lease moves around `now + 100`: live at the counts' time, then lapsed, then live.
        hot.lease_until_ms = now + 95 + step % 10;
        hot.updated_ms = now + step % 7;
        assert!(store.save(&hot).await.unwrap());
        if step % 50 == 0 {
            // A create moves the counts across the lease, forward then back.
            let at = now + 90 + step % 20;
            let id = format!("n{step}");
            store.create(&task(&id, None, now, 3_600_000, 1), limits(1000, 1000, at)).await.unwrap();
        }
        let records = store.records();
        longest = longest.max(records.live_until.len() + records.lapsed.len() + records.ended.len());
        drop(records);
        if step % 997 == 0 {
            assert_indices_agree(&store);
        }
    }
    assert_indices_agree(&store);
    // 401 records (the other 400 lapsed): each index within twice its members and the slack,
    // where 20,000 saves would otherwise have left 20,000 stale entries.
    let records = store.records();
    assert_eq!(records.map.len(), 401);
    assert!(longest <= 4 * records.map.len() + 3 * INDEX_SLACK, "{longest} entries for {} records", records.map.len());
}

/// Whether `future` is ready on its first poll (a wake-up it was armed for has already landed).
fn ready_now(future: &mut StoreFuture<'_, ()>) -> bool {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    future.as_mut().poll(&mut cx).is_ready()
}

/// A watch is armed when it is taken, not when first polled: an answer, a cancel request or a
/// save landing after the call and before any poll resolves it (the engine reads the record in
/// between), one landing before the call does not, a save the store refuses (the task ended)
/// does not, and an unknown task is not watched.
#[tokio::test]
async fn a_watch_sees_what_lands_after_it_is_taken() {
    let store = InProcessTasks::new();
    let now = millis(SystemClock.now());
    let task = record("t1", now);
    store.create(&task, limits(10, 10, now)).await.unwrap();
    assert!(store.watch("unknown").is_none());

    let mut before = store.watch("t1").unwrap();
    assert!(!ready_now(&mut before), "nothing has landed yet");
    store.answer("t1", Map::from_iter([("k".to_owned(), Value::Bool(true))])).await.unwrap();
    assert!(ready_now(&mut before), "the answer landed after the watch was taken");
    let mut after = store.watch("t1").unwrap();
    assert!(!ready_now(&mut after), "the answer landed before this watch was taken");

    let mut saved = store.watch("t1").unwrap();
    assert!(store.save(&task).await.unwrap());
    assert!(ready_now(&mut saved));
    let mut cancelled = store.watch("t1").unwrap();
    store.cancel("t1").await.unwrap();
    assert!(ready_now(&mut cancelled));

    let ended = TaskRecord { status: TaskStatus::Completed, ..task.clone() };
    assert!(store.save(&ended).await.unwrap());
    let mut refused = store.watch("t1").unwrap();
    assert!(!store.save(&task).await.unwrap(), "a terminal record is not overwritten");
    assert!(!ready_now(&mut refused), "a refused save changed nothing");
}
