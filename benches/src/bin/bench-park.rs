//! The memory a server holds per parked 2025-era flow: opens sessions on the server at `--url`,
//! parks `--flows` flows of `ask_name` at once (each call's pushed `elicitation/create` received,
//! not answered), samples the server process's RSS (`--pid`, from `/proc`) before the sessions,
//! with them open, and with every flow parked; then answers every ask and checks every result.
//! Prints one JSON object; exits with status 1 when any flow failed.
//!
//! ```text
//! bench-park --url http://127.0.0.1:8948/mcp --pid PID
//!            [--flows 10000] [--per-session 16] [--opening 256]
//! ```
//! `--per-session` is how many flows share a session (the server's default bound on outstanding
//! asks per session is 16); `--opening` how many calls are being started at a time.

use elicit_benches::legacy::{park, rss_of};
use serde_json::json;

const USAGE: &str = "usage: bench-park --url URL --pid PID [--flows N] [--per-session K] [--opening M]";

fn main() {
    let (mut url, mut pid, mut flows, mut per_session, mut opening) =
        (String::new(), None, 10_000usize, 16usize, 256usize);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
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
            _ => exit(2, USAGE),
        }
    }
    let Some(pid) = pid.filter(|_| !url.is_empty()) else { exit(2, USAGE) };
    let sessions = flows.div_ceil(per_session);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build();
    let runtime = runtime.unwrap_or_else(|e| exit(2, &format!("tokio: {e}")));
    let report = runtime
        .block_on(park(&url, flows, sessions, opening, || rss_of(pid)))
        .unwrap_or_else(|e| exit(1, &format!("bench-park: {e}")));
    let per_flow = report.rss_parked.saturating_sub(report.rss_sessions) as f64 / report.flows as f64;
    let per_session = report.rss_sessions.saturating_sub(report.rss_before_sessions) as f64 / report.sessions as f64;
    println!(
        "{}",
        json!({
            "url": url,
            "flows": report.flows,
            "sessions": report.sessions,
            "rss_before_sessions": report.rss_before_sessions,
            "rss_sessions": report.rss_sessions,
            "rss_parked": report.rss_parked,
            "bytes_per_parked_flow": per_flow,
            "bytes_per_session": per_session,
        })
    );
}

fn exit(code: i32, message: &str) -> ! {
    eprintln!("{message}");
    std::process::exit(code)
}
