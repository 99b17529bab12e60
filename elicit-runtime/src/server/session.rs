//! Handlers in a 2025-era session: the same handlers, run once, their asks pushed to the client.
//!
//! A client that opens with `initialize` (2025-06-18 or 2025-11-25) expects the server to push
//! `elicitation/create`, `sampling/createMessage` and `roots/list` requests while its call is open.
//! There is nothing to replay on that wire: the engine runs the handler once, as one task, and
//! each ask of its [`Flow`](super::Flow) becomes a request sent through a [`SessionPeer`] and awaited.
//! Everything else — validation by the same parser, invalid answers asked again, URL mode's
//! out-of-band completion — is the code path the replay model uses.
//!
//! Bounds: a [`Session`] caps the asks outstanding on one connection and the calls running on
//! it (each holds its permit for the whole task, URL-mode waits included), each ask has a timeout,
//! and the wait for a URL-mode page is bounded ([`SessionConfig`]). Dropping the task (the client
//! went away, cancelled the call, or ended the session) releases its URL-mode records;
//! [`SessionStats`] counts tasks and records alive so a deployment (and the tests) can see nothing leaks.

use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Interval, MissedTickBehavior};

use super::answer::FlowError;
use super::context::AskingFlow;
use super::observe::{self, ClientName};
use super::store::{Store, UrlStatus};
use crate::wire::{Capabilities, ELICITATION_COMPLETE, InputRequest, Revision, clip};

pub use super::context::PeerFuture;

/// The client end of a 2025-era connection, as the engine needs it.
///
/// The rmcp adapter implements it over `Peer<RoleServer>`, inside the client request the ask
/// serves (so on Streamable HTTP the request rides that request's SSE stream).
pub trait SessionPeer: Send + Sync {
    /// Sends a server-to-client request and returns the client's result as sent, or why there is
    /// none (the connection closed, the client answered with an error).
    fn request(&self, method: &'static str, params: Option<Value>) -> PeerFuture<'_, Result<Value, PeerError>>;

    /// Sends a notification.
    fn notify(&self, method: &'static str, params: Value) -> PeerFuture<'_, Result<(), PeerError>>;
}

/// Why a [`SessionPeer`] request has no result, or a notification was not sent.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PeerError {
    /// The client answered the request with a JSON-RPC error.
    Answered {
        /// The error's code.
        code: i32,
        /// The error's message, as the client sent it.
        message: String,
    },
    /// The client's result is not JSON the engine can read.
    Unreadable,
    /// The connection to the client failed (the transport's detail belongs in the server's log).
    Connection,
}

impl std::fmt::Display for PeerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PeerError::Answered { code, message } => {
                write!(f, "the client answered with error {code}: {}", clip(message))
            }
            PeerError::Unreadable => f.write_str("the client's result could not be read"),
            PeerError::Connection => f.write_str("the connection to the client failed"),
        }
    }
}

impl std::error::Error for PeerError {}

/// Tunables of the live executor; every field has a safe default and a setter on
/// [`EngineBuilder`](super::EngineBuilder).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SessionConfig {
    /// Asks outstanding at once on one session (more fail with a clear error). Default 16.
    pub max_outstanding_asks: usize,
    /// How long one ask waits for the client's answer. Default 600 s (a person is filling a form).
    pub ask_timeout: Duration,
    /// How long the handler waits, after URL-mode consent, for the page to record completion.
    /// Default 600 s.
    pub url_completion_timeout: Duration,
    /// Calls run live at once on one session, each for its whole run (URL-mode waits included);
    /// one more fails at once with a clear error. Default 32.
    pub max_tasks_per_session: usize,
    /// While a call waits on a person (a pushed ask, a URL-mode page), how often the engine sends
    /// `notifications/progress` for the call, when the client gave a `progressToken`: a client
    /// that resets its request timeout on progress keeps the call open as long as the person
    /// takes (within [`ask_timeout`](Self::ask_timeout) and [`url_completion_timeout`](Self::url_completion_timeout)).
    /// Well under the common 60 s client timeout. Default 15 s; zero sends none.
    pub heartbeat: Duration,
    /// While a URL-mode ask is pushed and not yet answered, how often the engine looks whether the
    /// page recorded completion, to send `notifications/elicitation/complete` at once. Default
    /// 1 s; zero looks only after the client answers.
    pub url_poll: Duration,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            max_outstanding_asks: 16,
            ask_timeout: Duration::from_secs(600),
            url_completion_timeout: Duration::from_secs(600),
            max_tasks_per_session: 32,
            heartbeat: Duration::from_secs(15),
            url_poll: Duration::from_secs(1),
        }
    }
}

