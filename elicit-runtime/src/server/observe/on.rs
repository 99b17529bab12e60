//! The hooks with the `metrics` feature.

use std::future::Future;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use futures_util::FutureExt as _;
use serde_json::Value;
use sha2::{Digest, Sha256};
use tracing::Instrument;
use tracing::field::Empty;

use super::{ClientName, FAST_DECLINE, ObservedFlow};
use crate::server::request::{EngineError, FLOW_CONFLICT, Outcome, Request};
use crate::wire::{ElicitParams, InputRequest, PROTOCOL_VERSION};

/// One round: its span, its era and client, and what it learnt of its flow as it opened.
pub(in crate::server) struct Round {
    span: tracing::Span,
    era: &'static str,
    client: ClientName,
    seen: Mutex<Seen>,
}

/// What a round learnt as it opened.
#[derive(Default)]
struct Seen {
    /// This round's number (0 until the request's state opened).
    round: u32,
    /// The flow, to read its id when the round ends (a first round mints it as it seals).
    flow: Option<Box<dyn ObservedFlow>>,
    /// The flow had finished: this round is answered from its ledger, so counts nothing again.
    replayed: bool,
}

/// How a round ended, as a label.
pub(in crate::server) trait RoundEnd {
    /// `complete`, `input_required` or `task`.
    fn outcome(&self) -> &'static str;
    /// The asks this round sent.
    fn asks(&self) -> &[(String, InputRequest)];
}

impl<R> RoundEnd for Outcome<R> {
    fn outcome(&self) -> &'static str {
        match self {
            Outcome::Complete(_) => "complete",
            Outcome::InputRequired(_) => "input_required",
        }
    }

    fn asks(&self) -> &[(String, InputRequest)] {
        match self {
            Outcome::Complete(_) => &[],
            Outcome::InputRequired(result) => &result.input_requests,
        }
    }
}

impl Round {
    fn new(request: &Request<'_>, era: &'static str, client: ClientName) -> Self {
        let span = tracing::info_span!(
            target: "elicit_runtime",
            "elicit.round",
            flow = Empty,
            tool = request.name,
            era,
            round = Empty,
            outcome = Empty
        );
        Round { span, era, client, seen: Mutex::default() }
    }

    fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A round on the 2026-07-28 wire (Multi Round-Trip, and the rounds of a task-capable call),
    /// its client named in the request's `_meta`.
    pub(in crate::server) fn mrtr(request: &Request<'_>) -> Self {
        Round::new(request, PROTOCOL_VERSION, ClientName::from_meta(request.meta))
    }

    /// A call on a 2025-era session (`era`, the session's revision) from `client`: its one round.
    pub(in crate::server) fn live(
        request: &Request<'_>,
        era: &'static str,
        client: &ClientName,
        flow: &impl ObservedFlow,
    ) -> Self {
        let round = Round::new(request, era, client.clone());
        round.span.record("flow", short_hash(&flow.id()));
        round.span.record("round", 1u64);
        *round.seen() = Seen { round: 1, flow: None, replayed: false };
        round
    }

    /// The round's state opened (`finished`: the flow had finished, the round is answered from
    /// its ledger): its number, and the answers it carries to the last round's asks, timed from
    /// when that round asked to `now`.
    pub(in crate::server) fn opened(&self, flow: &(impl ObservedFlow + Clone), finished: bool, now: SystemTime) {
        let mut round = 0;
        flow.read(&mut |state, responses| {
            round = state.round.saturating_add(1);
            self.span.record("round", u64::from(round));
            // A first round has asked nothing: answers sent ahead answer no ask.
            if !finished && !state.flow.is_empty() {
                let asked_at = state.asked_at;
                let elapsed =
                    (asked_at != 0).then(|| millis(now).checked_sub(asked_at)).flatten().map(Duration::from_millis);
                for (key, answer) in responses {
                    // Sampling and roots results carry no action: they are no elicitation's answer.
                    let Some(action) = answer.get("action").and_then(Value::as_str) else { continue };
                    let mode = if state.urls.contains_key(key) { "url" } else { "form" };
                    answered(self.era, mode, action, &self.client, elapsed);
                }
            }
        });
        *self.seen() = Seen { round, flow: Some(Box::new(flow.clone())), replayed: finished };
    }

