//! The end-to-end load generator: a fixed number of concurrent workers doing two-round flows (or
//! plain calls) back to back against one MCP server, in timed trials. Prints one JSON object:
//! the rate of each trial, their median, latency quantiles, and HTTP requests per unit.
//!
//! ```text
//! bench-loadgen --url http://127.0.0.1:8931/mcp --mode flow|plain|legacy|task
//!               [--concurrency 32] [--trials 5] [--seconds 3] [--warmup-seconds 1] [--threads 1]
//!               [--pid PID] [--against URL [--against-pid PID]]
//! ```
//! `--mode task` runs the flow as a task of the Tasks extension and, in the same run, the same
//! flow as Multi Round-Trip Requests: their warm-ups and trials alternate (task first in odd
//! trials, MRTR first in even ones), and the report holds the task's figures with the MRTR
//! figures under `"mrtr"`. With `--pid` (the server's process id) each mode also gets the server's
//! CPU time over its own warm-up and trials (`/proc/PID/stat`), as `server_cpu_seconds`.
//!
//! `--against URL` (with `--against-pid PID`) measures a second server beside the first, in the
//! same run and the same mode (flow, plain or legacy): each is checked and warmed up, then their
//! trials alternate (the first server first in odd rounds, the second in even ones), so a change
//! in the machine's load while the run goes on falls on both alike. The report holds the second
//! server's figures under `"against"`, and under `"pairs"` each round's two trials compared: the
//! first's rate ÷ the second's, and (with both pids) the first's server CPU per unit ÷ the
//! second's, each over that trial alone.
//!
//! Exits with status 1 when any flow or call failed.

use std::time::Duration;

use elicit_benches::e2e::{Client, Mode, Trial, median, trial};
use elicit_benches::legacy;
use serde_json::json;

const USAGE: &str = "usage: bench-loadgen --url URL --mode flow|plain|legacy|task [--concurrency C] [--trials N] [--seconds S] [--warmup-seconds S] [--threads T] [--pid PID] [--against URL [--against-pid PID]]";

struct Options {
    url: String,
    mode: Mode,
    concurrency: usize,
    trials: usize,
    seconds: f64,
    warmup: f64,
    threads: usize,
    pid: Option<u32>,
    /// The server measured beside the first (`--against`), and its process id.
    against: Option<String>,
    against_pid: Option<u32>,
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
        pid: None,
        against: None,
        against_pid: None,
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
                    "task" => Mode::Task,
                    _ => return Err(format!("--mode {value}: give flow, plain, legacy or task\n{USAGE}")),
                }
            }
            "--concurrency" => options.concurrency = (number(&value)? as usize).max(1),
            "--trials" => options.trials = (number(&value)? as usize).max(1),
            "--seconds" => options.seconds = number(&value)?.max(0.1),
            "--warmup-seconds" => options.warmup = number(&value)?,
            "--threads" => options.threads = (number(&value)? as usize).max(1),
            "--pid" => options.pid = Some(value.parse().map_err(|_| format!("--pid {value}: not a pid\n{USAGE}"))?),
            "--against" => options.against = Some(value),
            "--against-pid" => {
                options.against_pid =
                    Some(value.parse().map_err(|_| format!("--against-pid {value}: not a pid\n{USAGE}"))?);
            }
            _ => return Err(USAGE.to_owned()),
        }
    }
    if options.url.is_empty() {
        return Err(format!("give --url\n{USAGE}"));
    }
    if options.against.is_some() && options.mode == Mode::Task {
        return Err(format!("--against: a task run already measures two flows side by side\n{USAGE}"));
    }
    if options.against.is_none() && options.against_pid.is_some() {
        return Err(format!("--against-pid without --against\n{USAGE}"));
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
    match options.against.clone() {
        Some(against) => runtime.block_on(run_paired(options, against)),
        None => runtime.block_on(run(options)),
    }
}