/// One 2025-era connection: its negotiated revision, what the client declared in `initialize`,
/// the peer to send through, and the cap on its outstanding asks. Cheap to clone; clones share the cap.
#[derive(Clone)]
pub struct Session {
    pub(super) version: Revision,
    pub(super) capabilities: Capabilities,
    pub(super) peer: Arc<dyn SessionPeer>,
    pub(super) limit: AskLimit,
    pub(super) client: ClientName,
    /// Whether the client's `initialize` negotiated app-rendered forms (draft).
    #[cfg(feature = "apps")]
    pub(super) app_forms: bool,
}

impl Session {
    /// A session on `version` whose client declared `capabilities`, asking through `peer`, its
    /// outstanding asks counted against `limit` (share one limit across a connection's calls).
    /// `version` is one of [`Revision::SESSION`]: 2026-07-28 pushes nothing, so every ask of a
    /// session on it fails.
    pub fn new(version: Revision, capabilities: Capabilities, peer: Arc<dyn SessionPeer>, limit: AskLimit) -> Self {
        Session {
            version,
            capabilities,
            peer,
            limit,
            client: ClientName::default(),
            #[cfg(feature = "apps")]
            app_forms: false,
        }
    }

    /// **Experimental, from a draft.** This session, app-rendered forms negotiated as the
    /// `ClientCapabilities` its `initialize` declared say (see [`crate::apps::negotiated`]).
    #[cfg(feature = "apps")]
    #[cfg_attr(docsrs, doc(cfg(feature = "apps")))]
    pub fn with_client_capabilities(mut self, declared: Option<&serde_json::Map<String, Value>>) -> Self {
        self.app_forms = crate::apps::negotiated(declared);
        self
    }

    /// This session, its client named as its `initialize` named it (`clientInfo`): the metrics
    /// of the `metrics` feature count answers by client.
    pub fn with_client(mut self, name: &str, version: &str) -> Self {
        self.client = ClientName::new(name, version);
        self
    }

    /// The negotiated revision.
    pub fn version(&self) -> Revision {
        self.version
    }
}

/// The caps of one connection: its outstanding asks, and its calls running live. Cheap to clone;
/// clones share the caps.
#[derive(Clone, Debug)]
pub struct AskLimit {
    asks: Arc<Semaphore>,
    pub(super) tasks: Arc<Semaphore>,
    pub(super) max_tasks: usize,
}

impl AskLimit {
    /// At most `max` asks outstanding at once (and the default cap on running calls, see
    /// [`SessionConfig::max_tasks_per_session`]).
    pub fn new(max: usize) -> Self {
        AskLimit::with_tasks(max, SessionConfig::default().max_tasks_per_session)
    }

    /// At most `max_asks` asks outstanding and `max_tasks` calls running at once.
    pub fn with_tasks(max_asks: usize, max_tasks: usize) -> Self {
        AskLimit { asks: Arc::new(Semaphore::new(max_asks)), tasks: Arc::new(Semaphore::new(max_tasks)), max_tasks }
    }

    pub(super) fn try_take(&self) -> Option<OwnedSemaphorePermit> {
        self.asks.clone().try_acquire_owned().ok()
    }
}

/// How many live tasks and URL-mode records an engine holds right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SessionStats {
    /// Handlers running as live tasks.
    pub tasks: usize,
    /// URL-mode records minted by live tasks and not yet consumed or released.
    pub url_records: usize,
}

#[derive(Default)]
pub(super) struct LiveCounters {
    tasks: AtomicUsize,
    url_records: AtomicUsize,
}

impl LiveCounters {
    pub(super) fn snapshot(&self) -> SessionStats {
        SessionStats { tasks: self.tasks.load(Ordering::SeqCst), url_records: self.url_records.load(Ordering::SeqCst) }
    }

    pub(super) fn task(self: &Arc<Self>) -> TaskGuard {
        self.tasks.fetch_add(1, Ordering::SeqCst);
        TaskGuard(self.clone())
    }

    pub(super) fn record_added(&self) {
        self.url_records.fetch_add(1, Ordering::SeqCst);
    }

