//! `elicit call --tasks`: what the user sees while the server runs the call as a task, and what
//! they can do meanwhile. The task's input requests are rendered like any other (the same form and
//! URL renderer); between polls the task's status and progress message are shown whenever they
//! change, and at the terminal `r` polls now and `c` (or Escape, or Ctrl-C) cancels the task.

use std::time::Duration;

use elicit_runtime::client::{TaskAction, TaskPolicy, TaskWait};
use elicit_runtime::wire::tasks::TaskStatus;

use crate::keys::{Key, read_key};
use crate::printable::one_line;

/// The driver's bounds for `--tasks`: give up on (and cancel) a task after `deadline`.
pub(crate) fn policy(deadline: Duration) -> TaskPolicy {
    TaskPolicy::default().deadline(deadline)
}

/// The last status shown, so that it is printed again only when it changes.
#[derive(Default)]
pub(crate) struct StatusLine {
    shown: Option<(String, TaskStatus, Option<String>)>,
}

impl StatusLine {
    /// Prints the task's status and message if either changed since the last poll; whether it did.
    fn show(&mut self, wait: &TaskWait<'_>) -> bool {
        let now = (wait.task.task_id.clone(), wait.task.status, wait.task.status_message.clone());
        if self.shown.as_ref() == Some(&now) {
            return false;
        }
        let what = match wait.task.status {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "waiting for the answers to be taken in",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        };
        // One line whatever the server sent: a status message with line breaks could print lines
        // that pass for ours (a host name, a prompt).
        let message = wait.task.status_message.as_deref().map(|m| format!(": {}", one_line(m))).unwrap_or_default();
        eprintln!("\r\n{} runs the call as task {}: {what}{message}", one_line(wait.server), one_line(&now.0));
        self.shown = Some(now);
        true
    }

    /// At the terminal: show the status, then wait for the next poll, or `r` (poll now) or `c`,
    /// Escape or Ctrl-C (cancel the task).
    pub(crate) async fn interactive(&mut self, wait: TaskWait<'_>) -> TaskAction {
        if self.show(&wait) {
            eprintln!("\rPress r to check now, c to cancel the task.");
        }
        match tokio::task::block_in_place(|| read_key(wait.next_poll)) {
            Key::Retry => TaskAction::Poll,
            Key::Cancel => {
                eprintln!("\r\nCancelling the task.");
                TaskAction::Cancel
            }
            Key::Timeout | Key::OpenAgain => TaskAction::Poll,
        }
    }

    /// Answering from a file: show the status, wait for the next poll.
    pub(crate) async fn unattended(&mut self, wait: TaskWait<'_>) -> TaskAction {
        self.show(&wait);
        tokio::time::sleep(wait.next_poll).await;
        TaskAction::Poll
    }
}
