//! The showcase server: `book_trip` (a form with every schema kind, a payment page in URL mode
//! served by this same process, then a confirmation) and `rate_trip` (two forms in one round).
//!
//! ```text
//! travel-server --listen 127.0.0.1:8080            # MCP at http://127.0.0.1:8080/mcp, page at /pay/{id}
//! travel-server --stdio [--page-listen ADDR]       # MCP on stdio, the page on ADDR (default: a free port)
//! options: --public-url URL   base URL the payment links use (default: http://<bound address>)
//!          --store STORE      where payment completions, the flow ledger and task records live: sqlite:PATH (default
//!                             sqlite:travel-server.db, a file in the working directory that survives a restart),
//!                             `memory` (this process only: lost when it dies) or redis://HOST:PORT, shared by every
//!                             instance using it, or redis+cluster://HOST:PORT,HOST:PORT… (any nodes of a Redis Cluster)
//!          --heartbeat-ms MS  how often a 2025-era call waiting on a person sends progress (default 15000)
//! ```
//! Bearer tokens (`--tokens FILE` or `ELICIT_BEARER_TOKENS`, each `TOKEN=USER`) make `/mcp`
//! require one and bind each flow, payment step included, to its user, and the payment link signs
//! that user in to the page once (a browser sends no bearer token); without any the server is open.
//! `--oidc-issuer URL` instead accepts that OpenID provider's access tokens (JWTs it signed, for
//! this server's `/mcp` URL as their audience, unexpired, with the `mcp` scope; the user is the
//! token's `sub`), and publishes this server's protected resource metadata naming the provider,
//! so that a client refused with 401 discovers where to sign in.
//! Sealing keys come from `ELICIT_STATE_KEYS` (comma-separated base64 32-byte keys); instances
//! sharing them and one `--store redis://…` can serve each other's rounds, payment step included
//! (the payment page's form tokens are signed with a secret derived from the same keys).

use elicit_examples::bearer::{BearerTokens, OpenIdTokens, authenticate, authenticate_openid, metadata_router};
use elicit_examples::travel::{
    AUDIENCE, PaymentSummaries, payment_page_at, payment_page_with_logins, server_with_logins,
};
use elicit_examples::{Transport, default_store, exit_usage, keys_from_env, parse_args, serve_app, stores};
use std::sync::Arc;

use elicit_runtime::server::pages::kit::PageLoginVisitors;
use elicit_runtime::server::{Engine, EngineConfig, PageLogin};

const USAGE: &str = "usage: travel-server (--listen ADDR | --stdio [--page-listen ADDR]) [--public-url URL] [--store sqlite:PATH|memory|redis://HOST:PORT|redis+cluster://HOST:PORT,…] [--tokens FILE | --oidc-issuer URL] [--heartbeat-ms MS]";

async fn run() -> std::io::Result<()> {
    elicit_examples::init_log();
    let options = parse_args(
        std::env::args().skip(1),
        USAGE,
        &["public-url", "page-listen", "store", "tokens", "oidc-issuer", "heartbeat-ms"],
    )
    .unwrap_or_else(|e| exit_usage(&e));
    let keys = keys_from_env().unwrap_or_else(|e| exit_usage(&e));
    let tokens = BearerTokens::configured(options.get("tokens")).unwrap_or_else(|e| exit_usage(&e));
    let issuer = options.get("oidc-issuer").map(str::to_owned);
    if issuer.is_some() && tokens.is_some() {
        exit_usage("--oidc-issuer and bearer tokens (--tokens or ELICIT_BEARER_TOKENS) exclude each other");
    }
    if issuer.is_some() && !matches!(options.transport, Transport::Http(_)) {
        exit_usage("--oidc-issuer needs --listen: tokens come over HTTP");
    }
    let store = options.get("store").map_or_else(|| default_store("travel-server"), str::to_owned);
    let stores = stores(Some(&store)).await.unwrap_or_else(|e| {
        eprintln!("travel-server: {e}");
        std::process::exit(1)
    });
    // With users, payment links sign their user in to the page: one-time tickets sealed with the
    // engine's keys (instances sharing the keys and the store accept each other's), as long-lived
    // as a payment step.
    let logins = match (tokens.is_some() || issuer.is_some(), &options.transport) {
        (true, Transport::Http(_)) => {
            Some(PageLogin::new(keys.ring.clone(), stores.store.clone()).with_ttl(EngineConfig::default().url_ttl))
        }
        _ => None,
    };
    let http_addr = options.http_addr().unwrap_or_else(|e| exit_usage(&e));
    let listener = tokio::net::TcpListener::bind(http_addr).await?;
    let public_url = match options.get("public-url") {
        Some(url) => url.to_owned(),
        None => format!("http://{}", listener.local_addr()?),
    };
    // Form pages at /form/{id}: a client that opens links but draws no forms answers every form
    // of every tool there. With users, the page signs them in as the payment page does.
    let mut builder = stores.apply(Engine::builder(AUDIENCE, keys.ring)).form_pages(&public_url).form_fallback(true);
    if let Some(logins) = &logins {
        builder = builder.page_visitors(Arc::new(PageLoginVisitors::new(logins.clone())));
    }
    if let Some(ms) = options.get("heartbeat-ms") {
        let ms: u64 = ms.parse().unwrap_or_else(|_| exit_usage("--heartbeat-ms takes a whole number of milliseconds"));
        builder = builder.session_heartbeat(std::time::Duration::from_millis(ms));
    }
    let engine = builder.build();
    let openid = match &issuer {
        Some(issuer) => Some(OpenIdTokens::discover(issuer, &format!("{public_url}/mcp")).await.unwrap_or_else(|e| {
            eprintln!("travel-server: --oidc-issuer {issuer}: {e}");
            std::process::exit(1)
        })),
        None => None,
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
    let forms = mcp.page_router();
    match options.transport {
        Transport::Http(_) => {
            let app = match (tokens, openid) {
                (Some(tokens), _) => authenticate(mcp.http_router(&[]), tokens.clone(), true).merge(authenticate(
                    page.merge(forms),
                    tokens,
                    false,
                )),
                (None, Some(openid)) => authenticate_openid(mcp.http_router(&[]), openid.clone(), true)
                    .merge(authenticate_openid(page.merge(forms), openid.clone(), false))
                    .merge(metadata_router(&openid)),
                (None, None) => mcp.http_router(&[]).merge(page).merge(forms),
            };
            serve_app(app, listener).await
        }
        Transport::Stdio => {
            eprintln!("payment page at {public_url}/pay/{{id}}, form pages at {public_url}/form/{{id}}");
            tokio::spawn(async move { axum::serve(listener, page.merge(forms)).await });
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
