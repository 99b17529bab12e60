//! What a handler sees of its request beyond arguments and answers: the authenticated principal,
//! progress notifications, and cancellation.

use std::sync::Arc;

use super::flow::{Flow, FlowError};
use super::session::PeerFuture;
use super::store::FlowOwner;

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
    pub(super) owner: FlowOwner,
    pub(super) handle: Option<Arc<dyn RequestHandle>>,
    /// Whether the client negotiated app-rendered forms (draft) for this request.
    #[cfg(feature = "apps")]
    pub(super) app_forms: bool,
}

impl Flow {
    /// The authenticated principal of the request (as the transport's principal hook found it),
    /// to which the `requestState` and every URL-mode step of this flow are bound.
    pub fn principal(&self) -> Option<&str> {
        self.request.principal.as_deref()
    }

    /// Sends a progress notification (`progress` so far, of `total` if known) when the client
    /// asked for progress on this request; otherwise, or without a transport handle, does
    /// nothing.
    ///
    /// # Errors
    ///
    /// The transport failed to send it.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) -> Result<(), FlowError> {
        match &self.request.handle {
            Some(handle) => handle.progress(Progress { progress, total, message: message.map(str::to_owned) }).await,
            None => Ok(()),
        }
    }

    /// Whether the client cancelled this request (`false` without a transport handle).
    pub fn is_cancelled(&self) -> bool {
        self.request.handle.as_ref().is_some_and(|handle| handle.is_cancelled())
    }

    /// Resolves when the client cancels this request: `select!` on it around long work.
    /// Without a transport handle it never resolves.
    pub async fn cancelled(&self) {
        match &self.request.handle {
            Some(handle) => handle.cancelled().await,
            None => std::future::pending().await,
        }
    }

    /// This flow, bound to the request's principal, its ledger records owned by the request's
    /// [`FlowOwner`] (the engine sets both from the request).
    pub(super) fn with_caller(mut self, request: &super::Request<'_>) -> Self {
        self.request.principal = request.principal.map(Arc::from);
        self.request.owner = FlowOwner::of(request.principal, request.client);
        self
    }

    /// This flow, its client having negotiated app-rendered forms or not.
    #[cfg(feature = "apps")]
    pub(super) fn with_app_forms(mut self, negotiated: bool) -> Self {
        self.request.app_forms = negotiated;
        self
    }

    /// The `_meta` naming the App that renders a form of `schema`: only for a client that
    /// negotiated app-rendered forms, and only for a schema the engine offers as an App.
    #[cfg(feature = "apps")]
    pub(super) fn app_hint(
        &self,
        schema: &crate::schema::RequestedSchema,
    ) -> Option<serde_json::Map<String, serde_json::Value>> {
        if !self.request.app_forms {
            return None;
        }
        self.shared.app_forms.hint_for(schema)
    }

    /// This flow, with the transport's handle on its request (progress, cancellation).
    pub fn with_request_handle(mut self, handle: Arc<dyn RequestHandle>) -> Self {
        self.request.handle = Some(handle);
        self
    }
}
