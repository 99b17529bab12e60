//! `--answers FILE`: answering input requests from a JSON file, for scripts and tests.

use std::time::Duration;

use elicit_runtime::client::form::with_defaults;
use elicit_runtime::client::{AskContext, CheckedUrl, PendingAction, PendingKind, PendingUrl, Responder};
use elicit_runtime::schema::RequestedSchema;
use elicit_runtime::wire::{ElicitAction, ElicitResult};
use serde_json::{Map, Value};

use crate::browser;
use crate::printable::{indented, one_line};

/// The answers-file key that answers whatever no other key names.
const WILDCARD: &str = "*";

/// Answers from a file: input request key -> an `ElicitResult`-shaped answer. The key `"*"`
/// answers any request no other key names (2025-era pushes have no keys of their own).
pub(crate) struct Scripted {
    answers: Map<String, Value>,
    browser: Option<String>,
    wait: Duration,
    endpoint: String,
    tasks: crate::tasks::StatusLine,
    /// Why the last request had no answer, until the driver takes it.
    unpresented: Option<String>,
}

/// Reads and checks an answers file: a JSON object whose every value is an `ElicitResult`.
pub(crate) fn load(path: &str) -> Result<Map<String, Value>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let value: Value = serde_json::from_str(&text).map_err(|e| format!("{path} is not JSON: {e}"))?;
    let Value::Object(answers) = value else {
        return Err(format!("{path} must hold a JSON object from input request key to answer"));
    };
    for (key, answer) in &answers {
        ElicitResult::from_json(answer).map_err(|e| format!("{path}: answer `{key}`: {e}"))?;
    }
    Ok(answers)
}

impl Scripted {
    /// A responder over checked answers.
    pub(crate) fn new(answers: Map<String, Value>, browser: Option<String>, wait: Duration, endpoint: String) -> Self {
        Scripted { answers, browser, wait, endpoint, tasks: Default::default(), unpresented: None }
    }

    fn answer(&self, key: &str) -> Option<ElicitResult> {
        let answer = self.answers.get(key).or_else(|| self.answers.get(WILDCARD))?;
        // Checked by `load`.
        ElicitResult::from_json(answer).ok()
    }
}

impl Scripted {
    /// 2025 era: the completion notification ends the wait (the driver drops this future); until
    /// `--wait` runs out, an in-call step is cancelled and a `-32042` call is made again.
    async fn await_completion(&self, ctx: AskContext<'_>, pending: PendingUrl<'_>) -> PendingAction {
        if pending.retries == 0 {
            eprintln!(
                "waiting for the page at {} to be completed (at most {} s)",
                pending.url.host,
                self.wait.as_secs()
            );
        }
        loop {
            let waited = pending.since.elapsed();
            if waited >= self.wait {
                if pending.kind == PendingKind::Required {
                    eprintln!("waited {} s for `{}`; calling again", waited.as_secs(), one_line(ctx.key));
                    return PendingAction::Retry;
                }
                eprintln!("gave up waiting for `{}` after {} s; cancelling", one_line(ctx.key), waited.as_secs());
                return PendingAction::Cancel;
            }
            tokio::time::sleep((self.wait - waited).min(Duration::from_millis(500))).await;
            if pending.kind == PendingKind::InCall {
                // Back to the driver, which calls again with `retries` + 1.
                return PendingAction::Retry;
            }
        }
    }
}

impl Responder for Scripted {
    async fn form(&mut self, ctx: AskContext<'_>, message: &str, schema: &RequestedSchema) -> ElicitResult {
        eprintln!(
            "{} asks ({}) [{}]:\n{}",
            one_line(ctx.server),
            one_line(ctx.key),
            one_line(&self.endpoint),
            indented(message)
        );
        match self.answer(ctx.key) {
            Some(ElicitResult { action: ElicitAction::Accept, content }) => {
                // Defaults stand for what an interactive user would have left pre-filled.
                ElicitResult::accept(with_defaults(schema, &content.unwrap_or_default()))
            }
            Some(other) => other,
            None => {
                self.unpresented = Some("the answers file has no answer for it".to_owned());
                ElicitResult::cancel()
            }
        }
    }

    async fn url(&mut self, ctx: AskContext<'_>, message: &str, url: &CheckedUrl) -> ElicitAction {
        eprintln!(
            "{} asks ({}) to open {} [{}]:\n{}",
            one_line(ctx.server),
            one_line(ctx.key),
            url.url,
            one_line(&self.endpoint),
            indented(message)
        );
        for warning in &url.warnings {
            eprintln!("warning: {}", one_line(&warning.to_string()));
        }
        let action = match self.answer(ctx.key) {
            Some(answer) => answer.action,
            None => {
                self.unpresented = Some("the answers file has no answer for it".to_owned());
                return ElicitAction::Cancel;
            }
        };
        if action != ElicitAction::Accept {
            return action;
        }
        if let Err(error) = browser::open(self.browser.as_deref(), url).await {
            // Consent stands: the user can open it elsewhere (SSH, containers).
            eprintln!("could not start a browser ({error}); open this page yourself: {}", url.url);
        }
        ElicitAction::Accept
    }

    async fn pending(&mut self, ctx: AskContext<'_>, pending: PendingUrl<'_>) -> PendingAction {
        if pending.kind != PendingKind::Reissued {
            return self.await_completion(ctx, pending).await;
        }
        let waited = pending.since.elapsed();
        if waited >= self.wait {
            eprintln!("gave up waiting for `{}` after {} s; cancelling", one_line(ctx.key), waited.as_secs());
            return PendingAction::Cancel;
        }
        let delay = browser::backoff(pending.retries).min(self.wait - waited);
        eprintln!("waiting for the page at {} to be completed (retry in {} s)", pending.url.host, delay.as_secs_f32());
        tokio::time::sleep(delay).await;
        PendingAction::Retry
    }

    fn notice(&mut self, ctx: AskContext<'_>, text: &str) {
        eprintln!("{} ({}): {}", one_line(ctx.server), one_line(ctx.key), one_line(text));
    }

    fn unpresented(&mut self) -> Option<String> {
        self.unpresented.take()
    }

    async fn task_waiting(&mut self, wait: elicit_runtime::client::TaskWait<'_>) -> elicit_runtime::client::TaskAction {
        self.tasks.unattended(wait).await
    }
}
