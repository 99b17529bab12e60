//! One outcome per flow: random sequences of rounds, forks (replays of any state a flow was given,
//! with any answers), concurrent duplicates of a round, payment-page completions, time passing on
//! an injected clock (claims' leases and states expire), and a store whose claims are answered
//! late or whose replies are lost, through one engine and its in-process store.
//!
//! The handler books: `who` (form), `reference` (once), `payment` (URL), `confirm` (form), `charge`
//! (once, only when confirmed). Each flow is its own call (its arguments name it), and counters
//! count every run of each `once` computation per flow. Invariants, after every step:
//! - no `once` computation of a flow ran twice;
//! - every complete result of a flow is the same result (no fork, copy or changed answer
//!   contradicts how the flow ended);
//! - a booked flow was charged once, a flow that ended unbooked was never charged;
//! - errors are only `-32602` (the client's input) or `-32603` (a round racing the finish, a store
//!   reply lost), and a state the engine sealed is refused only once it has expired.

#![no_main]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use arbitrary::{Result, Unstructured};
use elicit_runtime::Elicit;
use elicit_runtime::server::store::InProcessStore;
use elicit_runtime::server::{
    Answer, Clock, Engine, EngineError, Flow, FlowError, ManualClock, Outcome, Request, UrlAnswer,
};
use elicit_runtime::state::KeyRing;
use elicit_test_support::ledger::{ClaimFault, FaultyClaims};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};

const MAX_STEPS: usize = 24;
const MAX_FLOWS: u64 = 3;
const STATE_TTL: Duration = Duration::from_secs(30);
const CLAIM_LEASE: Duration = Duration::from_secs(2);

/// Who books?
#[derive(Elicit, Debug)]
struct Who {
    /// Your name
    name: String,
}

/// Book it?
#[derive(Elicit, Debug)]
struct Confirm {
    /// Tick to book
    confirm: bool,
}

/// Runs of each `once` computation, per flow.
#[derive(Default)]
struct Runs {
    reference: HashMap<u64, usize>,
    charge: HashMap<u64, usize>,
}

type Shared = Arc<Mutex<Runs>>;

fn lock(runs: &Shared) -> std::sync::MutexGuard<'_, Runs> {
    runs.lock().unwrap_or_else(|e| e.into_inner())
}

async fn book(flow: Flow, runs: Shared) -> std::result::Result<String, FlowError> {
    let id = flow.arguments()["flow"].as_u64().unwrap_or(u64::MAX);
    let who = match flow.form::<Who>("who").await? {
        Answer::Accepted(who) => who.name,
        _ => return Ok("no name".into()),
    };
    let reference = flow
        .once("reference", || async {
            let n = {
                let mut runs = lock(&runs);
                let n = runs.reference.entry(id).or_insert(0);
                *n += 1;
                *n
            };
            // Let concurrent copies of the round run while this one is half-way.
            tokio::task::yield_now().await;
            Ok(format!("R{id}-{n}"))
        })
        .await?;
    match flow.url("payment", "Pay", |pid| format!("https://pay.example/{pid}")).await? {
        UrlAnswer::Completed(outcome) if outcome["approved"] == true => {}
        _ => return Ok(format!("unpaid {reference}")),
    }
    match flow.form::<Confirm>("confirm").await? {
        Answer::Accepted(Confirm { confirm: true }) => {
            flow.once("charge", || async {
                *lock(&runs).charge.entry(id).or_insert(0) += 1;
                tokio::task::yield_now().await;
                Ok(())
            })
            .await?;
            Ok(format!("Booked {reference} for {who}"))
        }
        _ => Ok(format!("Not booked {reference}")),
    }
}

/// One flow's history: every state it was given (and when), the payment ids it was shown, how it
/// ended.
#[derive(Default)]
struct History {
    states: Vec<(String, SystemTime)>,
    pages: Vec<String>,
    ended: Option<String>,
}

struct World {
    engine: Arc<Engine>,
    runs: Shared,
    flows: Vec<History>,
    clock: ManualClock,
    store: Arc<FaultyClaims<InProcessStore>>,
}

