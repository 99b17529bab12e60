//! Prints the results of one `scripts/bench.sh` run as Markdown: every measurement (median and
//! spread), then every goal as a ratio of two measurements of that same run.
//!
//! ```text
//! bench-report --criterion target/criterion --allocs ALLOCS.json --e2e DIR
//! bench-report --only tasks --e2e DIR
//! ```
//! `DIR` holds the load generator's reports, named `SERVER-MODE.json` (`ours-flow.json`,
//! `python-plain.json`, ...), `ours-tasks.json` (a `--mode task` run: the task and, under
//! `"mrtr"`, the same flow as Multi Round-Trip Requests), and `versions.txt`. A missing input
//! leaves its rows out. `--only tasks` prints the task section alone.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

const USAGE: &str = "usage: bench-report --criterion DIR --allocs FILE --e2e DIR | --only tasks --e2e DIR";

/// The micro-benchmarks, in report order: criterion id and what it measures.
const MICRO: &[(&str, &str)] = &[
    ("schema/ours_requested_schema", "ours: `Booking::requested_schema()`"),
    ("schema/ours_to_wire_json", "ours: that schema serialised to JSON bytes (wire)"),
    ("schema/rmcp_from_type", "rmcp: `ElicitationSchema::from_type::<SerdeBooking>()`"),
    ("parse/ours_from_content", "ours: `Booking::from_content` (every constraint)"),
    ("parse/serde_from_value", "serde: `serde_json::from_value::<SerdeBooking>` (types only)"),
    ("parse/serde_deserialize_borrowed", "serde: `SerdeBooking::deserialize(&Value)` (types only, no move)"),
    ("parse/jsonschema_then_serde", "jsonschema 0.61 `is_valid` (formats on) + `from_value`"),
    ("request_state/ours_seal_open", "ours: seal + open, AES-256-GCM-SIV, envelope v2 (encrypted, bound)"),
    ("request_state/rmcp_seal_open", "rmcp: `seal_json_with` + `open_json_with`, HMAC (bound, TTL)"),
    ("request_state/rmcp_bare_seal_open", "rmcp: bare `seal_json` + `open_json` (no binding, no TTL)"),
    ("request_state/ours_seal", "ours: seal only"),
    ("request_state/ours_open", "ours: open only"),
    ("request_state/rmcp_seal", "rmcp: seal only (bound, TTL)"),
    ("request_state/rmcp_open", "rmcp: open only (bound, TTL)"),
];

const SERVERS: &[(&str, &str)] = &[
    ("ours", "ours (elicit-runtime on rmcp 3.11), 2 threads"),
    ("ours1", "ours, 1 thread"),
    ("rmcp", "rmcp by hand (RequestStateCodec), 2 threads"),
    ("python", "Python SDK"),
    ("typescript", "TypeScript SDK"),
    ("ours-c1", "ours, 2 threads, concurrency 1"),
    ("ours-legacy", "ours, 2 threads, 2025-11-25 sessions"),
    ("typescript-v1", "TypeScript SDK v1, 2025-11-25 sessions"),
];

/// The memory of parked 2025-era flows (`bench-park` reports, `SERVER-park.json`), in report order.
const PARKED: &[(&str, &str)] = &[("ours", "ours, 2 threads"), ("typescript-v1", "TypeScript SDK v1")];

/// One criterion estimate, in nanoseconds.
#[derive(Debug, Clone, Copy)]
struct Estimate {
    median: f64,
    low: f64,
    high: f64,
    mad: f64,
}

