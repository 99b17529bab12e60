//! The client's Multi Round-Trip driver against a scripted in-process server: what every retry
//! carries (`requestState` echoed byte for byte and only when sent, `inputResponses` keyed exactly
//! like the round being answered, fresh `_meta`), how results are classified, the round bound,
//! isolation of parallel calls, URL consent and its pending state, and answers that are refused
//! locally rather than sent.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use elicit_runtime::client::{
    AskContext, CallError, CheckedUrl, DriveError, Driver, PendingAction, PendingUrl, Responder,
};
use elicit_runtime::schema::RequestedSchema;
use elicit_runtime::wire::{Capabilities, ElicitAction, ElicitResult};
use serde_json::{Map, Value, json};

use crate::fake_server::FakeServer;

const CAPS_KEY: &str = "io.modelcontextprotocol/clientCapabilities";

// ---- a scripted server ----

impl FakeServer {
    /// A server answering its requests with `results`, in order; one request more is a failure.
    fn sequence(results: Vec<Value>) -> Self {
        let mut results: VecDeque<Value> = results.into();
        FakeServer::new(move |method, _| match results.pop_front() {
            Some(result) => Ok(result),
            None => panic!("the driver sent one `{method}` more than the script expects"),
        })
    }
}

// ---- a scripted user ----

#[derive(Debug, Clone, PartialEq)]
enum Asked {
    Form { key: String, round: usize },
    Url { key: String, url: String },
    Pending { key: String, retries: u32 },
}

/// Answers from a script and records what it was asked.
#[derive(Default)]
struct User {
    forms: HashMap<String, ElicitResult>,
    urls: HashMap<String, ElicitAction>,
    pending: VecDeque<PendingAction>,
    asked: Vec<Asked>,
    /// Think time before each answer, so concurrent calls interleave.
    delay: Option<Duration>,
}

impl User {
    fn form(mut self, key: &str, answer: ElicitResult) -> Self {
        self.forms.insert(key.to_owned(), answer);
        self
    }

    fn url(mut self, key: &str, action: ElicitAction) -> Self {
        self.urls.insert(key.to_owned(), action);
        self
    }

    fn pending(mut self, actions: &[PendingAction]) -> Self {
        self.pending = actions.iter().copied().collect();
        self
    }

    async fn think(&self) {
        if let Some(delay) = self.delay {
            tokio::time::sleep(delay).await;
        }
    }
}

impl Responder for User {
    async fn form(&mut self, ctx: AskContext<'_>, _message: &str, _schema: &RequestedSchema) -> ElicitResult {
        self.think().await;
        self.asked.push(Asked::Form { key: ctx.key.to_owned(), round: ctx.round });
        match self.forms.get(ctx.key) {
            Some(answer) => answer.clone(),
            None => panic!("the user was asked an unscripted form `{}`", ctx.key),
        }
    }

    async fn url(&mut self, ctx: AskContext<'_>, _message: &str, url: &CheckedUrl) -> ElicitAction {
        self.think().await;
        self.asked.push(Asked::Url { key: ctx.key.to_owned(), url: url.url.clone() });
        *self.urls.get(ctx.key).unwrap_or_else(|| panic!("the user was asked an unscripted URL `{}`", ctx.key))
    }

    async fn pending(&mut self, ctx: AskContext<'_>, pending: PendingUrl<'_>) -> PendingAction {
        self.asked.push(Asked::Pending { key: ctx.key.to_owned(), retries: pending.retries });
        self.pending.pop_front().unwrap_or_else(|| panic!("unscripted pending state for `{}`", ctx.key))
    }
}

// ---- helpers ----

fn driver() -> Driver {
    Driver::new(Capabilities::ELICITATION, json!({"name": "driver-test", "version": "0"}), "fake-server")
}

fn tool_params(name: &str) -> Map<String, Value> {
    let mut params = Map::new();
    params.insert("name".into(), json!(name));
    params.insert("arguments".into(), json!({}));
    params
}

