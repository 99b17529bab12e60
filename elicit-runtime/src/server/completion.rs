//! Out-of-band completion of URL-mode elicitations.
//!
//! In URL mode `accept` means only "the user consented"; whether the step behind the URL finished
//! is known to whatever serves that page. The page records completion in a [`CompletionStore`];
//! on the client's retry the engine asks the store. The embedded default, [`InProcessStore`], lives
//! in one process; deployments with several instances plug in a shared store.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::Notify;

/// A boxed future returned by [`CompletionStore`] methods (the trait stays object-safe).
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// Where an out-of-band step stands.
#[derive(Debug, Clone, PartialEq)]
pub enum UrlStatus {
    /// Registered, not finished yet.
    Pending,
    /// Finished; the value is what the page recorded (for example an approval decision).
    Completed(Value),
    /// Never registered, or expired.
    Unknown,
}

/// The store could not be reached or refused the operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreError(pub String);

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "completion store: {}", self.0)
    }
}

impl std::error::Error for StoreError {}

/// Records which URL-mode steps have finished.
///
/// A step is registered when its URL is handed out, completed by the page, and taken once by the
/// retry that continues the flow:
///
/// ```
/// use std::time::Duration;
///
/// use elicit_runtime::server::{CompletionStore, InProcessStore, UrlStatus};
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let store = InProcessStore::new();
/// store.register("step-1", Duration::from_secs(60), None).await?;
/// assert_eq!(store.status("step-1").await?, UrlStatus::Pending);
///
/// assert!(store.complete("step-1", json!({"approved": true}), None).await?);
/// // A page cannot complete a step twice, nor one that was never registered.
/// assert!(!store.complete("step-1", json!({"approved": false}), None).await?);
/// assert!(!store.complete("made-up", json!(null), None).await?);
///
/// // The completion is consumed by exactly one take.
/// let taken = store.take("step-1", Duration::ZERO).await?;
/// assert_eq!(taken, UrlStatus::Completed(json!({"approved": true})));
/// assert_eq!(store.take("step-1", Duration::ZERO).await?, UrlStatus::Unknown);
/// # Ok::<(), elicit_runtime::server::StoreError>(())
/// # }).unwrap();
/// ```
pub trait CompletionStore: Send + Sync {
    /// Registers a freshly minted id as pending for `ttl`, owned by `owner` (the authenticated
    /// principal of the flow that minted it) when there is one.
    fn register(&self, id: &str, ttl: Duration, owner: Option<&str>) -> StoreFuture<'_, ()>;

    /// Records completion of a pending id by `by` (the principal the page authenticated, if
    /// any). `false` when the id is unknown, expired or already completed — a page must not be
    /// able to complete a step twice or invent one — and when the step has an owner other than
    /// `by`: an approval of user A cannot be given by user B (nor anonymously).
    fn complete(&self, id: &str, outcome: Value, by: Option<&str>) -> StoreFuture<'_, bool>;

    /// The current status of `id`.
    fn status(&self, id: &str) -> StoreFuture<'_, UrlStatus>;

    /// Waits up to `timeout` for `id` to complete and consumes the completion: a completed step is
    /// returned by exactly one `take`, so a replayed older `requestState` cannot use the same
    /// approval twice. Pending and unknown steps are returned as they are.
    fn take(&self, id: &str, timeout: Duration) -> StoreFuture<'_, UrlStatus>;

    /// Forgets `id` now: the step it names will never be asked about again (a live task that
    /// minted it was dropped, or the user declined). Best effort and without waiting; the default
    /// leaves the record to expire.
    fn release(&self, id: &str) {
        let _ = id;
    }
}

struct Record {
    status: UrlStatus,
    /// The principal the step belongs to, if any.
    owner: Option<String>,
    expires: Instant,
    notify: Arc<Notify>,
}

/// The embedded default store: completion records in this process's memory, with expiry and a
/// wake-up so a retry waiting for completion returns as soon as the page is submitted.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// use elicit_runtime::server::{CompletionStore, InProcessStore, UrlStatus};
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let store = Arc::new(InProcessStore::new());
/// store.register("pay-7", Duration::from_secs(60), None).await?;
/// // A retry waits (here at most a minute) and wakes as soon as the page completes the step.
/// let page = Arc::clone(&store);
/// let completed = tokio::spawn(async move { page.complete("pay-7", "approved".into(), None).await });
/// let status = store.take("pay-7", Duration::from_secs(60)).await?;
/// assert_eq!(status, UrlStatus::Completed("approved".into()));
/// assert!(completed.await.unwrap()?);
/// # Ok::<(), elicit_runtime::server::StoreError>(())
/// # }).unwrap();
/// ```
#[derive(Default)]
pub struct InProcessStore {
    records: Mutex<HashMap<String, Record>>,
}

impl InProcessStore {
    /// An empty store.
    pub fn new() -> Self {
        InProcessStore::default()
    }

    fn with_records<T>(&self, f: impl FnOnce(&mut HashMap<String, Record>) -> T) -> T {
        // A poisoned lock only means another thread panicked mid-update of a plain map; the
        // records themselves stay consistent, so keep serving.
        let mut records = self.records.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        records.retain(|_, r| r.expires > now);
        f(&mut records)
    }

    /// Removes a completed record and returns it; another taker racing for it gets `Unknown`.
    fn consume(&self, id: &str) -> UrlStatus {
        self.with_records(|records| match records.get(id) {
            Some(record) if matches!(record.status, UrlStatus::Completed(_)) => {
                records.remove(id).map_or(UrlStatus::Unknown, |r| r.status)
            }
            Some(record) => record.status.clone(),
            None => UrlStatus::Unknown,
        })
    }

