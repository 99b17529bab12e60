//! Opening attacker-controlled `requestState` text, directly and through the engine.
//!
//! The first byte picks a mode (seeds spell it as an ASCII digit):
//!
//! - `0` + text: [`StateSealer::open`] of the text; every failure shows the one shared message.
//! - `1` + lag + payload length + payload + edits: a token sealed here under each envelope version
//!   (1, XChaCha20-Poly1305; 2, AES-256-GCM-SIV), edited (bit flips, insertions, deletions,
//!   truncation, substitutions), then opened `lag * 5` seconds later by a sealer that seals the
//!   other version (every version opens). An untouched token opens to its payload exactly until it
//!   expires; any edit fails; another binding always fails.
//! - `2` + state + `\n` + inputResponses: one engine round with both as sent (the responses parsed
//!   as JSON when they parse, else sent as a JSON string). The seeds carry valid engine states.
//! - `3` + edits + `\n` + inputResponses: an engine round whose state is a genuine one, edited.
//!
//! The committed `open-*` and `engine-round*` seeds were sealed with version 1 and the engine now
//! seals version 2, so modes 0, 2 and 3 reach both versions too.
//!
//! Engine rounds must answer `-32602` or a valid outcome, and a refused state is reported with
//! the shared message only.

#![no_main]

use elicit_fuzz::engine::{self, Call};
use elicit_runtime::state::{Binding, EnvelopeVersion, INVALID_STATE_MESSAGE, StateErrorKind};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use std::time::Duration;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    match mode % 4 {
        0 => open_text(rest),
        1 => tamper(rest),
        2 => engine_round(rest),
        _ => engine_tampered(rest),
    }
});

fn open_text(rest: &[u8]) {
    let token = String::from_utf8_lossy(rest);
    let sealer = engine::sealer();
    let binding = engine::binding();
    let opened = sealer.open(&binding, &token, engine::t0());
    if let Err(error) = &opened {
        assert_eq!(error.to_string(), INVALID_STATE_MESSAGE, "{:?}", error.kind());
        assert_ne!(error.kind(), StateErrorKind::PayloadTooLarge);
    }
    // A stricter cap refuses before decoding, and never opens more than the default does.
    let strict = engine::sealer().with_max_token_len(96);
    if let Ok(payload) = strict.open(&binding, &token, engine::t0()) {
        assert_eq!(opened.as_deref().ok(), Some(payload.as_slice()));
    }
}

/// One edit of a token's text, three bytes: kind, position, value.
fn apply_edits(token: &str, edits: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut bytes = token.as_bytes().to_vec();
    for edit in edits.chunks_exact(3) {
        let (kind, value) = (edit[0], edit[2]);
        let at = usize::from(edit[1]) * bytes.len().max(1) / 256;
        match kind % 5 {
            0 if at < bytes.len() => bytes[at] ^= 1 << (value % 8),
            1 => bytes.insert(at.min(bytes.len()), value),
            2 if at < bytes.len() => {
                bytes.remove(at);
            }
            3 => bytes.truncate(at),
            4 if at < bytes.len() => bytes[at] = ALPHABET[usize::from(value % 64)],
            _ => {}
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

fn tamper(rest: &[u8]) {
    let [lag, len, rest @ ..] = rest else { return };
    let (payload, edits) = rest.split_at(usize::from(*len).min(rest.len()));
    for (seals, opens) in [(EnvelopeVersion::V1, EnvelopeVersion::V2), (EnvelopeVersion::V2, EnvelopeVersion::V1)] {
        tamper_version(seals, opens, *lag, payload, edits);
    }
}

fn tamper_version(seals: EnvelopeVersion, opens: EnvelopeVersion, lag: u8, payload: &[u8], edits: &[u8]) {
    let sealer = engine::sealer().with_sealing_version(seals);
    let opener = engine::sealer().with_sealing_version(opens);
    let binding = engine::binding();
    let token = sealer.seal(&binding, payload, engine::t0()).expect("a small payload seals");
    let edited = apply_edits(&token, edits);
    let elapsed = Duration::from_secs(u64::from(lag) * 5);
    let opened = opener.open(&binding, &edited, engine::t0() + elapsed);
    match (edited == token, elapsed < sealer.ttl()) {
        (true, true) => assert_eq!(opened.as_deref().ok(), Some(payload), "a genuine token must open"),
        (true, false) => assert_eq!(opened.map_err(|e| e.kind()), Err(StateErrorKind::Expired)),
        // The encoding is canonical (unpadded, no stray bits): other text is never the same token.
        (false, _) => assert!(opened.is_err(), "edited token {edited:?} (from {token:?}) opened"),
    }
    for other in [Binding { principal: None, ..binding }, Binding { name: "cancel_trip", ..binding }] {
        let error = opener.open(&other, &token, engine::t0()).expect_err("another binding never opens");
        assert_eq!(error.kind(), StateErrorKind::Forged);
    }
}

fn responses_of(bytes: &[u8]) -> Option<Value> {
    if bytes.is_empty() {
        return None;
    }
    Some(elicit_fuzz::json(bytes).unwrap_or_else(|| Value::String(String::from_utf8_lossy(bytes).into_owned())))
}

fn split_line(rest: &[u8]) -> (&[u8], &[u8]) {
    match rest.iter().position(|&b| b == b'\n') {
        Some(at) => (&rest[..at], &rest[at + 1..]),
        None => (rest, &[]),
    }
}

fn engine_round(rest: &[u8]) {
    let (state, responses) = split_line(rest);
    let state = String::from_utf8_lossy(state);
    let responses = responses_of(responses);
    let engine = engine::engine();
    let round = engine::run(&engine, &Call::default(), responses.as_ref(), Some(&state));
    engine::check_round(&round);
}

fn engine_tampered(rest: &[u8]) {
    let (edits, responses) = split_line(rest);
    let responses = responses_of(responses);
    let engine = engine::engine();
    let call = Call::default();
    let first = engine::run(&engine, &call, None, None);
    let token = engine::next_state(&first).expect("the first round asks");
    let edited = apply_edits(&token, edits);
    let round = engine::run(&engine, &call, responses.as_ref(), Some(&edited));
    engine::check_round(&round);
    if edited != token {
        assert!(engine::refused_state(&round), "an edited state was accepted: {round:?}");
    } else {
        assert!(!engine::refused_state(&round), "a genuine state was refused");
    }
}
