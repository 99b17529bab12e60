//! 2025-era sessions on HTTP: how long rmcp keeps one, and how many one client may hold.
//!
//! rmcp's `LocalSessionManager` closes a session after a stretch without events (five minutes by
//! default), while a pushed ask or a URL wait may park a call far longer without any: the
//! session's keep-alive is derived from the engine's session timeouts here. And a session costs
//! memory for as long as it lives, so the number of sessions is capped, overall and per client
//! (its authenticated principal, else its address). A session belongs to the principal that
//! opened it: a request of another principal naming it is refused.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use ::rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use axum::body::Body;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderName, Method, Request as HttpRequest, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};

use super::super::Principal;
use super::super::wire_fixes::session_calls::MCP_SESSION_ID;
use crate::server::session::SessionConfig;
use crate::wire::codes;

/// The default cap on 2025-era sessions open at once.
pub const DEFAULT_MAX_SESSIONS: usize = 1024;
/// The default cap on 2025-era sessions one client (principal, else address) holds at once.
pub const DEFAULT_MAX_SESSIONS_PER_CLIENT: usize = 32;
/// The default keep-alive of an idle session (rmcp's), raised to cover the session waits.
pub const DEFAULT_SESSION_KEEP_ALIVE: Duration = Duration::from_secs(300);
/// The capacity of rmcp's channels of a session (rmcp's default: 16), which also bounds how many
/// of a call's messages rmcp keeps for a client that resumes its stream. A call waiting on a person
/// keeps that many of its last messages, and with heartbeats they are mostly progress
/// notifications: about 0.5 KiB each, for as long as the person takes. At 4, a parked 2025-era
/// call holds about 0.5 KiB less from the start and 2 to 4 KiB less once its heartbeats have
/// filled the cache (BENCHMARKS.md, "Memory per parked 2025-era flow"); senders wait when a
/// channel is full, as at 16.
const SESSION_CHANNEL_CAPACITY: usize = 4;
/// Beyond the longest session wait, before an idle session is closed: the wait's own timeout
/// answers the call (an event) before the session could count as idle.
const KEEP_ALIVE_GRACE: Duration = Duration::from_secs(5);

/// The session settings of an [`McpServer`](super::McpServer)'s HTTP endpoint.
#[derive(Debug, Clone)]
pub(super) struct SessionLimits {
    pub(super) max_sessions: usize,
    pub(super) max_per_client: usize,
    pub(super) keep_alive: Duration,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_per_client: DEFAULT_MAX_SESSIONS_PER_CLIENT,
            keep_alive: DEFAULT_SESSION_KEEP_ALIVE,
        }
    }
}

/// How long an idle session lives: the setting, but never less than the longest time a session
/// call may wait without an event (an ask, a URL page) plus a grace.
pub(super) fn keep_alive(setting: Duration, session: &SessionConfig) -> Duration {
    setting.max(session.ask_timeout.max(session.url_completion_timeout).saturating_add(KEEP_ALIVE_GRACE))
}

/// rmcp's in-process session manager with the keep-alive above.
pub(super) fn session_manager(keep_alive: Duration) -> LocalSessionManager {
    let mut manager = LocalSessionManager::default();
    manager.session_config.keep_alive = Some(keep_alive);
    manager.session_config.channel_capacity = SESSION_CHANNEL_CAPACITY;
    manager
}

/// The sessions each client opened, counted against the caps, and the principal each session
/// belongs to.
pub(super) struct SessionCaps {
    limits: SessionLimits,
    manager: Arc<LocalSessionManager>,
    clients: Mutex<HashMap<String, Client>>,
    /// The principal that opened each session (`None`: anonymous), by session id.
    owners: Mutex<HashMap<String, Option<String>>>,
}

#[derive(Default)]
struct Client {
    /// Sessions this client opened (some may have ended since: pruned on the next open).
    sessions: Vec<String>,
    /// Opens in flight.
    opening: usize,
}

impl SessionCaps {
    pub(super) fn new(limits: SessionLimits, manager: Arc<LocalSessionManager>) -> SessionCaps {
        SessionCaps { limits, manager, clients: Mutex::new(HashMap::new()), owners: Mutex::new(HashMap::new()) }
    }
}

