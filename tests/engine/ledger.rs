//! The flow ledger through the engine: a claim answered late by the store while a sibling ask
//! suspends, `once` after a chain of forks that outlives the first records, a round that runs
//! long, a recorded value answered from the round's read of the ledger, a replayed URL step that
//! reuses its record, and the quotas per principal a client meets when it mints steps or opens
//! flows. What a
//! round records is bounded: keys a form does not define are dropped before anything is stored,
//! and a completing round's answers are capped like a sealed state.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::ledger::{ClaimFault, FaultyClaims};
use elicit_test_support::redis::Redis;
use elicit_test_support::server;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use elicit_runtime::server::{Answer, Engine, Flow, FlowError, ManualClock, UrlAnswer};

use elicit_runtime::server::store::{InProcessStore, RedisStore, Store};
use elicit_runtime::state::KeyRing;
use serde_json::json;

use server::engine::{Call, Name, answer_who, asked, complete, failed, keys, request_json};

/// A store's claims answered late: the claim reaches the real store 50 ms after it was made
/// (`before`), or its reply comes back 50 ms after the real store answered.
fn late(before: bool) -> ClaimFault {
    let delay = Duration::from_millis(50);
    if before { ClaimFault::Before(delay) } else { ClaimFault::After(delay) }
}

/// A form and a `once` awaited together: the form suspends the round at once, while the claim is
/// still with the store.
async fn form_and_once(flow: Flow, runs: Arc<AtomicUsize>) -> Result<String, FlowError> {
    let (who, charge) = tokio::join!(
        flow.form::<Name>("who"),
        flow.once("charge", || async { Ok(runs.fetch_add(1, Ordering::SeqCst) + 1) })
    );
    let charge: usize = charge?;
    Ok(match who? {
        Answer::Accepted(who) => format!("{} charged (#{charge})", who.name),
        _ => "no name".to_owned(),
    })
}

async fn a_late_claim_is_waited_for(store: Arc<dyn Store>) {
    let engine = Engine::builder("ledger", KeyRing::generate()).store(store).once_wait(Duration::from_secs(2)).build();
    let runs = Arc::new(AtomicUsize::new(0));
    let handler = |flow| form_and_once(flow, runs.clone());
    let call = Call::tool("charge");
    let first = asked(engine.run(&call.request(), handler).await);
    assert_eq!(keys(&first), ["who"]);
    // The claim in flight was running work: the round waited for it and the computation.
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the round was suspended under its claim");
    let done =
        complete(engine.run(&call.retry(answer_who("Ada"), first.request_state.as_deref()).request(), handler).await);
    assert_eq!(done, "Ada charged (#1)");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_answered_late_while_a_sibling_ask_suspends_leaves_nothing_held() {
    for before in [false, true] {
        a_late_claim_is_waited_for(Arc::new(FaultyClaims::new(InProcessStore::new(), late(before)))).await;
    }
    let test = "a_claim_answered_late_while_a_sibling_ask_suspends_leaves_nothing_held";
    let Some(redis) = Redis::start_or_skip(test, None) else { return };
    for before in [false, true] {
        let inner = RedisStore::builder(redis.url()).key_prefix(format!("late-{before}")).connect().await.unwrap();
        a_late_claim_is_waited_for(Arc::new(FaultyClaims::new(inner, late(before)))).await;
    }
}

/// Book it?
#[derive(elicit_runtime::Elicit, Debug, Clone, PartialEq)]
struct Confirm {
    /// Tick to book
    confirm: bool,
}

/// A form, a `once` that counts its runs, a confirmation; with `slow` set, the round first lets
/// `slow_by` pass on `clock` (a round that runs long).
async fn charging(
    flow: Flow,
    runs: Arc<AtomicUsize>,
    slow: Arc<AtomicBool>,
    clock: ManualClock,
    slow_by: Duration,
) -> Result<String, FlowError> {
    if slow.swap(false, Ordering::SeqCst) {
        clock.advance(slow_by);
    }
    let Answer::Accepted(who) = flow.form::<Name>("who").await? else { return Ok("no name".to_owned()) };
    let charge = flow.once("charge", || async { Ok(runs.fetch_add(1, Ordering::SeqCst) + 1) }).await?;
    let Answer::Accepted(Confirm { confirm: true }) = flow.form::<Confirm>("confirm").await? else {
        return Ok(format!("not booked (charge #{charge})"));
    };
    Ok(format!("booked for {} (charge #{charge})", who.name))
}

/// An engine whose states live `state_ttl` on `clock`, over an in-process store on the same clock.
fn clocked(clock: &ManualClock, state_ttl: Duration) -> Engine {
    let store = Arc::new(InProcessStore::new().clock(Arc::new(clock.clone())));
    Engine::builder("ledger", KeyRing::generate())
        .state_ttl(state_ttl)
        .clock(Arc::new(clock.clone()))
        .store(store)
        .build()
}

#[tokio::test]
async fn once_after_a_chain_of_forks_finds_the_record_of_the_first_run() {
    let clock = ManualClock::new();
    let state_ttl = Duration::from_secs(4);
    let engine = clocked(&clock, state_ttl);
    let (runs, slow) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicBool::new(false)));
    let handler = |flow| charging(flow, runs.clone(), slow.clone(), clock.clone(), Duration::ZERO);
    let call = Call::tool("book");
    let first = asked(engine.run(&call.request(), handler).await);
    // The branch that charges, then is abandoned at its confirmation.
    let charged =
        asked(engine.run(&call.retry(answer_who("Ada"), first.request_state.as_deref()).request(), handler).await);
    assert_eq!(keys(&charged), ["confirm"]);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // The first state, replayed without its answer just before it expires, again and again: each
    // round seals a fresh state of the same flow, long after the charge was recorded.
    let mut state = first.request_state.clone().unwrap();
    for _ in 0..30 {
        clock.advance(state_ttl - Duration::from_secs(1));
        let again = asked(engine.run(&call.retry(json!({}), Some(&state)).request(), handler).await);
        assert_eq!(keys(&again), ["who"]);
        state = again.request_state.unwrap();
    }
    clock.advance(state_ttl - Duration::from_secs(1));
    let forked = asked(engine.run(&call.retry(answer_who("Ada"), Some(&state)).request(), handler).await);
    assert_eq!(keys(&forked), ["confirm"]);
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the charge ran again after its record expired");
    let confirm = json!({"confirm": {"action": "accept", "content": {"confirm": true}}});
    let done = complete(engine.run(&call.retry(confirm, forked.request_state.as_deref()).request(), handler).await);
    assert_eq!(done, "booked for Ada (charge #1)");
}

