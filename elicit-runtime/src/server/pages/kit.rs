//! The building blocks of a URL-mode page: who the visitor is ([`VisitorCheck`]), that a
//! submission came from the page the visitor was shown ([`AntiForgery`]), and recording the
//! visitor's decision as the step's completion ([`record_decision`]). The engine's form pages are
//! built on them, and so is [`ApprovalPage`], a URL-mode step's Approve/Deny page mounted in one
//! line; a custom page (a payment with its own look, an OAuth hand-off) uses the same blocks.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::http::HeaderMap;
use serde_json::Value;

pub use super::approval::{APPROVAL_NONCE_COOKIE, ApprovalPage};
pub use crate::form::escape_html;
use crate::server::page_login::{PageLogin, PageLoginError};
use crate::server::store::{StoreError, UrlCompletions, mint_id};
use crate::state::{Binding, StateSealer};

/// The boxed future of a [`VisitorCheck`].
pub type VisitFuture<'a> = Pin<Box<dyn Future<Output = Visit> + Send + 'a>>;

/// What a page knows of a request when it asks who is visiting.
#[derive(Debug, Clone, Copy)]
pub struct PageRequest<'a> {
    /// The request's headers (cookies, `Authorization`).
    pub headers: &'a HeaderMap,
    /// The request's query string, if any.
    pub query: Option<&'a str>,
    /// The principal the server's own authentication layer put on the request, if any (the rmcp
    /// adapter's [`Principal`](crate::rmcp::Principal) extension).
    pub authenticated: Option<&'a str>,
    /// Whether the page is served over HTTPS (cookies are then `Secure`).
    pub https: bool,
}

/// Who is visiting a step's page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Visit {
    /// This principal, verified; `None` when the server has no users (whoever holds the link).
    Visitor(Option<String>),
    /// Send the visitor to the page without the query (a sign-in link, used), setting this
    /// `Set-Cookie` value if any; they are verified by it from then on.
    Redirect {
        /// The `Set-Cookie` header value, if the visitor just signed in.
        set_cookie: Option<String>,
    },
    /// Send the visitor to sign in elsewhere (an OpenID provider's authorization endpoint):
    /// `303 See Other` to `location`, setting this `Set-Cookie` value if any (what binds the
    /// sign-in to this browser). They come back to the page signed in, or are refused there.
    SignIn {
        /// Where to sign in: an absolute URL of the provider.
        location: String,
        /// The `Set-Cookie` header value, if any.
        set_cookie: Option<String>,
    },
    /// Not a visitor who may decide.
    Refused(Refusal),
}

/// Why a visitor was refused: the kind, for the page to choose its answer, and a sentence to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// What went wrong.
    pub kind: RefusalKind,
    /// Why, for the visitor.
    pub text: String,
}

/// The kinds of [`Refusal`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RefusalKind {
    /// The page does not know who the visitor is.
    NotSignedIn,
    /// The request names two different users (a session and the server's authentication).
    TwoUsers,
    /// The sign-in link was refused: used, expired, forged, for another step.
    LinkRefused,
    /// The check could not run (the store failed): "try again later"; the detail is logged.
    Unavailable,
}

impl Refusal {
    fn visit(kind: RefusalKind, text: &str) -> Visit {
        Visit::Refused(Refusal { kind, text: text.to_owned() })
    }
}

/// How a page verifies that the person who opened it is the step's owner: the flow's principal.
///
/// The spec requires the server to verify the visitor and forbids pre-authenticated URLs (a
/// credential in the link). Implementations:
///
/// - [`AuthenticatedVisitors`]: the principal the server's own authentication put on the request
///   (its sign-in session cookie, a bearer token). Meets the spec when that authentication is the
///   server's real sign-in: the link carries nothing but the step.
/// - A sign-in through an OpenID provider (authorization code with PKCE, the server the
///   provider's client; the ID token's subject compared with the step's owner): the link carries
///   no credential, and a visitor who is not signed in is sent to the provider
///   ([`Visit::SignIn`]). The showcase `travel-server` builds one on this trait
///   (`elicit_examples::page_sign_in`, `--oidc-issuer` with `--oidc-client-id`).
/// - [`PageLoginVisitors`]: the one-time sign-in ticket of [`PageLogin`] in the link. **The ticket
///   is a credential in the URL: this does not meet the spec's rule**; it is kept for servers
///   whose users have no browser session with the server and no OpenID provider (static bearer
///   tokens).
/// - [`LinkHolders`]: no users; whoever holds the unguessable link decides. Only for servers
///   with no principals.
pub trait VisitorCheck: Send + Sync + 'static {
    /// What the step's link adds to its query for this check (`name=value`, URL-safe), if
    /// anything. Called where the engine builds the link, on the flow's runtime.
    fn link_query(&self, step: &str, principal: Option<&str>) -> Option<String> {
        let _ = (step, principal);
        None
    }

    /// Who is visiting the page of `step`.
    fn visit<'a>(&'a self, step: &'a str, request: PageRequest<'a>) -> VisitFuture<'a>;
}

