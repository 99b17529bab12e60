//! The engine's side of the Tasks extension: [`Engine::run_task`], a call to a task-capable tool
//! from a client that declares the extension, which becomes a task at its handler's first wait
//! that is not an ask ([`Flow::background`]); and `tasks/get`, `tasks/update`, `tasks/cancel`
//! ([`Engine::task_get`], [`Engine::task_update`], [`Engine::task_cancel`]). The vocabulary and
//! the running task's link are in `task/`.

use std::future::Future;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};

use super::answer::FlowError;
use super::engine::Engine;
use super::exec::Executor;
use super::flow::Flow;
use super::observe;
use super::request::{EngineError, FLOW_CONFLICT, Request};
use super::store::{
    Claim, ClaimToken, Slot, StoreError, StoredJson, TaskLimits, TaskRecord, TaskRecords, TaskView, millis, mint_id,
};
use super::task::{
    TaskConfig, TaskExec, TaskFuture, TaskLink, TaskSnapshot, TaskStart, TaskStatus, TaskSupport, drive,
};
use crate::wire::{codes, parse_input_responses};

/// The `-32602` of a task id that names no task this caller may see.
fn not_found() -> EngineError {
    EngineError::invalid_params("Failed to retrieve task: Task not found")
}

/// The error a task reads when the instance running it stopped renewing its lease.
fn abandoned(lease: Duration) -> Value {
    json!({"code": codes::INTERNAL_ERROR, "message": format!(
        "the server instance running this task stopped (its lease of {} s passed without renewal); call the tool again",
        lease.as_secs()
    )})
}

impl Engine {
    /// The tunables of tasks ([`EngineBuilder::task_config`](super::EngineBuilder::task_config)).
    pub fn task_config(&self) -> &TaskConfig {
        &self.task_config
    }

    /// The task store ([`EngineBuilder::tasks`](super::EngineBuilder::tasks)).
    pub fn task_records(&self) -> &std::sync::Arc<dyn TaskRecords> {
        &self.tasks
    }

    /// The task `id` as `principal` may see it, or `-32602`; a task whose lease passed is
    /// recorded `failed` first.
    async fn task_view(&self, id: &str, principal: Option<&str>) -> Result<TaskView, EngineError> {
        let now = millis(self.clock.now());
        let view = self.tasks.load(id).await.map_err(EngineError::from)?;
        let Some(mut view) = view.filter(|v| v.record.owner.as_deref() == principal) else {
            return Err(not_found());
        };
        if view.record.expired(now) {
            return Err(EngineError::invalid_params("Failed to retrieve task: Task has expired"));
        }
        if !view.record.status.is_terminal() && now >= view.record.lease_until_ms {
            let mut record = view.record.clone();
            record.status = TaskStatus::Failed;
            record.outcome = Some(StoredJson::from_json(&abandoned(self.task_config.lease)));
            record.status_message = Some("the server instance running this task stopped".to_owned());
            record.input_requests.clear();
            record.updated_ms = now;
            // Best effort: a failure to record it leaves the next read to try again.
            match self.tasks.save(&record).await {
                Ok(true) => view.record = record,
                Ok(false) => {
                    if let Ok(Some(again)) = self.tasks.load(id).await {
                        view = again;
                    }
                }
                Err(error) => {
                    tracing::warn!(target: "elicit_runtime", %error, "could not record an abandoned task as failed");
                    view.record = record;
                }
            }
        }
        Ok(view)
    }

    /// `tasks/get`: the task `id` as `principal` may see it.
    ///
    /// # Errors
    ///
    /// `-32602` for an id that names no task of this principal, or an expired one; `-32603` when
    /// the task store fails.
    pub async fn task_get(&self, id: &str, principal: Option<&str>) -> Result<TaskSnapshot, EngineError> {
        self.task_view(id, principal).await.map(TaskSnapshot::of)
    }

    /// `tasks/update`: records the answers to outstanding input requests of task `id`; keys not
    /// outstanding (never asked, already answered, malformed map entries for them) are ignored.
    /// The running handler is woken, on whichever instance it runs.
    ///
    /// # Errors
    ///
    /// As [`Engine::task_get`], and `-32602` when `inputResponses` is not an object.
    pub async fn task_update(
        &self,
        id: &str,
        principal: Option<&str>,
        input_responses: Option<&Value>,
    ) -> Result<(), EngineError> {
        let responses = parse_input_responses(input_responses)
            .map_err(|e| EngineError::invalid_params(e.to_string()))?
            .cloned()
            .unwrap_or_default();
        let view = self.task_view(id, principal).await?;
        if view.record.status.is_terminal() {
            return Ok(());
        }
        let mut fresh = responses;
        fresh.retain(|key, _| view.record.input_requests.contains_key(key) && !view.answered.contains(key));
        if fresh.is_empty() {
            return Ok(());
        }
        self.tasks.answer(id, fresh).await.map_err(EngineError::from)
    }

