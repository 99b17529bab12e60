//! Helpers for your own test suite: catch in an ordinary test what no ordinary client shows.
//!
//! On 2026-07-28 the engine re-runs a handler from the top every round, and a client may send any
//! `requestState` it was given again, as often as it likes. Work written outside
//! [`Flow::once`](crate::server::Flow::once) runs again on each of those rounds — a charge after
//! the first form runs once per later round — but a well-behaved client never replays, so a test
//! that only drives the flow forward never sees it. [`ReplayCheck`] drives a handler through every
//! round, then replays each state it was given, and fails when a replay answers differently or
//! runs counted work again. Given changed answers ([`ReplayCheck::forks`]), it also forks each
//! round as a hostile client may before the flow finishes, and fails when the fork passes what
//! the first branch computed for other answers.

use std::fmt;
use std::future::Future;

use serde_json::{Map, Value};

use crate::server::{Engine, EngineError, FLOW_CONFLICT, Flow, FlowError, Outcome, Request};
use crate::wire::{ElicitParams, InputRequest, InputRequiredResult};

/// How many rounds a flow may take before the check gives up on it.
pub const MAX_ROUNDS: usize = 32;

/// Drives a handler through every round, then replays each round's state, as a hostile client
/// may: a replay must answer what that round answered (or, once the flow has finished, what the
/// flow finished with), and must not run counted work again.
///
/// Work is counted by a probe you give ([`ReplayCheck::effects`]): typically a counter your test
/// double increments (charges made, mails sent). After the forward run, no replay may move it;
/// work in [`Flow::once`](crate::server::Flow::once) is recorded and not run again, so it passes.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// use elicit_runtime::server::{Answer, Engine, Flow, FlowError, Request};
/// use elicit_runtime::state::KeyRing;
/// use elicit_runtime::testing::ReplayCheck;
/// use elicit_runtime::Elicit;
/// use serde_json::json;
///
/// /// How many?
/// #[derive(Elicit)]
/// struct Count {
///     count: u32,
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let engine = Engine::builder("shop", KeyRing::generate()).build();
/// let charges = Arc::new(AtomicU64::new(0));
/// let handler = |flow: Flow| {
///     let charges = charges.clone();
///     async move {
///         let Answer::Accepted(Count { count }) = flow.form::<Count>("count").await? else {
///             return Ok("nothing".to_owned());
///         };
///         // Inside `once`: charged once per flow, however often a round is replayed.
///         flow.once("charge", || async { Ok(charges.fetch_add(1, Ordering::SeqCst)) }).await?;
///         let _confirmed = flow.form::<Count>("again").await?;
///         Ok(format!("charged for {count}"))
///     }
/// };
/// let meta = json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
/// let request = Request::new("tools/call", "buy").meta(meta.as_object());
/// ReplayCheck::new(&engine, request)
///     .effects(|| charges.load(Ordering::SeqCst))
///     .run(handler, async |_key, _request| json!({"action": "accept", "content": {"count": 2}}))
///     .await
///     .unwrap();
/// # });
/// ```
pub struct ReplayCheck<'a, 'r> {
    engine: &'a Engine,
    request: Request<'r>,
    effects: Option<Box<dyn Fn() -> u64 + 'a>>,
    forks: Option<Box<Change<'a>>>,
}

/// Changes one answer for a fork: the changed answer, or `None` to send it unchanged.
type Change<'a> = dyn Fn(&str, &Value) -> Option<Value> + 'a;

impl fmt::Debug for ReplayCheck<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReplayCheck").field("request", &self.request).finish_non_exhaustive()
    }
}

/// What a replay did that a flow must not do.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ReplayFailure {
    /// The flow was still asking after [`MAX_ROUNDS`] rounds.
    TooManyRounds,
    /// A round of the forward run failed; the error the engine answered.
    Engine {
        /// The round, counted from 1.
        round: usize,
        /// The JSON-RPC error code.
        code: i32,
        /// Its message.
        message: String,
    },
    /// Replaying a round answered something else than that round did, and else than the flow's
    /// result. Every field is a short description (long values clipped, sealed `requestState`
    /// never shown).
    Diverged {
        /// The round replayed, counted from 1.
        round: usize,
        /// The input in question: the ask that differs, or the input the round asked for (a
        /// replay of it finished otherwise); `None` for a round that asked nothing.
        key: Option<String>,
        /// What the replay should have answered: the round's ask again, or the flow's result.
        expected: String,
        /// What the replay answered.
        got: String,
    },
    /// A fork of a round with changed answers answered otherwise than a new flow given the same
    /// answers, and did not fail as a conflict: it passed a value computed for other answers.
    Forked {
        /// The round forked, counted from 1.
        round: usize,
        /// What the fork answered (`Debug` of the result, or the error).
        forked: String,
        /// What a new flow given the same answers answered.
        fresh: String,
    },
    /// Replaying a round ran counted work again: work outside `once`.
    RanAgain {
        /// The round replayed, counted from 1.
        round: usize,
        /// The probe after the forward run.
        before: u64,
        /// The probe after the replay.
        after: u64,
    },
}