/// No users: the visitor is whoever holds the link (or the principal the server's authentication
/// layer names, if any). Only for servers whose flows have no principal: the store refuses a
/// decision by no one on a step that has an owner.
#[derive(Debug, Clone, Copy, Default)]
pub struct LinkHolders;

impl VisitorCheck for LinkHolders {
    fn visit<'a>(&'a self, _step: &'a str, request: PageRequest<'a>) -> VisitFuture<'a> {
        let who = request.authenticated.map(str::to_owned);
        Box::pin(async move { Visit::Visitor(who) })
    }
}

/// The visitor is the principal the server's own authentication put on the request; a request
/// without one is refused. The link carries no credential: this is the check the spec asks for,
/// provided the server's sign-in reaches the browser (a session cookie its own layer reads).
#[derive(Debug, Clone, Copy, Default)]
pub struct AuthenticatedVisitors;

impl VisitorCheck for AuthenticatedVisitors {
    fn visit<'a>(&'a self, _step: &'a str, request: PageRequest<'a>) -> VisitFuture<'a> {
        let visit = match request.authenticated {
            Some(who) => Visit::Visitor(Some(who.to_owned())),
            None => Refusal::visit(
                RefusalKind::NotSignedIn,
                "This page does not know who you are: sign in to this server, then open the link again.",
            ),
        };
        Box::pin(async move { visit })
    }
}

/// The query parameter of a link carrying a [`PageLogin`] ticket.
pub const LOGIN_PARAM: &str = "login";
/// The cookie of a [`PageLogin`] session on a form page.
pub const SESSION_COOKIE: &str = "elicit_session";

/// Today's one-time sign-in links ([`PageLogin`]): the ticket in the link signs the flow's
/// principal in once, then a session cookie scoped to the page. **A ticket in a URL is a
/// pre-authenticated URL, which the spec forbids**; see [`VisitorCheck`].
///
/// The principal the server's authentication puts on a request (an API client's bearer token)
/// is accepted too, and must agree with the session.
#[derive(Clone)]
pub struct PageLoginVisitors {
    logins: PageLogin,
    cookie: &'static str,
    path: &'static str,
}

impl PageLoginVisitors {
    /// Signs visitors in with `logins` (sharing the engine's store and a key ring), keeping them
    /// in the cookie [`SESSION_COOKIE`] scoped to the form page (`/form/{step}`).
    pub fn new(logins: PageLogin) -> Self {
        PageLoginVisitors { logins, cookie: SESSION_COOKIE, path: super::PAGE_PATH }
    }

    /// Keeps the session in cookie `name`, scoped to `{path}{step}` (`path` ends with `/`): for a
    /// page of one's own.
    pub fn with_cookie(self, name: &'static str, path: &'static str) -> Self {
        PageLoginVisitors { cookie: name, path, ..self }
    }

    /// The principal the request's session cookie signs in to the page of `step`.
    fn session(&self, step: &str, request: &PageRequest<'_>) -> Option<String> {
        self.logins.session_principal(step, cookie(request.headers, self.cookie)?)
    }
}

impl VisitorCheck for PageLoginVisitors {
    fn link_query(&self, step: &str, principal: Option<&str>) -> Option<String> {
        let ticket = self
            .logins
            .ticket(step, principal?)
            .map_err(|error| tracing::error!(target: "elicit_runtime", %error, "no sign-in link for a page"))
            .ok()?;
        Some(format!("{LOGIN_PARAM}={ticket}"))
    }