    pub(super) fn record_gone(&self) {
        self.url_records.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Counts one live task for as long as it exists.
pub(super) struct TaskGuard(Arc<LiveCounters>);

impl Drop for TaskGuard {
    fn drop(&mut self) {
        self.0.tasks.fetch_sub(1, Ordering::SeqCst);
    }
}

/// What a live flow needs beyond a replayed one: the `Live` executor's state. Dropped with the
/// last clone of the flow, which is when the task is dropped: the URL-mode records it still holds
/// are released then, and its permit on the session's task cap returns.
pub(super) struct LiveLink {
    session: Session,
    config: SessionConfig,
    counters: Arc<LiveCounters>,
    store: Arc<dyn Store>,
    /// URL-mode ids minted and not yet consumed or released.
    held: Mutex<Vec<String>>,
    /// URL-mode ids whose completion the client was told of already.
    told: Mutex<Vec<String>>,
    /// Heartbeats sent on this call (the progress they report: it must increase).
    beats: AtomicU64,
    _task: OwnedSemaphorePermit,
}

impl LiveLink {
    /// The link of one live task, or the error to answer when the session runs as many tasks as
    /// it may.
    pub(super) fn new(
        session: Session,
        config: SessionConfig,
        counters: Arc<LiveCounters>,
        store: Arc<dyn Store>,
    ) -> Result<Self, FlowError> {
        let Ok(task) = session.limit.tasks.clone().try_acquire_owned() else {
            return Err(FlowError::Failed(format!(
                "too many calls are running on this session (at most {}); wait for one to finish",
                session.limit.max_tasks
            )));
        };
        Ok(LiveLink {
            session,
            config,
            counters,
            store,
            held: Mutex::new(Vec::new()),
            told: Mutex::new(Vec::new()),
            beats: AtomicU64::new(0),
            _task: task,
        })
    }

    pub(super) fn capabilities(&self) -> Capabilities {
        self.session.capabilities
    }

    pub(super) fn url_completion_timeout(&self) -> Duration {
        self.config.url_completion_timeout
    }

    fn held(&self) -> MutexGuard<'_, Vec<String>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn hold(&self, id: &str) {
        let mut held = self.held();
        if !held.iter().any(|h| h == id) {
            held.push(id.to_owned());
            self.counters.record_added();
        }
    }

    /// The record is gone from the store (consumed by `take`): stop holding it.
    pub(super) fn consumed(&self, id: &str) {
        let mut held = self.held();
        if let Some(at) = held.iter().position(|h| h == id) {
            held.swap_remove(at);
            self.counters.record_gone();
        }
    }

    /// Removes the record from the store and stops holding it.
    pub(super) fn release(&self, id: &str) {
        self.store.release(id);
        self.consumed(id);
    }

    /// Sends `request` to the client and awaits its answer, bounded.
    #[allow(clippy::manual_async_fn, reason = "an `async fn` would hold its arguments twice")]
    pub(super) fn ask(
        &self,
        flow: &dyn AskingFlow,
        key: &str,
        request: &InputRequest,
        elicitation_id: Option<&str>,
    ) -> impl Future<Output = Result<Value, FlowError>> {
        // An async block rather than an `async fn`, which would keep its arguments twice (as
        // taken and as bound) for as long as the client takes to answer.
        async move {
            let (method, params) =
                self.session.version.request(request, elicitation_id).map_err(|e| FlowError::Failed(e.to_string()))?;
            let Some(_permit) = self.session.limit.try_take() else {
                return Err(flow.fail(FlowError::Failed(format!(
                    "too many requests to the client are outstanding on this session (at most {})",
                    self.config.max_outstanding_asks
                ))));
            };
            let mode = mode(request);
            observe::asked(self.session.version.as_str(), mode, &self.session.client);
            let sent = Instant::now();
            let asked = std::pin::pin!(tokio::time::timeout(
                self.config.ask_timeout,
                self.session.peer.request(method, params)
            ));
            match self.waiting(flow, elicitation_id, asked).await {
                Ok(Ok(answer)) => {
                    let action = answer.get("action").and_then(Value::as_str).unwrap_or("answer");
                    observe::answered(
                        self.session.version.as_str(),
                        mode,
                        action,
                        &self.session.client,
                        Some(sent.elapsed()),
                    );
                    Ok(answer)
                }
                // The client refused to show it (a host that declared the mode but cannot present it,
                // one that answers every push with an error): the person was not asked, which is not a
                // decline. The handler sees what it sees for an undeclared mode, and may fall back.
                Ok(Err(PeerError::Answered { code, message })) => {
                    tracing::debug!(target: "elicit_runtime", code, message = %clip(&message), key = %clip(key), "the client refused a pushed ask");
                    Err(FlowError::Unsupported { required: needed(request) })
                }
                Ok(Err(reason)) => {
                    Err(flow.fail(FlowError::Failed(format!("the client did not answer `{}`: {reason}", clip(key)))))
                }
                Err(_) => Err(flow.fail(FlowError::Failed(format!(
                    "the client did not answer `{}` within {:?}",
                    clip(key),
                    self.config.ask_timeout
                )))),
            }
        }
    }

    /// Awaits `wait` while a person is asked: every [`SessionConfig::heartbeat`] a progress
    /// notification for the call (sent only when the client gave a `progressToken`), and, while
    /// the URL-mode step `url` is pushed and unanswered, its completion told to the client as
    /// soon as the page records it (the host need not wait for the person to confirm).
    ///
    /// `wait` comes pinned by the caller, which holds it: taken by value, it would be held twice
    /// (as taken and as pinned here) for as long as the person takes.
    pub(super) async fn waiting<T>(
        &self,
        flow: &dyn AskingFlow,
        url: Option<&str>,
        mut wait: std::pin::Pin<&mut impl Future<Output = T>>,
    ) -> T {
        enum Event<T> {
            Done(T),
            Beat,
            Poll,
        }
        let mut beat = ticker(self.config.heartbeat);
        let mut poll = url.and_then(|_| ticker(self.config.url_poll));
        loop {
            let event = tokio::select! {
                biased;
                done = &mut wait => Event::Done(done),
                () = tick(&mut beat) => Event::Beat,
                () = tick(&mut poll) => Event::Poll,
            };
            match event {
                Event::Done(done) => return done,
                Event::Beat => {
                    let beats = self.beats.fetch_add(1, Ordering::SeqCst) + 1;
                    #[allow(clippy::cast_precision_loss, reason = "a count of heartbeats stays far below 2^52")]
                    let progress = beats as f64;
                    if let Err(error) =
                        flow.request().progress(progress, None, Some("Waiting for the person to answer")).await
                    {
                        tracing::debug!(target: "elicit_runtime", %error, "a heartbeat could not be sent");
                    }
                }
                Event::Poll => {
                    if let Some(id) = url
                        && self.page_recorded(id).await
                    {
                        poll = None;
                    }
                }
            }
        }
    }

    /// Whether the page of step `id` recorded completion; if so the client is told now, once.
    async fn page_recorded(&self, id: &str) -> bool {
        if !matches!(self.store.status(id).await, Ok(UrlStatus::Completed(_))) {
            return false;
        }
        self.told.lock().unwrap_or_else(|e| e.into_inner()).push(id.to_owned());
        if let Err(reason) = self.session.peer.notify(ELICITATION_COMPLETE, json!({"elicitationId": id})).await {
            tracing::debug!(target: "elicit_runtime", %reason, "notifications/elicitation/complete could not be sent");
        }
        true
    }

    /// Step `id` was completed and taken: tells the client (`notifications/elicitation/complete`),
    /// unless it was told as the page recorded it.
    pub(super) async fn completed(&self, id: &str) -> Result<(), FlowError> {
        self.consumed(id);
        if self.told.lock().unwrap_or_else(|e| e.into_inner()).iter().any(|told| told == id) {
            return Ok(());
        }
        self.session
            .peer
            .notify(ELICITATION_COMPLETE, json!({"elicitationId": id}))
            .await
            .map_err(|reason| FlowError::Failed(format!("could not tell the client the page was completed: {reason}")))
    }

    /// The page of `key` was not completed within the wait: its step `id` is released.
    pub(super) fn url_timed_out(&self, key: &str, id: &str) -> FlowError {
        self.release(id);
        FlowError::Failed(format!(
            "the page of `{}` was not completed within {:?}",
            clip(key),
            self.config.url_completion_timeout
        ))
    }
}

impl Drop for LiveLink {
    fn drop(&mut self) {
        for id in std::mem::take(&mut *self.held()) {
            self.store.release(&id);
            self.counters.record_gone();
        }
    }
}

/// An interval first firing one `period` from now; none for a zero period.
fn ticker(period: Duration) -> Option<Interval> {
    if period.is_zero() {
        return None;
    }
    let mut interval = tokio::time::interval_at(Instant::now() + period, period);
    interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
    Some(interval)
}

/// The next tick of `interval`; never, without one.
async fn tick(interval: &mut Option<Interval>) {
    match interval {
        Some(interval) => {
            interval.tick().await;
        }
        None => std::future::pending().await,
    }
}

/// The client capabilities `request` needs, as [`FlowError::Unsupported`] names them.
fn needed(request: &InputRequest) -> Value {
    match request {
        InputRequest::Elicit(crate::wire::ElicitParams::Form { .. }) => json!({"elicitation": {"form": {}}}),
        InputRequest::Elicit(crate::wire::ElicitParams::Url { .. }) => json!({"elicitation": {"url": {}}}),
        InputRequest::CreateMessage(_) => json!({"sampling": {}}),
        InputRequest::ListRoots => json!({"roots": {}}),
    }
}

/// The kind of `request`, as the metrics name it.
fn mode(request: &InputRequest) -> &'static str {
    match request {
        InputRequest::Elicit(crate::wire::ElicitParams::Form { .. }) => "form",
        InputRequest::Elicit(crate::wire::ElicitParams::Url { .. }) => "url",
        InputRequest::CreateMessage(_) => "sampling",
        InputRequest::ListRoots => "roots",
    }
}