    fn current(&self, id: &str) -> (UrlStatus, Option<Arc<Notify>>) {
        self.with_records(|records| match records.get(id) {
            Some(r) => (r.status.clone(), Some(r.notify.clone())),
            None => (UrlStatus::Unknown, None),
        })
    }
}

impl CompletionStore for InProcessStore {
    fn register(&self, id: &str, ttl: Duration, owner: Option<&str>) -> StoreFuture<'_, ()> {
        let id = id.to_owned();
        let owner = owner.map(str::to_owned);
        Box::pin(async move {
            self.with_records(|records| {
                records.insert(
                    id,
                    Record { status: UrlStatus::Pending, owner, expires: Instant::now() + ttl, notify: Arc::new(Notify::new()) },
                );
            });
            Ok(())
        })
    }

    fn complete(&self, id: &str, outcome: Value, by: Option<&str>) -> StoreFuture<'_, bool> {
        let id = id.to_owned();
        let by = by.map(str::to_owned);
        Box::pin(async move {
            Ok(self.with_records(|records| match records.get_mut(&id) {
                Some(record)
                    if record.status == UrlStatus::Pending
                        && record.owner.as_ref().is_none_or(|owner| by.as_ref() == Some(owner)) =>
                {
                    record.status = UrlStatus::Completed(outcome);
                    record.notify.notify_waiters();
                    true
                }
                _ => false,
            }))
        })
    }

    fn status(&self, id: &str) -> StoreFuture<'_, UrlStatus> {
        let id = id.to_owned();
        Box::pin(async move { Ok(self.current(&id).0) })
    }

    fn release(&self, id: &str) {
        self.with_records(|records| records.remove(id));
    }

    fn take(&self, id: &str, timeout: Duration) -> StoreFuture<'_, UrlStatus> {
        let id = id.to_owned();
        Box::pin(async move {
            let deadline = tokio::time::Instant::now() + timeout;
            loop {
                let (status, notify) = self.current(&id);
                if matches!(status, UrlStatus::Completed(_)) {
                    return Ok(self.consume(&id));
                }
                let Some(notify) = notify.filter(|_| status == UrlStatus::Pending) else { return Ok(status) };
                let notified = notify.notified();
                tokio::pin!(notified);
                // Register interest before re-checking, so a completion in between is not missed.
                notified.as_mut().enable();
                if self.current(&id).0 != UrlStatus::Pending {
                    continue;
                }
                if tokio::time::timeout_at(deadline, notified).await.is_err() {
                    return Ok(match self.current(&id).0 {
                        UrlStatus::Completed(_) => self.consume(&id),
                        other => other,
                    });
                }
            }
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failing test should stop loudly")]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn an_owned_step_completes_only_for_its_owner() {
        let store = InProcessStore::new();
        store.register("owned", Duration::from_secs(60), Some("alice")).await.unwrap();
        assert!(!store.complete("owned", json!(true), Some("bob")).await.unwrap(), "completed by another user");
        assert!(!store.complete("owned", json!(true), None).await.unwrap(), "completed anonymously");
        assert_eq!(store.status("owned").await.unwrap(), UrlStatus::Pending);
        assert!(store.complete("owned", json!(true), Some("alice")).await.unwrap());
        // A step minted without a principal completes for anyone, as before.
        store.register("open", Duration::from_secs(60), None).await.unwrap();
        assert!(store.complete("open", json!(true), Some("bob")).await.unwrap());
    }

    #[tokio::test]
    async fn completes_once_wakes_waiters_and_is_taken_once() {
        let store = Arc::new(InProcessStore::new());
        store.register("a", Duration::from_secs(60), None).await.unwrap();
        assert_eq!(store.status("a").await.unwrap(), UrlStatus::Pending);
        assert_eq!(store.take("a", Duration::from_millis(10)).await.unwrap(), UrlStatus::Pending);
        let waiter = {
            let store = store.clone();
            tokio::spawn(async move { store.take("a", Duration::from_secs(30)).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(store.complete("a", json!({"approved": true}), None).await.unwrap());
        assert!(!store.complete("a", json!({"approved": false}), None).await.unwrap(), "completed twice");
        let status = waiter.await.unwrap().unwrap();
        assert_eq!(status, UrlStatus::Completed(json!({"approved": true})));
        // Consumed: a second take (a replayed older state) does not see the approval again.
        assert_eq!(store.take("a", Duration::from_millis(10)).await.unwrap(), UrlStatus::Unknown);
        assert!(!store.complete("never-minted", json!(null), None).await.unwrap());
        assert_eq!(store.status("never-minted").await.unwrap(), UrlStatus::Unknown);
    }

    #[tokio::test]
    async fn a_released_record_is_gone() {
        let store = InProcessStore::new();
        store.register("c", Duration::from_secs(60), None).await.unwrap();
        store.release("c");
        assert_eq!(store.status("c").await.unwrap(), UrlStatus::Unknown);
        assert!(!store.complete("c", json!(null), None).await.unwrap());
    }

    #[tokio::test]
    async fn records_expire() {
        let store = InProcessStore::new();
        store.register("b", Duration::from_millis(1), None).await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert_eq!(store.status("b").await.unwrap(), UrlStatus::Unknown);
        assert!(!store.complete("b", json!(null), None).await.unwrap());
    }
}
