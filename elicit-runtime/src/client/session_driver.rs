//! [`Driver::call_in_session`]: one call on a 2025-era session, answering what the server pushes
//! while it is in flight with the same [`Responder`] as the 2026-07-28 loop.

use std::collections::HashSet;
use std::time::Instant;

use serde_json::{Map, Value, json};

use super::session::{
    CallGuard, RequiredUrl, SessionCaller, SessionMessage, SessionNotice, SessionReceiver, SessionRefusal,
    SessionRequest, URL_ELICITATION_REQUIRED, parse_notification, parse_request, parse_url_required,
};
use super::{
    AskContext, CallError, CheckedUrl, DriveError, Driver, PendingAction, PendingKind, PendingUrl, ProtocolError,
    Responder, check_url, form,
};
use crate::wire::{self, ElicitAction, ElicitParams, codes};

/// A URL step the user consented to, waiting for its completion notification.
struct Waiting {
    id: String,
    url: CheckedUrl,
    message: String,
    since: Instant,
    retries: u32,
}

impl Waiting {
    /// This step as the responder sees it while it waits.
    fn pending(&self, kind: PendingKind) -> PendingUrl<'_> {
        PendingUrl { url: &self.url, message: &self.message, since: self.since, retries: self.retries, kind }
    }
}

/// How many unknown completion ids are remembered (a completion may overtake its `-32042`).
const MAX_EARLY_COMPLETIONS: usize = 64;

enum Step {
    Done(Result<Value, CallError>),
    SessionMessage(Option<SessionMessage>),
    Pending(PendingAction),
}

impl Driver {
    /// Calls `method` with `params` on a 2025-era session (capabilities were declared in
    /// `initialize`) and answers, while the call is in flight, every request the server pushes
    /// through `pushes`: `elicitation/create` in form and URL mode (a consented URL step shows as
    /// pending until its `notifications/elicitation/complete` arrives or the call returns),
    /// `ping`, and a clear refusal for anything undeclared. A `-32042` error shows each URL for
    /// consent, then calls again once every step completed or the responder says retry.
    ///
    /// Input requests are keyed for the responder by `elicitationId` (URL mode) or by `#n`, the
    /// n-th request pushed during the call (form mode and others).
    pub async fn call_in_session<C: SessionCaller, R: Responder>(
        &self,
        caller: &mut C,
        pushes: &mut SessionReceiver,
        responder: &mut R,
        method: &str,
        mut params: Map<String, Value>,
    ) -> Result<Value, DriveError> {
        params.remove("_meta");
        params.remove(wire::INPUT_RESPONSES);
        params.remove(wire::REQUEST_STATE);
        let guard = CallGuard::new(pushes);
        let mut state = CallState { pushed: 0, early: HashSet::new() };
        for attempt in 1..=self.max_rounds {
            match self.attempt(caller, guard.receiver, responder, method, params.clone(), attempt, &mut state).await {
                Err(DriveError::Call(CallError::Rpc { code: URL_ELICITATION_REQUIRED, data, .. })) => {
                    let urls =
                        parse_url_required(data.as_ref()).map_err(|m| DriveError::Protocol(ProtocolError::new(m)))?;
                    self.required(guard.receiver, responder, &urls, attempt, &mut state).await?;
                }
                other => return other,
            }
        }
        Err(DriveError::TooManyRounds(self.max_rounds))
    }

