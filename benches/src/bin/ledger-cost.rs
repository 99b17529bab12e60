//! What the engine's bookkeeping costs per round and per flow, on one store: the figures of
//! BENCHMARKS.md's "The flow ledger's cost", measured the same way on two versions of the engine
//! (scripts/ledger-cost.sh builds this file against an older checkout too).
//!
//! ```text
//! ledger-cost --store memory|redis://127.0.0.1:6390 --case CASE --iterations N
//! ```
//!
//! The flow is the one of `benches/benches/store.rs` (`benches/src/ledger_flow.rs`): a form, a `once`,
//! a second form. Cases:
//!
//! - `once_round`: the round that answers the first form and reaches the `once`, replayed (the
//!   value is found, not recomputed);
//! - `final_round`: the round that finishes the flow, replayed (checked against what the flow did);
//! - `flow_once`: a whole new flow each iteration, its three rounds (the `once` runs once);
//! - `flow_plain`: a whole new flow of two rounds with no `once`: one form, then the result.
//!
//! Each case walks its flow once outside the count, then runs `N` iterations and prints one JSON
//! line: the iterations, the CPU time of the process per iteration (all its threads, from
//! `/proc/self/stat`, nanoseconds) and the wall time per iteration. Under
//! `valgrind --tool=callgrind` two runs of different `N` give instructions per iteration by
//! difference, which the load of a shared machine does not move.

#![allow(clippy::panic, reason = "a bench stops loudly when a round is not what it measures")]

use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use elicit_runtime::server::{Answer, Engine, EngineBuilder, Flow, FlowError, Outcome, Request};

use elicit_runtime::server::store::{InProcessStore, RedisStore};
use elicit_runtime::state::KeyRing;
use serde_json::{Value, json};
use tokio::runtime::Runtime;

// The flow, shared with `benches/store.rs`; scripts/ledger-cost.sh copies it along with this file.
#[path = "../ledger_flow.rs"]
mod ledger_flow;

use ledger_flow::{Name, asked, meta, with_once};

// The store as this version of the engine names it. Before the flow ledger it was
// `CompletionStore`, given by `EngineBuilder::completion_store`: scripts/ledger-cost.sh rewrites
// the two lines marked `ledger-cost: store` for such a version.
use elicit_runtime::server::store::Store as BenchStore; // ledger-cost: store
fn with_store(builder: EngineBuilder, store: Arc<dyn BenchStore>) -> EngineBuilder {
    builder.store(store) // ledger-cost: store
}

const USAGE: &str = "usage: ledger-cost --store memory|redis://HOST:PORT \
                     --case once_round|final_round|flow_once|flow_plain --iterations N";

/// One form, then the result: no effect at all.
async fn plain(flow: Flow) -> Result<String, FlowError> {
    let Answer::Accepted(name) = flow.form::<Name>("who").await? else { return Ok("no name".into()) };
    Ok(format!("Hello, {}!", name.name))
}

/// The three ways a case runs its flow.
#[derive(Clone, Copy, PartialEq)]
enum Case {
    OnceRound,
    FinalRound,
    FlowOnce,
    FlowPlain,
}

/// One round of `tool`.
async fn round(engine: &Engine, tool: &str, responses: Option<&Value>, state: Option<&str>) -> Outcome<String> {
    let meta = meta();
    let arguments = json!({});
    let request = Request::new("tools/call", tool)
        .arguments(Some(&arguments))
        .meta(Some(&meta))
        .input_responses(responses)
        .request_state(state);
    let outcome =
        if tool == "plain" { engine.run(&request, plain).await } else { engine.run(&request, with_once).await };
    outcome.unwrap_or_else(|error| panic!("a round failed: {error}"))
}

fn finished(outcome: Outcome<String>) -> String {
    match outcome {
        Outcome::Complete(text) => text,
        Outcome::InputRequired(_) => panic!("expected the result, got another ask"),
    }
}

fn who() -> Value {
    json!({"who": {"action": "accept", "content": {"name": "Ada"}}})
}

fn sure() -> Value {
    json!({"sure": {"action": "accept", "content": {"sure": true}}})
}

/// A whole new flow of `with_once`: three rounds.
async fn flow_once(engine: &Engine) {
    let first = asked(round(engine, "once", None, None).await);
    let second = asked(round(engine, "once", Some(&who()), Some(&first)).await);
    let text = finished(round(engine, "once", Some(&sure()), Some(&second)).await);
    assert_eq!(text, "Ada BK-3");
}

