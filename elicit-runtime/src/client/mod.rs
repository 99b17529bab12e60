//! The client half: per-request capability declaration, the Multi Round-Trip retry driver, and the
//! checks a client owes its user before showing or opening anything a server sent.
//!
//! A [`Driver`] runs one call to completion: it sends the request with fresh `_meta`, and while
//! the server answers `input_required` it has a [`Responder`] answer every input request, then
//! retries the same method (a new JSON-RPC request, hence a new id) with `inputResponses` keyed like
//! the requests and `requestState` echoed exactly — and only when the server sent one. Everything
//! a round needs lives in that call's own loop, so nothing leaks into other calls.
//!
//! The driver is transport-independent: it speaks through a [`Caller`]. Built with
//! [`Driver::tasks`], it also declares the Tasks extension and follows a call the server runs as a
//! task: it polls, answers the task's input requests through the same [`Responder`], and returns
//! the task's result.

pub mod form;
pub mod session;
mod session_driver;
mod tasks;
mod url_check;

use std::collections::HashMap;
use std::fmt;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

pub use tasks::{TaskAction, TaskError, TaskPolicy, TaskWait};
pub use url_check::{CheckedUrl, MAX_URL_LEN, UrlError, UrlWarning, check_url};

use crate::content::ContentErrors;
use crate::schema::RequestedSchema;
use crate::wire::{
    self, Capabilities, ElicitAction, ElicitParams, ElicitResult, InputRequest, InputRequiredResult,
    META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION, PROTOCOL_VERSION, ResultError,
};

/// The `_meta` every request of a 2026-07-28 client carries.
///
/// ```
/// use elicit_runtime::client::request_meta;
/// use elicit_runtime::wire::Capabilities;
///
/// let meta = request_meta(Capabilities::ELICITATION, &serde_json::json!({"name": "me", "version": "1"}));
/// assert_eq!(meta["io.modelcontextprotocol/clientCapabilities"], serde_json::json!({"elicitation": {"form": {}, "url": {}}}));
/// ```
pub fn request_meta(capabilities: Capabilities, client_info: &Value) -> Map<String, Value> {
    let mut meta = Map::new();
    meta.insert(META_PROTOCOL_VERSION.into(), Value::String(PROTOCOL_VERSION.into()));
    meta.insert(META_CLIENT_CAPABILITIES.into(), capabilities.to_json());
    meta.insert(META_CLIENT_INFO.into(), client_info.clone());
    meta
}

/// A failed request: the server's JSON-RPC error, or the transport's failure.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum CallError {
    /// The server answered with a JSON-RPC error.
    Rpc {
        /// The error code.
        code: i32,
        /// The error message.
        message: String,
        /// The error data.
        data: Option<Value>,
    },
    /// The request could not be sent or its answer not read.
    Transport(String),
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Rpc { code, message, .. } => write!(f, "server error {code}: {}", wire::clip(message)),
            CallError::Transport(message) => write!(f, "transport error: {message}"),
        }
    }
}

impl std::error::Error for CallError {}

/// Sends one request and returns its `result`. Every call must be a new JSON-RPC request with a
/// new id; the driver never resends a request object.
///
/// The future is `Send`, so a driver over any `Caller` can be spawned; an implementation writes
/// `async fn call` as usual.
pub trait Caller {
    /// Sends `method` with `params` and returns the result object.
    fn call(
        &mut self,
        method: &str,
        params: Map<String, Value>,
    ) -> impl Future<Output = Result<Value, CallError>> + Send;
}

/// Which input request a responder is answering, for display.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct AskContext<'a> {
    /// The server asking (its name as the user knows it).
    pub server: &'a str,
    /// The input request's key.
    pub key: &'a str,
    /// Which round of the call this is (1-based).
    pub round: usize,
}

/// A URL-mode step the user consented to that the server reports as not finished yet.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct PendingUrl<'a> {
    /// The checked URL.
    pub url: &'a CheckedUrl,
    /// The server's message.
    pub message: &'a str,
    /// When the user consented.
    pub since: Instant,
    /// How many times the server has re-issued it so far.
    pub retries: u32,
    /// What a retry means here.
    pub kind: PendingKind,
}