fn read_json(path: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

fn estimate(criterion: &Path, id: &str) -> Option<Estimate> {
    let json = read_json(&criterion.join(id).join("new").join("estimates.json"))?;
    let median = json.pointer("/median/point_estimate")?.as_f64()?;
    Some(Estimate {
        median,
        low: json.pointer("/median/confidence_interval/lower_bound")?.as_f64()?,
        high: json.pointer("/median/confidence_interval/upper_bound")?.as_f64()?,
        mad: json.pointer("/median_abs_dev/point_estimate")?.as_f64()?,
    })
}

fn time(ns: f64) -> String {
    match ns {
        ns if ns < 1e3 => format!("{ns:.2} ns"),
        ns if ns < 1e6 => format!("{:.3} µs", ns / 1e3),
        ns => format!("{:.3} ms", ns / 1e6),
    }
}

fn ratio(r: f64) -> String {
    if r >= 100.0 { format!("{r:.0}") } else { format!("{r:.2}") }
}

/// A measured ratio `a / b` with the range its spreads allow.
struct Ratio {
    value: f64,
    low: f64,
    high: f64,
}

impl Ratio {
    fn of(a: (f64, f64, f64), b: (f64, f64, f64)) -> Ratio {
        Ratio { value: a.0 / b.0, low: a.1 / b.2, high: a.2 / b.1 }
    }

    fn show(&self) -> String {
        format!("{}× ({}–{})", ratio(self.value), ratio(self.low), ratio(self.high))
    }
}

fn est(e: Estimate) -> (f64, f64, f64) {
    (e.median, e.low, e.high)
}

fn load(e2e: &Path, server: &str, mode: &str) -> Option<Value> {
    read_json(&e2e.join(format!("{server}-{mode}.json")))
}

/// The server's CPU time per unit the load run completed, in µs (`SERVER-MODE.cpu` holds the
/// server process's CPU seconds over the run).
fn cpu_per_unit(e2e: &Path, server: &str, mode: &str, report: &Value) -> Option<f64> {
    let seconds: f64 = std::fs::read_to_string(e2e.join(format!("{server}-{mode}.cpu"))).ok()?.trim().parse().ok()?;
    let finished = report.get("finished")?.as_f64()?;
    (finished > 0.0).then(|| seconds * 1e6 / finished)
}

/// Median, min and max rate of a load report.
fn rates(report: &Value) -> Option<(f64, f64, f64)> {
    Some((report.get("median_rate")?.as_f64()?, report.get("min_rate")?.as_f64()?, report.get("max_rate")?.as_f64()?))
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "**missed**" }
}

struct Inputs {
    criterion: PathBuf,
    allocs: Option<Value>,
    e2e: PathBuf,
    only_tasks: bool,
}

fn parse_args() -> Result<Inputs, String> {
    let (mut criterion, mut allocs, mut e2e, mut only_tasks) = (None, None, None, false);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        match flag.as_str() {
            "--criterion" => criterion = Some(PathBuf::from(value)),
            "--allocs" => allocs = Some(PathBuf::from(value)),
            "--e2e" => e2e = Some(PathBuf::from(value)),
            "--only" if value == "tasks" => only_tasks = true,
            _ => return Err(USAGE.to_owned()),
        }
    }
    let criterion = match criterion {
        Some(criterion) => criterion,
        None if only_tasks => PathBuf::new(),
        None => return Err(USAGE.to_owned()),
    };
    Ok(Inputs { criterion, allocs: allocs.as_deref().and_then(read_json), e2e: e2e.ok_or(USAGE)?, only_tasks })
}

fn main() {
    let inputs = parse_args().unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    if inputs.only_tasks {
        print!("{}", tasks_report(&inputs.e2e));
    } else {
        print!("{}", report(&inputs));
    }
}

/// The task section: a task of the Tasks extension with one input request against the same flow
/// as Multi Round-Trip Requests, from one `--mode task` load run (`ours-tasks.json`).
fn tasks_report(e2e: &Path) -> String {
    let mut out = String::new();
    let Some(task) = read_json(&e2e.join("ours-tasks.json")) else { return out };
    let Some(mrtr) = task.get("mrtr").cloned() else { return out };
    let _ = writeln!(out, "\n#### A task with one input request against MRTR, same flow (one server, one load run)\n");
    let _ = writeln!(
        out,
        "| flow | per second (median) | min–max | latency p50 | latency p99 | server CPU per flow | HTTP requests per flow | errors |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|");
    // The server's CPU seconds over the mode's warm-up and trials, per flow finished in them.
    let cpu = |report: &Value| {
        let seconds = report.get("server_cpu_seconds")?.as_f64()?;
        let finished = report.get("finished")?.as_f64()?;
        (finished > 0.0).then(|| seconds * 1e6 / finished)
    };
    let polls = task.get("polls_per_unit").and_then(Value::as_f64);
    let task_label = match polls {
        Some(polls) => format!("task with one input request ({polls:.2} `tasks/get` polls per flow)"),
        None => "task with one input request".to_owned(),
    };
    for (label, report) in [(task_label.as_str(), &task), ("MRTR, same flow", &mrtr)] {
        let Some((median, min, max)) = rates(report) else { continue };
        let ms = |key: &str| report.get(key).and_then(Value::as_f64).map_or("–".to_owned(), |v| format!("{v:.2} ms"));
        let requests = report
            .get("http_requests_per_unit")
            .and_then(Value::as_f64)
            .map_or("–".to_owned(), |r| format!("{r:.2}"));
        let errors = report.get("errors").and_then(Value::as_u64).unwrap_or(0);
        let cpu = cpu(report).map_or("–".to_owned(), |us| format!("{us:.0} µs"));
        let _ = writeln!(
            out,
            "| {label} | {median:.0} | {min:.0}–{max:.0} | {} | {} | {cpu} | {requests} | {errors} |",
            ms("median_p50_ms"),
            ms("median_p99_ms")
        );
    }
    let concurrency = task.get("concurrency").and_then(Value::as_u64).unwrap_or(0);
    let _ = writeln!(
        out,
        "\nOurs, 2 threads, concurrency {concurrency}; the task's trials and the MRTR trials alternate in one load run."
    );
    if let (Some(task_rate), Some(mrtr_rate)) = (rates(&task), rates(&mrtr)) {
        let r = Ratio::of(task_rate, mrtr_rate);
        let cpu_ratio = match (cpu(&task), cpu(&mrtr)) {
            (Some(t), Some(m)) => format!("; server CPU per flow {}×", ratio(t / m)),
            _ => String::new(),
        };
        let _ = writeln!(out, "Task ÷ MRTR: flows/s {}{cpu_ratio}.", r.show());
    }
    out
}

