//! How [`Engine::run`] treats what the client sends back —
//! malformed, missing, extra and invalid answers — and what the handler may ask: undeclared
//! capabilities (checked every round), `once`, and asks made together.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::server;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use elicit_runtime::server::{Answer, Engine, Flow, FlowError, UrlAnswer};
use elicit_runtime::state::{INVALID_STATE_MESSAGE, KeyRing};
use serde_json::{Value, json};

use super::forms::{Colour, Person};

use server::engine::{Call, answer_who, asked, complete, failed, greet, keys, request_json};

fn engine() -> Engine {
    Engine::builder("engine-tests", KeyRing::generate()).build()
}

#[tokio::test]
async fn malformed_input_responses_are_invalid_params() {
    let engine = engine();
    let call = Call::tool("greet");
    let state = asked(engine.run(&call.request(), greet).await).request_state.unwrap();
    // Control: a well-formed answer completes (another flow: a finished one answers every later
    // round with its result).
    let control = asked(engine.run(&call.request(), greet).await).request_state.unwrap();
    assert_eq!(
        complete(engine.run(&call.retry(answer_who("Ada"), Some(&control)).request(), greet).await),
        "Hello, Ada!"
    );

    let malformed = [
        json!(12345),
        Value::Null,
        json!([]),
        json!([{"who": {"action": "accept", "content": {"name": "Ada"}}}]),
        json!("who"),
        json!(true),
        json!({"who": 5}),
        json!({"who": null}),
        json!({"who": []}),
        json!({"who": "accept"}),
        json!({"who": {}}),
        json!({"who": {"action": "maybe"}}),
        json!({"who": {"action": 1}}),
        json!({"who": {"action": "accept", "content": 5}}),
        json!({"who": {"action": "accept", "content": [{"name": "Ada"}]}}),
    ];
    for responses in malformed {
        for state in [Some(state.as_str()), None] {
            let error = failed(engine.run(&call.retry(responses.clone(), state).request(), greet).await);
            assert_eq!(error.code, -32602, "inputResponses {responses} (state: {}): {error:?}", state.is_some());
            assert_ne!(error.message, INVALID_STATE_MESSAGE, "a malformed answer is not a bad state: {responses}");
        }
    }
}

#[tokio::test]
async fn a_missing_answer_is_asked_again() {
    let engine = engine();
    let call = Call::tool("greet");
    let first = asked(engine.run(&call.request(), greet).await);
    let state = first.request_state.as_deref();
    for responses in [json!({}), json!({"whom": {"action": "accept", "content": {"name": "Ada"}}})] {
        let again = asked(engine.run(&call.retry(responses.clone(), state).request(), greet).await);
        assert_eq!(keys(&again), ["who"], "after {responses}");
        assert_eq!(request_json(&again, "who"), request_json(&first, "who"), "the same question, after {responses}");
        assert_ne!(again.request_state, first.request_state, "a fresh state every round");
    }
    // The state alone, without inputResponses (a load-shedding retry), also asks again.
    let again = asked(engine.run(&call.with_state(state.unwrap()).request(), greet).await);
    assert_eq!(keys(&again), ["who"]);
}

#[tokio::test]
async fn unexpected_keys_are_ignored() {
    let engine = engine();
    let call = Call::tool("greet");
    let state = asked(engine.run(&call.request(), greet).await).request_state.unwrap();
    let responses = json!({
        "who": {"action": "accept", "content": {"name": "Ada"}, "_meta": {"x": 1}, "resultType": "complete"},
        "unknown_extra_key": {"action": "accept", "content": {"foo": "bar"}},
        "not_even_an_answer": 12345,
    });
    assert_eq!(
        complete(engine.run(&call.retry(responses.clone(), Some(&state)).request(), greet).await),
        "Hello, Ada!"
    );
    // Without any state too (a client that answers unasked still gets through).
    assert_eq!(complete(engine.run(&call.retry(responses, None).request(), greet).await), "Hello, Ada!");
}

async fn ask_person(flow: Flow) -> Result<String, FlowError> {
    Ok(match flow.form::<Person>("person").await? {
        Answer::Accepted(p) => format!("{} ({})", p.name, p.age),
        Answer::Declined => "declined".into(),
        Answer::Cancelled => "cancelled".into(),
    })
}

fn person(name: &str, age: i64) -> Value {
    json!({"person": {"action": "accept", "content": {"name": name, "age": age}}})
}

