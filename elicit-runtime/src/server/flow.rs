//! [`Flow`]: what a handler asks through — the form, sampling and roots asks, the request's
//! principal, progress and cancellation, and the round's bookkeeping the engine reads when the
//! round ends. URL mode is in `url.rs`, `once` in `once.rs`, argument completion in `args.rs`, the
//! form page in `form_page.rs` (each above this file); how an ask reaches the client is the
//! executor's (`exec.rs`, below it), the one place where the ways of running a flow differ.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::answer::{Answer, FlowError};
use super::config::EngineConfig;
use super::context::{AskingFlow, RequestHandle, RequestInfo};
use super::exec::{Executor, Reply};
use super::observe::ObservedFlow;
use super::payload::Payload;
use super::store::{Slot, Store, mint_id};
use crate::Elicit;
use crate::content::ContentErrors;
use crate::schema::RequestedSchema;
use crate::state::digest_arguments;
use crate::wire::{Capabilities, ElicitAction, ElicitParams, ElicitResult, InputRequest, clip};

/// What a suspended round sends: the input requests and the payload to seal.
pub(super) struct Suspension {
    pub(super) requests: Vec<(String, InputRequest)>,
    pub(super) payload: Payload,
}

/// What a completing round records as the flow's finish: its id, its answers, and the ledger
/// slots it saw.
pub(super) struct FinishReport {
    pub(super) flow: String,
    /// Whom the flow's record counts against, should the finish make it.
    pub(super) owner: super::store::FlowOwner,
    /// The answers as the JSON object the flow's state carries (written once, here).
    pub(super) answers: Box<RawValue>,
    pub(super) seen: Vec<Slot>,
}

pub(super) struct Inner {
    capabilities: Capabilities,
    arguments: Value,
    pub(super) state: Payload,
    pub(super) responses: Map<String, Value>,
    requests: Vec<(String, InputRequest)>,
    suspended: bool,
    fatal: Option<FlowError>,
    /// The ledger slots this round read or recorded.
    pub(super) seen: Vec<Slot>,
    /// The values the flow's ledger held for good as the round opened: a claim of one of these
    /// slots is answered here, without the store.
    pub(super) recorded: HashMap<Slot, Value>,
    /// Ledger calls in flight and `once` computations running now: the round is not suspended
    /// under one (a claim dropped on the wire would stay held).
    pub(super) running: usize,
    /// The answers the handler consumed so far in this round, by key: the history a `once`
    /// value computed now belongs to (see [`Flow::once`]).
    pub(super) consumed: Map<String, Value>,
    /// This flow's own choice of asking `form` through the page (see [`Flow::form_fallback`]).
    #[cfg(feature = "pages")]
    pub(super) form_fallback: Option<bool>,
}

impl Inner {
    /// The flow's id, minted when a round first needs one (a ledger slot, a URL-mode step, a state
    /// to seal): a call that completes in its first round without either never reads the OS's
    /// random source for it.
    fn flow_id(&mut self) -> &str {
        if self.state.flow.is_empty() {
            self.state.flow = mint_id();
        }
        &self.state.flow
    }
}

/// What every clone of a flow shares and never changes during the round.
pub(super) struct Shared {
    pub(super) store: Arc<dyn Store>,
    pub(super) config: EngineConfig,
    /// How long the flow's ledger records live after each write (at least its states' lifetime).
    pub(super) record_ttl: Duration,
    pub(super) exec: Executor,
    /// The engine's form pages, if it serves them.
    #[cfg(feature = "pages")]
    pub(super) pages: Option<super::pages::FormPages>,
    /// The forms the engine offers as MCP Apps.
    #[cfg(feature = "apps")]
    pub(super) app_forms: crate::apps::AppForms,
}

/// The handle a handler asks through. Cheap to clone; all clones share one round.
///
/// Every ask takes a key, unique within the flow and stable across rounds: it names the input
/// request on the wire and the answer in the sealed state.
#[derive(Clone)]
pub struct Flow {
    inner: Arc<Mutex<Inner>>,
    pub(super) shared: Arc<Shared>,
    /// The request served: principal, progress and cancellation (`context.rs`).
    pub(super) request: RequestInfo,
}

/// Where an ask found its answer.
pub(super) enum Found {
    /// Consumed in an earlier round (already validated).
    Carried(Value),
    /// Sent in this round's `inputResponses`.
    Fresh(Value),
    /// Nowhere: ask.
    Missing,
}

