//! Driving [`Engine::run`](elicit_runtime::server::Engine::run) directly: an owned request that lends itself as a [`Request`], and
//! assertions on what a round produced.

use elicit_runtime::server::{EngineError, Outcome, Request};
use elicit_runtime::state::INVALID_STATE_MESSAGE;
use elicit_runtime::wire::{InputRequiredResult, META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, PROTOCOL_VERSION};
use serde_json::{Map, Value, json};

/// An owned request: the data a transport would hand the engine.
#[derive(Debug, Clone)]
pub struct Call {
    /// The JSON-RPC method.
    pub method: String,
    /// The tool's (or prompt's) name.
    pub name: String,
    /// `arguments`.
    pub arguments: Option<Value>,
    /// `_meta`.
    pub meta: Map<String, Value>,
    /// `inputResponses`.
    pub responses: Option<Value>,
    /// `requestState`.
    pub state: Option<String>,
    /// Who is calling, as the transport authenticated it.
    pub principal: Option<String>,
}

/// `_meta` declaring these `ClientCapabilities`.
pub fn meta(capabilities: Value) -> Map<String, Value> {
    let mut meta = Map::new();
    meta.insert(META_PROTOCOL_VERSION.into(), json!(PROTOCOL_VERSION));
    meta.insert(META_CLIENT_CAPABILITIES.into(), capabilities);
    meta
}

impl Call {
    /// A first-round `tools/call name` with `{}` arguments, declaring form and URL elicitation.
    pub fn tool(name: &str) -> Call {
        Call {
            method: "tools/call".into(),
            name: name.into(),
            arguments: Some(json!({})),
            meta: meta(crate::mcp::form_and_url()),
            responses: None,
            state: None,
            principal: None,
        }
    }

    /// The same request with these arguments.
    pub fn arguments(mut self, arguments: Value) -> Call {
        self.arguments = Some(arguments);
        self
    }

    /// The same request declaring these capabilities.
    pub fn capabilities(mut self, capabilities: Value) -> Call {
        self.meta = meta(capabilities);
        self
    }

    /// The same request from this principal.
    pub fn principal(mut self, principal: Option<&str>) -> Call {
        self.principal = principal.map(str::to_owned);
        self
    }

    /// The retry of this request: `inputResponses` and the echoed state.
    pub fn retry(&self, responses: Value, state: Option<&str>) -> Call {
        Call { responses: Some(responses), state: state.map(str::to_owned), ..self.clone() }
    }

    /// The same request carrying this raw `requestState`.
    pub fn with_state(&self, state: &str) -> Call {
        Call { state: Some(state.to_owned()), ..self.clone() }
    }

    /// The borrowed form the engine takes.
    pub fn request(&self) -> Request<'_> {
        Request::new(&self.method, &self.name)
            .arguments(self.arguments.as_ref())
            .meta(Some(&self.meta))
            .input_responses(self.responses.as_ref())
            .request_state(self.state.as_deref())
            .principal(self.principal.as_deref())
    }
}

/// The `InputRequiredResult` of a round; panics on anything else.
pub fn asked<R: std::fmt::Debug>(round: Result<Outcome<R>, EngineError>) -> InputRequiredResult {
    match round {
        Ok(Outcome::InputRequired(asked)) => {
            assert!(asked.request_state.is_some(), "an InputRequiredResult of the engine without requestState");
            asked
        }
        other => panic!("expected an InputRequiredResult, got {other:?}"),
    }
}

/// The value of a complete round; panics on anything else.
pub fn complete<R: std::fmt::Debug>(round: Result<Outcome<R>, EngineError>) -> R {
    match round {
        Ok(Outcome::Complete(value)) => value,
        other => panic!("expected a complete result, got {other:?}"),
    }
}

/// The error of a round; panics on anything else.
pub fn failed<R: std::fmt::Debug>(round: Result<Outcome<R>, EngineError>) -> EngineError {
    match round {
        Err(error) => error,
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

/// Panics unless the round failed with exactly `-32602` and [`INVALID_STATE_MESSAGE`], no data.
#[track_caller]
pub fn assert_invalid_state<R: std::fmt::Debug>(round: Result<Outcome<R>, EngineError>, case: &str) {
    match round {
        Err(EngineError { code: -32602, message, data: None }) if message == INVALID_STATE_MESSAGE => {}
        other => panic!("{case}: expected -32602 `{INVALID_STATE_MESSAGE}`, got {other:?}"),
    }
}

/// The keys of a result's input requests, in the order asked.
pub fn keys(asked: &InputRequiredResult) -> Vec<&str> {
    asked.input_requests.iter().map(|(k, _)| k.as_str()).collect()
}

/// The wire form (`{method, params}`) of the input request under `key`.
pub fn request_json(asked: &InputRequiredResult, key: &str) -> Value {
    asked
        .input_requests
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, r)| r.to_json())
        .unwrap_or_else(|| panic!("no input request `{key}` in {:?}", keys(asked)))
}

/// What is your name?
#[derive(elicit_runtime::Elicit, Debug, Clone, PartialEq)]
pub struct Name {
    /// Your name
    #[elicit(min_length = 2)]
    pub name: String,
}

/// A one-question handler: asks for a [`Name`] under the key `who`.
pub async fn greet(flow: elicit_runtime::server::Flow) -> Result<String, elicit_runtime::server::FlowError> {
    use elicit_runtime::server::Answer;
    Ok(match flow.form::<Name>("who").await? {
        Answer::Accepted(n) => format!("Hello, {}!", n.name),
        Answer::Declined => "declined".to_owned(),
        Answer::Cancelled => "cancelled".to_owned(),
    })
}

/// `inputResponses` answering `who` with `name`.
pub fn answer_who(name: &str) -> Value {
    json!({"who": {"action": "accept", "content": {"name": name}}})
}
