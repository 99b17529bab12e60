//! The end-to-end load generator: a fixed number of concurrent workers doing two-round flows (or
//! plain calls) back to back against one MCP server, in timed trials. Prints one JSON object:
//! the rate of each trial, their median, and latency quantiles.
//!
//! ```text
//! bench-loadgen --url http://127.0.0.1:8931/mcp --mode flow|plain|legacy
//!               [--concurrency 32] [--trials 5] [--seconds 3] [--warmup-seconds 1] [--threads 1]
//! ```
//! Exits with status 1 when any flow or call failed.

use std::time::Duration;

use elicit_benches::e2e::{Client, Mode, median, trial};
use elicit_benches::legacy;
use serde_json::json;

const USAGE: &str = "usage: bench-loadgen --url URL --mode flow|plain|legacy [--concurrency C] [--trials N] [--seconds S] [--warmup-seconds S] [--threads T]";

struct Options {
    url: String,
    mode: Mode,
    concurrency: usize,
    trials: usize,
    seconds: f64,
    warmup: f64,
    threads: usize,
}

fn parse() -> Result<Options, String> {
    let mut options = Options {
        url: String::new(),
        mode: Mode::Flow,
        concurrency: 32,
        trials: 5,
        seconds: 3.0,
        warmup: 1.0,
        threads: 1,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        let number = |v: &str| {
            v.parse::<f64>().ok().filter(|n| *n >= 0.0).ok_or_else(|| format!("{flag} {v}: not a number\n{USAGE}"))
        };
        match flag.as_str() {
            "--url" => options.url = value,
            "--mode" => {
                options.mode = match value.as_str() {
                    "flow" => Mode::Flow,
                    "plain" => Mode::Plain,
                    "legacy" => Mode::Legacy,
                    _ => return Err(format!("--mode {value}: give flow, plain or legacy\n{USAGE}")),
                }
            }
            "--concurrency" => options.concurrency = (number(&value)? as usize).max(1),
            "--trials" => options.trials = (number(&value)? as usize).max(1),
            "--seconds" => options.seconds = number(&value)?.max(0.1),
            "--warmup-seconds" => options.warmup = number(&value)?,
            "--threads" => options.threads = (number(&value)? as usize).max(1),
            _ => return Err(USAGE.to_owned()),
        }
    }
    if options.url.is_empty() {
        return Err(format!("give --url\n{USAGE}"));
    }
    Ok(options)
}

fn main() {
    let options = parse().unwrap_or_else(|e| exit(2, &e));
    let runtime = if options.threads == 1 {
        tokio::runtime::Builder::new_current_thread().enable_all().build()
    } else {
        tokio::runtime::Builder::new_multi_thread().worker_threads(options.threads).enable_all().build()
    };
    let runtime = runtime.unwrap_or_else(|e| exit(2, &format!("tokio: {e}")));
    runtime.block_on(run(options));
}

async fn run(options: Options) {
    let client = Client::new(&options.url).unwrap_or_else(|e| exit(2, &e));
    // One checked flow first: a server that cannot serve it fails fast, with its reason.
    let first = match options.mode {
        Mode::Flow => client.flow("Ada").await,
        Mode::Plain => client.plain().await,
        Mode::Legacy => legacy_flow(&options.url).await,
    };
    if let Err(error) = first {
        exit(1, &format!("bench-loadgen: {} against {}: {error}", options.mode.as_str(), options.url));
    }
    // Every unit the server completed in this run, warm-up included: with the server's CPU time
    // over the same run, the CPU per unit.
    let mut finished = 1;
    if options.warmup > 0.0 {
        finished +=
            trial(&client, options.mode, options.concurrency, Duration::from_secs_f64(options.warmup)).await.finished;
    }
    let mut rates = Vec::new();
    let mut latencies = Vec::new();
    let (mut errors, mut first_error) = (0, None);
    for _ in 0..options.trials {
        let trial = trial(&client, options.mode, options.concurrency, Duration::from_secs_f64(options.seconds)).await;
        rates.push(trial.rate());
        latencies.push((trial.latency(0.5), trial.latency(0.99)));
        errors += trial.errors;
        finished += trial.finished;
        if first_error.is_none() {
            first_error = trial.first_error.clone();
        }
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let report = json!({
        "url": options.url,
        "mode": options.mode.as_str(),
        "concurrency": options.concurrency,
        "trials": options.trials,
        "seconds": options.seconds,
        "rates": rates,
        "median_rate": median(&rates),
        "min_rate": rates.iter().copied().fold(f64::INFINITY, f64::min),
        "max_rate": rates.iter().copied().fold(0.0, f64::max),
        "median_p50_ms": median(&latencies.iter().map(|l| ms(l.0)).collect::<Vec<_>>()),
        "median_p99_ms": median(&latencies.iter().map(|l| ms(l.1)).collect::<Vec<_>>()),
        "finished": finished,
        "errors": errors,
        "first_error": first_error,
    });
    println!("{report}");
    if errors > 0 {
        std::process::exit(1);
    }
}

/// One checked 2025-era flow on a session of its own.
async fn legacy_flow(url: &str) -> Result<(), String> {
    let session = legacy::Session::open(&legacy::http_client()?, url).await?;
    let outcome = session.flow("Ada").await;
    session.close().await;
    outcome
}

fn exit(code: i32, message: &str) -> ! {
    eprintln!("{message}");
    std::process::exit(code)
}