fn complete(text: &str) -> Value {
    json!({"resultType": "complete", "content": [{"type": "text", "text": text}], "isError": false})
}

fn name_form(message: &str) -> Value {
    json!({"method": "elicitation/create", "params": {"mode": "form", "message": message,
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}})
}

fn url_request(url: &str) -> Value {
    json!({"method": "elicitation/create", "params": {"mode": "url", "message": "pay", "url": url}})
}

fn accept_name(name: &str) -> ElicitResult {
    ElicitResult::accept(json!({"name": name}).as_object().unwrap().clone())
}

fn keys(params: &Map<String, Value>) -> Vec<String> {
    let mut keys: Vec<String> = params
        .get("inputResponses")
        .and_then(Value::as_object)
        .map(|r| r.keys().cloned().collect())
        .unwrap_or_default();
    keys.sort();
    keys
}

// ---- requestState ----

#[tokio::test]
async fn request_state_is_echoed_byte_for_byte() {
    // A state that is itself JSON text: quotes, backslashes, escapes, non-ASCII, a NUL, an emoji,
    // padding and whitespace a careless client might normalise.
    let state = "{\"nonce\":\"a\\\"b\\\\c\\u00e9\",\"city\":\"Zürich\",\"nul\":\"\u{0}\",\"rocket\":\"🚀\"} \t\n==";
    let server = FakeServer::sequence(vec![
        json!({"resultType": "input_required", "inputRequests": {"who": name_form("Who?")}, "requestState": state}),
        complete("done"),
    ]);
    let mut user = User::default().form("who", accept_name("Ada"));
    let result = driver().call(&mut server.caller(), &mut user, "tools/call", tool_params("t")).await.unwrap();
    assert_eq!(result, complete("done"));
    let received = server.received();
    assert_eq!(received.len(), 2);
    let echoed = received[1].params.get("requestState").expect("the retry carries requestState");
    assert_eq!(echoed.as_str().map(str::as_bytes), Some(state.as_bytes()), "the state must come back unchanged");
    // And it serialises to the same JSON string the server sent.
    assert_eq!(serde_json::to_string(echoed).unwrap(), serde_json::to_string(&json!(state)).unwrap());
}

#[tokio::test]
async fn no_request_state_key_when_the_server_sent_none() {
    let server = FakeServer::sequence(vec![
        json!({"resultType": "input_required", "inputRequests": {"who": name_form("Who?")}}),
        json!({"resultType": "input_required", "inputRequests": {"who2": name_form("And?")}, "requestState": "s2"}),
        json!({"resultType": "input_required", "inputRequests": {"who3": name_form("Last?")}}),
        complete("done"),
    ]);
    let mut user =
        User::default().form("who", accept_name("a")).form("who2", accept_name("b")).form("who3", accept_name("c"));
    // A caller that leaves stale loop keys in its params must not leak them into any round.
    let mut params = tool_params("t");
    params.insert("requestState".into(), json!("stale"));
    params.insert("inputResponses".into(), json!({"old": {"action": "cancel"}}));
    driver().call(&mut server.caller(), &mut user, "tools/call", params).await.unwrap();
    let received = server.received();
    assert_eq!(received.len(), 4);
    assert!(!received[0].params.contains_key("requestState"), "first request: {:?}", received[0].params);
    assert!(!received[0].params.contains_key("inputResponses"), "first request: {:?}", received[0].params);
    assert!(!received[1].params.contains_key("requestState"), "no state was sent: {:?}", received[1].params);
    assert_eq!(received[2].params.get("requestState"), Some(&json!("s2")));
    // The state of round 2 answers round 2 only.
    assert!(!received[3].params.contains_key("requestState"), "round 3 had no state: {:?}", received[3].params);
}

// ---- inputResponses ----

