//! A [`Caller`] on an rmcp client: the driver's rounds sent through an
//! rmcp `Peer<RoleClient>`, each with its own `_meta`.
//!
//! rmcp overwrites the `_meta` of a request's params with the connection's own metadata, so the
//! per-request `_meta` the driver builds (protocol version, client capabilities, client info)
//! would be lost. [`RmcpCaller`] moves it into the request options, where rmcp keeps it.
//!
//! ```no_run
//! use elicit_runtime::rmcp::client::RmcpCaller;
//! use elicit_runtime::client::{Driver, Responder};
//! use elicit_runtime::wire::Capabilities;
//! use rmcp::RoleClient;
//! use rmcp::service::Peer;
//!
//! async fn book(peer: Peer<RoleClient>, responder: &mut impl Responder) -> Result<serde_json::Value, Box<dyn std::error::Error>> {
//!     let mut caller = RmcpCaller::new(peer);
//!     let driver = Driver::new(Capabilities::ELICITATION, serde_json::json!({"name": "app", "version": "1"}), "travel-server");
//!     Ok(driver.call(&mut caller, responder, "tools/call", serde_json::json!({"name": "book_trip"}).as_object().cloned().unwrap_or_default()).await?)
//! }
//! ```

use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelTaskParams, CancelTaskRequest, CancelledNotification,
    CancelledNotificationParam, ClientNotification, ClientRequest, GetPromptRequest, GetPromptRequestParams,
    GetTaskParams, GetTaskRequest, MetaObject, ReadResourceRequest, ReadResourceRequestParams, RequestId,
    RequestMetaObject, UpdateTaskParams, UpdateTaskRequest,
};
use rmcp::service::{Peer, PeerRequestOptions, ServiceError};
use serde_json::{Map, Value};

use crate::client::session::SessionCaller;
use crate::client::{CallError, Caller};
use crate::wire;

/// Sends the driver's requests (`tools/call`, `prompts/get`, `resources/read`) through an rmcp
/// client peer, with the per-request `_meta` in place.
#[derive(Debug, Clone)]
pub struct RmcpCaller {
    peer: Peer<RoleClient>,
    timeout: Option<Duration>,
    last_request: Option<RequestId>,
    challenge: Option<String>,
}

impl RmcpCaller {
    /// A caller on `peer` (`running_service.peer().clone()`), with no time bound of its own.
    pub fn new(peer: Peer<RoleClient>) -> RmcpCaller {
        RmcpCaller { peer, timeout: None, last_request: None, challenge: None }
    }

    /// Fails a request the server leaves unanswered for `timeout`.
    pub fn timeout(mut self, timeout: Duration) -> RmcpCaller {
        self.timeout = Some(timeout);
        self
    }

    /// The peer requests go through.
    pub fn peer(&self) -> &Peer<RoleClient> {
        &self.peer
    }

    /// The id of the last request sent, if any.
    pub fn last_request(&self) -> Option<&RequestId> {
        self.last_request.as_ref()
    }

    /// Takes the `WWW-Authenticate` challenge of the last request, when it failed on a 401 or 403
    /// (the server wants authorization, or more scope).
    pub fn take_challenge(&mut self) -> Option<String> {
        self.challenge.take()
    }

    fn failed(&mut self, error: &ServiceError) -> CallError {
        self.challenge = error.auth_challenge().map(str::to_owned);
        to_call_error(error)
    }
}

fn json_params<T: serde::de::DeserializeOwned>(params: Map<String, Value>) -> Result<T, CallError> {
    serde_json::from_value(Value::Object(params))
        .map_err(|e| CallError::Transport(format!("cannot encode the request: {e}")))
}

impl Caller for RmcpCaller {
    async fn call(&mut self, method: &str, mut params: Map<String, Value>) -> Result<Value, CallError> {
        // The per-request `_meta` goes through the request options: rmcp would otherwise
        // overwrite it with connection-level metadata.
        let meta = match params.remove(wire::META) {
            Some(Value::Object(meta)) => meta,
            _ => Map::new(),
        };
        let request = match method {
            wire::TOOLS_CALL => {
                ClientRequest::CallToolRequest(CallToolRequest::new(json_params::<CallToolRequestParams>(params)?))
            }
            wire::PROMPTS_GET => {
                ClientRequest::GetPromptRequest(GetPromptRequest::new(json_params::<GetPromptRequestParams>(params)?))
            }
            wire::RESOURCES_READ => ClientRequest::ReadResourceRequest(ReadResourceRequest::new(json_params::<
                ReadResourceRequestParams,
            >(params)?)),
            // The Tasks extension's requests, for a driver that follows tasks.
            wire::tasks::TASKS_GET => {
                ClientRequest::GetTaskRequest(GetTaskRequest::new(json_params::<GetTaskParams>(params)?))
            }
            wire::tasks::TASKS_UPDATE => {
                ClientRequest::UpdateTaskRequest(UpdateTaskRequest::new(json_params::<UpdateTaskParams>(params)?))
            }
            wire::tasks::TASKS_CANCEL => {
                ClientRequest::CancelTaskRequest(CancelTaskRequest::new(json_params::<CancelTaskParams>(params)?))
            }
            other => return Err(CallError::Transport(format!("`{other}` cannot carry input responses"))),
        };
        let options = match self.timeout {
            Some(timeout) => PeerRequestOptions::with_timeout(timeout),
            None => PeerRequestOptions::no_options(),
        };
        let options = options.with_meta(RequestMetaObject(MetaObject(meta)));
        self.challenge = None;
        let handle = match self.peer.send_request_with_option(request, options).await {
            Ok(handle) => handle,
            Err(error) => return Err(self.failed(&error)),
        };
        self.last_request = Some(handle.id.clone());
        let result = match handle.await_response().await {
            Ok(result) => result,
            Err(error) => return Err(self.failed(&error)),
        };
        serde_json::to_value(&result).map_err(|e| CallError::Transport(format!("cannot read the result: {e}")))
    }
}

impl SessionCaller for RmcpCaller {
    async fn cancel_call(&mut self, reason: &str) {
        let Some(id) = self.last_request.take() else { return };
        let notification =
            CancelledNotification::new(CancelledNotificationParam::new(Some(id), Some(reason.to_owned())));
        let _ = self.peer.send_notification(ClientNotification::CancelledNotification(notification)).await;
    }
}

/// What went wrong on the wire, without rmcp's wrapper naming the transport's Rust type
/// ("Transport send error: Transport [rmcp::transport::worker::WorkerTransport<...>] error: ...").
pub fn transport_message(error: &ServiceError) -> String {
    match error {
        ServiceError::TransportSend(e) => e.error.to_string(),
        other => other.to_string(),
    }
}

fn to_call_error(error: &ServiceError) -> CallError {
    match error {
        ServiceError::McpError(e) => {
            CallError::Rpc { code: e.code.0, message: e.message.to_string(), data: e.data.clone() }
        }
        ServiceError::Timeout { timeout } => {
            CallError::Transport(format!("the server did not answer within {} s", timeout.as_secs()))
        }
        other => CallError::Transport(transport_message(other)),
    }
}
