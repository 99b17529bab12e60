//! One Redis against a Redis Cluster, in one run: what the cluster's extra hop costs a flow.
//!
//! Needs `ELICIT_BENCH_REDIS` (a `redis://` URL) and `ELICIT_BENCH_REDIS_CLUSTER` (a
//! `redis+cluster://` URL); scripts/bench.sh starts both on loopback (a redis-server, and three
//! masters without replicas). Without them it says so and measures nothing.
//!
//! - `cluster_round/{one_node,cluster}_once_round` (criterion): one replayed engine round that
//!   reaches a `once` (its value found in the ledger: a snapshot of the flow's record), as in
//!   `store.rs`'s `redis_round/once_round`;
//! - two-round flows a second (printed, and with `ELICIT_BENCH_CLUSTER_OUT=FILE` written to FILE as
//!   JSON): a flow that asks a form, then runs a `once` and finishes — a claim, a record and a
//!   finish in the store — driven straight through the engine (no HTTP, so the store's share shows),
//!   `CONCURRENCY` flows in flight (default 32), `TRIALS` trials (default 3) of `TRIAL_SECONDS`
//!   (default 3) per store, the stores' trials alternating. The figure is the median trial.

#![allow(clippy::panic, reason = "a bench stops loudly when a round is not what it measures")]

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use elicit_runtime::server::store::{DEFAULT_MAX_RECORDS, RedisStore, Store};
use elicit_runtime::server::{Answer, Engine, Flow, FlowError, Outcome, Request};
use elicit_runtime::state::KeyRing;
use serde_json::{Value, json};
use tokio::runtime::Runtime;

#[path = "../src/ledger_flow.rs"]
mod ledger_flow;

use ledger_flow::{Name, asked, meta, with_once};

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// One round of `engine`'s flow `handler`, with these answers and this state.
async fn round<F, Fut>(engine: &Engine, handler: F, answers: Option<&Value>, state: Option<&str>) -> Outcome<String>
where
    F: FnOnce(Flow) -> Fut,
    Fut: Future<Output = Result<String, FlowError>>,
{
    let (meta, arguments) = (meta(), json!({}));
    let request = Request::new("tools/call", "bench")
        .arguments(Some(&arguments))
        .meta(Some(&meta))
        .input_responses(answers)
        .request_state(state);
    engine.run(&request, handler).await.expect("a round")
}

/// A form, then a `once` and the finish: two rounds.
async fn two_rounds(flow: Flow) -> Result<String, FlowError> {
    let Answer::Accepted(name) = flow.form::<Name>("who").await? else { return Ok("no name".into()) };
    let reference = flow.once("reference", || async { Ok(format!("BK-{}", name.name.len())) }).await?;
    Ok(format!("{} {reference}", name.name))
}

/// The engine on the store at `url`. Every flow of the bench is one anonymous caller's standing
/// for many people's, and each leaves its ledger records for the states' lifetime: one owner's
/// quota (100,000 by default) would refuse flows once a few trials have finished that many, so
/// it is raised to the store's cap.
fn engine(rt: &Runtime, url: &str, prefix: &str) -> Arc<Engine> {
    let store = RedisStore::builder(url).key_prefix(prefix).max_flow_records_per_principal(DEFAULT_MAX_RECORDS);
    let store = rt.block_on(store.connect()).expect("the store connects");
    Arc::new(Engine::builder("bench-cluster", KeyRing::generate()).store(Arc::new(store) as Arc<dyn Store>).build())
}

/// The replayed round that reaches the `once`, on each store.
fn once_rounds(c: &mut Criterion, rt: &Runtime, engines: &[(&str, Arc<Engine>)]) {
    let who = json!({"who": {"action": "accept", "content": {"name": "Ada"}}});
    let mut group = c.benchmark_group("cluster_round");
    group.sample_size(30).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_millis(500));
    for (name, engine) in engines {
        let first = asked(rt.block_on(round(engine, with_once, None, None)));
        assert!(matches!(rt.block_on(round(engine, with_once, Some(&who), Some(&first))), Outcome::InputRequired(_)));
        group.bench_function(format!("{name}_once_round"), |b| {
            b.iter(|| black_box(rt.block_on(round(engine, with_once, Some(&who), Some(&first)))))
        });
    }
    group.finish();
}

/// Two-round flows a second through `engine`: `concurrency` in flight for `seconds`.
fn flows_per_second(rt: &Runtime, engine: &Arc<Engine>, concurrency: u64, seconds: u64) -> f64 {
    let done = Arc::new(AtomicU64::new(0));
    let until = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    rt.block_on(async {
        let mut workers = tokio::task::JoinSet::new();
        for _ in 0..concurrency {
            let (engine, done) = (engine.clone(), done.clone());
            workers.spawn(async move {
                let who = json!({"who": {"action": "accept", "content": {"name": "Ada"}}});
                while Instant::now() < until {
                    let first = asked(round(&engine, two_rounds, None, None).await);
                    match round(&engine, two_rounds, Some(&who), Some(&first)).await {
                        Outcome::Complete(_) => done.fetch_add(1, Ordering::Relaxed),
                        Outcome::InputRequired(_) => panic!("a flow did not finish"),
                    };
                }
            });
        }
        while workers.join_next().await.is_some() {}
    });
    done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

fn bench(c: &mut Criterion) {
    let (Ok(one), Ok(cluster)) = (std::env::var("ELICIT_BENCH_REDIS"), std::env::var("ELICIT_BENCH_REDIS_CLUSTER"))
    else {
        eprintln!("cluster bench: set ELICIT_BENCH_REDIS and ELICIT_BENCH_REDIS_CLUSTER (scripts/bench.sh does)");
        return;
    };
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a runtime");
    let engines = [("one_node", engine(&rt, &one, "bench-one")), ("cluster", engine(&rt, &cluster, "bench-cluster"))];
    once_rounds(c, &rt, &engines);

    let (concurrency, trials, seconds) =
        (setting("CONCURRENCY", 32), setting("TRIALS", 3), setting("TRIAL_SECONDS", 3));
    let mut rates = [Vec::new(), Vec::new()];
    for _ in 0..trials {
        for (i, (_, engine)) in engines.iter().enumerate() {
            rates[i].push(flows_per_second(&rt, engine, concurrency, seconds));
        }
    }
    let [one_node, cluster] = rates.map(median);
    let report = json!({
        "concurrency": concurrency, "trials": trials, "trial_seconds": seconds,
        "one_node_flows_per_second": one_node, "cluster_flows_per_second": cluster,
        "ratio": if one_node > 0.0 { cluster / one_node } else { 0.0 },
    });
    eprintln!("cluster bench: two-round flows/s {report}");
    if let Ok(path) = std::env::var("ELICIT_BENCH_CLUSTER_OUT") {
        std::fs::write(&path, report.to_string()).unwrap_or_else(|e| panic!("{path}: {e}"));
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
