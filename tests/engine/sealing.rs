//! Through [`Engine::run`], every way a `requestState` can be wrong —
//! tampered, truncated, garbage, empty, expired, replayed on another request, principal or
//! audience, sealed under an unknown key, oversized — ends in exactly JSON-RPC `-32602` with
//! exactly [`INVALID_STATE_MESSAGE`] (no oracle). Each case has its positive control: the same
//! state, untouched and on the right request, opens.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::{server, wait};

use std::time::Duration;

use elicit_runtime::server::Engine;
use elicit_runtime::state::KeyRing;
use serde_json::json;

use server::engine::{Call, answer_who, asked, assert_invalid_state, complete, greet};

const AUDIENCE: &str = "sealing-tests";

fn ring(keys: &[[u8; 32]]) -> KeyRing {
    KeyRing::new(keys.to_vec()).unwrap()
}

fn engine(keys: &[[u8; 32]]) -> Engine {
    Engine::builder(AUDIENCE, ring(keys)).build()
}

/// Round 1 of `greet` for `call`: the sealed state.
async fn first_state(engine: &Engine, call: &Call) -> String {
    asked(engine.run(&call.request(), greet).await).request_state.unwrap()
}

/// The retry of `call` answering Ada with `state` opens and completes.
async fn assert_opens(engine: &Engine, call: &Call, state: &str) {
    let retry = call.retry(answer_who("Ada"), Some(state));
    assert_eq!(complete(engine.run(&retry.request(), greet).await), "Hello, Ada!");
}

/// Whether the retry of `call` answering Ada with `state` is refused (as anything but complete).
async fn refuses(engine: &Engine, call: &Call, state: &str) -> bool {
    let retry = call.retry(answer_who("Ada"), Some(state));
    engine.run(&retry.request(), greet).await.is_err()
}

/// The retry of `call` answering Ada with `state` is refused with the one invalid-state error.
async fn refused(engine: &Engine, call: &Call, state: &str, case: &str) {
    let retry = call.retry(answer_who("Ada"), Some(state));
    assert_invalid_state(engine.run(&retry.request(), greet).await, case);
}

#[tokio::test]
async fn untouched_state_opens_on_its_own_request() {
    let keys = [server::raw_key()];
    let engine = engine(&keys);
    let call = Call::tool("greet");
    let state = first_state(&engine, &call).await;
    assert_opens(&engine, &call, &state).await;
    // A state is not single-use: the same retry opens again (the spec leaves at-most-once to
    // the server's own logic).
    assert_opens(&engine, &call, &state).await;
    // Another engine with the same keys and audience (another instance) opens it too.
    assert_opens(&self::engine(&keys), &call, &state).await;
}

#[tokio::test]
async fn every_single_bit_flip_is_refused() {
    let engine = engine(&[server::raw_key()]);
    let call = Call::tool("greet");
    let state = first_state(&engine, &call).await;
    assert_opens(&engine, &call, &state).await;
    let envelope = server::base64url_decode(&state).unwrap();
    assert_eq!(server::base64url(&envelope), state, "the test's base64url round-trips the token");
    // Version, key id, nonce, ciphertext and tag: every bit of the envelope matters.
    for byte in 0..envelope.len() {
        for bit in 0..8 {
            let mut flipped = envelope.clone();
            flipped[byte] ^= 1 << bit;
            let case = format!("bit {bit} of byte {byte} flipped");
            refused(&engine, &call, &server::base64url(&flipped), &case).await;
        }
    }
}

#[tokio::test]
async fn textual_tampering_is_refused() {
    let engine = engine(&[server::raw_key()]);
    let call = Call::tool("greet");
    let state = first_state(&engine, &call).await;
    assert_opens(&engine, &call, &state).await;
    // What the conformance suite sends.
    refused(&engine, &call, &format!("{state}-TAMPERED"), "`-TAMPERED` appended").await;
    // Every character replaced by another of the alphabet (the last one included, whose spare
    // bits must be canonical).
    for (i, c) in state.char_indices() {
        let other = if c == 'A' { 'B' } else { 'A' };
        let mut tampered = state.clone();
        tampered.replace_range(i..i + 1, &other.to_string());
        refused(&engine, &call, &tampered, &format!("character {i} replaced")).await;
    }
    // Alternative spellings of the same bytes are not the same token.
    refused(&engine, &call, &format!("{state}="), "padding added").await;
    refused(&engine, &call, &format!(" {state}"), "leading space").await;
    refused(&engine, &call, &format!("{state}\n"), "trailing newline").await;
    let standard = state.replace('-', "+").replace('_', "/");
    if standard != state {
        refused(&engine, &call, &standard, "standard alphabet").await;
    }
    refused(&engine, &call, &format!("{state}{state}"), "doubled").await;
}

