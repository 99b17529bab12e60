//! What a round takes and gives: the [`Request`] as plain data, its [`Outcome`], and the
//! [`EngineError`] to send instead of a result.

use serde_json::{Map, Value, json};

use super::answer::FlowError;
use super::store::StoreError;
use crate::state::INVALID_STATE_MESSAGE;
use crate::wire::{InputRequiredResult, codes};

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
    /// Which client an anonymous request comes from (its peer address), when the transport knows:
    /// anonymous callers' tasks are capped per client
    /// ([`TaskConfig::max_live_tasks_per_anonymous_client`](crate::server::task::TaskConfig::max_live_tasks_per_anonymous_client)),
    /// and their flows' ledger records count against the client's quota
    /// ([`FlowOwner`](crate::server::store::FlowOwner)), so one cannot take every place.
    /// Ignored when there is a principal.
    pub client: Option<&'a str>,
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
            client: None,
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

    /// Sets the client an anonymous request comes from ([`Request::client`]).
    pub fn client(mut self, client: Option<&'a str>) -> Self {
        self.client = client;
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

/// The one way a store's failure reaches a client: `-32603`, with the message of a limit of the
/// deployment the client may act on (finish some steps, wait), or a generic "retry later" for the
/// rest. The detail names the store's host and what failed: it goes to the server's log, not to
/// the client.
impl From<StoreError> for EngineError {
    fn from(error: StoreError) -> Self {
        tracing::error!(target: "elicit_runtime", %error, "a store operation failed");
        let message = match error {
            StoreError::Full { .. } | StoreError::Quota { .. } | StoreError::TaskCap { .. } => error.to_string(),
            _ => "this flow's records are unavailable right now (completion store error); retry later".to_owned(),
        };
        EngineError { code: codes::INTERNAL_ERROR, message, data: None }
    }
}

impl From<FlowError> for EngineError {
    fn from(error: FlowError) -> Self {
        match error {
            FlowError::Unsupported { required } => EngineError {
                code: codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
                message: "this request needs a client capability that was not declared".to_owned(),
                data: Some(json!({ "requiredCapabilities": required })),
            },
            FlowError::InvalidInput(message) => EngineError::invalid_params(message),
            FlowError::Store(error) => EngineError::from(error),
            FlowError::Failed(message) => EngineError { code: codes::INTERNAL_ERROR, message, data: None },
            FlowError::Handler(error) => {
                EngineError { code: codes::INTERNAL_ERROR, message: error.to_string(), data: None }
            }
        }
    }
}