/// The authenticated principal of a request, as the transport's middleware put it there.
fn principal_of(request: &HttpRequest<Body>) -> Option<String> {
    request.extensions().get::<Principal>().map(|Principal(principal)| principal.clone())
}

/// The client a request counts against: its principal, else its address, else one shared bucket.
fn client_key(request: &HttpRequest<Body>) -> String {
    if let Some(principal) = principal_of(request) {
        return format!("principal:{principal}");
    }
    match request.extensions().get::<ConnectInfo<SocketAddr>>() {
        Some(ConnectInfo(address)) => format!("address:{}", address.ip()),
        None => "unknown".to_owned(),
    }
}

/// Releases an open in flight, and records the session it opened and its principal.
struct Opening<'a> {
    caps: &'a SessionCaps,
    key: String,
    principal: Option<String>,
}

impl Opening<'_> {
    fn opened(self, session: Option<String>) {
        let Some(session) = session else { return };
        let mut clients = self.caps.clients.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(client) = clients.get_mut(&self.key) {
            client.sessions.push(session.clone());
        }
        drop(clients);
        self.caps.owners.lock().unwrap_or_else(PoisonError::into_inner).insert(session, self.principal.clone());
    }
}

/// Whether `request`, naming a session, comes from the principal that opened it (or names a
/// session these caps did not open: rmcp answers for those).
fn owns_session(caps: &SessionCaps, request: &HttpRequest<Body>) -> bool {
    let Some(session) = request.headers().get(&MCP_SESSION_ID).and_then(|v| v.to_str().ok()) else { return true };
    let owners = caps.owners.lock().unwrap_or_else(PoisonError::into_inner);
    match owners.get(session) {
        Some(owner) => *owner == principal_of(request),
        None => true,
    }
}

impl Drop for Opening<'_> {
    fn drop(&mut self) {
        let mut clients = self.caps.clients.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(client) = clients.get_mut(&self.key) {
            client.opening = client.opening.saturating_sub(1);
            if client.opening == 0 && client.sessions.is_empty() {
                clients.remove(&self.key);
            }
        }
    }
}

/// The header every 2026-07-28 request carries.
const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");

/// Refuses a request that would open a session past a cap. A request opens a session when it
/// is a `POST` without `Mcp-Session-Id` and without the `Mcp-Method` header every 2026-07-28
/// request carries (rmcp refuses a 2026-07-28 request without it): a 2025-era `initialize`.
/// `serve` is the rest of the way (rmcp's service); it runs in the route itself rather than as a
/// middleware, which axum would box and clone on every request.
///
/// Decided up front, not in an `async fn`: a request that opens no session (every 2026-07-28
/// request, every request in a session) is served with nothing of this held beside its own
/// future, and the opening of a session, once per session, is boxed apart.
pub(super) fn cap_sessions<'a, F, Fut>(
    caps: &'a SessionCaps,
    request: HttpRequest<Body>,
    serve: F,
) -> impl Future<Output = Response> + 'a
where
    F: FnOnce(HttpRequest<Body>) -> Fut + 'a,
    Fut: Future<Output = Response> + 'a,
{
    use futures_util::future::Either;
    let opens = request.method() == Method::POST
        && !request.headers().contains_key(&MCP_SESSION_ID)
        && !request.headers().contains_key(&MCP_METHOD);
    if opens {
        return Either::Right(Box::pin(cap_opening(caps, request, serve)));
    }
    // A session id is no credential: another principal's requests on it (its answers to the
    // session's pushed asks among them) are refused as for a session that does not exist.
    if !owns_session(caps, &request) {
        let body = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": codes::INVALID_REQUEST, "message": "session not found"}});
        let refused = (StatusCode::NOT_FOUND, [(header::CONTENT_TYPE, "application/json")], body.to_string());
        return Either::Left(Either::Left(std::future::ready(refused.into_response())));
    }
    Either::Left(Either::Right(serve(request)))
}

