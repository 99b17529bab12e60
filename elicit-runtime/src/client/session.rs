//! The 2025-era wire (2025-06-18 and 2025-11-25), for servers that have not moved to 2026-07-28.
//!
//! In a session the client declares its capabilities once, in `initialize`, and the server
//! pushes requests to it while a `tools/call` is in flight: `elicitation/create` (form, or URL mode
//! with an `elicitationId` whose completion arrives later as `notifications/elicitation/complete`),
//! `ping`, and whatever else it likes. A URL step may also come back as the call's error `-32042`
//! (URLElicitationRequiredError): the client shows each URL, then retries the call.
//!
//! The transport hands pushed messages to the driver through a bounded channel ([`channel`]): its
//! [`SessionSender`] refuses at once anything that arrives outside a call or beyond the bound, so a
//! hostile server cannot queue work or memory. [`Driver::call_in_session`](super::Driver::call_in_session)
//! answers them with the same [`Responder`](super::Responder) as the 2026-07-28 loop, so an
//! application gets both eras from one implementation.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::wire::{self, ElicitParams, InputRequest, codes};

/// `notifications/elicitation/complete`: the out-of-band step of a URL elicitation is finished.
pub const ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";
/// `ping`.
pub const PING: &str = "ping";
/// `notifications/cancelled`.
pub const CANCELLED: &str = "notifications/cancelled";
/// URLElicitationRequiredError: the call needs URL steps done first (`data.elicitations`).
pub const URL_ELICITATION_REQUIRED: i32 = -32042;
/// JSON-RPC "invalid request": a pushed request that belongs to no call.
pub const INVALID_REQUEST: i32 = -32600;
/// How many pushed messages may wait for the driver at once; more are refused.
pub const SESSION_QUEUE: usize = 16;
/// The longest `elicitationId` accepted.
pub const MAX_ELICITATION_ID_LEN: usize = 256;

/// A request a 2025-era server pushed, parsed.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionRequest {
    /// `elicitation/create`; URL mode carries its `elicitationId`.
    Elicit {
        /// The elicitation.
        params: ElicitParams,
        /// URL mode's `elicitationId` (absent in form mode).
        elicitation_id: Option<String>,
    },
    /// `ping`.
    Ping,
    /// `sampling/createMessage` with its parameters.
    Sampling(Value),
    /// `roots/list`.
    Roots,
}

/// A pushed request the client will not serve, as the JSON-RPC error it answers with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRefusal {
    /// The JSON-RPC error code.
    pub code: i32,
    /// Why, for the server's logs.
    pub message: String,
}

impl SessionRefusal {
    /// A refusal with this code and message.
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        SessionRefusal { code, message: message.into() }
    }
}

impl std::fmt::Display for SessionRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", wire::clip(&self.message), self.code)
    }
}

impl std::error::Error for SessionRefusal {}

/// Parses a pushed request. Malformed parameters are `-32602`, unknown methods `-32601`; never
/// panics, whatever the input.
///
/// ```
/// use elicit_runtime::client::session::{SessionRequest, parse_request};
///
/// let params = serde_json::json!({"mode": "url", "message": "Sign in", "url": "https://a.example/x", "elicitationId": "e1"});
/// let SessionRequest::Elicit { elicitation_id, .. } = parse_request("elicitation/create", Some(&params)).unwrap() else { panic!() };
/// assert_eq!(elicitation_id.as_deref(), Some("e1"));
/// assert_eq!(parse_request("tasks/get", None).unwrap_err().code, -32601);
/// ```
pub fn parse_request(method: &str, params: Option<&Value>) -> Result<SessionRequest, SessionRefusal> {
    let raw_params = params;
    let invalid = |message: String| SessionRefusal::new(codes::INVALID_PARAMS, message);
    match method {
        PING => Ok(SessionRequest::Ping),
        wire::ELICITATION_CREATE | wire::SAMPLING_CREATE_MESSAGE | wire::ROOTS_LIST => {
            let mut request = Map::new();
            request.insert("method".into(), Value::String(method.to_owned()));
            if let Some(params) = params {
                request.insert("params".into(), params.clone());
            }
            let parsed =
                InputRequest::from_json(&Value::Object(request)).map_err(|e| invalid(e.message().to_owned()))?;
            Ok(match parsed {
                InputRequest::Elicit(params @ ElicitParams::Form { .. }) => {
                    SessionRequest::Elicit { params, elicitation_id: None }
                }
                InputRequest::Elicit(params @ ElicitParams::Url { .. }) => {
                    // 2025-11-25 requires the id: completion notifications and -32042 name it.
                    let id = raw_params
                        .and_then(|p| p.get("elicitationId"))
                        .and_then(Value::as_str)
                        .ok_or_else(|| invalid("a URL-mode elicitation needs a string `elicitationId`".into()))?;
                    if id.is_empty() || id.len() > MAX_ELICITATION_ID_LEN {
                        return Err(invalid(format!("`elicitationId` must have 1 to {MAX_ELICITATION_ID_LEN} bytes")));
                    }
                    SessionRequest::Elicit { params, elicitation_id: Some(id.to_owned()) }
                }
                InputRequest::CreateMessage(params) => SessionRequest::Sampling(params),
                InputRequest::ListRoots => SessionRequest::Roots,
            })
        }
        other => Err(SessionRefusal::new(
            codes::METHOD_NOT_FOUND,
            format!("this client does not serve `{}`", wire::clip(other)),
        )),
    }
}

