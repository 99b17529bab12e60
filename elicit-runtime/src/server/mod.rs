//! The server engine: straight-line handlers over Multi Round-Trip Requests.
//!
//! Under protocol revision 2026-07-28 a server cannot send requests to the client. When a handler
//! needs input, the request is answered with an `InputRequiredResult`; the client retries with
//! `inputResponses` and the echoed `requestState`. The engine hides that: each round re-runs the
//! handler from the top (the replay model), and every ask whose answer is known — from this round's
//! `inputResponses` or from earlier rounds carried in the sealed state — returns at once. The first
//! unanswered asks suspend the handler and become the `inputRequests` of the result; asks awaited
//! together (`tokio::join!`) go out in one round.
//!
//! ```
//! use elicit_runtime::server::{Answer, Engine, Outcome, Request};
//! use elicit_runtime::state::KeyRing;
//! use elicit_runtime::Elicit;
//!
//! /// Who are you?
//! #[derive(Elicit)]
//! struct Name {
//!     name: String,
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
//! let engine = Engine::builder("doc-server", KeyRing::generate()).build();
//! let meta = serde_json::json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
//! let greet = |flow: elicit_runtime::server::Flow| async move {
//!     Ok(match flow.form::<Name>("who").await? {
//!         Answer::Accepted(n) => format!("Hello, {}!", n.name),
//!         Answer::Declined | Answer::Cancelled => "Hello, stranger.".to_owned(),
//!     })
//! };
//!
//! // Round 1: the engine asks.
//! let request = Request::new("tools/call", "greet").meta(meta.as_object());
//! let Outcome::InputRequired(asked) = engine.run(&request, greet).await.unwrap() else { panic!() };
//! assert_eq!(asked.input_requests[0].0, "who");
//!
//! // Round 2: the client answers and echoes the state.
//! let responses = serde_json::json!({"who": {"action": "accept", "content": {"name": "Ada"}}});
//! let retry = request.clone().input_responses(Some(&responses)).request_state(asked.request_state.as_deref());
//! let Outcome::Complete(text) = engine.run(&retry, greet).await.unwrap() else { panic!() };
//! assert_eq!(text, "Hello, Ada!");
//! # });
//! ```

mod args;
mod builder;
mod clock;
mod context;
mod exec;
mod flow;
mod observe;
mod once;
mod page_login;
#[cfg(feature = "pages")]
#[cfg_attr(docsrs, doc(cfg(feature = "pages")))]
pub mod pages;
pub(crate) mod payload;
mod reask;
mod round;
pub mod session;
mod store;
pub(crate) mod task;
mod url;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

pub use builder::{EngineBuilder, EngineConfig};
pub use clock::{Clock, ManualClock, SystemClock};
pub use context::{Progress, RequestHandle};
pub use flow::{Answer, Flow, FlowError, UrlAnswer};
#[cfg(feature = "metrics")]
pub use observe::FAST_DECLINE;
pub use page_login::{PageLogin, PageLoginError};
pub use session::{AskLimit, PeerError, PeerFuture, Session, SessionConfig, SessionPeer, SessionStats};
pub use store::{
    Claim, ClaimToken, DEFAULT_MAX_RECORDS, DEFAULT_MAX_URL_RECORDS_PER_PRINCIPAL, Finish, FlowLedger, InProcessStore,
    LedgerSnapshot, RecordKind, Slot, Store, StoreError, StoreFuture, UrlCompletions, UrlStatus,
};
#[cfg(feature = "redis")]
pub use store::{RedisStore, RedisStoreBuilder};
#[cfg(feature = "sqlite")]
pub use store::{SqliteStore, SqliteStoreBuilder, Synchronous};
pub use task::{
    DEFAULT_MAX_TASK_RECORDS, InProcessTasks, TaskConfig, TaskLimits, TaskRecord, TaskRecords, TaskSnapshot, TaskStart,
    TaskStatus, TaskSupport, TaskView,
};

use crate::state::{INVALID_STATE_MESSAGE, KeyRing, StateSealer};
use crate::wire::{Capabilities, InputRequiredResult, codes};
use exec::Executor;
use flow::Shared;
use payload::Payload;
use session::{LiveCounters, LiveLink};