/// [`cap_sessions`] of a request that opens a session: refused past the caps, else served and
/// the session it opened counted.
async fn cap_opening<F, Fut>(caps: &SessionCaps, request: HttpRequest<Body>, serve: F) -> Response
where
    F: FnOnce(HttpRequest<Body>) -> Fut,
    Fut: Future<Output = Response>,
{
    let key = client_key(&request);
    let principal = principal_of(&request);
    let refused = {
        let live = caps.manager.sessions.read().await;
        let mut clients = caps.clients.lock().unwrap_or_else(PoisonError::into_inner);
        for client in clients.values_mut() {
            client.sessions.retain(|id| live.contains_key(id.as_str()));
        }
        clients.retain(|_, client| client.opening > 0 || !client.sessions.is_empty());
        caps.owners.lock().unwrap_or_else(PoisonError::into_inner).retain(|id, _| live.contains_key(id.as_str()));
        let opening: usize = clients.values().map(|c| c.opening).sum();
        let client = clients.entry(key.clone()).or_default();
        if live.len() + opening >= caps.limits.max_sessions {
            Some((
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "too many sessions open on this server (at most {}); try again later",
                    caps.limits.max_sessions
                ),
            ))
        } else if client.sessions.len() + client.opening >= caps.limits.max_per_client {
            Some((
                StatusCode::TOO_MANY_REQUESTS,
                format!(
                    "too many sessions open for this client (at most {}); end one with an HTTP DELETE of its Mcp-Session-Id, or let it expire",
                    caps.limits.max_per_client
                ),
            ))
        } else {
            client.opening += 1;
            None
        }
    };
    if let Some((status, message)) = refused {
        let body = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": codes::INVALID_REQUEST, "message": message}});
        return (status, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response();
    }
    let opening = Opening { caps, key, principal };
    let response = serve(request).await;
    let session = response.headers().get(&MCP_SESSION_ID).and_then(|v| v.to_str().ok()).map(str::to_owned);
    opening.opened(session);
    response
}

/// [`cap_sessions`], or the request served at once where the wire layer found it surely
/// stateless (`stateless`: [`Stateless`](super::super::wire_fixes::layer::Stateless), a `POST`
/// naming no session) and it names its method (`Mcp-Method`, which a 2026-07-28 client sends):
/// such a request opens no session and names none, so there is nothing to count or check, where
/// `cap_sessions` would look its headers up again to find the same. Any other request is capped.
///
/// Either future, not an `async fn` awaiting one of them, which would hold the request and the
/// larger of the two again in every request's future.
pub(super) fn cap_stateless<'a, F, Fut>(
    caps: &'a SessionCaps,
    request: HttpRequest<Body>,
    stateless: bool,
    serve: F,
) -> futures_util::future::Either<Fut, impl Future<Output = Response> + 'a>
where
    F: FnOnce(HttpRequest<Body>) -> Fut + 'a,
    Fut: Future<Output = Response> + 'a,
{
    if stateless && request.headers().contains_key(&MCP_METHOD) {
        futures_util::future::Either::Left(serve(request))
    } else {
        futures_util::future::Either::Right(cap_sessions(caps, request, serve))
    }
}

/// The 2025-era session handling of [`McpServer::http_router`](super::McpServer::http_router), for
/// an rmcp server written by hand: rmcp's session manager with a keep-alive that covers the
/// engine's session waits, and a layer refusing an `initialize` past the caps on sessions open at
/// once, overall (503) and per client (429): its [`Principal`](crate::rmcp::Principal), else its
/// IP address (serve the router with `into_make_service_with_connect_info::<SocketAddr>()`),
/// else every client counts as one.
///
/// ```
/// use std::net::SocketAddr;
/// use elicit_runtime::rmcp::CappedSessions;
/// use elicit_runtime::server::session::SessionConfig;
///
/// let sessions = CappedSessions::new(&SessionConfig::default()).max_sessions_per_client(8);
/// // Give `sessions.manager()` to rmcp's `StreamableHttpService::new`, nest the service in a
/// // router, then: `sessions.layer(router).into_make_service_with_connect_info::<SocketAddr>()`.
/// let router = sessions.layer(axum::Router::new());
/// let _app = router.into_make_service_with_connect_info::<SocketAddr>();
/// ```
#[derive(Clone)]
pub struct CappedSessions {
    manager: Arc<LocalSessionManager>,
    limits: SessionLimits,
    session: SessionConfig,
}

