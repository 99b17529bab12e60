//! What the example servers share: command-line handling, the sealing keys from the
//! environment (and the page secrets derived from them), and serving an [`McpServer`] over HTTP
//! or stdio.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::serve::ListenerExt as _;
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use elicit_runtime::rmcp::McpServer;
use elicit_runtime::server::EngineBuilder;
use elicit_runtime::server::store::{InProcessStore, RedisStore, SqliteStore, Store, TaskRecords};
use elicit_runtime::state::KeyRing;

use crate::csrf::PageSecrets;

pub mod bearer;
pub mod csrf;
pub mod loadgen;
pub mod page_sign_in;
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

    /// Where the server's HTTP side listens: the `--listen` address, or on stdio the payment
    /// page's own `--page-listen` address (default: a free loopback port).
    pub fn http_addr(&self) -> Result<SocketAddr, String> {
        match &self.transport {
            Transport::Http(addr) => Ok(*addr),
            Transport::Stdio => {
                let page = self.get("page-listen").unwrap_or("127.0.0.1:0");
                page.parse().map_err(|e| format!("--page-listen {page}: {e}"))
            }
        }
    }
}

/// Parses `--listen ADDR` | `--stdio`, plus `--NAME VALUE` pairs listed in `extra_flags`.
pub fn parse_args(
    args: impl IntoIterator<Item = String>,
    usage: &str,
    extra_flags: &[&str],
) -> Result<Options, String> {
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

/// What a server derives from its sealing keys.
#[derive(Debug, Clone)]
pub struct ServerKeys {
    /// Seals and opens `requestState`.
    pub ring: KeyRing,
    /// Signs and checks the anti-forgery tokens of the pages the server shows in a browser:
    /// derived from the same keys, so instances sharing the keys accept each other's forms.
    pub page_secrets: PageSecrets,
}

impl ServerKeys {
    /// Parses a [`STATE_KEYS_VAR`] value: comma-separated base64 32-byte keys, the first of which
    /// seals (and signs page tokens).
    pub fn from_list(list: &str) -> Result<ServerKeys, String> {
        let ring = KeyRing::from_base64_list(list).map_err(|e| format!("{STATE_KEYS_VAR}: {e}"))?;
        // The ring accepted every entry, so each decodes to 32 bytes in one of these flavours
        // (the ones the ring accepts); a string valid in two of them decodes the same in both.
        let keys: Vec<[u8; 32]> = list
            .split(',')
            .filter_map(|entry| {
                let entry = entry.trim();
                [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD]
                    .into_iter()
                    .find_map(|engine| engine.decode(entry).ok())
                    .and_then(|bytes| <[u8; 32]>::try_from(bytes).ok())
            })
            .collect();
        let page_secrets = PageSecrets::derive(&keys)
            .ok_or_else(|| format!("{STATE_KEYS_VAR}: no key to derive the page secret from"))?;
        Ok(ServerKeys { ring, page_secrets })
    }

    /// Fresh random keys: nothing sealed or signed by this process is accepted by another.
    pub fn random() -> Result<ServerKeys, String> {
        let page_secrets = PageSecrets::random().map_err(|e| format!("no randomness for the page secret: {e}"))?;
        Ok(ServerKeys { ring: KeyRing::generate(), page_secrets })
    }
}

/// The keys from [`STATE_KEYS_VAR`], or random ones with a warning when it is unset.
pub fn keys_from_env() -> Result<ServerKeys, String> {
    match std::env::var(STATE_KEYS_VAR) {
        Ok(value) if !value.trim().is_empty() => ServerKeys::from_list(&value),
        _ => {
            eprintln!(
                "warning: {STATE_KEYS_VAR} is not set; sealing requestState with a random key, so no other process can resume these flows"
            );
            ServerKeys::random()
        }
    }
}

/// The key ring from [`STATE_KEYS_VAR`], or a random key with a warning when it is unset.
pub fn key_ring_from_env() -> Result<KeyRing, String> {
    keys_from_env().map(|keys| keys.ring)
}

/// What `--store` names: where URL-mode completions, the flow ledger and task records live.
pub struct Stores {
    /// URL-mode completions and the flow ledger.
    pub store: Arc<dyn Store>,
    /// Task records; `None` leaves the engine its own in-process ones.
    pub tasks: Option<Arc<dyn TaskRecords>>,
}

impl Stores {
    /// `builder` keeping its records in these stores.
    pub fn apply(&self, builder: EngineBuilder) -> EngineBuilder {
        let builder = builder.store(self.store.clone());
        match &self.tasks {
            Some(tasks) => builder.tasks(tasks.clone()),
            None => builder,
        }
    }
}

/// The `--store` of a server that names none: a SQLite file named for the server in the working
/// directory (`travel-server.db`), so that what it acknowledged survives its restart.
pub fn default_store(server: &str) -> String {
    format!("sqlite:{server}.db")
}

/// The stores named by `--store`: absent or `memory` is this process's own ([`InProcessStore`],
/// the engine's in-process task records, gone with the process); `sqlite:PATH` is one
/// [`SqliteStore`] file for completions, the flow ledger and task records, kept across restarts
/// (one process at a time); `redis://HOST:PORT` is one [`RedisStore`] shared by every
/// instance using it, for completions, the flow ledger and task records alike (so that any
/// instance answers `tasks/get`, `tasks/update` and `tasks/cancel` of a task another one runs);
/// `redis+cluster://HOST:PORT,…` the same on a Redis Cluster.
pub async fn stores(spec: Option<&str>) -> Result<Stores, String> {
    match spec {
        None | Some("memory") => Ok(Stores { store: Arc::new(InProcessStore::new()), tasks: None }),
        Some(spec) if spec.starts_with("sqlite:") => match SqliteStore::open(&spec["sqlite:".len()..]).await {
            Ok(store) => {
                let store = Arc::new(store);
                Ok(Stores { store: store.clone(), tasks: Some(store) })
            }
            Err(error) => Err(format!("--store {spec}: {error}")),
        },
        Some(url) if url.starts_with("redis") => match RedisStore::connect(url).await {
            Ok(store) => {
                let store = Arc::new(store);
                Ok(Stores { store: store.clone(), tasks: Some(store) })
            }
            Err(error) => Err(format!("--store {}: {error}", redact_url(url))),
        },
        Some(other) => Err(format!("--store {}: give `memory`, sqlite:PATH or redis://HOST:PORT", redact_url(other))),
    }
}

/// `url` fit for a log or an error message: a password is replaced by `***`; something that does
/// not parse as a URL is not shown at all (it may still hold one).
pub fn redact_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) => {
            if parsed.password().is_some() {
                // Only URLs that cannot have a password refuse one; this one has one.
                let _ = parsed.set_password(Some("***"));
            }
            parsed.to_string()
        }
        Err(_) => "(a value that is not a URL)".to_owned(),
    }
}

