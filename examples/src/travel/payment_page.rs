//! The payment page `book_trip` sends the user to (URL mode): `GET /pay/{id}` shows it,
//! `POST /pay/{id}/approve` or `/deny` records the decision as the completion of that step.
//!
//! What keeps a decision honest:
//!
//! - The id is the engine's: 128 random bits, registered pending for the engine's `url_ttl`, known
//!   only to the flow that minted it (it lives in that flow's sealed state) and to the user's
//!   client. A decision is recorded at most once and consumed by at most one retry.
//! - A decision must come from a browser that showed the page: `GET` sets a per-visit nonce in an
//!   `HttpOnly; SameSite=Strict` cookie scoped to that payment (`Path=/pay/{id}`, and `Secure`
//!   when the page is served over HTTPS: a public base URL in `https`, or `X-Forwarded-Proto:
//!   https` from the proxy in front) and embeds a token bound to the id and that nonce in the
//!   forms (see [`crate::csrf`]); a `POST` without both, or with a token for another id or visit,
//!   is refused with 403 before the store is touched. A cross-site form cannot produce the pair.
//! - `GET` never completes anything: link previews and prefetchers cannot approve.
//! - The page says what is being paid, the amount and the trip (recorded by `book_trip` when it
//!   built the link, see [`PaymentSummaries`]), and which request it is for by the first
//!   characters of its id, which the user can match against the link their MCP client showed;
//!   nothing else about the request travels in the URL.
//! - Responses are not cached, not framed (no clickjacking of the Approve button) and send no
//!   referrer (the id would leak in it).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Extension, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use elicit_runtime::rmcp::Principal;
use elicit_runtime::server::{UrlCompletions, UrlStatus};
use serde_json::json;

use super::summaries::PaymentSummaries;
use crate::csrf::{self, PageSecrets, TOKEN_FIELD};

/// The cookie holding the nonce of the browser's latest visit of a payment page.
pub const NONCE_COOKIE: &str = "pay_nonce";

/// How many leading characters of the id the page shows to name the request.
const SHOWN_ID_CHARS: usize = 8;

#[derive(Clone)]
struct PaymentPage {
    store: Arc<dyn UrlCompletions>,
    secrets: PageSecrets,
    summaries: PaymentSummaries,
    /// Served over HTTPS whatever the request says (the public base URL is `https`).
    https: bool,
}

/// The payment page's routes, recording decisions in `store` and signing its forms with
/// `secrets` (instances behind one load balancer use secrets derived from the same keys). The
/// page names a payment's amount and trip when the store holds its summary; see
/// [`payment_page_at`] to share the summaries of this process's `book_trip` and to say the page
/// is public over HTTPS.
pub fn payment_page(store: Arc<dyn UrlCompletions>, secrets: PageSecrets) -> axum::Router {
    let summaries = PaymentSummaries::new(store.clone());
    payment_page_at(store, secrets, summaries, "")
}

/// [`payment_page`], showing the summaries `book_trip` records in `summaries`, and served at
/// `public_url`: when that is `https`, the nonce cookie is `Secure`.
pub fn payment_page_at(
    store: Arc<dyn UrlCompletions>,
    secrets: PageSecrets,
    summaries: PaymentSummaries,
    public_url: &str,
) -> axum::Router {
    let https = public_url.get(..8).is_some_and(|scheme| scheme.eq_ignore_ascii_case("https://"));
    axum::Router::new()
        .route("/pay/{id}", get(show_payment))
        .route("/pay/{id}/approve", post(approve))
        .route("/pay/{id}/deny", post(deny))
        .with_state(PaymentPage { store, secrets, summaries, https })
}

/// Whether this request reached the page over HTTPS: configured so, or said so by the proxy.
fn over_https(page_state: &PaymentPage, headers: &HeaderMap) -> bool {
    page_state.https
        || headers
            .get("x-forwarded-proto")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(',').next())
            .is_some_and(|proto| proto.trim().eq_ignore_ascii_case("https"))
}

fn page(status: StatusCode, title: &str, body: &str) -> Response {
    let html = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{title}</title></head>\
         <body style=\"font-family: sans-serif; max-width: 32em; margin: 3em auto\"><h1>{title}</h1>{body}</body></html>"
    );
    let headers = [
        (header::CACHE_CONTROL, "no-store"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
        ),
    ];
    (status, headers, Html(html)).into_response()
}

fn not_found(detail: &str) -> Response {
    page(StatusCode::NOT_FOUND, "Unknown payment", &format!("<p>{detail}</p>"))
}