fn meta() -> Map<String, Value> {
    let mut meta = Map::new();
    meta.insert("io.modelcontextprotocol/protocolVersion".into(), json!("2026-07-28"));
    meta.insert("io.modelcontextprotocol/clientCapabilities".into(), json!({"elicitation": {"form": {}, "url": {}}}));
    meta
}

async fn round(
    engine: Arc<Engine>,
    runs: Shared,
    flow: u64,
    responses: Option<Value>,
    state: Option<String>,
) -> std::result::Result<Outcome<String>, EngineError> {
    let arguments = json!({"flow": flow});
    let meta = meta();
    let request = Request::new("tools/call", "book")
        .arguments(Some(&arguments))
        .meta(Some(&meta))
        .input_responses(responses.as_ref())
        .request_state(state.as_deref());
    engine.run(&request, |f| book(f, runs)).await
}

fn answers(u: &mut Unstructured<'_>) -> Result<Value> {
    let mut responses = Map::new();
    let choice = |u: &mut Unstructured<'_>, accept: Value| -> Result<Option<Value>> {
        Ok(match u.int_in_range(0u8..=5)? {
            0 | 1 => Some(accept),
            2 => Some(json!({"action": "decline"})),
            3 => Some(json!({"action": "cancel"})),
            4 => None,
            _ => Some(json!({"action": "accept", "content": {"unexpected": u.arbitrary::<bool>()?}})),
        })
    };
    let name = if u.arbitrary::<bool>()? { "Ada" } else { "Bob" };
    if let Some(who) = choice(u, json!({"action": "accept", "content": {"name": name}}))? {
        responses.insert("who".into(), who);
    }
    if let Some(payment) = choice(u, json!({"action": "accept"}))? {
        responses.insert("payment".into(), payment);
    }
    let yes = u.arbitrary::<bool>()?;
    if let Some(confirm) = choice(u, json!({"action": "accept", "content": {"confirm": yes}}))? {
        responses.insert("confirm".into(), confirm);
    }
    Ok(Value::Object(responses))
}

impl World {
    /// Records what a round of `flow` (from a state sealed at `sealed`) produced, checking the
    /// invariants on it.
    fn observe(
        &mut self,
        flow: u64,
        sealed: Option<SystemTime>,
        outcome: std::result::Result<Outcome<String>, EngineError>,
    ) {
        let now = self.clock.now();
        let history = &mut self.flows[usize::try_from(flow).unwrap_or(0)];
        match outcome {
            Ok(Outcome::InputRequired(asked)) => {
                for (key, request) in &asked.input_requests {
                    if key == "payment"
                        && let Some(url) = request.to_json()["params"]["url"].as_str()
                        && let Some(id) = url.rsplit('/').next()
                    {
                        history.pages.push(id.to_owned());
                    }
                }
                if let Some(state) = asked.request_state {
                    history.states.push((state, now));
                }
            }
            Ok(Outcome::Complete(text)) => match &history.ended {
                None => history.ended = Some(text),
                Some(ended) => assert_eq!(ended, &text, "flow {flow} ended twice, differently"),
            },
            Err(error) => {
                assert!(error.code == -32602 || error.code == -32603, "unexpected error {error:?}");
                if error.message == elicit_runtime::state::INVALID_STATE_MESSAGE {
                    let expired = sealed.is_some_and(|sealed| now + Duration::from_secs(1) > sealed + STATE_TTL);
                    assert!(expired, "the engine refused its own state before it expired");
                }
            }
        }
        let runs = lock(&self.runs);
        for (id, n) in runs.reference.iter().chain(runs.charge.iter()) {
            assert!(*n <= 1, "a once computation of flow {id} ran {n} times");
        }
    }

