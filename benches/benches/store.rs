//! The completion store at scale, and the cost of exactly-once bookkeeping per round.
//!
//! - `store/*`: `register`, `status` and `take` on an `InProcessStore` holding
//!   `ELICIT_BENCH_STORE_RECORDS` live records (default 500,000);
//! - `round/*`: one replayed engine round of a flow that asks, runs a `once`, and asks again —
//!   the round that passes the `once` (`once_round`) and the round that finishes the flow
//!   (`final_round`) — on the in-process store;
//! - with `ELICIT_BENCH_REDIS` set to a `redis://` URL (scripts/bench.sh starts a redis-server on
//!   127.0.0.1), the same on a `RedisStore` (`redis_store/*`, `redis_round/*`).
//!
//! The store is named by its traits (`Store`, `UrlCompletions`); against a version from before the
//! flow ledger, read `CompletionStore` for `Store` and `completion_store` for `store`.

#![allow(clippy::panic, reason = "a bench stops loudly when a round is not what it measures")]

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use elicit_runtime::server::{Engine, InProcessStore, Outcome, RedisStore, Request, Store};
use elicit_runtime::state::KeyRing;
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

    if let Ok(url) = std::env::var("ELICIT_BENCH_REDIS") {
        let connect =
            || rt.block_on(RedisStore::builder(url.as_str()).key_prefix("bench").connect()).expect("redis connects");
        let store: Arc<dyn Store> = Arc::new(connect());
        fill(&rt, &store, n, 256);
        store_ops(c, "redis_store", &rt, store, n);
        rounds(c, "redis_round", &rt, Arc::new(connect()));
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
