//! [`Engine::run`]: one round of a replayed flow, in its phases — open the request, read the
//! flow's ledger (and replay a finished flow), run the handler, then record the finish or seal the
//! next state.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll};
use std::time::SystemTime;

use serde_json::{Map, Value};

use super::answer::FlowError;
use super::engine::Engine;
use super::exec::Executor;
use super::flow::{Flow, Shared, Suspension};
use super::observe;
use super::payload::Payload;
use super::request::{EngineError, Outcome, Request};
use super::store::{Finish, LedgerSnapshot, Slot};
use crate::state::{Binding, StateErrorKind, digest_arguments};
use crate::wire::{self, Capabilities, InputRequiredResult, codes};

/// A request opened: its state and the answers this round may use.
pub(super) struct Opened {
    pub(super) payload: Payload,
    pub(super) responses: Map<String, Value>,
    /// Whether the request carried a state: a round of a flow of several rounds, which a client
    /// may replay, so its finish is recorded.
    pub(super) resumed: bool,
    /// What a resumed round read of its flow's ledger as it opened.
    pub(super) ledger: LedgerRead,
}

/// What a resumed round read of its flow's ledger as it opened, in one store call
/// ([`FlowLedger::snapshot`](super::store::FlowLedger::snapshot)), and what that read settles for the
/// rest of the round. Empty for a first round.
#[derive(Default)]
pub(super) struct LedgerRead {
    /// The recorded slots' values, handed to the flow: a claim of one is answered from here.
    pub(super) recorded: HashMap<Slot, Value>,
    /// The answers the flow had finished with: final, so this round's finish is checked here.
    pub(super) finished: Option<Value>,
    /// Until when (by the engine's clock) a state sealed by this round dies before the flow's
    /// record without another extension: the read extended the record by the states' lifetime,
    /// the margin and [`ROUND_ALLOWANCE`](super::engine::ROUND_ALLOWANCE), and the record could not
    /// vanish since (it holds final values). `None`: extend when sealing.
    pub(super) covers_until: Option<SystemTime>,
}

