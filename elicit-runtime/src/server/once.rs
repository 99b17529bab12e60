//! [`Flow::once`]: a computation run once per flow, its value recorded under a claim of a ledger
//! slot (`claim.rs`).

use std::collections::HashMap;
use std::future::Future;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::answer::FlowError;
use super::claim::{ClaimGuard, Claimed, envelope, unwrap_envelope};
use super::flow::Flow;
use super::request::FLOW_CONFLICT;
use super::store::Slot;
use crate::wire::clip;

impl Flow {
    /// Runs `compute` once per flow, whatever the client replays: its value is recorded in the
    /// engine's [`FlowLedger`](super::store::FlowLedger) under (flow id, `key`) and every later call — in a later round,
    /// a replay of an earlier or of the same state, a concurrent duplicate of the round, a round
    /// served by another instance — returns that value without running `compute` again.
    ///
    /// Concurrent calls race for an atomic claim in the ledger, made under a random owner token
    /// with a lease ([`EngineConfig::claim_lease`](super::EngineConfig::claim_lease), renewed while `compute` runs): the first runs
    /// `compute`, the others wait (up to [`EngineConfig::once_wait`](super::EngineConfig::once_wait)) for its value and fail with
    /// a clear error when it does not come. An `Err` from `compute` is not recorded: the claim is
    /// abandoned and a retry runs it again; a round dropped half-way abandons it too, and a claim
    /// whose holder crashed is taken over once its lease has passed. Once the flow has finished (see [`Engine::run`](super::Engine::run)) nothing
    /// new runs in it.
    ///
    /// A recorded value belongs to the history that produced it: with it the ledger keeps a digest
    /// of each answer the round had consumed when `compute` ran (every answer an ask returned,
    /// carried from earlier rounds or sent in this one). A later round that reaches `once(key)`
    /// without having consumed each of those answers the same — a fork of an earlier state that
    /// changed an answer the value was computed after — fails with `-32603` and
    /// [`FLOW_CONFLICT`](super::FLOW_CONFLICT) instead of reusing a value computed for other
    /// answers (a price quoted for one traveller cannot pay for nine). Answers consumed after
    /// `once` returned do not count, nor do answers a later round consumed besides (an ask
    /// awaited beside the `once`, answered since): a fork that changes only those gets the
    /// recorded value.
    ///
    /// The one precondition: instances that share state keys share the store (the default
    /// [`InProcessStore`](super::store::InProcessStore) is one process's; several instances need a shared
    /// one such as `RedisStore`). The records are extended as each later round of the flow opens
    /// (and again when it seals a state, if it ran long), so they outlive every state that could
    /// replay them.
    ///
    /// ```
    /// # use elicit_runtime::server::{Answer, Engine, Flow, Outcome, Request, UrlAnswer};
    /// # use elicit_runtime::state::KeyRing;
    /// # use elicit_runtime::Elicit;
    /// # use serde_json::json;
    /// # /// Who are you?
    /// # #[derive(Elicit, Debug)]
    /// # struct Name {
    /// #     name: String,
    /// # }
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// # let engine = Engine::builder("doc-server", KeyRing::generate()).build();
    /// # let meta = json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
    /// # let request = Request::new("tools/call", "greet").meta(meta.as_object());
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// static BOOKINGS: AtomicUsize = AtomicUsize::new(0);
    ///
    /// let book = |flow: Flow| async move {
    ///     // Runs in round 1 only; round 2 gets the recorded value back.
    ///     let reference = flow.once("book", || async { Ok(format!("REF-{}", BOOKINGS.fetch_add(1, Ordering::SeqCst))) }).await?;
    ///     let Answer::Accepted(who) = flow.form::<Name>("who").await? else { return Ok(String::new()) };
    ///     Ok(format!("{reference} for {}", who.name))
    /// };
    /// let Outcome::InputRequired(asked) = engine.run(&request, book).await.unwrap() else { panic!() };
    /// let answer = json!({"who": {"action": "accept", "content": {"name": "Ada"}}});
    /// let retry = request.clone().input_responses(Some(&answer)).request_state(asked.request_state.as_deref());
    /// let Outcome::Complete(text) = engine.run(&retry, book).await.unwrap() else { panic!() };
    /// assert_eq!(text, "REF-0 for Ada");
    /// assert_eq!(BOOKINGS.load(Ordering::SeqCst), 1);
    /// # });
    /// ```
    pub async fn once<V, F, Fut>(&self, key: &str, compute: F) -> Result<V, FlowError>
    where
        V: Serialize + DeserializeOwned,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<V, FlowError>>,
    {
        let slot = Slot::Once(key.to_owned());
        let parse = |value: Value| {
            serde_json::from_value(value).map_err(|e| {
                self.fail(FlowError::Failed(format!("the value kept for `{}` no longer fits its type: {e}", clip(key))))
            })
        };
        let history = self.history();
        let known = self.lock().state.once.get(key).cloned();
        if let Some(recorded) = known {
            let value = self.belonging(recorded, &history)?;
            self.saw(slot);
            return parse(value);
        }
        // From the claim to the record this is running work: the round is not suspended under it.
        let _running = self.running();
        let guard = match self.claim(&slot).await? {
            Claimed::Done(recorded) => {
                let value = self.belonging(recorded.clone(), &history)?;
                self.lock().state.once.insert(key.to_owned(), recorded);
                self.saw(slot);
                return parse(value);
            }
            Claimed::Held(guard) => guard,
        };
        let computed = self.renewing(&guard, compute()).await;
        let value = match computed {
            Ok(value) => value,
            Err(error) => {
                guard.abandon().await;
                return Err(error);
            }
        };
        let json = match serde_json::to_value(&value) {
            Ok(json) => envelope(json, &history),
            Err(e) => {
                guard.abandon().await;
                return Err(self.fail(FlowError::Failed(format!("cannot keep `{}`: {e}", clip(key)))));
            }
        };
        guard.record(json.clone()).await.map_err(|e| self.fail(FlowError::Store(e)))?;
        self.lock().state.once.insert(key.to_owned(), json);
        self.saw(slot);
        Ok(value)
    }