    /// Runs a 2026-07-28 round in its span, then counts how it ended and the asks it sent. A
    /// combinator rather than an `async fn`, which would hold the round twice (as its argument
    /// and as what it awaits): kilobytes per request.
    pub(in crate::server) fn watch<'a, O: RoundEnd + 'a>(
        &'a self,
        round: impl Future<Output = Result<O, EngineError>> + 'a,
    ) -> impl Future<Output = Result<O, EngineError>> + 'a {
        round.instrument(self.span.clone()).map(move |result| {
            self.ended_round(&result);
            result
        })
    }

    /// Counts how a 2026-07-28 round ended and the asks it sent.
    fn ended_round<O: RoundEnd>(&self, result: &Result<O, EngineError>) {
        let outcome = match result {
            Ok(ended) => {
                for (_, request) in ended.asks() {
                    asked(self.era, mode_of(request), &self.client);
                }
                ended.outcome()
            }
            Err(error) if error.message == FLOW_CONFLICT => "conflict",
            Err(_) => "error",
        };
        let seen = std::mem::take(&mut *self.seen());
        if let Some(flow) = seen.flow {
            let mut id = String::new();
            flow.read(&mut |state, _| id.clone_from(&state.flow));
            if !id.is_empty() {
                self.span.record("flow", short_hash(&id));
            }
        }
        let rounds = (outcome == "complete" && !seen.replayed).then_some(seen.round);
        self.ended_as(outcome, rounds);
    }

    /// Runs a 2025-era call in its span.
    pub(in crate::server) fn instrument<F: Future>(&self, running: F) -> tracing::instrument::Instrumented<F> {
        running.instrument(self.span.clone())
    }

    /// A 2025-era call ended (`ok`: it completed). Its rounds: the call, and one per ask the
    /// client answered.
    pub(in crate::server) fn ended(&self, flow: &impl ObservedFlow, ok: bool) {
        let mut answered = 0;
        flow.read(&mut |state, _| answered = state.answers.to_map().len());
        let rounds = u32::try_from(answered).unwrap_or(u32::MAX).saturating_add(1);
        self.ended_as(if ok { "complete" } else { "error" }, ok.then_some(rounds));
    }

    fn ended_as(&self, outcome: &'static str, rounds: Option<u32>) {
        self.span.record("outcome", outcome);
        metrics::counter!("elicit_rounds_total", "era" => self.era, "outcome" => outcome).increment(1);
        if let Some(rounds) = rounds.filter(|r| *r > 0) {
            metrics::histogram!("elicit_flow_rounds", "era" => self.era).record(f64::from(rounds));
        }
    }
}

/// An elicitation of `mode` was sent to `client`. Other input requests (sampling, roots) are not
/// counted.
pub(in crate::server) fn asked(era: &'static str, mode: &'static str, client: &ClientName) {
    if matches!(mode, "form" | "url") {
        metrics::counter!(
            "elicit_asks_total",
            "era" => era,
            "mode" => mode,
            "client" => client.name.clone(),
            "client_version" => client.version.clone()
        )
        .increment(1);
    }
}

/// `client` answered an ask of `mode` with `action`, `elapsed` after it was asked (when known).
pub(in crate::server) fn answered(
    era: &'static str,
    mode: &'static str,
    action: &str,
    client: &ClientName,
    elapsed: Option<Duration>,
) {
    if !matches!(mode, "form" | "url") {
        return;
    }
    let action = match action {
        "accept" => "accept",
        "decline" => "decline",
        "cancel" => "cancel",
        _ => "other",
    };
    metrics::counter!(
        "elicit_answers_total",
        "era" => era,
        "mode" => mode,
        "action" => action,
        "client" => client.name.clone(),
        "client_version" => client.version.clone()
    )
    .increment(1);
    let Some(elapsed) = elapsed else { return };
    metrics::histogram!("elicit_ask_to_answer_seconds", "era" => era, "mode" => mode, "action" => action)
        .record(elapsed.as_secs_f64());
    if action == "decline" && elapsed < FAST_DECLINE {
        metrics::counter!(
            "elicit_fast_declines_total",
            "era" => era,
            "mode" => mode,
            "client" => client.name.clone(),
            "client_version" => client.version.clone()
        )
        .increment(1);
    }
}

/// The engine's form page of a step was shown to a person.
#[cfg_attr(not(feature = "pages"), allow(dead_code, reason = "the pages' hook, without them"))]
pub(in crate::server) fn page_opened(page: &'static str) {
    metrics::counter!("elicit_pages_opened_total", "page" => page).increment(1);
}

/// A page's decision, counted once the store recorded it.
#[cfg_attr(not(feature = "pages"), allow(dead_code, reason = "the pages' hook, without them"))]
pub(in crate::server) struct Submitted(&'static str);

#[cfg_attr(not(feature = "pages"), allow(dead_code, reason = "the pages' hook, without them"))]
impl Submitted {
    /// The decision `outcome` (`{"action": ...}`) is about to be recorded.
    pub(in crate::server) fn of(outcome: &Value) -> Self {
        Submitted(match outcome.get("action").and_then(Value::as_str) {
            Some("accept") => "accept",
            Some("decline") => "decline",
            Some("cancel") => "cancel",
            _ => "other",
        })
    }

    /// It was recorded.
    pub(in crate::server) fn count(self) {
        metrics::counter!("elicit_pages_submitted_total", "action" => self.0).increment(1);
    }
}

/// The kind of `request`, as the metrics name it.
fn mode_of(request: &InputRequest) -> &'static str {
    match request {
        InputRequest::Elicit(ElicitParams::Form { .. }) => "form",
        InputRequest::Elicit(ElicitParams::Url { .. }) => "url",
        InputRequest::CreateMessage(_) => "sampling",
        InputRequest::ListRoots => "roots",
    }
}

/// Eight hex digits of the flow id's SHA-256: enough to follow one flow through the logs, never
/// the id (which names its ledger records).
fn short_hash(flow: &str) -> String {
    let digest = Sha256::digest(flow.as_bytes());
    digest[..4].iter().map(|b| format!("{b:02x}")).collect()
}

fn millis(time: SystemTime) -> u64 {
    let millis = time.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_millis());
    u64::try_from(millis).unwrap_or(u64::MAX)
}
