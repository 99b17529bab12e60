//! What an operator sees, with the `metrics` feature: a `tracing` span per round (a short hash of
//! the flow id, the tool, the era, the round's number, its outcome) on every wire, and through the
//! `metrics` facade asks by mode, answers by action and by client, the time from ask to answer,
//! declines faster than a person, rounds per flow, form pages opened and submitted, and the
//! latency of every store operation. The metric names and labels are listed in `docs/server.md`
//! ("What an operator sees").
//!
//! Every hook elsewhere in the engine is one call into this module, whichever way the feature is
//! set: with it, `on` counts; without it, `off` has the same items, empty, so nothing of `metrics`
//! (nor a span) is compiled in.

#[cfg(feature = "metrics")]
mod client;
#[cfg(not(feature = "metrics"))]
mod off;
#[cfg(feature = "metrics")]
mod on;
#[cfg(feature = "metrics")]
mod timed;

#[cfg(feature = "metrics")]
pub(super) use client::ClientName;
#[cfg(not(feature = "metrics"))]
pub(super) use off::*;
#[cfg(feature = "metrics")]
pub(super) use on::*;
#[cfg(feature = "metrics")]
pub(super) use timed::{timed_store, timed_tasks};

use serde_json::{Map, Value};

use super::payload::Payload;

/// A round's flow as the hooks read it. The engine's `Flow` implements it (`flow.rs`): the
/// executors below the flow call these hooks too, so this module does not name the flow.
#[cfg_attr(not(feature = "metrics"), allow(dead_code, reason = "read only by the metrics hooks"))]
pub(super) trait ObservedFlow: Send + Sync + 'static {
    /// The flow's id, minted now if it has none yet.
    fn id(&self) -> String;

    /// Calls `read` with the flow's state and this round's answers (`inputResponses`), under the
    /// flow's lock.
    fn read(&self, read: &mut dyn FnMut(&Payload, &Map<String, Value>));
}

/// A decline that comes back sooner than this after its ask was not a person's: it is counted
/// apart (`elicit_fast_declines_total`), which is how a host that declines on its own shows up.
///
/// Half a second: a person reads a form's message before pressing a button. On the 2026-07-28
/// wire the time runs from the round that asked to the round that carries the answer, on the
/// engine's [`Clock`](super::Clock); on a 2025-era session, from the push to its answer.
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub const FAST_DECLINE: std::time::Duration = std::time::Duration::from_millis(500);