/// Which kind of pending step this is: it decides what [`PendingAction::Retry`] does.
///
/// For the two 2025-era kinds the driver watches, while `pending` runs, for the completion
/// notification and the call's result, and drops the `pending` future as soon as either comes: a
/// responder must therefore await (yield) regularly rather than block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PendingKind {
    /// 2026-07-28: the server re-issued the step; `Retry` calls again.
    Reissued,
    /// 2025 era, inside a call: the server waits for the page and sends
    /// `notifications/elicitation/complete`; `Retry` keeps waiting, `Cancel` cancels the call.
    InCall,
    /// 2025 era, after a `-32042` error: `Retry` calls again now (it also happens by itself once
    /// every listed step reports completion); `Cancel` gives up.
    Required,
}

/// What to do about a pending URL-mode step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PendingAction {
    /// Retry the call now (the consent stands).
    Retry,
    /// Give up: answer `cancel`.
    Cancel,
}

/// What the application does with each input request.
///
/// Every future is `Send`, so a driver over any `Responder` can be spawned; an implementation
/// writes `async fn` as usual.
pub trait Responder {
    /// Shows a form and returns the user's answer. An `accept` must carry content valid against
    /// `schema` (the driver checks and refuses to send anything else).
    fn form(
        &mut self,
        ctx: AskContext<'_>,
        message: &str,
        schema: &RequestedSchema,
    ) -> impl Future<Output = ElicitResult> + Send;

    /// Shows the URL, asks consent, and opens it only after consent. `Accept` = consented and
    /// opened; failing to open it is `Cancel`.
    fn url(
        &mut self,
        ctx: AskContext<'_>,
        message: &str,
        url: &CheckedUrl,
    ) -> impl Future<Output = ElicitAction> + Send;

    /// The server re-issued a URL step the user already consented to: the out-of-band part is not
    /// finished. Wait (with backoff), let the user retry now, open it again, or cancel.
    fn pending(&mut self, ctx: AskContext<'_>, pending: PendingUrl<'_>) -> impl Future<Output = PendingAction> + Send;

    /// Answers `sampling/createMessage` (only asked when declared). `None` = cannot.
    fn sampling(&mut self, _ctx: AskContext<'_>, _params: &Value) -> impl Future<Output = Option<Value>> + Send {
        std::future::ready(None)
    }

    /// Answers `roots/list` (only asked when declared). `None` = cannot.
    fn roots(&mut self, _ctx: AskContext<'_>) -> impl Future<Output = Option<Value>> + Send {
        std::future::ready(None)
    }

    /// Something the user should know (a refused request, a warning).
    fn notice(&mut self, _ctx: AskContext<'_>, _text: &str) {}

    /// A task works (or waits for answers the server has not taken in yet): show its status, and
    /// poll when `wait.next_poll` has passed, or earlier (retry now), or cancel it. The default
    /// waits and polls.
    fn task_waiting(&mut self, wait: TaskWait<'_>) -> impl Future<Output = TaskAction> + Send {
        let next_poll = wait.next_poll;
        async move {
            tokio::time::sleep(next_poll).await;
            TaskAction::Poll
        }
    }

    /// Why the last [`form`](Responder::form) or [`url`](Responder::url) could not be put before
    /// the person, if it could not (no terminal, no scripted answer for it, a kind of request this
    /// responder cannot show). A responder that could not present a request returns any result
    /// from `form`/`url` and the reason here: the driver then sends nothing and ends the call with
    /// [`DriveError::Unpresentable`]. Nobody answers `decline` or `cancel` on the person's behalf.
    /// Taking the reason clears it. The default: every request was presented.
    fn unpresented(&mut self) -> Option<String> {
        None
    }
}

/// The reason `responder` could not present the request `key`, as the error that ends the call.
pub(crate) fn unpresented<R: Responder>(responder: &mut R, key: &str) -> Result<(), DriveError> {
    match responder.unpresented() {
        Some(reason) => Err(DriveError::Unpresentable { key: key.to_owned(), reason }),
        None => Ok(()),
    }
}

/// Why a call did not complete.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum DriveError {
    /// The request failed.
    Call(CallError),
    /// The server's answer does not follow the protocol.
    Protocol(ProtocolError),
    /// An input request was refused (undeclared mode, malformed schema, unsafe URL).
    Refused {
        /// The input request's key.
        key: String,
        /// Why.
        reason: String,
    },
    /// The responder produced an answer that fails the server's form; it was not sent.
    InvalidAnswer {
        /// The input request's key.
        key: String,
        /// What fails.
        errors: ContentErrors,
    },
    /// The responder could not answer (a sampling or roots request it cannot serve).
    Unanswerable {
        /// The input request's key.
        key: String,
        /// Why.
        reason: String,
    },
    /// The server kept asking for input beyond the round limit.
    TooManyRounds(usize),
    /// The user cancelled the call (2025 era: `notifications/cancelled` was sent).
    Cancelled,
    /// The user declined a step the call cannot go on without (a `-32042` URL).
    Declined,
    /// A call the server ran as a task did not end well (see [`TaskError`]).
    Task(TaskError),
    /// The responder could not put an input request before the person (see
    /// [`Responder::unpresented`]); nothing was answered on their behalf.
    Unpresentable {
        /// The input request's key.
        key: String,
        /// Why.
        reason: String,
    },
}

