//! The end-to-end bench server: `ask_name` (one form, two rounds) and `plain` over stateless
//! Streamable HTTP at `/mcp` — engine handlers on the runtime's rmcp adapter (`--server ours`), or
//! the same tools written by hand on rmcp (`--server rmcp`, see `elicit_benches::rmcp_by_hand`), or
//! `ask_name` by hand on rmcp for 2025-era sessions, the form pushed (`--server rmcp-pushed`).
//!
//! ```text
//! bench-server [--listen 127.0.0.1:8931] [--threads N] [--server ours|rmcp|rmcp-pushed]
//!              [--max-sessions S] [--store memory|sqlite:PATH] [--heartbeat-ms MS]
//!              (N tokio worker threads; default 2)
//! ```
//! Ours is served with the runtime's `serve_http`, as a user serves it; rmcp by hand with
//! `axum::serve` and TCP_NODELAY, as an rmcp server starts.
//! `--store sqlite:PATH` keeps our server's records in a SQLite file (`SqliteStore`, its defaults)
//! instead of this process's memory (`memory`, the default).
//! `--max-sessions` raises our server's caps on 2025-era sessions, overall and per client (the
//! runtime's defaults: 1,024 and 32), for `bench-park`, which opens one session per 16 flows.
//! `--heartbeat-ms` sets how often our server's 2025-era calls waiting on a person send progress
//! (`EngineBuilder::session_heartbeat`; the default 15,000, 0 none), for `bench-park --progress`.

use axum::serve::ListenerExt as _;
use std::sync::Arc;

use elicit_benches::rmcp_by_hand;
use elicit_benches::server::bench_server_on;
use elicit_runtime::rmcp::serve_http;
use elicit_runtime::server::store::{DEFAULT_MAX_RECORDS, SqliteStore};

const USAGE: &str = "usage: bench-server [--listen ADDR] [--threads N] [--server ours|rmcp|rmcp-pushed] [--max-sessions S] [--store memory|sqlite:PATH] [--heartbeat-ms MS]";

/// Which server is served.
#[derive(Clone, Copy)]
enum Which {
    Ours,
    ByHand,
    ByHandPushed,
}

fn main() {
    let (mut listen, mut threads, mut which, mut max_sessions) =
        ("127.0.0.1:8931".to_owned(), 2usize, Which::Ours, None);
    let mut sqlite: Option<String> = None;
    let mut heartbeat = None;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next();
        match (flag.as_str(), value) {
            ("--listen", Some(value)) => listen = value,
            ("--threads", Some(value)) => match value.parse() {
                Ok(n) if n > 0 => threads = n,
                _ => exit(&format!("--threads {value}: give a positive number\n{USAGE}")),
            },
            ("--max-sessions", Some(value)) => match value.parse() {
                Ok(n) if n > 0 => max_sessions = Some(n),
                _ => exit(&format!("--max-sessions {value}: give a positive number\n{USAGE}")),
            },
            ("--heartbeat-ms", Some(value)) => match value.parse() {
                Ok(ms) => heartbeat = Some(std::time::Duration::from_millis(ms)),
                _ => exit(&format!("--heartbeat-ms {value}: give a whole number of milliseconds\n{USAGE}")),
            },
            ("--store", Some(value)) => match value.strip_prefix("sqlite:") {
                Some(path) => sqlite = Some(path.to_owned()),
                None if value == "memory" => sqlite = None,
                None => exit(&format!("--store {value}: give memory or sqlite:PATH\n{USAGE}")),
            },
            ("--server", Some(value)) => match value.as_str() {
                "ours" => which = Which::Ours,
                "rmcp" => which = Which::ByHand,
                "rmcp-pushed" => which = Which::ByHandPushed,
                _ => exit(&format!("--server {value}: give ours, rmcp or rmcp-pushed\n{USAGE}")),
            },
            _ => exit(USAGE),
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(threads).enable_all().build();
    let runtime = runtime.unwrap_or_else(|e| exit(&format!("tokio: {e}")));
    let store = sqlite.map(|path| {
        // As in the in-process store (`bench_server_on`): one anonymous load generator stands for
        // many people, so its flows may fill the store's cap, not only one owner's quota of it.
        let builder = SqliteStore::builder(path).max_flow_records_per_principal(DEFAULT_MAX_RECORDS);
        let opened = runtime.block_on(builder.open());
        Arc::new(opened.unwrap_or_else(|e| exit(&format!("bench-server: {e}"))))
    });
    let ours = matches!(which, Which::Ours);
    let router = match which {
        Which::Ours => bench_server_on(max_sessions, heartbeat, store).http_router(&[]),
        Which::ByHand => rmcp_by_hand::router().unwrap_or_else(|e| exit(&format!("bench-server: {e}"))),
        Which::ByHandPushed => rmcp_by_hand::pushed_router(),
    };
    let which = match which {
        Which::Ours => "ours",
        Which::ByHand => "rmcp by hand",
        Which::ByHandPushed => "rmcp by hand, the form pushed on 2025-era sessions",
    };
    let served = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(&listen).await?;
        eprintln!("bench-server: listening on http://{}/mcp ({threads} threads, {which})", listener.local_addr()?);
        if ours {
            // What a user of the runtime serves with: `serve_http` (TCP_NODELAY, the clients'
            // addresses, its HTTP/1 settings).
            return serve_http(listener, router).await;
        }
        // TCP_NODELAY on every accepted connection: a 2025-era call's SSE stream is written in
        // small pieces (the pushed ask, then the result), which Nagle's algorithm would hold back
        // until the client's delayed ACK (~40 ms on Linux). Every production server wants the same.
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, router)
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
    });
    if let Err(error) = served {
        exit(&format!("bench-server: {error}"));
    }
}

fn exit(message: &str) -> ! {
    eprintln!("{message}");
    std::process::exit(2)
}
