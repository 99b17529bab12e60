//! The [`Engine`]: what every round and session of a server shares (keys, store, task records,
//! clock, tunables), and the 2025-era entry point, [`Engine::run_in_session`]. Rounds are in
//! `round.rs`, tasks in `task/`.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::answer::FlowError;
use super::clock::Clock;
use super::config::EngineConfig;
use super::exec::Executor;
use super::flow::{Flow, Shared};
use super::observe;
#[cfg(feature = "pages")]
use super::pages;
use super::payload::Payload;
use super::request::{EngineError, Request};
use super::session::{AskLimit, LiveCounters, LiveLink, Session, SessionConfig, SessionStats};
use super::store::{Store, TaskRecords, UrlCompletions};
use super::task::TaskConfig;
use crate::state::StateSealer;
use crate::wire::{Capabilities, codes};

/// Runs handlers round by round, sealing what they need between rounds into `requestState`.
///
/// An engine keeps nothing between rounds: any instance holding the same key ring can serve the
/// next round; what must not be forked lives in the shared [`Store`].
pub struct Engine {
    pub(super) audience: String,
    pub(super) sealer: StateSealer,
    pub(super) store: Arc<dyn Store>,
    pub(super) config: EngineConfig,
    pub(super) session_config: SessionConfig,
    pub(super) counters: Arc<LiveCounters>,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) tasks: Arc<dyn TaskRecords>,
    pub(super) task_config: TaskConfig,
    pub(super) anonymous_tasks: Arc<crate::server::task::AnonymousTasks>,
    #[cfg(feature = "pages")]
    pub(super) pages: Option<pages::FormPages>,
    #[cfg(feature = "apps")]
    pub(super) app_forms: crate::apps::AppForms,
}

impl Engine {
    /// New caps for one 2025-era connection — its outstanding asks and its running calls, sized by
    /// [`SessionConfig::max_outstanding_asks`] and [`SessionConfig::max_tasks_per_session`]: make one per
    /// connection and share it across its calls.
    pub fn ask_limit(&self) -> AskLimit {
        AskLimit::with_tasks(self.session_config.max_outstanding_asks, self.session_config.max_tasks_per_session)
    }

    /// How many calls running in sessions and URL-mode records this engine holds right now.
    pub fn session_stats(&self) -> SessionStats {
        self.counters.snapshot()
    }

    /// The bounds of 2025-era sessions
    /// ([`EngineBuilder::session_config`](super::EngineBuilder::session_config)): a transport keeps
    /// a session open at least as long as its longest wait.
    pub fn session_config(&self) -> &SessionConfig {
        &self.session_config
    }

    /// Runs `handler` once in a 2025-era session: every ask is sent through the session's
    /// peer and awaited (see [`SessionPeer`](super::session::SessionPeer)). The same handler serves [`Engine::run`].
    ///
    /// Errors are the JSON-RPC errors to send: `-32600` with `data.requiredCapabilities` when the
    /// handler needs a capability the session did not declare (this wire has no `-32021`),
    /// `-32602` for answers that kept failing validation or are malformed, `-32603` for a client
    /// that did not answer in time, the session running as many calls as it may, handler and store
    /// failures. Dropping the returned future drops the task and releases the URL-mode records it
    /// holds and its permit.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use elicit_runtime::server::session::{PeerError, PeerFuture, Session, SessionPeer};
    /// use elicit_runtime::server::{Answer, Engine, Flow, Request};
    /// use elicit_runtime::state::KeyRing;
    /// use elicit_runtime::wire::{Capabilities, Revision};
    /// use elicit_runtime::Elicit;
    /// use serde_json::{Value, json};
    ///
    /// /// Who are you?
    /// #[derive(Elicit)]
    /// struct Name {
    ///     name: String,
    /// }
    ///
    /// /// A client that answers every form with the name Ada (a real one is the rmcp adapter's peer).
    /// struct Ada;
    /// impl SessionPeer for Ada {
    ///     fn request(&self, method: &'static str, params: Option<Value>) -> PeerFuture<'_, Result<Value, PeerError>> {
    ///         assert_eq!(method, "elicitation/create");
    ///         assert!(params.unwrap().get("mode").is_none(), "2025-06-18 has no mode");
    ///         Box::pin(async { Ok(json!({"action": "accept", "content": {"name": "Ada"}})) })
    ///     }
    ///     fn notify(&self, _method: &'static str, _params: Value) -> PeerFuture<'_, Result<(), PeerError>> {
    ///         Box::pin(async { Ok(()) })
    ///     }
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let engine = Engine::builder("doc-server", KeyRing::generate()).build();
    /// let form_only = Capabilities { form: true, ..Capabilities::default() };
    /// let session = Session::new(Revision::V2025_06_18, form_only, Arc::new(Ada), engine.ask_limit());
    /// let greet = |flow: Flow| async move {
    ///     Ok(match flow.form::<Name>("who").await? {
    ///         Answer::Accepted(n) => format!("Hello, {}!", n.name),
    ///         Answer::Declined | Answer::Cancelled => "Hello, stranger.".to_owned(),
    ///     })
    /// };
    /// let text = engine.run_in_session(&Request::new("tools/call", "greet"), &session, greet).await.unwrap();
    /// assert_eq!(text, "Hello, Ada!");
    /// # });
    /// ```
    pub async fn run_in_session<R, F, Fut>(
        &self,
        request: &Request<'_>,
        session: &Session,
        handler: F,
    ) -> Result<R, EngineError>
    where
        F: FnOnce(Flow) -> Fut,
        Fut: Future<Output = Result<R, FlowError>>,
    {
        let _task = self.counters.task();
        let link =
            LiveLink::new(session.clone(), self.session_config.clone(), self.counters.clone(), self.store.clone())
                .map_err(EngineError::from)?;
        let flow = Flow::new(
            Capabilities::default(),
            request.arguments.cloned().unwrap_or(Value::Null),
            Payload::default(),
            Map::new(),
            self.shared(Executor::Live(Box::new(link))),
        )
        .with_caller(request);
        #[cfg(feature = "apps")]
        let flow = flow.with_app_forms(session.app_forms);
        let round = observe::Round::live(request, session.version.as_str(), &session.client, &flow);
        let finished = round.instrument(handler(flow.clone())).await;
        let fatal = flow.take_fatal();
        round.ended(&flow, fatal.is_none() && finished.is_ok());
        drop(flow);
        match fatal.map_or(finished, Err) {
            Ok(result) => Ok(result),
            Err(FlowError::Unsupported { required }) => Err(EngineError {
                code: codes::INVALID_REQUEST,
                message: format!(
                    "this request needs a client capability this session did not declare in `initialize`: {required}"
                ),
                data: Some(json!({ "requiredCapabilities": required })),
            }),
            Err(error) => Err(error.into()),
        }
    }