/// A notification a 2025-era server sent, as far as the client cares.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionNotice {
    /// `notifications/elicitation/complete` for this `elicitationId`.
    ElicitationComplete(String),
    /// Anything else (progress, logging, list changes, a malformed completion): nothing to do.
    Ignored,
}

/// Parses a pushed notification; never panics, whatever the input.
///
/// ```
/// use elicit_runtime::client::session::{SessionNotice, parse_notification};
///
/// let params = serde_json::json!({"elicitationId": "e1"});
/// assert_eq!(parse_notification("notifications/elicitation/complete", Some(&params)), SessionNotice::ElicitationComplete("e1".into()));
/// assert_eq!(parse_notification("notifications/progress", None), SessionNotice::Ignored);
/// ```
pub fn parse_notification(method: &str, params: Option<&Value>) -> SessionNotice {
    if method != ELICITATION_COMPLETE {
        return SessionNotice::Ignored;
    }
    match params.and_then(|p| p.get("elicitationId")).and_then(Value::as_str) {
        Some(id) if !id.is_empty() && id.len() <= MAX_ELICITATION_ID_LEN => {
            SessionNotice::ElicitationComplete(id.to_owned())
        }
        _ => SessionNotice::Ignored,
    }
}

/// One URL step listed by a `-32042` error.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RequiredUrl {
    /// Its `elicitationId`.
    pub elicitation_id: String,
    /// Why the server asks.
    pub message: String,
    /// The page to open.
    pub url: String,
}

/// Reads `data.elicitations` of a `-32042` error: URL-mode elicitations, each with an id.
///
/// ```
/// use elicit_runtime::client::session::parse_url_required;
///
/// let data = serde_json::json!({"elicitations": [{"mode": "url", "elicitationId": "e1", "url": "https://a.example/", "message": "Connect"}]});
/// assert_eq!(parse_url_required(Some(&data)).unwrap()[0].elicitation_id, "e1");
/// assert!(parse_url_required(None).is_err());
/// ```
pub fn parse_url_required(data: Option<&Value>) -> Result<Vec<RequiredUrl>, String> {
    let list = data
        .and_then(|d| d.get("elicitations"))
        .and_then(Value::as_array)
        .ok_or("a -32042 error needs `data.elicitations`, an array")?;
    if list.is_empty() {
        return Err("a -32042 error lists no elicitations".into());
    }
    if list.len() > 16 {
        return Err(format!("a -32042 error lists {} elicitations; at most 16 are shown", list.len()));
    }
    list.iter()
        .map(|item| match parse_request(wire::ELICITATION_CREATE, Some(item)) {
            Ok(SessionRequest::Elicit {
                params: ElicitParams::Url { message, url },
                elicitation_id: Some(elicitation_id),
            }) => Ok(RequiredUrl { elicitation_id, message, url }),
            Ok(_) => Err("a -32042 error may only list URL-mode elicitations".to_owned()),
            Err(refusal) => Err(refusal.message),
        })
        .collect()
}

