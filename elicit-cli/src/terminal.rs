//! The interactive renderer: forms, URL consent and pending controls in the terminal.
//!
//! The user always sees which server asks and why; every form can be declined or cancelled
//! (Escape or Ctrl-C cancel) at any prompt; answers are checked as they are entered and reviewed
//! before anything is sent; a URL is shown in full, host emphasised, and opened only after consent.

use std::io::IsTerminal;
use std::time::Duration;

use elicit_runtime::client::form::{check_value, validate};
use elicit_runtime::client::{AskContext, CheckedUrl, PendingAction, PendingKind, PendingUrl, Responder};
use elicit_runtime::schema::{
    EnumOption, MultiSelectSchema, PrimitiveSchema, Property, RequestedSchema, SingleSelectSchema,
};
use elicit_runtime::wire::{ElicitAction, ElicitResult};
use inquire::error::InquireError;
use inquire::validator::Validation;
use inquire::{Confirm, MultiSelect, Select, Text};
use serde_json::{Map, Number, Value};

use crate::browser;
use crate::keys::{Key, read_key};
use crate::printable::{indented, one_line};

/// Renders input requests on the terminal.
pub(crate) struct Terminal {
    browser: Option<String>,
    wait: Duration,
    ansi: bool,
    endpoint: String,
    tasks: crate::tasks::StatusLine,
    /// Why the last request could not be shown, until the driver takes it.
    unpresented: Option<String>,
}

/// A prompt that ended without an answer.
enum Dismissed {
    /// The person dismissed it (Escape, Ctrl-C): their cancel.
    ByPerson,
    /// It could not be shown at all (no terminal): nobody answered.
    NoPrompt(String),
}

fn dismissed(error: InquireError) -> Dismissed {
    match error {
        InquireError::OperationCanceled | InquireError::OperationInterrupted => Dismissed::ByPerson,
        InquireError::NotTTY => Dismissed::NoPrompt("there is no terminal to ask in (use --answers FILE)".to_owned()),
        other => Dismissed::NoPrompt(format!("cannot prompt: {other}")),
    }
}

const NO_ANSWER: &str = "(no answer)";

/// The field's name as the user sees it (every server text goes through [`printable`](mod@crate::printable)).
fn title(property: &Property) -> String {
    one_line(property.schema.title().unwrap_or(&property.name)).into_owned()
}

fn label(property: &Property) -> String {
    let title = title(property);
    if property.required { format!("{title} *") } else { title }
}

/// Description plus the constraints the user must meet, as help under the prompt.
fn help(property: &Property) -> String {
    let mut parts: Vec<String> = property.schema.description().map(|d| one_line(d).into_owned()).into_iter().collect();
    match &property.schema {
        PrimitiveSchema::String(s) => {
            match (s.min_length, s.max_length) {
                (Some(min), Some(max)) if min == max => parts.push(format!("exactly {min} characters")),
                (Some(min), Some(max)) => parts.push(format!("{min} to {max} characters")),
                (Some(min), None) => parts.push(format!("at least {min} characters")),
                (None, Some(max)) => parts.push(format!("at most {max} characters")),
                (None, None) => {}
            }
            if let Some(format) = s.format {
                parts.push(match format {
                    elicit_runtime::schema::StringFormat::Date => "a date, YYYY-MM-DD".to_owned(),
                    elicit_runtime::schema::StringFormat::DateTime => {
                        "a date and time, YYYY-MM-DDThh:mm:ss+01:00".to_owned()
                    }
                    elicit_runtime::schema::StringFormat::Email => "an e-mail address".to_owned(),
                    elicit_runtime::schema::StringFormat::Uri => "a URI, such as https://example.com".to_owned(),
                });
            }
        }
        PrimitiveSchema::Number(n) => {
            let kind = if n.integer { "a whole number" } else { "a number" };
            match (&n.minimum, &n.maximum) {
                (Some(min), Some(max)) => parts.push(format!("{kind} from {min} to {max}")),
                (Some(min), None) => parts.push(format!("{kind}, at least {min}")),
                (None, Some(max)) => parts.push(format!("{kind}, at most {max}")),
                (None, None) => parts.push(kind.to_owned()),
            }
        }
        PrimitiveSchema::MultiSelect(m) => match (m.min_items, m.max_items) {
            (Some(min), Some(max)) => parts.push(format!("pick {min} to {max}")),
            (Some(min), None) => parts.push(format!("pick at least {min}")),
            (None, Some(max)) => parts.push(format!("pick at most {max}")),
            (None, None) => {}
        },
        _ => {}
    }
    if !property.required {
        parts.push("optional: leave empty to skip".to_owned());
    }
    parts.join(" · ")
}

