//! Regressions found by the cargo-fuzz targets of `fuzz/` (see `scripts/fuzz.sh`), each reduced to
//! the input that showed it. Findings inside one runtime module are tested in that module instead
//! (`client::url_check`: the length cap on the normalised URL).

#![allow(clippy::unwrap_used, clippy::panic, reason = "a test reports a failure by panicking")]

use std::collections::{BTreeSet, HashSet};

use chrono::{DateTime, Utc};
use elicit_runtime::Elicit;
use elicit_runtime::client::form;
use elicit_runtime::server::{Engine, Flow, FlowError, Outcome, Request};
use elicit_runtime::state::{INVALID_STATE_MESSAGE, KeyRing};
use serde_json::{Map, Value, json};

/// Pick your extras.
#[derive(Elicit, Debug, Clone, PartialEq)]
struct Extras {
    #[elicit(min_items = 2)]
    ordered: BTreeSet<Extra>,
    #[elicit(min_items = 2, max_items = 3)]
    hashed: Option<HashSet<Extra>>,
}

#[derive(Elicit, Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[elicit(rename_all = "lowercase")]
enum Extra {
    Legroom,
    Meal,
    Lounge,
}

fn parse(content: Value) -> Result<Extras, String> {
    Extras::from_content(content.as_object().unwrap()).map_err(|e| e.to_string())
}

/// `typed_content`: `["lounge", "lounge"]` has the two items `min_items = 2` asks for, but makes a
/// set of one; it parsed, and the value's own content then failed its schema. A set's `min_items`
/// counts different choices.
#[test]
fn a_set_counts_different_choices_toward_min_items() {
    assert_eq!(
        parse(json!({"ordered": ["lounge", "lounge"]})),
        Err("`ordered` must have at least 2 different items selected".to_owned())
    );
    assert_eq!(
        parse(json!({"ordered": ["meal", "legroom"], "hashed": ["meal", "meal", "meal"]})),
        Err("`hashed` must have at least 2 different items selected".to_owned())
    );
    // Repeats beyond the minimum are harmless, and the array length still meets `max_items`.
    let parsed = parse(json!({"ordered": ["meal", "legroom", "meal"], "hashed": ["meal", "lounge", "meal"]})).unwrap();
    assert_eq!(parsed.ordered, BTreeSet::from([Extra::Legroom, Extra::Meal]));
    assert!(parse(json!({"ordered": ["meal", "legroom"], "hashed": ["meal", "lounge", "meal", "meal"]})).is_err());
    // Whatever parses writes content its own schema accepts, and that parses back to it.
    let written = parsed.to_content();
    assert_eq!(form::validate(Extras::requested_schema(), &written), Ok(()));
    assert_eq!(Extras::from_content(&written), Ok(parsed));
}

/// When did it happen?
#[derive(Elicit, Debug, Clone, PartialEq)]
struct Moment {
    at: DateTime<Utc>,
}

/// `typed_content`: `0000-01-01T00:44:54+15:59` is a valid date-time, but in UTC it falls in the
/// year -1, and the UTC text written for it (`-0001-12-31T08:45:54Z`) was no date-time at all, so
/// the parsed value's content failed its own schema. Such an instant is written with an offset that
/// keeps a four-digit year.
#[test]
fn a_utc_instant_before_the_year_0000_writes_content_that_parses_back() {
    for (answer, written) in [
        ("0000-01-01T00:44:54+15:59", "0000-01-01T08:44:54+23:59"),
        ("0000-01-01T00:00:00.5+00:01", "0000-01-01T23:58:00.500+23:59"),
        ("9999-12-31T23:30:00-01:00", "9999-12-31T00:31:00-23:59"),
        ("2026-07-28T09:30:00+02:00", "2026-07-28T07:30:00Z"),
    ] {
        let parsed = Moment::from_content(json!({"at": answer}).as_object().unwrap()).unwrap();
        let content = parsed.to_content();
        assert_eq!(content["at"], json!(written), "{answer}");
        assert_eq!(form::validate(Moment::requested_schema(), &content), Ok(()), "{answer}");
        assert_eq!(Moment::from_content(&content), Ok(parsed), "{answer}");
    }
}

/// Your name.
#[derive(Elicit, Debug)]
struct Name {
    name: String,
}

async fn two_forms(flow: Flow) -> Result<String, FlowError> {
    flow.form::<Name>("first").await?;
    flow.form::<Name>("second").await?;
    Ok("done".to_owned())
}

/// `input_responses` (engine capped at 1 KiB so fuzz-sized answers reach the cap): the state
/// carries the answers so far, so a long answer, or keys the form never asked for, made it too
/// large to seal, and the engine answered `-32603`, an internal error, for the client's own
/// oversized input. It is `-32602` now, and the client can retry with a shorter answer; keys the
/// form never asked for are dropped before the state is sealed, so they no longer reach the cap.
#[tokio::test]
async fn answers_too_large_to_carry_are_invalid_params() {
    let engine = Engine::builder("fuzz-regressions", KeyRing::generate()).max_state_len(1024).build();
    let meta = json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
    let meta: &Map<String, Value> = meta.as_object().unwrap();
    let first = Request::new("tools/call", "two_forms").meta(Some(meta));
    let Ok(Outcome::InputRequired(asked)) = engine.run(&first, two_forms).await else { panic!("the first round asks") };
    let state = asked.request_state.as_deref();
    let answers = json!({"first": {"action": "accept", "content": {"name": "A".repeat(2_000)}}});
    let error = engine.run(&first.input_responses(Some(&answers)).request_state(state), two_forms).await.unwrap_err();
    assert_eq!(error.code, -32602, "{error:?}");
    assert_ne!(error.message, INVALID_STATE_MESSAGE);
    assert!(error.message.contains("1024 characters"), "{}", error.message);
    let unasked = json!({"first": {"action": "accept", "content": {"name": "Ada", "unasked": "x".repeat(2_000)}}});
    let dropped = engine.run(&first.input_responses(Some(&unasked)).request_state(state), two_forms).await;
    assert!(matches!(dropped, Ok(Outcome::InputRequired(_))), "{dropped:?}");
    let answers = json!({"first": {"action": "accept", "content": {"name": "Ada"}}});
    let retry = first.input_responses(Some(&answers)).request_state(state);
    assert!(matches!(engine.run(&retry, two_forms).await, Ok(Outcome::InputRequired(_))));
}
