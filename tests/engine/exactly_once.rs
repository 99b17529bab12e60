//! Exactly-once per flow, through the engine with the in-process store.
//!
//! A booking-shaped flow — a form, a reference minted in `once`, a payment page, a confirmation,
//! and a charge made in `once` after it — replayed every way a client can: the last state twice
//! in a row and four times at once, earlier states, changed answers after the finish, confirm and
//! decline racing, the payment round's response lost. Counters in the handler count every run of
//! each `once` computation: they stay at 1.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::server;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use elicit_runtime::Elicit;
use elicit_runtime::server::{Answer, Engine, Flow, FlowError, Outcome, UrlAnswer};
use elicit_runtime::state::KeyRing;
use serde_json::{Value, json};

use server::engine::{Call, Name, asked, complete, failed, keys, request_json};

/// Book it?
#[derive(Elicit, Debug, Clone, PartialEq)]
struct Confirm {
    /// Tick to book
    confirm: bool,
}

/// How many times each `once` computation ran.
#[derive(Default)]
struct Runs {
    reference: AtomicUsize,
    charge: AtomicUsize,
    attempts: AtomicUsize,
}

/// The booking flow: `who` (form), `reference` (once), `payment` (URL), `confirm` (form), `charge`
/// (once, only when confirmed).
async fn book(flow: Flow, runs: Arc<Runs>) -> Result<String, FlowError> {
    let who = match flow.form::<Name>("who").await? {
        Answer::Accepted(who) => who.name,
        _ => return Ok("no name".into()),
    };
    let reference = flow
        .once("reference", || async {
            let n = runs.reference.fetch_add(1, Ordering::SeqCst) + 1;
            // A slow side effect, so concurrent duplicates overlap it.
            tokio::time::sleep(Duration::from_millis(30)).await;
            Ok(format!("REF-{n}"))
        })
        .await?;
    match flow.url("payment", "Pay", |id| format!("https://pay.example/{id}")).await? {
        UrlAnswer::Completed(outcome) if outcome["approved"] == true => {}
        _ => return Ok("payment not approved".into()),
    }
    match flow.form::<Confirm>("confirm").await? {
        Answer::Accepted(Confirm { confirm: true }) => {
            let charge = flow
                .once("charge", || async {
                    let n = runs.charge.fetch_add(1, Ordering::SeqCst) + 1;
                    tokio::time::sleep(Duration::from_millis(30)).await;
                    Ok(n)
                })
                .await?;
            Ok(format!("Booked! Reference {reference} for {who} (charge #{charge})"))
        }
        _ => Ok(format!("Not booked ({reference})")),
    }
}

fn engine() -> Arc<Engine> {
    Arc::new(Engine::builder("exactly-once", KeyRing::generate()).build())
}

type Round = std::pin::Pin<Box<dyn Future<Output = Result<String, FlowError>> + Send>>;

fn handler(runs: &Arc<Runs>) -> impl Fn(Flow) -> Round + Clone + Send + use<> {
    let runs = runs.clone();
    move |flow| Box::pin(book(flow, runs.clone()))
}

fn who(name: &str) -> Value {
    json!({"who": {"action": "accept", "content": {"name": name}}})
}

fn confirm(yes: bool) -> Value {
    json!({"confirm": {"action": "accept", "content": {"confirm": yes}}})
}

fn payment_id(asked: &elicit_runtime::wire::InputRequiredResult) -> String {
    let url = request_json(asked, "payment")["params"]["url"].as_str().unwrap().to_owned();
    url.rsplit('/').next().unwrap().to_owned()
}

