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
//!
//! Who decides, when the server has users (bearer tokens; [`payment_page_with_logins`]): the
//! link `book_trip` hands out carries a one-time sign-in ticket for the step and the user who
//! started the payment ([`payment_url`], minted by [`PageLogin`]). Opening it redeems the ticket
//! (refused when replayed, expired, forged or for another step), keeps the user in an
//! `HttpOnly; SameSite=Lax` session cookie scoped to that payment ([`SESSION_COOKIE`]) and
//! redirects to the page without the ticket. The decision is recorded under that user, and the
//! store refuses it unless they own the step; a browser that is not signed in is refused, before
//! the store is touched. An API client may instead present its bearer token (`Authorization`);
//! a request naming two different users is refused. Without users (no tokens) there is no one to
//! verify: whoever holds the unguessable link decides, as before.
//!
//! A store failure shows a generic "try again later" page; its detail goes to the server's log.
//!
//! Built on the runtime's page kit (`elicit_runtime::server::pages::kit`): the step check
//! ([`plausible_step`]), the visitor check ([`PageLoginVisitors`], a [`VisitorCheck`]), the
//! anti-forgery tokens ([`crate::csrf`] over the kit's `AntiForgery`) and the recording of the
//! decision ([`record_decision`]). Its sign-in is today's [`PageLogin`] ticket: a credential in
//! the link, which the spec forbids for URL mode; it stays until a sign-in without a ticket
//! replaces it, behind the same `VisitorCheck`.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Extension, Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use elicit_runtime::rmcp::Principal;
use elicit_runtime::server::PageLogin;
use elicit_runtime::server::pages::kit::{
    Decision, PageLoginVisitors, PageRequest, RefusalKind, Visit, VisitorCheck, escape_html, forwarded_https,
    plausible_step, record_decision,
};
use elicit_runtime::server::store::{UrlCompletions, UrlStatus};
use serde_json::json;

use super::summaries::PaymentSummaries;
use crate::csrf::{self, PageSecrets, TOKEN_FIELD};

/// The cookie holding the nonce of the browser's latest visit of a payment page.
pub const NONCE_COOKIE: &str = "pay_nonce";

/// The cookie holding the signed-in user of a payment page (a [`PageLogin`] session).
pub const SESSION_COOKIE: &str = "pay_session";

/// The query parameter of a payment link that carries its one-time sign-in ticket.
pub const LOGIN_PARAM: &str = "login";

/// How many leading characters of the id the page shows to name the request.
const SHOWN_ID_CHARS: usize = 8;

#[derive(Clone)]
struct PaymentPage {
    store: Arc<dyn UrlCompletions>,
    secrets: PageSecrets,
    summaries: PaymentSummaries,
    /// Served over HTTPS whatever the request says (the public base URL is `https`).
    https: bool,
    /// Set when the server has users: how browsers sign in (through the OpenID provider, or with
    /// the link's ticket), and a decision without a user is refused.
    visitors: Option<Arc<dyn VisitorCheck>>,
}

/// The link to the payment page of step `id` under `public_url`: with a one-time sign-in ticket
/// for `principal` when the page has `logins` and the flow has a principal, bare otherwise.
///
/// Synchronous, for the closure that builds a URL-mode step's URL. A ticket that cannot be made
/// (no Tokio runtime, a principal too long to seal) is logged and left out: the page then asks
/// the user to sign in, and refuses their decision.
pub fn payment_url(public_url: &str, id: &str, logins: Option<&PageLogin>, principal: Option<&str>) -> String {
    let page = format!("{public_url}/pay/{id}");
    let (Some(logins), Some(principal)) = (logins, principal) else { return page };
    match logins.ticket(id, principal) {
        Ok(ticket) => format!("{page}?{LOGIN_PARAM}={ticket}"),
        Err(error) => {
            tracing::error!(%error, "no sign-in link for a payment page");
            page
        }
    }
}

/// The link to the payment page of step `id` under `public_url`, with what `visitors` adds to it
/// for `principal` (the owner, sealed, for an OpenID sign-in; a ticket for [`PageLoginVisitors`]).
pub fn payment_link(
    public_url: &str,
    id: &str,
    visitors: Option<&dyn VisitorCheck>,
    principal: Option<&str>,
) -> String {
    let page = format!("{public_url}/pay/{id}");
    match visitors.and_then(|visitors| visitors.link_query(id, principal)) {
        Some(query) => format!("{page}?{query}"),
        None => page,
    }
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
    router(PaymentPage { https: is_https(public_url), store, secrets, summaries, visitors: None })
}

