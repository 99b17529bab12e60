//! The memory a server holds per parked 2025-era flow: opens sessions on the server at `--url`,
//! parks `--flows` flows of `ask_name` at once (each call's pushed `elicitation/create` received,
//! not answered), samples the server process's RSS (`--pid`, from `/proc`) before the sessions,
//! with them open, and with every flow parked; then answers every ask and checks every result.
//! Prints one JSON object; exits with status 1 when any flow failed or fewer were parked than
//! asked, and with status 2 before starting when either side may not open enough files.
//!
//! ```text
//! bench-park --url http://127.0.0.1:8948/mcp --pid PID
//!            [--flows 10000] [--per-session 16] [--opening 256]
//!            [--first-source 127.0.0.1] [--sources N] [--progress] [--hold S]
//! ```
//! `--per-session` is how many flows share a session (the server's default bound on outstanding
//! asks per session is 16); `--opening` how many calls are being started at a time.
//! `--progress` gives each call a `progressToken`, so a server that sends heartbeats on a call
//! waiting for a person sends them; `--hold S` then keeps every flow parked S seconds more after
//! the RSS is sampled and reads the server's CPU time (`/proc/PID/stat`) and RSS around that hold:
//! what parked flows cost while they wait. The JSON counts the progress notifications the calls
//! carried (`progress_received`).
//!
//! Each parked call holds a loopback connection, and one source address reaches the server's port
//! from at most the ephemeral port range (about 28,000 ports): the connections leave from
//! `--sources` consecutive addresses from `--first-source` (default: as many as keep each under
//! 8,000 connections), the sessions taking them in turn. Give separate runs separate ranges
//! (`127.0.1.1`, `127.0.2.1`, ...): the ports a run leaves in TIME_WAIT then never meet the next's.

use std::net::Ipv4Addr;
use std::time::Duration;

use elicit_benches::legacy::{ParkPlan, check_open_file_limits, consecutive_addresses, files_needed, park};
use serde_json::json;

const USAGE: &str = "usage: bench-park --url URL --pid PID [--flows N] [--per-session K] [--opening M] \
                     [--first-source ADDR] [--sources S] [--progress] [--hold SECONDS]";

/// The most connections one source address is given.
const PER_SOURCE: usize = 8_000;

fn main() {
    let (mut url, mut pid, mut flows, mut per_session, mut opening) =
        (String::new(), None, 10_000usize, 16usize, 256usize);
    let (mut first_source, mut sources) = (Ipv4Addr::new(127, 0, 0, 1), None);
    let (mut progress, mut hold) = (false, 0u64);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--progress" {
            progress = true;
            continue;
        }
        let Some(value) = args.next() else { exit(2, USAGE) };
        let number = || {
            value
                .parse::<usize>()
                .ok()
                .filter(|n| *n > 0)
                .unwrap_or_else(|| exit(2, &format!("{flag} {value}: give a positive number\n{USAGE}")))
        };
        match flag.as_str() {
            "--url" => url = value.clone(),
            "--pid" => pid = Some(number() as u32),
            "--flows" => flows = number(),
            "--per-session" => per_session = number(),
            "--opening" => opening = number(),
            "--sources" => sources = Some(number()),
            "--hold" => hold = number() as u64,
            "--first-source" => {
                first_source = value
                    .parse::<Ipv4Addr>()
                    .ok()
                    .filter(Ipv4Addr::is_loopback)
                    .unwrap_or_else(|| exit(2, &format!("--first-source {value}: give a loopback IPv4 address")))
            }
            _ => exit(2, USAGE),
        }
    }
    let Some(pid) = pid.filter(|_| !url.is_empty()) else { exit(2, USAGE) };
    let needed = files_needed(flows, opening);
    if let Err(error) = check_open_file_limits(pid, needed) {
        exit(2, &format!("bench-park: cannot park {flows} flows: {error}"));
    }
    let sources = consecutive_addresses(first_source, sources.unwrap_or_else(|| needed.div_ceil(PER_SOURCE)));
    if let Some(outside) = sources.iter().find(|a| !a.is_loopback()) {
        exit(
            2,
            &format!("bench-park: {} sources from {first_source} reach {outside}, outside 127.0.0.0/8", sources.len()),
        );
    }
    let plan = ParkPlan {
        endpoint: url.clone(),
        pid,
        flows,
        sessions: flows.div_ceil(per_session),
        opening,
        sources,
        progress,
        hold: Duration::from_secs(hold),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build();
    let runtime = runtime.unwrap_or_else(|e| exit(2, &format!("tokio: {e}")));
    let report = runtime.block_on(park(&plan)).unwrap_or_else(|e| exit(1, &format!("bench-park: {e}")));
    let per_flow = report.rss_parked.saturating_sub(report.rss_sessions) as f64 / report.flows as f64;
    let per_session = report.rss_sessions.saturating_sub(report.rss_before_sessions) as f64 / report.sessions as f64;
    println!(
        "{}",
        json!({
            "url": url,
            "flows": report.flows,
            "parked": report.flows,
            "sessions": report.sessions,
            "sources": report.sources.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "rss_before_sessions": report.rss_before_sessions,
            "rss_sessions": report.rss_sessions,
            "rss_parked": report.rss_parked,
            "server_open_files": report.server_open_files,
            "parking_seconds": report.parking_seconds,
            "bytes_per_parked_flow": per_flow,
            "bytes_per_session": per_session,
            "progress": progress,
            "hold_seconds": report.hold_seconds,
            "hold_cpu_seconds": report.hold_cpu_seconds,
            "rss_held": report.rss_held,
            "progress_received": report.progress_received,
        })
    );
}

fn exit(code: i32, message: &str) -> ! {
    eprintln!("{message}");
    std::process::exit(code)
}