/// URL steps the user consented to in one call: key -> (url, since, retries).
type Consented = HashMap<String, (String, Instant, u32)>;

/// A state-only round is retried, but never in a tight loop: 100 ms more per idle round, up to 2 s.
async fn back_off(idle_rounds: u32) {
    tokio::time::sleep(Duration::from_millis(100 * u64::from(idle_rounds.min(20)))).await;
}

impl From<ResultError> for DriveError {
    fn from(error: ResultError) -> Self {
        match error {
            ResultError::Request { key, error } => DriveError::Refused { key, reason: error.to_string() },
            other => DriveError::Protocol(ProtocolError::from(other)),
        }
    }
}

impl fmt::Display for DriveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DriveError::Call(error) => write!(f, "{error}"),
            DriveError::Protocol(error) => write!(f, "the server broke the protocol: {error}"),
            DriveError::Refused { key, reason } => write!(f, "refused input request `{}`: {reason}", wire::clip(key)),
            DriveError::InvalidAnswer { key, errors } => {
                write!(f, "the answer to `{}` was not sent because it is invalid: {errors}", wire::clip(key))
            }
            DriveError::Unanswerable { key, reason } => write!(f, "cannot answer `{}`: {reason}", wire::clip(key)),
            DriveError::TooManyRounds(n) => {
                write!(f, "the server was still asking for input after {n} rounds; giving up")
            }
            DriveError::Cancelled => write!(f, "cancelled"),
            DriveError::Declined => write!(f, "declined"),
            DriveError::Task(error) => write!(f, "{error}"),
            DriveError::Unpresentable { key, reason } => {
                write!(f, "cannot show input request `{}` to anyone: {reason}; nothing was answered", wire::clip(key))
            }
        }
    }
}

impl std::error::Error for DriveError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DriveError::Call(error) => Some(error),
            DriveError::Protocol(error) => Some(error),
            DriveError::InvalidAnswer { errors, .. } => Some(errors),
            DriveError::Task(error) => Some(error),
            _ => None,
        }
    }
}

/// How a server broke the protocol: what was wrong, and the wire error that found it when one
/// did (its [`source`](std::error::Error::source)).
#[derive(Debug, Clone, PartialEq)]
pub struct ProtocolError {
    message: String,
    cause: Option<WireCause>,
}

/// The wire error behind a [`ProtocolError`].
#[derive(Debug, Clone, PartialEq)]
enum WireCause {
    Result(ResultError),
    Task(crate::wire::tasks::TaskWireError),
}

impl ProtocolError {
    /// A breach no wire error describes (an answer for another task, too many requests).
    pub(crate) fn new(message: impl Into<String>) -> Self {
        ProtocolError { message: message.into(), cause: None }
    }

    /// What was wrong, in plain words.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ProtocolError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.cause {
            Some(WireCause::Result(error)) => Some(error),
            Some(WireCause::Task(error)) => Some(error),
            None => None,
        }
    }
}

impl From<ResultError> for ProtocolError {
    fn from(error: ResultError) -> Self {
        ProtocolError { message: error.to_string(), cause: Some(WireCause::Result(error)) }
    }
}