/// A value as the user sees it; server defaults are server text too.
fn display(value: &Value) -> String {
    match value {
        Value::String(s) => one_line(s).into_owned(),
        Value::Array(items) => items.iter().map(display).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

/// An answer as the review shows it: a choice by its title, not its wire value.
fn shown(property: &Property, value: &Value) -> String {
    let title_of = |options: &[elicit_runtime::schema::EnumOption], v: &Value| -> String {
        match v.as_str().and_then(|v| options.iter().find(|o| o.value == v)) {
            Some(option) => one_line(option.title.as_deref().unwrap_or(&option.value)).into_owned(),
            None => display(v),
        }
    };
    match (&property.schema, value) {
        (PrimitiveSchema::SingleSelect(s), v) => title_of(&s.options, v),
        (PrimitiveSchema::MultiSelect(m), Value::Array(items)) => {
            items.iter().map(|v| title_of(&m.options, v)).collect::<Vec<_>>().join(", ")
        }
        _ => display(value),
    }
}

/// Asks for one field. `Ok(None)` = left empty (optional fields only).
fn ask_field(property: &Property, current: Option<&Value>) -> Result<Option<Value>, Dismissed> {
    let prompt = FieldPrompt { label: label(property), help: help(property), required: property.required };
    match &property.schema {
        PrimitiveSchema::String(_) | PrimitiveSchema::Number(_) => ask_text(&prompt, property, current),
        PrimitiveSchema::Boolean(_) if prompt.required => ask_yes_no(&prompt, current),
        PrimitiveSchema::Boolean(_) => ask_yes_no_or_nothing(&prompt, current),
        PrimitiveSchema::SingleSelect(s) => ask_one_of(&prompt, s, current),
        PrimitiveSchema::MultiSelect(m) => ask_some_of(&prompt, m, current),
    }
}

/// What every prompt of a field shows.
struct FieldPrompt {
    label: String,
    help: String,
    required: bool,
}

/// A string or number typed in, checked against the field as it is typed.
fn ask_text(prompt: &FieldPrompt, property: &Property, current: Option<&Value>) -> Result<Option<Value>, Dismissed> {
    let numeric = matches!(property.schema, PrimitiveSchema::Number(_));
    let to_value = move |input: &str| -> Result<Value, String> {
        if numeric {
            input.trim().parse::<Number>().map(Value::Number).map_err(|_| "must be a number".to_owned())
        } else {
            Ok(Value::String(input.to_owned()))
        }
    };
    let check = property.clone();
    let initial = current.map(display).unwrap_or_default();
    let answer = Text::new(&prompt.label)
        .with_initial_value(&initial)
        .with_help_message(&prompt.help)
        .with_validator(move |input: &str| {
            if input.is_empty() && !check.required {
                return Ok(Validation::Valid);
            }
            Ok(match to_value(input).and_then(|v| check_value(&check, &v).map_err(|e| e.to_string())) {
                Ok(()) => Validation::Valid,
                Err(reason) => Validation::Invalid(one_line(&reason).into_owned().into()),
            })
        })
        .prompt()
        .map_err(dismissed)?;
    if answer.is_empty() && !prompt.required {
        return Ok(None);
    }
    Ok(Some(to_value(&answer).map_err(Dismissed::NoPrompt)?))
}

/// A required boolean: yes or no.
fn ask_yes_no(prompt: &FieldPrompt, current: Option<&Value>) -> Result<Option<Value>, Dismissed> {
    let default = current.and_then(Value::as_bool).unwrap_or(false);
    let answer = Confirm::new(&prompt.label)
        .with_default(default)
        .with_help_message(&prompt.help)
        .prompt()
        .map_err(dismissed)?;
    Ok(Some(Value::Bool(answer)))
}

/// An optional boolean: yes, no, or no answer.
fn ask_yes_no_or_nothing(prompt: &FieldPrompt, current: Option<&Value>) -> Result<Option<Value>, Dismissed> {
    let options = vec!["Yes", "No", NO_ANSWER];
    let start = match current.and_then(Value::as_bool) {
        Some(true) => 0,
        Some(false) => 1,
        None => 2,
    };
    let answer = Select::new(&prompt.label, options)
        .with_starting_cursor(start)
        .with_help_message(&prompt.help)
        .prompt()
        .map_err(dismissed)?;
    Ok(match answer {
        "Yes" => Some(Value::Bool(true)),
        "No" => Some(Value::Bool(false)),
        _ => None,
    })
}

/// The title a choice is shown by.
fn option_title(option: &EnumOption) -> String {
    one_line(option.title.as_deref().unwrap_or(&option.value)).into_owned()
}

/// One choice of a single-select (or no answer, when optional).
fn ask_one_of(
    prompt: &FieldPrompt,
    select: &SingleSelectSchema,
    current: Option<&Value>,
) -> Result<Option<Value>, Dismissed> {
    let mut names: Vec<String> = select.options.iter().map(option_title).collect();
    if !prompt.required {
        names.push(NO_ANSWER.to_owned());
    }
    let start = current
        .and_then(Value::as_str)
        .and_then(|v| select.options.iter().position(|o| o.value == v))
        .unwrap_or(if prompt.required { 0 } else { select.options.len() });
    let answer = Select::new(&prompt.label, names)
        .with_starting_cursor(start)
        .with_help_message(&prompt.help)
        .raw_prompt()
        .map_err(dismissed)?;
    Ok(select.options.get(answer.index).map(|o| Value::String(o.value.to_string())))
}

/// Choices of a multi-select, their count checked as they are picked.
fn ask_some_of(
    prompt: &FieldPrompt,
    select: &MultiSelectSchema,
    current: Option<&Value>,
) -> Result<Option<Value>, Dismissed> {
    let names: Vec<String> = select.options.iter().map(option_title).collect();
    let chosen: Vec<usize> = current
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|v| v.as_str())
                .filter_map(|v| select.options.iter().position(|o| o.value == v))
                .collect()
        })
        .unwrap_or_default();
    let (min, max) = (select.min_items, select.max_items);
    let answer = MultiSelect::new(&prompt.label, names)
        .with_default(&chosen)
        .with_help_message(&prompt.help)
        .with_validator(move |picked: &[inquire::list_option::ListOption<&String>]| {
            let n = picked.len() as u64;
            Ok(match (min, max) {
                (Some(min), _) if n < min => Validation::Invalid(format!("pick at least {min}").into()),
                (_, Some(max)) if n > max => Validation::Invalid(format!("pick at most {max}").into()),
                _ => Validation::Valid,
            })
        })
        .raw_prompt()
        .map_err(dismissed)?;
    let values: Vec<Value> =
        answer.iter().filter_map(|o| select.options.get(o.index)).map(|o| Value::String(o.value.to_string())).collect();
    if values.is_empty() && !prompt.required && min.is_none() {
        return Ok(None);
    }
    Ok(Some(Value::Array(values)))
}