/// A message the transport received from a 2025-era server, on its way to the driver.
#[derive(Debug)]
pub enum SessionMessage {
    /// A request; the driver's answer (a result, or a refusal) goes back through `reply`.
    Request {
        /// The method.
        method: String,
        /// The parameters.
        params: Option<Value>,
        /// Where the answer goes.
        reply: oneshot::Sender<Result<Value, SessionRefusal>>,
    },
    /// A notification.
    Notification {
        /// The method.
        method: String,
        /// The parameters.
        params: Option<Value>,
    },
}

/// The transport's end of the channel: clone it into the connection's handler.
#[derive(Debug, Clone)]
pub struct SessionSender {
    tx: mpsc::Sender<SessionMessage>,
    in_call: Arc<AtomicBool>,
}

/// The driver's end of the channel (see [`Driver::call_in_session`](super::Driver::call_in_session)).
#[derive(Debug)]
pub struct SessionReceiver {
    pub(crate) rx: mpsc::Receiver<SessionMessage>,
    pub(crate) in_call: Arc<AtomicBool>,
}

/// A bounded channel from a session's transport to the driver ([`SESSION_QUEUE`] messages).
pub fn channel() -> (SessionSender, SessionReceiver) {
    let (tx, rx) = mpsc::channel(SESSION_QUEUE);
    let in_call = Arc::new(AtomicBool::new(false));
    (SessionSender { tx, in_call: in_call.clone() }, SessionReceiver { rx, in_call })
}

impl SessionSender {
    /// Hands a pushed request to the driver and waits for its answer. `ping` is answered at once;
    /// anything else outside a call, or beyond the queue's bound, is refused at once.
    pub async fn request(&self, method: &str, params: Option<Value>) -> Result<Value, SessionRefusal> {
        if method == PING {
            return Ok(json!({}));
        }
        if !self.in_call.load(Ordering::Acquire) {
            return Err(SessionRefusal::new(
                INVALID_REQUEST,
                format!(
                    "`{}` arrived while no call is in flight; this client only answers requests that belong to a call",
                    wire::clip(method)
                ),
            ));
        }
        let (reply, answer) = oneshot::channel();
        let pushed = SessionMessage::Request { method: method.to_owned(), params, reply };
        if self.tx.try_send(pushed).is_err() {
            return Err(SessionRefusal::new(codes::INTERNAL_ERROR, "too many requests in flight; this one is refused"));
        }
        answer.await.unwrap_or_else(|_| {
            Err(SessionRefusal::new(codes::INTERNAL_ERROR, "the call this request belonged to has ended"))
        })
    }

    /// Hands a notification to the driver; dropped when no call is in flight or the queue is full.
    pub fn notify(&self, method: &str, params: Option<Value>) {
        if self.in_call.load(Ordering::Acquire)
            && matches!(parse_notification(method, params.as_ref()), SessionNotice::ElicitationComplete(_))
        {
            let _ = self.tx.try_send(SessionMessage::Notification { method: method.to_owned(), params });
        }
    }
}

/// Marks a call in flight for as long as it lives; refuses whatever was queued before it.
pub(crate) struct CallGuard<'a> {
    pub(crate) receiver: &'a mut SessionReceiver,
}

impl<'a> CallGuard<'a> {
    pub(crate) fn new(receiver: &'a mut SessionReceiver) -> Self {
        while let Ok(stale) = receiver.rx.try_recv() {
            refuse_stale(stale);
        }
        receiver.in_call.store(true, Ordering::Release);
        CallGuard { receiver }
    }
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        self.receiver.in_call.store(false, Ordering::Release);
        while let Ok(stale) = self.receiver.rx.try_recv() {
            refuse_stale(stale);
        }
    }
}

fn refuse_stale(pushed: SessionMessage) {
    if let SessionMessage::Request { reply, .. } = pushed {
        let _ =
            reply.send(Err(SessionRefusal::new(codes::INTERNAL_ERROR, "the call this request belonged to has ended")));
    }
}

/// A [`Caller`](super::Caller) in a session, which can also cancel the call it sent last
/// (`notifications/cancelled` with that request's id).
pub trait SessionCaller: super::Caller {
    /// Tells the server the last call is abandoned.
    fn cancel_call(&mut self, reason: &str) -> impl Future<Output = ()> + Send;
}