#[tokio::test]
async fn invalid_content_is_asked_again_with_the_errors_and_the_values_that_passed_then_fails() {
    let engine = Engine::builder("engine-tests", KeyRing::generate()).max_invalid_answers(2).build();
    let call = Call::tool("person");
    let first = asked(engine.run(&call.request(), ask_person).await);
    let original = request_json(&first, "person");
    assert_eq!(original["params"]["message"], "Tell us about yourself.");
    assert!(original["params"]["requestedSchema"]["properties"]["name"].get("default").is_none());

    // Invalid answer 1 of 2 allowed: asked again, each field named by its title on a line of its
    // own in plain text, the refused values quoted and never offered as defaults.
    let second =
        asked(engine.run(&call.retry(person("A", 200), first.request_state.as_deref()).request(), ask_person).await);
    assert_eq!(keys(&second), ["person"]);
    let again = request_json(&second, "person");
    let message = again["params"]["message"].as_str().unwrap();
    let lines: Vec<&str> = message.lines().collect();
    assert_eq!(lines[..3], ["Tell us about yourself.", "", "Please correct:"], "{message}");
    assert!(lines[3].starts_with("Name: ") && lines[3].ends_with("(you entered \"A\")"), "{message}");
    assert!(lines[4].starts_with("Age: ") && lines[4].ends_with("(you entered 200)"), "{message}");
    assert_eq!(lines.len(), 5, "one line per field: {message}");
    assert!(!message.contains('`'), "plain text, no Markdown: {message}");
    let properties = &again["params"]["requestedSchema"]["properties"];
    assert_eq!(properties["name"].get("default"), None, "a refused value is no default: {again}");
    assert_eq!(properties["age"].get("default"), None, "a refused value is no default: {again}");
    assert_eq!(properties["name"]["minLength"], 2, "the constraints stay: {again}");

    // Invalid answer 2 of 2: asked again; the value that passed is the default now.
    let third =
        asked(engine.run(&call.retry(person("Bo", -1), second.request_state.as_deref()).request(), ask_person).await);
    let message = request_json(&third, "person")["params"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("\nAge: ") && !message.contains("\nName: "), "only the failing field: {message}");
    let properties = &request_json(&third, "person")["params"]["requestedSchema"]["properties"];
    assert_eq!(properties["name"]["default"], "Bo");
    assert_eq!(properties["age"].get("default"), None);

    // A third invalid one fails the request...
    let retry = call.retry(person("Bo", 151), third.request_state.as_deref());
    let error = failed(engine.run(&retry.request(), ask_person).await);
    assert_eq!(error.code, -32602, "{error:?}");
    assert_ne!(error.message, INVALID_STATE_MESSAGE);

    // ...the count lives in the state: starting over from round 1 allows two again...
    let retry = call.retry(person("A", 200), first.request_state.as_deref());
    asked(engine.run(&retry.request(), ask_person).await);

    // ...and a valid answer completes (the flow has finished: every later round gets this result).
    let retry = call.retry(person("Bo", 33), third.request_state.as_deref());
    assert_eq!(complete(engine.run(&retry.request(), ask_person).await), "Bo (33)");
    let retry = call.retry(person("A", 200), first.request_state.as_deref());
    assert_eq!(complete(engine.run(&retry.request(), ask_person).await), "Bo (33)");
}

