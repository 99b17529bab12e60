//! [`Engine::run_task`]: a call to a task-capable tool from a client that declares the extension.

use std::future::Future;
use std::sync::Arc;
use std::task::Poll;

use serde::Serialize;
use serde_json::Value;

use super::link::{TaskExec, TaskFuture, TaskLink, drive};
use super::{TaskSnapshot, TaskSupport};
use crate::server::engine::Engine;
use crate::server::exec::Executor;
use crate::server::flow::Flow;
use crate::server::flow::FlowError;
use crate::server::observe;
use crate::server::request::{EngineError, FLOW_CONFLICT, Request};
use crate::server::store::{Claim, ClaimToken, Slot, StoreError, TaskLimits, TaskRecord, TaskView, millis, mint_id};
use crate::wire::{InputRequiredResult, codes};

/// The live tasks of anonymous clients on this instance, by client (peer address): anonymous
/// callers share one count in the task store, and this keeps one client from taking all of it.
#[derive(Debug, Default)]
pub(crate) struct AnonymousTasks(std::sync::Mutex<std::collections::HashMap<String, usize>>);

impl AnonymousTasks {
    /// A place for one more task of `client`, unless it runs `cap` already.
    fn reserve(self: &Arc<Self>, client: &str, cap: usize) -> Option<AnonymousPlace> {
        let mut counts = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let count = counts.entry(client.to_owned()).or_default();
        if *count >= cap {
            return None;
        }
        *count += 1;
        Some(AnonymousPlace { tasks: self.clone(), client: client.to_owned() })
    }
}

/// One anonymous client's place, given back when dropped (its task ended, or was never made).
struct AnonymousPlace {
    tasks: Arc<AnonymousTasks>,
    client: String,
}

impl Drop for AnonymousPlace {
    fn drop(&mut self) {
        let mut counts = self.tasks.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = counts.get_mut(&self.client) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                counts.remove(&self.client);
            }
        }
    }
}

/// What a call to a task-capable tool produced.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskStart<R> {
    /// The handler finished before it waited on anything: an ordinary result.
    Complete(R),
    /// The handler asks before its long work: a Multi Round-Trip round.
    InputRequired(InputRequiredResult),
    /// The call became a task (answer `resultType: "task"` with this seed).
    Task(Box<TaskSnapshot>),
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
            First::Done(out) => Box::pin(std::future::ready(out.and_then(to_json))),
            First::Detached => Box::pin(async move { running.await.and_then(to_json) }),
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
        let snapshot = TaskSnapshot::of(&TaskView {
            record: record.clone(),
            answered: Default::default(),
            cancel_requested: false,
        });
        let link = Arc::new(TaskLink::new(record, self.tasks.clone(), self.clock.clone(), config));
        if let Executor::Task(exec) = &flow.shared.exec {
            exec.attach(link.clone());
        }
        let running = drive(link, flow.clone(), handler);
        tokio::spawn(async move {
            running.await;
            drop(place);
        });
        Ok(snapshot)
    }
}

fn to_json<R: Serialize>(result: R) -> Result<Value, FlowError> {
    serde_json::to_value(result).map_err(|e| FlowError::Failed(format!("the tool's result cannot be encoded: {e}")))
}
