//! The client driver on a 2025-era session (`Driver::call_in_session`): requests the server pushes
//! while a call is in flight go to the same `Responder` as the 2026-07-28 loop; URL steps stay
//! pending until their completion notification; `-32042` is consented then retried; pushes outside
//! a call, floods and unknown completion ids are bounded and refused clearly. The server here is
//! a scripted in-process one talking through the real push channel; the interop tests against the
//! official SDKs are the `era_2025` cases of the `cli` tests.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use elicit_runtime::client::session::{self, SessionCaller, SessionSender};
use elicit_runtime::client::{
    AskContext, CallError, Caller, CheckedUrl, DriveError, Driver, PendingAction, PendingKind, PendingUrl, Responder,
};
use elicit_runtime::schema::RequestedSchema;
use elicit_runtime::wire::{Capabilities, ElicitAction, ElicitResult};
use elicit_test_support::wait;
use serde_json::{Map, Value, json};

/// How long the scripted server waits for the driver to reach a point before the test fails.
const BOUND: Duration = Duration::from_secs(10);

type Script = Arc<
    dyn Fn(SessionSender, usize) -> std::pin::Pin<Box<dyn Future<Output = Result<Value, CallError>> + Send>>
        + Send
        + Sync,
>;

/// A legacy server: each call runs its script, which may push requests through the channel.
struct FakeLegacy {
    sender: SessionSender,
    script: Script,
    calls: usize,
    cancelled: Arc<Mutex<Vec<String>>>,
}

impl Caller for FakeLegacy {
    async fn call(&mut self, _method: &str, params: Map<String, Value>) -> Result<Value, CallError> {
        assert!(!params.contains_key("_meta"), "a legacy call carries no per-request capabilities");
        self.calls += 1;
        (self.script)(self.sender.clone(), self.calls).await
    }
}

impl SessionCaller for FakeLegacy {
    async fn cancel_call(&mut self, reason: &str) {
        self.cancelled.lock().unwrap().push(reason.to_owned());
    }
}