/// [`payment_page_at`] for a server with users: the page signs browsers in with the tickets
/// [`payment_url`] puts in its links (minted by `logins`, which must share the keys and the store
/// of the `book_trip` that builds them), and refuses a decision by a browser that is not signed
/// in and presents no bearer token.
pub fn payment_page_with_logins(
    store: Arc<dyn UrlCompletions>,
    secrets: PageSecrets,
    summaries: PaymentSummaries,
    public_url: &str,
    logins: PageLogin,
) -> axum::Router {
    let visitors = PageLoginVisitors::new(logins).with_cookie(SESSION_COOKIE, "/pay/");
    payment_page_with_visitors(store, secrets, summaries, public_url, Arc::new(visitors))
}

/// [`payment_page_at`] for a server with users, signing browsers in with `visitors` (an OpenID
/// sign-in from [`crate::page_sign_in`], with cookie [`SESSION_COOKIE`] under `/pay/`, whose links
/// [`payment_link`] builds), and refusing a decision by a browser that is not signed in.
pub fn payment_page_with_visitors(
    store: Arc<dyn UrlCompletions>,
    secrets: PageSecrets,
    summaries: PaymentSummaries,
    public_url: &str,
    visitors: Arc<dyn VisitorCheck>,
) -> axum::Router {
    router(PaymentPage { https: is_https(public_url), store, secrets, summaries, visitors: Some(visitors) })
}

fn is_https(public_url: &str) -> bool {
    public_url.get(..8).is_some_and(|scheme| scheme.eq_ignore_ascii_case("https://"))
}

fn router(page_state: PaymentPage) -> axum::Router {
    axum::Router::new()
        .route("/pay/{id}", get(show_payment))
        .route("/pay/{id}/approve", post(decide::<true>))
        .route("/pay/{id}/deny", post(decide::<false>))
        .with_state(page_state)
}

/// Whether this request reached the page over HTTPS: configured so, or said so by the proxy.
fn over_https(page_state: &PaymentPage, headers: &HeaderMap) -> bool {
    page_state.https || forwarded_https(headers)
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

/// The page for a failure of the store (or of the system): the same generic text whatever
/// failed; the detail (hosts, store messages) goes to the server's log, never into the page.
fn unavailable(error: impl std::fmt::Display) -> Response {
    tracing::error!(%error, "the payment page could not serve a request");
    page(
        StatusCode::SERVICE_UNAVAILABLE,
        "Try again later",
        "<p id=\"unavailable\">The payment service is unavailable right now. Nothing was recorded; please try again \
         in a moment.</p>",
    )
}

/// The page for a browser that is not signed in on a server with users.
fn sign_in_needed() -> Response {
    page(
        StatusCode::FORBIDDEN,
        "Sign-in needed",
        "<p id=\"sign-in\">This payment page does not know who you are, so it cannot take a decision.</p>\
         <p>Open the payment link your MCP client showed you, in this browser: it signs you in.</p>",
    )
}

async fn show_payment(
    State(page_state): State<PaymentPage>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
    bearer: Bearer,
    headers: HeaderMap,
) -> Response {
    if !plausible_step(&id) {
        return not_found("This payment link is not valid.");
    }
    let user = match visitor(&page_state, &id, query.as_deref(), &bearer, &headers).await {
        Ok(user) => user,
        Err(response) => return response,
    };
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
            escape_html(&summary.amount),
            escape_html(&summary.trip)
        ),
        None => "<p id=\"unknown\">This page does not know what this payment is for: deny unless your MCP client \
                 told you.</p>"
            .to_owned(),
    };
    let signed_in = user
        .map(|user| format!("<p>Signed in as <strong id=\"user\">{}</strong>.</p>", escape_html(&user)))
        .unwrap_or_default();
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
            "<p>Your travel agent asks you to approve a payment.</p>{signed_in}{what}\
             <p>Request <code id=\"request\">{shown}</code> — the link your MCP client showed you contains \
             <code>/pay/{shown}…</code>; if it does not, deny.</p>{}{}",
            form("approve", "Approve"),
            form("deny", "Deny")
        ),
    );
    // The nonce and token are base64url: always a valid header value.
    // Scoped to this payment: another payment's page, open in another tab, keeps its own nonce.
    let secure = secure_attribute(&page_state, &headers);
    let cookie = format!("{NONCE_COOKIE}={nonce}; HttpOnly; SameSite=Strict; Path=/pay/{id}{secure}");
    if let Ok(cookie) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
}

/// `; Secure` when the page is served over HTTPS.
fn secure_attribute(page_state: &PaymentPage, headers: &HeaderMap) -> &'static str {
    if over_https(page_state, headers) { "; Secure" } else { "" }
}

