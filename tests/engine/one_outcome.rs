//! One outcome per flow: a client may replay and fork any `requestState` it was given, before,
//! after or at the same time as the flow's real last round, and the flow still finishes one way.
//!
//! Two flows: a form-only one (nothing but answers), and a booking one whose middle step is a
//! payment page (a URL-mode step whose completion is taken). Each order is played on one instance
//! (the in-process store) and on two instances sharing a real redis-server, every round
//! alternating between them.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::redis::Redis;
use elicit_test_support::server;

use std::sync::Arc;

use elicit_runtime::Elicit;
use elicit_runtime::server::store::RedisStore;
use elicit_runtime::server::{Answer, Engine, EngineError, Flow, FlowError, Outcome, UrlAnswer};
use elicit_runtime::state::KeyRing;
use serde_json::{Value, json};

use server::engine::{Call, Name, asked, complete, request_json};

/// Book it?
#[derive(Elicit, Debug, Clone, PartialEq)]
struct Confirm {
    /// Tick to book
    confirm: bool,
}

/// Who, then confirm: answers only.
async fn plain(flow: Flow) -> Result<String, FlowError> {
    let who = match flow.form::<Name>("who").await? {
        Answer::Accepted(who) => who.name,
        _ => return Ok("No booking made".into()),
    };
    match flow.form::<Confirm>("confirm").await? {
        Answer::Accepted(Confirm { confirm: true }) => Ok(format!("Booked for {who}")),
        _ => Ok("No booking made".into()),
    }
}

/// Who, a payment page, then confirm.
async fn paid(flow: Flow) -> Result<String, FlowError> {
    let who = match flow.form::<Name>("who").await? {
        Answer::Accepted(who) => who.name,
        _ => return Ok("No booking made".into()),
    };
    match flow.url("payment", "Pay", |id| format!("https://pay.example/{id}")).await? {
        UrlAnswer::Completed(outcome) if outcome["approved"] == true => {}
        _ => return Ok("No booking made".into()),
    }
    match flow.form::<Confirm>("confirm").await? {
        Answer::Accepted(Confirm { confirm: true }) => Ok(format!("Booked for {who}")),
        _ => Ok("No booking made".into()),
    }
}

type Round = std::pin::Pin<Box<dyn Future<Output = Result<String, FlowError>> + Send>>;
type Handler = fn(Flow) -> Round;

fn plain_handler(flow: Flow) -> Round {
    Box::pin(plain(flow))
}

fn paid_handler(flow: Flow) -> Round {
    Box::pin(paid(flow))
}

/// One or two engines serving the same flows; rounds alternate between them.
struct Instances {
    engines: Vec<Arc<Engine>>,
    next: std::sync::atomic::AtomicUsize,
    _redis: Option<Redis>,
}

impl Instances {
    fn one() -> Instances {
        let engine = Engine::builder("one-outcome", KeyRing::generate()).build();
        Instances { engines: vec![Arc::new(engine)], next: 0.into(), _redis: None }
    }

    async fn two_on_redis(test: &str) -> Option<Instances> {
        let redis = Redis::start_or_skip(test, None)?;
        let keys = KeyRing::generate();
        let mut engines = Vec::new();
        for _ in 0..2 {
            let store = RedisStore::builder(redis.url()).key_prefix(test).connect().await.unwrap();
            engines.push(Arc::new(Engine::builder("one-outcome", keys.clone()).store(Arc::new(store)).build()));
        }
        Some(Instances { engines, next: 0.into(), _redis: Some(redis) })
    }

    fn engine(&self) -> Arc<Engine> {
        let at = self.next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.engines[at % self.engines.len()].clone()
    }

    async fn run(&self, call: &Call, handler: Handler) -> Result<Outcome<String>, EngineError> {
        self.engine().run(&call.request(), handler).await
    }
}

/// The states of a flow walked to its confirmation: after `who` was asked, and after `confirm` was.
async fn to_confirmation(on: &Instances, call: &Call, handler: Handler) -> (String, String) {
    let first = asked(on.run(call, handler).await);
    let s1 = first.request_state.clone().unwrap();
    let mut next = asked(on.run(&call.retry(who("Ada"), Some(&s1)), handler).await);
    if next.input_requests[0].0 == "payment" {
        let url = request_json(&next, "payment")["params"]["url"].as_str().unwrap().to_owned();
        let id = url.rsplit('/').next().unwrap().to_owned();
        assert!(on.engine().url_completions().complete(&id, json!({"approved": true}), None).await.unwrap());
        let state = next.request_state.clone().unwrap();
        next = asked(on.run(&call.retry(json!({"payment": {"action": "accept"}}), Some(&state)), handler).await);
    }
    assert_eq!(next.input_requests[0].0, "confirm");
    (s1, next.request_state.clone().unwrap())
}