#[tokio::test]
async fn input_responses_are_keyed_exactly_like_the_round_answered() {
    let server = FakeServer::sequence(vec![
        json!({"resultType": "input_required",
               "inputRequests": {"alpha": name_form("A?"), "beta": name_form("B?")}, "requestState": "r1"}),
        json!({"resultType": "input_required", "inputRequests": {"gamma": name_form("C?")}, "requestState": "r2"}),
        complete("done"),
    ]);
    let mut user = User::default()
        .form("alpha", accept_name("a"))
        .form("beta", ElicitResult::decline())
        .form("gamma", accept_name("c"));
    driver().call(&mut server.caller(), &mut user, "tools/call", tool_params("t")).await.unwrap();
    let received = server.received();
    assert_eq!(keys(&received[1].params), ["alpha", "beta"]);
    assert_eq!(received[1].params["inputResponses"]["alpha"], json!({"action": "accept", "content": {"name": "a"}}));
    assert_eq!(keys(&received[2].params), ["gamma"], "earlier rounds' keys must not be re-sent");
    assert_eq!(
        user.asked,
        [
            Asked::Form { key: "alpha".into(), round: 1 },
            Asked::Form { key: "beta".into(), round: 1 },
            Asked::Form { key: "gamma".into(), round: 2 },
        ]
    );
    // Same method, same name and arguments on every retry.
    for request in &received {
        assert_eq!(request.method, "tools/call");
        assert_eq!(request.params["name"], json!("t"));
        assert_eq!(request.params["arguments"], json!({}));
    }
}

#[tokio::test]
async fn decline_and_cancel_are_sent_back() {
    let server = FakeServer::sequence(vec![
        json!({"resultType": "input_required", "inputRequests": {
            "d": name_form("D?"), "c": name_form("C?"), "u": url_request("https://pay.example.com/x")}}),
        complete("done"),
    ]);
    let mut user = User::default()
        .form("d", ElicitResult::decline())
        .form("c", ElicitResult::cancel())
        .url("u", ElicitAction::Decline);
    driver().call(&mut server.caller(), &mut user, "tools/call", tool_params("t")).await.unwrap();
    assert_eq!(
        server.received()[1].params["inputResponses"],
        json!({"d": {"action": "decline"}, "c": {"action": "cancel"}, "u": {"action": "decline"}})
    );
}

// ---- _meta and capabilities ----

#[tokio::test]
async fn every_request_carries_fresh_meta_with_the_declared_capabilities() {
    let cases = [
        (Capabilities::ELICITATION, json!({"elicitation": {"form": {}, "url": {}}})),
        (Capabilities { form: true, ..Default::default() }, json!({"elicitation": {"form": {}}})),
        (Capabilities { url: true, ..Default::default() }, json!({"elicitation": {"url": {}}})),
        (Capabilities::default(), json!({})),
    ];
    for (capabilities, expected) in cases {
        // A state-only loop needs no elicitation at all, so every configuration runs three rounds.
        let server = FakeServer::sequence(vec![
            json!({"resultType": "input_required", "requestState": "one"}),
            json!({"resultType": "input_required", "requestState": "two"}),
            complete("done"),
        ]);
        let driver = Driver::new(capabilities, json!({"name": "driver-test", "version": "9"}), "fake");
        let mut params = tool_params("t");
        // Stale `_meta` handed in by the application is replaced, not merged.
        params.insert("_meta".into(), json!({CAPS_KEY: {"sampling": {}}, "stale": true}));
        driver.call(&mut server.caller(), &mut User::default(), "tools/call", params).await.unwrap();
        let received = server.received();
        assert_eq!(received.len(), 3);
        for request in &received {
            let meta = request.params.get("_meta").and_then(Value::as_object).expect("every request has _meta");
            assert_eq!(meta.get(CAPS_KEY), Some(&expected), "{capabilities:?}");
            assert_eq!(meta.get("io.modelcontextprotocol/protocolVersion"), Some(&json!("2026-07-28")));
            assert_eq!(
                meta.get("io.modelcontextprotocol/clientInfo"),
                Some(&json!({"name": "driver-test", "version": "9"}))
            );
            assert!(!meta.contains_key("stale"), "stale _meta leaked: {meta:?}");
            // What a server reads back is exactly what was declared.
            assert_eq!(Capabilities::from_client_capabilities(meta[CAPS_KEY].as_object()), capabilities);
        }
    }
}

