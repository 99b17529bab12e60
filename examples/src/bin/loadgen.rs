//! Load generator for scaled-out travel-servers: concurrent `book_trip` flows with unique answers,
//! each round on the next instance, every result checked against its own answers.
//!
//! ```text
//! loadgen --servers http://127.0.0.1:8081,http://127.0.0.1:8082 --flows 1000 --concurrency 1000
//! options: --approve-delay-ms MS   how long after the consent retry the page is submitted (default 20)
//!          --timeout-s S           bound on each HTTP exchange (default 30)
//! ```
//! Exits with status 1 when any flow failed or came back with answers other than its own.

use std::time::Duration;

use elicit_examples::exit_usage;
use elicit_examples::loadgen::{LoadConfig, run};

const USAGE: &str =
    "usage: loadgen --servers URL1,URL2 [--flows N] [--concurrency C] [--approve-delay-ms MS] [--timeout-s S]";

fn parse() -> Result<LoadConfig, String> {
    let mut servers = Vec::new();
    let (mut flows, mut concurrency, mut approve_ms, mut timeout_s) = (100usize, 10usize, 20u64, 30u64);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "-h" || flag == "--help" {
            return Err(USAGE.to_owned());
        }
        let value = args.next().ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        let number = |v: &str| v.parse::<u64>().map_err(|e| format!("{flag} {v}: {e}\n{USAGE}"));
        match flag.as_str() {
            "--servers" => {
                servers = value.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect()
            }
            "--flows" => flows = usize::try_from(number(&value)?).map_err(|e| e.to_string())?,
            "--concurrency" => concurrency = usize::try_from(number(&value)?).map_err(|e| e.to_string())?,
            "--approve-delay-ms" => approve_ms = number(&value)?,
            "--timeout-s" => timeout_s = number(&value)?,
            other => return Err(format!("unexpected argument `{other}`\n{USAGE}")),
        }
    }
    if servers.is_empty() {
        return Err(format!("give --servers URL[,URL...]\n{USAGE}"));
    }
    let mut config = LoadConfig::new(servers, flows, concurrency.max(1));
    config.approve_delay = Duration::from_millis(approve_ms);
    config.request_timeout = Duration::from_secs(timeout_s.max(1));
    Ok(config)
}

#[tokio::main]
async fn main() {
    let config = parse().unwrap_or_else(|e| exit_usage(&e));
    println!("loadgen: {} flows, {} at a time, over {}", config.flows, config.concurrency, config.servers.join(", "));
    let report = run(&config).await;
    print!("{report}");
    if report.errors > 0 {
        std::process::exit(1);
    }
}