#[tokio::test]
async fn undeclared_capability_is_a_typed_outcome_then_minus_32021() {
    let engine = engine();
    let form_only = Call::tool("pay").capabilities(json!({"elicitation": {"form": {}}}));

    // A handler that handles it: nothing is asked, it falls back.
    let fallback = |flow: Flow| async move {
        match flow.url("payment", "Pay here", |id| format!("https://pay.example/{id}")).await {
            Err(FlowError::Unsupported { required }) => Ok(format!("fallback, needed {required}")),
            other => Ok(format!("unexpected {other:?}")),
        }
    };
    assert_eq!(
        complete(engine.run(&form_only.request(), fallback).await),
        r#"fallback, needed {"elicitation":{"url":{}}}"#
    );

    // A handler that propagates it: -32021 naming the capability.
    let propagate = |flow: Flow| async move {
        match flow.url("payment", "Pay here", |id| format!("https://pay.example/{id}")).await? {
            UrlAnswer::Completed(_) => Ok("paid".to_owned()),
            UrlAnswer::Declined | UrlAnswer::Cancelled => Ok("not paid".to_owned()),
        }
    };
    let error = failed(engine.run(&form_only.request(), propagate).await);
    assert_eq!(error.code, -32021, "{error:?}");
    assert_eq!(error.data, Some(json!({"requiredCapabilities": {"elicitation": {"url": {}}}})));
    // Control: declared, the same handler asks.
    let asked_url = asked(engine.run(&Call::tool("pay").request(), propagate).await);
    assert_eq!(request_json(&asked_url, "payment")["params"]["mode"], "url");

    // Form mode needs `elicitation`; no capabilities at all means no form.
    for capabilities in [json!({}), json!({"sampling": {}}), json!({"elicitation": {"url": {}}})] {
        let error = failed(engine.run(&Call::tool("greet").capabilities(capabilities.clone()).request(), greet).await);
        assert_eq!(error.code, -32021, "capabilities {capabilities}: {error:?}");
        assert_eq!(error.data, Some(json!({"requiredCapabilities": {"elicitation": {"form": {}}}})));
    }
    // `elicitation: {}` means form (backwards compatibility).
    asked(engine.run(&Call::tool("greet").capabilities(json!({"elicitation": {}})).request(), greet).await);
    // Sampling and roots name their own capabilities.
    let sample = |flow: Flow| async move { flow.sampling("s", json!({"messages": [], "maxTokens": 5})).await };
    let error = failed(engine.run(&Call::tool("s").request(), sample).await);
    assert_eq!(error.data, Some(json!({"requiredCapabilities": {"sampling": {}}})));
    let roots = |flow: Flow| async move { flow.roots("r").await };
    let error = failed(engine.run(&Call::tool("r").request(), roots).await);
    assert_eq!(error.data, Some(json!({"requiredCapabilities": {"roots": {}}})));
}

#[tokio::test]
async fn capabilities_are_checked_again_every_round() {
    let engine = engine();
    // Round 1 declares form; the retry answers but declares nothing: the answer is not used.
    let call = Call::tool("greet").capabilities(json!({"elicitation": {}}));
    let state = asked(engine.run(&call.request(), greet).await).request_state.unwrap();
    let retry = call.retry(answer_who("Ada"), Some(&state)).capabilities(json!({}));
    let error = failed(engine.run(&retry.request(), greet).await);
    assert_eq!(error.code, -32021, "{error:?}");
    // Control: the same retry declaring form completes.
    let retry = call.retry(answer_who("Ada"), Some(&state));
    assert_eq!(complete(engine.run(&retry.request(), greet).await), "Hello, Ada!");

    // A form, then a URL step: round 1 declares both, round 2 drops URL mode.
    let two_steps = |flow: Flow| async move {
        let Answer::Accepted(colour) = flow.form::<Colour>("colour").await? else { return Ok("no colour".to_owned()) };
        match flow.url("pay", "Pay", |id| format!("https://pay.example/{id}")).await {
            Err(FlowError::Unsupported { .. }) => Ok(format!("{} without payment", colour.colour)),
            other => Ok(format!("{} then {other:?}", colour.colour)),
        }
    };
    let call = Call::tool("two");
    let state = asked(engine.run(&call.request(), two_steps).await).request_state.unwrap();
    let answer = json!({"colour": {"action": "accept", "content": {"colour": "red"}}});
    let both = call.retry(answer.clone(), Some(&state));
    let next = asked(engine.run(&both.request(), two_steps).await);
    assert_eq!(keys(&next), ["pay"], "with URL mode declared the URL step is asked");
    let form_only = both.clone().capabilities(json!({"elicitation": {"form": {}}}));
    assert_eq!(complete(engine.run(&form_only.request(), two_steps).await), "red without payment");
}