impl fmt::Display for ReplayFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplayFailure::TooManyRounds => write!(f, "the flow was still asking after {MAX_ROUNDS} rounds"),
            ReplayFailure::Engine { round, code, message } => {
                write!(f, "round {round} failed with JSON-RPC error {code}: {}", clip(message))
            }
            ReplayFailure::Diverged { round, key, expected, got } => {
                write!(f, "replaying round {round}")?;
                if let Some(key) = key {
                    write!(f, " (input `{key}`)")?;
                }
                write!(f, ": expected {expected}, got {got}")
            }
            ReplayFailure::Forked { round, forked, fresh } => write!(
                f,
                "forking round {round} with changed answers answered {}, where a new flow given those \
                 answers answered {}: the fork passed a value computed for other answers",
                clip(forked),
                clip(fresh)
            ),
            ReplayFailure::RanAgain { round, before, after } => write!(
                f,
                "replaying round {round} ran counted work again ({before} before, {after} after): \
                 work a replay must not repeat belongs in `Flow::once`"
            ),
        }
    }
}

impl std::error::Error for ReplayFailure {}

/// One round of the forward run: what was sent, and what came back.
struct Round<R> {
    state: Option<String>,
    responses: Option<Value>,
    outcome: Outcome<R>,
}

impl<'a, 'r> ReplayCheck<'a, 'r> {
    /// A check of the flow `request` starts (its method, name, arguments, `_meta`, principal) on
    /// `engine`. Any `inputResponses` or `requestState` in `request` are ignored.
    pub fn new(engine: &'a Engine, request: Request<'r>) -> Self {
        ReplayCheck { engine, request, effects: None, forks: None }
    }

    /// Also forks every round of the flow but its last with changed answers, as a hostile client
    /// may before the flow finishes: on a new flow, the round is run with its answers, then its
    /// state is sent again with each answer `change(key, answer)` changes, and the fork is driven
    /// to its end (later asks answered as in the forward run). The fork must fail with the
    /// engine's [`FLOW_CONFLICT`], or answer what a new flow given
    /// the same answers answers: a fork that changed an answer preceding a
    /// [`Flow::once`](crate::server::Flow::once) must not pass the value the first branch
    /// computed. A round whose answers `change` leaves alone is not forked. Choose changes whose
    /// outcome the answers decide: a fork that legitimately reuses a random value (a reference
    /// minted before the changed answer) shows it where a new flow shows another.
    pub fn forks(mut self, change: impl Fn(&str, &Value) -> Option<Value> + 'a) -> Self {
        self.forks = Some(Box::new(change));
        self
    }

    /// Counts the work that must happen at most once (charges, mails, writes): no replay may
    /// change what `probe` returns.
    pub fn effects(mut self, probe: impl Fn() -> u64 + 'a) -> Self {
        self.effects = Some(Box::new(probe));
        self
    }

