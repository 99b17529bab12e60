//! The kit's approval page: `GET {path}/{step}` shows what is asked with Approve and Deny,
//! `POST` the same path records the decision as the step's completion, once. Built on the kit's
//! blocks (visitor check, anti-forgery, `record_decision`, `decision_response`, `page_response`)
//! and drawn with the form pages' look.

use std::fmt::Write as _;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use axum::routing::get;
use serde_json::{Value, json};

use super::kit::{
    AntiForgery, PageRequest, RefusalKind, Visit, VisitorCheck, cookie, decision_response, escape_html,
    forwarded_https, notice, page_response, plausible_step, record_decision,
};
use super::routes::{Authenticated, authenticated};
use crate::form::{ACTION_FIELD, TOKEN_FIELD, render_document};
use crate::server::store::{UrlCompletions, UrlStatus};

/// The cookie holding the nonce of the browser's latest showing of an approval page, scoped to
/// that step's page.
pub const APPROVAL_NONCE_COOKIE: &str = "elicit_approval_nonce";

/// The largest decision read, in bytes: a token and a button are far less.
const MAX_DECISION_BODY: usize = 4096;

/// How many leading characters of the step's id the page shows, for the visitor to match
/// against the link their MCP client showed.
const SHOWN_ID_CHARS: usize = 8;

/// The boxed future of an approval page's summary.
type SummaryFuture = Pin<Box<dyn Future<Output = Option<String>> + Send>>;
type SummaryFn = Arc<dyn Fn(String) -> SummaryFuture + Send + Sync>;
type OutcomeFn = Arc<dyn Fn(bool) -> Value + Send + Sync>;

/// A page where the person approves or denies a URL-mode step ([`Flow::url`]): mount its
/// [`router`](ApprovalPage::router) beside `/mcp`, send the step to `{public URL}{path}/{id}`,
/// and the flow resumes with [`UrlAnswer::Completed`] holding `{"approved": true}` or
/// `{"approved": false}` (or what [`ApprovalPage::outcome`] makes of the decision).
///
/// - `GET {path}/{id}` verifies the visitor, then shows the page's title, the step's summary
///   ([`ApprovalPage::summary`], from the id: what your flow recorded, an amount, a trip), the
///   first characters of the id to match against the link, and Approve and Deny. Showing records
///   nothing: link previews cannot decide. A step decided already answers `409`, an unknown or
///   expired one `410`, a malformed id `404`.
/// - `POST {path}/{id}` counts only from a browser that was shown the page: the nonce cookie
///   ([`APPROVAL_NONCE_COOKIE`], `HttpOnly; SameSite=Strict`, scoped to the step's page,
///   `Secure` over HTTPS) and the form's token must match ([`AntiForgery::for_engine`]), or the
///   answer is `403` and the store is not touched. The decision is recorded once
///   ([`record_decision`]) and answered with [`decision_response`]: a second decision, an
///   expired step or someone else's is refused.
/// - Every page has the kit's headers ([`page_response`]: no caching, no referrer, no framing, a
///   content security policy that runs no script) and every string is escaped.
///
/// It has the form pages' look, readable on a phone: `docs/images/approval-page.png` in the
/// repository is a screenshot (Chromium, 412 pixels wide).
///
/// **Who decides.** With [`ApprovalPage::visitors`], the check you give (the server's own
/// sign-in with [`AuthenticatedVisitors`](super::kit::AuthenticatedVisitors), an OpenID
/// sign-in); the decision is recorded under the visitor it names, and the store refuses it unless
/// they own the step. Without one, the visitor is the principal the server's own authentication
/// layer put on the request (the rmcp adapter's `Principal`), or no one. The store records a
/// decision by no one only for a step that has no owner, so **on a server with users, a page
/// without a check decides nothing**: opening the link is not signing in, and the decision is
/// refused (nothing recorded) unless the request itself is authenticated as the step's owner.
///
/// ```
/// use elicit_runtime::server::pages::kit::ApprovalPage;
/// use elicit_runtime::server::{Engine, Flow, FlowError, UrlAnswer};
/// use elicit_runtime::state::KeyRing;
/// use serde_json::json;
///
/// async fn approve(flow: Flow) -> Result<String, FlowError> {
///     let answer = flow
///         .url("approval", "Approve the transfer on our page.", |id| format!("http://127.0.0.1:8080/approve/{id}"))
///         .await?;
///     Ok(match answer {
///         UrlAnswer::Completed(outcome) if outcome["approved"] == json!(true) => "Approved.".to_owned(),
///         _ => "Not approved.".to_owned(),
///     })
/// }
///
/// let engine = Engine::builder("bank", KeyRing::generate()).build();
/// let page = ApprovalPage::new(&engine, "/approve")
///     .title("Approve the transfer?")
///     .summary(|_id| async { Some("€42.00 to Ada's account".to_owned()) });
/// // Beside `/mcp`, outside any bearer-token layer (a browser opening a link sends none).
/// let app: axum::Router = axum::Router::new().merge(page.router());
/// ```
///
/// [`Flow::url`]: crate::server::Flow::url
/// [`UrlAnswer::Completed`]: crate::server::UrlAnswer::Completed
#[derive(Clone)]
pub struct ApprovalPage {
    inner: Arc<Inner>,
}