    fn visit<'a>(&'a self, step: &'a str, request: PageRequest<'a>) -> VisitFuture<'a> {
        Box::pin(async move {
            let session = self.session(step, &request);
            let two_users = || Refusal::visit(RefusalKind::TwoUsers, "This request names two different users.");
            let Some(ticket) = request.query.and_then(|q| query_value(q, LOGIN_PARAM)) else {
                return match (session, request.authenticated) {
                    (Some(a), Some(b)) if a != b => two_users(),
                    (Some(who), _) => Visit::Visitor(Some(who)),
                    (None, Some(who)) => Visit::Visitor(Some(who.to_owned())),
                    (None, None) => Refusal::visit(
                        RefusalKind::NotSignedIn,
                        "This page does not know who you are. Open the link your MCP client showed you, in this browser.",
                    ),
                };
            };
            let refused = |text| Refusal::visit(RefusalKind::LinkRefused, text);
            // An API client presenting someone else's credentials: refused before the ticket is
            // redeemed, so the step's one sign-in stays its owner's.
            if let Some(other) = request.authenticated
                && self.logins.ticket_principal(step, &ticket).is_some_and(|user| user != other)
            {
                return two_users();
            }
            let user = match self.logins.redeem(step, &ticket).await {
                Ok(user) => user,
                // The user opening their own link again, in the browser it signed in.
                Err(PageLoginError::Used) if session.is_some() => return Visit::Redirect { set_cookie: None },
                Err(PageLoginError::Used) => {
                    return refused("This sign-in link was used already: a link signs in one browser, once.");
                }
                Err(PageLoginError::Expired) => return refused("This sign-in link has expired."),
                Err(PageLoginError::Store(error)) => {
                    tracing::error!(target: "elicit_runtime", %error, "a sign-in link could not be redeemed");
                    return Refusal::visit(RefusalKind::Unavailable, "The sign-in service is unavailable right now.");
                }
                Err(_) => return refused("This sign-in link is not valid."),
            };
            // An API client presenting the credentials of someone else than the link's user.
            if request.authenticated.is_some_and(|other| other != user) {
                return two_users();
            }
            match self.logins.session(step, &user) {
                Ok(session) => {
                    let secure = if request.https { "; Secure" } else { "" };
                    // `Lax`: the link is opened from another application; the form has its token.
                    let (name, path) = (self.cookie, self.path);
                    Visit::Redirect {
                        set_cookie: Some(format!(
                            "{name}={session}; HttpOnly; SameSite=Lax; Path={path}{step}{secure}"
                        )),
                    }
                }
                Err(_) => Refusal::visit(RefusalKind::Unavailable, "A page session could not be made."),
            }
        })
    }
}

/// The binding method of anti-forgery tokens.
const TOKEN_METHOD: &str = "elicit-runtime/pages/anti-forgery";
/// The binding audience of the page kit's sealed values.
pub(super) const AUDIENCE: &str = "elicit-runtime/pages/v1";

/// Anti-forgery tokens for a page's forms, a signed double submit: showing the page sets a fresh
/// nonce in an `HttpOnly; SameSite=Strict` cookie scoped to the page and embeds a token sealed for
/// the step and that nonce in the form; a submission counts only with both, matching. Another site
/// can read neither, so it cannot forge a submission. Instances sharing the key ring accept each
/// other's tokens. Cheap to clone.
#[derive(Clone)]
pub struct AntiForgery {
    sealer: StateSealer,
}

impl AntiForgery {
    /// Tokens sealed with `sealer`'s keys, valid for `ttl` (the step's lifetime).
    pub fn new(sealer: &StateSealer, ttl: Duration) -> Self {
        AntiForgery { sealer: sealer.clone().with_ttl(ttl).with_max_token_len(1024) }
    }

    /// A fresh `(nonce, token)` pair for one showing of the page of `step`: the nonce goes into
    /// the cookie, the token into the form.
    pub fn issue(&self, step: &str) -> Option<(String, String)> {
        let nonce = mint_id();
        let token = self.token(step, &nonce)?;
        Some((nonce, token))
    }

    /// The token of the page of `step` for a browser holding `nonce` (a page that keeps its own
    /// nonces; [`AntiForgery::issue`] makes both). `None` for a nonce too long to seal.
    pub fn token(&self, step: &str, nonce: &str) -> Option<String> {
        self.sealer.seal(&token_binding(step), nonce.as_bytes(), SystemTime::now()).ok()
    }

    /// Whether `token` was issued for `step` and `nonce`, and is still valid.
    pub fn verify(&self, step: &str, nonce: &str, token: &str) -> bool {
        !nonce.is_empty()
            && self
                .sealer
                .open(&token_binding(step), token, SystemTime::now())
                .is_ok_and(|sealed| sealed == nonce.as_bytes())
    }
}

fn token_binding(step: &str) -> Binding<'_> {
    Binding { principal: None, method: TOKEN_METHOD, name: step, arguments_digest: [0; 32], audience: AUDIENCE }
}

/// What recording a decision came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Recorded: the flow takes it on the client's next retry.
    Recorded,
    /// Not recorded: the step expired, was answered already, or belongs to someone else.
    Refused,
}

