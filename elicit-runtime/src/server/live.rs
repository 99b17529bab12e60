//! The live executor: the same handlers on a 2025-era session.
//!
//! A client that opens with `initialize` (2025-06-18 or 2025-11-25) expects the server to push
//! `elicitation/create`, `sampling/createMessage` and `roots/list` requests while its call is open.
//! There is nothing to replay on that wire: the engine runs the handler once, as one task, and
//! each ask of its [`Flow`](super::Flow) becomes a request sent through a [`LivePeer`] and awaited.
//! Everything else — validation by the same parser, invalid answers asked again, URL mode's
//! out-of-band completion — is the code path the replay model uses.
//!
//! Bounds: a [`LiveSession`] caps the asks outstanding on one connection, each ask has a timeout,
//! and the wait for a URL-mode page is bounded ([`LiveConfig`]). Dropping the task (the client
//! went away, cancelled the call, or ended the session) releases its URL-mode records;
//! [`LiveStats`] counts tasks and records alive so a deployment (and the tests) can see nothing leaks.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::wire::{Capabilities, LegacyVersion};

/// A boxed future returned by [`LivePeer`] methods (the trait stays object-safe).
pub type LiveFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The client end of a 2025-era connection, as the engine needs it.
///
/// The rmcp adapter implements it over `Peer<RoleServer>`, inside the client request the ask
/// serves (so on Streamable HTTP the request rides that request's SSE stream).
pub trait LivePeer: Send + Sync {
    /// Sends a server-to-client request and returns the client's result as sent, or why there is
    /// none (the connection closed, the client answered with an error).
    fn request(&self, method: &'static str, params: Option<Value>) -> LiveFuture<'_, Result<Value, String>>;

    /// Sends a notification.
    fn notify(&self, method: &'static str, params: Value) -> LiveFuture<'_, Result<(), String>>;
}

/// Tunables of the live executor; every field has a safe default.
#[derive(Debug, Clone)]
pub struct LiveConfig {
    /// Asks outstanding at once on one session (more fail with a clear error). Default 16.
    pub max_outstanding_asks: usize,
    /// How long one ask waits for the client's answer. Default 600 s (a person is filling a form).
    pub ask_timeout: Duration,
    /// How long the handler waits, after URL-mode consent, for the page to record completion.
    /// Default 600 s.
    pub url_wait: Duration,
}

impl Default for LiveConfig {
    fn default() -> Self {
        LiveConfig {
            max_outstanding_asks: 16,
            ask_timeout: Duration::from_secs(600),
            url_wait: Duration::from_secs(600),
        }
    }
}

/// One 2025-era connection: its negotiated revision, what the client declared in `initialize`,
/// the peer to send through, and the cap on its outstanding asks. Cheap to clone; clones share the cap.
#[derive(Clone)]
pub struct LiveSession {
    pub(super) version: LegacyVersion,
    pub(super) capabilities: Capabilities,
    pub(super) peer: Arc<dyn LivePeer>,
    pub(super) limit: AskLimit,
}

impl LiveSession {
    /// A session on `version` whose client declared `capabilities`, asking through `peer`, its
    /// outstanding asks counted against `limit` (share one limit across a connection's calls).
    pub fn new(version: LegacyVersion, capabilities: Capabilities, peer: Arc<dyn LivePeer>, limit: AskLimit) -> Self {
        LiveSession { version, capabilities, peer, limit }
    }

    /// The negotiated revision.
    pub fn version(&self) -> LegacyVersion {
        self.version
    }
}

/// The cap on one connection's outstanding asks. Cheap to clone; clones share the cap.
#[derive(Clone, Debug)]
pub struct AskLimit(Arc<Semaphore>);

impl AskLimit {
    /// At most `max` asks outstanding at once.
    pub fn new(max: usize) -> Self {
        AskLimit(Arc::new(Semaphore::new(max)))
    }

    pub(super) fn try_take(&self) -> Option<OwnedSemaphorePermit> {
        self.0.clone().try_acquire_owned().ok()
    }
}

/// How many live tasks and URL-mode records an engine holds right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LiveStats {
    /// Handlers running as live tasks.
    pub tasks: usize,
    /// URL-mode records minted by live tasks and not yet consumed or released.
    pub url_records: usize,
}

#[derive(Default)]
pub(super) struct LiveCounters {
    tasks: AtomicUsize,
    url_records: AtomicUsize,
}

impl LiveCounters {
    pub(super) fn snapshot(&self) -> LiveStats {
        LiveStats { tasks: self.tasks.load(Ordering::SeqCst), url_records: self.url_records.load(Ordering::SeqCst) }
    }

    pub(super) fn task(self: &Arc<Self>) -> TaskGuard {
        self.tasks.fetch_add(1, Ordering::SeqCst);
        TaskGuard(self.clone())
    }

    pub(super) fn record_added(&self) {
        self.url_records.fetch_add(1, Ordering::SeqCst);
    }

    pub(super) fn record_gone(&self) {
        self.url_records.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Counts one live task for as long as it exists.
pub(super) struct TaskGuard(Arc<LiveCounters>);

impl Drop for TaskGuard {
    fn drop(&mut self) {
        self.0.tasks.fetch_sub(1, Ordering::SeqCst);
    }
}
