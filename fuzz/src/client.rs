//! The client side in process: a scripted server behind [`Caller`] that also checks what the
//! driver sends on each retry, and a trivial [`Responder`].

use elicit_runtime::client::{AskContext, CallError, Caller, CheckedUrl, PendingAction, PendingUrl, Responder, form};
use elicit_runtime::schema::RequestedSchema;
use elicit_runtime::wire::{ElicitAction, ElicitResult, META_PROTOCOL_VERSION, RESULT_INPUT_REQUIRED};
use serde_json::{Map, Value, json};

/// A server answering every call with the next scripted result, then failing the transport.
#[derive(Debug)]
pub struct ScriptedServer {
    results: std::vec::IntoIter<Value>,
    previous: Option<Value>,
    /// How many calls the driver made.
    pub calls: usize,
}

impl ScriptedServer {
    /// Answers with `results`, in order.
    pub fn new(results: Vec<Value>) -> Self {
        ScriptedServer { results: results.into_iter(), previous: None, calls: 0 }
    }

    /// What a retry must carry, given the server's previous answer: fresh `_meta`, the state echoed
    /// exactly and only when sent, and an answer for exactly the keys asked.
    fn check_request(&self, params: &Map<String, Value>) {
        let meta = params.get("_meta").and_then(Value::as_object).expect("every request carries _meta");
        assert!(meta.contains_key(META_PROTOCOL_VERSION), "_meta lacks the protocol version");
        let Some(previous) = &self.previous else {
            assert!(
                !params.contains_key("inputResponses") && !params.contains_key("requestState"),
                "a first call answers nothing"
            );
            return;
        };
        assert_eq!(
            previous.get("resultType").and_then(Value::as_str),
            Some(RESULT_INPUT_REQUIRED),
            "retried after a final result"
        );
        assert_eq!(params.get("requestState"), previous.get("requestState"), "requestState not echoed exactly");
        let asked: Vec<&String> = match previous.get("inputRequests").and_then(Value::as_object) {
            Some(requests) => requests.keys().collect(),
            None => Vec::new(),
        };
        let answered: Vec<&String> = match params.get("inputResponses") {
            Some(responses) => responses.as_object().expect("inputResponses is an object").keys().collect(),
            None => Vec::new(),
        };
        assert_eq!(answered, asked, "inputResponses not keyed like the requests");
    }
}

impl Caller for ScriptedServer {
    async fn call(&mut self, _method: &str, params: Map<String, Value>) -> Result<Value, CallError> {
        self.check_request(&params);
        self.calls += 1;
        let result = self.results.next().ok_or_else(|| CallError::Transport("script exhausted".into()))?;
        self.previous = Some(result.clone());
        Ok(result)
    }
}

/// Accepts a form with its defaults when they make a valid answer (declines otherwise), consents
/// to URLs, retries a pending step twice, and answers sampling and roots.
#[derive(Debug, Default)]
pub struct TrivialResponder;

impl Responder for TrivialResponder {
    async fn form(&mut self, _ctx: AskContext<'_>, _message: &str, schema: &RequestedSchema) -> ElicitResult {
        let content = form::with_defaults(schema, &Map::new());
        if form::validate(schema, &content).is_ok() { ElicitResult::accept(content) } else { ElicitResult::decline() }
    }

    async fn url(&mut self, _ctx: AskContext<'_>, _message: &str, url: &CheckedUrl) -> ElicitAction {
        assert_eq!(&url.url[url.host_range.clone()], url.host, "the highlighted range is the host");
        ElicitAction::Accept
    }

    async fn pending(&mut self, _ctx: AskContext<'_>, pending: PendingUrl<'_>) -> PendingAction {
        if pending.retries < 2 { PendingAction::Retry } else { PendingAction::Cancel }
    }

    async fn sampling(&mut self, _ctx: AskContext<'_>, _params: &Value) -> Option<Value> {
        Some(
            json!({"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "fuzz", "stopReason": "endTurn"}),
        )
    }

    async fn roots(&mut self, _ctx: AskContext<'_>) -> Option<Value> {
        Some(json!({"roots": []}))
    }
}