    /// Runs `handler` forward, answering every input request with `answer(key, request)` (a
    /// response as a client sends it in `inputResponses`, such as
    /// `{"action": "accept", "content": {..}}`; for a URL-mode ask, complete the step in the
    /// engine's store before answering), then replays every round. Returns the flow's result.
    ///
    /// # Errors
    ///
    /// The first [`ReplayFailure`] found.
    pub async fn run<R, F, Fut>(
        self,
        handler: F,
        mut answer: impl AsyncFnMut(&str, &InputRequest) -> Value,
    ) -> Result<R, ReplayFailure>
    where
        R: fmt::Debug + PartialEq,
        F: Fn(Flow) -> Fut,
        Fut: Future<Output = Result<R, FlowError>>,
    {
        let mut rounds: Vec<Round<R>> = Vec::new();
        let mut state: Option<String> = None;
        let mut responses: Option<Value> = None;
        loop {
            if rounds.len() == MAX_ROUNDS {
                return Err(ReplayFailure::TooManyRounds);
            }
            let outcome = self.round(&handler, state.as_deref(), responses.as_ref(), rounds.len() + 1).await?;
            let asked = match &outcome {
                Outcome::Complete(_) => None,
                Outcome::InputRequired(asked) => Some(asked.clone()),
            };
            rounds.push(Round { state: state.take(), responses: responses.take(), outcome });
            let Some(asked) = asked else { break };
            let mut answers = Map::new();
            for (key, request) in &asked.input_requests {
                answers.insert(key.clone(), answer(key, request).await);
            }
            state = asked.request_state;
            responses = Some(Value::Object(answers));
        }
        let before = self.effects.as_ref().map(|probe| probe());
        let Some(Round { outcome: Outcome::Complete(last), .. }) = rounds.last() else {
            return Err(ReplayFailure::TooManyRounds);
        };
        for (index, round) in rounds.iter().enumerate() {
            let number = index + 1;
            let replayed = self.round(&handler, round.state.as_deref(), round.responses.as_ref(), number).await;
            if let Some((key, expected, got)) = divergence(&replayed, &round.outcome, last) {
                return Err(ReplayFailure::Diverged { round: number, key, expected, got });
            }
            if let (Some(probe), Some(before)) = (&self.effects, before) {
                let after = probe();
                if after != before {
                    return Err(ReplayFailure::RanAgain { round: number, before, after });
                }
            }
        }
        if let Some(change) = &self.forks {
            // The last round finished the flow: a fork of it is answered with the result.
            for number in 2..rounds.len() {
                self.fork(&handler, &mut answer, change, number).await?;
            }
        }
        let Some(Round { outcome: Outcome::Complete(last), .. }) = rounds.pop() else {
            return Err(ReplayFailure::TooManyRounds);
        };
        Ok(last)
    }

    /// Forks round `number` of a new flow with changed answers (see [`ReplayCheck::forks`]).
    async fn fork<R, F, Fut>(
        &self,
        handler: &F,
        answer: &mut impl AsyncFnMut(&str, &InputRequest) -> Value,
        change: &Change<'a>,
        number: usize,
    ) -> Result<(), ReplayFailure>
    where
        R: fmt::Debug + PartialEq,
        F: Fn(Flow) -> Fut,
        Fut: Future<Output = Result<R, FlowError>>,
    {
        let (state, real) = self.advance(handler, answer, number).await?;
        let forked_answers = changed(&real, change);
        if forked_answers == real {
            return Ok(());
        }
        // The first branch: the round with its own answers (it may compute what the fork reaches).
        self.round::<R, _, _>(handler, Some(&state), Some(&real), number).await?;
        let forked = self.finish(handler, answer, state, forked_answers).await;
        if matches!(&forked, Err(failure) if failure.message == FLOW_CONFLICT) {
            return Ok(());
        }
        let (state, real) = self.advance(handler, answer, number).await?;
        let fresh = self.finish(handler, answer, state, changed(&real, change)).await;
        let same = match (&forked, &fresh) {
            (Ok(a), Ok(b)) => a == b,
            (Err(a), Err(b)) => a == b,
            _ => false,
        };
        if same {
            return Ok(());
        }
        let show = |outcome: &Result<R, EngineError>| match outcome {
            Ok(result) => clip(&format!("{result:?}")),
            Err(error) => clip(&error.to_string()),
        };
        Err(ReplayFailure::Forked { round: number, forked: show(&forked), fresh: show(&fresh) })
    }

    /// A new flow driven up to round `number`: the state that round is sent, and its answers.
    async fn advance<R, F, Fut>(
        &self,
        handler: &F,
        answer: &mut impl AsyncFnMut(&str, &InputRequest) -> Value,
        number: usize,
    ) -> Result<(String, Value), ReplayFailure>
    where
        F: Fn(Flow) -> Fut,
        Fut: Future<Output = Result<R, FlowError>>,
    {
        let (mut state, mut responses) = (None, None);
        for round in 1..number {
            let Outcome::InputRequired(asked) =
                self.round(handler, state.as_deref(), responses.as_ref(), round).await?
            else {
                return Err(ReplayFailure::Diverged {
                    round,
                    key: None,
                    expected: "a request for input".to_owned(),
                    got: "the flow's result, on a new flow".to_owned(),
                });
            };
            let mut answers = Map::new();
            for (key, request) in &asked.input_requests {
                answers.insert(key.clone(), answer(key, request).await);
            }
            state = asked.request_state;
            responses = Some(Value::Object(answers));
        }
        match (state, responses) {
            (Some(state), Some(responses)) => Ok((state, responses)),
            _ => Err(ReplayFailure::TooManyRounds),
        }
    }