/// Runs the flow to its confirmation step: the call, its states after `who` and after the
/// payment, and the payment page's id.
async fn to_confirmation(engine: &Engine, runs: &Arc<Runs>, call: &Call) -> (String, String, String, String) {
    let first = asked(engine.run(&call.request(), handler(runs)).await);
    let s1 = first.request_state.clone().unwrap();
    let second = asked(engine.run(&call.retry(who("Ada"), Some(&s1)).request(), handler(runs)).await);
    assert_eq!(keys(&second), ["payment"]);
    let id = payment_id(&second);
    let s2 = second.request_state.clone().unwrap();
    assert!(engine.url_completions().complete(&id, json!({"approved": true}), None).await.unwrap());
    let third = asked(
        engine.run(&call.retry(json!({"payment": {"action": "accept"}}), Some(&s2)).request(), handler(runs)).await,
    );
    assert_eq!(keys(&third), ["confirm"]);
    (s1, s2, third.request_state.clone().unwrap(), id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_state_replayed_gives_one_result_and_every_effect_runs_once() {
    let engine = engine();
    let runs = Arc::new(Runs::default());
    let call = Call::tool("book");
    let (s1, _s2, s3, _) = to_confirmation(&engine, &runs, &call).await;

    let last = call.retry(confirm(true), Some(&s3));
    let booked = complete(engine.run(&last.request(), handler(&runs)).await);
    assert_eq!(booked, "Booked! Reference REF-1 for Ada (charge #1)");

    // The last state, replayed twice in a row (a client whose response was lost).
    for _ in 0..2 {
        assert_eq!(complete(engine.run(&last.request(), handler(&runs)).await), booked);
    }
    // ...and four times at once.
    let replays: Vec<_> = (0..4)
        .map(|_| {
            let (engine, last, h) = (engine.clone(), last.clone(), handler(&runs));
            tokio::spawn(async move { complete(engine.run(&last.request(), h).await) })
        })
        .collect();
    for replay in replays {
        assert_eq!(replay.await.unwrap(), booked);
    }
    // Changed answers after the finish: the same outcome, not "Not booked".
    let declined = call.retry(confirm(false), Some(&s3));
    assert_eq!(complete(engine.run(&declined.request(), handler(&runs)).await), booked);
    let dismissed = call.retry(json!({"confirm": {"action": "cancel"}}), Some(&s3));
    assert_eq!(complete(engine.run(&dismissed.request(), handler(&runs)).await), booked);
    // An earlier state, even with another name: the flow finished, same outcome.
    let earlier = call.retry(who("Bob"), Some(&s1));
    assert_eq!(complete(engine.run(&earlier.request(), handler(&runs)).await), booked);

    assert_eq!(runs.reference.load(Ordering::SeqCst), 1, "the reference was minted more than once");
    assert_eq!(runs.charge.load(Ordering::SeqCst), 1, "the charge ran more than once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_duplicates_of_a_round_share_one_run_and_earlier_states_reuse_it() {
    let engine = engine();
    let runs = Arc::new(Runs::default());
    let call = Call::tool("book");
    let first = asked(engine.run(&call.request(), handler(&runs)).await);
    let s1 = first.request_state.unwrap();
    // Four copies of the round that mints the reference, at once.
    let copies: Vec<_> = (0..4)
        .map(|_| {
            let (engine, retry, h) = (engine.clone(), call.retry(who("Ada"), Some(&s1)), handler(&runs));
            tokio::spawn(async move { asked(engine.run(&retry.request(), h).await) })
        })
        .collect();
    for copy in copies {
        assert_eq!(keys(&copy.await.unwrap()), ["payment"]);
    }
    assert_eq!(runs.reference.load(Ordering::SeqCst), 1, "concurrent duplicates each ran the computation");
    // Later, the same earlier state again: still one run.
    asked(engine.run(&call.retry(who("Ada"), Some(&s1)).request(), handler(&runs)).await);
    assert_eq!(runs.reference.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_payment_rounds_lost_response_is_recovered_not_paid_again() {
    let engine = engine();
    let runs = Arc::new(Runs::default());
    let call = Call::tool("book");
    let (_, s2, _, id) = to_confirmation(&engine, &runs, &call).await;
    // The response of the payment round was lost: the client retries the same state. It gets the
    // confirmation step again — not a new payment page.
    let consent = call.retry(json!({"payment": {"action": "accept"}}), Some(&s2));
    for _ in 0..2 {
        let again = asked(engine.run(&consent.request(), handler(&runs)).await);
        assert_eq!(keys(&again), ["confirm"], "a retry of the payment round asked {:?}", keys(&again));
    }
    // The completion was consumed by this flow: the page's record is gone from the store.
    assert_eq!(engine.url_completions().status(&id).await.unwrap(), elicit_runtime::server::store::UrlStatus::Unknown);
    // Another flow cannot take it.
    let other = Call::tool("book");
    let (_, other_s2, _, _) = to_confirmation(&engine, &runs, &other).await;
    let _ = other_s2;
    assert_eq!(runs.reference.load(Ordering::SeqCst), 2, "two flows, two references");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confirm_and_decline_racing_never_contradict() {
    for round in 0..4 {
        let engine = engine();
        let runs = Arc::new(Runs::default());
        let call = Call::tool("book");
        let (_, _, s3, _) = to_confirmation(&engine, &runs, &call).await;
        let racers: Vec<_> = (0..8)
            .map(|i| {
                let (engine, retry, h) = (engine.clone(), call.retry(confirm(i % 2 == 0), Some(&s3)), handler(&runs));
                tokio::spawn(async move { engine.run(&retry.request(), h).await })
            })
            .collect();
        let mut outcomes = Vec::new();
        for racer in racers {
            match racer.await.unwrap() {
                Ok(Outcome::Complete(text)) => outcomes.push(text),
                Ok(other) => panic!("round {round}: unexpected {other:?}"),
                // A loser of the race gets a clear error, never a contradicting result.
                Err(error) => assert_eq!(error.code, -32603, "round {round}: {error:?}"),
            }
        }
        assert!(!outcomes.is_empty(), "round {round}: every racer failed");
        assert!(outcomes.iter().all(|o| *o == outcomes[0]), "round {round}: contradicting outcomes {outcomes:?}");
        // Afterwards every replay, whatever its answer, agrees with the recorded outcome.
        for yes in [true, false] {
            let replay = call.retry(confirm(yes), Some(&s3));
            assert_eq!(complete(engine.run(&replay.request(), handler(&runs)).await), outcomes[0], "round {round}");
        }
        let charged = runs.charge.load(Ordering::SeqCst);
        assert!(charged <= 1, "round {round}: charged {charged} times");
        assert_eq!(
            charged == 1,
            outcomes[0].starts_with("Booked!"),
            "round {round}: {outcomes:?} after {charged} charge(s)"
        );
    }
}

#[tokio::test]
async fn answers_for_keys_never_asked_are_ignored() {
    let engine = engine();
    let runs = Arc::new(Runs::default());
    let call = Call::tool("book");
    let first = asked(engine.run(&call.request(), handler(&runs)).await);
    // The client answers `who`, and also the payment and the confirmation it was never asked.
    let mut ahead = who("Ada");
    ahead["payment"] = json!({"action": "accept"});
    ahead["confirm"] = json!({"action": "accept", "content": {"confirm": true}});
    let second =
        asked(engine.run(&call.retry(ahead.clone(), first.request_state.as_deref()).request(), handler(&runs)).await);
    assert_eq!(keys(&second), ["payment"], "an unasked answer was used");
    let id = payment_id(&second);
    assert!(engine.url_completions().complete(&id, json!({"approved": true}), None).await.unwrap());
    // Nor kept for later: the confirmation is asked after the payment.
    let third = asked(
        engine
            .run(
                &call.retry(json!({"payment": {"action": "accept"}}), second.request_state.as_deref()).request(),
                handler(&runs),
            )
            .await,
    );
    assert_eq!(keys(&third), ["confirm"], "an answer given ahead was kept for a later ask");
    assert_eq!(runs.charge.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_failed_computation_is_not_recorded_and_runs_again() {
    let engine = Engine::builder("exactly-once", KeyRing::generate()).once_wait(Duration::from_secs(5)).build();
    let runs = Arc::new(Runs::default());
    let flaky = {
        let runs = runs.clone();
        move |flow: Flow| {
            let runs = runs.clone();
            async move {
                let _ = flow.form::<Name>("who").await?;
                let value = flow
                    .once("flaky", || async {
                        if runs.attempts.fetch_add(1, Ordering::SeqCst) == 0 {
                            Err(FlowError::Failed("the first attempt fails".into()))
                        } else {
                            Ok(7)
                        }
                    })
                    .await?;
                let _ = flow.form::<Confirm>("confirm").await?;
                Ok(value)
            }
        }
    };
    let call = Call::tool("flaky");
    let first = asked(engine.run(&call.request(), flaky.clone()).await);
    let retry = call.retry(who("Ada"), first.request_state.as_deref());
    let error = failed(engine.run(&retry.request(), flaky.clone()).await);
    assert_eq!(error.message, "the first attempt fails");
    // The claim was released: the retry runs it again, and from then on it is recorded.
    let second = asked(engine.run(&retry.request(), flaky.clone()).await);
    asked(engine.run(&retry.request(), flaky.clone()).await);
    assert_eq!(runs.attempts.load(Ordering::SeqCst), 2);
    let done = call.retry(confirm(true), second.request_state.as_deref());
    assert_eq!(complete(engine.run(&done.request(), flaky).await), 7);
}

/// A 2025-era client that answers every form: `who` as Ada, the rest accepted.
struct Ada;

impl elicit_runtime::server::session::SessionPeer for Ada {
    fn request(
        &self,
        _method: &'static str,
        params: Option<Value>,
    ) -> elicit_runtime::server::session::PeerFuture<'_, Result<Value, elicit_runtime::server::session::PeerError>>
    {
        let message = params.as_ref().and_then(|p| p["message"].as_str()).unwrap_or_default().to_owned();
        Box::pin(async move {
            Ok(if message.contains("name") {
                json!({"action": "accept", "content": {"name": "Ada"}})
            } else {
                json!({"action": "accept", "content": {"confirm": true}})
            })
        })
    }

    fn notify(
        &self,
        _method: &'static str,
        _params: Value,
    ) -> elicit_runtime::server::session::PeerFuture<'_, Result<(), elicit_runtime::server::session::PeerError>> {
        Box::pin(async { Ok(()) })
    }
}

#[tokio::test]
async fn once_behaves_the_same_on_the_live_2025_path() {
    use elicit_runtime::server::Request;
    use elicit_runtime::server::session::Session;
    use elicit_runtime::wire::{Capabilities, Revision};

    let engine = engine();
    let runs = Arc::new(Runs::default());
    let session = Session::new(
        Revision::V2025_06_18,
        Capabilities { form: true, ..Capabilities::default() },
        Arc::new(Ada),
        engine.ask_limit(),
    );
    let handler = {
        let runs = runs.clone();
        move |flow: Flow| async move {
            let _ = flow.form::<Name>("who").await?;
            // Asked twice under one key: computed once, the same value both times.
            let first = flow.once("n", || async { Ok(runs.reference.fetch_add(1, Ordering::SeqCst) + 1) }).await?;
            let again = flow.once("n", || async { Ok(runs.reference.fetch_add(1, Ordering::SeqCst) + 1) }).await?;
            // A failing computation is not recorded: the next call runs it.
            let failed = flow.once("m", || async { Err::<usize, _>(FlowError::Failed("not now".into())) }).await;
            let m = flow.once("m", || async { Ok(runs.charge.fetch_add(1, Ordering::SeqCst) + 1) }).await?;
            let _ = flow.form::<Confirm>("confirm").await?;
            Ok(format!("{first} {again} {} {m}", failed.is_err()))
        }
    };
    let text = engine.run_in_session(&Request::new("tools/call", "live"), &session, handler.clone()).await.unwrap();
    assert_eq!(text, "1 1 true 1");
    // Another live call is another flow: its own run.
    let text = engine.run_in_session(&Request::new("tools/call", "live"), &session, handler).await.unwrap();
    assert_eq!(text, "2 2 true 2");
}

/// A flow asking its name and the payment together, then booking in `once`.
async fn both_at_once(flow: Flow, runs: Arc<Runs>) -> Result<String, FlowError> {
    let (who, payment) =
        tokio::join!(flow.form::<Name>("who"), flow.url("payment", "Pay", |id| format!("https://pay.example/{id}")));
    let (Answer::Accepted(who), UrlAnswer::Completed(_)) = (who?, payment?) else { return Ok("not booked".into()) };
    let reference = flow.once("reference", || async { Ok(runs.reference.fetch_add(1, Ordering::SeqCst) + 1) }).await?;
    Ok(format!("REF-{reference} for {}", who.name))
}

#[tokio::test]
async fn a_round_dropped_while_its_url_step_waits_leaves_no_claim_held() {
    // A short `once_wait`: before the fix the held claim made the last round wait this long and
    // fail with -32603 "still being run by another round".
    let engine = Engine::builder("exactly-once", KeyRing::generate())
        .once_wait(Duration::from_secs(1))
        .url_retry_wait(Duration::from_millis(500))
        .build();
    let runs = Arc::new(Runs::default());
    let handler = {
        let runs = runs.clone();
        move |flow: Flow| both_at_once(flow, runs.clone())
    };
    let call = Call::tool("both");
    let first = asked(engine.run(&call.request(), handler.clone()).await);
    assert_eq!(keys(&first), ["who", "payment"]);
    let id = payment_id(&first);
    // The payment is accepted but its page not done yet, and the name is missing: the round
    // suspends on `who` while the payment's wait for the page is still under way.
    let payment_only = call.retry(json!({"payment": {"action": "accept"}}), first.request_state.as_deref());
    let second = asked(engine.run(&payment_only.request(), handler.clone()).await);
    assert_eq!(keys(&second), ["who"]);
    // The page completes; the name comes, then the payment again (only keys the last round
    // asked are read): the flow finishes, booking once, with no wait on a claim left held.
    assert!(engine.url_completions().complete(&id, json!({"approved": true}), None).await.unwrap());
    let third =
        asked(engine.run(&call.retry(who("Ada"), second.request_state.as_deref()).request(), handler.clone()).await);
    assert_eq!(keys(&third), ["payment"]);
    assert_eq!(payment_id(&third), id, "the step was minted again");
    let done = call.retry(json!({"payment": {"action": "accept"}}), third.request_state.as_deref());
    assert_eq!(complete(engine.run(&done.request(), handler.clone()).await), "REF-1 for Ada");
    assert_eq!(complete(engine.run(&done.request(), handler).await), "REF-1 for Ada");
    assert_eq!(runs.reference.load(Ordering::SeqCst), 1);
}