#[tokio::test]
async fn an_undeclared_mode_is_refused_and_nothing_is_sent() {
    let form_only = Driver::new(Capabilities { form: true, ..Default::default() }, json!({}), "fake");
    let server = FakeServer::sequence(vec![
        json!({"resultType": "input_required", "inputRequests": {"u": url_request("https://pay.example.com/x")}}),
    ]);
    let error =
        form_only.call(&mut server.caller(), &mut User::default(), "tools/call", tool_params("t")).await.unwrap_err();
    assert!(matches!(&error, DriveError::Refused { key, .. } if key == "u"), "{error:?}");
    assert_eq!(server.received().len(), 1);

    let url_only = Driver::new(Capabilities { url: true, ..Default::default() }, json!({}), "fake");
    let server =
        FakeServer::sequence(vec![json!({"resultType": "input_required", "inputRequests": {"f": name_form("F?")}})]);
    let error =
        url_only.call(&mut server.caller(), &mut User::default(), "tools/call", tool_params("t")).await.unwrap_err();
    assert!(matches!(&error, DriveError::Refused { key, .. } if key == "f"), "{error:?}");
    assert_eq!(server.received().len(), 1);
}

// ---- result classification and bounds ----

#[tokio::test]
async fn a_result_without_result_type_is_complete() {
    let legacy = json!({"content": [{"type": "text", "text": "from an older server"}]});
    let server = FakeServer::sequence(vec![legacy.clone()]);
    let result =
        driver().call(&mut server.caller(), &mut User::default(), "tools/call", tool_params("t")).await.unwrap();
    assert_eq!(result, legacy);
    assert_eq!(server.received().len(), 1, "no retry after a complete result");
}

#[tokio::test]
async fn an_unknown_result_type_is_an_error() {
    for kind in [json!("partial"), json!("Complete"), json!(42), json!(null)] {
        let server = FakeServer::sequence(vec![json!({"resultType": kind, "content": []})]);
        let error = driver()
            .call(&mut server.caller(), &mut User::default(), "tools/call", tool_params("t"))
            .await
            .unwrap_err();
        assert!(matches!(error, DriveError::Protocol(_)), "resultType {kind}: {error:?}");
        assert!(error.to_string().contains("resultType"), "{error}");
        assert_eq!(server.received().len(), 1, "resultType {kind}: no retry");
    }
    // Neither inputRequests nor requestState: nothing to retry with.
    let server = FakeServer::sequence(vec![json!({"resultType": "input_required"})]);
    let error =
        driver().call(&mut server.caller(), &mut User::default(), "tools/call", tool_params("t")).await.unwrap_err();
    assert!(matches!(error, DriveError::Protocol(_)), "{error:?}");
}

#[tokio::test]
async fn endless_input_required_ends_after_the_round_limit() {
    let server = FakeServer::new(|_, _| {
        Ok(
            json!({"resultType": "input_required", "inputRequests": {"again": name_form("Again?")}, "requestState": "x"}),
        )
    });
    let mut user = User::default().form("again", accept_name("a"));
    let error =
        driver().max_rounds(7).call(&mut server.caller(), &mut user, "tools/call", tool_params("t")).await.unwrap_err();
    assert_eq!(error, DriveError::TooManyRounds(7));
    assert!(error.to_string().contains("still asking for input after 7 rounds"), "{error}");
    assert_eq!(server.received().len(), 7);
}