#[derive(Clone)]
struct Inner {
    path: String,
    store: Arc<dyn UrlCompletions>,
    anti_forgery: AntiForgery,
    visitors: Option<Arc<dyn VisitorCheck>>,
    title: String,
    summary: Option<SummaryFn>,
    outcome: OutcomeFn,
    https: bool,
}

impl ApprovalPage {
    /// The page on `store` and `anti_forgery` at `path`: [`ApprovalPage::new`] on an engine's
    /// (written beside the engine, which the page kit, below the flow, does not name).
    pub(in crate::server) fn on(store: Arc<dyn UrlCompletions>, anti_forgery: AntiForgery, path: &str) -> Self {
        let path = format!("/{}", path.trim_matches('/'));
        ApprovalPage {
            inner: Arc::new(Inner {
                path: if path == "/" { String::new() } else { path },
                store,
                anti_forgery,
                visitors: None,
                title: "Approve this request?".to_owned(),
                summary: None,
                outcome: Arc::new(|approved| json!({ "approved": approved })),
                https: false,
            }),
        }
    }

    fn with(self, change: impl FnOnce(&mut Inner)) -> Self {
        let mut inner = Arc::unwrap_or_clone(self.inner);
        change(&mut inner);
        ApprovalPage { inner: Arc::new(inner) }
    }

    /// The page's heading, the same for every step (default "Approve this request?"). Plain
    /// text: it is escaped.
    pub fn title(self, title: impl Into<String>) -> Self {
        let title = title.into();
        self.with(|inner| inner.title = title)
    }

    /// What the page says the step is for, from the step's id: what your flow recorded under it
    /// (an amount, a trip), looked up when the page is shown. Plain text: it is escaped. `None`
    /// (or no summary set) makes the page say it does not know, and to deny unless the MCP
    /// client said what it is for: the engine keeps no message of a step for the page.
    pub fn summary<F, Fut>(self, summary: F) -> Self
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Option<String>> + Send + 'static,
    {
        let summary: SummaryFn = Arc::new(move |step| Box::pin(summary(step)));
        self.with(|inner| inner.summary = Some(summary))
    }

    /// How visitors are verified ([`VisitorCheck`]; its session cookie, if it keeps one, must be
    /// scoped to this page's path). Without it, see [who decides](ApprovalPage#who-decides).
    pub fn visitors(self, visitors: Arc<dyn VisitorCheck>) -> Self {
        self.with(|inner| inner.visitors = Some(visitors))
    }

    /// What is recorded as the step's completion for a decision (`true`: approved); the flow
    /// gets it back as [`UrlAnswer::Completed`](crate::server::UrlAnswer::Completed). Default
    /// `{"approved": true}` or `{"approved": false}`.
    pub fn outcome(self, outcome: impl Fn(bool) -> Value + Send + Sync + 'static) -> Self {
        let outcome: OutcomeFn = Arc::new(outcome);
        self.with(|inner| inner.outcome = outcome)
    }

    /// Served over HTTPS (the nonce cookie is then `Secure`), whatever the request says; a
    /// request with `X-Forwarded-Proto: https` counts as HTTPS anyway.
    pub fn https(self, https: bool) -> Self {
        self.with(|inner| inner.https = https)
    }