fn unavailable(error: impl std::fmt::Display) -> Response {
    page(StatusCode::SERVICE_UNAVAILABLE, "Try again later", &format!("<p>{}</p>", escape(&error.to_string())))
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Ids are minted by the engine as 22 URL-safe characters; anything else is not ours. (So an id
/// is also safe to write into HTML and headers as it is.)
fn plausible_id(id: &str) -> bool {
    id.len() == 22 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

async fn show_payment(State(page_state): State<PaymentPage>, Path(id): Path<String>, headers: HeaderMap) -> Response {
    if !plausible_id(&id) {
        return not_found("This payment link is not valid.");
    }
    match page_state.store.status(&id).await {
        Ok(UrlStatus::Pending) => {}
        Ok(UrlStatus::Completed(_)) => {
            return page(
                StatusCode::CONFLICT,
                "Already answered",
                "<p>This payment was already approved or denied.</p>",
            );
        }
        Ok(UrlStatus::Unknown) => return not_found("This payment link has expired or is not valid."),
        Err(error) => return unavailable(error),
    }
    let Ok(nonce) = csrf::fresh_nonce() else { return unavailable("no randomness for this page") };
    let token = page_state.secrets.token(&id, &nonce);
    let shown = &id[..SHOWN_ID_CHARS];
    let what = match page_state.summaries.lookup(&id).await {
        Some(summary) => format!(
            "<p>Amount: <strong id=\"amount\">{}</strong></p><p>For: <strong id=\"trip\">{}</strong></p>",
            escape(&summary.amount),
            escape(&summary.trip)
        ),
        None => "<p id=\"unknown\">This page does not know what this payment is for: deny unless your MCP client \
                 told you.</p>"
            .to_owned(),
    };
    let form = |action: &str, label: &str| {
        format!(
            "<form method=\"post\" action=\"/pay/{id}/{action}\"><input type=\"hidden\" name=\"{TOKEN_FIELD}\" value=\"{token}\">\
             <button id=\"{action}\" type=\"submit\">{label}</button></form>"
        )
    };
    let mut response = page(
        StatusCode::OK,
        "Approve payment",
        &format!(
            "<p>Your travel agent asks you to approve a payment.</p>{what}\
             <p>Request <code id=\"request\">{shown}</code> — the link your MCP client showed you ends in \
             <code>/pay/{shown}…</code>; if it does not, deny.</p>{}{}",
            form("approve", "Approve"),
            form("deny", "Deny")
        ),
    );
    // The nonce and token are base64url: always a valid header value.
    // Scoped to this payment: another payment's page, open in another tab, keeps its own nonce.
    let secure = if over_https(&page_state, &headers) { "; Secure" } else { "" };
    let cookie = format!("{NONCE_COOKIE}={nonce}; HttpOnly; SameSite=Strict; Path=/pay/{id}{secure}");
    if let Ok(cookie) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
}

/// Whether the request carries the nonce cookie and a form token made for this id and nonce.
fn came_from_the_page(secrets: &PageSecrets, id: &str, headers: &HeaderMap, body: &[u8]) -> bool {
    let Some(nonce) = csrf::cookie(headers, NONCE_COOKIE).filter(|n| !n.is_empty()) else { return false };
    let Some(token) = csrf::form_field(body, TOKEN_FIELD) else { return false };
    secrets.verify(id, nonce, &token)
}

/// The user a decision is recorded for: the principal the server's bearer layer authenticated.
type User = Option<Extension<Principal>>;

async fn decide(
    page_state: PaymentPage,
    id: String,
    user: User,
    headers: HeaderMap,
    body: Bytes,
    approved: bool,
) -> Response {
    if !plausible_id(&id) {
        return not_found("This payment link is not valid.");
    }
    if !came_from_the_page(&page_state.secrets, &id, &headers, &body) {
        return page(
            StatusCode::FORBIDDEN,
            "Request refused",
            "<p id=\"refused\">This decision did not come from the payment page you opened (its security check \
             failed), so nothing was recorded.</p><p>Open the link from your MCP client again and use its buttons.</p>",
        );
    }
    // A payment started by an authenticated user is recorded only for that user.
    let by = user.as_ref().map(|Extension(Principal(user))| user.as_str());
    match page_state.store.complete(&id, json!({ "approved": approved }), by).await {
        Ok(true) if approved => {
            page(StatusCode::OK, "Payment approved", "<p id=\"done\">Thank you. You can return to your MCP client.</p>")
        }
        Ok(true) => page(
            StatusCode::OK,
            "Payment denied",
            "<p id=\"done\">Nothing will be charged. You can return to your MCP client.</p>",
        ),
        Ok(false) => page(
            StatusCode::CONFLICT,
            "Not recorded",
            "<p id=\"not-recorded\">This payment link has expired, was already used, or belongs to another user.</p>",
        ),
        Err(error) => unavailable(error),
    }
}

async fn approve(
    State(page_state): State<PaymentPage>,
    Path(id): Path<String>,
    user: User,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    decide(page_state, id, user, headers, body, true).await
}

async fn deny(
    State(page_state): State<PaymentPage>,
    Path(id): Path<String>,
    user: User,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    decide(page_state, id, user, headers, body, false).await
}