    /// Runs the flow from `state` with `responses` to its end, later asks answered by `answer`.
    async fn finish<R, F, Fut>(
        &self,
        handler: &F,
        answer: &mut impl AsyncFnMut(&str, &InputRequest) -> Value,
        state: String,
        responses: Value,
    ) -> Result<R, EngineError>
    where
        F: Fn(Flow) -> Fut,
        Fut: Future<Output = Result<R, FlowError>>,
    {
        let (mut state, mut responses) = (Some(state), Some(responses));
        for _ in 0..MAX_ROUNDS {
            let request = self.request.input_responses(responses.as_ref()).request_state(state.as_deref());
            let asked = match self.engine.run(&request, handler).await? {
                Outcome::Complete(result) => return Ok(result),
                Outcome::InputRequired(asked) => asked,
            };
            let mut answers = Map::new();
            for (key, request) in &asked.input_requests {
                answers.insert(key.clone(), answer(key, request).await);
            }
            state = asked.request_state;
            responses = Some(Value::Object(answers));
        }
        Err(EngineError {
            code: crate::wire::codes::INTERNAL_ERROR,
            message: ReplayFailure::TooManyRounds.to_string(),
            data: None,
        })
    }

    async fn round<R, F, Fut>(
        &self,
        handler: &F,
        state: Option<&str>,
        responses: Option<&Value>,
        number: usize,
    ) -> Result<Outcome<R>, ReplayFailure>
    where
        F: Fn(Flow) -> Fut,
        Fut: Future<Output = Result<R, FlowError>>,
    {
        let request = self.request.input_responses(responses).request_state(state);
        self.engine.run(&request, handler).await.map_err(|error| ReplayFailure::Engine {
            round: number,
            code: error.code,
            message: error.message,
        })
    }
}

/// How many characters of a value a failure shows.
const CLIP: usize = 80;