/// Sends the runtime's and the examples' log (store and transport failures, whose detail clients
/// are not told) to stderr. rmcp's own log is left out: it warns on every JSON-RPC error reply.
pub fn init_log() {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let targets = tracing_subscriber::filter::Targets::new()
        .with_target("elicit_runtime", tracing::Level::INFO)
        .with_target("elicit_examples", tracing::Level::INFO);
    let _ = tracing_subscriber::registry()
        .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_ansi(false))
        .with(targets)
        .try_init();
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
pub async fn serve_on(
    server: McpServer,
    listener: tokio::net::TcpListener,
    extra: axum::Router,
) -> std::io::Result<()> {
    serve_app(server.http_router(&[]).merge(extra), listener).await
}

/// Serves `app` on an already bound listener until interrupted.
pub async fn serve_app(app: axum::Router, listener: tokio::net::TcpListener) -> std::io::Result<()> {
    eprintln!("listening on http://{}/mcp", listener.local_addr()?);
    // TCP_NODELAY on every accepted connection: a 2025-era call's SSE stream is written in small
    // pieces (the pushed ask, then the result), which Nagle's algorithm holds back until the
    // client's delayed ACK (~40 ms per round on Linux).
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    // With the peer's address: it is who an anonymous client is to the session caps, which would
    // otherwise count every anonymous client as one (one could lock the others out).
    axum::serve(listener, app.into_make_service_with_connect_info::<std::net::SocketAddr>())
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
}

/// Prints `message` and exits with status 2 (bad usage).
pub fn exit_usage(message: &str) -> ! {
    eprintln!("{message}");
    std::process::exit(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY_STANDARD: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    const KEY_URL_SAFE: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8";
    const OTHER: &str = "//////////////////////////////////////////8=";

    #[test]
    fn instances_sharing_keys_share_page_secrets() {
        let a = ServerKeys::from_list(KEY_STANDARD).unwrap_or_else(|e| unreachable!("{e}"));
        // The same key spelt another way, as an operator might paste it.
        let b = ServerKeys::from_list(KEY_URL_SAFE).unwrap_or_else(|e| unreachable!("{e}"));
        let other = ServerKeys::from_list(OTHER).unwrap_or_else(|e| unreachable!("{e}"));
        let token = a.page_secrets.token("id", "nonce");
        assert!(b.page_secrets.verify("id", "nonce", &token));
        assert!(!other.page_secrets.verify("id", "nonce", &token));
        // Rotation: a new key in front signs; the old one, still listed, verifies.
        let rotated =
            ServerKeys::from_list(&format!("{OTHER}, {KEY_STANDARD}")).unwrap_or_else(|e| unreachable!("{e}"));
        assert!(rotated.page_secrets.verify("id", "nonce", &token));
        assert!(other.page_secrets.verify("id", "nonce", &rotated.page_secrets.token("id", "nonce")));
    }

    #[test]
    fn redaction_hides_passwords_and_unparsable_values() {
        assert_eq!(redact_url("redis://:s3cret@127.0.0.1:6379"), "redis://:***@127.0.0.1:6379");
        assert_eq!(redact_url("redis://user:s3cret@h/0"), "redis://user:***@h/0");
        assert_eq!(redact_url("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
        assert!(!redact_url("redis://:s3cret@[bad").contains("s3cret"));
    }

    #[test]
    fn bad_key_lists_are_refused_by_the_ring() {
        let error = ServerKeys::from_list("not-a-key").err().unwrap_or_default();
        assert!(error.starts_with(STATE_KEYS_VAR), "{error}");
        assert!(ServerKeys::from_list(&format!("{KEY_STANDARD},")).is_err());
    }
}
