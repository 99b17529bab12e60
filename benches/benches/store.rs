//! The completion store at scale, and the cost of exactly-once bookkeeping per round.
//!
//! - `store/*`: `register`, `status` and `take` on an `InProcessStore` holding
//!   `ELICIT_BENCH_STORE_RECORDS` live records (default 500,000);
//! - `round/*`: one replayed engine round of a flow that asks, runs a `once`, and asks again —
//!   the round that passes the `once` (`once_round`) and the round that finishes the flow
//!   (`final_round`) — on the in-process store;
//! - `round_growth/once_round_N`: the round that passes the `once`, replayed, with `N` live flow
//!   records already in the store (`ELICIT_BENCH_GROWTH_RECORDS`, ascending, comma-separated;
//!   default 10,000 and 1,000,000): how the cost of a round grows with the ledger. Each record is
//!   the one a finished two-round flow leaves (the commonest record: every flow of more than one
//!   round leaves its finish for as long as its states live), written through the store's own
//!   `FlowLedger::finish` as the engine writes it: a fresh 128-bit flow id, the answers of one
//!   form, a one-hour TTL (so none expires during the run). The records are added to one store
//!   from one size to the next, many writes in flight at a time; how long each step took is
//!   printed on stderr and, with `ELICIT_BENCH_PREFILL_OUT=FILE`, written to FILE as JSON;
//! - `sqlite_round/*`: the same replayed rounds on a `SqliteStore` (a file in the temporary
//!   folder, removed after; its defaults: WAL, synchronous NORMAL), beside `round/*`;
//! - with `ELICIT_BENCH_REDIS` set to a `redis://` URL (scripts/bench.sh starts a redis-server on
//!   127.0.0.1), the same on a `RedisStore` (`redis_store/*`, `redis_round/*`,
//!   `redis_round_growth/*`; the growth records under a key prefix of their own).
//!
//! The store is named by its traits (`Store`, `UrlCompletions`); against a version from before the
//! flow ledger, read `CompletionStore` for `Store` and `completion_store` for `store`.

#![allow(clippy::panic, reason = "a bench stops loudly when a round is not what it measures")]

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use criterion::{Criterion, criterion_group, criterion_main};
use elicit_runtime::server::store::{ClaimToken, Finish, FlowOwner, InProcessStore, RedisStore, SqliteStore, Store};
use elicit_runtime::server::{Engine, Outcome, Request};
use elicit_runtime::state::KeyRing;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::runtime::Runtime;

#[path = "../src/ledger_flow.rs"]
mod ledger_flow;

use ledger_flow::{asked, meta, with_once};

fn records() -> usize {
    std::env::var("ELICIT_BENCH_STORE_RECORDS").ok().and_then(|n| n.parse().ok()).unwrap_or(500_000)
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime")
}

const TTL: Duration = Duration::from_secs(3600);

/// Fills `store` with `n` pending records, `parallel` registrations in flight at a time.
fn fill(rt: &Runtime, store: &Arc<dyn Store>, n: usize, parallel: usize) {
    rt.block_on(async {
        let mut set = tokio::task::JoinSet::new();
        for i in 0..n {
            if set.len() >= parallel {
                set.join_next().await;
            }
            let store = store.clone();
            set.spawn(async move { store.register(&format!("live-{i}"), TTL, None).await.expect("register") });
        }
        while set.join_next().await.is_some() {}
    });
}

fn store_ops(c: &mut Criterion, group_name: &str, rt: &Runtime, store: Arc<dyn Store>, n: usize) {
    let mut group = c.benchmark_group(group_name);
    group.sample_size(20).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_millis(500));
    let next = AtomicU64::new(0);
    let fresh = || format!("bench-{}", next.fetch_add(1, Ordering::Relaxed));
    // `register` of a new step (released again, so the store stays at n live records).
    group.bench_function(format!("register_{n}"), |b| {
        b.iter(|| {
            let id = fresh();
            rt.block_on(store.register(&id, TTL, None)).expect("register");
            store.release(&id);
        })
    });
    let mut probe = 0usize;
    group.bench_function(format!("status_{n}"), |b| {
        b.iter(|| {
            probe = (probe + 7919) % n;
            black_box(rt.block_on(store.status(&format!("live-{probe}"))).expect("status"))
        })
    });
    // A step's life after its page: `complete`, then the `take` that consumes it.
    group.bench_function(format!("complete_take_{n}"), |b| {
        b.iter_batched(
            || {
                let id = fresh();
                rt.block_on(store.register(&id, TTL, None)).expect("register");
                id
            },
            |id| {
                rt.block_on(store.complete(&id, json!({"approved": true}), None)).expect("complete");
                black_box(rt.block_on(store.take(&id, Duration::ZERO)).expect("take"))
            },
            criterion::BatchSize::SmallInput,
        )
    });
    group.finish();
}

