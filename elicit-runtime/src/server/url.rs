//! [`Flow::url`]: a URL-mode step as one state machine.
//!
//! A step is minted (registered in the store), asked, then on the client's `accept` the
//! completion is claimed in the flow's ledger and taken from the store: completed (recorded in
//! the ledger, an effect of the flow), pending (asked again), or unknown (expired: minted again).
//! `decline` and `cancel` end it. How asking and waiting happen is the executor's.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::answer::{FlowError, UrlAnswer};
use super::claim::Claimed;
use super::flow::Flow;
use super::payload::UrlStep;
use super::store::{Slot, UrlStatus};
use crate::wire::{ElicitAction, ElicitParams, InputRequest, clip};

impl Flow {
    /// Sends the user to a page out of band (URL mode). `build_url` receives the unguessable id
    /// the engine minted for this step; the page records completion of that id in the engine's
    /// [`UrlCompletions`](super::store::UrlCompletions).
    ///
    /// `accept` only means the user consented: until the store reports completion, each retry is
    /// answered with the same URL elicitation under the same key, its message saying the page is
    /// not completed yet (after waiting up to
    /// [`EngineConfig::url_retry_wait`](super::EngineConfig::url_retry_wait) for the page).
    ///
    /// The step's id is derived from the flow's id and `key`: a replay of a state from before the
    /// step finds the step it registered, instead of minting (and registering) another. The
    /// completion a round takes is recorded in the flow's ledger: it is an effect of the flow,
    /// which a replay finds there and a fork cannot contradict. Like a [`Flow::once`] value, it
    /// belongs to the answers the round had consumed when it took it: a fork that changed one of
    /// them fails with [`FLOW_CONFLICT`](super::FLOW_CONFLICT) instead of passing a payment
    /// approved for other answers.
    ///
    /// ```
    /// # use elicit_runtime::server::{Answer, Engine, Flow, Outcome, Request, UrlAnswer, store::UrlCompletions};
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
    /// # let meta = json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}, "url": {}}}});
    /// # let request = Request::new("tools/call", "greet").meta(meta.as_object());
    /// let pay = |flow: Flow| async move {
    ///     Ok(match flow.url("pay", "Approve the payment", |id| format!("https://pay.example.com/{id}")).await? {
    ///         UrlAnswer::Completed(outcome) => format!("paid: {outcome}"),
    ///         UrlAnswer::Declined | UrlAnswer::Cancelled => "not paid".to_owned(),
    ///     })
    /// };
    /// let Outcome::InputRequired(asked) = engine.run(&request, pay).await.unwrap() else { panic!() };
    /// let url = asked.input_requests[0].1.to_json()["params"]["url"].as_str().unwrap().to_owned();
    /// // The page records completion of its id; the client retries after the user consented.
    /// let id = url.rsplit('/').next().unwrap();
    /// assert!(engine.url_completions().complete(id, json!("approved"), None).await.unwrap());
    /// let consent = json!({"pay": {"action": "accept"}});
    /// let retry = request.clone().input_responses(Some(&consent)).request_state(asked.request_state.as_deref());
    /// let Outcome::Complete(text) = engine.run(&retry, pay).await.unwrap() else { panic!() };
    /// assert_eq!(text, "paid: \"approved\"");
    /// # });
    /// ```
    pub async fn url(
        &self,
        key: &str,
        message: &str,
        build_url: impl FnOnce(&str) -> String,
    ) -> Result<UrlAnswer, FlowError> {
        self.require(|c| c.url, || json!({"elicitation": {"url": {}}}))?;
        let mut build_url = Some(build_url);
        loop {
            let (raw, step) = match self.find(key) {
                super::flow::Found::Carried(raw) => {
                    let answer = carried_url_answer(&raw);
                    if matches!(answer, UrlAnswer::Completed(_)) {
                        self.saw(Slot::Url(key.to_owned()));
                    }
                    self.consumed(key, raw);
                    return Ok(answer);
                }
                super::flow::Found::Fresh(raw) => (Some(raw), self.lock().state.urls.get(key).cloned()),
                super::flow::Found::Missing => (None, self.lock().state.urls.get(key).cloned()),
            };
            let Some(step) = step else {
                // First time (or a client answering a step it was never given): mint the step.
                let Some(build_url) = build_url.take() else {
                    return Err(FlowError::Failed(format!("the URL-mode step `{}` was lost twice", clip(key))));
                };
                let step = self.mint_url(key, message, build_url).await?;
                self.ask(key, url_request(&step), Some(&step.id)).await?;
                continue;
            };
            let Some(raw) = raw else {
                self.ask(key, url_request(&step), Some(&step.id)).await?;
                continue;
            };
            let answer = self.parse_answer(key, raw)?;
            let outcome = match answer.action {
                ElicitAction::Decline | ElicitAction::Cancel => {
                    self.shared.exec.url_released(&step.id);
                    if answer.action == ElicitAction::Decline { UrlAnswer::Declined } else { UrlAnswer::Cancelled }
                }
                ElicitAction::Accept => {
                    let slot = Slot::Url(key.to_owned());
                    let guard = match self.claim(&slot).await? {
                        Claimed::Done(recorded) => {
                            let value = self.belonging(recorded, &self.history())?;
                            let outcome = UrlAnswer::Completed(value);
                            self.keep(key, url_answer_json(&outcome));
                            self.consumed(key, url_answer_json(&outcome));
                            self.saw(slot);
                            return Ok(outcome);
                        }
                        Claimed::Held(guard) => guard,
                    };
                    match self.shared.exec.take_claimed(self, guard, &step.id).await? {
                        UrlStatus::Completed(value) => {
                            self.saw(slot);
                            self.shared.exec.url_completed(&step.id).await?;
                            UrlAnswer::Completed(value)
                        }
                        UrlStatus::Pending => {
                            self.shared.exec.url_pending(self, key, &step.id)?;
                            return self.suspend(key, not_completed_yet(&step)).await;
                        }
                        // Expired or lost: start the step again.
                        UrlStatus::Unknown => {
                            self.shared.exec.url_consumed(&step.id);
                            let mut inner = self.lock();
                            inner.state.urls.remove(key);
                            inner.responses.remove(key);
                            continue;
                        }
                    }
                }
            };
            self.keep(key, url_answer_json(&outcome));
            self.consumed(key, url_answer_json(&outcome));
            return Ok(outcome);
        }
    }