async fn run(options: Options) {
    let client = Client::new(&options.url).unwrap_or_else(|e| exit(2, &e));
    // A task run measures the same flow as Multi Round-Trip Requests beside it.
    let modes: &[Mode] = if options.mode == Mode::Task { &[Mode::Task, Mode::Flow] } else { &[options.mode] };
    let cpu = || options.pid.map(|pid| legacy::cpu_seconds(pid).unwrap_or_else(|e| exit(2, &e)));
    let mut tallies: Vec<Tally> = modes.iter().map(|_| Tally::default()).collect();
    for (mode, tally) in modes.iter().zip(&mut tallies) {
        // One checked flow first: a server that cannot serve it fails fast, with its reason.
        let before = cpu();
        let first = match mode {
            Mode::Flow => client.flow("Ada").await,
            Mode::Plain => client.plain().await,
            Mode::Legacy => legacy_flow(&options.url).await,
            Mode::Task => client.task_flow("Ada").await.map(|_| ()),
        };
        if let Err(error) = first {
            exit(1, &format!("bench-loadgen: {} against {}: {error}", mode.as_str(), options.url));
        }
        // Every unit the server completed in this run, warm-up included: with the server's CPU
        // time over the same run, the CPU per unit.
        tally.finished += 1;
        if options.warmup > 0.0 {
            let warmup = Duration::from_secs_f64(options.warmup);
            tally.finished += trial(&client, *mode, options.concurrency, warmup).await.finished;
        }
        tally.add_cpu(before, cpu());
    }
    for round in 0..options.trials {
        // Alternate which mode goes first, so neither always follows the other.
        let order: Vec<usize> =
            if round % 2 == 0 { (0..modes.len()).collect() } else { (0..modes.len()).rev().collect() };
        for at in order {
            let before = cpu();
            let trial = trial(&client, modes[at], options.concurrency, Duration::from_secs_f64(options.seconds)).await;
            tallies[at].add_cpu(before, cpu());
            tallies[at].add(&trial);
        }
    }
    let mut reports = modes.iter().zip(&tallies).map(|(mode, tally)| tally.report(&options, &options.url, *mode));
    let mut report = reports.next().unwrap_or_else(|| exit(2, "no mode"));
    if let Some(mrtr) = reports.next() {
        report["mrtr"] = mrtr;
    }
    println!("{report}");
    if tallies.iter().any(|t| t.errors > 0) {
        std::process::exit(1);
    }
}

/// `--against`: the first server and the second, in one mode, their trials alternating; each
/// trial's rate and server CPU per unit kept, to compare round by round.
async fn run_paired(options: Options, against: String) {
    let sides = [(options.url.clone(), options.pid), (against, options.against_pid)];
    let cpu = |pid: Option<u32>| pid.map(|pid| legacy::cpu_seconds(pid).unwrap_or_else(|e| exit(2, &e)));
    let mut clients = Vec::new();
    let mut tallies = [Tally::default(), Tally::default()];
    // Each trial's rate and, with the server's pid, its CPU seconds per unit finished.
    let mut trials: [Vec<(f64, Option<f64>)>; 2] = [Vec::new(), Vec::new()];
    for ((url, pid), tally) in sides.iter().zip(&mut tallies) {
        let client = Client::new(url).unwrap_or_else(|e| exit(2, &e));
        let before = cpu(*pid);
        let first = match options.mode {
            Mode::Flow => client.flow("Ada").await,
            Mode::Plain => client.plain().await,
            Mode::Legacy => legacy_flow(url).await,
            Mode::Task => exit(2, "--against: not with --mode task"),
        };
        if let Err(error) = first {
            exit(1, &format!("bench-loadgen: {} against {url}: {error}", options.mode.as_str()));
        }
        tally.finished += 1;
        if options.warmup > 0.0 {
            let warmup = Duration::from_secs_f64(options.warmup);
            tally.finished += trial(&client, options.mode, options.concurrency, warmup).await.finished;
        }
        tally.add_cpu(before, cpu(*pid));
        clients.push(client);
    }
    for round in 0..options.trials {
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for at in order {
            let pid = sides[at].1;
            let before = cpu(pid);
            let seconds = Duration::from_secs_f64(options.seconds);
            let trial = trial(&clients[at], options.mode, options.concurrency, seconds).await;
            let after = cpu(pid);
            tallies[at].add_cpu(before, after);
            tallies[at].add(&trial);
            let per_unit = match (before, after) {
                (Some(before), Some(after)) if trial.finished > 0 => Some((after - before) / trial.finished as f64),
                _ => None,
            };
            trials[at].push((trial.rate(), per_unit));
        }
    }
    let pairs: Vec<serde_json::Value> = trials[0]
        .iter()
        .zip(&trials[1])
        .map(|((rate, cpu), (rate_against, cpu_against))| {
            let cpu_ratio = match (cpu, cpu_against) {
                (Some(a), Some(b)) if *b > 0.0 => Some(a / b),
                _ => None,
            };
            json!({
                "rate_ratio": if *rate_against > 0.0 { Some(rate / rate_against) } else { None },
                "cpu_per_unit_ratio": cpu_ratio,
                "cpu_per_unit_us": cpu.map(|c| c * 1e6),
                "against_cpu_per_unit_us": cpu_against.map(|c| c * 1e6),
            })
        })
        .collect();
    let mut report = tallies[0].report(&options, &sides[0].0, options.mode);
    report["against"] = tallies[1].report(&options, &sides[1].0, options.mode);
    report["pairs"] = json!(pairs);
    println!("{report}");
    if tallies.iter().any(|t| t.errors > 0) {
        std::process::exit(1);
    }
}