/// Records `outcome` as the completion of `step`, decided `by` the verified visitor (`None` for
/// no one: refused on a step with an owner). At most once per step.
///
/// # Errors
///
/// The store's failure: show "try again later", log the detail.
pub async fn record_decision(
    store: &Arc<dyn UrlCompletions>,
    step: &str,
    outcome: Value,
    by: Option<&str>,
) -> Result<Decision, StoreError> {
    let submitted = crate::server::observe::Submitted::of(&outcome);
    Ok(if store.complete(step, outcome, by).await? {
        submitted.count();
        Decision::Recorded
    } else {
        Decision::Refused
    })
}

/// The answer of a page's decision handler to [`record_decision`]'s result: `200` "Recorded: you
/// can return to your MCP client." when recorded; `404` when refused (the step is unknown,
/// expired, decided already, or someone else's: which, the page does not say); `503` "try again
/// later" when the store failed, its detail logged (`tracing`, target `elicit_runtime`), never
/// shown. Drawn as the form pages' notices (the text's paragraph has id `done`, `not-recorded`
/// or `unavailable`) with the kit's headers ([`page_response`]); a page with its own look matches
/// on the result itself.
///
/// ```no_run
/// # use elicit_runtime::server::Engine;
/// # use elicit_runtime::server::pages::kit::{decision_response, record_decision};
/// # async fn decide(engine: &Engine, id: &str, approved: bool) -> axum::response::Response {
/// let recorded = record_decision(&engine.url_completions(), id, serde_json::json!({ "approved": approved }), None).await;
/// decision_response(recorded)
/// # }
/// ```
pub fn decision_response(recorded: Result<Decision, StoreError>) -> axum::response::Response {
    use axum::http::StatusCode;
    let (status, title, id, text) = match recorded {
        Ok(Decision::Recorded) => (StatusCode::OK, "Thank you", "done", "Recorded: you can return to your MCP client."),
        Ok(Decision::Refused) => (
            StatusCode::NOT_FOUND,
            "Not recorded",
            "not-recorded",
            "This step is unknown, expired, already decided, or not yours. Nothing was recorded.",
        ),
        Err(error) => {
            tracing::error!(target: "elicit_runtime", %error, "a page's decision could not be recorded");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "Try again later",
                "unavailable",
                "The service is unavailable right now. Nothing was recorded; please try again in a moment.",
            )
        }
    };
    notice(status, title, id, text)
}

/// A notice page of the kit (a title, a line of text, an id for tests), sent by [`page_response`].
pub(super) fn notice(status: axum::http::StatusCode, title: &str, id: &str, text: &str) -> axum::response::Response {
    page_response(status, crate::form::render_notice(&crate::form::Notice { title, text, id }))
}

/// Whether a proxy in front said the request came over HTTPS: the first `X-Forwarded-Proto`
/// value is `https`. For a page's cookies (`Secure`) and its visitor check's.
pub fn forwarded_https(headers: &HeaderMap) -> bool {
    headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(',').next())
        .is_some_and(|proto| proto.trim().eq_ignore_ascii_case("https"))
}

/// The value of cookie `name` in the request's `Cookie` headers, if there is exactly one: a name
/// sent twice (a second cookie planted for a wider path) counts as absent.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    let mut found = headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(key, _)| *key == name)
        .map(|(_, value)| value);
    let value = found.next()?;
    found.next().is_none().then_some(value)
}

/// The first value of `name` in a query string.
pub(super) fn query_value(query: &str, name: &str) -> Option<String> {
    form_urlencoded::parse(query.as_bytes()).find(|(key, _)| key == name).map(|(_, value)| value.into_owned())
}

/// Ids are minted by the engine as 22 URL-safe characters; anything else is not a step (and an id
/// that passes is safe in HTML, headers and paths as it is).
pub fn plausible_step(id: &str) -> bool {
    id.len() == 22 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// An HTML page as the kit's own pages are sent: `no-store`, no referrer, not framed, no
/// sniffing, and the form pages' content security policy
/// ([`content_security_policy`](crate::form::content_security_policy)). For a page of your own
/// beside them (a sign-in callback's notice, an approval page) with the same headers.
pub fn page_response(status: axum::http::StatusCode, body: String) -> axum::response::Response {
    use axum::http::{HeaderValue, header};
    use axum::response::IntoResponse;
    let headers = [
        (header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8")),
        (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        (header::REFERRER_POLICY, HeaderValue::from_static("no-referrer")),
        (header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
        (header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
        (
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_str(crate::form::content_security_policy())
                .unwrap_or(HeaderValue::from_static("default-src 'none'")),
        ),
    ];
    (status, headers, body).into_response()
}
