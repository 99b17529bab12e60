//! The peer a handler talks to: a 2025-era client's pushed requests and notifications, and a
//! request's progress and cancellation, over rmcp.

use ::rmcp::RoleServer;
use ::rmcp::model::{
    CancelledNotification, CancelledNotificationParam, ClientResult, CustomNotification, CustomRequest,
    ProgressNotificationParam, ProgressToken, RequestId, ServerNotification, ServerRequest,
};
use ::rmcp::service::{Peer, PeerRequestOptions, RequestContext, RequestHandle as ServerRequestHandle, ServiceError};
use futures_util::FutureExt as _;
use serde_json::Value;

use crate::server::{FlowError, Progress, RequestHandle};

use crate::server::session::{PeerError, PeerFuture, SessionPeer};

/// A 2025-era client, reached through rmcp. Sent from within the handler of the client's call,
/// so rmcp routes each request onto that call's stream.
pub(super) struct RmcpPeer(pub(super) Peer<RoleServer>);

impl SessionPeer for RmcpPeer {
    fn request(&self, method: &'static str, params: Option<Value>) -> PeerFuture<'_, Result<Value, PeerError>> {
        // A custom request carries exactly the revision's params (no `mode` on 2025-06-18);
        // rmcp's typed elicitation always writes one.
        let request = ServerRequest::CustomRequest(CustomRequest::new(method, params));
        // Sending is boxed on its own and the wait is one combinator (`answer`), so that what a
        // 2025-era call holds while its client answers, often for minutes, is the wait alone
        // (this future is 400 bytes): written inline, the request, the sending future, the
        // handle and rmcp's `await_response` made it 3.2 KiB.
        let sending = Box::pin(self.0.send_cancellable_request(request, PeerRequestOptions::no_options()));
        Box::pin(async move {
            let answered = match sending.await {
                Ok(handle) => answer(handle).await,
                Err(error) => Err(error),
            };
            match answered {
                Ok(result) => serde_json::to_value(result).map_err(|_| PeerError::Unreadable),
                Err(ServiceError::McpError(error)) => {
                    Err(PeerError::Answered { code: error.code.0, message: error.message.into_owned() })
                }
                // Transport detail is for the server's log; the handler's error reaches the client.
                Err(error) => {
                    tracing::warn!(target: "elicit_runtime", %error, method, "a request to a 2025-era client failed in transport");
                    Err(PeerError::Connection)
                }
            }
        })
    }

    fn notify(&self, method: &'static str, params: Value) -> PeerFuture<'_, Result<(), PeerError>> {
        let notification = ServerNotification::CustomNotification(CustomNotification::new(method, Some(params)));
        Box::pin(async move {
            self.0.send_notification(notification).await.map_err(|error| {
                tracing::warn!(target: "elicit_runtime", %error, method, "a notification to a 2025-era client failed in transport");
                PeerError::Connection
            })
        })
    }
}

/// The client's answer to a request sent without options. Dropped before the client answers (the
/// ask timed out, the call was cancelled or dropped), it tells the client to stop asking its user.
///
/// For such a request (no timeout, no progress-reset watcher, no subscription) rmcp's
/// `RequestHandle::await_response` is its receiver's answer, a closed channel read as
/// `TransportClosed`, and clean-ups that find nothing to remove (rmcp 3.11). Its future is laid
/// out for the timeout paths as well, 2,280 bytes held for as long as the client takes to answer;
/// the receiver is a pointer. A combinator rather than an async block, which would hold what it
/// awaits twice.
fn answer(handle: ServerRequestHandle<RoleServer>) -> impl Future<Output = Result<ClientResult, ServiceError>> + Send {
    debug_assert!(handle.options.timeout.is_none() && handle.options.max_total_timeout.is_none());
    let guard = CancelOnDrop { peer: Some(handle.peer.clone()), id: handle.id.clone() };
    handle.rx.map(move |answered| {
        guard.disarm();
        answered.unwrap_or(Err(ServiceError::TransportClosed))
    })
}

/// Sends `notifications/cancelled` for a pushed request when dropped armed: the server stopped
/// waiting for the answer.
struct CancelOnDrop {
    peer: Option<Peer<RoleServer>>,
    id: RequestId,
}

impl CancelOnDrop {
    fn disarm(mut self) {
        self.peer = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(peer) = self.peer.take() else { return };
        let params = CancelledNotificationParam::new(
            Some(self.id.clone()),
            Some("the server stopped waiting for this answer".to_owned()),
        );
        let notification = ServerNotification::CancelledNotification(CancelledNotification::new(params));
        // Dropping runs outside any task that could await: the notification goes on its own.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(error) = peer.send_notification(notification).await {
                    tracing::debug!(target: "elicit_runtime", %error, "notifications/cancelled could not be sent");
                }
            });
        }
    }
}

/// An rmcp request's progress and cancellation, for [`Flow::progress`] and [`Flow::cancelled`]:
/// what the flow needs of the request's context, taken out of it (a clone of the whole context
/// would copy its `_meta` and its HTTP head on every round).
pub(super) struct RmcpRequest {
    /// The `progressToken` of the request's `_meta`, if the client asked for progress.
    progress_token: Option<ProgressToken>,
    /// The request's peer and cancellation token, in a context of their own (no `_meta`, no
    /// extensions).
    slim: RequestContext<RoleServer>,
}

impl RmcpRequest {
    /// The progress and cancellation of the request of `ctx`.
    pub(super) fn of(ctx: &RequestContext<RoleServer>) -> Self {
        let mut slim = RequestContext::new(ctx.id.clone(), ctx.peer.clone());
        slim.ct = ctx.ct.clone();
        RmcpRequest { progress_token: ctx.meta.get_progress_token(), slim }
    }

    /// Ready once the request is cancelled: [`RequestHandle::cancelled`] unboxed, for a wait as
    /// long as the call's.
    pub(super) fn cancelled_call(&self) -> impl Future<Output = ()> + Send + '_ {
        self.slim.ct.cancelled()
    }
}

impl RequestHandle for RmcpRequest {
    fn progress(&self, report: Progress) -> PeerFuture<'_, Result<(), FlowError>> {
        Box::pin(async move {
            // Only a client that asked for progress (a `progressToken` in `_meta`) is told.
            let Some(token) = self.progress_token.clone() else { return Ok(()) };
            let mut params = ProgressNotificationParam::new(token, report.progress);
            params.total = report.total;
            params.message = report.message;
            self.slim.peer.notify_progress(params).await.map_err(|error| {
                tracing::warn!(target: "elicit_runtime", %error, "a progress notification failed in transport");
                FlowError::Failed("the connection to the client failed".to_owned())
            })
        })
    }

    fn is_cancelled(&self) -> bool {
        self.slim.ct.is_cancelled()
    }

    fn cancelled(&self) -> PeerFuture<'_, ()> {
        Box::pin(self.slim.ct.cancelled())
    }
}