/// A whole new flow of `plain`: two rounds.
async fn flow_plain(engine: &Engine) {
    let first = asked(round(engine, "plain", None, None).await);
    assert_eq!(finished(round(engine, "plain", Some(&who()), Some(&first)).await), "Hello, Ada!");
}

/// CPU time of this process so far (user + system, every thread), in nanoseconds: `/proc/self/stat`
/// counts it in clock ticks of 10 ms (Linux's `USER_HZ`, 100 on every architecture it exports it
/// for), so a timed run should last a second or more.
fn cpu_ns() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // The fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat.rsplit_once(')').map_or(vec![], |(_, rest)| rest.split_whitespace().collect());
    let ticks = |i: usize| fields.get(i).and_then(|n| n.parse::<u64>().ok()).unwrap_or(0);
    // utime and stime: fields 14 and 15 of the line, 12th and 13th after the name.
    (ticks(11) + ticks(12)) * 10_000_000
}

fn main() {
    let mut store = String::from("memory");
    let mut case = None;
    let mut iterations: u64 = 1000;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().unwrap_or_else(|| exit(&format!("{flag} needs a value\n{USAGE}")));
        match flag.as_str() {
            "--store" => store = value,
            "--case" => {
                case = Some(match value.as_str() {
                    "once_round" => Case::OnceRound,
                    "final_round" => Case::FinalRound,
                    "flow_once" => Case::FlowOnce,
                    "flow_plain" => Case::FlowPlain,
                    _ => exit(&format!("--case {value}: unknown\n{USAGE}")),
                })
            }
            "--iterations" => {
                iterations = value.parse().unwrap_or_else(|_| exit(&format!("--iterations {value}: a number")))
            }
            _ => exit(&format!("{flag}: unknown\n{USAGE}")),
        }
    }
    let case = case.unwrap_or_else(|| exit(USAGE));
    let rt: Runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let store_arc: Arc<dyn BenchStore> = if store == "memory" {
        Arc::new(InProcessStore::new())
    } else {
        // A prefix of its own per run: nothing another run left behind is read.
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        let prefix = format!("ledger-cost-{}-{now}", std::process::id());
        let connect = RedisStore::builder(store.as_str()).key_prefix(prefix).connect();
        Arc::new(rt.block_on(connect).unwrap_or_else(|error| exit(&format!("{store}: {error}"))))
    };
    let engine = with_store(Engine::builder("ledger-cost", KeyRing::generate()), store_arc).build();

    let (cpu, wall) = rt.block_on(async {
        // Outside the count: a flow walked to its second form, whose first state `once_round`
        // sends again (the flow is not finished, so the round reaches the `once` and asks); a
        // flow walked to its end, whose last state `final_round` sends again (once a flow has
        // finished, any earlier state of it is answered with its result).
        let first = asked(round(&engine, "once", None, None).await);
        asked(round(&engine, "once", Some(&who()), Some(&first)).await);
        let walked = asked(round(&engine, "once", None, None).await);
        let second = asked(round(&engine, "once", Some(&who()), Some(&walked)).await);
        finished(round(&engine, "once", Some(&sure()), Some(&second)).await);
        flow_once(&engine).await;
        flow_plain(&engine).await;
        let (cpu, wall) = (cpu_ns(), Instant::now());
        for _ in 0..iterations {
            match case {
                Case::OnceRound => {
                    asked(round(&engine, "once", Some(&who()), Some(&first)).await);
                }
                Case::FinalRound => {
                    finished(round(&engine, "once", Some(&sure()), Some(&second)).await);
                }
                Case::FlowOnce => flow_once(&engine).await,
                Case::FlowPlain => flow_plain(&engine).await,
            }
        }
        (cpu_ns() - cpu, wall.elapsed())
    });
    let per = |total: u128| total as f64 / iterations.max(1) as f64;
    println!(
        "{}",
        json!({
            "iterations": iterations,
            "cpu_ns_per_iteration": per(u128::from(cpu)),
            "wall_ns_per_iteration": per(wall.as_nanos()),
        })
    );
}

fn exit(message: &str) -> ! {
    eprintln!("ledger-cost: {message}");
    std::process::exit(2)
}