impl Terminal {
    /// A renderer opening pages with `browser` (or the system's opener) and waiting at most `wait`
    /// for a pending URL step.
    pub(crate) fn new(browser: Option<String>, wait: Duration, endpoint: String) -> Self {
        Terminal {
            browser,
            wait,
            ansi: std::io::stderr().is_terminal(),
            endpoint,
            tasks: Default::default(),
            unpresented: None,
        }
    }

    /// The person's answer to a form; `Err` when it could not be shown to them.
    fn form_blocking(
        &self,
        ctx: AskContext<'_>,
        message: &str,
        schema: &RequestedSchema,
    ) -> Result<ElicitResult, String> {
        eprintln!(
            "\n{} asks for information ({}) [{}]:\n{}\n",
            one_line(ctx.server),
            one_line(ctx.key),
            one_line(&self.endpoint),
            indented(message)
        );
        let start = Select::new("Answer this request?", vec!["Fill in the form", "Decline", "Cancel"]).prompt();
        match start.map_err(dismissed) {
            Ok("Fill in the form") => {}
            Ok("Decline") => return Ok(ElicitResult::decline()),
            Ok(_) | Err(Dismissed::ByPerson) => return Ok(ElicitResult::cancel()),
            Err(Dismissed::NoPrompt(reason)) => return Err(reason),
        }
        // Defaults are pre-filled; the user edits from there.
        let mut content: Map<String, Value> = Map::new();
        for property in &schema.properties {
            let current = property.schema.default_value();
            match ask_field(property, current.as_ref()) {
                Ok(Some(value)) => {
                    content.insert(property.name.to_string(), value);
                }
                Ok(None) => {}
                Err(Dismissed::ByPerson) => return Ok(ElicitResult::cancel()),
                Err(Dismissed::NoPrompt(reason)) => return Err(reason),
            }
        }
        loop {
            eprintln!("\nYour answers for {}:", one_line(ctx.server));
            for property in &schema.properties {
                let shown =
                    content.get(property.name.as_ref()).map_or_else(|| NO_ANSWER.to_owned(), |v| shown(property, v));
                eprintln!("  {}: {shown}", title(property));
            }
            let problems = validate(schema, &content).err();
            if let Some(errors) = &problems {
                eprintln!("  to fix before sending: {}", one_line(&errors.to_string()));
            }
            let choice =
                Select::new("Send these answers?", vec!["Send", "Change an answer", "Decline", "Cancel"]).prompt();
            match choice.map_err(dismissed) {
                Ok("Send") if problems.is_none() => return Ok(ElicitResult::accept(content)),
                Ok("Send") => eprintln!("Fix the answers above first."),
                Ok("Change an answer") => {
                    let titles: Vec<String> = schema.properties.iter().map(title).collect();
                    let picked = match Select::new("Which answer?", titles).raw_prompt().map_err(dismissed) {
                        Ok(picked) => picked,
                        Err(Dismissed::ByPerson) => continue,
                        Err(Dismissed::NoPrompt(reason)) => return Err(reason),
                    };
                    let Some(property) = schema.properties.get(picked.index) else { continue };
                    match ask_field(property, content.get(property.name.as_ref())) {
                        Ok(Some(value)) => {
                            content.insert(property.name.to_string(), value);
                        }
                        Ok(None) => {
                            content.remove(property.name.as_ref());
                        }
                        Err(Dismissed::ByPerson) => {}
                        Err(Dismissed::NoPrompt(reason)) => return Err(reason),
                    }
                }
                Ok("Decline") => return Ok(ElicitResult::decline()),
                Ok(_) | Err(Dismissed::ByPerson) => return Ok(ElicitResult::cancel()),
                Err(Dismissed::NoPrompt(reason)) => return Err(reason),
            }
        }
    }