impl std::fmt::Debug for CappedSessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CappedSessions").field("limits", &self.limits).finish_non_exhaustive()
    }
}

impl CappedSessions {
    /// The defaults ([`DEFAULT_MAX_SESSIONS`], [`DEFAULT_MAX_SESSIONS_PER_CLIENT`],
    /// [`DEFAULT_SESSION_KEEP_ALIVE`]), the keep-alive raised to cover the session waits (the
    /// engine's [`Engine::session_config`](crate::server::Engine::session_config)).
    pub fn new(session: &SessionConfig) -> CappedSessions {
        let limits = SessionLimits::default();
        let manager = Arc::new(session_manager(keep_alive(limits.keep_alive, session)));
        CappedSessions { manager, limits, session: session.clone() }
    }

    /// At most `sessions` open at once.
    pub fn max_sessions(mut self, sessions: usize) -> Self {
        self.limits.max_sessions = sessions;
        self
    }

    /// At most `sessions` open at once per client.
    pub fn max_sessions_per_client(mut self, sessions: usize) -> Self {
        self.limits.max_per_client = sessions;
        self
    }

    /// How long a session may stay without any event (never less than the session waits allow).
    pub fn keep_alive(mut self, keep_alive: Duration) -> Self {
        self.limits.keep_alive = keep_alive;
        self.manager = Arc::new(session_manager(self::keep_alive(keep_alive, &self.session)));
        self
    }

    /// The session manager to give rmcp's `StreamableHttpService`.
    pub fn manager(&self) -> Arc<LocalSessionManager> {
        self.manager.clone()
    }

    /// `router` (holding the service built on [`CappedSessions::manager`]) with the caps applied
    /// to every request that would open a session.
    pub fn layer(&self, router: axum::Router) -> axum::Router {
        let caps = Arc::new(SessionCaps::new(self.limits.clone(), self.manager.clone()));
        router.layer(middleware::from_fn_with_state(caps, capped))
    }
}

/// The middleware of [`CappedSessions::layer`].
async fn capped(State(caps): State<Arc<SessionCaps>>, request: HttpRequest<Body>, next: Next) -> Response {
    cap_sessions(&caps, request, |request| next.run(request)).await
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failing test should stop loudly")]
mod tests {
    use super::*;

    /// A request gets from `cap_stateless` what it gets from `cap_sessions`, found surely
    /// stateless (a `POST` naming no session) or not, naming its method or not, with caps that
    /// refuse every open and with the defaults.
    #[tokio::test]
    async fn cap_stateless_answers_as_cap_sessions() {
        let served = |_request: HttpRequest<Body>| async { StatusCode::OK.into_response() };
        let request = |method: Option<&str>| {
            let mut request = HttpRequest::builder().method(Method::POST).uri("/mcp");
            if let Some(method) = method {
                request = request.header("Mcp-Method", method);
            }
            request.body(Body::empty()).unwrap()
        };
        let shut = SessionLimits { max_sessions: 0, ..SessionLimits::default() };
        let mut statuses = Vec::new();
        for limits in [shut, SessionLimits::default()] {
            let caps = SessionCaps::new(limits, Arc::new(session_manager(DEFAULT_SESSION_KEEP_ALIVE)));
            for method in [Some("tools/call"), None] {
                let capped = cap_sessions(&caps, request(method), served).await.status();
                for stateless in [true, false] {
                    let status = cap_stateless(&caps, request(method), stateless, served).await.status();
                    assert_eq!(status, capped, "{method:?}, stateless: {stateless}");
                }
                statuses.push(capped);
            }
        }
        // The caps that refuse every open refuse the request naming no method: both paths ran.
        assert_eq!(statuses, [StatusCode::OK, StatusCode::SERVICE_UNAVAILABLE, StatusCode::OK, StatusCode::OK]);
    }
}
