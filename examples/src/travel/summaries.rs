//! What the payment page says about each payment: the amount and the trip being paid.
//!
//! The payment link carries nothing but the engine's id (the URL is minted by the engine, and
//! clients show it in full), so `book_trip` records a summary under the id when the link is
//! built, and the page looks it up. The record lives in this process (so a page served by the
//! instance that minted the link always finds it) and, written right after, in the completion
//! store under `{id}.summary` with the same lifetime as a payment step (so a page served by
//! another instance sharing a Redis store finds it too). That second key can never be approved:
//! the page accepts only the engine's 22-character ids.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use elicit_runtime::server::store::{UrlCompletions, UrlStatus};
use serde::{Deserialize, Serialize};

/// How long a summary is kept: as long as the engine's default URL-mode step.
const TTL: Duration = Duration::from_secs(15 * 60);
/// Summaries kept in this process at most; past that, the oldest are dropped (one lifetime for
/// all, so the oldest is the next to expire: a queue in recording order, no scan).
const MAX_LOCAL: usize = 10_000;

/// The amount and the trip of one payment, as the page shows them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentSummary {
    /// The amount, with its currency (`€1888.00`).
    pub amount: String,
    /// The trip (`CDG → JFK on 2026-09-01, 2 traveller(s)`).
    pub trip: String,
}

/// Payment summaries by step id, shared by `book_trip` (which records them) and the payment page
/// (which shows them). Cheap to clone.
#[derive(Clone)]
pub struct PaymentSummaries {
    store: Arc<dyn UrlCompletions>,
    local: Arc<Mutex<Local>>,
}

/// The summaries of this process, and their ids in the order they were recorded (= expiry order).
#[derive(Default)]
struct Local {
    by_id: HashMap<String, (PaymentSummary, Instant)>,
    order: VecDeque<(Instant, String)>,
}

impl Local {
    /// Drops expired summaries from the front of the queue, and the oldest while the map is full.
    fn trim(&mut self, now: Instant) {
        while let Some((expires, _)) = self.order.front() {
            if *expires > now && self.by_id.len() < MAX_LOCAL {
                return;
            }
            let Some((expires, id)) = self.order.pop_front() else { return };
            // A re-recorded id has a later entry in the queue: drop the summary only with its own.
            if self.by_id.get(&id).is_some_and(|(_, e)| *e == expires) {
                self.by_id.remove(&id);
            }
        }
    }
}

impl PaymentSummaries {
    /// Summaries kept here and in `store` (the store the payment steps live in).
    pub fn new(store: Arc<dyn UrlCompletions>) -> PaymentSummaries {
        PaymentSummaries { store, local: Arc::default() }
    }

    fn store_key(id: &str) -> String {
        format!("{id}.summary")
    }

    /// Records `summary` for step `id`. Synchronous, so it can run where the engine builds the
    /// link; the store's copy is written by a task on the current Tokio runtime, if any.
    ///
    /// A step is recorded again by every replay of a state from before it (the engine finds the
    /// step it registered and builds its link again): an id already kept keeps its one place in
    /// the queue, so replays do not grow it.
    pub fn record(&self, id: &str, summary: PaymentSummary) {
        {
            let mut local = self.local.lock().unwrap_or_else(|e| e.into_inner());
            let now = Instant::now();
            local.trim(now);
            if let Some((kept, _)) = local.by_id.get_mut(id) {
                if *kept == summary {
                    return;
                }
                *kept = summary.clone();
            } else {
                let expires = now + TTL;
                local.by_id.insert(id.to_owned(), (summary.clone(), expires));
                local.order.push_back((expires, id.to_owned()));
            }
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let store = self.store.clone();
        let key = Self::store_key(id);
        runtime.spawn(async move {
            let Ok(value) = serde_json::to_value(&summary) else { return };
            // Best effort: without it, only the instance that minted the link names the payment.
            if store.register(&key, TTL, None).await.is_ok() {
                let _ = store.complete(&key, value, None).await;
            }
        });
    }

    /// The summary of step `id`, from this process or the store.
    pub async fn lookup(&self, id: &str) -> Option<PaymentSummary> {
        let local = {
            let local = self.local.lock().unwrap_or_else(|e| e.into_inner());
            local.by_id.get(id).filter(|(_, expires)| *expires > Instant::now()).map(|(summary, _)| summary.clone())
        };
        if local.is_some() {
            return local;
        }
        match self.store.status(&Self::store_key(id)).await {
            Ok(UrlStatus::Completed(value)) => serde_json::from_value(value).ok(),
            _ => None,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failing test should stop loudly")]
mod tests {
    use super::*;
    use elicit_runtime::server::store::InProcessStore;

    #[test]
    fn past_the_cap_the_oldest_summaries_go_first() {
        let summaries = PaymentSummaries::new(Arc::new(InProcessStore::new()));
        let summary = PaymentSummary { amount: "€1.00".into(), trip: "A → B".into() };
        for i in 0..MAX_LOCAL + 5 {
            summaries.record(&format!("id-{i}"), summary.clone());
        }
        let local = summaries.local.lock().unwrap();
        assert_eq!(local.by_id.len(), MAX_LOCAL);
        assert!(!local.by_id.contains_key("id-0") && !local.by_id.contains_key("id-4"));
        assert!(local.by_id.contains_key("id-5") && local.by_id.contains_key(&format!("id-{}", MAX_LOCAL + 4)));
        assert_eq!(local.order.len(), MAX_LOCAL);
    }

    #[test]
    fn a_step_recorded_again_by_replays_keeps_one_place() {
        let summaries = PaymentSummaries::new(Arc::new(InProcessStore::new()));
        let summary = PaymentSummary { amount: "€129.00".into(), trip: "A → B".into() };
        for _ in 0..1000 {
            summaries.record("step", summary.clone());
        }
        let changed = PaymentSummary { amount: "€258.00".into(), ..summary };
        summaries.record("step", changed.clone());
        let local = summaries.local.lock().unwrap();
        assert_eq!(local.order.len(), 1, "every replay grew the queue");
        assert_eq!(local.by_id.get("step").map(|(kept, _)| kept), Some(&changed));
    }
}