    /// The person's consent to open a page; `Err` when it could not be asked.
    fn url_consent(&self, ctx: AskContext<'_>, message: &str, url: &CheckedUrl) -> Result<ElicitAction, String> {
        eprintln!(
            "\n{} asks you to open a page ({}) [{}]:\n{}\n",
            one_line(ctx.server),
            one_line(ctx.key),
            one_line(&self.endpoint),
            indented(message)
        );
        eprintln!("  {}", browser::highlighted(url, self.ansi));
        eprintln!("  host: {}", url.host);
        for warning in &url.warnings {
            eprintln!("  warning: {}", one_line(&warning.to_string()));
        }
        eprintln!();
        let choice =
            Select::new("Open this page in your browser?", vec!["Open in browser", "Decline", "Cancel"]).prompt();
        match choice.map_err(dismissed) {
            Ok("Open in browser") => Ok(ElicitAction::Accept),
            Ok("Decline") => Ok(ElicitAction::Decline),
            Ok(_) | Err(Dismissed::ByPerson) => Ok(ElicitAction::Cancel),
            Err(Dismissed::NoPrompt(reason)) => Err(reason),
        }
    }
}

impl Terminal {
    /// 2025 era: the server reports completion itself (the driver drops this future when it does),
    /// so there is nothing to retry inside a call; after a `-32042`, `r` calls again.
    async fn await_completion(&self, ctx: AskContext<'_>, pending: PendingUrl<'_>) -> PendingAction {
        let required = pending.kind == PendingKind::Required;
        if pending.retries == 0 {
            let retry = if required { "r to call again now, " } else { "" };
            eprintln!(
                "\r\nWaiting for {} to report the page at {} done. Press {retry}o to open it again, c to cancel the call.",
                one_line(ctx.server),
                pending.url.host
            );
        }
        loop {
            let waited = pending.since.elapsed();
            if waited >= self.wait {
                if required {
                    eprintln!("\r\nWaited {} s; calling again.", waited.as_secs());
                    return PendingAction::Retry;
                }
                eprintln!(
                    "\r\nGave up waiting for the page at {} after {} s; cancelling the call.",
                    pending.url.host,
                    waited.as_secs()
                );
                return PendingAction::Cancel;
            }
            // Short slices: the driver must see the completion notification promptly.
            let slice = (self.wait - waited).min(Duration::from_millis(300));
            let key = tokio::task::block_in_place(|| read_key(slice));
            // Reading the keyboard blocks; yield so the driver sees a completion that came meanwhile.
            tokio::task::yield_now().await;
            match key {
                Key::Retry if required => return PendingAction::Retry,
                Key::Retry => {}
                Key::Timeout if !required => return PendingAction::Retry,
                Key::Timeout => {}
                Key::Cancel => return PendingAction::Cancel,
                Key::OpenAgain => {
                    if let Err(error) = browser::open(self.browser.as_deref(), pending.url).await {
                        eprintln!(
                            "\r\nCould not start a browser ({error}). Open this page yourself:\r\n  {}",
                            pending.url.url
                        );
                    }
                }
            }
        }
    }
}

