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

/// Answers from a file: key -> an `ElicitResult`-shaped answer. An ask is keyed the same way in
/// every era: by the server's key where the protocol gives one (a 2026-07-28 input request's key,
/// a task's, without the `#N` a re-ask adds to it), else by its place in the call, `#1` for the
/// first ask shown, `#2` for the next (2025-era pushes have no keys of their own); `"*"` answers
/// any ask no other key names.
pub(crate) struct Scripted {
    answers: Map<String, Value>,
    /// Forms and pages shown so far in this call: the next ask is `#{asked + 1}`.
    asked: usize,
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
        Scripted { answers, asked: 0, browser, wait, endpoint, tasks: Default::default(), unpresented: None }
    }

    /// The answer to the next ask shown, whose key (as the driver gives it) is `key`.
    fn answer(&mut self, key: &str) -> Option<ElicitResult> {
        self.asked += 1;
        let place = format!("#{}", self.asked);
        let answer = keys(key).into_iter().chain([place.as_str(), WILDCARD]).find_map(|key| self.answers.get(key))?;
        // Checked by `load`.
        ElicitResult::from_json(answer).ok()
    }
}

/// The keys an answers file may give an ask the driver keys `key`, most specific first: the key
/// itself, then without the `#N` a re-ask adds (`who#2` is `who`). The driver's own numbering of
/// 2025-era pushes (`#N`, counting every push) is left to the place in the call.
fn keys(key: &str) -> Vec<&str> {
    if key.starts_with('#') {
        return Vec::new();
    }
    let mut keys = vec![key];
    if let Some((base, n)) = key.rsplit_once('#')
        && !base.is_empty()
        && !n.is_empty()
        && n.bytes().all(|b| b.is_ascii_digit())
    {
        keys.push(base);
    }
    keys
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
