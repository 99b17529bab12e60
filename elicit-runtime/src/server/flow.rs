//! [`Flow`]: what a handler asks through, and what the engine seals between rounds.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chacha20poly1305::aead::OsRng;
use chacha20poly1305::aead::rand_core::RngCore;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::EngineConfig;
use super::completion::{CompletionStore, OnceClaim, StoreError, UrlStatus};
use super::live::{LiveConfig, LiveCounters, LiveSession};
use crate::Elicit;
use crate::content::ContentErrors;
use crate::schema::RequestedSchema;
use crate::wire::{Capabilities, ELICITATION_COMPLETE, ElicitAction, ElicitParams, ElicitResult, InputRequest, clip};

/// The answer to a form-mode ask.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer<T> {
    /// The user submitted the form; the content passed every check.
    Accepted(T),
    /// The user explicitly refused.
    Declined,
    /// The user dismissed the form without choosing.
    Cancelled,
}

/// The answer to a URL-mode ask.
#[derive(Debug, Clone, PartialEq)]
pub enum UrlAnswer {
    /// The user consented and the out-of-band step finished; the value is what the page recorded.
    Completed(Value),
    /// The user refused to open the page.
    Declined,
    /// The user dismissed the request (or the client could not open the page).
    Cancelled,
}

/// Why a handler could not finish: an ask that could not produce an answer, or the handler's own
/// error.
///
/// `?` converts any `std::error::Error + Send + Sync + 'static` into [`FlowError::Handler`], so a
/// handler mixes asks and its own fallible work without `map_err`. That blanket conversion is why
/// `FlowError` does not implement `std::error::Error` itself (as `anyhow::Error` does not): the
/// two impls would overlap. [`FlowError::source`] gives the cause, and a `FlowError` converts into
/// `Box<dyn Error + Send + Sync>` where an error trait object is wanted.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum FlowError {
    /// The client did not declare the capability the ask needs. Handle it (for example fall back
    /// to another mode), or let it propagate: the request then fails with `-32021` and
    /// `data.requiredCapabilities` set to `required`.
    Unsupported {
        /// The `ClientCapabilities` the ask needs.
        required: Value,
    },
    /// The client's input is malformed or kept failing validation (`-32602`).
    InvalidInput(String),
    /// The completion store failed (`-32603`).
    Store(StoreError),
    /// The engine could not run the flow (`-32603`).
    Failed(String),
    /// The handler's own error, kept whole. The engine answers it `-32603`; the rmcp adapter makes
    /// it a tool result with `isError: true`, the model's to read.
    Handler(Arc<dyn std::error::Error + Send + Sync>),
}

impl FlowError {
    /// The handler's own error from anything that converts into a boxed error (a `String`, a
    /// `&str`, any error type).
    pub fn handler(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> FlowError {
        FlowError::Handler(Arc::from(error.into()))
    }

    /// The underlying cause: the handler's error, or the store's.
    pub fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FlowError::Handler(error) => Some(&**error),
            FlowError::Store(error) => Some(error),
            _ => None,
        }
    }
}

