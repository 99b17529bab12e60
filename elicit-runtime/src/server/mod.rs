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

mod completion;
mod context;
mod flow;
mod live;
#[cfg(feature = "redis")]
mod redis_store;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use serde_json::{Map, Value, json};

pub use completion::{
    CompletionStore, DEFAULT_MAX_RECORDS, Finish, InProcessStore, OnceClaim, StoreError, StoreFuture, UrlStatus,
};
pub use context::RequestHandle;
pub use flow::{Answer, Flow, FlowError, UrlAnswer};
pub use live::{AskLimit, LiveConfig, LiveFuture, LivePeer, LiveSession, LiveStats};
#[cfg(feature = "redis")]
pub use redis_store::{RedisStore, RedisStoreBuilder};

use crate::state::{Binding, INVALID_STATE_MESSAGE, KeyRing, StateSealer, digest_arguments};
use crate::wire::{self, Capabilities, InputRequiredResult, codes};
use flow::{FlowState, LiveLink, Suspension};
use live::LiveCounters;

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
                tracing::error!(target: "elicit_runtime", %error, "URL-mode elicitation failed in the completion store");
                EngineError {
                    code: codes::INTERNAL_ERROR,
                    message: "URL-mode elicitation is unavailable right now (completion store error)".to_owned(),
                    data: None,
                }
            }
            FlowError::Failed(message) => EngineError { code: codes::INTERNAL_ERROR, message, data: None },
            FlowError::Handler(error) => {
                EngineError { code: codes::INTERNAL_ERROR, message: error.to_string(), data: None }
            }
        }
    }
}

/// Tunables of an [`Engine`]; every field has a safe default.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// How many times an answer that fails validation is asked again before the request fails.
    pub max_invalid_answers: u32,
    /// How long a retry after URL-mode consent may wait for the out-of-band step to finish
    /// before the engine answers with another `InputRequiredResult`.
    pub url_wait: Duration,
    /// How long a minted URL-mode id stays valid.
    pub url_ttl: Duration,
    /// How long a [`Flow::once`] waits for a concurrent round of the same flow that is running
    /// the same computation, before failing with a clear error.
    pub once_wait: Duration,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            max_invalid_answers: 3,
            url_wait: Duration::from_secs(2),
            url_ttl: Duration::from_secs(15 * 60),
            once_wait: Duration::from_secs(10),
        }
    }
}

/// Builds an [`Engine`].
pub struct EngineBuilder {
    audience: String,
    sealer: StateSealer,
    store: Arc<dyn CompletionStore>,
    config: EngineConfig,
    live: LiveConfig,
}

impl EngineBuilder {
    /// Replaces the tunables of handlers run live on 2025-era sessions.
    pub fn live_config(mut self, live: LiveConfig) -> Self {
        self.live = live;
        self
    }

    /// Uses this completion store for URL mode (default: [`InProcessStore`]).
    pub fn completion_store(mut self, store: Arc<dyn CompletionStore>) -> Self {
        self.store = store;
        self
    }

    /// How long a sealed state stays valid (default 15 minutes).
    pub fn state_ttl(mut self, ttl: Duration) -> Self {
        self.sealer = self.sealer.with_ttl(ttl);
        self
    }

    /// The largest `requestState` accepted or produced, in characters (default 64 KiB).
    pub fn max_state_len(mut self, len: usize) -> Self {
        self.sealer = self.sealer.with_max_token_len(len);
        self
    }

    /// Replaces the tunables.
    pub fn config(mut self, config: EngineConfig) -> Self {
        self.config = config;
        self
    }

    /// The engine.
    pub fn build(self) -> Engine {
        Engine {
            audience: self.audience,
            sealer: self.sealer,
            store: self.store,
            config: self.config,
            live: self.live,
            counters: Arc::default(),
        }
    }
}

/// Runs handlers round by round, sealing what they need between rounds into `requestState`.
///
/// An engine keeps nothing between rounds: any instance holding the same key ring can serve the
/// next round (URL-mode completion excepted, which lives in the [`CompletionStore`]).
pub struct Engine {
    audience: String,
    sealer: StateSealer,
    store: Arc<dyn CompletionStore>,
    config: EngineConfig,
    live: LiveConfig,
    counters: Arc<LiveCounters>,
}

impl Engine {
    /// Starts building an engine. `audience` (usually the server's name) is bound into every
    /// state, so a state minted by one server is refused by another sharing its keys.
    pub fn builder(audience: impl Into<String>, keys: KeyRing) -> EngineBuilder {
        EngineBuilder {
            audience: audience.into(),
            sealer: StateSealer::new(keys),
            store: Arc::new(InProcessStore::new()),
            config: EngineConfig::default(),
            live: LiveConfig::default(),
        }
    }

    /// A new cap on one 2025-era connection's outstanding asks, sized by
    /// [`LiveConfig::max_outstanding_asks`]: make one per connection and share it across its calls.
    pub fn ask_limit(&self) -> AskLimit {
        AskLimit::new(self.live.max_outstanding_asks)
    }