    /// `tasks/cancel`: asks the handler of task `id` to stop (it sees
    /// [`Flow::cancelled`](super::Flow::cancelled)); a terminal task is acknowledged as is.
    ///
    /// # Errors
    ///
    /// As [`Engine::task_get`].
    pub async fn task_cancel(&self, id: &str, principal: Option<&str>) -> Result<(), EngineError> {
        let view = self.task_view(id, principal).await?;
        if view.record.status.is_terminal() || view.cancel_requested {
            return Ok(());
        }
        self.tasks.cancel(id).await.map_err(EngineError::from)
    }
}

/// The ledger slot that names the task a flow became: a retried last round finds it there.
const TASK_SLOT: &str = "\u{0}task";

/// How the first part of the handler ended.
enum First<T> {
    Done(T),
    Suspended,
    Detached,
}

impl Engine {
    /// Runs a call to a task-capable tool for a client that declares the extension.
    ///
    /// The handler runs as a Multi Round-Trip round until it finishes (an ordinary result; for a
    /// [`TaskSupport::Required`] tool, a task that is already complete), parks on asks (an
    /// `InputRequiredResult`, as [`Engine::run`]), or first waits on anything else: then the call
    /// becomes a task and the same future carries on in the background. A retried last round of a
    /// flow that became a task answers with the same task: the handler's work after that point
    /// never runs twice.
    ///
    /// # Errors
    ///
    /// As [`Engine::run`], and the caps on live tasks (`-32603`, saying which).
    pub async fn run_task<R, F, Fut>(
        &self,
        request: &Request<'_>,
        support: TaskSupport,
        handler: F,
    ) -> Result<TaskStart<R>, EngineError>
    where
        R: Serialize + Send + 'static,
        F: FnOnce(Flow) -> Fut,
        Fut: Future<Output = Result<R, FlowError>> + Send + 'static,
    {
        let round = observe::Round::mrtr(request);
        round.watch(self.task_round(request, support, handler, &round)).await
    }

    /// [`Engine::run_task`]'s round, observed by `round`.
    async fn task_round<R, F, Fut>(
        &self,
        request: &Request<'_>,
        support: TaskSupport,
        handler: F,
        round: &observe::Round,
    ) -> Result<TaskStart<R>, EngineError>
    where
        R: Serialize + Send + 'static,
        F: FnOnce(Flow) -> Fut,
        Fut: Future<Output = Result<R, FlowError>> + Send + 'static,
    {
        let binding = self.binding(request);
        let mut opened = self.open(request, &binding)?;
        self.read_ledger(&mut opened).await?;
        let exec = TaskExec::default();
        let handle = exec.handle();
        let flow = self.flow(request, &mut opened, self.shared(Executor::Task(exec))).with_request_handle(handle);
        round.opened(&flow, opened.ledger.finished.is_some(), self.clock.now());
        let mut running = Box::pin(handler(flow.clone()));
        let first = std::future::poll_fn(|cx| match running.as_mut().poll(cx) {
            Poll::Ready(out) => Poll::Ready(First::Done(out)),
            Poll::Pending if flow.is_suspended() => Poll::Ready(First::Suspended),
            Poll::Pending => Poll::Ready(First::Detached),
        })
        .await;
        let handler: TaskFuture = match first {
            First::Suspended => {
                if let Some(fatal) = flow.take_fatal() {
                    return Err(fatal.into());
                }
                return self.seal(&binding, &flow, opened.resumed, &opened.ledger).await.map(TaskStart::InputRequired);
            }
            First::Done(out) if support != TaskSupport::Required => {
                if let Some(fatal) = flow.take_fatal() {
                    return Err(fatal.into());
                }
                return match out {
                    Ok(result) if opened.resumed => {
                        self.finish(&flow, opened.ledger.finished).await.map(|()| TaskStart::Complete(result))
                    }
                    other => other.map(TaskStart::Complete).map_err(EngineError::from),
                };
            }
            First::Done(out) => Box::pin(std::future::ready(out.and_then(stored_result))),
            First::Detached => Box::pin(async move { running.await.and_then(stored_result) }),
        };
        let client = if request.principal.is_none() { request.client } else { None };
        self.start(&flow, opened.resumed, request.principal, client, handler)
            .await
            .map(|seed| TaskStart::Task(Box::new(seed)))
    }

