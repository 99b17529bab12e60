//! `group_booking`: the long-running tool of the showcase. It checks availability for a group
//! for a while (reporting progress), asks the person to pick a departure, then holds the seats.
//! One handler: for a client that declares the Tasks extension the call becomes a task when the
//! check starts (the pick is then the task's input request); for any other client it is an
//! ordinary Multi Round-Trip call (the check runs once, in `once`, whatever the rounds replay).

use std::time::Duration;

use elicit_runtime::Elicit;
use elicit_runtime::server::{Answer, Flow, FlowError};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject};
use serde_json::{Value, json};

use super::new_reference;

/// Which departure should we hold for your group?
#[derive(Elicit, Debug, Clone, PartialEq)]
pub struct GroupChoice {
    /// The departure to hold seats on
    #[elicit(title = "Departure")]
    pub departure: Departure,
}

/// The departures of the day.
#[derive(Elicit, Debug, Clone, Copy, PartialEq, Eq)]
#[elicit(rename_all = "lowercase")]
pub enum Departure {
    /// Early flight.
    #[elicit(title = "Morning, 07:40 (EUR 89 each)")]
    Morning,
    /// Midday flight.
    #[elicit(title = "Afternoon, 13:15 (EUR 119 each)")]
    Afternoon,
    /// Late flight.
    #[elicit(title = "Evening, 20:05 (EUR 74 each)")]
    Evening,
}

impl Departure {
    fn name(self) -> &'static str {
        match self {
            Departure::Morning => "morning",
            Departure::Afternoon => "afternoon",
            Departure::Evening => "evening",
        }
    }
}

/// How long each availability check takes.
const CHECK_STEP: Duration = Duration::from_millis(400);

/// The input schema: `travellers` (2 to 40), `to` (an IATA code), `checks` (how many airlines to
/// ask, 1 to 20: the length of the long part).
pub fn group_schema() -> std::sync::Arc<JsonObject> {
    let schema = json!({"type": "object", "properties": {
        "travellers": {"type": "integer", "minimum": 2, "maximum": 40},
        "to": {"type": "string", "minLength": 3, "maxLength": 3},
        "checks": {"type": "integer", "minimum": 1, "maximum": 20}}});
    match schema {
        Value::Object(schema) => std::sync::Arc::new(schema),
        _ => std::sync::Arc::default(),
    }
}

fn text(message: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(message.into())])
}

/// `group_booking`: checks availability (long, with progress; stops when cancelled), asks for a
/// departure, holds the seats under a reference minted once.
pub async fn group_booking(flow: Flow) -> Result<CallToolResult, FlowError> {
    let arguments = flow.arguments();
    let travellers = arguments.get("travellers").and_then(Value::as_u64).unwrap_or(6).clamp(2, 40);
    let to = arguments.get("to").and_then(Value::as_str).unwrap_or("LIS").to_uppercase();
    let checks = arguments.get("checks").and_then(Value::as_u64).unwrap_or(5).clamp(1, 20);
    flow.background().await;
    let checked = flow
        .once("availability", || async {
            for done in 1..=checks {
                tokio::select! {
                    () = tokio::time::sleep(CHECK_STEP) => {}
                    () = flow.cancelled() => return Ok(false),
                }
                let message = format!("checked {done} of {checks} airlines for {travellers} seats to {to}");
                let _ = flow.progress(done as f64, Some(checks as f64), Some(&message)).await;
            }
            Ok::<_, FlowError>(true)
        })
        .await?;
    if !checked {
        return Ok(text("Group booking cancelled while checking availability."));
    }
    Ok(match flow.form::<GroupChoice>("departure").await? {
        Answer::Accepted(choice) => {
            let reference = flow.once("reference", || async { new_reference() }).await?;
            text(format!(
                "Held {travellers} seats to {to} on the {} departure, reference {reference}.",
                choice.departure.name()
            ))
        }
        Answer::Declined => text("No seats held: you declined the departures offered."),
        Answer::Cancelled => text("Group booking cancelled at the choice of departure."),
    })
}