#[tokio::test]
async fn a_round_that_runs_long_keeps_the_records_as_long_as_the_state_it_seals() {
    let clock = ManualClock::new();
    let state_ttl = Duration::from_secs(3600);
    let engine = clocked(&clock, state_ttl);
    let (runs, slow) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicBool::new(false)));
    // Half the states' lifetime: far longer than any allowance a round is given.
    let handler = |flow| charging(flow, runs.clone(), slow.clone(), clock.clone(), state_ttl / 2);
    let call = Call::tool("book");
    let first = asked(engine.run(&call.request(), handler).await);
    asked(engine.run(&call.retry(answer_who("Ada"), first.request_state.as_deref()).request(), handler).await);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // The first state replayed, in a round that runs long before it seals a fresh state (which
    // does not carry the charge: only the ledger knows it).
    slow.store(true, Ordering::SeqCst);
    let late = asked(engine.run(&call.retry(json!({}), first.request_state.as_deref()).request(), handler).await);
    assert_eq!(keys(&late), ["who"]);
    // Just before that state expires, the charge is still found.
    clock.advance(state_ttl - Duration::from_secs(1));
    let forked =
        asked(engine.run(&call.retry(answer_who("Ada"), late.request_state.as_deref()).request(), handler).await);
    assert_eq!(keys(&forked), ["confirm"]);
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the charge ran again: its record died before the state");
}

#[tokio::test]
async fn a_replayed_round_takes_a_recorded_value_from_its_read_of_the_ledger() {
    let store = Arc::new(FaultyClaims::new(InProcessStore::new(), ClaimFault::None));
    let engine = Engine::builder("ledger", KeyRing::generate()).store(store.clone()).build();
    let (runs, slow) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicBool::new(false)));
    let clock = ManualClock::new();
    let handler = |flow| charging(flow, runs.clone(), slow.clone(), clock.clone(), Duration::ZERO);
    let call = Call::tool("book");
    let first = asked(engine.run(&call.request(), handler).await);
    let retry = call.retry(answer_who("Ada"), first.request_state.as_deref());
    asked(engine.run(&retry.request(), handler).await);
    // Every claim now fails on the wire: the replay does not need one, the value is recorded.
    store.set_fault(ClaimFault::ReplyLost);
    let again = asked(engine.run(&retry.request(), handler).await);
    assert_eq!(keys(&again), ["confirm"]);
    let confirm = json!({"confirm": {"action": "accept", "content": {"confirm": true}}});
    let done = complete(engine.run(&call.retry(confirm, again.request_state.as_deref()).request(), handler).await);
    assert_eq!(done, "booked for Ada (charge #1)");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // A slot never recorded still goes to the store, and its failure fails the round.
    let fresh = asked(engine.run(&call.request(), handler).await);
    let error =
        failed(engine.run(&call.retry(answer_who("Bo"), fresh.request_state.as_deref()).request(), handler).await);
    assert_eq!(error.code, -32603, "{error:?}");
}