#[tokio::test]
async fn once_runs_its_closure_exactly_once_across_rounds() {
    let engine = engine();
    let runs = Arc::new(AtomicUsize::new(0));
    let handler = |flow: Flow| {
        let runs = runs.clone();
        async move {
            // Each run would produce a different value: only the first one may ever be seen.
            let quote: usize = flow.once("quote", || async { Ok(100 + runs.fetch_add(1, Ordering::SeqCst)) }).await?;
            let Answer::Accepted(a) = flow.form::<Colour>("first").await? else { return Ok("no".to_owned()) };
            let Answer::Accepted(b) = flow.form::<Colour>("second").await? else { return Ok("no".to_owned()) };
            Ok(format!("{quote}: {} {}", a.colour, b.colour))
        }
    };
    let call = Call::tool("once");
    let round1 = asked(engine.run(&call.request(), handler).await);
    assert_eq!(keys(&round1), ["first"]);
    let answer = |key: &str, colour: &str| json!({key: {"action": "accept", "content": {"colour": colour}}});
    let round2 = asked(
        engine.run(&call.retry(answer("first", "red"), round1.request_state.as_deref()).request(), handler).await,
    );
    assert_eq!(keys(&round2), ["second"]);
    // The client sends only the latest round's key; the first answer is carried in the state.
    let retry = call.retry(answer("second", "blue"), round2.request_state.as_deref());
    assert_eq!(complete(engine.run(&retry.request(), handler).await), "100: red blue");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "`once` ran its closure more than once");
}

#[tokio::test]
async fn asks_awaited_together_go_out_in_one_round() {
    let engine = engine();
    let handler = |flow: Flow| async move {
        let (a, b) = tokio::join!(flow.form::<Colour>("a"), flow.form::<Person>("b"));
        match (a?, b?) {
            (Answer::Accepted(a), Answer::Accepted(b)) => Ok(format!("{} for {}", a.colour, b.name)),
            other => Ok(format!("{other:?}")),
        }
    };
    let call = Call::tool("joined");
    let round1 = asked(engine.run(&call.request(), handler).await);
    assert_eq!(keys(&round1), ["a", "b"], "both asks in the first InputRequiredResult");
    assert_eq!(request_json(&round1, "a")["method"], "elicitation/create");
    assert_eq!(request_json(&round1, "b")["params"]["message"], "Tell us about yourself.");

    let colour = json!({"action": "accept", "content": {"colour": "green"}});
    let person = json!({"action": "accept", "content": {"name": "Ada", "age": 36}});
    // One answered: only the other is asked again, and the first is carried.
    let partial =
        asked(engine.run(&call.retry(json!({"a": colour}), round1.request_state.as_deref()).request(), handler).await);
    assert_eq!(keys(&partial), ["b"]);
    let rest = call.retry(json!({"b": person}), partial.request_state.as_deref());
    assert_eq!(complete(engine.run(&rest.request(), handler).await), "green for Ada");
    // Both answered in one retry (of another flow).
    let round1 = asked(engine.run(&call.request(), handler).await);
    let both = call.retry(json!({"a": colour, "b": person}), round1.request_state.as_deref());
    assert_eq!(complete(engine.run(&both.request(), handler).await), "green for Ada");
}

#[tokio::test]
async fn a_url_step_asked_again_says_its_page_is_not_completed_yet() {
    let engine = Engine::builder("engine-tests", KeyRing::generate()).url_retry_wait(std::time::Duration::ZERO).build();
    let pay = |flow: Flow| async move {
        Ok(match flow.url("pay", "Approve the payment", |id| format!("https://pay.example/{id}")).await? {
            UrlAnswer::Completed(value) => format!("paid {value}"),
            UrlAnswer::Declined | UrlAnswer::Cancelled => "not paid".to_owned(),
        })
    };
    let call = Call::tool("pay").capabilities(json!({"elicitation": {"form": {}, "url": {}}}));
    let first = asked(engine.run(&call.request(), pay).await);
    let asked_first = request_json(&first, "pay");
    assert_eq!(asked_first["params"]["message"], "Approve the payment");
    // The person says they are done, but the page recorded nothing: the same page, and why.
    let consent = json!({"pay": {"action": "accept"}});
    let second = asked(engine.run(&call.retry(consent.clone(), first.request_state.as_deref()).request(), pay).await);
    let asked_again = request_json(&second, "pay");
    assert_eq!(asked_again["params"]["url"], asked_first["params"]["url"]);
    let message = asked_again["params"]["message"].as_str().unwrap();
    assert!(message.starts_with("Approve the payment\n\n") && message.contains("not completed yet"), "{message}");
    // Completed, the next confirmation finishes.
    let url = asked_first["params"]["url"].as_str().unwrap();
    let id = url.rsplit('/').next().unwrap();
    assert!(engine.url_completions().complete(id, json!("ok"), None).await.unwrap());
    let retry = call.retry(consent, second.request_state.as_deref());
    assert_eq!(complete(engine.run(&retry.request(), pay).await), "paid \"ok\"");
}