    /// Mints the URL-mode step of `key`: its id, registered in the store (or found there, when
    /// a replay of an earlier state registered it already).
    async fn mint_url(
        &self,
        key: &str,
        message: &str,
        build_url: impl FnOnce(&str) -> String,
    ) -> Result<UrlStep, FlowError> {
        let id = step_id(&self.flow_id(), key);
        let store = &self.shared.store;
        store
            .register(&id, self.config().url_ttl, self.principal())
            .await
            .map_err(|e| self.fail(FlowError::Store(e)))?;
        self.shared.exec.url_minted(&id);
        let step = UrlStep { url: build_url(&id), id, message: message.to_owned() };
        self.lock().state.urls.insert(key.to_owned(), step.clone());
        Ok(step)
    }
}

/// The id of the step `key` of `flow`: as unguessable as the flow's id, which is sealed.
fn step_id(flow: &str, key: &str) -> String {
    let digest = Sha256::new()
        .chain_update(b"elicit url step\0")
        .chain_update(flow)
        .chain_update(b"\0")
        .chain_update(key)
        .finalize();
    URL_SAFE_NO_PAD.encode(&digest[..16])
}

fn url_request(step: &UrlStep) -> InputRequest {
    InputRequest::Elicit(ElicitParams::Url { message: step.message.clone(), url: step.url.clone() })
}

/// The same page asked again after the person said they were done but the page has not recorded
/// completion: the message says so, so the person knows why they see it twice.
fn not_completed_yet(step: &UrlStep) -> InputRequest {
    InputRequest::Elicit(ElicitParams::Url {
        message: format!(
            "{}\n\nThe page is not completed yet: finish it in your browser, then confirm here again.",
            step.message
        ),
        url: step.url.clone(),
    })
}

fn url_answer_json(answer: &UrlAnswer) -> Value {
    match answer {
        UrlAnswer::Completed(value) => json!({"action": "accept", "completion": value}),
        UrlAnswer::Declined => json!({"action": "decline"}),
        UrlAnswer::Cancelled => json!({"action": "cancel"}),
    }
}

fn carried_url_answer(raw: &Value) -> UrlAnswer {
    match raw.get("action").and_then(Value::as_str) {
        Some("accept") => UrlAnswer::Completed(raw.get("completion").cloned().unwrap_or(Value::Null)),
        Some("decline") => UrlAnswer::Declined,
        _ => UrlAnswer::Cancelled,
    }
}