impl PartialEq for FlowError {
    /// Handler errors are equal only when they are the same error (one `Arc`).
    fn eq(&self, other: &FlowError) -> bool {
        match (self, other) {
            (FlowError::Unsupported { required: a }, FlowError::Unsupported { required: b }) => a == b,
            (FlowError::InvalidInput(a), FlowError::InvalidInput(b)) | (FlowError::Failed(a), FlowError::Failed(b)) => {
                a == b
            }
            (FlowError::Store(a), FlowError::Store(b)) => a == b,
            (FlowError::Handler(a), FlowError::Handler(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl std::fmt::Display for FlowError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FlowError::Unsupported { required } => write!(f, "client capability not declared: {required}"),
            FlowError::InvalidInput(message) | FlowError::Failed(message) => f.write_str(message),
            FlowError::Store(error) => write!(f, "{error}"),
            FlowError::Handler(error) => write!(f, "{error}"),
        }
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for FlowError {
    fn from(error: E) -> FlowError {
        FlowError::Handler(Arc::new(error))
    }
}

/// A `FlowError` as an error trait object, for `?` in code that returns one.
#[derive(Debug)]
struct FlowFailure(FlowError);

impl std::fmt::Display for FlowFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for FlowFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl From<FlowError> for Box<dyn std::error::Error + Send + Sync> {
    fn from(error: FlowError) -> Self {
        Box::new(FlowFailure(error))
    }
}

impl From<FlowError> for Box<dyn std::error::Error> {
    fn from(error: FlowError) -> Self {
        Box::new(FlowFailure(error))
    }
}

/// A URL-mode step minted in an earlier round.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct UrlRecord {
    id: String,
    url: String,
    message: String,
}

/// Everything a flow carries from round to round, sealed into `requestState`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(super) struct FlowState {
    /// The flow's id: 128 random bits minted on its first round, naming its exactly-once records
    /// in the completion store.
    #[serde(default, rename = "f", skip_serializing_if = "String::is_empty")]
    pub(super) flow: String,
    /// The keys of the input requests the last round sent: the only keys whose answers the next
    /// round takes.
    #[serde(default, rename = "p", skip_serializing_if = "BTreeSet::is_empty")]
    pub(super) pending: BTreeSet<String>,
    /// Answers already consumed by the handler, by input request key.
    #[serde(default, rename = "a", skip_serializing_if = "Map::is_empty")]
    pub(super) answers: Map<String, Value>,
    /// Values computed by `once`, by key (a cache of what the store recorded).
    #[serde(default, rename = "o", skip_serializing_if = "Map::is_empty")]
    once: Map<String, Value>,
    /// URL-mode steps, by input request key.
    #[serde(default, rename = "u", skip_serializing_if = "BTreeMap::is_empty")]
    urls: BTreeMap<String, UrlRecord>,
    /// How many invalid answers each form key has had.
    #[serde(default, rename = "n", skip_serializing_if = "BTreeMap::is_empty")]
    invalid: BTreeMap<String, u32>,
}

impl FlowState {
    /// Whether the flow had run a `once` or minted a URL-mode step by this state.
    pub(super) fn has_effects(&self) -> bool {
        !self.once.is_empty() || !self.urls.is_empty()
    }
}

/// What a suspended round sends: the input requests and the state to seal.
pub(super) struct Suspension {
    pub(super) requests: Vec<(String, InputRequest)>,
    pub(super) state: FlowState,
}

struct Inner {
    capabilities: Capabilities,
    arguments: Value,
    state: FlowState,
    responses: Map<String, Value>,
    requests: Vec<(String, InputRequest)>,
    suspended: bool,
    fatal: Option<FlowError>,
    /// The `o:` slots this round read or recorded.
    seen: Vec<String>,
    /// `once` computations running now: the round is not suspended under one.
    computing: usize,
    /// This round went through a `once` or a completed URL-mode step: the flow has effects that a
    /// replay must not contradict, so the engine records how it finishes.
    effects: bool,
}

/// The handle a handler asks through. Cheap to clone; all clones share one round.
///
/// Every ask takes a key, unique within the flow and stable across rounds: it names the input
/// request on the wire and the answer in the sealed state.
#[derive(Clone)]
pub struct Flow {
    inner: Arc<Mutex<Inner>>,
    store: Arc<dyn CompletionStore>,
    config: Arc<EngineConfig>,
    /// How long the flow's exactly-once records live after each write (the state's lifetime).
    record_ttl: Duration,
    /// Set on a 2025-era session: asks are sent and awaited instead of suspending the round.
    live: Option<Arc<LiveLink>>,
    /// The request served: principal, progress and cancellation (server/context.rs).
    pub(super) request: super::context::RequestInfo,
}

/// What a live flow needs beyond a replayed one. Dropped with the last clone of the flow, which
/// is when the task is dropped: the URL-mode records it still holds are released then.
pub(super) struct LiveLink {
    session: LiveSession,
    config: LiveConfig,
    counters: Arc<LiveCounters>,
    store: Arc<dyn CompletionStore>,
    /// URL-mode ids minted and not yet consumed or released.
    held: Mutex<Vec<String>>,
}

impl LiveLink {
    pub(super) fn new(
        session: LiveSession,
        config: LiveConfig,
        counters: Arc<LiveCounters>,
        store: Arc<dyn CompletionStore>,
    ) -> Self {
        LiveLink { session, config, counters, store, held: Mutex::new(Vec::new()) }
    }

    fn held(&self) -> MutexGuard<'_, Vec<String>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn hold(&self, id: &str) {
        self.held().push(id.to_owned());
        self.counters.record_added();
    }

    /// The record is gone from the store (consumed by `take`): stop holding it.
    fn consumed(&self, id: &str) {
        let mut held = self.held();
        if let Some(at) = held.iter().position(|h| h == id) {
            held.swap_remove(at);
            self.counters.record_gone();
        }
    }

    /// Removes the record from the store and stops holding it.
    fn release(&self, id: &str) {
        self.store.release(id);
        self.consumed(id);
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

/// Where an ask found its answer.
enum Found {
    /// Consumed in an earlier round (already validated).
    Carried(Value),
    /// Sent in this round's `inputResponses`.
    Fresh(Value),
    /// Nowhere: ask.
    Missing,
}

impl Flow {
    pub(super) fn new(
        capabilities: Capabilities,
        arguments: Value,
        state: FlowState,
        responses: Map<String, Value>,
        store: Arc<dyn CompletionStore>,
        config: EngineConfig,
        record_ttl: Duration,
    ) -> Self {
        let mut state = state;
        if state.flow.is_empty() {
            state.flow = mint_id();
        }
        Flow {
            inner: Arc::new(Mutex::new(Inner {
                capabilities,
                arguments,
                state,
                responses,
                requests: Vec::new(),
                suspended: false,
                fatal: None,
                seen: Vec::new(),
                computing: 0,
                effects: false,
            })),
            store,
            config: Arc::new(config),
            record_ttl,
            live: None,
            request: super::context::RequestInfo::default(),
        }
    }

    /// This flow, run live on a 2025-era session: the session's declared capabilities replace
    /// the (absent) per-request ones.
    pub(super) fn live(mut self, link: LiveLink) -> Self {
        self.lock().capabilities = link.session.capabilities;
        self.live = Some(Arc::new(link));
        self
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // The lock is never held across an await or user code, so poisoning means a bug in this
        // module; the data is still consistent, keep going.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The capabilities the client declared on this round's request.
    pub fn capabilities(&self) -> Capabilities {
        self.lock().capabilities
    }

    /// The request's `arguments` (`Null` when absent).
    pub fn arguments(&self) -> Value {
        self.lock().arguments.clone()
    }

    /// Parked on an unanswered ask, with no `once` computation half-way.
    pub(super) fn is_suspended(&self) -> bool {
        let inner = self.lock();
        inner.suspended && inner.computing == 0
    }

    /// What the engine records when the flow finishes — its id, its answers, and the `o:` slots
    /// this round saw — or `None` for a flow without effects (a replay recomputes it alike).
    pub(super) fn finish_record(&self) -> Option<(String, Value, Vec<String>)> {
        let inner = self.lock();
        inner
            .effects
            .then(|| (inner.state.flow.clone(), Value::Object(inner.state.answers.clone()), inner.seen.clone()))
    }

    pub(super) fn take_fatal(&self) -> Option<FlowError> {
        self.lock().fatal.take()
    }

    pub(super) fn suspension(&self) -> Suspension {
        let mut inner = self.lock();
        let requests = std::mem::take(&mut inner.requests);
        let mut state = inner.state.clone();
        state.pending = requests.iter().map(|(key, _)| key.clone()).collect();
        Suspension { requests, state }
    }

    fn find(&self, key: &str) -> Found {
        let inner = self.lock();
        if let Some(answer) = inner.state.answers.get(key) {
            Found::Carried(answer.clone())
        } else if let Some(answer) = inner.responses.get(key) {
            Found::Fresh(answer.clone())
        } else {
            Found::Missing
        }
    }

    /// Records an error that fails the whole request whatever the handler does with it.
    fn fail(&self, error: FlowError) -> FlowError {
        self.lock().fatal.get_or_insert(error.clone());
        error
    }

    fn require(&self, granted: impl Fn(Capabilities) -> bool, required: Value) -> Result<(), FlowError> {
        if granted(self.capabilities()) { Ok(()) } else { Err(FlowError::Unsupported { required }) }
    }

    fn keep(&self, key: &str, answer: Value) {
        self.lock().state.answers.insert(key.to_owned(), answer);
    }

    /// Registers an input request and parks the handler for the rest of the round.
    async fn suspend<T>(&self, key: &str, request: InputRequest) -> T {
        {
            let mut inner = self.lock();
            if inner.requests.iter().any(|(k, _)| k == key) {
                inner
                    .fatal
                    .get_or_insert(FlowError::Failed(format!("input request key `{key}` is asked twice in one round")));
            } else {
                inner.requests.push((key.to_owned(), request));
            }
            inner.suspended = true;
        }
        std::future::pending().await
    }

    /// Asks for `key`. Replayed, the round ends here (the request goes out in `inputRequests`);
    /// live, the request is sent to the client and its answer becomes this key's fresh response.
    /// `elicitation_id` names a URL-mode step on the 2025-era wire.
    async fn ask(&self, key: &str, request: InputRequest, elicitation_id: Option<&str>) -> Result<(), FlowError> {
        let Some(live) = &self.live else { return self.suspend(key, request).await };
        let (method, params) =
            live.session.version.request(&request, elicitation_id).map_err(|e| FlowError::Failed(e.to_string()))?;
        let Some(_permit) = live.session.limit.try_take() else {
            return Err(self.fail(FlowError::Failed(format!(
                "too many requests to the client are outstanding on this session (at most {})",
                live.config.max_outstanding_asks
            ))));
        };
        let answer =
            match tokio::time::timeout(live.config.ask_timeout, live.session.peer.request(method, params)).await {
                Ok(Ok(answer)) => answer,
                Ok(Err(reason)) => {
                    return Err(
                        self.fail(FlowError::Failed(format!("the client did not answer `{}`: {reason}", clip(key))))
                    );
                }
                Err(_) => {
                    return Err(self.fail(FlowError::Failed(format!(
                        "the client did not answer `{}` within {:?}",
                        clip(key),
                        live.config.ask_timeout
                    ))));
                }
            };
        self.lock().responses.insert(key.to_owned(), answer);
        Ok(())
    }

    fn parse_answer(&self, key: &str, raw: &Value) -> Result<ElicitResult, FlowError> {
        ElicitResult::from_json(raw)
            .map_err(|e| self.fail(FlowError::InvalidInput(format!("inputResponses[{}]: {e}", clip(key)))))
    }

    /// Asks for a `T` with a form, with `T`'s message.
    ///
    /// ```
    /// # use elicit_runtime::server::{Answer, Engine, Flow, Outcome, Request, UrlAnswer};
    /// # use elicit_runtime::state::KeyRing;
    /// # use elicit_runtime::Elicit;
    /// # use serde_json::json;
    /// # /// Who are you?
    /// # #[derive(Elicit, Debug)]
    /// # struct Name {
    /// #     name: String,
    /// # }
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// # let engine = Engine::builder("doc-server", KeyRing::generate()).build();
    /// # let meta = json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
    /// # let request = Request::new("tools/call", "greet").meta(meta.as_object());
    /// let greet = |flow: Flow| async move {
    ///     Ok(match flow.form::<Name>("who").await? {
    ///         Answer::Accepted(n) => format!("Hello, {}!", n.name),
    ///         Answer::Declined | Answer::Cancelled => "Hello, stranger.".to_owned(),
    ///     })
    /// };
    /// // Round 1 asks with `Name`'s doc comment as the message.
    /// let Outcome::InputRequired(asked) = engine.run(&request, greet).await.unwrap() else { panic!() };
    /// assert_eq!(asked.input_requests[0].1.to_json()["params"]["message"], "Who are you?");
    /// // Round 2 carries the answer.
    /// let answer = json!({"who": {"action": "accept", "content": {"name": "Ada"}}});
    /// let retry = request.clone().input_responses(Some(&answer)).request_state(asked.request_state.as_deref());
    /// let Outcome::Complete(text) = engine.run(&retry, greet).await.unwrap() else { panic!() };
    /// assert_eq!(text, "Hello, Ada!");
    /// # });
    /// ```
    pub async fn form<T: Elicit>(&self, key: &str) -> Result<Answer<T>, FlowError> {
        self.form_with(key, T::MESSAGE).await
    }

    /// Asks for a `T` with a form, with this message.
    ///
    /// An accepted answer that fails validation is asked again — the errors named in the message,
    /// the user's values as defaults — up to [`EngineConfig::max_invalid_answers`] times.
    ///
    /// ```
    /// # use elicit_runtime::server::{Answer, Engine, Flow, Outcome, Request, UrlAnswer};
    /// # use elicit_runtime::state::KeyRing;
    /// # use elicit_runtime::Elicit;
    /// # use serde_json::json;
    /// # /// Who are you?
    /// # #[derive(Elicit, Debug)]
    /// # struct Name {
    /// #     name: String,
    /// # }
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// # let engine = Engine::builder("doc-server", KeyRing::generate()).build();
    /// # let meta = json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
    /// # let request = Request::new("tools/call", "greet").meta(meta.as_object());
    /// let greet = |flow: Flow| async move {
    ///     Ok(match flow.form_with::<Name>("who", "Who is travelling?").await? {
    ///         Answer::Accepted(n) => n.name,
    ///         Answer::Declined | Answer::Cancelled => String::new(),
    ///     })
    /// };
    /// let Outcome::InputRequired(asked) = engine.run(&request, greet).await.unwrap() else { panic!() };
    /// assert_eq!(asked.input_requests[0].1.to_json()["params"]["message"], "Who is travelling?");
    /// // An answer that fails validation is asked again, the errors stated.
    /// let wrong = json!({"who": {"action": "accept", "content": {"name": 7}}});
    /// let retry = request.clone().input_responses(Some(&wrong)).request_state(asked.request_state.as_deref());
    /// let Outcome::InputRequired(again) = engine.run(&retry, greet).await.unwrap() else { panic!() };
    /// let message = again.input_requests[0].1.to_json()["params"]["message"].as_str().unwrap().to_owned();
    /// assert!(message.starts_with("Who is travelling?\n\nPlease correct: "), "{message}");
    /// # });
    /// ```
    pub async fn form_with<T: Elicit>(&self, key: &str, message: &str) -> Result<Answer<T>, FlowError> {
        self.form_schema(key, message, Cow::Borrowed(T::requested_schema()), |content| T::from_content(content)).await
    }

    /// Asks with any schema, parsing accepted content with `parse`. The building block of
    /// [`Flow::form`]; useful when the schema is built at run time.
    ///
    /// ```
    /// # use elicit_runtime::server::{Answer, Engine, Flow, Outcome, Request, UrlAnswer};
    /// # use elicit_runtime::state::KeyRing;
    /// # use elicit_runtime::Elicit;
    /// # use serde_json::json;
    /// # /// Who are you?
    /// # #[derive(Elicit, Debug)]
    /// # struct Name {
    /// #     name: String,
    /// # }
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// # let engine = Engine::builder("doc-server", KeyRing::generate()).build();
    /// # let meta = json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
    /// # let request = Request::new("tools/call", "greet").meta(meta.as_object());
    /// use std::borrow::Cow;
    /// use elicit_runtime::schema::{BooleanSchema, PrimitiveSchema, Property, RequestedSchema};
    ///
    /// let confirm = |flow: Flow| async move {
    ///     let schema = RequestedSchema::new(vec![Property::required("ok", PrimitiveSchema::Boolean(BooleanSchema::default()))]);
    ///     let parse = |content: &serde_json::Map<String, serde_json::Value>| Ok(content.get("ok") == Some(&json!(true)));
    ///     Ok(match flow.form_schema("confirm", "Go ahead?", Cow::Owned(schema), parse).await? {
    ///         Answer::Accepted(ok) => ok,
    ///         Answer::Declined | Answer::Cancelled => false,
    ///     })
    /// };
    /// let Outcome::InputRequired(asked) = engine.run(&request, confirm).await.unwrap() else { panic!() };
    /// let yes = json!({"confirm": {"action": "accept", "content": {"ok": true}}});
    /// let retry = request.clone().input_responses(Some(&yes)).request_state(asked.request_state.as_deref());
    /// let Outcome::Complete(ok) = engine.run(&retry, confirm).await.unwrap() else { panic!() };
    /// assert!(ok);
    /// # });
    /// ```
    pub async fn form_schema<T>(
        &self,
        key: &str,
        message: &str,
        schema: Cow<'static, RequestedSchema>,
        parse: impl Fn(&Map<String, Value>) -> Result<T, ContentErrors>,
    ) -> Result<Answer<T>, FlowError> {
        self.require(|c| c.form, json!({"elicitation": {"form": {}}}))?;
        loop {
            let (raw, fresh) = match self.find(key) {
                Found::Carried(raw) => (raw, false),
                Found::Fresh(raw) => (raw, true),
                Found::Missing => {
                    let request = InputRequest::Elicit(ElicitParams::Form {
                        message: message.to_owned(),
                        requested_schema: schema.clone(),
                    });
                    self.ask(key, request, None).await?;
                    continue;
                }
            };
            let answer = self.parse_answer(key, &raw)?;
            let outcome = match answer.action {
                ElicitAction::Decline => Answer::Declined,
                ElicitAction::Cancel => Answer::Cancelled,
                ElicitAction::Accept => {
                    let empty = Map::new();
                    match parse(answer.content.as_ref().unwrap_or(&empty)) {
                        Ok(value) => Answer::Accepted(value),
                        Err(errors) => {
                            let attempts = {
                                let mut inner = self.lock();
                                inner.state.answers.remove(key);
                                let attempts = inner.state.invalid.entry(key.to_owned()).or_insert(0);
                                *attempts += 1;
                                *attempts
                            };
                            if attempts > self.config.max_invalid_answers {
                                return Err(self.fail(FlowError::InvalidInput(format!(
                                    "the answer to `{}` failed validation {attempts} times: {errors}",
                                    clip(key)
                                ))));
                            }
                            let content = answer.content.unwrap_or_default();
                            let request = InputRequest::Elicit(ElicitParams::Form {
                                message: format!("{message}\n\nPlease correct: {errors}."),
                                requested_schema: Cow::Owned(schema.prefilled_with(&content)),
                            });
                            self.ask(key, request, None).await?;
                            continue;
                        }
                    }
                }
            };
            if fresh {
                // Keep only what the protocol defines: no `_meta`, no `resultType`.
                self.keep(key, answer.to_json());
            }
            return Ok(outcome);
        }
    }

    /// Sends the user to a page out of band (URL mode). `build_url` receives the unguessable id
    /// the engine minted for this step; the page records completion of that id in the engine's
    /// [`CompletionStore`].
    ///
    /// `accept` only means the user consented: until the store reports completion, each retry is
    /// answered with the same URL elicitation under the same key (after waiting up to
    /// [`EngineConfig::url_wait`] for the page).
    ///
    /// ```
    /// # use elicit_runtime::server::{Answer, Engine, Flow, Outcome, Request, UrlAnswer};
    /// # use elicit_runtime::state::KeyRing;
    /// # use elicit_runtime::Elicit;
    /// # use serde_json::json;
    /// # /// Who are you?
    /// # #[derive(Elicit, Debug)]
    /// # struct Name {
    /// #     name: String,
    /// # }
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// # let engine = Engine::builder("doc-server", KeyRing::generate()).build();
    /// # let meta = json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}, "url": {}}}});
    /// # let request = Request::new("tools/call", "greet").meta(meta.as_object());
    /// let pay = |flow: Flow| async move {
    ///     Ok(match flow.url("pay", "Approve the payment", |id| format!("https://pay.example.com/{id}")).await? {
    ///         UrlAnswer::Completed(outcome) => format!("paid: {outcome}"),
    ///         UrlAnswer::Declined | UrlAnswer::Cancelled => "not paid".to_owned(),
    ///     })
    /// };
    /// let Outcome::InputRequired(asked) = engine.run(&request, pay).await.unwrap() else { panic!() };
    /// let url = asked.input_requests[0].1.to_json()["params"]["url"].as_str().unwrap().to_owned();
    /// // The page records completion of its id; the client retries after the user consented.
    /// let id = url.rsplit('/').next().unwrap();
    /// assert!(engine.completion_store().complete(id, json!("approved"), None).await.unwrap());
    /// let consent = json!({"pay": {"action": "accept"}});
    /// let retry = request.clone().input_responses(Some(&consent)).request_state(asked.request_state.as_deref());
    /// let Outcome::Complete(text) = engine.run(&retry, pay).await.unwrap() else { panic!() };
    /// assert_eq!(text, "paid: \"approved\"");
    /// # });
    /// ```
    pub async fn url(
        &self,
        key: &str,
        message: &str,
        build_url: impl FnOnce(&str) -> String,
    ) -> Result<UrlAnswer, FlowError> {
        self.require(|c| c.url, json!({"elicitation": {"url": {}}}))?;
        let mut build_url = Some(build_url);
        loop {
            let (raw, record) = match self.find(key) {
                Found::Carried(raw) => {
                    let answer = carried_url_answer(&raw);
                    if matches!(answer, UrlAnswer::Completed(_)) {
                        self.lock().effects = true;
                    }
                    return Ok(answer);
                }
                Found::Fresh(raw) => (Some(raw), self.lock().state.urls.get(key).cloned()),
                Found::Missing => (None, self.lock().state.urls.get(key).cloned()),
            };
            let Some(record) = record else {
                // First time (or a client answering a step it was never given): mint the step.
                let Some(build_url) = build_url.take() else {
                    return Err(FlowError::Failed(format!("the URL-mode step `{}` was lost twice", clip(key))));
                };
                let record = self.mint_url(key, message, build_url).await?;
                self.ask(key, url_request(&record), Some(&record.id)).await?;
                continue;
            };
            let Some(raw) = raw else {
                self.ask(key, url_request(&record), Some(&record.id)).await?;
                continue;
            };
            let answer = self.parse_answer(key, &raw)?;
            let outcome = match answer.action {
                ElicitAction::Decline | ElicitAction::Cancel => {
                    if let Some(live) = &self.live {
                        live.release(&record.id);
                    }
                    if answer.action == ElicitAction::Decline { UrlAnswer::Declined } else { UrlAnswer::Cancelled }
                }
                ElicitAction::Accept => {
                    // The completion this flow took is recorded under the flow: a retry of the
                    // same round (its response was lost) or a replay of an earlier state finds it
                    // there, and no other flow can take it.
                    let slot = format!("u:{key}");
                    if let Some(value) = self.claim_slot(&slot, key).await? {
                        let outcome = UrlAnswer::Completed(value);
                        self.keep(key, url_answer_json(&outcome));
                        self.lock().effects = true;
                        return Ok(outcome);
                    }
                    let taken = self.take_claimed(slot, &record.id).await?;
                    match taken {
                        Ok(UrlStatus::Completed(value)) => {
                            self.lock().effects = true;
                            if let Some(live) = &self.live {
                                live.consumed(&record.id);
                                live.session
                                    .peer
                                    .notify(ELICITATION_COMPLETE, json!({"elicitationId": record.id}))
                                    .await
                                    .map_err(|reason| {
                                        FlowError::Failed(format!(
                                            "could not tell the client the page was completed: {reason}"
                                        ))
                                    })?;
                            }
                            UrlAnswer::Completed(value)
                        }
                        Ok(UrlStatus::Pending) => match &self.live {
                            None => return self.suspend(key, url_request(&record)).await,
                            Some(live) => {
                                live.release(&record.id);
                                return Err(self.fail(FlowError::Failed(format!(
                                    "the page of `{}` was not completed within {:?}",
                                    clip(key),
                                    live.config.url_wait
                                ))));
                            }
                        },
                        // Expired or lost: start the step again with a fresh id.
                        Ok(UrlStatus::Unknown) => {
                            if let Some(live) = &self.live {
                                live.consumed(&record.id);
                            }
                            let mut inner = self.lock();
                            inner.state.urls.remove(key);
                            inner.responses.remove(key);
                            continue;
                        }
                        Err(error) => return Err(FlowError::Store(error)),
                    }
                }
            };
            self.keep(key, url_answer_json(&outcome));
            return Ok(outcome);
        }
    }

    /// Mints a URL-mode step for `key`: an unguessable id registered in the store.
    async fn mint_url(
        &self,
        key: &str,
        message: &str,
        build_url: impl FnOnce(&str) -> String,
    ) -> Result<UrlRecord, FlowError> {
        let id = mint_id();
        self.store.register(&id, self.config.url_ttl, self.principal()).await.map_err(FlowError::Store)?;
        if let Some(live) = &self.live {
            live.hold(&id);
        }
        let record = UrlRecord { url: build_url(&id), id, message: message.to_owned() };
        self.lock().state.urls.insert(key.to_owned(), record.clone());
        Ok(record)
    }

    /// Asks the client's model for a completion (`sampling/createMessage`); returns the client's
    /// `CreateMessageResult` as sent.
    ///
    /// ```
    /// # use elicit_runtime::server::{Answer, Engine, Flow, Outcome, Request, UrlAnswer};
    /// # use elicit_runtime::state::KeyRing;
    /// # use elicit_runtime::Elicit;
    /// # use serde_json::json;
    /// # /// Who are you?
    /// # #[derive(Elicit, Debug)]
    /// # struct Name {
    /// #     name: String,
    /// # }
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// # let engine = Engine::builder("doc-server", KeyRing::generate()).build();
    /// # let meta = json!({"io.modelcontextprotocol/clientCapabilities": {"sampling": {}}});
    /// # let request = Request::new("tools/call", "greet").meta(meta.as_object());
    /// let summarise = |flow: Flow| async move {
    ///     let params = json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Summarise"}}], "maxTokens": 50});
    ///     let result = flow.sampling("summary", params).await?;
    ///     Ok(result["content"]["text"].as_str().unwrap_or_default().to_owned())
    /// };
    /// let Outcome::InputRequired(asked) = engine.run(&request, summarise).await.unwrap() else { panic!() };
    /// assert_eq!(asked.input_requests[0].1.to_json()["method"], "sampling/createMessage");
    /// let reply = json!({"summary": {"role": "assistant", "model": "m",
    ///     "content": {"type": "text", "text": "Short."}}});
    /// let retry = request.clone().input_responses(Some(&reply)).request_state(asked.request_state.as_deref());
    /// let Outcome::Complete(text) = engine.run(&retry, summarise).await.unwrap() else { panic!() };
    /// assert_eq!(text, "Short.");
    /// # });
    /// ```
    pub async fn sampling(&self, key: &str, params: Value) -> Result<Value, FlowError> {
        self.require(|c| c.sampling, json!({"sampling": {}}))?;
        self.opaque_answer(key, InputRequest::CreateMessage(params)).await
    }

    /// Asks the client for its roots (`roots/list`); returns the client's `ListRootsResult`.
    ///
    /// ```
    /// # use elicit_runtime::server::{Answer, Engine, Flow, Outcome, Request, UrlAnswer};
    /// # use elicit_runtime::state::KeyRing;
    /// # use elicit_runtime::Elicit;
    /// # use serde_json::json;
    /// # /// Who are you?
    /// # #[derive(Elicit, Debug)]
    /// # struct Name {
    /// #     name: String,
    /// # }
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// # let engine = Engine::builder("doc-server", KeyRing::generate()).build();
    /// # let meta = json!({"io.modelcontextprotocol/clientCapabilities": {"roots": {}}});
    /// # let request = Request::new("tools/call", "greet").meta(meta.as_object());
    /// let count = |flow: Flow| async move { Ok(flow.roots("roots").await?["roots"].as_array().map_or(0, Vec::len)) };
    /// let Outcome::InputRequired(asked) = engine.run(&request, count).await.unwrap() else { panic!() };
    /// assert_eq!(asked.input_requests[0].1.to_json()["method"], "roots/list");
    /// let reply = json!({"roots": {"roots": [{"uri": "file:///home/ada/project"}]}});
    /// let retry = request.clone().input_responses(Some(&reply)).request_state(asked.request_state.as_deref());
    /// let Outcome::Complete(n) = engine.run(&retry, count).await.unwrap() else { panic!() };
    /// assert_eq!(n, 1);
    /// # });
    /// ```
    pub async fn roots(&self, key: &str) -> Result<Value, FlowError> {
        self.require(|c| c.roots, json!({"roots": {}}))?;
        self.opaque_answer(key, InputRequest::ListRoots).await
    }

    async fn opaque_answer(&self, key: &str, request: InputRequest) -> Result<Value, FlowError> {
        loop {
            return match self.find(key) {
                Found::Carried(raw) => Ok(raw),
                Found::Fresh(raw) if raw.is_object() => {
                    self.keep(key, raw.clone());
                    Ok(raw)
                }
                Found::Fresh(_) => {
                    Err(self.fail(FlowError::InvalidInput(format!("inputResponses[{}] must be an object", clip(key)))))
                }
                Found::Missing => {
                    self.ask(key, request.clone(), None).await?;
                    continue;
                }
            };
        }
    }

    /// Completes a tool's arguments: the request's `arguments` parsed as `T` when they are
    /// complete and valid — no elicitation at all — and otherwise a form asking for exactly the
    /// missing or invalid fields, the errors stated in the message. Valid arguments the model sent
    /// are kept and not asked again; an invalid value is never trusted (nor offered as a default).
    /// A field with a `default` the model left out takes that default. The merged answer is
    /// validated again as a whole.
    ///
    /// With the `schemars` feature the same type is the tool's `inputSchema`, so one struct
    /// declares the tool's parameters, validates the model's arguments and asks the user for what
    /// is missing.
    ///
    /// ```
    /// # use elicit_runtime::server::{Answer, Engine, Flow, Outcome, Request, UrlAnswer};
    /// # use elicit_runtime::state::KeyRing;
    /// # use elicit_runtime::Elicit;
    /// # use serde_json::json;
    /// # /// Who are you?
    /// # #[derive(Elicit, Debug)]
    /// # struct Name {
    /// #     name: String,
    /// # }
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// # let engine = Engine::builder("doc-server", KeyRing::generate()).build();
    /// # let meta = json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
    /// # let arguments = json!({"name": "Ada"});
    /// # let request = Request::new("tools/call", "greet").arguments(Some(&arguments)).meta(meta.as_object());
    /// let greet = |flow: Flow| async move {
    ///     Ok(match flow.complete_args::<Name>("who").await? {
    ///         Answer::Accepted(n) => format!("Hello, {}!", n.name),
    ///         Answer::Declined | Answer::Cancelled => "Hello, stranger.".to_owned(),
    ///     })
    /// };
    /// // Complete arguments: no elicitation at all.
    /// let Outcome::Complete(text) = engine.run(&request, greet).await.unwrap() else { panic!() };
    /// assert_eq!(text, "Hello, Ada!");
    /// // Missing ones: a form asking for exactly those.
    /// let Outcome::InputRequired(asked) = engine.run(&Request::new("tools/call", "greet").meta(meta.as_object()), greet).await.unwrap()
    /// else {
    ///     panic!()
    /// };
    /// assert!(asked.input_requests[0].1.to_json()["params"]["message"].as_str().unwrap().contains("Missing: `name`."));
    /// # });
    /// ```
    pub async fn complete_args<T: Elicit>(&self, key: &str) -> Result<Answer<T>, FlowError> {
        let full = T::requested_schema();
        // A field with a default that the model left out takes its default, as the user's form
        // would have pre-filled it.
        let provided = match self.arguments() {
            Value::Object(arguments) => full.with_defaults(&arguments),
            _ => full.with_defaults(&Map::new()),
        };
        let errors = match T::from_content(&provided) {
            Ok(value) => return Ok(Answer::Accepted(value)),
            Err(errors) => errors,
        };
        let asked: Vec<&str> = errors.iter().map(|e| e.field.as_ref()).collect();
        let mut schema = full.clone();
        schema.properties.retain(|p| asked.contains(&p.name.as_ref()));
        // Everything asked is needed again: an optional argument is asked because it was invalid.
        // Keep what the schema says; only the failing fields appear.
        let kept: Map<String, Value> = provided
            .into_iter()
            .filter(|(name, _)| !asked.contains(&name.as_str()) && full.property(name).is_some())
            .collect();
        let mut missing = Vec::new();
        let mut invalid = Vec::new();
        for error in &errors {
            if error.is_missing() {
                missing.push(format!("`{}`", error.field));
            } else {
                invalid.push(format!("{error}"));
            }
        }
        let mut message = T::MESSAGE.to_owned();
        if !missing.is_empty() {
            message.push_str(&format!("\n\nMissing: {}.", missing.join(", ")));
        }
        if !invalid.is_empty() {
            message.push_str(&format!("\n\nThe values given were not valid: {}.", invalid.join("; ")));
        }
        let asked: Vec<String> = asked.into_iter().map(str::to_owned).collect();
        self.form_schema(key, &message, Cow::Owned(schema), |content| {
            // Only the fields the form asked for: the user's answer cannot overwrite the rest.
            let mut merged = kept.clone();
            merged.extend(content.iter().filter(|(k, _)| asked.contains(k)).map(|(k, v)| (k.clone(), v.clone())));
            T::from_content(&merged)
        })
        .await
    }

    /// Runs `compute` once per flow, whatever the client replays: its value is recorded in the
    /// engine's [`CompletionStore`] under (flow id, `key`) and every later call — in a later round,
    /// a replay of an earlier or of the same state, a concurrent duplicate of the round, a round
    /// served by another instance — returns that value without running `compute` again.
    ///
    /// Concurrent calls race for an atomic claim in the store: the first runs `compute`, the others
    /// wait (up to [`EngineConfig::once_wait`]) for its value and fail with a clear error when it
    /// does not come. An `Err` from `compute` is not recorded: the claim is released and a retry
    /// runs it again. Once the flow has finished (see [`Engine::run`](super::Engine::run)) nothing
    /// new runs in it.
    ///
    /// The one precondition: instances that share state keys share the store (the default
    /// [`InProcessStore`](super::InProcessStore) is one process's; several instances need a shared
    /// one such as `RedisStore`). The records live as long as the flow's states can be replayed.
    ///
    /// ```
    /// # use elicit_runtime::server::{Answer, Engine, Flow, Outcome, Request, UrlAnswer};
    /// # use elicit_runtime::state::KeyRing;
    /// # use elicit_runtime::Elicit;
    /// # use serde_json::json;
    /// # /// Who are you?
    /// # #[derive(Elicit, Debug)]
    /// # struct Name {
    /// #     name: String,
    /// # }
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// # let engine = Engine::builder("doc-server", KeyRing::generate()).build();
    /// # let meta = json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
    /// # let request = Request::new("tools/call", "greet").meta(meta.as_object());
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// static BOOKINGS: AtomicUsize = AtomicUsize::new(0);
    ///
    /// let book = |flow: Flow| async move {
    ///     // Runs in round 1 only; round 2 gets the recorded value back.
    ///     let reference = flow.once("book", || async { Ok(format!("REF-{}", BOOKINGS.fetch_add(1, Ordering::SeqCst))) }).await?;
    ///     let Answer::Accepted(who) = flow.form::<Name>("who").await? else { return Ok(String::new()) };
    ///     Ok(format!("{reference} for {}", who.name))
    /// };
    /// let Outcome::InputRequired(asked) = engine.run(&request, book).await.unwrap() else { panic!() };
    /// let answer = json!({"who": {"action": "accept", "content": {"name": "Ada"}}});
    /// let retry = request.clone().input_responses(Some(&answer)).request_state(asked.request_state.as_deref());
    /// let Outcome::Complete(text) = engine.run(&retry, book).await.unwrap() else { panic!() };
    /// assert_eq!(text, "REF-0 for Ada");
    /// assert_eq!(BOOKINGS.load(Ordering::SeqCst), 1);
    /// # });
    /// ```
    pub async fn once<V, F, Fut>(&self, key: &str, compute: F) -> Result<V, FlowError>
    where
        V: Serialize + DeserializeOwned,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<V, FlowError>>,
    {
        let slot = format!("o:{key}");
        self.lock().effects = true;
        let parse = |value: Value| {
            serde_json::from_value(value).map_err(|e| {
                self.fail(FlowError::Failed(format!("the value kept for `{}` no longer fits its type: {e}", clip(key))))
            })
        };
        let known = self.lock().state.once.get(key).cloned();
        if let Some(value) = known {
            self.lock().seen.push(slot);
            return parse(value);
        }
        if let Some(value) = self.claim_slot(&slot, key).await? {
            let mut inner = self.lock();
            inner.state.once.insert(key.to_owned(), value.clone());
            inner.seen.push(slot);
            drop(inner);
            return parse(value);
        }
        // This call holds the claim: a round parked on a sibling ask waits for it, and a round
        // dropped half-way (the request was cancelled) releases it.
        let mut guard = ClaimGuard { flow: self, slot: Some(slot.clone()) };
        self.lock().computing += 1;
        let computed = compute().await;
        self.lock().computing -= 1;
        let value = match computed {
            Ok(value) => value,
            Err(error) => {
                guard.slot = None;
                self.abandon_slot(&slot).await;
                return Err(error);
            }
        };
        let json = match serde_json::to_value(&value) {
            Ok(json) => json,
            Err(e) => {
                guard.slot = None;
                self.abandon_slot(&slot).await;
                return Err(self.fail(FlowError::Failed(format!("cannot keep `{}`: {e}", clip(key)))));
            }
        };
        self.record_slot(&slot, json.clone()).await?;
        guard.slot = None;
        let mut inner = self.lock();
        inner.state.once.insert(key.to_owned(), json);
        inner.seen.push(slot);
        Ok(value)
    }

    /// Takes the completion of the URL-mode step `id` for the slot this round claimed, and records
    /// it there (or releases the claim when the step is not completed).
    ///
    /// On the MRTR path this runs on a task of its own: the round may be dropped while it waits
    /// (a sibling ask suspended, or the request was cancelled), and a claim must not stay held
    /// for the next round, nor a completion the store already handed over be lost before it is
    /// recorded. A live (2025-era) task keeps it inline under a guard: its session is gone when
    /// it is dropped, and a detached wait could outlive it by minutes.
    async fn take_claimed(&self, slot: String, id: &str) -> Result<Result<UrlStatus, StoreError>, FlowError> {
        let settle = {
            let (store, flow, id, ttl) = (self.store.clone(), self.flow_id(), id.to_owned(), self.record_ttl);
            move |wait: Duration, slot: String| async move {
                let taken = store.take(&id, wait).await;
                let settled = match &taken {
                    Ok(UrlStatus::Completed(value)) => store.record_once(&flow, &slot, value.clone(), ttl).await,
                    _ => store.abandon_once(&flow, &slot).await,
                };
                (taken, settled)
            }
        };
        let (taken, settled) = match (&self.live, tokio::runtime::Handle::try_current()) {
            (None, Ok(runtime)) => runtime.spawn(settle(self.config.url_wait, slot)).await.map_err(|e| {
                self.fail(FlowError::Failed(format!("the wait for a URL-mode step ended abnormally: {e}")))
            })?,
            (live, _) => {
                let wait = live.as_ref().map_or(self.config.url_wait, |live| live.config.url_wait);
                let mut guard = ClaimGuard { flow: self, slot: Some(slot.clone()) };
                let settled = settle(wait, slot).await;
                guard.slot = None;
                settled
            }
        };
        match (&taken, settled) {
            (Ok(UrlStatus::Completed(_)), Err(error)) => Err(self.fail(FlowError::Store(error))),
            (_, Err(error)) => {
                tracing::warn!(target: "elicit_runtime", %error, "could not release an exactly-once claim");
                Ok(taken)
            }
            _ => Ok(taken),
        }
    }

    fn flow_id(&self) -> String {
        self.lock().state.flow.clone()
    }

    /// Claims `slot` of this flow: `Some` with its recorded value, or `None` when this call holds
    /// the claim and must record or abandon it. Waits, bounded, while another call holds it.
    async fn claim_slot(&self, slot: &str, key: &str) -> Result<Option<Value>, FlowError> {
        let flow = self.flow_id();
        let deadline = tokio::time::Instant::now() + self.config.once_wait;
        let mut pause = Duration::from_millis(2);
        loop {
            match self
                .store
                .claim_once(&flow, slot, self.record_ttl)
                .await
                .map_err(|e| self.fail(FlowError::Store(e)))?
            {
                OnceClaim::Done(value) => return Ok(Some(value)),
                OnceClaim::Run => return Ok(None),
                OnceClaim::Finished => {
                    return Err(self.fail(FlowError::Failed(
                        "this flow has already finished: retry with the same requestState to get its result".to_owned(),
                    )));
                }
                OnceClaim::Busy if tokio::time::Instant::now() >= deadline => {
                    return Err(self.fail(FlowError::Failed(format!(
                        "`{}` is still being run by another round of this flow (or that round was interrupted); retry later",
                        clip(key)
                    ))));
                }
                OnceClaim::Busy => {
                    tokio::time::sleep(pause.min(deadline.saturating_duration_since(tokio::time::Instant::now())))
                        .await;
                    pause = (pause * 2).min(Duration::from_millis(100));
                }
            }
        }
    }

    async fn record_slot(&self, slot: &str, value: Value) -> Result<(), FlowError> {
        let flow = self.flow_id();
        self.store.record_once(&flow, slot, value, self.record_ttl).await.map_err(|e| self.fail(FlowError::Store(e)))
    }

    /// Releases a claim without a value; best effort (a failure leaves it to expire).
    async fn abandon_slot(&self, slot: &str) {
        let flow = self.flow_id();
        if let Err(error) = self.store.abandon_once(&flow, slot).await {
            tracing::warn!(target: "elicit_runtime", %error, "could not release an exactly-once claim");
        }
    }
}

/// Releases a claim whose computation was dropped half-way (the request was cancelled).
struct ClaimGuard<'f> {
    flow: &'f Flow,
    slot: Option<String>,
}

impl Drop for ClaimGuard<'_> {
    fn drop(&mut self) {
        let Some(slot) = self.slot.take() else { return };
        let store = self.flow.store.clone();
        let flow = self.flow.flow_id();
        let mut release = Box::pin(async move {
            let _ = store.abandon_once(&flow, &slot).await;
        });
        // A store that answers at once (the in-process one) is released here, before the next
        // round can find the slot still claimed; one that needs I/O finishes on the runtime.
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        if release.as_mut().poll(&mut cx).is_ready() {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(release);
        }
    }
}

fn url_request(record: &UrlRecord) -> InputRequest {
    InputRequest::Elicit(ElicitParams::Url { message: record.message.clone(), url: record.url.clone() })
}

fn url_answer_json(answer: &UrlAnswer) -> Value {
    match answer {
        UrlAnswer::Completed(value) => json!({"action": "accept", "completion": value}),
        UrlAnswer::Declined => json!({"action": "decline"}),
        UrlAnswer::Cancelled => json!({"action": "cancel"}),
    }
}

fn carried_url_answer(raw: &Value) -> UrlAnswer {
    match raw.get("action").and_then(Value::as_str) {
        Some("accept") => UrlAnswer::Completed(raw.get("completion").cloned().unwrap_or(Value::Null)),
        Some("decline") => UrlAnswer::Declined,
        _ => UrlAnswer::Cancelled,
    }
}

/// 128 random bits, URL-safe: the id of a URL-mode step cannot be guessed.
fn mint_id() -> String {
    let mut bytes = [0u8; 16];
    OsRng.fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}
