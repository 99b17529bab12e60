//! What a call to a task-capable tool produced ([`TaskStart`]), and the places of anonymous
//! clients' tasks on this instance. The engine's side, [`Engine::run_task`](crate::server::Engine::run_task),
//! is in `server/task_calls.rs`.

use std::sync::Arc;

use super::TaskSnapshot;
use crate::wire::InputRequiredResult;

/// The live tasks of anonymous clients on this instance, by client (peer address): anonymous
/// callers share one count in the task store, and this keeps one client from taking all of it.
#[derive(Debug, Default)]
pub(crate) struct AnonymousTasks(std::sync::Mutex<std::collections::HashMap<String, usize>>);

impl AnonymousTasks {
    /// A place for one more task of `client`, unless it runs `cap` already.
    pub(in crate::server) fn reserve(self: &Arc<Self>, client: &str, cap: usize) -> Option<AnonymousPlace> {
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
pub(in crate::server) struct AnonymousPlace {
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

/// How the metrics label a task-capable call's round.
#[cfg(feature = "metrics")]
impl<R> crate::server::observe::RoundEnd for TaskStart<R> {
    fn outcome(&self) -> &'static str {
        match self {
            TaskStart::Complete(_) => "complete",
            TaskStart::InputRequired(_) => "input_required",
            TaskStart::Task(_) => "task",
        }
    }

    fn asks(&self) -> &[(String, crate::wire::InputRequest)] {
        match self {
            TaskStart::InputRequired(result) => &result.input_requests,
            TaskStart::Complete(_) | TaskStart::Task(_) => &[],
        }
    }
}