    fn check_endings(&self) {
        let runs = lock(&self.runs);
        for (id, history) in self.flows.iter().enumerate() {
            let charged = runs.charge.get(&(id as u64)).copied().unwrap_or(0);
            match &history.ended {
                Some(text) if text.starts_with("Booked") => {
                    assert_eq!(charged, 1, "flow {id}: {text} without one charge")
                }
                Some(text) => assert_eq!(charged, 0, "flow {id}: {text}, yet charged"),
                None => {}
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let _ = elicit_fuzz::block_on(drive(&mut u));
});

async fn drive(u: &mut Unstructured<'_>) -> Result<()> {
    let clock = ManualClock::new();
    let store = Arc::new(FaultyClaims::new(InProcessStore::new().clock(Arc::new(clock.clone())), ClaimFault::None));
    let engine = Arc::new(
        Engine::builder("elicit-fuzz-once", KeyRing::new(vec![[7; 32]]).expect("a ring"))
            .store(store.clone())
            .clock(Arc::new(clock.clone()))
            .state_ttl(STATE_TTL)
            .claim_lease(CLAIM_LEASE)
            .build(),
    );
    let mut world = World { engine, runs: Shared::default(), flows: Vec::new(), clock, store };
    let steps = u.int_in_range(1usize..=MAX_STEPS)?;
    for _ in 0..steps {
        let op = u.int_in_range(0u8..=11)?;
        // A new flow when there is none yet or when asked to.
        if world.flows.is_empty() || (op == 0 && (world.flows.len() as u64) < MAX_FLOWS) {
            let flow = world.flows.len() as u64;
            world.flows.push(History::default());
            let outcome = round(world.engine.clone(), world.runs.clone(), flow, None, None).await;
            world.observe(flow, None, outcome);
            continue;
        }
        // Time passes: leases, and sometimes states, expire.
        if op == 10 {
            world.clock.advance(Duration::from_secs(u.int_in_range(0u64..=20)?));
            continue;
        }
        // The store's claims are answered at once, late, or their replies are lost.
        if op == 11 {
            let late = Duration::from_millis(5);
            let fault = [ClaimFault::None, ClaimFault::Before(late), ClaimFault::After(late), ClaimFault::ReplyLost];
            world.store.set_fault(fault[usize::from(u.int_in_range(0u8..=3)?)]);
            continue;
        }
        let flow = u.int_in_range(0..=world.flows.len() as u64 - 1)?;
        let history = &world.flows[usize::try_from(flow).unwrap_or(0)];
        match op {
            // The page completes (approves or denies) one of the steps this flow was shown.
            1 | 2 => {
                if history.pages.is_empty() {
                    continue;
                }
                let page = u.choose(&history.pages)?.clone();
                let approved = op == 1 || u.ratio(3u8, 4)?;
                let _ = world.engine.url_completions().complete(&page, json!({"approved": approved}), None).await;
            }
            // Concurrent copies of a round of one state, each with its own answers.
            3 | 4 => {
                if history.states.is_empty() {
                    continue;
                }
                let (state, sealed) = u.choose(&history.states)?.clone();
                let copies = u.int_in_range(2usize..=4)?;
                let same = u.arbitrary::<bool>()?;
                let first = answers(u)?;
                let mut set = tokio::task::JoinSet::new();
                for _ in 0..copies {
                    let responses = if same { first.clone() } else { answers(u)? };
                    set.spawn(round(
                        world.engine.clone(),
                        world.runs.clone(),
                        flow,
                        Some(responses),
                        Some(state.clone()),
                    ));
                }
                while let Some(outcome) = set.join_next().await {
                    if let Ok(outcome) = outcome {
                        world.observe(flow, Some(sealed), outcome);
                    }
                }
            }
            // One round: the latest state (the honest client) or any earlier one (a replay).
            _ => {
                if history.states.is_empty() {
                    continue;
                }
                let (state, sealed) = if op <= 7 {
                    history.states[history.states.len() - 1].clone()
                } else {
                    u.choose(&history.states)?.clone()
                };
                let responses = answers(u)?;
                let outcome = round(world.engine.clone(), world.runs.clone(), flow, Some(responses), Some(state)).await;
                world.observe(flow, Some(sealed), outcome);
            }
        }
        world.check_endings();
    }
    world.check_endings();
    Ok(())
}