    /// The recorded value, when this round consumed every answer it was computed after, each the
    /// same; otherwise this round is a fork that changed (or skipped) one, and fails as a
    /// conflict. Answers this round consumed besides (an ask awaited beside the `once`, answered
    /// since) do not matter.
    pub(super) fn belonging(&self, recorded: Value, history: &Map<String, Value>) -> Result<Value, FlowError> {
        match unwrap_envelope(recorded) {
            (_, Some(recorded)) if recorded.iter().any(|(key, digest)| history.get(key) != Some(digest)) => {
                Err(self.fail(FlowError::Failed(FLOW_CONFLICT.to_owned())))
            }
            (value, _) => Ok(value),
        }
    }

    /// Runs `work`, renewing the claim's lease while it runs.
    async fn renewing<T>(&self, guard: &ClaimGuard, work: impl Future<Output = T>) -> T {
        let lease = self.config().claim_lease;
        let mut work = std::pin::pin!(work);
        loop {
            tokio::select! {
                out = &mut work => return out,
                () = tokio::time::sleep(lease / 3) => guard.renew(lease).await,
            }
        }
    }

    /// This flow, with the slot values its ledger held for good as the round opened.
    pub(super) fn with_recorded(self, recorded: HashMap<Slot, Value>) -> Self {
        self.lock().recorded = recorded;
        self
    }

    /// Claims `slot` of this flow under a fresh token: its recorded value, or the claim (see
    /// [`ClaimGuard::claim`]). Counted as running work while on the wire.
    ///
    /// A slot the round's ledger snapshot holds is answered from it: a recorded value never
    /// changes, so the store would answer the same.
    pub(super) async fn claim(&self, slot: &Slot) -> Result<Claimed, FlowError> {
        let known = self.lock().recorded.get(slot).cloned();
        if let Some(value) = known {
            return Ok(Claimed::Done(value));
        }
        let _running = self.running();
        let owner = self.request.owner.clone();
        ClaimGuard::claim(&self.shared.store, self.flow_id(), owner, slot, self.config(), self.shared.record_ttl)
            .await
            .map_err(|e| self.fail(e))
    }
}