async fn pay(flow: Flow) -> Result<String, FlowError> {
    let Answer::Accepted(who) = flow.form::<Name>("who").await? else { return Ok("no name".to_owned()) };
    Ok(match flow.url("payment", "Pay", |id| format!("https://pay.example/{id}")).await? {
        UrlAnswer::Completed(outcome) => format!("{} paid: {outcome}", who.name),
        _ => "not paid".to_owned(),
    })
}

fn step_id(asked: &elicit_runtime::wire::InputRequiredResult) -> String {
    let url = request_json(asked, "payment")["params"]["url"].as_str().unwrap().to_owned();
    url.rsplit('/').next().unwrap().to_owned()
}

#[tokio::test]
async fn a_replay_before_the_url_step_reuses_its_record_and_a_principal_has_a_quota() {
    let store = Arc::new(InProcessStore::new().max_url_records_per_principal(2));
    let engine = Engine::builder("ledger", KeyRing::generate()).store(store.clone()).build();
    let call = Call::tool("pay").principal(Some("mallory"));
    let first = asked(engine.run(&call.request(), pay).await);
    let retry = call.retry(answer_who("Ada"), first.request_state.as_deref());
    let ids: Vec<String> = futures_ids(&engine, &retry).await;
    assert!(ids.iter().all(|id| *id == ids[0]), "each replay minted a step: {ids:?}");
    assert_eq!(store.len(), 1, "one step registered, whatever the replays");

    // A second flow: a second step. A third: over the principal's quota, a clear error.
    let second = asked(engine.run(&call.request(), pay).await);
    asked(engine.run(&call.retry(answer_who("Ada"), second.request_state.as_deref()).request(), pay).await);
    let third = asked(engine.run(&call.request(), pay).await);
    let error = failed(engine.run(&call.retry(answer_who("Ada"), third.request_state.as_deref()).request(), pay).await);
    assert_eq!(error.code, -32603);
    assert!(error.message.contains("per principal"), "{error:?}");
    // Someone else is not refused.
    let alice = Call::tool("pay").principal(Some("alice"));
    let hers = asked(engine.run(&alice.request(), pay).await);
    let step = asked(engine.run(&alice.retry(answer_who("Alice"), hers.request_state.as_deref()).request(), pay).await);
    assert_eq!(keys(&step), ["payment"]);
    // A completed step still completes the flow that replayed its state.
    assert!(engine.url_completions().complete(&ids[0], json!({"ok": true}), Some("mallory")).await.unwrap());
    let paid = asked(engine.run(&retry.request(), pay).await);
    let consent = call.retry(json!({"payment": {"action": "accept"}}), paid.request_state.as_deref());
    assert_eq!(complete(engine.run(&consent.request(), pay).await), r#"Ada paid: {"ok":true}"#);
}

/// A `once` in the first round, then a form: every call makes its flow's ledger record.
async fn charge_then_ask(flow: Flow) -> Result<String, FlowError> {
    let charged: u32 = flow.once("charge", || async { Ok(7) }).await?;
    let Answer::Accepted(who) = flow.form::<Name>("who").await? else { return Ok("no name".to_owned()) };
    Ok(format!("{} charged {charged}", who.name))
}

#[tokio::test]
async fn a_principal_at_its_quota_of_flow_records_is_refused_clearly_and_everyone_else_is_served() {
    let store = Arc::new(InProcessStore::new().max_flow_records_per_principal(2));
    let engine = Engine::builder("ledger", KeyRing::generate()).store(store).build();
    let alice = Call::tool("charge").principal(Some("alice"));
    let first = asked(engine.run(&alice.request(), charge_then_ask).await);
    asked(engine.run(&alice.request(), charge_then_ask).await);
    // A third flow of hers: over her quota, an error that says so.
    let error = failed(engine.run(&alice.request(), charge_then_ask).await);
    assert_eq!(error.code, -32603, "{error:?}");
    assert!(error.message.contains("2 live flow records") && error.message.contains("per principal"), "{error:?}");
    // Bob is served, and so are anonymous clients, each address on its own.
    let bob = Call::tool("charge").principal(Some("bob"));
    asked(engine.run(&bob.request(), charge_then_ask).await);
    let anonymous = Call::tool("charge");
    for _ in 0..2 {
        asked(engine.run(&anonymous.request().client(Some("192.0.2.1")), charge_then_ask).await);
    }
    let error = failed(engine.run(&anonymous.request().client(Some("192.0.2.1")), charge_then_ask).await);
    assert!(error.message.contains("flow records"), "{error:?}");
    asked(engine.run(&anonymous.request().client(Some("192.0.2.2")), charge_then_ask).await);
    // Alice's flows in progress go on to their end.
    let retry = alice.retry(answer_who("Alice"), first.request_state.as_deref());
    assert_eq!(complete(engine.run(&retry.request(), charge_then_ask).await), "Alice charged 7");
}

/// The step ids of three replays of the same state.
async fn futures_ids(engine: &Engine, retry: &Call) -> Vec<String> {
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(step_id(&asked(engine.run(&retry.request(), pay).await)));
    }
    ids
}