    /// The link to the page of `step` under `public_url` (the origin the browser reaches the
    /// server at), with what the page's [`VisitorCheck`] adds for the flow's `principal` (a
    /// sealed owner for an OpenID sign-in); for the closure of [`Flow::url`](crate::server::Flow::url).
    pub fn link(&self, public_url: &str, step: &str, principal: Option<&str>) -> String {
        let mut link = format!("{}{}/{step}", public_url.trim_end_matches('/'), self.inner.path);
        if let Some(query) = self.inner.visitors.as_ref().and_then(|v| v.link_query(step, principal)) {
            link.push('?');
            link.push_str(&query);
        }
        link
    }

    /// The page's routes, `GET` and `POST` on `{path}/{step}`, to merge into the server's router
    /// beside `/mcp` (outside any layer requiring a bearer token: a browser opening a link sends
    /// none).
    pub fn router(&self) -> axum::Router {
        axum::Router::new()
            .route(&format!("{}/{{step}}", self.inner.path), get(show).post(decide))
            // This route's own limit; a larger body is answered with the page's own refusal.
            .layer(axum::extract::DefaultBodyLimit::max(MAX_DECISION_BODY + 1))
            .with_state(self.clone())
    }

    fn page_of(&self, step: &str) -> String {
        format!("{}/{step}", self.inner.path)
    }

    fn over_https(&self, headers: &HeaderMap) -> bool {
        self.inner.https || forwarded_https(headers)
    }
}

impl std::fmt::Debug for ApprovalPage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalPage")
            .field("path", &self.inner.path)
            .field("title", &self.inner.title)
            .field("summary", &self.inner.summary.is_some())
            .field("visitors", &self.inner.visitors.is_some())
            .field("https", &self.inner.https)
            .finish_non_exhaustive()
    }
}

fn not_found() -> Response {
    notice(StatusCode::NOT_FOUND, "Unknown request", "unknown", "This approval link is not valid.")
}

fn unavailable(error: impl std::fmt::Display) -> Response {
    tracing::error!(target: "elicit_runtime", %error, "an approval page could not serve a request");
    notice(
        StatusCode::SERVICE_UNAVAILABLE,
        "Try again later",
        "unavailable",
        "This page is unavailable right now. Nothing was recorded; please try again in a moment.",
    )
}

/// `response` with the headers given, those that are valid header values.
fn with_headers(
    mut response: Response,
    headers: impl IntoIterator<Item = (header::HeaderName, Option<String>)>,
) -> Response {
    for (name, value) in headers {
        if let Some(Ok(value)) = value.map(|v| HeaderValue::from_str(&v)) {
            response.headers_mut().insert(name, value);
        }
    }
    response
}

/// The visitor of the page of `step`, or the response to give instead (a redirect after a
/// sign-in, a sign-in elsewhere, a refusal).
async fn visitor(
    page: &ApprovalPage,
    step: &str,
    query: Option<&str>,
    who: &Authenticated,
    headers: &HeaderMap,
) -> Result<Option<String>, Response> {
    let authenticated = authenticated(who);
    let Some(visitors) = &page.inner.visitors else { return Ok(authenticated.map(str::to_owned)) };
    let request = PageRequest { headers, query, authenticated, https: page.over_https(headers) };
    match visitors.visit(step, request).await {
        Visit::Visitor(by) => Ok(by),
        Visit::Redirect { set_cookie } => {
            let response = notice(StatusCode::SEE_OTHER, "Signed in", "signed-in", "Continue to the page.");
            Err(with_headers(
                response,
                [(header::LOCATION, Some(page.page_of(step))), (header::SET_COOKIE, set_cookie)],
            ))
        }
        Visit::SignIn { location, set_cookie } => {
            let response = notice(StatusCode::SEE_OTHER, "Sign in", "sign-in", "Sign in to continue to the page.");
            Err(with_headers(response, [(header::LOCATION, Some(location)), (header::SET_COOKIE, set_cookie)]))
        }
        Visit::Refused(refusal) if refusal.kind == RefusalKind::Unavailable => Err(unavailable(refusal.text)),
        Visit::Refused(refusal) => Err(notice(StatusCode::FORBIDDEN, "Not signed in", "refused", &refusal.text)),
    }
}

