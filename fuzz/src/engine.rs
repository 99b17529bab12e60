//! A deterministic engine, the one request it serves, and a handler that asks through a form, a
//! URL and sampling: the server side an attacker's `requestState` and `inputResponses` reach.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use elicit_runtime::server::{
    Answer, Engine, EngineError, FLOW_CONFLICT, Flow, FlowError, Outcome, Request, UrlAnswer,
};
use elicit_runtime::state::{Binding, INVALID_STATE_MESSAGE, KeyRing, StateSealer, digest_arguments};
use elicit_runtime::wire::{self, ElicitParams, InputRequest, codes};
use serde_json::{Map, Value, json};

use crate::forms::Contact;

/// The one key of every ring here. Public on purpose: seed tokens must stay valid across runs.
pub const KEY: [u8; 32] = *b"elicit-fuzz: public, not secret!";
/// The engine's audience.
pub const AUDIENCE: &str = "elicit-fuzz";
/// The tool the request calls.
pub const TOOL: &str = "book_trip";
/// The principal the state is bound to.
pub const PRINCIPAL: &str = "fuzz-user";
/// Engine states live a century, so sealed seed tokens never expire.
pub const STATE_TTL: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);
/// The engine's cap on `requestState`, far below the default 64 KiB so that answers of the size
/// libFuzzer writes (a few KiB) can push a state past it.
pub const MAX_STATE_LEN: usize = 1024;
/// Where the payment page lives; the minted id follows.
pub const PAYMENT_PAGE: &str = "https://pay.example.com/deposit/";
/// Every key the handler asks under.
pub const KEYS: [&str; 3] = ["contact", "payment", "summary"];

/// The fixed clock of direct [`StateSealer`] use, so seeds and crashes reproduce.
pub fn t0() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_785_000_000)
}

/// A ring holding [`KEY`].
pub fn ring() -> KeyRing {
    KeyRing::new(vec![KEY]).expect("one key is a valid ring")
}

/// A sealer over [`ring`] with the default lifetime and cap.
pub fn sealer() -> StateSealer {
    StateSealer::new(ring())
}

/// The request's `arguments`.
pub fn arguments() -> Value {
    json!({"destination": "Lisbon", "nights": 3})
}

/// What the engine binds the request's state to.
pub fn binding() -> Binding<'static> {
    Binding {
        principal: Some(PRINCIPAL),
        method: "tools/call",
        name: TOOL,
        arguments_digest: digest_arguments(Some(&arguments())),
        audience: AUDIENCE,
    }
}

/// A fresh engine (a fresh completion store too: nothing is shared between fuzz inputs).
pub fn engine() -> Engine {
    Engine::builder(AUDIENCE, ring())
        .state_ttl(STATE_TTL)
        .max_state_len(MAX_STATE_LEN)
        .max_invalid_answers(2)
        .url_retry_wait(Duration::from_secs(1))
        .url_ttl(Duration::from_secs(900))
        .build()
}

/// The owned parts of the request.
#[derive(Debug, Clone)]
pub struct Call {
    arguments: Value,
    meta: Map<String, Value>,
}

impl Default for Call {
    fn default() -> Self {
        let mut meta = Map::new();
        meta.insert(wire::META_PROTOCOL_VERSION.into(), json!(wire::PROTOCOL_VERSION));
        meta.insert(
            wire::META_CLIENT_CAPABILITIES.into(),
            json!({"elicitation": {"form": {}, "url": {}}, "sampling": {}}),
        );
        Call { arguments: arguments(), meta }
    }
}

impl Call {
    /// The request carrying these answers and this state.
    pub fn request<'a>(&'a self, responses: Option<&'a Value>, state: Option<&'a str>) -> Request<'a> {
        Request::new("tools/call", TOOL)
            .arguments(Some(&self.arguments))
            .meta(Some(&self.meta))
            .input_responses(responses)
            .request_state(state)
            .principal(Some(PRINCIPAL))
    }
}

/// Books a trip: a contact form and the payment page together, then a summary by sampling, and a
/// side effect kept with `once`.
pub async fn book_trip(flow: Flow) -> Result<Value, FlowError> {
    let (contact, payment) = tokio::join!(
        flow.form::<Contact>("contact"),
        flow.url("payment", "Pay the deposit", |id| format!("{PAYMENT_PAGE}{id}")),
    );
    let contact = match contact? {
        Answer::Accepted(contact) => contact,
        Answer::Declined | Answer::Cancelled => return Ok(json!({"booked": false})),
    };
    let receipt = match payment? {
        UrlAnswer::Completed(receipt) => receipt,
        UrlAnswer::Declined | UrlAnswer::Cancelled => return Ok(json!({"booked": false})),
    };
    let prompt = format!("Summarise a trip to Lisbon for {}", contact.name);
    let summary = flow
        .sampling(
            "summary",
            json!({"messages": [{"role": "user", "content": {"type": "text", "text": prompt}}], "maxTokens": 50}),
        )
        .await?;
    let booking = flow.once("booking", || async { Ok(4242u32) }).await?;
    Ok(json!({"booked": true, "booking": booking, "receipt": receipt, "summary": summary}))
}

/// One round's result.
pub type Round = Result<Outcome<Value>, EngineError>;

/// Runs one round of [`book_trip`].
pub fn run(engine: &Engine, call: &Call, responses: Option<&Value>, state: Option<&str>) -> Round {
    crate::block_on(engine.run(&call.request(responses, state), book_trip))
}

/// What every round must satisfy, whatever the client sent: a `-32602`, or a complete result, or
/// an input-required result with a state and only the handler's keys, each of which survives the
/// wire.
pub fn check_round(round: &Round) {
    match round {
        // A fork that would finish the flow otherwise than it went gets the one conflict error.
        Err(error) if error.code == codes::INTERNAL_ERROR => {
            assert_eq!(error.message, FLOW_CONFLICT, "only -32602, or the flow conflict, may answer client input")
        }
        Err(error) => assert_eq!(error.code, codes::INVALID_PARAMS, "only -32602 may answer client input: {error:?}"),
        Ok(Outcome::Complete(_)) => {}
        Ok(Outcome::InputRequired(result)) => {
            assert!(result.request_state.is_some(), "an engine result always carries its state");
            assert!(!result.input_requests.is_empty(), "the handler suspended on nothing");
            for (key, request) in &result.input_requests {
                assert!(KEYS.contains(&key.as_str()), "unexpected input request key {key:?}");
                assert_eq!(
                    InputRequest::from_json(&request.to_json()).as_ref(),
                    Ok(request),
                    "{key} does not survive the wire"
                );
            }
        }
    }
}

/// `true` when the round refused the state itself (never told apart from other state failures).
pub fn refused_state(round: &Round) -> bool {
    matches!(round, Err(error) if error.message == INVALID_STATE_MESSAGE)
}

/// The state to echo after this round, when it asked for input.
pub fn next_state(round: &Round) -> Option<String> {
    match round {
        Ok(Outcome::InputRequired(result)) => result.request_state.clone(),
        _ => None,
    }
}

/// Records completion of the payment page the round sent, as the page would.
pub fn pay(engine: &Engine, round: &Round) {
    let Ok(Outcome::InputRequired(result)) = round else { return };
    for (key, request) in &result.input_requests {
        if let InputRequest::Elicit(ElicitParams::Url { url, .. }) = request
            && key == "payment"
            && let Some(id) = url.strip_prefix(PAYMENT_PAGE)
        {
            // `false` when this step was completed in an earlier round and not yet consumed.
            let _ = crate::block_on(engine.url_completions().complete(id, json!({"paid": true}), None));
        }
    }
}