fn server<F, Fut>(sender: SessionSender, f: F) -> FakeLegacy
where
    F: Fn(SessionSender, usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, CallError>> + Send + 'static,
{
    FakeLegacy { sender, script: Arc::new(move |s, n| Box::pin(f(s, n))), calls: 0, cancelled: Arc::default() }
}

/// A user who accepts forms with fixed content and URLs with a fixed action, and records what
/// they were shown.
#[derive(Default)]
struct User {
    content: Map<String, Value>,
    url_action: Option<ElicitAction>,
    pending_action: Option<PendingAction>,
    seen: Vec<String>,
    notices: Vec<String>,
    /// Signalled each time the user is shown a pending step: the server can wait for it.
    shown_pending: Arc<tokio::sync::Notify>,
    /// Signalled each time the user is given a notice.
    noticed: Arc<tokio::sync::Notify>,
}

impl Responder for User {
    async fn form(&mut self, ctx: AskContext<'_>, message: &str, _schema: &RequestedSchema) -> ElicitResult {
        self.seen.push(format!("form {} {message}", ctx.key));
        ElicitResult::accept(self.content.clone())
    }

    async fn url(&mut self, ctx: AskContext<'_>, _message: &str, url: &CheckedUrl) -> ElicitAction {
        self.seen.push(format!("url {} {}", ctx.key, url.url));
        self.url_action.unwrap_or(ElicitAction::Accept)
    }

    async fn pending(&mut self, ctx: AskContext<'_>, pending: PendingUrl<'_>) -> PendingAction {
        self.seen.push(format!("pending {} {:?}", ctx.key, pending.kind));
        self.shown_pending.notify_one();
        match self.pending_action {
            Some(action) => action,
            None => {
                // Keep waiting, as a patient user would.
                tokio::time::sleep(Duration::from_millis(20)).await;
                PendingAction::Retry
            }
        }
    }

    fn notice(&mut self, _ctx: AskContext<'_>, text: &str) {
        self.notices.push(text.to_owned());
        self.noticed.notify_one();
    }
}

fn driver() -> Driver {
    Driver::new(Capabilities::ELICITATION, json!({"name": "t", "version": "1"}), "legacy-server")
}

fn name_form() -> Value {
    json!({"message": "Who are you?", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string", "minLength": 2}}, "required": ["name"]}})
}

fn call_params() -> Map<String, Value> {
    json!({"name": "tool", "arguments": {}}).as_object().unwrap().clone()
}

#[tokio::test]
async fn a_pushed_form_is_answered_by_the_responder_and_ping_and_undeclared_requests_get_clear_answers() {
    let (sender, mut receiver) = session::channel();
    let mut caller = server(sender, |push, _| async move {
        let pong = push.request("ping", None).await;
        let sampling = push.request("sampling/createMessage", Some(json!({"messages": [], "maxTokens": 5}))).await;
        let unknown = push.request("tasks/get", Some(json!({}))).await;
        let answer = push.request("elicitation/create", Some(name_form())).await.unwrap();
        Ok(
            json!({"pong": pong.unwrap(), "sampling": sampling.unwrap_err().code, "unknown": unknown.unwrap_err().code, "answer": answer}),
        )
    });
    let mut user = User { content: json!({"name": "Ada"}).as_object().unwrap().clone(), ..User::default() };
    let result =
        driver().call_in_session(&mut caller, &mut receiver, &mut user, "tools/call", call_params()).await.unwrap();
    assert_eq!(result["answer"], json!({"action": "accept", "content": {"name": "Ada"}}));
    assert_eq!(result["pong"], json!({}));
    assert_eq!(result["sampling"], json!(-32601));
    assert_eq!(result["unknown"], json!(-32601));
    assert!(user.seen.iter().any(|s| s.starts_with("form #") && s.ends_with("Who are you?")), "{:?}", user.seen);
    assert!(user.notices.iter().any(|n| n.contains("sampling")), "{:?}", user.notices);
}

#[tokio::test]
async fn an_invalid_answer_is_not_sent_and_the_call_is_cancelled() {
    let (sender, mut receiver) = session::channel();
    let mut caller = server(sender, |push, _| async move {
        let answer = push.request("elicitation/create", Some(name_form())).await;
        // Whatever comes back, never the invalid content.
        assert!(answer.is_err(), "{answer:?}");
        std::future::pending().await
    });
    let cancelled = caller.cancelled.clone();
    let mut user = User { content: json!({"name": "A"}).as_object().unwrap().clone(), ..User::default() };
    let error =
        driver().call_in_session(&mut caller, &mut receiver, &mut user, "tools/call", call_params()).await.unwrap_err();
    assert!(matches!(error, DriveError::InvalidAnswer { .. }), "{error:?}");
    assert_eq!(cancelled.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_url_step_is_pending_until_its_completion_notification_then_the_call_returns() {
    let (sender, mut receiver) = session::channel();
    let user = User::default();
    let (shown_pending, noticed) = (user.shown_pending.clone(), user.noticed.clone());
    let mut caller = server(sender, move |push, _| {
        let (shown_pending, noticed) = (shown_pending.clone(), noticed.clone());
        async move {
            let params = json!({"mode": "url", "message": "Connect", "url": "https://auth.example/connect", "elicitationId": "e-42"});
            let answer = push.request("elicitation/create", Some(params)).await.unwrap();
            // A completion for someone else's step first: ignored, with a notice.
            push.notify("notifications/elicitation/complete", Some(json!({"elicitationId": "nobody"})));
            wait::finished(BOUND, "the notice of the unknown completion", noticed.notified()).await;
            // The step stays pending until its own completion.
            wait::finished(BOUND, "the step shown as pending", shown_pending.notified()).await;
            push.notify("notifications/elicitation/complete", Some(json!({"elicitationId": "e-42"})));
            Ok(json!({"answer": answer}))
        }
    });
    let mut user = user;
    let result =
        driver().call_in_session(&mut caller, &mut receiver, &mut user, "tools/call", call_params()).await.unwrap();
    assert_eq!(result["answer"], json!({"action": "accept"}));
    assert!(user.seen.contains(&"url e-42 https://auth.example/connect".to_owned()), "{:?}", user.seen);
    assert!(user.seen.contains(&"pending e-42 InCall".to_owned()), "{:?}", user.seen);
    assert!(user.notices.iter().any(|n| n.contains("not waiting for")), "{:?}", user.notices);
}

#[tokio::test]
async fn cancelling_a_pending_url_step_cancels_the_call() {
    let (sender, mut receiver) = session::channel();
    let mut caller = server(sender, |push, _| async move {
        let params = json!({"mode": "url", "message": "Pay", "url": "https://pay.example/", "elicitationId": "p1"});
        push.request("elicitation/create", Some(params)).await.unwrap();
        // Never completes, never returns.
        std::future::pending().await
    });
    let cancelled = caller.cancelled.clone();
    let mut user = User { pending_action: Some(PendingAction::Cancel), ..User::default() };
    let error =
        driver().call_in_session(&mut caller, &mut receiver, &mut user, "tools/call", call_params()).await.unwrap_err();
    assert_eq!(error, DriveError::Cancelled);
    assert_eq!(cancelled.lock().unwrap().as_slice(), ["cancelled"]);
}

#[tokio::test]
async fn url_required_error_is_consented_then_retried_once_every_step_completed() {
    let (sender, mut receiver) = session::channel();
    let mut caller = server(sender, |push, n| async move {
        if n == 1 {
            let notify = push.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                notify.notify("notifications/elicitation/complete", Some(json!({"elicitationId": "a"})));
                notify.notify("notifications/elicitation/complete", Some(json!({"elicitationId": "b"})));
            });
            let data = json!({"elicitations": [
                {"mode": "url", "elicitationId": "a", "url": "https://a.example/", "message": "A"},
                {"mode": "url", "elicitationId": "b", "url": "https://b.example/", "message": "B"},
            ]});
            return Err(CallError::Rpc { code: -32042, message: "URL elicitation required".into(), data: Some(data) });
        }
        Ok(json!({"content": [{"type": "text", "text": format!("call {n}")}]}))
    });
    let mut user = User { pending_action: None, ..User::default() };
    let result =
        driver().call_in_session(&mut caller, &mut receiver, &mut user, "tools/call", call_params()).await.unwrap();
    assert_eq!(result["content"][0]["text"], "call 2");
    assert!(
        user.seen.contains(&"url a https://a.example/".to_owned())
            && user.seen.contains(&"url b https://b.example/".to_owned())
    );
    assert_eq!(caller.calls, 2);
}

#[tokio::test]
async fn declining_a_required_url_ends_the_call_without_retrying() {
    let (sender, mut receiver) = session::channel();
    let mut caller = server(sender, |_, _| async move {
        let data = json!({"elicitations": [{"mode": "url", "elicitationId": "a", "url": "https://a.example/", "message": "A"}]});
        Err(CallError::Rpc { code: -32042, message: "URL elicitation required".into(), data: Some(data) })
    });
    let mut user = User { url_action: Some(ElicitAction::Decline), ..User::default() };
    let error =
        driver().call_in_session(&mut caller, &mut receiver, &mut user, "tools/call", call_params()).await.unwrap_err();
    assert_eq!(error, DriveError::Declined);
    assert_eq!(caller.calls, 1);
}

#[tokio::test]
async fn the_user_retry_after_url_required_calls_again() {
    let (sender, mut receiver) = session::channel();
    let mut caller = server(sender, |_, n| async move {
        if n == 1 {
            let data = json!({"elicitations": [{"mode": "url", "elicitationId": "a", "url": "https://a.example/", "message": "A"}]});
            return Err(CallError::Rpc { code: -32042, message: "needed".into(), data: Some(data) });
        }
        Ok(json!({"done": n}))
    });
    let mut user = User { pending_action: Some(PendingAction::Retry), ..User::default() };
    let result =
        driver().call_in_session(&mut caller, &mut receiver, &mut user, "tools/call", call_params()).await.unwrap();
    assert_eq!(result["done"], 2);
    assert!(user.seen.contains(&format!("pending a {:?}", PendingKind::Required)));
}

#[tokio::test]
async fn requests_outside_a_call_are_refused_at_once() {
    let (sender, mut receiver) = session::channel();
    let outside = sender.request("elicitation/create", Some(name_form())).await.unwrap_err();
    assert_eq!(outside.code, -32600, "{outside:?}");
    assert!(outside.message.contains("no call"), "{outside:?}");
    // Ping is always answered.
    assert_eq!(sender.request("ping", None).await.unwrap(), json!({}));
    // After a call ended, the same holds again.
    let mut caller = server(sender.clone(), |_, _| async move { Ok(json!({})) });
    driver()
        .call_in_session(&mut caller, &mut receiver, &mut User::default(), "tools/call", call_params())
        .await
        .unwrap();
    assert_eq!(sender.request("elicitation/create", Some(name_form())).await.unwrap_err().code, -32600);
}

#[tokio::test]
async fn a_flood_of_pushed_requests_is_bounded_and_ends_the_call() {
    let (sender, mut receiver) = session::channel();
    let mut caller = server(sender, |push, _| async move {
        let mut refused = 0;
        for _ in 0..1000 {
            if push.request("elicitation/create", Some(name_form())).await.is_err() {
                refused += 1;
            }
        }
        Ok(json!({"refused": refused}))
    });
    let cancelled = caller.cancelled.clone();
    let mut user = User { content: json!({"name": "Ada"}).as_object().unwrap().clone(), ..User::default() };
    let error = driver()
        .max_input_requests(8)
        .call_in_session(&mut caller, &mut receiver, &mut user, "tools/call", call_params())
        .await
        .unwrap_err();
    assert!(matches!(&error, DriveError::Protocol(m) if m.message().contains("more than 8")), "{error:?}");
    assert_eq!(user.seen.len(), 8);
    assert_eq!(cancelled.lock().unwrap().len(), 1);
}

#[test]
fn malformed_pushes_are_refused_with_the_right_codes() {
    use session::{SessionNotice, parse_notification, parse_request, parse_url_required};
    let no_id = json!({"mode": "url", "message": "m", "url": "https://a.example/"});
    assert_eq!(parse_request("elicitation/create", Some(&no_id)).unwrap_err().code, -32602);
    assert_eq!(parse_request("elicitation/create", None).unwrap_err().code, -32602);
    assert_eq!(parse_request("elicitation/create", Some(&json!({"message": 3}))).unwrap_err().code, -32602);
    assert_eq!(parse_request("resources/list", None).unwrap_err().code, -32601);
    assert_eq!(
        parse_notification("notifications/elicitation/complete", Some(&json!({"elicitationId": 7}))),
        SessionNotice::Ignored
    );
    let form_only = json!({"elicitations": [name_form()]});
    assert!(parse_url_required(Some(&form_only)).is_err());
    let legacy_enum = json!({"message": "m", "requestedSchema": {"type": "object", "properties": {
        "c": {"type": "string", "enum": ["a", "b"], "enumNames": ["Ay", "Bee"]}}}});
    assert!(parse_request("elicitation/create", Some(&legacy_enum)).is_ok());
}