    /// Creates the task record and runs the handler's rest in the background.
    async fn start(
        &self,
        flow: &Flow,
        resumed: bool,
        principal: Option<&str>,
        client: Option<&str>,
        handler: TaskFuture,
    ) -> Result<TaskSnapshot, EngineError> {
        // An anonymous client's place, held until its task ends (before the ledger's claim, which
        // a refusal here would otherwise have to give back).
        let place = match client {
            Some(client) => {
                let cap = self.task_config.max_live_tasks_per_anonymous_client;
                let place = self.anonymous_tasks.reserve(client, cap);
                Some(place.ok_or_else(|| EngineError::from(StoreError::TaskCap { cap, per_principal: true }))?)
            }
            None => None,
        };
        let id = mint_id();
        // A flow of several rounds names its task in its ledger, once: a retried last round
        // finds the task instead of starting the work again.
        let claim = if resumed {
            let slot = Slot::Once(TASK_SLOT.to_owned());
            let token = ClaimToken::mint();
            let flow_id = flow.flow_id();
            let owner = &flow.request.owner;
            match self.store.claim(&flow_id, owner, &slot, &token, self.config.claim_lease, self.record_ttl()).await {
                Ok(Claim::Run) => Some((flow_id, slot, token)),
                Ok(Claim::Done(Value::String(existing))) => {
                    return self.task_get(&existing, principal).await;
                }
                Ok(_) => {
                    return Err(EngineError {
                        code: codes::INTERNAL_ERROR,
                        message: FLOW_CONFLICT.to_owned(),
                        data: None,
                    });
                }
                Err(error) => return Err(EngineError::from(error)),
            }
        } else {
            None
        };
        let now = millis(self.clock.now());
        let config = self.task_config.clone();
        let record = TaskRecord {
            status_message: Some("The operation is now in progress.".to_owned()),
            ..TaskRecord::working(id.clone(), principal, now, &config)
        };
        let limits = TaskLimits {
            max_live: config.max_live_tasks,
            max_live_per_principal: config.max_live_tasks_per_principal,
            now_ms: now,
        };
        let created = self.tasks.create(&record, limits).await;
        if let Some((flow_id, slot, token)) = claim {
            let recorded = match &created {
                Ok(()) => {
                    self.store.record(&flow_id, &slot, &token, Value::String(id.clone()), self.record_ttl()).await
                }
                Err(_) => self.store.abandon(&flow_id, &slot, &token).await,
            };
            recorded?;
        }
        created?;
        let snapshot = TaskSnapshot::of(TaskView {
            record: record.clone(),
            answered: Default::default(),
            cancel_requested: false,
        });
        let link = Arc::new(TaskLink::new(record, self.tasks.clone(), self.clock.clone(), config));
        flow.shared.exec.became_task(link.clone());
        let fatal = flow.clone();
        let running = drive(link, move || fatal.take_fatal(), handler);
        tokio::spawn(async move {
            running.await;
            drop(place);
        });
        Ok(snapshot)
    }
}

/// The tool's result as the task keeps it.
fn stored_result<R: Serialize>(result: R) -> Result<StoredJson, FlowError> {
    StoredJson::of(&result).map_err(|e| FlowError::Failed(format!("the tool's result cannot be encoded: {e}")))
}

impl Flow {
    /// Marks the start of the handler's long work: a call to a task-capable tool from a client
    /// that declares the Tasks extension becomes a task here (answered `resultType: "task"`; the
    /// handler carries on in the background, its asks becoming the task's input requests). Any
    /// other call goes straight on. Without it a call becomes a task at its first wait that is
    /// not an ask; with it, a handler that asks at once still runs its asks inside the task.
    pub async fn background(&self) {
        if self.shared.exec.may_become_task() {
            let mut yielded = false;
            std::future::poll_fn(|cx| {
                if yielded {
                    return std::task::Poll::Ready(());
                }
                yielded = true;
                cx.waker().wake_by_ref();
                std::task::Poll::Pending
            })
            .await;
        }
    }
}