impl Engine {
    /// Runs one round of `handler` for `request`.
    ///
    /// Errors are the JSON-RPC errors to send: `-32602` for a bad `requestState` (one fixed
    /// message whatever went wrong), malformed `inputResponses`, answers too large to carry in
    /// the next `requestState` (see [`EngineBuilder::max_state_len`](super::EngineBuilder::max_state_len))
    /// or to record as the flow's finish ([`EngineConfig::max_answers_len`](super::EngineConfig::max_answers_len)),
    /// `-32021` when the handler needs an undeclared capability, `-32603` for handler and store
    /// failures.
    ///
    /// One outcome per flow: every flow has a random id sealed in its state, and its ledger in the
    /// [`Store`](super::store::Store) keeps what it did — the values of [`Flow::once`], the completions
    /// its URL-mode steps took, and the answers it finished with. Every round of a flow of several
    /// rounds that completes records that finish; any later round — the last state replayed, an
    /// earlier one, changed answers — is answered from those answers, so it returns the same
    /// result. A round that would finish otherwise (a fork racing the finish, or one that did not
    /// see an effect the flow had) fails with `-32603` rather than contradict it. A resumed round
    /// reads what the ledger holds for good in one store call as it opens, which also extends the
    /// records; a round that ran long extends them again as it seals, so they outlive every state
    /// that could replay them. A store that cannot be reached fails the round. Answers for keys
    /// the previous round did not ask are ignored, and keys a form's schema does not define are
    /// dropped from its answer before anything is sealed or stored. The precondition: instances that share keys
    /// share a store.
    pub async fn run<R, F, Fut>(&self, request: &Request<'_>, handler: F) -> Result<Outcome<R>, EngineError>
    where
        F: FnOnce(Flow) -> Fut,
        Fut: Future<Output = Result<R, FlowError>>,
    {
        let round = observe::Round::mrtr(request);
        round.watch(self.replay_round(request, handler, &round)).await
    }

    /// [`Engine::run`]'s round, observed by `round`.
    async fn replay_round<R, F, Fut>(
        &self,
        request: &Request<'_>,
        handler: F,
        round: &observe::Round,
    ) -> Result<Outcome<R>, EngineError>
    where
        F: FnOnce(Flow) -> Fut,
        Fut: Future<Output = Result<R, FlowError>>,
    {
        let binding = self.binding(request);
        // Only what the rest of the round needs of the opened state leaves this block (the state
        // and answers went to the flow): the round's future then keeps these past the handler's
        // await rather than room for the whole of it, and is smaller to move and to box.
        let (flow, resumed, ledger) = {
            let mut opened = self.open(request, &binding)?;
            self.read_ledger(&mut opened).await?;
            let flow = self.flow(request, &mut opened, self.shared(Executor::Replay));
            (flow, opened.resumed, opened.ledger)
        };
        round.opened(&flow, ledger.finished.is_some(), self.clock.now());
        let finished = Suspendable { handler: Box::pin(handler(flow.clone())), flow: &flow }.await;
        if let Some(fatal) = flow.take_fatal() {
            return Err(fatal.into());
        }
        match finished.map(|result| result.map_err(EngineError::from)) {
            Some(Ok(result)) if resumed => {
                self.finish(&flow, ledger.finished).await.map(|()| Outcome::Complete(result))
            }
            // A one-round call has no state to replay: calling again is a new flow.
            Some(result) => result.map(Outcome::Complete),
            None => self.seal(&binding, &flow, resumed, &ledger).await.map(Outcome::InputRequired),
        }
    }

    /// What this request's `requestState` is bound to: its principal, method, name, arguments and
    /// this engine's audience. The arguments' digest is taken when a state is first opened or
    /// sealed: a round that does neither (a call that completes without asking) never hashes them.
    pub(super) fn binding<'r>(&'r self, request: &'r Request<'r>) -> LazyBinding<'r> {
        LazyBinding { request, audience: &self.audience, digest: OnceLock::new() }
    }

    /// Opens the request's state and keeps the answers this round may use.
    pub(super) fn open(&self, request: &Request<'_>, binding: &LazyBinding<'_>) -> Result<Opened, EngineError> {
        let mut payload = match request.request_state {
            None => Payload::default(),
            Some(token) => Payload::open(&self.sealer, &binding.get(), token, self.clock.now())
                .ok_or_else(EngineError::invalid_state)?,
        };
        let mut responses = wire::parse_input_responses(request.input_responses)
            .map_err(|e| EngineError::invalid_params(e.to_string()))?
            .cloned()
            .unwrap_or_default();
        // Only answers to what the last round asked count: an answer for a key the flow never
        // asked is ignored, neither used by a later ask nor kept.
        // (A first round has asked nothing: there the client may answer ahead, as the official
        // conformance suite expects; only asks reached in that round can use such answers.)
        let pending = std::mem::take(&mut payload.pending);
        if !payload.flow.is_empty() {
            responses.retain(|key, _| pending.contains(key));
        }
        Ok(Opened { resumed: !payload.flow.is_empty(), payload, responses, ledger: LedgerRead::default() })
    }

    /// The flow of this round, on `shared` (its executor among it): the opened state and answers,
    /// what the ledger read holds for good, and the request's capabilities, arguments and
    /// principal.
    pub(super) fn flow(&self, request: &Request<'_>, opened: &mut Opened, shared: Shared) -> Flow {
        let flow = Flow::new(
            Capabilities::from_meta(request.meta),
            request.arguments.cloned().unwrap_or(Value::Null),
            std::mem::take(&mut opened.payload),
            std::mem::take(&mut opened.responses),
            shared,
        )
        .with_caller(request)
        .with_recorded(std::mem::take(&mut opened.ledger.recorded));
        // 2026-07-28: the request's own capabilities decide (draft app-rendered forms).
        #[cfg(feature = "apps")]
        let flow = flow.with_app_forms(crate::apps::negotiated_in_meta(request.meta));
        flow
    }

    /// Reads the flow's ledger as a resumed round opens, in one store call that also extends its
    /// record (see [`LedgerRead`]).
    ///
    /// A flow that finished answers every later round from the answers it finished with: the
    /// same result, never a second, contradicting one. The check is never skipped: a store that
    /// cannot answer fails the round.
    pub(super) async fn read_ledger(&self, opened: &mut Opened) -> Result<(), EngineError> {
        if !opened.resumed {
            return Ok(());
        }
        // Read before the store is asked: the record's extension runs from a later instant.
        let opened_at = self.clock.now();
        let ttl = self.record_ttl() + super::engine::ROUND_ALLOWANCE;
        let LedgerSnapshot { finished, recorded } = self.store.snapshot(&opened.payload.flow, ttl).await?;
        // Only final values keep a record from vanishing (an abandon that empties it removes it).
        let lasting = finished.is_some() || !recorded.is_empty();
        opened.ledger = LedgerRead {
            recorded,
            finished: finished.clone(),
            covers_until: lasting.then(|| opened_at + super::engine::ROUND_ALLOWANCE),
        };
        let Some(answers) = finished else { return Ok(()) };
        // The answers sent are not used, but malformed ones are still refused as such.
        if let Some((key, _)) = opened.responses.iter().find(|(_, answer)| !answer.is_object()) {
            return Err(EngineError::invalid_params(format!(
                "inputResponses[{}]: an answer must be an object",
                wire::clip(key)
            )));
        }
        opened.payload.answers = match answers {
            Value::Object(answers) => answers.into(),
            _ => Map::new().into(),
        };
        opened.responses.clear();
        Ok(())
    }

    /// Records how the flow finished, or refuses a round that would contradict it. `finished`:
    /// the answers the flow had finished with as the round opened, final, so the store is not
    /// asked again.
    pub(super) async fn finish(&self, flow: &Flow, finished: Option<Value>) -> Result<(), EngineError> {
        let report = flow.finish_report().map_err(|e| EngineError {
            code: codes::INTERNAL_ERROR,
            message: format!("could not write the flow's answers: {e}"),
            data: None,
        })?;
        let cap = self.config.max_answers_len.unwrap_or_else(|| self.sealer.max_token_len());
        if finished.is_none() && report.answers.get().len() > cap {
            return Err(EngineError::invalid_params(format!(
                "the answers are too large to record as this flow's result (capped at {cap} bytes)"
            )));
        }
        let outcome = match finished {
            Some(answers) => Ok(Finish::Already(answers)),
            None => {
                self.store.finish(&report.flow, &report.owner, &report.answers, &report.seen, self.record_ttl()).await
            }
        };
        match outcome {
            Ok(Finish::Recorded) => Ok(()),
            // Compared as JSON values, so the store's formatting of the text does not matter.
            Ok(Finish::Already(recorded))
                if serde_json::from_str::<Value>(report.answers.get()).is_ok_and(|answers| answers == recorded) =>
            {
                Ok(())
            }
            Ok(Finish::Already(_) | Finish::Conflict) => {
                Err(EngineError { code: codes::INTERNAL_ERROR, message: super::FLOW_CONFLICT.to_owned(), data: None })
            }
            Err(error) => Err(EngineError::from(error)),
        }
    }

    /// Seals the next state, and keeps the flow's ledger records at least as long as it lives.
    pub(super) async fn seal(
        &self,
        binding: &LazyBinding<'_>,
        flow: &Flow,
        resumed: bool,
        ledger: &LedgerRead,
    ) -> Result<InputRequiredResult, EngineError> {
        let Suspension { requests, mut payload } = flow.suspension();
        // Past the cap, the state carries the client's answers (a long free-text answer, or keys
        // the form never asked for), so a client can make it too large: that is its invalid input,
        // not a server failure.
        let now = self.clock.now();
        payload.stamp(now);
        let token = payload.seal(&self.sealer, &binding.get(), now).map_err(|e| match e.kind() {
            StateErrorKind::PayloadTooLarge => EngineError::invalid_params(format!(
                "the answers so far are too large to carry to the next round (requestState is capped at {} characters)",
                self.sealer.max_token_len()
            )),
            _ => EngineError {
                code: codes::INTERNAL_ERROR,
                message: format!("could not seal the flow state: {e}"),
                data: None,
            },
        })?;
        // A first round's flow id is known to no one else yet: it has a record only if this round
        // wrote one, which already lives as long. A resumed round that opened a lasting record
        // extended it then, with room for the round's own length.
        let covered = ledger.covers_until.is_some_and(|until| now <= until);
        if resumed && !covered {
            self.store.extend(&payload.flow, self.record_ttl()).await?;
        }
        Ok(InputRequiredResult { input_requests: requests, request_state: Some(token) })
    }
}

/// A request's [`Binding`], its arguments' digest computed once, when first needed
/// ([`Engine::binding`]).
pub(super) struct LazyBinding<'r> {
    request: &'r Request<'r>,
    audience: &'r str,
    digest: OnceLock<[u8; 32]>,
}

impl LazyBinding<'_> {
    /// The binding, hashing the request's arguments on the first call.
    pub(super) fn get(&self) -> Binding<'_> {
        let request = self.request;
        Binding {
            principal: request.principal,
            method: request.method,
            name: request.name,
            arguments_digest: *self.digest.get_or_init(|| digest_arguments(request.arguments)),
            audience: self.audience,
        }
    }
}

/// Polls a handler until it finishes (`Some`) or waits on an unanswered ask (`None`).
struct Suspendable<'f, Fut> {
    handler: Pin<Box<Fut>>,
    flow: &'f Flow,
}

impl<Fut: Future> Future for Suspendable<'_, Fut> {
    type Output = Option<Fut::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.handler.as_mut().poll(cx) {
            Poll::Ready(output) => Poll::Ready(Some(output)),
            // An ask that has no answer registers its request and never completes; once the
            // handler is parked on one, every ask it could reach in this round has been made.
            Poll::Pending if self.flow.is_suspended() => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}