#[tokio::test]
async fn every_truncation_is_refused() {
    let engine = engine(&[server::raw_key()]);
    let call = Call::tool("greet");
    let state = first_state(&engine, &call).await;
    assert_opens(&engine, &call, &state).await;
    for len in 0..state.len() {
        refused(&engine, &call, &state[..len], &format!("truncated to {len} characters")).await;
        refused(&engine, &call, &state[state.len() - len..], &format!("first {} characters cut", state.len() - len))
            .await;
    }
}

#[tokio::test]
async fn garbage_and_empty_states_are_refused() {
    let engine = engine(&[server::raw_key()]);
    let call = Call::tool("greet");
    let real = first_state(&engine, &call).await;
    assert_opens(&engine, &call, &real).await;
    let envelope_of_zeros = server::base64url(&vec![0u8; server::base64url_decode(&real).unwrap().len()]);
    let version_one_rest_random = {
        let mut bytes = server::raw_key().to_vec();
        bytes.extend_from_slice(&server::raw_key());
        bytes.extend_from_slice(&server::raw_key());
        bytes[0] = 1;
        server::base64url(&bytes)
    };
    let garbage = [
        "",
        " ",
        "null",
        "{}",
        "not a token",
        "AAAA",
        "AQ",
        "!!!!!!!!",
        "é",
        "\u{0}",
        "eyJsb2NhdGlvbiI6Ik5ldyBZb3JrIn0",
        envelope_of_zeros.as_str(),
        version_one_rest_random.as_str(),
    ];
    for state in garbage {
        refused(&engine, &call, state, &format!("garbage {state:?}")).await;
    }
}

#[tokio::test]
async fn expired_state_is_refused() {
    let keys = [server::raw_key()];
    // Expiry has one-second resolution: a state sealed with a 1 s lifetime dies once the next
    // whole second has begun. The engine reads the system clock, so wait (bounded) until it does.
    let short = Engine::builder(AUDIENCE, ring(&keys)).state_ttl(Duration::from_secs(1)).build();
    let call = Call::tool("greet");
    let state = first_state(&short, &call).await;
    let fresh = first_state(&engine(&keys), &call).await;
    wait::until_async(Duration::from_secs(10), "the 1 s state to expire", || refuses(&short, &call, &state)).await;
    refused(&short, &call, &state, "expired").await;
    // The expiry travels inside the token: an opener with a long lifetime refuses it as well.
    refused(&engine(&keys), &call, &state, "expired, opened by a long-lived engine").await;
    // Control: a state sealed with the default lifetime at the same time still opens.
    assert_opens(&engine(&keys), &call, &fresh).await;
    // A zero lifetime is dead on arrival.
    let zero = Engine::builder(AUDIENCE, ring(&keys)).state_ttl(Duration::ZERO).build();
    let state = first_state(&zero, &call).await;
    refused(&zero, &call, &state, "zero lifetime").await;
}

#[tokio::test]
async fn state_replayed_on_another_request_is_refused() {
    let engine = engine(&[server::raw_key()]);
    let call = Call::tool("greet").arguments(json!({"city": "Paris", "days": 3}));
    let state = first_state(&engine, &call).await;
    assert_opens(&engine, &call, &state).await;

    let other_tool = Call { name: "greet_admin".into(), ..call.clone() };
    refused(&engine, &other_tool, &state, "another tool name").await;
    let other_method = Call { method: "prompts/get".into(), ..call.clone() };
    refused(&engine, &other_method, &state, "another method").await;

    for (arguments, case) in [
        (json!({"city": "Paris", "days": 4}), "another argument value"),
        (json!({"city": "Paris"}), "an argument dropped"),
        (json!({"city": "Paris", "days": 3, "admin": true}), "an argument added"),
        (json!({"city": "Paris", "days": "3"}), "an argument's type changed"),
        (json!({}), "empty arguments"),
    ] {
        refused(&engine, &call.clone().arguments(arguments), &state, case).await;
    }
    refused(&engine, &Call { arguments: None, ..call.clone() }, &state, "no arguments").await;
    // Member order is not part of the arguments' identity.
    assert_opens(&engine, &call.clone().arguments(json!({"days": 3, "city": "Paris"})), &state).await;
}