/// The live flow records before each growth round, ascending.
fn growth_sizes() -> Vec<usize> {
    let sizes = std::env::var("ELICIT_BENCH_GROWTH_RECORDS").unwrap_or_else(|_| "10000,1000000".to_owned());
    let mut sizes: Vec<usize> = sizes.split(',').filter_map(|n| n.trim().parse().ok()).collect();
    sizes.sort_unstable();
    sizes.dedup();
    sizes
}

/// Whom the prefilled records count against: the prefill stands for many people's flows, held
/// here by one owner whose quota the growth stores raise to their cap.
const ANON: FlowOwner = FlowOwner::Anonymous;

/// How long a ledger record lives: longer than any run, so none expires while it is measured.
const LEDGER_TTL: Duration = Duration::from_secs(3600);

/// Adds `count` live flow records to `store`, `parallel` writes in flight at a time: each the
/// finish of a finished two-round flow, as the engine records it (`Engine::finish` calls
/// `FlowLedger::finish` with the flow's id and its answers).
fn prefill_ledger(rt: &Runtime, store: &Arc<dyn Store>, count: usize, parallel: usize) {
    rt.block_on(async {
        let mut set = tokio::task::JoinSet::new();
        let finish = |store: Arc<dyn Store>| async move {
            // A flow id as the engine mints it: 128 random bits, URL-safe (a claim token's form).
            let flow = ClaimToken::mint();
            let answers = RawValue::from_string(r#"{"who":{"action":"accept","content":{"name":"Ada"}}}"#.to_owned());
            let answers = answers.unwrap_or_else(|e| panic!("the prefilled answers are JSON: {e}"));
            match store.finish(flow.as_str(), &ANON, &answers, &[], LEDGER_TTL).await {
                Ok(Finish::Recorded) => {}
                other => panic!("a prefilled flow's finish was not recorded: {other:?}"),
            }
        };
        for _ in 0..count {
            if set.len() >= parallel
                && let Some(joined) = set.join_next().await
            {
                joined.expect("a finish task");
            }
            set.spawn(finish(store.clone()));
        }
        while let Some(joined) = set.join_next().await {
            joined.expect("a finish task");
        }
    });
}

/// How long it took to bring each store to each size (`ELICIT_BENCH_PREFILL_OUT`).
#[derive(Default)]
struct Prefills(Vec<Value>);

impl Prefills {
    fn note(&mut self, store: &str, records: usize, added: usize, parallel: usize, took: Duration) {
        let rate = added as f64 / took.as_secs_f64().max(1e-9);
        eprintln!(
            "store bench: {store}: {added} ledger records added ({records} live) in {:.1} s, {rate:.0} a second, {parallel} in flight",
            took.as_secs_f64()
        );
        self.0.push(json!({
            "store": store, "records": records, "added": added, "parallel": parallel,
            "seconds": took.as_secs_f64(), "per_second": rate,
        }));
        if let Ok(path) = std::env::var("ELICIT_BENCH_PREFILL_OUT") {
            let written = std::fs::write(&path, format!("{:#}\n", Value::Array(self.0.clone())));
            written.unwrap_or_else(|e| panic!("{path}: {e}"));
        }
    }
}

/// The round that reaches the `once`, replayed, with each of `sizes` live flow records in
/// `store` (filled up from one size to the next, `parallel` writes in flight).
fn growth_rounds(
    c: &mut Criterion,
    group_name: &str,
    rt: &Runtime,
    store: Arc<dyn Store>,
    parallel: usize,
    prefills: &mut Prefills,
) {
    let engine = Engine::builder("bench-once", KeyRing::generate()).store(store.clone()).build();
    let who = json!({"who": {"action": "accept", "content": {"name": "Ada"}}});
    let mut live = 0;
    for size in growth_sizes() {
        let started = Instant::now();
        prefill_ledger(rt, &store, size - live, parallel);
        prefills.note(group_name, size, size - live, parallel, started.elapsed());
        live = size;
        // A flow left at its second form, whose first state is sent again (as in `rounds`).
        let first = asked(run(rt, &engine, None, None));
        asked(run(rt, &engine, Some(&who), Some(&first)));
        assert!(matches!(run(rt, &engine, Some(&who), Some(&first)), Outcome::InputRequired(_)));
        let mut group = c.benchmark_group(group_name);
        group.sample_size(30).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_millis(500));
        group.bench_function(format!("once_round_{size}"), |b| {
            b.iter(|| black_box(run(rt, &engine, Some(&who), Some(&first))))
        });
        group.finish();
    }
}