impl From<crate::wire::tasks::TaskWireError> for ProtocolError {
    fn from(error: crate::wire::tasks::TaskWireError) -> Self {
        ProtocolError { message: error.to_string(), cause: Some(WireCause::Task(error)) }
    }
}

/// Runs calls to completion through the Multi Round-Trip Requests loop.
#[derive(Debug, Clone)]
pub struct Driver {
    capabilities: Capabilities,
    client_info: Value,
    server_name: String,
    max_rounds: usize,
    max_input_requests: usize,
    tasks: Option<TaskPolicy>,
}

impl Driver {
    /// A driver declaring `capabilities` on every request, introducing itself with `client_info`
    /// (an `Implementation` object) and naming the server `server_name` to the user.
    pub fn new(capabilities: Capabilities, client_info: Value, server_name: impl Into<String>) -> Self {
        Driver {
            capabilities,
            client_info,
            server_name: server_name.into(),
            max_rounds: 100,
            max_input_requests: 64,
            tasks: None,
        }
    }

    /// Gives up after this many rounds (default 100).
    pub fn max_rounds(mut self, rounds: usize) -> Self {
        self.max_rounds = rounds.max(1);
        self
    }

    /// Refuses a round asking for more input requests than this (default 64).
    pub fn max_input_requests(mut self, count: usize) -> Self {
        self.max_input_requests = count;
        self
    }

    /// The capabilities this driver declares.
    pub fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    /// Calls `method` with `params` (without `_meta`, `inputResponses`, `requestState`: the driver
    /// owns those) and drives every round; returns the complete result.
    ///
    /// Each round: build the request (`round_request`), send it, read the result
    /// ([`InputRequiredResult::from_json`]), and either return it (complete), wait and retry
    /// (state only), or answer every input request (`answer_round`) for the next round.
    pub async fn call<C: Caller, R: Responder>(
        &self,
        caller: &mut C,
        responder: &mut R,
        method: &str,
        params: Map<String, Value>,
    ) -> Result<Value, DriveError> {
        let mut responses: Option<Map<String, Value>> = None;
        let mut state: Option<String> = None;
        let mut consented = Consented::new();
        let mut idle_rounds = 0u32;
        for round in 1..=self.max_rounds {
            let request = self.round_request(&params, responses.take(), state.take());
            let result = caller.call(method, request).await.map_err(DriveError::Call)?;
            if let Some(handle) = self.task_handle(method, &result)? {
                return self.drive_task(caller, responder, handle.task, true).await;
            }
            let Some(asked) = InputRequiredResult::from_json(&result).map_err(DriveError::from)? else {
                return Ok(result);
            };
            state = asked.request_state;
            if asked.input_requests.is_empty() {
                idle_rounds += 1;
                back_off(idle_rounds).await;
                continue;
            }
            responses = Some(self.answer_round(round, asked.input_requests, responder, &mut consented).await?);
        }
        Err(DriveError::TooManyRounds(self.max_rounds))
    }

    /// The request of one round: the caller's `params` with this driver's `_meta`, and the
    /// previous round's answers and state, if any.
    fn round_request(
        &self,
        params: &Map<String, Value>,
        responses: Option<Map<String, Value>>,
        state: Option<String>,
    ) -> Map<String, Value> {
        let mut request = params.clone();
        request.remove(wire::INPUT_RESPONSES);
        request.remove(wire::REQUEST_STATE);
        let mut request = self.with_meta(request);
        if let Some(responses) = responses {
            request.insert(wire::INPUT_RESPONSES.into(), Value::Object(responses));
        }
        if let Some(state) = state {
            request.insert(wire::REQUEST_STATE.into(), Value::String(state));
        }
        request
    }

    /// Answers every input request of one round, in order, after checking there are not too many.
    async fn answer_round<R: Responder>(
        &self,
        round: usize,
        requests: Vec<(String, InputRequest)>,
        responder: &mut R,
        consented: &mut Consented,
    ) -> Result<Map<String, Value>, DriveError> {
        if requests.len() > self.max_input_requests {
            return Err(DriveError::Protocol(ProtocolError::new(format!(
                "the server sent {} input requests in one round; at most {} are answered",
                requests.len(),
                self.max_input_requests
            ))));
        }
        let mut answers = Map::new();
        for (key, request) in requests {
            let ctx = AskContext { server: &self.server_name, key: &key, round };
            let answer = self.answer(ctx, request, responder, consented).await?;
            answers.insert(key, answer);
        }
        Ok(answers)
    }

