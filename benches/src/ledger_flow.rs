//! The flow whose bookkeeping `benches/store.rs` (criterion) and `ledger-cost` (per iteration, on
//! two versions of the engine) measure: a form, a `once`, a second form. Both include this file
//! with `#[path]`, not through the library, so that scripts/ledger-cost.sh can copy it with
//! `ledger-cost.rs` into an older checkout, whose library does not have it.

use elicit_runtime::Elicit;
use elicit_runtime::server::{Answer, Flow, FlowError, Outcome};
use serde_json::{Map, Value, json};

/// What is your name?
#[derive(Elicit, Debug)]
pub(crate) struct Name {
    /// Your name
    pub(crate) name: String,
}

/// Go on?
#[derive(Elicit, Debug)]
pub(crate) struct Sure {
    /// Tick to go on
    pub(crate) sure: bool,
}

/// A form, a `once`, a second form.
pub(crate) async fn with_once(flow: Flow) -> Result<String, FlowError> {
    let Answer::Accepted(name) = flow.form::<Name>("who").await? else { return Ok("no name".into()) };
    let reference = flow.once("reference", || async { Ok(format!("BK-{}", name.name.len())) }).await?;
    let _ = flow.form::<Sure>("sure").await?;
    Ok(format!("{} {reference}", name.name))
}

/// The `_meta` of every round: protocol 2026-07-28, form elicitation declared.
pub(crate) fn meta() -> Map<String, Value> {
    let mut meta = Map::new();
    meta.insert("io.modelcontextprotocol/protocolVersion".into(), json!("2026-07-28"));
    meta.insert("io.modelcontextprotocol/clientCapabilities".into(), json!({"elicitation": {"form": {}}}));
    meta
}

/// The state an asking round sent.
#[allow(clippy::panic, reason = "a bench stops loudly when a round is not what it measures")]
pub(crate) fn asked(outcome: Outcome<String>) -> String {
    match outcome {
        Outcome::InputRequired(asked) => asked.request_state.expect("a state"),
        Outcome::Complete(text) => panic!("expected an ask, got {text}"),
    }
}