/// Who is visiting the page of `id`: on a server with users, the kit's check of today's sign-in
/// links (the link's ticket, then the session cookie; a bearer token must agree with it); without
/// users, the bearer token's user or no one. `Err` is the page to answer instead: the redirect
/// after a sign-in, or a refusal.
async fn visitor(
    page_state: &PaymentPage,
    id: &str,
    query: Option<&str>,
    bearer: &Bearer,
    headers: &HeaderMap,
) -> Result<Option<String>, Response> {
    let authenticated = bearer.as_ref().map(|Extension(Principal(user))| user.as_str());
    let Some(visitors) = &page_state.visitors else { return Ok(authenticated.map(str::to_owned)) };
    let request = PageRequest { headers, query, authenticated, https: over_https(page_state, headers) };
    match visitors.visit(id, request).await {
        Visit::Visitor(user) => Ok(user),
        Visit::Redirect { set_cookie } => {
            // The session is base64url: always a valid header value.
            Err(to_the_page(id, set_cookie.and_then(|cookie| HeaderValue::from_str(&cookie).ok())))
        }
        Visit::SignIn { location, set_cookie } => {
            let mut response =
                page(StatusCode::SEE_OTHER, "Sign in", "<p id=\"sign-in\">Sign in to continue to the payment.</p>");
            for (name, value) in [(header::LOCATION, Some(location)), (header::SET_COOKIE, set_cookie)] {
                if let Some(Ok(value)) = value.map(|v| HeaderValue::from_str(&v)) {
                    response.headers_mut().insert(name, value);
                }
            }
            Err(response)
        }
        Visit::Refused(refusal) => Err(match refusal.kind {
            RefusalKind::NotSignedIn => sign_in_needed(),
            RefusalKind::TwoUsers => two_users(),
            RefusalKind::Unavailable => unavailable(refusal.text),
            _ => page(
                StatusCode::FORBIDDEN,
                "Sign-in refused",
                &format!(
                    "<p id=\"login-refused\">{}</p><p>Nothing was recorded. Ask your MCP client for the payment \
                     again, and open its link in this browser.</p>",
                    escape_html(&refusal.text)
                ),
            ),
        }),
    }
}

/// `303 See Other` to the page of `id`, setting `cookie` if given.
fn to_the_page(id: &str, cookie: Option<HeaderValue>) -> Response {
    let mut response = page(StatusCode::SEE_OTHER, "Signed in", &format!("<p><a href=\"/pay/{id}\">Continue</a></p>"));
    if let Ok(location) = HeaderValue::from_str(&format!("/pay/{id}")) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    if let Some(cookie) = cookie {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
}

/// The page for a request naming two different users (a session and a bearer token).
fn two_users() -> Response {
    page(
        StatusCode::FORBIDDEN,
        "Request refused",
        "<p id=\"two-users\">This request is signed in as one user and carries the credentials of another, so \
         nothing was recorded.</p>",
    )
}

/// Whether the request carries the nonce cookie and a form token made for this id and nonce.
fn came_from_the_page(secrets: &PageSecrets, id: &str, headers: &HeaderMap, body: &[u8]) -> bool {
    let Some(nonce) = csrf::cookie(headers, NONCE_COOKIE).filter(|n| !n.is_empty()) else { return false };
    let Some(token) = csrf::form_field(body, TOKEN_FIELD) else { return false };
    secrets.verify(id, nonce, &token)
}

/// The principal the server's bearer layer authenticated, if any (API clients).
type Bearer = Option<Extension<Principal>>;

/// `POST /pay/{id}/approve` (`APPROVED`) or `/pay/{id}/deny`: records the decision as the
/// completion of step `id`.
async fn decide<const APPROVED: bool>(
    State(page_state): State<PaymentPage>,
    Path(id): Path<String>,
    bearer: Bearer,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if !plausible_step(&id) {
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
    // The decision is recorded for its user; the store refuses it unless they own the step.
    let by = match visitor(&page_state, &id, None, &bearer, &headers).await {
        Ok(by) => by,
        Err(response) => return response,
    };
    match record_decision(&page_state.store, &id, json!({ "approved": APPROVED }), by.as_deref()).await {
        Ok(Decision::Recorded) if APPROVED => {
            page(StatusCode::OK, "Payment approved", "<p id=\"done\">Thank you. You can return to your MCP client.</p>")
        }
        Ok(Decision::Recorded) => page(
            StatusCode::OK,
            "Payment denied",
            "<p id=\"done\">Nothing will be charged. You can return to your MCP client.</p>",
        ),
        Ok(Decision::Refused) => page(
            StatusCode::CONFLICT,
            "Not recorded",
            "<p id=\"not-recorded\">This payment link has expired, was already used, or belongs to another user.</p>",
        ),
        Err(error) => unavailable(error),
    }
}
