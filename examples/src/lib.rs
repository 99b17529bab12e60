//! What the example servers share: command-line handling, the sealing keys from the
//! environment, and serving an [`McpServer`] over HTTP or stdio.

use std::net::SocketAddr;
use std::sync::Arc;

use elicit_runtime::rmcp::McpServer;
use elicit_runtime::server::{CompletionStore, InProcessStore, RedisStore};
use elicit_runtime::state::KeyRing;

pub mod loadgen;
pub mod travel;

/// The environment variable holding the sealing keys: comma-separated base64 32-byte keys, the
/// first of which seals.
pub const STATE_KEYS_VAR: &str = "ELICIT_STATE_KEYS";

/// How a server was asked to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// Streamable HTTP at `/mcp` on this address.
    Http(SocketAddr),
    /// stdin/stdout.
    Stdio,
}

/// Parsed command line of an example server.
#[derive(Debug, Clone)]
pub struct Options {
    /// Where to serve MCP.
    pub transport: Transport,
    /// Other `--flag value` pairs, for the server to read.
    pub extra: Vec<(String, String)>,
}

impl Options {
    /// The value of `--name`, if given.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.extra.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// Parses `--listen ADDR` | `--stdio`, plus `--NAME VALUE` pairs listed in `extra_flags`.
pub fn parse_args(args: impl IntoIterator<Item = String>, usage: &str, extra_flags: &[&str]) -> Result<Options, String> {
    let mut transport = None;
    let mut extra = Vec::new();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--stdio" => transport = Some(Transport::Stdio),
            "--listen" => {
                let addr = args.next().ok_or_else(|| format!("--listen needs an address\n{usage}"))?;
                let addr = addr.parse().map_err(|e| format!("--listen {addr}: {e}\n{usage}"))?;
                transport = Some(Transport::Http(addr));
            }
            "-h" | "--help" => return Err(usage.to_owned()),
            flag if flag.starts_with("--") && extra_flags.contains(&&flag[2..]) => {
                let value = args.next().ok_or_else(|| format!("{flag} needs a value\n{usage}"))?;
                extra.push((flag[2..].to_owned(), value));
            }
            other => return Err(format!("unexpected argument `{other}`\n{usage}")),
        }
    }
    let transport = transport.ok_or_else(|| format!("give --listen ADDR or --stdio\n{usage}"))?;
    Ok(Options { transport, extra })
}

/// The key ring from [`STATE_KEYS_VAR`], or a random key with a warning when it is unset.
pub fn key_ring_from_env() -> Result<KeyRing, String> {
    match std::env::var(STATE_KEYS_VAR) {
        Ok(value) if !value.trim().is_empty() => {
            KeyRing::from_base64_list(&value).map_err(|e| format!("{STATE_KEYS_VAR}: {e}"))
        }
        _ => {
            eprintln!(
                "warning: {STATE_KEYS_VAR} is not set; sealing requestState with a random key, so no other process can resume these flows"
            );
            Ok(KeyRing::generate())
        }
    }
}

/// The completion store named by `--store`: absent or `memory` is this process's own
/// ([`InProcessStore`]); `redis://HOST:PORT` is a [`RedisStore`] shared by every instance using it.
pub async fn completion_store(spec: Option<&str>) -> Result<Arc<dyn CompletionStore>, String> {
    match spec {
        None | Some("memory") => Ok(Arc::new(InProcessStore::new())),
        Some(url) if url.starts_with("redis://") => match RedisStore::connect(url).await {
            Ok(store) => Ok(Arc::new(store)),
            Err(error) => Err(format!("--store {url}: {error}")),
        },
        Some(other) => Err(format!("--store {other}: give `memory` or redis://HOST:PORT")),
    }
}

/// Serves `server` (plus `extra` routes on HTTP) until interrupted.
pub async fn serve(server: McpServer, transport: &Transport, extra: axum::Router) -> std::io::Result<()> {
    match transport {
        Transport::Http(addr) => {
            let listener = tokio::net::TcpListener::bind(addr).await?;
            serve_on(server, listener, extra).await
        }
        Transport::Stdio => server.serve_stdio().await,
    }
}

/// Serves `server` at `/mcp` (plus `extra` routes) on an already bound listener.
pub async fn serve_on(server: McpServer, listener: tokio::net::TcpListener, extra: axum::Router) -> std::io::Result<()> {
    let app = server.http_router(&[]).merge(extra);
    eprintln!("listening on http://{}/mcp", listener.local_addr()?);
    axum::serve(listener, app).with_graceful_shutdown(async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await
}

/// Prints `message` and exits with status 2 (bad usage).
pub fn exit_usage(message: &str) -> ! {
    eprintln!("{message}");
    std::process::exit(2)
}
