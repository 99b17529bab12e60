//! What a client sends back: `wire::parse_input_responses`, `ElicitResult::from_json`, and engine
//! rounds of a handler asking through a form, a URL and sampling.
//!
//! Input that is JSON is used as sent: its answers are parsed one by one, and it is replayed as
//! `inputResponses` (an array: one element per round, each with the state the previous round
//! returned). Other input drives a generator of plausible rounds instead: answers keyed like the
//! handler's asks, with form content near the edges of the contact form's schema.
//!
//! Every round must answer `-32602` or a valid outcome; a parsed answer must survive the wire.
//! Some generated contact answers carry keys the form does not define, and some completing rounds
//! a summary too large to record: a round answers what the same answers without the unknown keys
//! answer (they are dropped before anything is stored), and a round refused as too large to
//! record leaves nothing behind (the same state with a small summary still runs).

#![no_main]

use arbitrary::{Result, Unstructured};
use elicit_fuzz::engine::{self, Call};
use elicit_fuzz::forms::Contact;
use elicit_fuzz::generate;
use elicit_runtime::Elicit;
use elicit_runtime::server::Outcome;
use elicit_runtime::wire::{ElicitResult, parse_input_responses};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};

/// Rounds per input: enough to reach the invalid-answer limit and a completed payment.
const MAX_ROUNDS: usize = 6;

fuzz_target!(|data: &[u8]| {
    let rounds = match elicit_fuzz::json(data) {
        Some(value) => {
            parse_answers(&value);
            match value {
                Value::Array(rounds) => rounds.into_iter().take(MAX_ROUNDS).collect(),
                other => vec![other],
            }
        }
        None => match generated_rounds(&mut Unstructured::new(data)) {
            Ok(rounds) => rounds,
            Err(_) => return,
        },
    };
    replay(&rounds);
});

fn parse_answers(value: &Value) {
    let parsed = parse_input_responses(Some(value));
    assert_eq!(parsed.is_ok(), value.is_object(), "inputResponses is accepted exactly when it is an object");
    let answers: Vec<&Value> = match parsed {
        Ok(Some(map)) => map.values().collect(),
        _ => vec![value],
    };
    for answer in answers.into_iter().chain(value.as_array().into_iter().flatten()) {
        if let Ok(result) = ElicitResult::from_json(answer) {
            assert_eq!(
                ElicitResult::from_json(&result.to_json()).as_ref(),
                Ok(&result),
                "an answer does not survive the wire"
            );
        }
    }
}

fn generated_rounds(u: &mut Unstructured<'_>) -> Result<Vec<Value>> {
    let count = u.int_in_range(1usize..=MAX_ROUNDS)?;
    let mut rounds = Vec::with_capacity(count);
    for _ in 0..count {
        if u.ratio(1u8, 16)? {
            rounds.push(generate::any_json(u, 2)?);
            continue;
        }
        let mut responses = Map::new();
        if u.ratio(3u8, 4)? {
            let mut contact = generate::elicit_answer(u, Some(Contact::requested_schema()))?;
            if u.ratio(1u8, 8)?
                && let Some(content) = contact.get_mut("content").and_then(Value::as_object_mut)
            {
                for i in 0..u.int_in_range(1usize..=64)? {
                    content.insert(format!("unknown{i}"), Value::from("x".repeat(64)));
                }
            }
            responses.insert("contact".into(), contact);
        }
        if u.ratio(3u8, 4)? {
            responses.insert("payment".into(), generate::elicit_answer(u, None)?);
        }
        if u.ratio(1u8, 2)? {
            let sample = match u.int_in_range(0u8..=7)? {
                0 => Value::Object(Map::new()),
                1 => summary(&"y".repeat(u.int_in_range(512usize..=4096)?)),
                _ => generate::any_json(u, 2)?,
            };
            responses.insert("summary".into(), sample);
        }
        if u.ratio(1u8, 8)? {
            responses.insert(generate::text(u)?, generate::elicit_answer(u, None)?);
        }
        rounds.push(Value::Object(responses));
    }
    Ok(rounds)
}

/// A sampling result whose text is `text`.
fn summary(text: &str) -> Value {
    json!({"role": "assistant", "model": "m", "content": {"type": "text", "text": text}})
}

/// `responses` without the keys the contact form does not define, when it had any.
fn without_unknown_keys(responses: &Value) -> Option<Value> {
    let mut stripped = responses.clone();
    let content = stripped.get_mut("contact")?.get_mut("content")?.as_object_mut()?;
    let before = content.len();
    content.retain(|name, _| Contact::requested_schema().property(name).is_some());
    (content.len() < before).then_some(stripped)
}

/// The same outcome, as far as a client sees it: the same result, the same asks, or an error of
/// the same code.
fn assert_same(first: &engine::Round, again: &engine::Round) {
    match (first, again) {
        (Ok(Outcome::Complete(a)), Ok(Outcome::Complete(b))) => assert_eq!(a, b),
        (Ok(Outcome::InputRequired(a)), Ok(Outcome::InputRequired(b))) => {
            assert_eq!(a.input_requests, b.input_requests)
        }
        (Err(a), Err(b)) => assert_eq!(a.code, b.code, "{a:?} / {b:?}"),
        _ => panic!("unknown keys changed the outcome: {first:?} with them, {again:?} without"),
    }
}

fn replay(rounds: &[Value]) {
    let engine = engine::engine();
    let call = Call::default();
    // Answers to questions never asked, with no state.
    if let Some(first) = rounds.first() {
        engine::check_round(&engine::run(&engine, &call, Some(first), None));
    }
    // The honest sequence: each round echoes the state the previous one returned.
    let opening = engine::run(&engine, &call, None, None);
    engine::check_round(&opening);
    let mut state = engine::next_state(&opening);
    engine::pay(&engine, &opening);
    for (i, responses) in rounds.iter().enumerate() {
        let Some(token) = state else { break };
        let round = engine::run(&engine, &call, Some(responses), Some(&token));
        engine::check_round(&round);
        assert!(!engine::refused_state(&round), "the engine refused its own state");
        if let Some(stripped) = without_unknown_keys(responses) {
            assert_same(&round, &engine::run(&engine, &call, Some(&stripped), Some(&token)));
        }
        if matches!(&round, Err(error) if error.message.contains("too large to record")) {
            let mut small = responses.clone();
            if let Some(answers) = small.as_object_mut() {
                answers.insert("summary".into(), summary("short"));
            }
            let retried = engine::run(&engine, &call, Some(&small), Some(&token));
            engine::check_round(&retried);
            assert!(
                !matches!(&retried, Err(error) if error.message == elicit_runtime::server::FLOW_CONFLICT),
                "a round refused as too large to record left a record behind"
            );
        }
        // Pay on every other round: the step is seen both pending and completed.
        if i % 2 == 1 {
            engine::pay(&engine, &round);
        }
        state = engine::next_state(&round);
    }
}