fn who(name: &str) -> Value {
    json!({"who": {"action": "accept", "content": {"name": name}}})
}

fn declined_who() -> Value {
    json!({"who": {"action": "decline"}})
}

fn confirmed() -> Value {
    json!({"confirm": {"action": "accept", "content": {"confirm": true}}})
}

/// Every round that completed gave the same result; returns it.
fn one_outcome(rounds: &[Result<Outcome<String>, EngineError>]) -> String {
    let completed: Vec<&String> = rounds
        .iter()
        .filter_map(|round| match round {
            Ok(Outcome::Complete(text)) => Some(text),
            _ => None,
        })
        .collect();
    assert!(!completed.is_empty(), "no round completed: {rounds:?}");
    assert!(completed.iter().all(|text| *text == completed[0]), "one flow, several outcomes: {rounds:?}");
    for round in rounds {
        match round {
            Ok(Outcome::Complete(_)) => {}
            Err(error) => assert_eq!(error.code, -32603, "a fork is refused with a clear error: {error:?}"),
            Ok(Outcome::InputRequired(asked)) => panic!("a fork of a finished flow asked again: {asked:?}"),
        }
    }
    completed[0].clone()
}

/// The fork first (the first state replayed, the trip declined), then the real last round, then
/// both again: one outcome.
async fn fork_before(on: &Instances, handler: Handler) {
    let call = Call::tool("book");
    let (s1, s_confirm) = to_confirmation(on, &call, handler).await;
    let fork = on.run(&call.retry(declined_who(), Some(&s1)), handler).await;
    let last = on.run(&call.retry(confirmed(), Some(&s_confirm)), handler).await;
    let fork_again = on.run(&call.retry(declined_who(), Some(&s1)), handler).await;
    let last_again = on.run(&call.retry(confirmed(), Some(&s_confirm)), handler).await;
    one_outcome(&[fork, last, fork_again, last_again]);
}

/// The real last round first, then the fork: the fork gets the recorded result.
async fn fork_after(on: &Instances, handler: Handler) {
    let call = Call::tool("book");
    let (s1, s_confirm) = to_confirmation(on, &call, handler).await;
    let last = complete(on.run(&call.retry(confirmed(), Some(&s_confirm)), handler).await);
    assert_eq!(last, "Booked for Ada");
    let fork = complete(on.run(&call.retry(declined_who(), Some(&s1)), handler).await);
    assert_eq!(fork, last, "a fork after the finish gets the recorded result");
    let renamed = complete(on.run(&call.retry(who("Grace"), Some(&s1)), handler).await);
    assert_eq!(renamed, last);
}

