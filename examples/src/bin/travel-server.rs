//! The showcase server: `book_trip` (a form with every schema kind, a payment page in URL mode
//! served by this same process, then a confirmation) and `rate_trip` (two forms in one round).
//!
//! ```text
//! travel-server --listen 127.0.0.1:8080            # MCP at http://127.0.0.1:8080/mcp, page at /pay/{id}
//! travel-server --stdio [--page-listen ADDR]       # MCP on stdio, the page on ADDR (default: a free port)
//! options: --public-url URL   base URL the payment links use (default: http://<bound address>)
//!          --store STORE      where payment completions live: `memory` (default, this process)
//!                             or redis://HOST:PORT, shared by every instance using it
//! ```
//! Bearer tokens (`--tokens FILE` or `ELICIT_BEARER_TOKENS`, each `TOKEN=USER`) make `/mcp`
//! require one and bind each flow, payment step included, to its user, and the payment link signs
//! that user in to the page once (a browser sends no bearer token); without any the server is open.
//! Sealing keys come from `ELICIT_STATE_KEYS` (comma-separated base64 32-byte keys); instances
//! sharing them and one `--store redis://…` can serve each other's rounds, payment step included
//! (the payment page's form tokens are signed with a secret derived from the same keys).

use elicit_examples::bearer::{BearerTokens, authenticate};
use elicit_examples::travel::{
    AUDIENCE, PaymentSummaries, payment_page_at, payment_page_with_logins, server_with_logins,
};
use elicit_examples::{Transport, completion_store, exit_usage, keys_from_env, parse_args, serve_app};
use elicit_runtime::server::{Engine, EngineConfig, PageLogin};

const USAGE: &str = "usage: travel-server (--listen ADDR | --stdio [--page-listen ADDR]) [--public-url URL] [--store memory|redis://HOST:PORT] [--tokens FILE]";

async fn run() -> std::io::Result<()> {
    elicit_examples::init_log();
    let options = parse_args(std::env::args().skip(1), USAGE, &["public-url", "page-listen", "store", "tokens"])
        .unwrap_or_else(|e| exit_usage(&e));
    let keys = keys_from_env().unwrap_or_else(|e| exit_usage(&e));
    let tokens = BearerTokens::configured(options.get("tokens")).unwrap_or_else(|e| exit_usage(&e));
    let store = completion_store(options.get("store")).await.unwrap_or_else(|e| {
        eprintln!("travel-server: {e}");
        std::process::exit(1)
    });
    // With users, payment links sign their user in to the page: one-time tickets sealed with the
    // engine's keys (instances sharing the keys and the store accept each other's), as long-lived
    // as a payment step.
    let logins = match (&tokens, &options.transport) {
        (Some(_), Transport::Http(_)) => {
            Some(PageLogin::new(keys.ring.clone(), store.clone()).with_ttl(EngineConfig::default().url_ttl))
        }
        _ => None,
    };
    let engine = Engine::builder(AUDIENCE, keys.ring).store(store).build();
    let http_addr = options.http_addr().unwrap_or_else(|e| exit_usage(&e));
    let listener = tokio::net::TcpListener::bind(http_addr).await?;
    let public_url = match options.get("public-url") {
        Some(url) => url.to_owned(),
        None => format!("http://{}", listener.local_addr()?),
    };
    let summaries = PaymentSummaries::new(engine.url_completions().clone());
    let page_store = engine.url_completions().clone();
    let page = match &logins {
        Some(logins) => {
            payment_page_with_logins(page_store, keys.page_secrets, summaries.clone(), &public_url, logins.clone())
        }
        None => payment_page_at(page_store, keys.page_secrets, summaries.clone(), &public_url),
    };
    let mcp = server_with_logins(engine, &public_url, summaries, logins);
    match options.transport {
        Transport::Http(_) => {
            let app = match tokens {
                Some(tokens) => {
                    authenticate(mcp.http_router(&[]), tokens.clone(), true).merge(authenticate(page, tokens, false))
                }
                None => mcp.http_router(&[]).merge(page),
            };
            serve_app(app, listener).await
        }
        Transport::Stdio => {
            eprintln!("payment page at {public_url}/pay/{{id}}");
            tokio::spawn(async move { axum::serve(listener, page).await });
            mcp.serve_stdio().await
        }
    }
}

#[tokio::main]
async fn main() {
    if let Err(error) = run().await {
        eprintln!("travel-server: {error}");
        std::process::exit(1);
    }
}