fn report(inputs: &Inputs) -> String {
    let mut out = String::new();
    let get = |id: &str| estimate(&inputs.criterion, id);
    let allocs = |id: &str| {
        inputs
            .allocs
            .as_ref()
            .and_then(|a| a.pointer(&format!("/allocations_per_call/{}", id.replace('/', "~1"))))
            .and_then(Value::as_f64)
    };
    let size =
        |key: &str| inputs.allocs.as_ref().and_then(|a| a.pointer(&format!("/sizes/{key}"))).and_then(Value::as_f64);

    let _ = writeln!(out, "#### Micro-benchmarks (criterion; median, its 95% CI, median absolute deviation)\n");
    let _ = writeln!(out, "| benchmark | what | median | 95% CI of median | MAD | allocations/call |");
    let _ = writeln!(out, "|---|---|---:|---:|---:|---:|");
    for (id, what) in MICRO {
        let Some(e) = get(id) else { continue };
        let a = allocs(id).map_or("–".to_owned(), |a| format!("{a:.0}"));
        let _ = writeln!(
            out,
            "| `{id}` | {what} | {} | {}–{} | {} | {a} |",
            time(e.median),
            time(e.low),
            time(e.high),
            time(e.mad)
        );
    }
    if let (Some(plain), Some(ours), Some(rmcp)) =
        (size("state_plaintext_bytes"), size("state_ours_sealed_bytes"), size("state_rmcp_sealed_bytes"))
    {
        let _ = writeln!(
            out,
            "\n`requestState` of three answers: plaintext JSON {plain:.0} B; ours sealed {ours:.0} B (encrypted); rmcp sealed {rmcp:.0} B (signed, payload readable)."
        );
    }

    let _ = writeln!(out, "\n#### End to end over loopback HTTP (load generator reports; median of trials, min–max)\n");
    let _ = writeln!(
        out,
        "| server | mode | per second (median) | min–max | latency p50 | latency p99 | server CPU per unit | errors |"
    );
    let _ = writeln!(out, "|---|---|---:|---:|---:|---:|---:|---:|");
    for (server, label) in SERVERS {
        for mode in ["flow", "plain", "legacy"] {
            let Some(report) = load(&inputs.e2e, server, mode) else { continue };
            let Some((median, min, max)) = rates(&report) else { continue };
            let unit = match mode {
                "flow" => "two-round flows",
                "plain" => "plain calls",
                _ => "2025-era flows (ask pushed)",
            };
            let ms =
                |key: &str| report.get(key).and_then(Value::as_f64).map_or("–".to_owned(), |v| format!("{v:.2} ms"));
            let errors = report.get("errors").and_then(Value::as_u64).unwrap_or(0);
            let cpu =
                cpu_per_unit(&inputs.e2e, server, mode, &report).map_or("–".to_owned(), |us| format!("{us:.0} µs"));
            let _ = writeln!(
                out,
                "| {label} | {unit} | {median:.0} | {min:.0}–{max:.0} | {} | {} | {cpu} | {errors} |",
                ms("median_p50_ms"),
                ms("median_p99_ms")
            );
        }
    }
    if let Some(concurrency) =
        load(&inputs.e2e, "ours", "flow").and_then(|r| r.get("concurrency").and_then(Value::as_u64))
    {
        let _ = writeln!(out, "\nConcurrency {concurrency} for every row but the two of concurrency 1.");
    }
    out.push_str(&tasks_report(&inputs.e2e));
    let parked: Vec<(&str, Value)> = PARKED
        .iter()
        .filter_map(|(name, label)| Some((*label, read_json(&inputs.e2e.join(format!("{name}-park.json")))?)))
        .collect();
    if !parked.is_empty() {
        let _ = writeln!(out, "\n#### Parked 2025-era flows (server RSS from /proc; `bench-park`)\n");
        let _ = writeln!(
            out,
            "| server | flows parked at once | sessions | RSS: before sessions | with sessions | with flows parked | per parked flow | per session |"
        );
        let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|");
        for (label, park) in &parked {
            let n = |key: &str| park.get(key).and_then(Value::as_f64).unwrap_or(f64::NAN);
            let mib = |key: &str| format!("{:.1} MiB", n(key) / 1048576.0);
            let _ = writeln!(
                out,
                "| {label} | {:.0} | {:.0} | {} | {} | {} | {:.1} KiB | {:.1} KiB |",
                n("flows"),
                n("sessions"),
                mib("rss_before_sessions"),
                mib("rss_sessions"),
                mib("rss_parked"),
                n("bytes_per_parked_flow") / 1024.0,
                n("bytes_per_session") / 1024.0
            );
        }
    }
    if let Ok(versions) = std::fs::read_to_string(inputs.e2e.join("versions.txt")) {
        let _ = writeln!(out, "\nPeers: {}", versions.lines().collect::<Vec<_>>().join("; "));
    }

    let _ = writeln!(out, "\n#### Goals (ratios of medians of this run; range from the spreads)\n");
    let _ = writeln!(out, "| goal | target | measured | verdict |");
    let _ = writeln!(out, "|---|---|---:|---|");
    let mut goal = |name: &str, target: &str, measured: String, met: bool| {
        let _ = writeln!(out, "| {name} | {target} | {measured} | {} |", verdict(met));
    };
    if let (Some(ours), Some(rmcp)) = (get("schema/ours_requested_schema"), get("schema/rmcp_from_type")) {
        let r = Ratio::of(est(rmcp), est(ours));
        goal("schema: rmcp `from_type` ÷ ours", "≥ 50×", r.show(), r.value >= 50.0);
    }
    if let Some(a) = allocs("schema/ours_requested_schema") {
        let rmcp = allocs("schema/rmcp_from_type").map_or(String::new(), |r| format!(" (rmcp: {r:.0})"));
        goal("schema: allocations per call, ours", "0", format!("{a:.0}{rmcp}"), a == 0.0);
    }
    if let (Some(ours), Some(serde)) = (get("parse/ours_from_content"), get("parse/serde_from_value")) {
        let r = Ratio::of(est(ours), est(serde));
        goal("parse: ours ÷ `serde_json::from_value`", "≤ 1.5×", r.show(), r.value <= 1.5);
    }
    if let (Some(ours), Some(validated)) = (get("parse/ours_from_content"), get("parse/jsonschema_then_serde")) {
        let r = Ratio::of(est(validated), est(ours));
        goal("parse: (jsonschema + serde) ÷ ours", "≥ 3×", r.show(), r.value >= 3.0);
    }
    if let (Some(ours), Some(rmcp)) = (get("request_state/ours_seal_open"), get("request_state/rmcp_seal_open")) {
        let r = Ratio::of(est(ours), est(rmcp));
        goal("requestState: ours seal+open ÷ rmcp HMAC codec", "≤ 1.5×", r.show(), r.value <= 1.5);
    }
    if let (Some(plain), Some(sealed)) = (size("state_plaintext_bytes"), size("state_ours_sealed_bytes")) {
        let bound = 1.5 * plain + 64.0;
        goal(
            "requestState: sealed size",
            "≤ 1.5 × plaintext + 64 B",
            format!("{sealed:.0} B vs bound {bound:.0} B ({:.2} × plaintext)", sealed / plain),
            sealed <= bound,
        );
    }
    let ours_flow = load(&inputs.e2e, "ours", "flow").as_ref().and_then(rates);
    if let (Some(flow), Some(plain)) = (ours_flow, load(&inputs.e2e, "ours", "plain").as_ref().and_then(rates)) {
        // Time per flow over time per plain call = plain calls/s over flows/s.
        let r = Ratio::of(plain, flow);
        goal("end to end: time per two-round flow ÷ time per plain call (ours)", "≤ 2.2×", r.show(), r.value <= 2.2);
    }
    let one = |mode| load(&inputs.e2e, "ours-c1", mode).as_ref().and_then(rates);
    if let (Some(flow), Some(plain)) = (one("flow"), one("plain")) {
        let r = Ratio::of(plain, flow);
        goal("(same, one request in flight)", "≤ 2.2×", r.show(), r.value <= 2.2);
    }
    let cpu_flow = |server: &str| {
        load(&inputs.e2e, server, "flow").and_then(|report| cpu_per_unit(&inputs.e2e, server, "flow", &report))
    };
    if let (Some(ours), Some(by_hand)) = (ours_flow, load(&inputs.e2e, "rmcp", "flow").as_ref().and_then(rates)) {
        let r = Ratio::of(ours, by_hand);
        goal("end to end: flows/s, ours ÷ rmcp by hand (both sealing state)", "≥ 0.9×", r.show(), r.value >= 0.9);
    }
    if let (Some(ours), Some(by_hand)) = (cpu_flow("ours"), cpu_flow("rmcp")) {
        let r = ours / by_hand;
        goal("(server CPU per flow: ours ÷ rmcp by hand)", "≤ 1.15×", format!("{}×", ratio(r)), r <= 1.15);
    }
    let legacy_flow = |server: &str| load(&inputs.e2e, server, "legacy").as_ref().and_then(rates);
    if let (Some(ours), Some(peer)) = (legacy_flow("ours-legacy"), legacy_flow("typescript-v1")) {
        let r = Ratio::of(ours, peer);
        goal("2025 wire: flows/s, ours ÷ TypeScript SDK v1", "≥ 5×", r.show(), r.value >= 5.0);
    }
    let cpu_legacy = |server: &str| {
        load(&inputs.e2e, server, "legacy").and_then(|report| cpu_per_unit(&inputs.e2e, server, "legacy", &report))
    };
    if let (Some(ours), Some(peer)) = (cpu_legacy("ours-legacy"), cpu_legacy("typescript-v1")) {
        let r = peer / ours;
        goal("(2025 wire: server CPU per flow, TypeScript SDK v1 ÷ ours)", "≥ 5×", format!("{}×", ratio(r)), r >= 5.0);
    }
    if let Some(per_flow) = read_json(&inputs.e2e.join("ours-park.json"))
        .and_then(|park| park.get("bytes_per_parked_flow").and_then(Value::as_f64))
    {
        let kib = per_flow / 1024.0;
        goal(
            "2025 wire: server memory per parked flow (RSS delta ÷ flows parked)",
            "≤ 16 KiB",
            format!("{kib:.1} KiB"),
            kib <= 16.0,
        );
    }
    let ours1_flow = load(&inputs.e2e, "ours1", "flow").as_ref().and_then(rates);
    for (server, target, label) in [("python", 10.0, "Python SDK"), ("typescript", 3.0, "TypeScript SDK")] {
        let Some(peer) = load(&inputs.e2e, server, "flow").as_ref().and_then(rates) else { continue };
        if let Some(ours) = ours_flow {
            let r = Ratio::of(ours, peer);
            goal(&format!("end to end: flows/s, ours ÷ {label}"), &format!("≥ {target}×"), r.show(), r.value >= target);
        }
        if let Some(ours) = ours1_flow {
            let r = Ratio::of(ours, peer);
            goal(&format!("(same, ours on 1 thread) ÷ {label}"), &format!("≥ {target}×"), r.show(), r.value >= target);
        }
        for (ours, threads) in [("ours", "2 threads"), ("ours1", "1 thread")] {
            if let (Some(ours), Some(peer)) = (cpu_flow(ours), cpu_flow(server)) {
                let r = peer / ours;
                let name = format!("(server CPU per flow: {label} ÷ ours on {threads})");
                goal(&name, &format!("≥ {target}×"), format!("{}×", ratio(r)), r >= target);
            }
        }
    }
    out
}