/// The fork and the real last round at the same time, a few times over: one outcome each time.
async fn fork_concurrently(on: &Instances, handler: Handler) {
    for _ in 0..8 {
        let call = Call::tool("book");
        let (s1, s_confirm) = to_confirmation(on, &call, handler).await;
        let (fork_call, last_call) = (call.retry(declined_who(), Some(&s1)), call.retry(confirmed(), Some(&s_confirm)));
        let (fork, last) = tokio::join!(on.run(&fork_call, handler), on.run(&last_call, handler));
        // Whatever won, every later round of the flow agrees with it.
        let later = on.run(&fork_call, handler).await;
        let later_last = on.run(&last_call, handler).await;
        one_outcome(&[fork, last, later, later_last]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_before_the_last_round_does_not_give_a_second_outcome() {
    fork_before(&Instances::one(), plain_handler).await;
    fork_before(&Instances::one(), paid_handler).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_after_the_last_round_gets_the_recorded_result() {
    fork_after(&Instances::one(), plain_handler).await;
    fork_after(&Instances::one(), paid_handler).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_racing_the_last_round_does_not_give_a_second_outcome() {
    fork_concurrently(&Instances::one(), plain_handler).await;
    fork_concurrently(&Instances::one(), paid_handler).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forks_on_two_instances_sharing_redis_give_one_outcome() {
    let test = "forks_on_two_instances_sharing_redis_give_one_outcome";
    let Some(on) = Instances::two_on_redis(test).await else { return };
    for handler in [plain_handler as Handler, paid_handler] {
        fork_before(&on, handler).await;
        fork_after(&on, handler).await;
        fork_concurrently(&on, handler).await;
    }
}

/// How many travel?
#[derive(Elicit, Debug, Clone, PartialEq)]
struct Party {
    /// Travellers
    travellers: u32,
}

/// How many, a price quoted once for them, then confirm.
async fn priced(flow: Flow) -> Result<String, FlowError> {
    let Answer::Accepted(party) = flow.form::<Party>("party").await? else { return Ok("No booking made".into()) };
    let quote = flow.once("quote", || async move { Ok(129 * party.travellers) }).await?;
    match flow.form::<Confirm>("confirm").await? {
        Answer::Accepted(Confirm { confirm: true }) => {
            Ok(format!("Booked {} traveller(s) for €{quote}", party.travellers))
        }
        _ => Ok("No booking made".into()),
    }
}

fn priced_handler(flow: Flow) -> Round {
    Box::pin(priced(flow))
}

fn party(travellers: u32) -> Value {
    json!({"party": {"action": "accept", "content": {"travellers": travellers}}})
}

/// The price fork: one traveller is quoted, then the first state is replayed with nine. The
/// quote belongs to the one-traveller history: the nine-traveller fork fails as a conflict instead
/// of passing it, and the flow books what it priced. Played both ways round: whichever branch
/// reached the quote first owns it.
async fn price_fork(on: &Instances) {
    let call = Call::tool("book");
    let s1 = asked(on.run(&call, priced_handler).await).request_state.unwrap();
    let cheap = asked(on.run(&call.retry(party(1), Some(&s1)), priced_handler).await);
    assert_eq!(cheap.input_requests[0].0, "confirm");
    let dear = on.run(&call.retry(party(9), Some(&s1)), priced_handler).await;
    let refused = dear.expect_err("a fork with nine travellers passed the quote for one");
    assert_eq!((refused.code, refused.message.as_str()), (-32603, elicit_runtime::server::FLOW_CONFLICT));
    // The branch the quote belongs to goes on: its own state, and the first state replayed with
    // its own answer.
    let again = asked(on.run(&call.retry(party(1), Some(&s1)), priced_handler).await);
    assert_eq!(again.input_requests[0].0, "confirm");
    let state = cheap.request_state.unwrap();
    let booked = complete(on.run(&call.retry(confirmed(), Some(&state)), priced_handler).await);
    assert_eq!(booked, "Booked 1 traveller(s) for €129");

    // The other way round: the dear branch quotes first, the cheap fork is refused.
    let call = Call::tool("book");
    let s1 = asked(on.run(&call, priced_handler).await).request_state.unwrap();
    let dear = asked(on.run(&call.retry(party(9), Some(&s1)), priced_handler).await);
    let refused = on.run(&call.retry(party(1), Some(&s1)), priced_handler).await.expect_err("the cheap fork");
    assert_eq!(refused.message, elicit_runtime::server::FLOW_CONFLICT);
    let state = dear.request_state.unwrap();
    let booked = complete(on.run(&call.retry(confirmed(), Some(&state)), priced_handler).await);
    assert_eq!(booked, "Booked 9 traveller(s) for €1161");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_that_changes_an_answer_before_a_once_does_not_reuse_its_value() {
    price_fork(&Instances::one()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_price_fork_on_two_instances_sharing_redis_does_not_reuse_the_quote() {
    let test = "a_price_fork_on_two_instances_sharing_redis";
    let Some(on) = Instances::two_on_redis(test).await else { return };
    price_fork(&on).await;
}

/// The payment fork: Ada's payment taken, then the first state answered with another name and the
/// payment page accepted. The completion belongs to Ada's answers: the fork fails as a conflict
/// instead of booking for Grace with Ada's payment, and Ada's branch books.
async fn payment_fork(on: &Instances) {
    let call = Call::tool("book");
    let (s1, s_confirm) = to_confirmation(on, &call, paid_handler).await;
    let renamed = asked(on.run(&call.retry(who("Grace"), Some(&s1)), paid_handler).await);
    assert_eq!(renamed.input_requests[0].0, "payment");
    let state = renamed.request_state.unwrap();
    let consent = json!({"payment": {"action": "accept"}});
    let refused = on.run(&call.retry(consent, Some(&state)), paid_handler).await.expect_err("Grace took Ada's payment");
    assert_eq!((refused.code, refused.message.as_str()), (-32603, elicit_runtime::server::FLOW_CONFLICT));
    let booked = complete(on.run(&call.retry(confirmed(), Some(&s_confirm)), paid_handler).await);
    assert_eq!(booked, "Booked for Ada");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_that_changes_an_answer_before_a_payment_cannot_take_it() {
    payment_fork(&Instances::one()).await;
    let test = "a_fork_that_changes_an_answer_before_a_payment";
    let Some(on) = Instances::two_on_redis(test).await else { return };
    payment_fork(&on).await;
}
