//! What a flow knows of the request it serves beyond arguments and answers: the authenticated
//! principal, and the transport's handle for progress notifications and cancellation; and
//! [`AskingFlow`], what an executor needs of the flow it asks for. Below the flow (whose accessors
//! read the request, in `flow.rs`) and the executors (a 2025-era session's heartbeat reports
//! progress through it).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::answer::FlowError;
use super::config::EngineConfig;
use super::store::Store;

/// A boxed future returned by the transport's hooks, [`SessionPeer`](super::session::SessionPeer)
/// and [`RequestHandle`] (the traits stay object-safe).
pub type PeerFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One progress report on a request: how far it is, of how much if known, and what to show.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Progress {
    /// The progress so far.
    pub progress: f64,
    /// The total it counts towards, if known.
    pub total: Option<f64>,
    /// A message for the person waiting.
    pub message: Option<String>,
}

impl Progress {
    /// The message, or else `progress/total` (`progress` alone without a total).
    pub fn into_text(self) -> String {
        match (self.message, self.total) {
            (Some(message), _) => message,
            (None, Some(total)) => format!("{}/{total}", self.progress),
            (None, None) => format!("{}", self.progress),
        }
    }
}

/// The transport's side of a request, for progress and cancellation (the rmcp adapter provides
/// one; a transport of your own may).
pub trait RequestHandle: Send + Sync {
    /// Sends a progress notification for this request, if the client asked for progress (gave a
    /// `progressToken`); otherwise does nothing.
    ///
    /// # Errors
    ///
    /// The transport could not deliver it.
    fn progress(&self, report: Progress) -> PeerFuture<'_, Result<(), FlowError>>;

    /// Whether the client cancelled this request (or the connection is gone).
    fn is_cancelled(&self) -> bool;

    /// Resolves when the request is cancelled; never, if it is not.
    fn cancelled(&self) -> PeerFuture<'_, ()>;
}

/// The request a flow serves: set by the engine (principal) and the transport (handle).
#[derive(Clone, Default)]
pub(super) struct RequestInfo {
    pub(super) principal: Option<Arc<str>>,
    /// Whom the flow's ledger records count against (its principal, else its client).
    pub(super) owner: super::store::FlowOwner,
    pub(super) handle: Option<Arc<dyn RequestHandle>>,
    /// Whether the client negotiated app-rendered forms (draft) for this request.
    #[cfg(feature = "apps")]
    pub(super) app_forms: bool,
}

impl RequestInfo {
    /// Sends a progress notification through the transport's handle, if there is one (see
    /// [`Flow::progress`](super::Flow::progress)).
    pub(super) async fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> Result<(), FlowError> {
        match &self.handle {
            Some(handle) => handle.progress(Progress { progress, total, message: message.map(str::to_owned) }).await,
            None => Ok(()),
        }
    }
}

/// A flow as the executors see it: what they need of the flow they ask for, without naming the
/// `Flow`, which holds them (`exec.rs`). The `Flow` is the one implementation (`flow.rs`).
pub(super) trait AskingFlow: Send + Sync {
    /// Records an error that fails the whole request whatever the handler does with it, and
    /// returns it.
    fn fail(&self, error: FlowError) -> FlowError;

    /// The request the flow serves (progress, cancellation).
    fn request(&self) -> &RequestInfo;

    /// The engine's store.
    fn store(&self) -> &Arc<dyn Store>;

    /// The engine's tunables.
    fn config(&self) -> &EngineConfig;

    /// The answers the round consumed so far, each as a digest: the history a value taken now
    /// belongs to.
    fn history(&self) -> Map<String, Value>;
}