    /// How many live tasks and URL-mode records this engine holds right now.
    pub fn live_stats(&self) -> LiveStats {
        self.counters.snapshot()
    }

    /// The bounds of 2025-era live sessions ([`EngineBuilder::live_config`]): a transport keeps a
    /// session open at least as long as its longest wait.
    pub fn live_config(&self) -> &LiveConfig {
        &self.live
    }

    /// Runs `handler` once, live, on a 2025-era session: every ask is sent through the session's
    /// peer and awaited (see [`LivePeer`]). The same handler serves [`Engine::run`].
    ///
    /// Errors are the JSON-RPC errors to send: `-32600` with `data.requiredCapabilities` when the
    /// handler needs a capability the session did not declare (this wire has no `-32021`),
    /// `-32602` for answers that kept failing validation or are malformed, `-32603` for a client
    /// that did not answer in time, handler and store failures. Dropping the returned future drops
    /// the task and releases the URL-mode records it holds.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use elicit_runtime::server::{Answer, Engine, Flow, LiveFuture, LivePeer, LiveSession, Request};
    /// use elicit_runtime::state::KeyRing;
    /// use elicit_runtime::wire::{Capabilities, LegacyVersion};
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
    /// impl LivePeer for Ada {
    ///     fn request(&self, method: &'static str, params: Option<Value>) -> LiveFuture<'_, Result<Value, String>> {
    ///         assert_eq!(method, "elicitation/create");
    ///         assert!(params.unwrap().get("mode").is_none(), "2025-06-18 has no mode");
    ///         Box::pin(async { Ok(json!({"action": "accept", "content": {"name": "Ada"}})) })
    ///     }
    ///     fn notify(&self, _method: &'static str, _params: Value) -> LiveFuture<'_, Result<(), String>> {
    ///         Box::pin(async { Ok(()) })
    ///     }
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let engine = Engine::builder("doc-server", KeyRing::generate()).build();
    /// let form_only = Capabilities { form: true, ..Capabilities::default() };
    /// let session = LiveSession::new(LegacyVersion::V2025_06_18, form_only, Arc::new(Ada), engine.ask_limit());
    /// let greet = |flow: Flow| async move {
    ///     Ok(match flow.form::<Name>("who").await? {
    ///         Answer::Accepted(n) => format!("Hello, {}!", n.name),
    ///         Answer::Declined | Answer::Cancelled => "Hello, stranger.".to_owned(),
    ///     })
    /// };
    /// let text = engine.run_live(&Request::new("tools/call", "greet"), &session, greet).await.unwrap();
    /// assert_eq!(text, "Hello, Ada!");
    /// # });
    /// ```
    pub async fn run_live<R, F, Fut>(
        &self,
        request: &Request<'_>,
        session: &LiveSession,
        handler: F,
    ) -> Result<R, EngineError>
    where
        F: FnOnce(Flow) -> Fut,
        Fut: Future<Output = Result<R, FlowError>>,
    {
        let _task = self.counters.task();
        let flow = Flow::new(
            Capabilities::default(),
            request.arguments.cloned().unwrap_or(Value::Null),
            FlowState::default(),
            Map::new(),
            self.store.clone(),
            self.config.clone(),
            self.sealer.ttl(),
        )
        .live(LiveLink::new(session.clone(), self.live.clone(), self.counters.clone(), self.store.clone()))
        .with_principal(request.principal);
        let finished = handler(flow.clone()).await;
        let fatal = flow.take_fatal();
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

    /// The completion store URL-mode pages record into.
    pub fn completion_store(&self) -> &Arc<dyn CompletionStore> {
        &self.store
    }

    /// Runs one round of `handler` for `request`.
    ///
    /// Errors are the JSON-RPC errors to send: `-32602` for a bad `requestState` (one fixed
    /// message whatever went wrong), malformed `inputResponses`, or answers too large to carry in
    /// the next `requestState` (see [`EngineBuilder::max_state_len`]), `-32021` when the handler
    /// needs an undeclared capability, `-32603` for handler and store failures.
    ///
    /// Exactly once per flow: every flow has a random id sealed in its state, [`Flow::once`]
    /// records its values in the [`CompletionStore`] under that id, and a flow with effects (a
    /// `once`, a completed URL-mode step) records the answers it finished with. Any later round of
    /// a finished flow — the last state replayed, an earlier one, changed answers — is answered
    /// from those answers, so it returns the same result; a round racing the finish with other
    /// answers fails with `-32603` rather than contradict it. Answers for keys the previous round
    /// did not ask are ignored. The precondition: instances that share keys share a store.
    pub async fn run<R, F, Fut>(&self, request: &Request<'_>, handler: F) -> Result<Outcome<R>, EngineError>
    where
        F: FnOnce(Flow) -> Fut,
        Fut: Future<Output = Result<R, FlowError>>,
    {
        let digest = digest_arguments(request.arguments);
        let binding = Binding {
            principal: request.principal,
            method: request.method,
            name: request.name,
            arguments_digest: digest,
            audience: &self.audience,
        };
        let mut state: FlowState = match request.request_state {
            None => FlowState::default(),
            Some(token) => {
                let bytes =
                    self.sealer.open(&binding, token, SystemTime::now()).map_err(|_| EngineError::invalid_state())?;
                serde_json::from_slice(&bytes).map_err(|_| EngineError::invalid_state())?
            }
        };
        let mut responses = wire::parse_input_responses(request.input_responses)
            .map_err(|e| EngineError::invalid_params(e.to_string()))?
            .cloned()
            .unwrap_or_default();
        // Only answers to what the last round asked count: an answer for a key the flow never
        // asked is ignored, neither used by a later ask nor kept.
        // (A first round has asked nothing: there the client may answer ahead, as the official
        // conformance suite expects; only asks reached in that round can use such answers.)
        let pending = std::mem::take(&mut state.pending);
        if !state.flow.is_empty() {
            responses.retain(|key, _| pending.contains(key));
        }
        // A flow that finished answers every later round — a replay of its last state, of an
        // earlier one, with the same or changed answers — from the answers it finished with: the
        // same result, never a second, contradicting one.
        // With the store down, a state that carries no effect yet (no `once` value, no URL step)
        // goes on without the check: form-only rounds keep working through an outage, and the
        // first effect they reach fails on the store anyway.
        let finished = if state.flow.is_empty() {
            None
        } else {
            match self.store.finished(&state.flow).await {
                Ok(finished) => finished,
                Err(error) if !state.has_effects() => {
                    tracing::warn!(target: "elicit_runtime", %error, "could not check whether a flow finished; its state has no effects yet");
                    None
                }
                Err(error) => return Err(FlowError::Store(error).into()),
            }
        };
        if let Some(answers) = finished {
            // The answers sent are not used, but malformed ones are still refused as such.
            if let Some((key, _)) = responses.iter().find(|(_, answer)| !answer.is_object()) {
                return Err(EngineError::invalid_params(format!(
                    "inputResponses[{}]: an answer must be an object",
                    wire::clip(key)
                )));
            }
            state.answers = match answers {
                Value::Object(answers) => answers,
                _ => Map::new(),
            };
            responses.clear();
        }
        let flow = Flow::new(
            Capabilities::from_meta(request.meta),
            request.arguments.cloned().unwrap_or(Value::Null),
            state,
            responses,
            self.store.clone(),
            self.config.clone(),
            self.sealer.ttl(),
        )
        .with_principal(request.principal);
        let finished = Suspendable { handler: Box::pin(handler(flow.clone())), flow: &flow }.await;
        if let Some(fatal) = flow.take_fatal() {
            return Err(fatal.into());
        }
        match finished {
            // A flow of several rounds records how it finished (a one-round call has no state to
            // replay: calling again is a new flow).
            Some(Ok(result)) if let (Some(_), Some((id, answers, seen))) = (request.request_state, flow.finish_record()) => {
                match self.store.finish(&id, answers.clone(), &seen, self.sealer.ttl()).await {
                    Ok(Finish::Recorded) => Ok(Outcome::Complete(result)),
                    Ok(Finish::Already(recorded)) if recorded == answers => Ok(Outcome::Complete(result)),
                    Ok(Finish::Already(_) | Finish::Conflict) => Err(EngineError {
                        code: codes::INTERNAL_ERROR,
                        message: "another round of this flow finished it or changed it meanwhile: retry with the same requestState to get its result".to_owned(),
                        data: None,
                    }),
                    Err(error) => Err(FlowError::Store(error).into()),
                }
            }
            Some(result) => result.map(Outcome::Complete).map_err(EngineError::from),
            None => {
                let Suspension { requests, state } = flow.suspension();
                let payload = serde_json::to_vec(&state).map_err(|e| EngineError {
                    code: codes::INTERNAL_ERROR,
                    message: format!("could not encode the flow state: {e}"),
                    data: None,
                })?;
                // Sealing fails only when the token would pass the cap. The state carries the
                // client's answers (a long free-text answer, or keys the form never asked for), so
                // a client can make it too large: that is its invalid input, not a server failure.
                let token = self.sealer.seal(&binding, &payload, SystemTime::now()).map_err(|_| {
                    EngineError::invalid_params(format!(
                        "the answers so far are too large to carry to the next round (requestState is capped at {} characters)",
                        self.sealer.max_token_len()
                    ))
                })?;
                Ok(Outcome::InputRequired(InputRequiredResult { input_requests: requests, request_state: Some(token) }))
            }
        }
    }
}

/// Polls a handler until it finishes (`Some`) or waits on an unanswered ask (`None`).
struct Suspendable<'f, Fut> {
    handler: Pin<Box<Fut>>,
    flow: &'f Flow,
}

impl<Fut: Future> Future for Suspendable<'_, Fut> {
    type Output = Option<Fut::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.handler.as_mut().poll(cx) {
            Poll::Ready(output) => Poll::Ready(Some(output)),
            // An ask that has no answer registers its request and never completes; once the
            // handler is parked on one, every ask it could reach in this round has been made.
            Poll::Pending if self.flow.is_suspended() => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}