#[tokio::test]
async fn state_presented_by_another_principal_is_refused() {
    let engine = engine(&[server::raw_key()]);
    let alice = Call::tool("greet").principal(Some("alice"));
    let state = first_state(&engine, &alice).await;
    assert_opens(&engine, &alice, &state).await;
    refused(&engine, &alice.clone().principal(Some("mallory")), &state, "another principal").await;
    refused(&engine, &alice.clone().principal(Some("")), &state, "an empty principal").await;
    refused(&engine, &alice.clone().principal(None), &state, "no principal").await;

    // And the other way round: a state minted without a principal is not valid for one.
    let anonymous = Call::tool("greet");
    let state = first_state(&engine, &anonymous).await;
    assert_opens(&engine, &anonymous, &state).await;
    refused(&engine, &alice, &state, "anonymous state presented by alice").await;
}

#[tokio::test]
async fn state_for_another_audience_is_refused() {
    let keys = [server::raw_key()];
    let call = Call::tool("greet");
    let state = first_state(&engine(&keys), &call).await;
    assert_opens(&engine(&keys), &call, &state).await;
    let other = Engine::builder("another-server", ring(&keys)).build();
    refused(&other, &call, &state, "another audience, same keys").await;
}

#[tokio::test]
async fn state_under_an_unknown_key_is_refused() {
    let call = Call::tool("greet");
    let state = first_state(&engine(&[server::raw_key()]), &call).await;
    refused(&engine(&[server::raw_key()]), &call, &state, "another key ring").await;
    // A ring that seals with a generated key does not know the state's key either.
    let generated = Engine::builder(AUDIENCE, KeyRing::generate()).build();
    refused(&generated, &call, &state, "a generated key").await;
}

#[tokio::test]
async fn oversized_state_is_refused() {
    let keys = [server::raw_key()];
    let engine = engine(&keys);
    let call = Call::tool("greet");
    let state = first_state(&engine, &call).await;
    // Beyond the default cap (64 KiB), whatever it contains.
    refused(&engine, &call, &"A".repeat(64 * 1024 + 1), "65537 characters of `A`").await;
    refused(&engine, &call, &format!("{state}{}", "A".repeat(64 * 1024)), "a real state padded past the cap").await;
    // A real state just past a smaller cap is refused; at exactly the cap it opens.
    let capped = |len| Engine::builder(AUDIENCE, ring(&keys)).max_state_len(len).build();
    refused(&capped(state.len() - 1), &call, &state, "one character over max_state_len").await;
    assert_opens(&capped(state.len()), &call, &state).await;
}

#[tokio::test]
async fn rotated_key_ring_opens_old_states_and_seals_with_the_new_key() {
    let (k1, k2) = (server::raw_key(), server::raw_key());
    let call = Call::tool("greet");
    let old = first_state(&engine(&[k1]), &call).await;
    // k2 put in front: states sealed under k1 still open.
    assert_opens(&engine(&[k2, k1]), &call, &old).await;
    // k1 removed: they no longer do.
    refused(&engine(&[k2]), &call, &old, "old key removed from the ring").await;
    // The rotated ring seals with k2, which a k2-only ring opens and a k1-only ring does not.
    let new = first_state(&engine(&[k2, k1]), &call).await;
    assert_opens(&engine(&[k2]), &call, &new).await;
    refused(&engine(&[k1]), &call, &new, "new state on a ring without the new key").await;
}

#[tokio::test]
async fn a_state_for_another_round_of_the_flow_still_belongs_to_it() {
    // Not a failure mode, a control for the ones above: a state from round 1 answered in
    // round 2 keeps working even when the client sends it with extra, unasked keys.
    let engine = engine(&[server::raw_key()]);
    let call = Call::tool("greet");
    let state = first_state(&engine, &call).await;
    let retry = call.retry(
        json!({"who": {"action": "accept", "content": {"name": "Ada"}}, "stray": {"action": "cancel"}}),
        Some(&state),
    );
    assert_eq!(complete(engine.run(&retry.request(), greet).await), "Hello, Ada!");
}
