//! What a client sends back: `wire::parse_input_responses`, `ElicitResult::from_json`, and engine
//! rounds of a handler asking through a form, a URL and sampling.
//!
//! Input that is JSON is used as sent: its answers are parsed one by one, and it is replayed as
//! `inputResponses` (an array: one element per round, each with the state the previous round
//! returned). Other input drives a generator of plausible rounds instead: answers keyed like the
//! handler's asks, with form content near the edges of the contact form's schema.
//!
//! Every round must answer `-32602` or a valid outcome; a parsed answer must survive the wire.

#![no_main]

use arbitrary::{Result, Unstructured};
use elicit_fuzz::engine::{self, Call};
use elicit_fuzz::forms::Contact;
use elicit_fuzz::generate;
use elicit_runtime::Elicit;
use elicit_runtime::wire::{ElicitResult, parse_input_responses};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};

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
            responses.insert("contact".into(), generate::elicit_answer(u, Some(Contact::requested_schema()))?);
        }
        if u.ratio(3u8, 4)? {
            responses.insert("payment".into(), generate::elicit_answer(u, None)?);
        }
        if u.ratio(1u8, 2)? {
            let sample = if u.ratio(7u8, 8)? { generate::any_json(u, 2)? } else { Value::Object(Map::new()) };
            responses.insert("summary".into(), sample);
        }
        if u.ratio(1u8, 8)? {
            responses.insert(generate::text(u)?, generate::elicit_answer(u, None)?);
        }
        rounds.push(Value::Object(responses));
    }
    Ok(rounds)
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
        // Pay on every other round: the step is seen both pending and completed.
        if i % 2 == 1 {
            engine::pay(&engine, &round);
        }
        state = engine::next_state(&round);
    }
}
