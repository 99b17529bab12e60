//! The executor: how a flow's asks reach the client and its URL-mode waits happen. The one place
//! where the ways of running a handler differ; nothing else in the engine asks which one runs.
//!
//! - `Replay` (2026-07-28, MRTR): the handler is re-run each round; an unanswered ask parks it and
//!   becomes an input request of the round's result.
//! - `Live` (2025-era sessions): the handler runs once; an ask is pushed to the client and awaited
//!   (`session.rs`).
//!
//! - `Task` (the Tasks extension): replayed until the call becomes a task, then run once in the
//!   background; its asks become the task's input requests (`task/`).
//!
//! Below the flow that holds it: it reaches the flow it asks for through
//! [`AskingFlow`](super::context::AskingFlow), and a replayed ask answers [`Reply::Suspend`] for
//! the flow to park on.

use std::sync::Arc;

use serde_json::Value;

use super::answer::FlowError;
use super::claim::ClaimGuard;
use super::context::AskingFlow;
use super::session::LiveLink;
use super::store::{StoreError, UrlStatus};
use super::task::{TaskExec, TaskLink};
use crate::wire::{Capabilities, InputRequest};

/// What became of an ask in this round.
pub(super) enum Reply {
    /// The client's answer, as sent.
    Answer(Value),
    /// Nothing to wait for in this round (replayed): the flow parks on the ask, which becomes an
    /// input request of the round's result.
    Suspend,
}

/// How a flow runs.
pub(super) enum Executor {
    /// Re-run each round; asks are collected into the round's `inputRequests`.
    Replay,
    /// Run once on a 2025-era session; asks are pushed and awaited. Boxed: a live task's link is
    /// several times the size of the other variants, and every flow of a round holds one.
    Live(Box<LiveLink>),
    /// A call that may become a task: replayed until it does, then run once in the background.
    Task(TaskExec),
}

impl Executor {
    /// The capabilities that replace the request's own (a session's, declared in `initialize`).
    pub(super) fn capabilities(&self) -> Option<Capabilities> {
        match self {
            Executor::Replay | Executor::Task(_) => None,
            Executor::Live(live) => Some(live.capabilities()),
        }
    }

    /// Asks the client for `key` and returns its answer as sent. Replayed, the round ends here:
    /// [`Reply::Suspend`].
    pub(super) async fn ask(
        &self,
        flow: &dyn AskingFlow,
        key: &str,
        request: &InputRequest,
        elicitation_id: Option<&str>,
    ) -> Result<Reply, FlowError> {
        match self {
            Executor::Replay => Ok(Reply::Suspend),
            Executor::Live(live) => live.ask(flow, key, request, elicitation_id).await.map(Reply::Answer),
            Executor::Task(task) => match task.link() {
                // Boxed: inline, a task's ask would make every ask's future its size, and a
                // 2025-era call holds one for as long as its client takes to answer.
                Some(link) => Box::pin(link.ask(flow, key, request)).await.map(Reply::Answer),
                None => Ok(Reply::Suspend),
            },
        }
    }

    /// The call became a task: its asks go to the task's `link` from now on (a call that could
    /// not become one has no task to give them to).
    pub(super) fn became_task(&self, link: Arc<TaskLink>) {
        if let Executor::Task(task) = self {
            task.attach(link);
        }
    }

    /// Whether the call becomes a task at the handler's next wait that is not an ask: a call to
    /// a task-capable tool that is not a task yet.
    pub(super) fn may_become_task(&self) -> bool {
        matches!(self, Executor::Task(task) if task.link().is_none())
    }

    /// A URL-mode step was registered for this flow.
    pub(super) fn url_minted(&self, id: &str) {
        if let Executor::Live(live) = self {
            live.hold(id);
        }
    }

    /// A URL-mode step was declined or cancelled: a live task forgets it at once (a replayed
    /// state may still be retried, so its record stays until it expires).
    pub(super) fn url_released(&self, id: &str) {
        if let Executor::Live(live) = self {
            live.release(id);
        }
    }

    /// A URL-mode step's record is gone from the store (taken, or expired).
    pub(super) fn url_consumed(&self, id: &str) {
        if let Executor::Live(live) = self {
            live.consumed(id);
        }
    }

    /// A URL-mode step was completed and taken: a live session is told so.
    pub(super) async fn url_completed(&self, id: &str) -> Result<(), FlowError> {
        match self {
            Executor::Replay | Executor::Task(_) => Ok(()),
            Executor::Live(live) => live.completed(id).await,
        }
    }

    /// The page was not completed in time: `Ok` when it is asked again in the next round (the
    /// flow suspends on the ask), or a live task's failure, recorded as the flow's.
    pub(super) fn url_pending(&self, flow: &dyn AskingFlow, key: &str, id: &str) -> Result<(), FlowError> {
        match self {
            Executor::Replay => Ok(()),
            Executor::Live(live) => Err(flow.fail(live.url_timed_out(key, id))),
            Executor::Task(task) => match task.link() {
                Some(link) => Err(flow.fail(FlowError::Failed(format!(
                    "the page of `{}` was not completed within {:?}",
                    crate::wire::clip(key),
                    link.config.url_completion_timeout
                )))),
                None => Ok(()),
            },
        }
    }

    /// Takes the completion of step `id` under the slot claim `guard` holds, and records it there
    /// (or abandons the claim when the step is not completed).
    ///
    /// Replayed, this runs on a task of its own: the round may be dropped while it waits (a
    /// sibling ask suspended, or the request was cancelled), and the claim must not stay held, nor
    /// a completion the store already handed over be lost before it is recorded. A live task keeps
    /// it inline: its session is gone when it is dropped, and a detached wait could outlive it by
    /// minutes; the guard abandons the claim then.
    pub(super) async fn take_claimed(
        &self,
        flow: &dyn AskingFlow,
        guard: ClaimGuard,
        id: &str,
    ) -> Result<UrlStatus, FlowError> {
        let store = flow.store().clone();
        let id = id.to_owned();
        // The completion is an effect of the flow, recorded with the answers it followed (as a
        // `once` value is): a fork that changed one of them cannot take it.
        let history = flow.history();
        let wait = match self {
            Executor::Replay => flow.config().url_retry_wait,
            Executor::Live(live) => live.url_completion_timeout(),
            Executor::Task(task) => {
                task.link().map_or(flow.config().url_retry_wait, |link| link.config.url_completion_timeout)
            }
        };
        let settle = async move {
            match store.take(&id, wait).await {
                Ok(UrlStatus::Completed(value)) => {
                    let recorded = super::claim::envelope(value.clone(), &history);
                    guard.record(recorded).await.map(|()| UrlStatus::Completed(value))
                }
                other => {
                    guard.abandon().await;
                    other
                }
            }
        };
        let settled: Result<UrlStatus, StoreError> = match (self, tokio::runtime::Handle::try_current()) {
            (Executor::Replay, Ok(runtime)) => runtime.spawn(settle).await.map_err(|e| {
                flow.fail(FlowError::Failed(format!("the wait for a URL-mode step ended abnormally: {e}")))
            })?,
            // The person is still on the page: the call is kept alive meanwhile.
            (Executor::Live(live), _) => live.waiting(flow, None, std::pin::pin!(settle)).await,
            _ => settle.await,
        };
        settled.map_err(|e| flow.fail(FlowError::Store(e)))
    }
}