impl Responder for Terminal {
    async fn form(&mut self, ctx: AskContext<'_>, message: &str, schema: &RequestedSchema) -> ElicitResult {
        match tokio::task::block_in_place(|| self.form_blocking(ctx, message, schema)) {
            Ok(answer) => answer,
            Err(reason) => {
                self.unpresented = Some(reason);
                ElicitResult::cancel()
            }
        }
    }

    async fn url(&mut self, ctx: AskContext<'_>, message: &str, url: &CheckedUrl) -> ElicitAction {
        let action = match tokio::task::block_in_place(|| self.url_consent(ctx, message, url)) {
            Ok(action) => action,
            Err(reason) => {
                self.unpresented = Some(reason);
                return ElicitAction::Cancel;
            }
        };
        if action != ElicitAction::Accept {
            return action;
        }
        match browser::open(self.browser.as_deref(), url).await {
            Ok(()) => {
                eprintln!("Opened {} in your browser.", url.host);
                ElicitAction::Accept
            }
            Err(error) => {
                // Consent stands: the user opens it elsewhere (SSH, containers), and the step
                // stays pending until it is done or cancelled.
                eprintln!("Could not start a browser ({error}). Open this page yourself:\n  {}", url.url);
                ElicitAction::Accept
            }
        }
    }

    async fn pending(&mut self, ctx: AskContext<'_>, pending: PendingUrl<'_>) -> PendingAction {
        if pending.kind != PendingKind::Reissued {
            return self.await_completion(ctx, pending).await;
        }
        loop {
            let waited = pending.since.elapsed();
            if waited >= self.wait {
                eprintln!(
                    "\r\nGave up waiting for the page at {} after {} s; cancelling.",
                    pending.url.host,
                    waited.as_secs()
                );
                return PendingAction::Cancel;
            }
            let delay = browser::backoff(pending.retries).min(self.wait - waited);
            eprintln!(
                "\r\n{} says the page at {} is not finished yet ({} s so far). Press r to retry now, o to open it again, c to cancel; retrying in {} s.",
                one_line(ctx.server),
                pending.url.host,
                waited.as_secs(),
                delay.as_secs()
            );
            match tokio::task::block_in_place(|| read_key(delay)) {
                Key::Retry => {
                    eprintln!("\r\nRetrying now.");
                    return PendingAction::Retry;
                }
                Key::Timeout => return PendingAction::Retry,
                Key::Cancel => return PendingAction::Cancel,
                Key::OpenAgain => {
                    if let Err(error) = browser::open(self.browser.as_deref(), pending.url).await {
                        eprintln!("\r\nCould not open the page again: {error}");
                    }
                }
            }
        }
    }

    fn notice(&mut self, ctx: AskContext<'_>, text: &str) {
        eprintln!("{} ({}): {}", one_line(ctx.server), one_line(ctx.key), one_line(text));
    }

    fn unpresented(&mut self) -> Option<String> {
        self.unpresented.take()
    }

    async fn task_waiting(&mut self, wait: elicit_runtime::client::TaskWait<'_>) -> elicit_runtime::client::TaskAction {
        self.tasks.interactive(wait).await
    }
}