/// Room for the largest growth size and the bench's own flows: the default cap is 1,000,000.
fn growth_cap() -> usize {
    growth_sizes().last().copied().unwrap_or(0) + 10_000
}

fn run(rt: &Runtime, engine: &Engine, responses: Option<&Value>, state: Option<&str>) -> Outcome<String> {
    let meta = meta();
    let arguments = json!({});
    let request = Request::new("tools/call", "count")
        .arguments(Some(&arguments))
        .meta(Some(&meta))
        .input_responses(responses)
        .request_state(state);
    rt.block_on(engine.run(&request, with_once)).expect("a round")
}

fn rounds(c: &mut Criterion, group_name: &str, rt: &Runtime, store: Arc<dyn Store>) {
    let engine = Engine::builder("bench-once", KeyRing::generate()).store(store).build();
    let who = json!({"who": {"action": "accept", "content": {"name": "Ada"}}});
    let sure = json!({"sure": {"action": "accept", "content": {"sure": true}}});
    // Two flows: one left at its second form, whose first state the `once` round sends again (a
    // finished flow answers any of its states with its result, so that round would not reach the
    // `once`); one walked to its end, whose last state the final round sends again.
    let first = asked(run(rt, &engine, None, None));
    asked(run(rt, &engine, Some(&who), Some(&first)));
    let walked = asked(run(rt, &engine, None, None));
    let second = asked(run(rt, &engine, Some(&who), Some(&walked)));
    assert!(matches!(run(rt, &engine, Some(&sure), Some(&second)), Outcome::Complete(_)));
    assert!(matches!(run(rt, &engine, Some(&who), Some(&first)), Outcome::InputRequired(_)));

    let mut group = c.benchmark_group(group_name);
    group.sample_size(30).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_millis(500));
    // The round that reaches the `once` (replayed: the value is found, not recomputed).
    group.bench_function("once_round", |b| b.iter(|| black_box(run(rt, &engine, Some(&who), Some(&first)))));
    // The round that finishes the flow (replayed: its outcome is checked against the record).
    group.bench_function("final_round", |b| b.iter(|| black_box(run(rt, &engine, Some(&sure), Some(&second)))));
    group.finish();
}

fn bench(c: &mut Criterion) {
    let rt = runtime();
    let n = records();
    let store: Arc<dyn Store> = Arc::new(InProcessStore::new());
    fill(&rt, &store, n, 1);
    store_ops(c, "store", &rt, store, n);
    rounds(c, "round", &rt, Arc::new(InProcessStore::new()));
    // The durable store's rounds, beside the in-process ones.
    let dir = std::env::temp_dir().join(format!("elicit-bench-sqlite-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let sqlite = rt.block_on(SqliteStore::open(dir.join("rounds.db"))).expect("the SQLite store opens");
    rounds(c, "sqlite_round", &rt, Arc::new(sqlite));
    let _ = std::fs::remove_dir_all(&dir);
    let mut prefills = Prefills::default();
    let growing: Arc<dyn Store> =
        Arc::new(InProcessStore::new().max_flow_records(growth_cap()).max_flow_records_per_principal(growth_cap()));
    growth_rounds(c, "round_growth", &rt, growing, 1, &mut prefills);

    if let Ok(url) = std::env::var("ELICIT_BENCH_REDIS") {
        let connect =
            || rt.block_on(RedisStore::builder(url.as_str()).key_prefix("bench").connect()).expect("redis connects");
        let store: Arc<dyn Store> = Arc::new(connect());
        fill(&rt, &store, n, 256);
        store_ops(c, "redis_store", &rt, store, n);
        rounds(c, "redis_round", &rt, Arc::new(connect()));
        // A prefix of its own per run: the growth store starts empty, whatever Redis holds.
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        let growing = RedisStore::builder(url.as_str())
            .key_prefix(format!("bench-growth-{}-{now}", std::process::id()))
            .max_flow_records(growth_cap())
            .max_flow_records_per_principal(growth_cap())
            .connect();
        let growing: Arc<dyn Store> = Arc::new(rt.block_on(growing).expect("redis connects"));
        growth_rounds(c, "redis_round_growth", &rt, growing, 256, &mut prefills);
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