/// Counts one piece of running work of a round for as long as it lives.
pub(super) struct Running<'f>(&'f Flow);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.lock().running -= 1;
    }
}

impl AskingFlow for Flow {
    fn fail(&self, error: FlowError) -> FlowError {
        Flow::fail(self, error)
    }

    fn request(&self) -> &RequestInfo {
        &self.request
    }

    fn store(&self) -> &Arc<dyn Store> {
        &self.shared.store
    }

    fn config(&self) -> &EngineConfig {
        &self.shared.config
    }

    fn history(&self) -> Map<String, Value> {
        Flow::history(self)
    }
}

impl ObservedFlow for Flow {
    fn id(&self) -> String {
        self.flow_id()
    }

    fn read(&self, read: &mut dyn FnMut(&Payload, &Map<String, Value>)) {
        let inner = self.lock();
        read(&inner.state, &inner.responses);
    }
}

impl Flow {
    pub(super) fn new(
        capabilities: Capabilities,
        arguments: Value,
        state: Payload,
        responses: Map<String, Value>,
        shared: Shared,
    ) -> Self {
        let capabilities = shared.exec.capabilities().unwrap_or(capabilities);
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
                recorded: HashMap::new(),
                running: 0,
                consumed: Map::new(),
                #[cfg(feature = "pages")]
                form_fallback: None,
            })),
            shared: Arc::new(shared),
            request: RequestInfo::default(),
        }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, Inner> {
        // The lock is never held across an await or user code, so poisoning means a bug in this
        // module; the data is still consistent, keep going.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn config(&self) -> &EngineConfig {
        &self.shared.config
    }

    /// Counts running work until the returned guard is dropped.
    pub(super) fn running(&self) -> Running<'_> {
        self.lock().running += 1;
        Running(self)
    }

    /// The capabilities the client declared on this round's request.
    pub fn capabilities(&self) -> Capabilities {
        self.lock().capabilities
    }

    /// The request's `arguments` (`Null` when absent).
    pub fn arguments(&self) -> Value {
        self.lock().arguments.clone()
    }

    pub(super) fn flow_id(&self) -> String {
        self.lock().flow_id().to_owned()
    }

    /// Parked on an unanswered ask, with no ledger call or `once` computation half-way.
    pub(super) fn is_suspended(&self) -> bool {
        let inner = self.lock();
        inner.suspended && inner.running == 0
    }

    /// What the engine records when the flow finishes.
    pub(super) fn finish_report(&self) -> Result<FinishReport, serde_json::Error> {
        let inner = self.lock();
        Ok(FinishReport {
            flow: inner.state.flow.clone(),
            owner: self.request.owner.clone(),
            answers: inner.state.answers.to_json()?,
            seen: inner.seen.clone(),
        })
    }

    pub(super) fn take_fatal(&self) -> Option<FlowError> {
        self.lock().fatal.take()
    }

    pub(super) fn suspension(&self) -> Suspension {
        let mut inner = self.lock();
        let requests = std::mem::take(&mut inner.requests);
        inner.flow_id();
        let mut payload = inner.state.clone();
        payload.pending = requests.iter().map(|(key, _)| key.clone()).collect();
        Suspension { requests, payload }
    }

    /// Notes a ledger slot this round read or recorded.
    pub(super) fn saw(&self, slot: Slot) {
        let mut inner = self.lock();
        if !inner.seen.contains(&slot) {
            inner.seen.push(slot);
        }
    }

    /// [`Flow::find`], taking a fresh answer out of this round's responses rather than copying
    /// it: for an ask that consumes what it finds (keeping it for later rounds itself) or asks
    /// again, so the response is not looked for again.
    fn take(&self, key: &str) -> Found {
        let mut inner = self.lock();
        if let Some(answer) = inner.state.answers.get(key) {
            Found::Carried(answer.clone())
        } else if let Some(answer) = inner.responses.shift_remove(key) {
            Found::Fresh(answer)
        } else {
            Found::Missing
        }
    }

    pub(super) fn find(&self, key: &str) -> Found {
        let mut inner = self.lock();
        if let Some(answer) = inner.state.answers.get(key) {
            Found::Carried(answer.clone())
        } else if let Some(answer) = inner.responses.get(key) {
            Found::Fresh(answer.clone())
        } else {
            Found::Missing
        }
    }

    /// Records an error that fails the whole request whatever the handler does with it.
    pub(super) fn fail(&self, error: FlowError) -> FlowError {
        self.lock().fatal.get_or_insert(error.clone());
        error
    }

    /// `Ok` when the client's capabilities grant what `granted` looks for, else the error naming
    /// what it lacks (`required`, built only then).
    pub(super) fn require(
        &self,
        granted: impl Fn(Capabilities) -> bool,
        required: impl FnOnce() -> Value,
    ) -> Result<(), FlowError> {
        if granted(self.capabilities()) { Ok(()) } else { Err(FlowError::Unsupported { required: required() }) }
    }

    pub(super) fn keep(&self, key: &str, answer: Value) {
        self.lock().state.answers.insert(key.to_owned(), answer);
    }

    /// Notes that the handler consumed `answer` to `key` in this round (carried or fresh).
    pub(super) fn consumed(&self, key: &str, answer: Value) {
        self.lock().consumed.insert(key.to_owned(), answer);
    }

    /// The answers this round consumed so far, each as a digest: the history a value computed
    /// now belongs to.
    pub(super) fn history(&self) -> Map<String, Value> {
        let inner = self.lock();
        let digest =
            |answer: &Value| digest_arguments(Some(answer)).iter().take(16).map(|b| format!("{b:02x}")).collect();
        inner.consumed.iter().map(|(key, answer)| (key.clone(), Value::String(digest(answer)))).collect()
    }

    /// Registers an input request and parks the handler for the rest of the round.
    pub(super) async fn suspend<T>(&self, key: &str, request: InputRequest) -> T {
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

    /// Asks for `key` through the executor; on return the answer is this key's fresh response.
    /// `elicitation_id` names a URL-mode step on the 2025-era wire.
    #[allow(clippy::manual_async_fn, reason = "an `async fn` would hold its arguments twice")]
    pub(super) fn ask(
        &self,
        key: &str,
        request: InputRequest,
        elicitation_id: Option<&str>,
    ) -> impl Future<Output = Result<(), FlowError>> {
        // An async block rather than an `async fn`, which would keep its arguments twice (as
        // taken and as bound) for as long as a 2025-era client takes to answer.
        async move {
            let answer = match self.shared.exec.ask(self, key, &request, elicitation_id).await? {
                Reply::Answer(answer) => answer,
                Reply::Suspend => self.suspend(key, request).await,
            };
            self.lock().responses.insert(key.to_owned(), answer);
            Ok(())
        }
    }

    /// `raw`, the answer found for `key`, read as an elicitation's (taken: its content moves).
    pub(super) fn parse_answer(&self, key: &str, raw: Value) -> Result<ElicitResult, FlowError> {
        ElicitResult::from_owned(raw)
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
    /// An accepted answer that fails validation is asked again — each failing field named by its
    /// title on a line of its own, the refused value quoted, the values that passed as defaults
    /// (a refused value is never sent as a `default`) — up to [`EngineConfig::max_invalid_answers`] times.
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
    /// assert!(message.starts_with("Who is travelling?\n\nPlease correct:\nname: must be a string"), "{message}");
    /// # });
    /// ```
    pub async fn form_with<T: Elicit>(&self, key: &str, message: &str) -> Result<Answer<T>, FlowError> {
        #[cfg(feature = "pages")]
        if self.asks_through_page() {
            return Box::pin(self.form_page::<T>(key, message)).await;
        }
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
        self.require(|c| c.form, || json!({"elicitation": {"form": {}}}))?;
        // The App hint, decided once from the schema as asked: a re-ask keeps it.
        #[cfg(feature = "apps")]
        let meta = self.app_hint(&schema);
        #[cfg(not(feature = "apps"))]
        let meta = None;
        loop {
            // Everything a round reads of the answer lives in this block, which ends before the
            // ask's await: a 2025-era call holds its future for as long as the person takes, and
            // the answer being read, the errors and the re-ask's values need not wait with it.
            let request = 'ask: {
                let (raw, fresh) = match self.take(key) {
                    Found::Carried(raw) => (raw, false),
                    Found::Fresh(raw) => (raw, true),
                    Found::Missing => {
                        break 'ask InputRequest::Elicit(ElicitParams::Form {
                            message: message.to_owned(),
                            requested_schema: schema.clone(),
                            meta: meta.clone(),
                        });
                    }
                };
                let mut answer = self.parse_answer(key, raw)?;
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
                                if attempts > self.config().max_invalid_answers {
                                    return Err(self.fail(FlowError::InvalidInput(format!(
                                        "the answer to `{}` failed validation {attempts} times: {errors}",
                                        clip(key)
                                    ))));
                                }
                                let content = answer.content.unwrap_or_default();
                                let valid = super::reask::valid_values(&content, &errors);
                                break 'ask InputRequest::Elicit(ElicitParams::Form {
                                    message: super::reask::message(message, &schema, &errors, &content),
                                    requested_schema: Cow::Owned(schema.prefilled_with(&valid)),
                                    meta: meta.clone(),
                                });
                            }
                        }
                    }
                };
                // Keep only what the protocol and the schema define: no `_meta`, no `resultType`,
                // no key the form did not ask (a client could make the state or the flow's record
                // as large as it likes with them).
                if let Some(content) = answer.content.as_mut() {
                    content.retain(|name, _| schema.property(name).is_some());
                }
                let kept = answer.into_json();
                if fresh {
                    self.keep(key, kept.clone());
                }
                self.consumed(key, kept);
                return Ok(outcome);
            };
            self.ask(key, request, None).await?;
        }
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
        self.require(|c| c.sampling, || json!({"sampling": {}}))?;
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
        self.require(|c| c.roots, || json!({"roots": {}}))?;
        self.opaque_answer(key, InputRequest::ListRoots).await
    }

    async fn opaque_answer(&self, key: &str, request: InputRequest) -> Result<Value, FlowError> {
        loop {
            return match self.find(key) {
                Found::Carried(raw) => {
                    self.consumed(key, raw.clone());
                    Ok(raw)
                }
                Found::Fresh(raw) if raw.is_object() => {
                    self.keep(key, raw.clone());
                    self.consumed(key, raw.clone());
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
}

impl Flow {
    /// The authenticated principal of the request (as the transport's principal hook found it),
    /// to which the `requestState` and every URL-mode step of this flow are bound.
    pub fn principal(&self) -> Option<&str> {
        self.request.principal.as_deref()
    }

    /// Sends a progress notification (`progress` so far, of `total` if known) when the client
    /// asked for progress on this request; otherwise, or without a transport handle, does
    /// nothing.
    ///
    /// # Errors
    ///
    /// The transport failed to send it.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) -> Result<(), FlowError> {
        self.request.progress(progress, total, message).await
    }

    /// Whether the client cancelled this request (`false` without a transport handle).
    pub fn is_cancelled(&self) -> bool {
        self.request.handle.as_ref().is_some_and(|handle| handle.is_cancelled())
    }

    /// Resolves when the client cancels this request: `select!` on it around long work.
    /// Without a transport handle it never resolves.
    pub async fn cancelled(&self) {
        match &self.request.handle {
            Some(handle) => handle.cancelled().await,
            None => std::future::pending().await,
        }
    }

    /// This flow, bound to the request's principal, its ledger records owned by the request's
    /// [`FlowOwner`](super::store::FlowOwner) (the engine sets both from the request).
    pub(super) fn with_caller(mut self, request: &super::Request<'_>) -> Self {
        self.request.principal = request.principal.map(Arc::from);
        self.request.owner = super::store::FlowOwner::of(request.principal, request.client);
        self
    }

    /// This flow, its client having negotiated app-rendered forms or not.
    #[cfg(feature = "apps")]
    pub(super) fn with_app_forms(mut self, negotiated: bool) -> Self {
        self.request.app_forms = negotiated;
        self
    }

    /// The `_meta` naming the App that renders a form of `schema`: only for a client that
    /// negotiated app-rendered forms, and only for a schema the engine offers as an App.
    #[cfg(feature = "apps")]
    pub(super) fn app_hint(
        &self,
        schema: &crate::schema::RequestedSchema,
    ) -> Option<serde_json::Map<String, serde_json::Value>> {
        if !self.request.app_forms {
            return None;
        }
        self.shared.app_forms.hint_for(schema)
    }

    /// This flow, with the transport's handle on its request (progress, cancellation).
    pub fn with_request_handle(mut self, handle: Arc<dyn RequestHandle>) -> Self {
        self.request.handle = Some(handle);
        self
    }
}