/// One incoming request, as plain data: what any transport can hand the engine.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// `tools/call`, `prompts/get` or `resources/read`.
    pub method: &'a str,
    /// The tool or prompt name, or the resource URI.
    pub name: &'a str,
    /// The request's `arguments`.
    pub arguments: Option<&'a Value>,
    /// The request's `_meta` (capabilities are read from it every round).
    pub meta: Option<&'a Map<String, Value>>,
    /// The request's `inputResponses`, unparsed.
    pub input_responses: Option<&'a Value>,
    /// The request's `requestState`.
    pub request_state: Option<&'a str>,
    /// The authenticated principal, when the transport knows one; the state is bound to it.
    pub principal: Option<&'a str>,
}

impl<'a> Request<'a> {
    /// A first-round request with no arguments, `_meta` or answers.
    pub fn new(method: &'a str, name: &'a str) -> Self {
        Request {
            method,
            name,
            arguments: None,
            meta: None,
            input_responses: None,
            request_state: None,
            principal: None,
        }
    }

    /// Sets `arguments`.
    pub fn arguments(mut self, arguments: Option<&'a Value>) -> Self {
        self.arguments = arguments;
        self
    }

    /// Sets `_meta`.
    pub fn meta(mut self, meta: Option<&'a Map<String, Value>>) -> Self {
        self.meta = meta;
        self
    }

    /// Sets `inputResponses`.
    pub fn input_responses(mut self, input_responses: Option<&'a Value>) -> Self {
        self.input_responses = input_responses;
        self
    }

    /// Sets `requestState`.
    pub fn request_state(mut self, request_state: Option<&'a str>) -> Self {
        self.request_state = request_state;
        self
    }

    /// Sets the authenticated principal.
    pub fn principal(mut self, principal: Option<&'a str>) -> Self {
        self.principal = principal;
        self
    }
}

/// What a round produced.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome<R> {
    /// The handler finished.
    Complete(R),
    /// The handler needs input: send this result and wait for the retry.
    InputRequired(InputRequiredResult),
}

/// The message of the `-32603` a round gets when it would finish its flow otherwise than the flow
/// already went (a fork of an earlier state, or one racing the real last round): one outcome per
/// flow. Retrying with the same `requestState` returns the recorded result.
pub const FLOW_CONFLICT: &str = "another round of this flow finished it or changed it meanwhile: retry with the same requestState to get its result";

/// A JSON-RPC error to send instead of a result.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineError {
    /// The JSON-RPC error code.
    pub code: i32,
    /// The error message.
    pub message: String,
    /// The error data, if any.
    pub data: Option<Value>,
}

impl EngineError {
    /// `-32602` with the one message every `requestState` failure shares.
    pub fn invalid_state() -> Self {
        EngineError { code: codes::INVALID_PARAMS, message: INVALID_STATE_MESSAGE.to_owned(), data: None }
    }

    /// `-32602` with a message.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        EngineError { code: codes::INVALID_PARAMS, message: message.into(), data: None }
    }
}

impl std::fmt::Display for EngineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for EngineError {}

impl From<FlowError> for EngineError {
    fn from(error: FlowError) -> Self {
        match error {
            FlowError::Unsupported { required } => EngineError {
                code: codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
                message: "this request needs a client capability that was not declared".to_owned(),
                data: Some(json!({ "requiredCapabilities": required })),
            },
            FlowError::InvalidInput(message) => EngineError::invalid_params(message),
            // The detail names the store's host and what failed: the server's log, not the client's business.
            FlowError::Store(error) => {
                tracing::error!(target: "elicit_runtime", %error, "a store operation failed");
                let message = match error {
                    // A limit of the deployment: the client may act on it (finish or wait).
                    StoreError::Full { .. } | StoreError::Quota { .. } | StoreError::TaskCap { .. } => {
                        error.to_string()
                    }
                    _ => {
                        "this flow's records are unavailable right now (completion store error); retry later".to_owned()
                    }
                };
                EngineError { code: codes::INTERNAL_ERROR, message, data: None }
            }
            FlowError::Failed(message) => EngineError { code: codes::INTERNAL_ERROR, message, data: None },
            FlowError::Handler(error) => {
                EngineError { code: codes::INTERNAL_ERROR, message: error.to_string(), data: None }
            }
        }
    }
}