    async fn answer<R: Responder>(
        &self,
        ctx: AskContext<'_>,
        request: InputRequest,
        responder: &mut R,
        consented: &mut Consented,
    ) -> Result<Value, DriveError> {
        let refuse = |reason: String| DriveError::Refused { key: ctx.key.to_owned(), reason };
        match request {
            InputRequest::Elicit(ElicitParams::Form { message, requested_schema, .. }) => {
                if !self.capabilities.form {
                    return Err(refuse(
                        "the server asked with a form, but this client did not declare form mode".into(),
                    ));
                }
                let answer = responder.form(ctx, &message, &requested_schema).await;
                unpresented(responder, ctx.key)?;
                if answer.action == ElicitAction::Accept {
                    let empty = Map::new();
                    form::validate(&requested_schema, answer.content.as_ref().unwrap_or(&empty))
                        .map_err(|errors| DriveError::InvalidAnswer { key: ctx.key.to_owned(), errors })?;
                }
                Ok(answer.to_json())
            }
            InputRequest::Elicit(ElicitParams::Url { message, url }) => {
                if !self.capabilities.url {
                    return Err(refuse(
                        "the server asked to open a URL, but this client did not declare URL mode".into(),
                    ));
                }
                let checked = check_url(&url).map_err(|e| refuse(e.to_string()))?;
                if let Some((previous, since, retries)) = consented.get_mut(ctx.key)
                    && *previous == url
                {
                    *retries += 1;
                    let pending = PendingUrl {
                        url: &checked,
                        message: &message,
                        since: *since,
                        retries: *retries,
                        kind: PendingKind::Reissued,
                    };
                    return Ok(match responder.pending(ctx, pending).await {
                        PendingAction::Retry => ElicitResult::consent().to_json(),
                        PendingAction::Cancel => ElicitResult::cancel().to_json(),
                    });
                }
                let action = responder.url(ctx, &message, &checked).await;
                unpresented(responder, ctx.key)?;
                if action == ElicitAction::Accept {
                    consented.insert(ctx.key.to_owned(), (url, Instant::now(), 0));
                }
                Ok(json!({ "action": action.as_str() }))
            }
            InputRequest::CreateMessage(params) => {
                if !self.capabilities.sampling {
                    return Err(refuse("the server asked for sampling, which this client did not declare".into()));
                }
                responder.sampling(ctx, &params).await.ok_or_else(|| DriveError::Unanswerable {
                    key: ctx.key.to_owned(),
                    reason: "the sampling request could not be served".into(),
                })
            }
            InputRequest::ListRoots => {
                if !self.capabilities.roots {
                    return Err(refuse("the server asked for roots, which this client did not declare".into()));
                }
                responder.roots(ctx).await.ok_or_else(|| DriveError::Unanswerable {
                    key: ctx.key.to_owned(),
                    reason: "the roots request could not be served".into(),
                })
            }
        }
    }
}

#[cfg(test)]
mod send_futures {
    use super::session::{SessionCaller, SessionReceiver};
    use super::*;

    fn spawnable<F: Future + Send>(future: F) -> F {
        future
    }

    /// Generic code can spawn a call: for any `Send` caller and responder, every driving future
    /// is `Send`. The check is that this compiles; it never runs.
    #[allow(dead_code, reason = "a compile-time check: only its type-checking matters")]
    fn driving_futures_are_send<C: SessionCaller + Send, R: Responder + Send>(
        driver: &Driver,
        caller: &mut C,
        responder: &mut R,
        pushes: &mut SessionReceiver,
    ) {
        drop(spawnable(driver.call(caller, responder, "tools/call", Map::new())));
        drop(spawnable(driver.call_in_session(caller, pushes, responder, "tools/call", Map::new())));
        drop(spawnable(driver.resume_task(caller, responder, "task")));
    }
}