async fn show(
    State(page): State<ApprovalPage>,
    Path(step): Path<String>,
    RawQuery(query): RawQuery,
    who: Authenticated,
    headers: HeaderMap,
) -> Response {
    if !plausible_step(&step) {
        return not_found();
    }
    let by = match visitor(&page, &step, query.as_deref(), &who, &headers).await {
        Ok(by) => by,
        Err(response) => return response,
    };
    match page.inner.store.status(&step).await {
        Ok(UrlStatus::Pending) => {}
        Ok(UrlStatus::Completed(_)) => {
            return notice(
                StatusCode::CONFLICT,
                "Already decided",
                "answered",
                "This request was already approved or denied. You can return to your MCP client.",
            );
        }
        Ok(UrlStatus::Unknown) => {
            return notice(
                StatusCode::GONE,
                "Request expired",
                "expired",
                "This request has expired or is not valid. Nothing was recorded; ask your MCP client again.",
            );
        }
        Err(error) => return unavailable(error),
    }
    let summary = match &page.inner.summary {
        Some(summary) => summary(step.clone()).await,
        None => None,
    };
    let Some((nonce, token)) = page.inner.anti_forgery.issue(&step) else {
        return unavailable("no anti-forgery token");
    };
    crate::server::observe::page_opened("approval");
    let mut body = String::with_capacity(2048);
    let _ = write!(body, "<h1 id=\"title\">{}</h1>", escape_html(&page.inner.title));
    match summary {
        Some(summary) => {
            let _ = write!(body, "<p id=\"summary\">{}</p>", escape_html(&summary));
        }
        None => body.push_str(
            "<p id=\"no-summary\">This page does not know what the request is for: deny it unless your MCP client \
             told you.</p>",
        ),
    }
    if let Some(by) = by {
        let _ = write!(body, "<p>Signed in as <strong id=\"user\">{}</strong>.</p>", escape_html(&by));
    }
    // The id and token are URL-safe base64 (`plausible_step`, the sealer): safe as they are.
    let action = page.page_of(&step);
    let shown = step.get(..SHOWN_ID_CHARS).unwrap_or_default();
    let _ = write!(
        body,
        "<p class=\"hint\" id=\"request\">Request <code>{shown}</code>: the link your MCP client showed you contains \
         <code>{}/{shown}…</code>; if it does not, deny.</p>\
         <form method=\"post\" action=\"{action}\"><input type=\"hidden\" name=\"{TOKEN_FIELD}\" value=\"{token}\">\
         <div class=\"actions\"><button type=\"submit\" id=\"approve\" name=\"{ACTION_FIELD}\" value=\"approve\">Approve</button>\
         <button type=\"submit\" id=\"deny\" name=\"{ACTION_FIELD}\" value=\"deny\">Deny</button></div></form>",
        page.inner.path,
    );
    let response = page_response(StatusCode::OK, render_document(&page.inner.title, &body));
    let secure = if page.over_https(&headers) { "; Secure" } else { "" };
    let cookie = format!("{APPROVAL_NONCE_COOKIE}={nonce}; HttpOnly; SameSite=Strict; Path={action}{secure}");
    with_headers(response, [(header::SET_COOKIE, Some(cookie))])
}

async fn decide(
    State(page): State<ApprovalPage>,
    Path(step): Path<String>,
    who: Authenticated,
    headers: HeaderMap,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Response {
    if !plausible_step(&step) {
        return not_found();
    }
    let Some(body) = body.ok().filter(|body| body.len() <= MAX_DECISION_BODY) else {
        return notice(StatusCode::PAYLOAD_TOO_LARGE, "Too much data", "too-large", "Nothing was recorded.");
    };
    let field =
        |name: &str| form_urlencoded::parse(&body).find(|(key, _)| key == name).map(|(_, value)| value.into_owned());
    let nonce = cookie(&headers, APPROVAL_NONCE_COOKIE).unwrap_or_default();
    if !field(TOKEN_FIELD).is_some_and(|token| page.inner.anti_forgery.verify(&step, nonce, &token)) {
        return notice(
            StatusCode::FORBIDDEN,
            "Request refused",
            "forged",
            "This decision did not come from the page you opened (its security check failed), so nothing was \
             recorded. Open the link from your MCP client again.",
        );
    }
    let approved = match field(ACTION_FIELD).as_deref() {
        Some("approve") => true,
        Some("deny") => false,
        _ => return notice(StatusCode::BAD_REQUEST, "Request refused", "no-action", "This decision names no button."),
    };
    // A decision from the page's own form carries no sign-in ticket: no query.
    let by = match visitor(&page, &step, None, &who, &headers).await {
        Ok(by) => by,
        Err(response) => return response,
    };
    decision_response(record_decision(&page.inner.store, &step, (page.inner.outcome)(approved), by.as_deref()).await)
}