/// What the trials of one mode added up to.
#[derive(Default)]
struct Tally {
    rates: Vec<f64>,
    latencies: Vec<(Duration, Duration)>,
    errors: u64,
    first_error: Option<String>,
    /// Units finished, warm-up and checks included (for CPU per unit).
    finished: u64,
    /// Units completed inside the trials' windows, and their HTTP requests.
    completed: u64,
    requests: u64,
    /// The server's CPU seconds over this mode's warm-up and trials (with `--pid`).
    cpu: Option<f64>,
}

impl Tally {
    fn add(&mut self, trial: &Trial) {
        self.rates.push(trial.rate());
        self.latencies.push((trial.latency(0.5), trial.latency(0.99)));
        self.errors += trial.errors;
        self.finished += trial.finished;
        self.completed += trial.completed;
        self.requests += trial.requests;
        if self.first_error.is_none() {
            self.first_error = trial.first_error.clone();
        }
    }

    fn add_cpu(&mut self, before: Option<f64>, after: Option<f64>) {
        if let (Some(before), Some(after)) = (before, after) {
            *self.cpu.get_or_insert(0.0) += after - before;
        }
    }

    fn report(&self, options: &Options, url: &str, mode: Mode) -> serde_json::Value {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let rates = &self.rates;
        let per_unit = (self.completed > 0).then(|| self.requests as f64 / self.completed as f64);
        let mut report = json!({
            "url": url,
            "mode": mode.as_str(),
            "concurrency": options.concurrency,
            "trials": options.trials,
            "seconds": options.seconds,
            "rates": rates,
            "median_rate": median(rates),
            "min_rate": rates.iter().copied().fold(f64::INFINITY, f64::min),
            "max_rate": rates.iter().copied().fold(0.0, f64::max),
            "median_p50_ms": median(&self.latencies.iter().map(|l| ms(l.0)).collect::<Vec<_>>()),
            "median_p99_ms": median(&self.latencies.iter().map(|l| ms(l.1)).collect::<Vec<_>>()),
            "finished": self.finished,
            "http_requests_per_unit": per_unit,
            "errors": self.errors,
            "first_error": self.first_error,
        });
        if mode == Mode::Task {
            // Beyond the call and the update, every request of a task flow is a `tasks/get`.
            report["polls_per_unit"] = json!(per_unit.map(|r| r - 2.0));
        }
        if let Some(cpu) = self.cpu {
            report["server_cpu_seconds"] = json!(cpu);
        }
        report
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