/// `text` cut to [`CLIP`] characters, an ellipsis marking the cut.
fn clip(text: &str) -> String {
    match text.char_indices().nth(CLIP) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// How a replay differs from its round, if it does: `(key, expected, got)`. A replay may answer
/// the round's asks again, or (the flow having finished) the flow's result. Describes asks by
/// key and request, never the round's sealed state.
fn divergence<R: fmt::Debug + PartialEq>(
    replayed: &Result<Outcome<R>, ReplayFailure>,
    first: &Outcome<R>,
    last: &R,
) -> Option<(Option<String>, String, String)> {
    let asked_key = match first {
        Outcome::InputRequired(asked) => asked.input_requests.first().map(|(key, _)| key.clone()),
        Outcome::Complete(_) => None,
    };
    let got = match replayed {
        Ok(Outcome::Complete(again)) if again == last => return None,
        Ok(Outcome::Complete(again)) => {
            return Some((
                asked_key,
                format!("the flow's result {}", clip(&format!("{last:?}"))),
                format!("the result {}", clip(&format!("{again:?}"))),
            ));
        }
        Ok(Outcome::InputRequired(again)) => again,
        Err(failure) => {
            let expected = match first {
                Outcome::InputRequired(asked) => describe_asks(asked),
                Outcome::Complete(_) => format!("the flow's result {}", clip(&format!("{last:?}"))),
            };
            return Some((asked_key, expected, clip(&failure.to_string())));
        }
    };
    let Outcome::InputRequired(asked) = first else {
        return Some((None, format!("the flow's result {}", clip(&format!("{last:?}"))), describe_asks(got)));
    };
    if same_asks(got, asked) {
        return None;
    }
    // The first ask that differs, by position.
    let mut pairs = asked.input_requests.iter().map(Some).chain(std::iter::repeat(None));
    let mut again = got.input_requests.iter().map(Some).chain(std::iter::repeat(None));
    for _ in 0..asked.input_requests.len().max(got.input_requests.len()) {
        let (a, b) = (pairs.next().flatten(), again.next().flatten());
        if let (Some(a), Some(b)) = (a, b)
            && same_asks(&one_ask(a), &one_ask(b))
        {
            continue;
        }
        let key = a.or(b).map(|(key, _)| key.clone());
        let show = |ask: Option<&(String, InputRequest)>| ask.map_or_else(|| "no ask".to_owned(), describe_ask);
        return Some((key, show(a), show(b)));
    }
    Some((asked_key, describe_asks(asked), describe_asks(got)))
}

/// One ask as a result of its own (for comparing asks one by one).
fn one_ask(ask: &(String, InputRequest)) -> InputRequiredResult {
    InputRequiredResult { input_requests: vec![ask.clone()], request_state: None }
}

/// `an ask `key`: {request}`, the request clipped.
fn describe_ask((key, request): &(String, InputRequest)) -> String {
    format!("an ask `{key}`: {}", clip(&request.to_json().to_string()))
}

/// The keys a round asked for (never its sealed state).
fn describe_asks(asked: &InputRequiredResult) -> String {
    let keys: Vec<String> = asked.input_requests.iter().map(|(key, _)| format!("`{key}`")).collect();
    format!("asks for {}", keys.join(", "))
}

/// `answers` with each answer `change` changes changed.
fn changed(answers: &Value, change: &Change<'_>) -> Value {
    match answers {
        Value::Object(answers) => Value::Object(
            answers
                .iter()
                .map(|(key, answer)| (key.clone(), change(key, answer).unwrap_or_else(|| answer.clone())))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The same asks: the same keys, methods and forms. A URL step minted again may carry a new
/// page address, so only its message counts.
fn same_asks(again: &InputRequiredResult, first: &InputRequiredResult) -> bool {
    again.input_requests.len() == first.input_requests.len()
        && again.input_requests.iter().zip(&first.input_requests).all(|((k1, r1), (k2, r2))| {
            k1 == k2
                && match (r1, r2) {
                    (
                        InputRequest::Elicit(ElicitParams::Url { message: m1, .. }),
                        InputRequest::Elicit(ElicitParams::Url { message: m2, .. }),
                    ) => m1 == m2,
                    _ => r1 == r2,
                }
        })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic, reason = "a failing test should stop loudly")]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    use serde_json::json;

    use super::*;
    use crate::Elicit;
    use crate::server::Answer;
    use crate::state::KeyRing;

    /// A number.
    struct Number {
        n: u32,
    }

    impl Elicit for Number {
        const MESSAGE: &'static str = "A number";

        fn requested_schema() -> &'static crate::RequestedSchema {
            static SCHEMA: std::sync::OnceLock<crate::RequestedSchema> = std::sync::OnceLock::new();
            SCHEMA.get_or_init(|| {
                crate::RequestedSchema::new(vec![crate::schema::Property::required(
                    "n",
                    crate::schema::PrimitiveSchema::Number(crate::schema::NumberSchema {
                        integer: true,
                        ..Default::default()
                    }),
                )])
            })
        }

        fn from_content(content: &Map<String, Value>) -> Result<Self, crate::ContentErrors> {
            let n = content.get("n").and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok());
            n.map(|n| Number { n }).ok_or_else(|| {
                let mut errors = crate::ContentErrors::default();
                errors.push("n", "must be a number");
                errors
            })
        }

        fn to_content(&self) -> Map<String, Value> {
            json!({"n": self.n}).as_object().cloned().unwrap_or_default()
        }
    }

    /// Asks twice, charging in between: inside `once`, or not.
    async fn check(in_once: bool) -> Result<String, ReplayFailure> {
        let engine = Engine::builder("replay-check", KeyRing::generate()).build();
        let charges = Arc::new(AtomicU64::new(0));
        let handler = |flow: Flow| {
            let charges = charges.clone();
            async move {
                let Answer::Accepted(first) = flow.form::<Number>("first").await? else {
                    return Ok("declined".to_owned());
                };
                if in_once {
                    flow.once("charge", || async { Ok(charges.fetch_add(1, Ordering::SeqCst)) }).await?;
                } else {
                    charges.fetch_add(1, Ordering::SeqCst);
                }
                let Answer::Accepted(second) = flow.form::<Number>("second").await? else {
                    return Ok("declined".to_owned());
                };
                Ok(format!("{} then {}", first.n, second.n))
            }
        };
        let meta = json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
        let request = Request::new("tools/call", "charge").meta(meta.as_object());
        let mut asked = Vec::new();
        let result = ReplayCheck::new(&engine, request)
            .effects(|| charges.load(Ordering::SeqCst))
            .run(handler, async |key, _request| {
                asked.push(key.to_owned());
                json!({"action": "accept", "content": {"n": asked.len()}})
            })
            .await;
        assert_eq!(asked, ["first", "second"]);
        result
    }

    #[tokio::test]
    async fn work_outside_once_is_caught_by_a_replay() {
        match check(false).await {
            Err(ReplayFailure::RanAgain { round, before, after }) => {
                assert!(round >= 2, "round {round}");
                assert!(after > before);
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn work_inside_once_passes() {
        assert_eq!(check(true).await.unwrap(), "1 then 2");
    }

    /// Asks once; a replay of the asking round finishes at once with another result than the
    /// flow's (work outside `once` decided it).
    #[tokio::test]
    async fn a_diverging_replay_names_round_key_expected_and_got_and_no_state() {
        let engine = Engine::builder("replay-check", KeyRing::generate()).build();
        let runs = Arc::new(AtomicU64::new(0));
        let handler = |flow: Flow| {
            let runs = runs.clone();
            async move {
                if runs.fetch_add(1, Ordering::SeqCst) >= 2 {
                    return Ok("skipped the form".to_owned());
                }
                let Answer::Accepted(first) = flow.form::<Number>("first").await? else {
                    return Ok("declined".to_owned());
                };
                Ok(format!("got {}", first.n))
            }
        };
        let meta = json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
        let request = Request::new("tools/call", "diverge").meta(meta.as_object());
        let failure = ReplayCheck::new(&engine, request)
            .run(handler, async |_key, _request| json!({"action": "accept", "content": {"n": 7}}))
            .await
            .unwrap_err();
        let ReplayFailure::Diverged { round, key, expected, got } = &failure else { panic!("{failure:?}") };
        assert_eq!(*round, 1);
        assert_eq!(key.as_deref(), Some("first"));
        assert_eq!(expected, "the flow's result \"got 7\"");
        assert_eq!(got, "the result \"skipped the form\"");
        let message = failure.to_string();
        assert!(message.contains("round 1"), "{message}");
        assert!(message.contains("`first`"), "{message}");
        assert!(message.contains("\"got 7\"") && message.contains("\"skipped the form\""), "{message}");
        assert!(!message.contains("request_state") && !message.contains("requestState"), "{message}");
        assert!(message.len() < 300, "{} characters: {message}", message.len());
    }

    /// A replay that asks for another input than the round did names that input.
    #[tokio::test]
    async fn a_replay_asking_otherwise_names_the_key() {
        let engine = Engine::builder("replay-check", KeyRing::generate()).build();
        let runs = Arc::new(AtomicU64::new(0));
        let handler = |flow: Flow| {
            let runs = runs.clone();
            async move {
                let key = if runs.fetch_add(1, Ordering::SeqCst) == 0 { "first" } else { "second" };
                let Answer::Accepted(n) = flow.form::<Number>(key).await? else {
                    return Ok("declined".to_owned());
                };
                Ok(format!("got {}", n.n))
            }
        };
        let meta = json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
        let request = Request::new("tools/call", "asks").meta(meta.as_object());
        let failure = ReplayCheck::new(&engine, request)
            .run(handler, async |_key, _request| json!({"action": "accept", "content": {"n": 7}}))
            .await
            .unwrap_err();
        let ReplayFailure::Diverged { round, key, expected, got } = &failure else { panic!("{failure:?}") };
        assert_eq!((*round, key.as_deref()), (1, Some("first")));
        assert!(expected.starts_with("an ask `first`: "), "{expected}");
        assert!(got.starts_with("an ask `second`: "), "{got}");
        let message = failure.to_string();
        assert!(!message.contains("requestState") && !message.contains("request_state"), "{message}");
    }

    #[test]
    fn long_values_are_clipped() {
        let long = "x".repeat(1000);
        let shown = clip(&long);
        assert!(shown.chars().count() <= CLIP + 1, "{}", shown.len());
        assert!(shown.ends_with('…'));
        assert_eq!(clip("short"), "short");
    }
}