/// Runs handlers round by round, sealing what they need between rounds into `requestState`.
///
/// An engine keeps nothing between rounds: any instance holding the same key ring can serve the
/// next round; what must not be forked lives in the shared [`Store`].
pub struct Engine {
    audience: String,
    sealer: StateSealer,
    store: Arc<dyn Store>,
    config: EngineConfig,
    live: SessionConfig,
    counters: Arc<LiveCounters>,
    clock: Arc<dyn Clock>,
    tasks: Arc<dyn TaskRecords>,
    task_config: TaskConfig,
    #[cfg(feature = "pages")]
    pages: Option<pages::FormPages>,
    #[cfg(feature = "apps")]
    app_forms: crate::apps::AppForms,
}

impl Engine {
    /// Starts building an engine. `audience` (usually the server's name) is bound into every
    /// state, so a state minted by one server is refused by another sharing its keys.
    pub fn builder(audience: impl Into<String>, keys: KeyRing) -> EngineBuilder {
        EngineBuilder::new(audience.into(), keys)
    }

    /// New caps for one 2025-era connection — its outstanding asks and its running calls, sized by
    /// [`SessionConfig::max_outstanding_asks`] and [`SessionConfig::max_tasks_per_session`]: make one per
    /// connection and share it across its calls.
    pub fn ask_limit(&self) -> AskLimit {
        AskLimit::with_tasks(self.live.max_outstanding_asks, self.live.max_tasks_per_session)
    }

    /// How many calls running in sessions and URL-mode records this engine holds right now.
    pub fn session_stats(&self) -> SessionStats {
        self.counters.snapshot()
    }

    /// The bounds of 2025-era sessions ([`EngineBuilder::session_config`]): a transport keeps a
    /// session open at least as long as its longest wait.
    pub fn session_config(&self) -> &SessionConfig {
        &self.live
    }