    #[allow(clippy::too_many_arguments, reason = "one call's context, private")]
    async fn attempt<C: SessionCaller, R: Responder>(
        &self,
        caller: &mut C,
        pushes: &mut SessionReceiver,
        responder: &mut R,
        method: &str,
        params: Map<String, Value>,
        round: usize,
        state: &mut CallState,
    ) -> Result<Value, DriveError> {
        let mut waiting: Vec<Waiting> = Vec::new();
        let mut channel_open = true;
        let mut call = Box::pin(caller.call(method, params));
        let error = loop {
            let step = {
                let pending = async {
                    match waiting.first() {
                        Some(w) => {
                            let ctx = AskContext { server: &self.server_name, key: &w.id, round };
                            responder.pending(ctx, w.pending(PendingKind::InCall)).await
                        }
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    biased;
                    result = &mut call => Step::Done(result),
                    pushed = pushes.rx.recv(), if channel_open => Step::SessionMessage(pushed),
                    action = pending => Step::Pending(action),
                }
            };
            match step {
                Step::Done(result) => {
                    if !waiting.is_empty() {
                        let ctx = AskContext { server: &self.server_name, key: &waiting[0].id, round };
                        responder.notice(ctx, "the call returned; the page step is over");
                    }
                    return result.map_err(DriveError::Call);
                }
                Step::SessionMessage(None) => channel_open = false,
                Step::SessionMessage(Some(SessionMessage::Notification { method, params })) => {
                    state.notified(self, responder, &mut waiting, &method, params.as_ref(), round);
                }
                Step::SessionMessage(Some(SessionMessage::Request { method, params, reply })) => {
                    state.pushed += 1;
                    if state.pushed > self.max_input_requests {
                        let _ = reply
                            .send(Err(SessionRefusal::new(codes::INTERNAL_ERROR, "too many requests in one call")));
                        break DriveError::Protocol(ProtocolError::new(format!(
                            "the server pushed more than {} requests during one call; giving up",
                            self.max_input_requests
                        )));
                    }
                    let key = format!("#{}", state.pushed);
                    match self.answer_push(&key, round, &method, params.as_ref(), responder, &mut waiting).await {
                        Ok(answer) => {
                            let _ = reply.send(answer);
                        }
                        Err(error) => {
                            let _ = reply.send(Err(SessionRefusal::new(codes::INTERNAL_ERROR, error.to_string())));
                            break error;
                        }
                    }
                }
                Step::Pending(PendingAction::Retry) => {
                    if let Some(w) = waiting.first_mut() {
                        w.retries += 1;
                    }
                }
                Step::Pending(PendingAction::Cancel) => break DriveError::Cancelled,
            }
        };
        drop(call);
        caller.cancel_call(&error.to_string()).await;
        Err(error)
    }

    /// Answers one pushed request: `Ok` is what goes back to the server (a result or a refusal),
    /// `Err` ends the call.
    async fn answer_push<R: Responder>(
        &self,
        key: &str,
        round: usize,
        method: &str,
        params: Option<&Value>,
        responder: &mut R,
        waiting: &mut Vec<Waiting>,
    ) -> Result<Result<Value, SessionRefusal>, DriveError> {
        let ctx = AskContext { server: &self.server_name, key, round };
        let refuse = |responder: &mut R, refusal: SessionRefusal| {
            responder.notice(ctx, &format!("refused `{}`: {}", wire::clip(method), refusal.message));
            Ok(Err(refusal))
        };
        let request = match parse_request(method, params) {
            Ok(request) => request,
            Err(refusal) => return refuse(responder, refusal),
        };
        let undeclared =
            |what: &str| SessionRefusal::new(codes::INVALID_PARAMS, format!("this client did not declare {what}"));
        match request {
            SessionRequest::Ping => Ok(Ok(json!({}))),
            SessionRequest::Elicit { params: ElicitParams::Form { message, requested_schema, .. }, .. } => {
                if !self.capabilities.form {
                    return refuse(responder, undeclared("form-mode elicitation"));
                }
                let answer = responder.form(ctx, &message, &requested_schema).await;
                super::unpresented(responder, key)?;
                if answer.action == ElicitAction::Accept {
                    let empty = Map::new();
                    form::validate(&requested_schema, answer.content.as_ref().unwrap_or(&empty))
                        .map_err(|errors| DriveError::InvalidAnswer { key: key.to_owned(), errors })?;
                }
                Ok(Ok(answer.to_json()))
            }
            SessionRequest::Elicit { params: ElicitParams::Url { message, url }, elicitation_id } => {
                if !self.capabilities.url {
                    return refuse(responder, undeclared("URL-mode elicitation"));
                }
                let id = elicitation_id.unwrap_or_default();
                let ctx = AskContext { server: &self.server_name, key: &id, round };
                let checked = match check_url(&url) {
                    Ok(checked) => checked,
                    Err(reason) => {
                        responder.notice(ctx, &format!("refused the page: {reason}"));
                        return Ok(Err(SessionRefusal::new(codes::INVALID_PARAMS, reason.to_string())));
                    }
                };
                let action = responder.url(ctx, &message, &checked).await;
                super::unpresented(responder, &id)?;
                if action == ElicitAction::Accept && !waiting.iter().any(|w| w.id == id) {
                    waiting.push(Waiting { id, url: checked, message, since: Instant::now(), retries: 0 });
                }
                Ok(Ok(json!({ "action": action.as_str() })))
            }
            SessionRequest::Sampling(params) => {
                if !self.capabilities.sampling {
                    return refuse(
                        responder,
                        SessionRefusal::new(codes::METHOD_NOT_FOUND, "this client did not declare sampling"),
                    );
                }
                Ok(responder.sampling(ctx, &params).await.ok_or_else(|| {
                    SessionRefusal::new(codes::INTERNAL_ERROR, "the sampling request could not be served")
                }))
            }
            SessionRequest::Roots => {
                if !self.capabilities.roots {
                    return refuse(
                        responder,
                        SessionRefusal::new(codes::METHOD_NOT_FOUND, "this client did not declare roots"),
                    );
                }
                Ok(responder
                    .roots(ctx)
                    .await
                    .ok_or_else(|| SessionRefusal::new(codes::INTERNAL_ERROR, "the roots request could not be served")))
            }
        }
    }

    /// After a `-32042`: consent for each URL, then wait until every step completed (or the
    /// responder says retry). `Ok` = call again.
    async fn required<R: Responder>(
        &self,
        pushes: &mut SessionReceiver,
        responder: &mut R,
        urls: &[RequiredUrl],
        round: usize,
        state: &mut CallState,
    ) -> Result<(), DriveError> {
        if !self.capabilities.url {
            return Err(DriveError::Refused {
                key: urls[0].elicitation_id.clone(),
                reason: "the server needs URL-mode steps, but this client did not declare URL mode".into(),
            });
        }
        let mut waiting = Vec::new();
        for required in urls {
            let refuse = |reason: String| DriveError::Refused { key: required.elicitation_id.clone(), reason };
            let checked = check_url(&required.url).map_err(|e| refuse(e.to_string()))?;
            let ctx = AskContext { server: &self.server_name, key: &required.elicitation_id, round };
            let action = responder.url(ctx, &required.message, &checked).await;
            super::unpresented(responder, &required.elicitation_id)?;
            match action {
                ElicitAction::Accept => {}
                ElicitAction::Decline => return Err(DriveError::Declined),
                ElicitAction::Cancel => return Err(DriveError::Cancelled),
            }
            if !state.early.remove(&required.elicitation_id) {
                waiting.push(Waiting {
                    id: required.elicitation_id.clone(),
                    url: checked,
                    message: required.message.clone(),
                    since: Instant::now(),
                    retries: 0,
                });
            }
        }
        let mut channel_open = true;
        while !waiting.is_empty() {
            let step = {
                let w = &waiting[0];
                let ctx = AskContext { server: &self.server_name, key: &w.id, round };
                let pending = w.pending(PendingKind::Required);
                tokio::select! {
                    biased;
                    pushed = pushes.rx.recv(), if channel_open => Step::SessionMessage(pushed),
                    action = responder.pending(ctx, pending) => Step::Pending(action),
                }
            };
            match step {
                Step::SessionMessage(None) => channel_open = false,
                Step::SessionMessage(Some(SessionMessage::Notification { method, params })) => {
                    state.notified(self, responder, &mut waiting, &method, params.as_ref(), round);
                }
                Step::SessionMessage(Some(SessionMessage::Request { reply, .. })) => {
                    let _ = reply.send(Err(SessionRefusal::new(
                        super::session::INVALID_REQUEST,
                        "no call is in flight; this client only answers requests that belong to a call",
                    )));
                }
                Step::Pending(PendingAction::Retry) => return Ok(()),
                Step::Pending(PendingAction::Cancel) => return Err(DriveError::Cancelled),
                Step::Done(_) => {}
            }
        }
        Ok(())
    }
}

/// What one call in a session remembers across its attempts.
struct CallState {
    /// Requests pushed so far.
    pushed: usize,
    /// Completion ids that named no step waiting at the time.
    early: HashSet<String>,
}

impl CallState {
    /// A notification pushed while steps wait: a completion ends its step's wait, or is
    /// remembered for a step not asked yet; anything else is ignored.
    fn notified<R: Responder>(
        &mut self,
        driver: &Driver,
        responder: &mut R,
        waiting: &mut Vec<Waiting>,
        method: &str,
        params: Option<&Value>,
        round: usize,
    ) {
        if let SessionNotice::ElicitationComplete(id) = parse_notification(method, params) {
            match waiting.iter().position(|w| w.id == id) {
                Some(at) => {
                    waiting.remove(at);
                }
                None => self.remember(driver, responder, &id, round),
            }
        }
    }

    fn remember<R: Responder>(&mut self, driver: &Driver, responder: &mut R, id: &str, round: usize) {
        let ctx = AskContext { server: &driver.server_name, key: id, round };
        responder.notice(ctx, "a completion notification for an elicitation this client is not waiting for; ignored");
        if self.early.len() < MAX_EARLY_COMPLETIONS {
            self.early.insert(id.to_owned());
        }
    }
}