    /// The URL-mode half of the engine's store: what a page completing a step needs.
    pub fn url_completions(&self) -> Arc<dyn UrlCompletions> {
        self.store.clone()
    }

    /// What every flow of a round shares.
    pub(super) fn shared(&self, exec: Executor) -> Shared {
        Shared {
            store: self.store.clone(),
            config: self.config.clone(),
            record_ttl: self.record_ttl(),
            exec,
            #[cfg(feature = "pages")]
            pages: self.pages.clone(),
            #[cfg(feature = "apps")]
            app_forms: self.app_forms.clone(),
        }
    }

    /// **Experimental, from a draft.** The forms this engine offers as MCP Apps
    /// ([`EngineBuilder::app_form`](super::EngineBuilder::app_form)): serve each at its URI (the
    /// rmcp adapter's `McpServer` does).
    #[cfg(feature = "apps")]
    #[cfg_attr(docsrs, doc(cfg(feature = "apps")))]
    pub fn app_forms(&self) -> &[crate::apps::AppForm] {
        self.app_forms.all()
    }

    /// The engine's form pages ([`EngineBuilder::form_pages`](super::EngineBuilder::form_pages)):
    /// their routes, and their blocks for custom pages. `None` unless set.
    #[cfg(feature = "pages")]
    #[cfg_attr(docsrs, doc(cfg(feature = "pages")))]
    pub fn form_pages(&self) -> Option<&pages::FormPages> {
        self.pages.as_ref()
    }

    /// How long ledger records live after each write: the states' lifetime, and a margin for the
    /// drift between this instance's clock and a shared store's.
    pub(super) fn record_ttl(&self) -> Duration {
        self.sealer.ttl() + RECORD_TTL_MARGIN
    }
}

/// See [`Engine::record_ttl`].
const RECORD_TTL_MARGIN: Duration = Duration::from_secs(60);

/// How long a resumed round may run and still seal its next state without extending its flow's
/// ledger record again: the round extends the record as it opens by the record TTL and this
/// much more, so a state sealed within it dies first, the margin for clock drift kept whole.
pub(super) const ROUND_ALLOWANCE: Duration = Duration::from_secs(60);

/// The page kit's anti-forgery tokens on an engine's keys: beside the engine, which the page kit
/// (below the flow that holds its pages) does not name.
#[cfg(feature = "pages")]
impl pages::kit::AntiForgery {
    /// Tokens sealed with `engine`'s keys, valid as long as its URL-mode steps
    /// ([`EngineConfig::url_ttl`](crate::server::EngineConfig::url_ttl)): what a page of your own
    /// beside the engine uses.
    pub fn for_engine(engine: &Engine) -> Self {
        Self::new(&engine.sealer, engine.config.url_ttl)
    }
}

/// The page kit's approval page on an engine's store and keys: beside the engine, like
/// [`AntiForgery::for_engine`](pages::kit::AntiForgery::for_engine).
#[cfg(feature = "pages")]
impl pages::kit::ApprovalPage {
    /// The approval page of `engine`'s URL-mode steps at `{path}/{id}` (`path` like `/approve`;
    /// a missing leading `/` is added, a trailing one dropped). Decisions go to the engine's
    /// store, forms are sealed with its keys: instances sharing both serve each other's pages.
    pub fn new(engine: &Engine, path: &str) -> Self {
        Self::on(engine.url_completions(), pages::kit::AntiForgery::for_engine(engine), path)
    }
}
