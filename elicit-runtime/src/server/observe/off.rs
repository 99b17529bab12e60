//! The hooks without the `metrics` feature: the same items as `on`, empty.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::ObservedFlow;
use crate::server::request::Request;
use crate::server::store::{Store, TaskRecords};

/// Nothing is kept of the client without the feature (a field, not a unit struct, so that the
/// session's `ClientName::default()` reads the same in both builds).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(in crate::server) struct ClientName(());

impl ClientName {
    pub(in crate::server) fn new(_name: &str, _version: &str) -> Self {
        ClientName(())
    }
}

/// A round, unobserved.
pub(in crate::server) struct Round;

impl Round {
    pub(in crate::server) fn mrtr(_request: &Request<'_>) -> Self {
        Round
    }

    pub(in crate::server) fn live(
        _request: &Request<'_>,
        _era: &'static str,
        _client: &ClientName,
        _flow: &impl ObservedFlow,
    ) -> Self {
        Round
    }

    pub(in crate::server) fn opened(&self, _flow: &(impl ObservedFlow + Clone), _finished: bool, _now: SystemTime) {}

    /// The round itself: an `async fn` awaiting it would hold it twice (as its argument and as
    /// what it awaits), which for a whole round is kilobytes per request.
    pub(in crate::server) fn watch<F: Future>(&self, round: F) -> F {
        round
    }

    pub(in crate::server) fn instrument<F: Future>(&self, running: F) -> F {
        running
    }

    pub(in crate::server) fn ended(&self, _flow: &impl ObservedFlow, _ok: bool) {}
}

pub(in crate::server) fn asked(_era: &'static str, _mode: &'static str, _client: &ClientName) {}

pub(in crate::server) fn answered(
    _era: &'static str,
    _mode: &'static str,
    _action: &str,
    _client: &ClientName,
    _elapsed: Option<Duration>,
) {
}

#[cfg_attr(not(feature = "pages"), allow(dead_code, reason = "the pages' hook, without them"))]
pub(in crate::server) fn page_opened(_page: &'static str) {}

/// A page's decision, uncounted.
#[cfg_attr(not(feature = "pages"), allow(dead_code, reason = "the pages' hook, without them"))]
pub(in crate::server) struct Submitted;

#[cfg_attr(not(feature = "pages"), allow(dead_code, reason = "the pages' hook, without them"))]
impl Submitted {
    pub(in crate::server) fn of(_outcome: &Value) -> Self {
        Submitted
    }

    pub(in crate::server) fn count(self) {}
}

pub(in crate::server) fn timed_store(store: Arc<dyn Store>) -> Arc<dyn Store> {
    store
}

pub(in crate::server) fn timed_tasks(tasks: Arc<dyn TaskRecords>) -> Arc<dyn TaskRecords> {
    tasks
}