#[tokio::test]
async fn too_many_input_requests_in_one_round_are_refused_unanswered() {
    let requests: Map<String, Value> = (0..65).map(|i| (format!("k{i}"), name_form("?"))).collect();
    let server = FakeServer::sequence(vec![json!({"resultType": "input_required", "inputRequests": requests})]);
    let error =
        driver().call(&mut server.caller(), &mut User::default(), "tools/call", tool_params("t")).await.unwrap_err();
    assert!(matches!(error, DriveError::Protocol(_)), "{error:?}");
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn a_state_only_input_required_result_is_retried() {
    let server = FakeServer::sequence(vec![
        json!({"resultType": "input_required", "requestState": "load-shed-1"}),
        json!({"resultType": "input_required", "requestState": "load-shed-2", "inputRequests": {}}),
        complete("done"),
    ]);
    let mut user = User::default();
    let result = driver().call(&mut server.caller(), &mut user, "tools/call", tool_params("t")).await.unwrap();
    assert_eq!(result, complete("done"));
    let received = server.received();
    assert_eq!(received.len(), 3);
    assert_eq!(received[1].params.get("requestState"), Some(&json!("load-shed-1")));
    assert_eq!(received[2].params.get("requestState"), Some(&json!("load-shed-2")));
    for request in &received {
        assert!(!request.params.contains_key("inputResponses"), "nothing was asked: {:?}", request.params);
    }
    assert!(user.asked.is_empty(), "the user is not bothered by a state-only round");
}

// ---- parallel calls ----

/// A server that runs one three-round flow per tool name: round n asks `<name>-q<n>` and seals
/// `<name>-s<n>`. It records every mix-up instead of failing at once, so both calls finish.
fn per_call_server(violations: Arc<Mutex<Vec<String>>>) -> FakeServer {
    FakeServer::new(move |_, params| {
        let name = params["name"].as_str().unwrap().to_owned();
        let round = match params.get("requestState").and_then(Value::as_str) {
            None => 1,
            Some(state) => match state.strip_prefix(&format!("{name}-s")).and_then(|n| n.parse::<u32>().ok()) {
                Some(n) => n + 1,
                None => {
                    violations.lock().unwrap().push(format!("call {name} carried state {state:?}"));
                    return Err(CallError::Rpc { code: -32602, message: "foreign state".into(), data: None });
                }
            },
        };
        if round > 1 {
            let expected = format!("{name}-q{}", round - 1);
            let got = keys(params);
            if got != [expected.clone()] {
                violations
                    .lock()
                    .unwrap()
                    .push(format!("call {name} round {round} answered {got:?}, not [{expected}]"));
            }
        }
        Ok(if round == 3 {
            complete(&format!("{name} done"))
        } else {
            json!({"resultType": "input_required",
                   "inputRequests": {format!("{name}-q{round}"): name_form(&format!("{name} round {round}"))},
                   "requestState": format!("{name}-s{round}")})
        })
    })
}

#[tokio::test]
async fn parallel_calls_carry_only_their_own_state() {
    let violations = Arc::new(Mutex::new(Vec::new()));
    let server = per_call_server(violations.clone());
    let driver = driver();
    let user = |name: &str, delay_ms: u64| {
        let mut user = User { delay: Some(Duration::from_millis(delay_ms)), ..User::default() };
        for round in 1..=2 {
            user = user.form(&format!("{name}-q{round}"), accept_name(name));
        }
        user
    };
    let (mut user_a, mut user_b) = (user("alpha", 3), user("beta", 1));
    let (mut caller_a, mut caller_b) = (server.caller(), server.caller());
    let (a, b) = tokio::join!(
        driver.call(&mut caller_a, &mut user_a, "tools/call", tool_params("alpha")),
        driver.call(&mut caller_b, &mut user_b, "tools/call", tool_params("beta")),
    );
    assert_eq!(a.unwrap(), complete("alpha done"));
    assert_eq!(b.unwrap(), complete("beta done"));
    assert!(violations.lock().unwrap().is_empty(), "{:?}", violations.lock().unwrap());
    let order: Vec<String> = server.received().iter().map(|r| r.params["name"].as_str().unwrap().to_owned()).collect();
    assert_eq!(order.len(), 6);
    // The two flows really overlapped: beta's second request came before alpha's last one.
    let alpha_last = order.iter().rposition(|n| n == "alpha").unwrap();
    let beta_second = order.iter().enumerate().filter(|(_, n)| *n == "beta").nth(1).unwrap().0;
    assert!(beta_second < alpha_last, "the calls did not interleave: {order:?}");
    for request in server.received() {
        let name = request.params["name"].as_str().unwrap();
        if let Some(state) = request.params.get("requestState").and_then(Value::as_str) {
            assert!(state.starts_with(name), "{name} carried {state}");
        }
        for key in keys(&request.params) {
            assert!(key.starts_with(name), "{name} answered {key}");
        }
    }
}

// ---- URL mode ----

#[tokio::test]
async fn a_pending_url_goes_to_the_pending_control_and_the_consent_is_resent() {
    let url = "https://pay.example.com/p/123";
    let ask = json!({"resultType": "input_required", "inputRequests": {"pay": url_request(url)}, "requestState": "s"});
    let server = FakeServer::sequence(vec![ask.clone(), ask.clone(), ask, complete("paid")]);
    let mut user =
        User::default().url("pay", ElicitAction::Accept).pending(&[PendingAction::Retry, PendingAction::Retry]);
    let result = driver().call(&mut server.caller(), &mut user, "tools/call", tool_params("t")).await.unwrap();
    assert_eq!(result, complete("paid"));
    assert_eq!(
        user.asked,
        [
            Asked::Url { key: "pay".into(), url: url.into() },
            Asked::Pending { key: "pay".into(), retries: 1 },
            Asked::Pending { key: "pay".into(), retries: 2 },
        ],
        "consent is asked once; re-issues are the pending state"
    );
    let received = server.received();
    assert_eq!(received.len(), 4);
    for retry in &received[1..] {
        assert_eq!(retry.params["inputResponses"], json!({"pay": {"action": "accept"}}), "URL consent has no content");
    }
}

#[tokio::test]
async fn cancelling_a_pending_url_sends_cancel() {
    let url = "https://pay.example.com/p/123";
    let ask = json!({"resultType": "input_required", "inputRequests": {"pay": url_request(url)}});
    let server = FakeServer::sequence(vec![ask.clone(), ask, complete("cancelled")]);
    let mut user = User::default().url("pay", ElicitAction::Accept).pending(&[PendingAction::Cancel]);
    driver().call(&mut server.caller(), &mut user, "tools/call", tool_params("t")).await.unwrap();
    assert_eq!(server.received()[2].params["inputResponses"], json!({"pay": {"action": "cancel"}}));
}

#[tokio::test]
async fn a_new_url_under_the_same_key_needs_new_consent() {
    let first =
        json!({"resultType": "input_required", "inputRequests": {"pay": url_request("https://pay.example.com/a")}});
    let second =
        json!({"resultType": "input_required", "inputRequests": {"pay": url_request("https://evil.example.net/a")}});
    let server = FakeServer::sequence(vec![first, second, complete("done")]);
    let mut user = User::default().url("pay", ElicitAction::Accept);
    driver().call(&mut server.caller(), &mut user, "tools/call", tool_params("t")).await.unwrap();
    assert_eq!(
        user.asked,
        [
            Asked::Url { key: "pay".into(), url: "https://pay.example.com/a".into() },
            Asked::Url { key: "pay".into(), url: "https://evil.example.net/a".into() },
        ]
    );
}

#[tokio::test]
async fn a_url_that_must_not_be_opened_is_refused_before_the_user_sees_it() {
    for url in ["javascript:alert(1)", "data:text/html,<script>x</script>", "file:///etc/passwd", "ftp://x.example/"] {
        let server = FakeServer::sequence(vec![
            json!({"resultType": "input_required", "inputRequests": {"pay": url_request(url)}}),
        ]);
        let mut user = User::default().url("pay", ElicitAction::Accept);
        let error = driver().call(&mut server.caller(), &mut user, "tools/call", tool_params("t")).await.unwrap_err();
        assert!(matches!(&error, DriveError::Refused { key, .. } if key == "pay"), "{url}: {error:?}");
        assert!(user.asked.is_empty(), "{url} was shown to the user");
        assert_eq!(server.received().len(), 1);
    }
}

// ---- answers refused locally ----

#[tokio::test]
async fn an_accepted_answer_failing_the_form_is_not_sent() {
    let form = json!({"method": "elicitation/create", "params": {"message": "Age?", "requestedSchema": {
        "type": "object", "properties": {"age": {"type": "integer", "minimum": 18}, "name": {"type": "string"}},
        "required": ["age", "name"]}}});
    let server = FakeServer::sequence(vec![json!({"resultType": "input_required", "inputRequests": {"who": form}})]);
    let mut user = User::default().form("who", ElicitResult::accept(json!({"age": 12}).as_object().unwrap().clone()));
    let error = driver().call(&mut server.caller(), &mut user, "tools/call", tool_params("t")).await.unwrap_err();
    match &error {
        DriveError::InvalidAnswer { key, errors } => {
            assert_eq!(key, "who");
            assert_eq!(errors.to_string(), "`age` must be at least 18; `name` is required");
        }
        other => panic!("expected InvalidAnswer, got {other:?}"),
    }
    assert!(error.to_string().contains("not sent"), "{error}");
    assert_eq!(server.received().len(), 1, "the invalid answer must not reach the server");
}

#[tokio::test]
async fn an_error_from_the_server_ends_the_call() {
    let server =
        FakeServer::new(|_, _| Err(CallError::Rpc { code: -32602, message: "tampered state".into(), data: None }));
    let error =
        driver().call(&mut server.caller(), &mut User::default(), "tools/call", tool_params("t")).await.unwrap_err();
    assert!(matches!(error, DriveError::Call(CallError::Rpc { code: -32602, .. })), "{error:?}");
    assert_eq!(server.received().len(), 1);
}

/// A responder with nobody to ask: it says so instead of answering.
struct Nobody;

impl Responder for Nobody {
    async fn form(&mut self, _ctx: AskContext<'_>, _message: &str, _schema: &RequestedSchema) -> ElicitResult {
        ElicitResult::decline()
    }

    async fn url(&mut self, _ctx: AskContext<'_>, _message: &str, _url: &CheckedUrl) -> ElicitAction {
        ElicitAction::Decline
    }

    async fn pending(&mut self, _ctx: AskContext<'_>, _pending: PendingUrl<'_>) -> PendingAction {
        PendingAction::Cancel
    }

    fn unpresented(&mut self) -> Option<String> {
        Some("no terminal".into())
    }
}

#[tokio::test]
async fn a_request_nobody_could_be_shown_ends_the_call_and_no_answer_is_sent() {
    let driver = Driver::new(Capabilities::ELICITATION, json!({}), "fake");
    for request in [name_form("F?"), url_request("https://pay.example.com/x")] {
        let server =
            FakeServer::sequence(vec![json!({"resultType": "input_required", "inputRequests": {"k": request}})]);
        let error = driver.call(&mut server.caller(), &mut Nobody, "tools/call", tool_params("t")).await.unwrap_err();
        assert!(
            matches!(&error, DriveError::Unpresentable { key, reason } if key == "k" && reason == "no terminal"),
            "{error:?}"
        );
        assert!(error.to_string().contains("nothing was answered"), "{error}");
        // Only the first request: the decline the responder returned was never sent.
        assert_eq!(server.received().len(), 1);
    }
}
