//! The engine on a 2025-era session ([`Engine::run_in_session`]). The
//! handler runs once as a live task; every ask is a request pushed through a [`SessionPeer`]. Here
//! the peer is the test itself, answering each pushed request the way a client would, so each
//! test sees exactly what went out and decides what comes back.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use elicit_runtime::Elicit;
use elicit_runtime::server::session::{PeerError, PeerFuture, Session, SessionPeer, SessionStats};
use elicit_runtime::server::store::UrlStatus;
use elicit_runtime::server::{
    Answer, Engine, EngineBuilder, EngineError, Flow, FlowError, Progress, Request, RequestHandle, UrlAnswer,
};
use elicit_runtime::state::KeyRing;
use elicit_runtime::wire::{Capabilities, Revision};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use super::forms::{Colour, Person};

/// A request the engine pushed, waiting for the test's answer.
pub(super) struct Pushed {
    pub(super) method: &'static str,
    pub(super) params: Option<Value>,
    reply: oneshot::Sender<Result<Value, PeerError>>,
}

impl Pushed {
    pub(super) fn answer(self, result: Value) {
        let _ = self.reply.send(Ok(result));
    }
}

/// The client end as the test drives it.
struct Client {
    requests: mpsc::UnboundedSender<Pushed>,
    notifications: mpsc::UnboundedSender<(&'static str, Value)>,
}

impl SessionPeer for Client {
    fn request(&self, method: &'static str, params: Option<Value>) -> PeerFuture<'_, Result<Value, PeerError>> {
        let (reply, answer) = oneshot::channel();
        let sent = self.requests.send(Pushed { method, params, reply });
        Box::pin(async move {
            sent.map_err(|_| PeerError::Connection)?;
            answer.await.unwrap_or(Err(PeerError::Connection))
        })
    }

    fn notify(&self, method: &'static str, params: Value) -> PeerFuture<'_, Result<(), PeerError>> {
        let sent = self.notifications.send((method, params)).map_err(|_| PeerError::Connection);
        Box::pin(async move { sent })
    }
}

pub(super) struct Harness {
    engine: Arc<Engine>,
    session: Session,
    requests: mpsc::UnboundedReceiver<Pushed>,
    notifications: mpsc::UnboundedReceiver<(&'static str, Value)>,
}

impl Harness {
    fn new(version: Revision, declared: Value) -> Self {
        Self::with(version, declared, |engine| engine)
    }

    pub(super) fn with(
        version: Revision,
        declared: Value,
        settings: impl FnOnce(EngineBuilder) -> EngineBuilder,
    ) -> Self {
        let engine = Arc::new(settings(Engine::builder("legacy-engine-tests", KeyRing::generate())).build());
        let (requests, requests_rx) = mpsc::unbounded_channel();
        let (notifications, notifications_rx) = mpsc::unbounded_channel();
        let capabilities = version.capabilities(declared.as_object());
        // As the rmcp adapter does: the draft app-rendered forms negotiated from the same declaration.
        let session =
            Session::new(version, capabilities, Arc::new(Client { requests, notifications }), engine.ask_limit())
                .with_client_capabilities(declared.as_object());
        Harness { engine, session, requests: requests_rx, notifications: notifications_rx }
    }

    /// Runs `handler` live as its own task.
    pub(super) fn spawn<R, F, Fut>(&self, handler: F) -> tokio::task::JoinHandle<Result<R, EngineError>>
    where
        R: Send + 'static,
        F: FnOnce(Flow) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<R, FlowError>> + Send,
    {
        let engine = self.engine.clone();
        let session = self.session.clone();
        tokio::spawn(async move { engine.run_in_session(&Request::new("tools/call", "t"), &session, handler).await })
    }

    /// The next pushed request; a handler that never sends one fails the test instead of hanging it.
    pub(super) async fn next(&mut self) -> Pushed {
        tokio::time::timeout(Duration::from_secs(30), self.requests.recv())
            .await
            .expect("the engine pushed no request")
            .expect("the engine dropped the client")
    }
}

pub(super) fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

pub(super) async fn finished<R>(task: tokio::task::JoinHandle<Result<R, EngineError>>) -> Result<R, EngineError> {
    tokio::time::timeout(Duration::from_secs(30), task).await.expect("the live task did not finish").unwrap()
}

pub(super) async fn describe_person(flow: Flow) -> Result<String, FlowError> {
    Ok(match flow.form::<Person>("person").await? {
        Answer::Accepted(p) => format!("{} is {}", p.name, p.age),
        Answer::Declined => "declined".to_owned(),
        Answer::Cancelled => "cancelled".to_owned(),
    })
}

#[tokio::test]
async fn form_answers_of_every_kind_reach_the_handler() {
    for (version, mode) in [(Revision::V2025_06_18, None), (Revision::V2025_11_25, Some("form"))] {
        for (reply, expected) in [
            (accept(json!({"name": "Ada", "age": 36})), "Ada is 36"),
            (json!({"action": "decline"}), "declined"),
            (json!({"action": "cancel"}), "cancelled"),
        ] {
            let mut h = Harness::new(version, json!({"elicitation": {}}));
            let task = h.spawn(describe_person);
            let pushed = h.next().await;
            assert_eq!(pushed.method, "elicitation/create");
            let params = pushed.params.clone().unwrap();
            assert_eq!(params.get("mode").and_then(Value::as_str), mode, "{version:?}");
            assert_eq!(params["requestedSchema"], Person::requested_schema().to_json());
            assert_eq!(params["message"], Person::MESSAGE);
            pushed.answer(reply);
            assert_eq!(finished(task).await.unwrap(), expected);
            assert_eq!(h.engine.session_stats(), SessionStats::default());
        }
    }
}

#[tokio::test]
async fn an_invalid_answer_is_asked_again_with_the_errors_and_the_values_that_passed() {
    let mut h = Harness::new(Revision::V2025_11_25, json!({"elicitation": {"form": {}}}));
    let task = h.spawn(describe_person);
    h.next().await.answer(accept(json!({"name": "A", "age": 36})));
    let again = h.next().await;
    let params = again.params.clone().unwrap();
    let message = params["message"].as_str().unwrap();
    assert!(message.starts_with(Person::MESSAGE) && message.contains("\nName: "), "{message}");
    assert!(message.ends_with("(you entered \"A\")"), "the refused value quoted: {message}");
    assert_eq!(params["requestedSchema"]["properties"]["name"].get("default"), None, "a refused value is no default");
    assert_eq!(params["requestedSchema"]["properties"]["age"]["default"], 36);
    again.answer(accept(json!({"name": "Ada", "age": 36})));
    assert_eq!(finished(task).await.unwrap(), "Ada is 36");

    // The same limit as on the replay path: the fourth invalid answer fails the call.
    let task = h.spawn(describe_person);
    for _ in 0..4 {
        h.next().await.answer(accept(json!({"name": "A", "age": 200})));
    }
    let error = finished(task).await.unwrap_err();
    assert_eq!(error.code, -32602);
    assert!(error.message.contains("failed validation 4 times"), "{error}");
}

#[tokio::test]
async fn a_malformed_answer_is_a_clear_error() {
    let mut h = Harness::new(Revision::V2025_11_25, json!({"elicitation": {}}));
    let task = h.spawn(describe_person);
    h.next().await.answer(json!({"action": "maybe"}));
    let error = finished(task).await.unwrap_err();
    assert_eq!(error.code, -32602);
    assert!(error.message.contains("person"), "{error}");
}

async fn pay(flow: Flow) -> Result<String, FlowError> {
    Ok(match flow.url("pay", "Pay on our page", |id| format!("https://pay.example/{id}")).await? {
        UrlAnswer::Completed(value) => format!("paid: {value}"),
        UrlAnswer::Declined => "declined".to_owned(),
        UrlAnswer::Cancelled => "cancelled".to_owned(),
    })
}

#[tokio::test]
async fn url_consent_waits_for_the_page_then_notifies_completion() {
    let mut h = Harness::new(Revision::V2025_11_25, json!({"elicitation": {"form": {}, "url": {}}}));
    let task = h.spawn(pay);
    let pushed = h.next().await;
    let params = pushed.params.clone().unwrap();
    assert_eq!(params["mode"], "url");
    let id = params["elicitationId"].as_str().unwrap().to_owned();
    assert_eq!(params["url"], format!("https://pay.example/{id}"));
    assert_eq!(h.engine.session_stats(), SessionStats { tasks: 1, url_records: 1 });
    pushed.answer(json!({"action": "accept"}));
    // Consent alone does not finish the step: no notification until the page records completion.
    assert!(h.notifications.try_recv().is_err());
    assert!(h.engine.url_completions().complete(&id, json!({"approved": true}), None).await.unwrap());
    assert_eq!(finished(task).await.unwrap(), r#"paid: {"approved":true}"#);
    let (method, params) = h.notifications.recv().await.unwrap();
    assert_eq!((method, params), ("notifications/elicitation/complete", json!({"elicitationId": id})));
    assert_eq!(h.engine.session_stats(), SessionStats::default());
}

#[tokio::test]
async fn the_page_completing_is_told_before_the_client_answers_and_only_once() {
    let config = |engine: EngineBuilder| engine.session_url_poll(Duration::from_millis(5));
    let mut h = Harness::with(Revision::V2025_11_25, json!({"elicitation": {"url": {}}}), config);
    let task = h.spawn(pay);
    let pushed = h.next().await;
    let id = pushed.params.as_ref().unwrap()["elicitationId"].as_str().unwrap().to_owned();
    // The page records the decision while the host still shows its "waiting" prompt: the host is
    // told at once, before anyone presses a button there.
    assert!(h.engine.url_completions().complete(&id, json!({"approved": true}), None).await.unwrap());
    let (method, params) =
        tokio::time::timeout(Duration::from_secs(30), h.notifications.recv()).await.expect("no notification").unwrap();
    assert_eq!((method, params), ("notifications/elicitation/complete", json!({"elicitationId": id})));
    pushed.answer(json!({"action": "accept"}));
    assert_eq!(finished(task).await.unwrap(), r#"paid: {"approved":true}"#);
    assert!(h.notifications.try_recv().is_err(), "told once, not again when the client answered");
    assert_eq!(h.engine.session_stats(), SessionStats::default());
}

/// The transport's side of the call, as the test sees it: the progress it was asked to send.
struct Progressed(mpsc::UnboundedSender<Progress>);

impl RequestHandle for Progressed {
    fn progress(&self, report: Progress) -> PeerFuture<'_, Result<(), FlowError>> {
        let _ = self.0.send(report);
        Box::pin(async { Ok(()) })
    }
    fn is_cancelled(&self) -> bool {
        false
    }
    fn cancelled(&self) -> PeerFuture<'_, ()> {
        Box::pin(std::future::pending())
    }
}

#[tokio::test]
async fn a_call_waiting_on_a_person_sends_increasing_heartbeats_until_answered() {
    let config = |engine: EngineBuilder| engine.session_heartbeat(Duration::from_millis(5));
    let mut h = Harness::with(Revision::V2025_11_25, json!({"elicitation": {"form": {}}}), config);
    let (sent, mut progress) = mpsc::unbounded_channel();
    let handle: Arc<dyn RequestHandle> = Arc::new(Progressed(sent));
    let task = h.spawn(move |flow: Flow| describe_person(flow.with_request_handle(handle)));
    let pushed = h.next().await;
    // The person takes their time: three heartbeats go out meanwhile, each counting up.
    let mut last = 0.0;
    for _ in 0..3 {
        let beat = tokio::time::timeout(Duration::from_secs(30), progress.recv()).await.expect("no heartbeat").unwrap();
        assert!(beat.progress > last, "progress increases: {beat:?}");
        assert!(beat.message.is_some(), "{beat:?}");
        last = beat.progress;
    }
    pushed.answer(accept(json!({"name": "Ada", "age": 36})));
    assert_eq!(finished(task).await.unwrap(), "Ada is 36");
    // The call is over: its heartbeats stopped with it.
    while progress.try_recv().is_ok() {}
    assert!(progress.recv().await.is_none(), "the heartbeats end with the call");
}

#[tokio::test]
async fn url_decline_and_cancel_reach_the_handler_and_release_the_record() {
    for (reply, expected) in [("decline", "declined"), ("cancel", "cancelled")] {
        let mut h = Harness::new(Revision::V2025_11_25, json!({"elicitation": {"url": {}}}));
        let task = h.spawn(pay);
        let pushed = h.next().await;
        let id = pushed.params.as_ref().unwrap()["elicitationId"].as_str().unwrap().to_owned();
        pushed.answer(json!({"action": reply}));
        assert_eq!(finished(task).await.unwrap(), expected);
        assert_eq!(h.engine.url_completions().status(&id).await.unwrap(), UrlStatus::Unknown);
        assert_eq!(h.engine.session_stats(), SessionStats::default());
        assert!(h.notifications.try_recv().is_err(), "no completion notification for `{reply}`");
    }
}

#[tokio::test]
async fn a_page_not_completed_in_time_is_a_bounded_error() {
    let config = |engine: EngineBuilder| engine.session_url_completion_timeout(Duration::from_millis(20));
    let mut h = Harness::with(Revision::V2025_11_25, json!({"elicitation": {"url": {}}}), config);
    let task = h.spawn(pay);
    h.next().await.answer(json!({"action": "accept"}));
    let error = finished(task).await.unwrap_err();
    assert_eq!(error.code, -32603);
    assert!(error.message.contains("not completed"), "{error}");
    assert_eq!(h.engine.session_stats(), SessionStats::default());
}

#[tokio::test]
async fn sampling_and_roots_are_pushed_requests() {
    let mut h = Harness::new(Revision::V2025_11_25, json!({"sampling": {}, "roots": {}}));
    let task = h.spawn(|flow: Flow| async move {
        let sampled = flow.sampling("s", json!({"messages": [], "maxTokens": 5})).await?;
        let roots = flow.roots("r").await?;
        Ok((sampled, roots))
    });
    let pushed = h.next().await;
    assert_eq!(
        (pushed.method, pushed.params.clone()),
        ("sampling/createMessage", Some(json!({"messages": [], "maxTokens": 5})))
    );
    let sample = json!({"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"});
    pushed.answer(sample.clone());
    let pushed = h.next().await;
    assert_eq!((pushed.method, pushed.params.clone()), ("roots/list", None));
    pushed.answer(json!({"roots": []}));
    assert_eq!(finished(task).await.unwrap(), (sample, json!({"roots": []})));
}

#[tokio::test]
async fn asks_joined_together_go_out_together() {
    let mut h = Harness::new(Revision::V2025_11_25, json!({"elicitation": {}}));
    let task = h.spawn(|flow: Flow| async move {
        let (person, colour) = tokio::join!(flow.form::<Person>("person"), flow.form::<Colour>("colour"));
        match (person?, colour?) {
            (Answer::Accepted(p), Answer::Accepted(c)) => Ok(format!("{} likes {}", p.name, c.colour)),
            _ => Ok("no".to_owned()),
        }
    });
    // Both requests are out before either is answered: sequential asks would hang here (bounded).
    let first = h.next().await;
    let second = h.next().await;
    let (person, colour) = if first.params.as_ref().unwrap()["requestedSchema"]["properties"].get("name").is_some() {
        (first, second)
    } else {
        (second, first)
    };
    colour.answer(accept(json!({"colour": "teal"})));
    person.answer(accept(json!({"name": "Ada", "age": 36})));
    assert_eq!(finished(task).await.unwrap(), "Ada likes teal");
}

#[tokio::test]
async fn the_cap_on_outstanding_asks_is_per_session() {
    let config = |engine: EngineBuilder| engine.max_outstanding_asks(1);
    let mut h = Harness::with(Revision::V2025_11_25, json!({"elicitation": {}}), config);
    let task = h.spawn(|flow: Flow| async move {
        let (person, colour) = tokio::join!(flow.form::<Person>("person"), flow.form::<Colour>("colour"));
        person?;
        colour?;
        Ok(())
    });
    h.next().await.answer(accept(json!({"name": "Ada", "age": 36})));
    let error = finished(task).await.unwrap_err();
    assert!(error.message.contains("at most 1"), "{error}");
    // Another session of the same engine has its own cap.
    let mut other = Harness::with(Revision::V2025_11_25, json!({"elicitation": {}}), config);
    let task = other.spawn(describe_person);
    other.next().await.answer(json!({"action": "decline"}));
    assert_eq!(finished(task).await.unwrap(), "declined");
}

#[tokio::test]
async fn the_cap_on_running_calls_is_per_session_and_held_through_url_waits() {
    let config = |engine: EngineBuilder| engine.max_tasks_per_session(1);
    let mut h = Harness::with(Revision::V2025_11_25, json!({"elicitation": {"form": {}, "url": {}}}), config);
    // The first call waits for its page: it still holds the session's one permit.
    let paying = h.spawn(pay);
    let pushed = h.next().await;
    let id = pushed.params.clone().unwrap()["elicitationId"].as_str().unwrap().to_owned();
    pushed.answer(json!({"action": "accept"}));
    let error = finished(h.spawn(describe_person)).await.unwrap_err();
    assert_eq!(error.code, -32603);
    assert!(error.message.contains("too many calls") && error.message.contains("at most 1"), "{error}");
    // Another session has its own cap.
    let mut other = Harness::with(Revision::V2025_11_25, json!({"elicitation": {}}), config);
    let task = other.spawn(describe_person);
    other.next().await.answer(json!({"action": "decline"}));
    assert_eq!(finished(task).await.unwrap(), "declined");
    // The page completes, the first call ends, and its permit is back.
    assert!(h.engine.url_completions().complete(&id, json!({"approved": true}), None).await.unwrap());
    finished(paying).await.unwrap();
    let task = h.spawn(describe_person);
    h.next().await.answer(json!({"action": "cancel"}));
    assert_eq!(finished(task).await.unwrap(), "cancelled");
}

#[tokio::test]
async fn a_client_that_answers_a_push_with_an_error_could_not_ask_which_is_no_decline() {
    let mut h = Harness::new(Revision::V2025_11_25, json!({"elicitation": {"form": {}}}));
    let task = h.spawn(|flow: Flow| async move {
        Ok(match flow.form::<Colour>("colour").await {
            Ok(Answer::Declined) => "declined".to_owned(),
            Ok(other) => format!("{other:?}"),
            Err(FlowError::Unsupported { required }) => format!("could not ask: {required}"),
            Err(other) => format!("failed: {other}"),
        })
    });
    let pushed = h.next().await;
    let _ = pushed.reply.send(Err(PeerError::Answered { code: -32601, message: "Method not found".to_owned() }));
    assert_eq!(finished(task).await.unwrap(), r#"could not ask: {"elicitation":{"form":{}}}"#);
    // Propagated, it is the session's missing capability, not an internal error.
    let task = h.spawn(describe_person);
    let pushed = h.next().await;
    let _ = pushed.reply.send(Err(PeerError::Answered { code: -32603, message: "no UI".to_owned() }));
    let error = finished(task).await.unwrap_err();
    assert_eq!(error.code, -32600, "{error:?}");
    assert_eq!(h.engine.session_stats(), SessionStats::default());
}

#[tokio::test]
async fn an_unanswered_ask_times_out() {
    let config = |engine: EngineBuilder| engine.session_ask_timeout(Duration::from_millis(20));
    let mut h = Harness::with(Revision::V2025_11_25, json!({"elicitation": {}}), config);
    let task = h.spawn(describe_person);
    let _unanswered = h.next().await;
    let error = finished(task).await.unwrap_err();
    assert_eq!(error.code, -32603);
    assert!(error.message.contains("did not answer"), "{error}");
    assert_eq!(h.engine.session_stats(), SessionStats::default());
}

#[tokio::test]
async fn a_client_gone_mid_ask_leaves_no_task_or_record_behind() {
    let mut h = Harness::new(Revision::V2025_11_25, json!({"elicitation": {"form": {}, "url": {}}}));
    let task = h.spawn(pay);
    let pushed = h.next().await;
    let id = pushed.params.as_ref().unwrap()["elicitationId"].as_str().unwrap().to_owned();
    assert_eq!(h.engine.session_stats(), SessionStats { tasks: 1, url_records: 1 });
    assert_eq!(h.engine.url_completions().status(&id).await.unwrap(), UrlStatus::Pending);
    // The transport drops the task when the client goes away (disconnect, cancel, session end).
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    assert_eq!(h.engine.session_stats(), SessionStats::default());
    assert_eq!(h.engine.url_completions().status(&id).await.unwrap(), UrlStatus::Unknown);
    // The page can no longer complete the dropped step.
    assert!(!h.engine.url_completions().complete(&id, json!(true), None).await.unwrap());

    // A client whose connection closes while it holds the request: the ask fails, nothing stays.
    let task = h.spawn(pay);
    drop(h.next().await);
    let error = finished(task).await.unwrap_err();
    assert!(error.message.contains("the connection to the client failed"), "{error}");
    assert_eq!(h.engine.session_stats(), SessionStats::default());
}

#[tokio::test]
async fn capabilities_are_gated_per_session() {
    // Form only: the URL ask is `Unsupported` for the handler to handle...
    let mut h = Harness::new(Revision::V2025_11_25, json!({"elicitation": {}}));
    let task = h.spawn(|flow: Flow| async move {
        Ok(match flow.url("pay", "Pay", |id| id.to_owned()).await {
            Err(FlowError::Unsupported { required }) => format!("fallback: {required}"),
            other => format!("unexpected: {other:?}"),
        })
    });
    assert_eq!(finished(task).await.unwrap(), r#"fallback: {"elicitation":{"url":{}}}"#);
    // ...or, propagated, -32600 with the required capabilities (there is no -32021 on this wire).
    let task = h.spawn(pay);
    let error = finished(task).await.unwrap_err();
    assert_eq!(error.code, -32600);
    assert_eq!(error.data, Some(json!({"requiredCapabilities": {"elicitation": {"url": {}}}})));
    assert!(h.requests.try_recv().is_err(), "nothing was pushed for an undeclared mode");

    // 2025-06-18 has no URL mode whatever the client writes; sampling needs its declaration too.
    let h = Harness::new(Revision::V2025_06_18, json!({"elicitation": {"url": {}}}));
    let error = finished(h.spawn(pay)).await.unwrap_err();
    assert_eq!(error.code, -32600);
    let error = finished(h.spawn(|flow: Flow| async move { flow.sampling("s", json!({})).await })).await.unwrap_err();
    assert_eq!(error.data, Some(json!({"requiredCapabilities": {"sampling": {}}})));

    // No elicitation at all: a form is refused.
    let h = Harness::new(Revision::V2025_11_25, json!({}));
    assert_eq!(finished(h.spawn(describe_person)).await.unwrap_err().code, -32600);
    assert_eq!(Capabilities::default(), Revision::V2025_11_25.capabilities(None));
}

#[tokio::test]
async fn once_runs_once() {
    let mut h = Harness::new(Revision::V2025_11_25, json!({"elicitation": {}}));
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let task = h.spawn(move |flow: Flow| async move {
        let ticket = flow
            .once("ticket", || async {
                counted.fetch_add(1, Ordering::SeqCst);
                Ok(7u32)
            })
            .await?;
        let answer = describe_person(flow.clone()).await?;
        let again = flow.once("ticket", || async { Ok(8u32) }).await?;
        Ok(format!("{ticket} {again} {answer}"))
    });
    h.next().await.answer(accept(json!({"name": "Ada", "age": 36})));
    assert_eq!(finished(task).await.unwrap(), "7 7 Ada is 36");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}