    /// Runs `handler` once in a 2025-era session: every ask is sent through the session's
    /// peer and awaited (see [`SessionPeer`]). The same handler serves [`Engine::run`].
    ///
    /// Errors are the JSON-RPC errors to send: `-32600` with `data.requiredCapabilities` when the
    /// handler needs a capability the session did not declare (this wire has no `-32021`),
    /// `-32602` for answers that kept failing validation or are malformed, `-32603` for a client
    /// that did not answer in time, the session running as many calls as it may, handler and store
    /// failures. Dropping the returned future drops the task and releases the URL-mode records it
    /// holds and its permit.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use elicit_runtime::server::{Answer, Engine, Flow, PeerFuture, SessionPeer, Session, PeerError, Request};
    /// use elicit_runtime::state::KeyRing;
    /// use elicit_runtime::wire::{Capabilities, Revision};
    /// use elicit_runtime::Elicit;
    /// use serde_json::{Value, json};
    ///
    /// /// Who are you?
    /// #[derive(Elicit)]
    /// struct Name {
    ///     name: String,
    /// }
    ///
    /// /// A client that answers every form with the name Ada (a real one is the rmcp adapter's peer).
    /// struct Ada;
    /// impl SessionPeer for Ada {
    ///     fn request(&self, method: &'static str, params: Option<Value>) -> PeerFuture<'_, Result<Value, PeerError>> {
    ///         assert_eq!(method, "elicitation/create");
    ///         assert!(params.unwrap().get("mode").is_none(), "2025-06-18 has no mode");
    ///         Box::pin(async { Ok(json!({"action": "accept", "content": {"name": "Ada"}})) })
    ///     }
    ///     fn notify(&self, _method: &'static str, _params: Value) -> PeerFuture<'_, Result<(), PeerError>> {
    ///         Box::pin(async { Ok(()) })
    ///     }
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let engine = Engine::builder("doc-server", KeyRing::generate()).build();
    /// let form_only = Capabilities { form: true, ..Capabilities::default() };
    /// let session = Session::new(Revision::V2025_06_18, form_only, Arc::new(Ada), engine.ask_limit());
    /// let greet = |flow: Flow| async move {
    ///     Ok(match flow.form::<Name>("who").await? {
    ///         Answer::Accepted(n) => format!("Hello, {}!", n.name),
    ///         Answer::Declined | Answer::Cancelled => "Hello, stranger.".to_owned(),
    ///     })
    /// };
    /// let text = engine.run_in_session(&Request::new("tools/call", "greet"), &session, greet).await.unwrap();
    /// assert_eq!(text, "Hello, Ada!");
    /// # });
    /// ```
    pub async fn run_in_session<R, F, Fut>(
        &self,
        request: &Request<'_>,
        session: &Session,
        handler: F,
    ) -> Result<R, EngineError>
    where
        F: FnOnce(Flow) -> Fut,
        Fut: Future<Output = Result<R, FlowError>>,
    {
        let _task = self.counters.task();
        let link = LiveLink::new(session.clone(), self.live.clone(), self.counters.clone(), self.store.clone())
            .map_err(EngineError::from)?;
        let flow = Flow::new(
            Capabilities::default(),
            request.arguments.cloned().unwrap_or(Value::Null),
            Payload::default(),
            Map::new(),
            self.shared(Executor::Live(Box::new(link))),
        )
        .with_principal(request.principal);
        #[cfg(feature = "apps")]
        let flow = flow.with_app_forms(session.app_forms);
        let round = observe::Round::live(request, session, &flow);
        let finished = round.instrument(handler(flow.clone())).await;
        let fatal = flow.take_fatal();
        round.ended(&flow, fatal.is_none() && finished.is_ok());
        drop(flow);
        match fatal.map_or(finished, Err) {
            Ok(result) => Ok(result),
            Err(FlowError::Unsupported { required }) => Err(EngineError {
                code: codes::INVALID_REQUEST,
                message: format!(
                    "this request needs a client capability this session did not declare in `initialize`: {required}"
                ),
                data: Some(json!({ "requiredCapabilities": required })),
            }),
            Err(error) => Err(error.into()),
        }
    }

    /// The URL-mode half of the engine's store: what a page completing a step needs.
    pub fn url_completions(&self) -> Arc<dyn UrlCompletions> {
        self.store.clone()
    }

    /// What every flow of a round shares.
    fn shared(&self, exec: Executor) -> Shared {
        Shared {
            store: self.store.clone(),
            config: self.config.clone(),
            record_ttl: self.record_ttl(),
            exec,
            #[cfg(feature = "pages")]
            pages: self.pages.clone(),
            #[cfg(feature = "apps")]
            app_forms: self.app_forms.clone(),
        }
    }

    /// **Experimental, from a draft.** The forms this engine offers as MCP Apps
    /// ([`EngineBuilder::app_form`]): serve each at its URI (the rmcp adapter's `McpServer` does).
    #[cfg(feature = "apps")]
    #[cfg_attr(docsrs, doc(cfg(feature = "apps")))]
    pub fn app_forms(&self) -> &[crate::apps::AppForm] {
        self.app_forms.all()
    }

    /// The engine's form pages ([`EngineBuilder::form_pages`]): their routes, and their blocks
    /// for custom pages. `None` unless set.
    #[cfg(feature = "pages")]
    #[cfg_attr(docsrs, doc(cfg(feature = "pages")))]
    pub fn form_pages(&self) -> Option<&pages::FormPages> {
        self.pages.as_ref()
    }

    /// How long ledger records live after each write: the states' lifetime, and a margin for the
    /// drift between this instance's clock and a shared store's.
    fn record_ttl(&self) -> Duration {
        self.sealer.ttl() + RECORD_TTL_MARGIN
    }
}

/// See [`Engine::record_ttl`].
const RECORD_TTL_MARGIN: Duration = Duration::from_secs(60);

/// How long a resumed round may run and still seal its next state without extending its flow's
/// ledger record again: the round extends the record as it opens by the record TTL and this
/// much more, so a state sealed within it dies first, the margin for clock drift kept whole.
const ROUND_ALLOWANCE: Duration = Duration::from_secs(60);