/// Asks for a name twice: the first answer is carried in the sealed state, the second completes.
async fn two_names(flow: Flow) -> Result<String, FlowError> {
    let Answer::Accepted(first) = flow.form::<Name>("who").await? else { return Ok("declined".into()) };
    let Answer::Accepted(second) = flow.form::<Name>("again").await? else { return Ok("declined".into()) };
    Ok(format!("{} and {}", first.name, second.name))
}

/// An accepted `key` answer naming `name`, with 4 MB of keys the form does not define.
fn junk_answer(key: &str, name: &str) -> serde_json::Value {
    let mut content = serde_json::Map::new();
    content.insert("name".into(), json!(name));
    for i in 0..40_000 {
        content.insert(format!("junk{i}"), json!("x".repeat(100)));
    }
    json!({ key: {"action": "accept", "content": content} })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_keys_of_an_answer_are_dropped_before_anything_is_stored() {
    let test = "unknown_keys_of_an_answer_are_dropped";
    let Some(redis) = Redis::start_or_skip(test, None) else { return };
    let store = RedisStore::builder(redis.url()).key_prefix("junk").connect().await.unwrap();
    let engine = Engine::builder("bounded", KeyRing::generate()).store(Arc::new(store)).build();
    let call = Call::tool("names");
    let first = asked(engine.run(&call.request(), two_names).await);
    // Sealed into the next state: the junk would not fit the state's cap.
    let junk = call.retry(junk_answer("who", "Ada"), first.request_state.as_deref());
    let second = asked(engine.run(&junk.request(), two_names).await);
    assert_eq!(keys(&second), ["again"]);
    // Recorded as the flow's finish: the junk would be kept in the store for the records' lifetime.
    let last = call.retry(junk_answer("again", "Grace"), second.request_state.as_deref());
    assert_eq!(complete(engine.run(&last.request(), two_names).await), "Ada and Grace");
    let stored: i64 = redis
        .command("KEYS junk:*")
        .iter()
        .map(|key| redis.command(&format!("MEMORY USAGE {key}"))[0].parse::<i64>().unwrap())
        .sum();
    assert!(stored > 0, "the flow's finish was not recorded");
    assert!(stored < 64 * 1024, "{stored} bytes stored for two short names");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completing_rounds_answers_past_the_cap_are_refused_and_nothing_is_recorded() {
    let engine = Engine::builder("bounded", KeyRing::generate()).max_answers_len(Some(4096)).build();
    let call = Call::tool("greet");
    let first = asked(engine.run(&call.request(), server::engine::greet).await);
    let state = first.request_state.as_deref();
    let long = call.retry(answer_who(&"A".repeat(8192)), state);
    let refused = failed(engine.run(&long.request(), server::engine::greet).await);
    assert_eq!(refused.code, -32602, "{refused:?}");
    assert!(refused.message.contains("too large to record") && refused.message.contains("4096"), "{refused:?}");
    // Nothing was recorded: the same state with a short answer finishes the flow.
    let short = call.retry(answer_who("Ada"), state);
    assert_eq!(complete(engine.run(&short.request(), server::engine::greet).await), "Hello, Ada!");
}
