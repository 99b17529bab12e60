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
//! so that a client refused with 401 discovers where to sign in. With `--oidc-client-id ID` too
//! (this server registered at the provider as a client whose redirect URI is
//! `{public URL}/sign-in/callback`; its secret in `ELICIT_OIDC_CLIENT_SECRET`, none for a public
//! client), the payment and form pages sign their visitor in through the provider (authorization
//! code with PKCE; the ID token's subject must be the user who started the flow) and links carry
//! no credential. Without it, and with `--tokens`, links carry a one-time sign-in ticket: a
//! credential in the URL, which the spec's URL mode forbids (the server says so at start).
//! Sealing keys come from `ELICIT_STATE_KEYS` (comma-separated base64 32-byte keys); instances
//! sharing them and one `--store redis://…` can serve each other's rounds, payment step included
//! (the payment page's form tokens are signed with a secret derived from the same keys).

use elicit_examples::bearer::{BearerTokens, OpenIdTokens, authenticate, authenticate_openid, metadata_router};
use elicit_examples::page_sign_in::{CALLBACK_PATH, OpenIdClient, OpenIdSignIn};
use elicit_examples::travel::{
    AUDIENCE, PaymentSummaries, SESSION_COOKIE, payment_page_at, payment_page_with_visitors, server_with_visitors,
};
use elicit_examples::{Transport, default_store, exit_usage, keys_from_env, parse_args, serve_app, stores};
use std::sync::Arc;

use elicit_runtime::server::pages::PAGE_PATH;
use elicit_runtime::server::pages::kit::{self, PageLoginVisitors, VisitorCheck};
use elicit_runtime::server::{Engine, EngineConfig, PageLogin};

/// The environment variable holding this server's client secret at the OpenID provider.
const CLIENT_SECRET_VAR: &str = "ELICIT_OIDC_CLIENT_SECRET";

const USAGE: &str = "usage: travel-server (--listen ADDR | --stdio [--page-listen ADDR]) [--public-url URL] [--store sqlite:PATH|memory|redis://HOST:PORT|redis+cluster://HOST:PORT,…] [--tokens FILE | --oidc-issuer URL [--oidc-client-id ID]] [--heartbeat-ms MS]";

async fn run() -> std::io::Result<()> {
    elicit_examples::init_log();
    let options = parse_args(
        std::env::args().skip(1),
        USAGE,
        &["public-url", "page-listen", "store", "tokens", "oidc-issuer", "oidc-client-id", "heartbeat-ms"],
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
    let client_id = options.get("oidc-client-id").map(str::to_owned);
    if client_id.is_some() && issuer.is_none() {
        exit_usage("--oidc-client-id needs --oidc-issuer");
    }
    let store = options.get("store").map_or_else(|| default_store("travel-server"), str::to_owned);
    let stores = stores(Some(&store)).await.unwrap_or_else(|e| {
        eprintln!("travel-server: {e}");
        std::process::exit(1)
    });
    let http_addr = options.http_addr().unwrap_or_else(|e| exit_usage(&e));
    let listener = tokio::net::TcpListener::bind(http_addr).await?;
    let public_url = match options.get("public-url") {
        Some(url) => url.to_owned(),
        None => format!("http://{}", listener.local_addr()?),
    };
    let openid = match &issuer {
        Some(issuer) => Some(OpenIdTokens::discover(issuer, &format!("{public_url}/mcp")).await.unwrap_or_else(|e| {
            eprintln!("travel-server: --oidc-issuer {issuer}: {e}");
            std::process::exit(1)
        })),
        None => None,
    };
    let url_ttl = EngineConfig::default().url_ttl;
    // With users, the pages verify who opens a link. Through the OpenID provider when this server
    // is its client: nothing in the link signs anyone in. Otherwise one-time tickets sealed with
    // the engine's keys (instances sharing the keys and the store accept each other's), as
    // long-lived as a payment step: a credential in the URL.
    let (sign_in, logins) = match (&openid, client_id, &options.transport) {
        (Some(openid), Some(client_id), _) => {
            let client = OpenIdClient {
                client_id,
                client_secret: std::env::var(CLIENT_SECRET_VAR).ok().filter(|s| !s.is_empty()),
                redirect_uri: format!("{public_url}{CALLBACK_PATH}"),
            };
            let sign_in = OpenIdSignIn::new(openid.clone(), client, keys.ring.clone(), url_ttl).unwrap_or_else(|e| {
                eprintln!("travel-server: --oidc-client-id: {e}");
                std::process::exit(1)
            });
            (Some(sign_in), None)
        }
        (_, _, Transport::Http(_)) if tokens.is_some() || openid.is_some() => {
            eprintln!(
                "travel-server: page links carry a one-time sign-in ticket, a credential in the URL that the spec's \
                 URL mode forbids; give --oidc-issuer and --oidc-client-id to sign page visitors in through an \
                 OpenID provider instead"
            );
            (None, Some(PageLogin::new(keys.ring.clone(), stores.store.clone()).with_ttl(url_ttl)))
        }
        _ => (None, None),
    };
    // Form pages at /form/{id}: a client that opens links but draws no forms answers every form
    // of every tool there. With users, the page signs them in as the payment page does.
    let mut builder = stores.apply(Engine::builder(AUDIENCE, keys.ring)).form_pages(&public_url).form_fallback(true);
    if let Some(sign_in) = &sign_in {
        builder = builder.page_visitors(Arc::new(sign_in.visitors(kit::SESSION_COOKIE, PAGE_PATH)));
    } else if let Some(logins) = &logins {
        builder = builder.page_visitors(Arc::new(PageLoginVisitors::new(logins.clone())));
    }
    if let Some(ms) = options.get("heartbeat-ms") {
        let ms: u64 = ms.parse().unwrap_or_else(|_| exit_usage("--heartbeat-ms takes a whole number of milliseconds"));
        builder = builder.session_heartbeat(std::time::Duration::from_millis(ms));
    }
    let engine = builder.build();
    let summaries = PaymentSummaries::new(engine.url_completions().clone());
    let page_store = engine.url_completions().clone();
    let page_visitors: Option<Arc<dyn VisitorCheck>> = match (&sign_in, logins) {
        (Some(sign_in), _) => Some(Arc::new(sign_in.visitors(SESSION_COOKIE, "/pay/"))),
        (None, Some(logins)) => Some(Arc::new(PageLoginVisitors::new(logins).with_cookie(SESSION_COOKIE, "/pay/"))),
        (None, None) => None,
    };
    let page = match &page_visitors {
        Some(visitors) => {
            payment_page_with_visitors(page_store, keys.page_secrets, summaries.clone(), &public_url, visitors.clone())
        }
        None => payment_page_at(page_store, keys.page_secrets, summaries.clone(), &public_url),
    };
    let mcp = server_with_visitors(engine, &public_url, summaries, page_visitors);
    let mut forms = mcp.page_router();
    if let Some(sign_in) = &sign_in {
        forms = forms.merge(sign_in.router());
    }
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
