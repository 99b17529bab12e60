//! Building an [`Engine`]: where its state lives (keys, store, task records, clock) and every
//! tunable, one setter each.

use std::sync::Arc;
use std::time::Duration;

use super::clock::{Clock, SystemClock};
use super::config::EngineConfig;
use super::engine::Engine;
use super::session::SessionConfig;
use super::store::{InProcessStore, InProcessTasks, Store, TaskRecords};
use super::task::TaskConfig;
use crate::state::{KeyRing, StateSealer};

/// Builds an [`Engine`].
pub struct EngineBuilder {
    audience: String,
    sealer: StateSealer,
    store: Option<Arc<dyn Store>>,
    config: EngineConfig,
    session_config: SessionConfig,
    clock: Arc<dyn Clock>,
    tasks: Option<Arc<dyn TaskRecords>>,
    task_config: TaskConfig,
    #[cfg(feature = "pages")]
    pages: Option<PagesSetting>,
    #[cfg(feature = "apps")]
    app_forms: crate::apps::AppForms,
}

/// What [`EngineBuilder::form_pages`] and its companions set.
#[cfg(feature = "pages")]
struct PagesSetting {
    public_url: String,
    visitors: Arc<dyn super::pages::kit::VisitorCheck>,
    fallback: bool,
}

impl Engine {
    /// Starts building an engine. `audience` (usually the server's name) is bound into every
    /// state, so a state minted by one server is refused by another sharing its keys.
    pub fn builder(audience: impl Into<String>, keys: KeyRing) -> EngineBuilder {
        EngineBuilder::new(audience.into(), keys)
    }
}

impl EngineBuilder {
    fn new(audience: String, keys: KeyRing) -> Self {
        EngineBuilder {
            audience,
            sealer: StateSealer::new(keys),
            store: None,
            config: EngineConfig::default(),
            session_config: SessionConfig::default(),
            clock: Arc::new(SystemClock),
            tasks: None,
            task_config: TaskConfig::default(),
            #[cfg(feature = "pages")]
            pages: None,
            #[cfg(feature = "apps")]
            app_forms: crate::apps::AppForms::default(),
        }
    }

    /// **Experimental, from a draft (SEP-3118).** Offers `form` as an MCP App: a form ask of its
    /// schema carries `_meta.ui.resourceUri` for a client that negotiated app-rendered forms (see
    /// [`crate::apps`]), and a server on this engine serves the App at its URI. Nothing else about
    /// the ask changes; every other client sees the same native form.
    #[cfg(feature = "apps")]
    #[cfg_attr(docsrs, doc(cfg(feature = "apps")))]
    pub fn app_form(mut self, form: crate::apps::AppForm) -> Self {
        self.app_forms = self.app_forms.with(form);
        self
    }

    /// Serves form pages at `public_url` (the origin the user's browser reaches this server at,
    /// e.g. `https://agent.example.com`): [`Flow::form_page`](super::Flow::form_page) asks
    /// through them. Visitors are verified by [`LinkHolders`](super::pages::kit::LinkHolders)
    /// (no users) unless [`EngineBuilder::page_visitors`] says otherwise. Serve the routes of
    /// [`Engine::form_pages`].
    #[cfg(feature = "pages")]
    #[cfg_attr(docsrs, doc(cfg(feature = "pages")))]
    pub fn form_pages(mut self, public_url: impl Into<String>) -> Self {
        let (visitors, fallback) = match self.pages.take() {
            Some(setting) => (setting.visitors, setting.fallback),
            None => (Arc::new(super::pages::kit::LinkHolders) as _, false),
        };
        self.pages = Some(PagesSetting { public_url: public_url.into(), visitors, fallback });
        self
    }

    /// How the form pages verify their visitor (see [`VisitorCheck`](super::pages::kit::VisitorCheck)).
    /// Takes effect with [`EngineBuilder::form_pages`].
    #[cfg(feature = "pages")]
    #[cfg_attr(docsrs, doc(cfg(feature = "pages")))]
    pub fn page_visitors(mut self, visitors: Arc<dyn super::pages::kit::VisitorCheck>) -> Self {
        let setting = self.pages.get_or_insert_with(|| PagesSetting {
            public_url: String::new(),
            visitors: visitors.clone(),
            fallback: false,
        });
        setting.visitors = visitors;
        self
    }

    /// When `on`, [`Flow::form`](super::Flow::form) asks through the form page for a client that
    /// declares URL mode but not form mode (a host that opens links but draws no forms) instead of
    /// failing with `-32021`. A handler may decide for itself with
    /// [`Flow::form_fallback`](super::Flow::form_fallback). Takes effect with
    /// [`EngineBuilder::form_pages`].
    #[cfg(feature = "pages")]
    #[cfg_attr(docsrs, doc(cfg(feature = "pages")))]
    pub fn form_fallback(mut self, on: bool) -> Self {
        let setting = self.pages.get_or_insert_with(|| PagesSetting {
            public_url: String::new(),
            visitors: Arc::new(super::pages::kit::LinkHolders),
            fallback: on,
        });
        setting.fallback = on;
        self
    }

    /// Keeps task records in `tasks` (default: an [`InProcessTasks`] on the engine's clock).
    /// Instances that serve the same clients' tasks must share it.
    pub fn tasks(mut self, tasks: Arc<dyn TaskRecords>) -> Self {
        self.tasks = Some(tasks);
        self
    }

    /// Replaces the tunables of tasks.
    pub fn task_config(self, task_config: TaskConfig) -> Self {
        Self { task_config, ..self }
    }

    /// Replaces the tunables of handlers run in 2025-era sessions.
    pub fn session_config(self, session_config: SessionConfig) -> Self {
        Self { session_config, ..self }
    }

    /// Uses this store for URL-mode completion and the flow ledger (default: an
    /// [`InProcessStore`] on the engine's clock). Instances that share state keys must share it.
    pub fn store(mut self, store: Arc<dyn Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// Reads the time from `clock` (default: the system's): state expiry, and the default
    /// store's record expiry. For tests of expiry.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// How long a sealed state stays valid (default 15 minutes).
    pub fn state_ttl(mut self, ttl: Duration) -> Self {
        self.sealer = self.sealer.with_ttl(ttl);
        self
    }

    /// The largest `requestState` accepted or produced, in characters (default 64 KiB).
    pub fn max_state_len(mut self, len: usize) -> Self {
        self.sealer = self.sealer.with_max_token_len(len);
        self
    }

    /// Replaces the tunables.
    pub fn config(mut self, config: EngineConfig) -> Self {
        self.config = config;
        self
    }

    /// The engine.
    pub fn build(self) -> Engine {
        let clock = self.clock;
        let store = self.store.unwrap_or_else(|| Arc::new(InProcessStore::new().clock(clock.clone())));
        let store = super::observe::timed_store(store);
        let tasks = self.tasks.unwrap_or_else(|| Arc::new(InProcessTasks::new().clock(clock.clone())));
        let tasks = super::observe::timed_tasks(tasks);
        #[cfg(feature = "pages")]
        let pages = self.pages.filter(|p| !p.public_url.is_empty()).map(|p| {
            super::pages::FormPages::new(
                &p.public_url,
                &self.sealer,
                self.config.url_ttl,
                store.clone(),
                p.visitors,
                p.fallback,
            )
        });
        Engine {
            #[cfg(feature = "pages")]
            pages,
            #[cfg(feature = "apps")]
            app_forms: self.app_forms,
            audience: self.audience,
            sealer: self.sealer,
            store,
            config: self.config,
            session_config: self.session_config,
            counters: Arc::default(),
            clock,
            tasks,
            task_config: self.task_config,
            anonymous_tasks: Arc::default(),
        }
    }
}

/// Setters of [`EngineBuilder`], one per tunable: `name(value)` sets the field it names.
macro_rules! setters {
    ($($(#[$doc:meta])* $name:ident: $ty:ty => $group:ident.$field:ident;)*) => {
        impl EngineBuilder {
            $(
                $(#[$doc])*
                pub fn $name(mut self, value: $ty) -> Self {
                    self.$group.$field = value;
                    self
                }
            )*
        }
    };
}

setters! {
    /// Sets [`EngineConfig::max_invalid_answers`].
    max_invalid_answers: u32 => config.max_invalid_answers;
    /// Sets [`EngineConfig::url_retry_wait`].
    url_retry_wait: Duration => config.url_retry_wait;
    /// Sets [`EngineConfig::url_ttl`].
    url_ttl: Duration => config.url_ttl;
    /// Sets [`EngineConfig::once_wait`].
    once_wait: Duration => config.once_wait;
    /// Sets [`EngineConfig::claim_lease`].
    claim_lease: Duration => config.claim_lease;
    /// Sets [`EngineConfig::max_answers_len`].
    max_answers_len: Option<usize> => config.max_answers_len;
    /// Sets [`SessionConfig::max_outstanding_asks`].
    max_outstanding_asks: usize => session_config.max_outstanding_asks;
    /// Sets [`SessionConfig::ask_timeout`].
    session_ask_timeout: Duration => session_config.ask_timeout;
    /// Sets [`SessionConfig::url_completion_timeout`].
    session_url_completion_timeout: Duration => session_config.url_completion_timeout;
    /// Sets [`SessionConfig::max_tasks_per_session`].
    max_tasks_per_session: usize => session_config.max_tasks_per_session;
    /// Sets [`SessionConfig::heartbeat`].
    session_heartbeat: Duration => session_config.heartbeat;
    /// Sets [`SessionConfig::url_poll`].
    session_url_poll: Duration => session_config.url_poll;
    /// Sets [`TaskConfig::ttl`].
    task_ttl: Duration => task_config.ttl;
    /// Sets [`TaskConfig::poll_interval`].
    task_poll_interval: Duration => task_config.poll_interval;
    /// Sets [`TaskConfig::lease`].
    task_lease: Duration => task_config.lease;
    /// Sets [`TaskConfig::recheck`].
    task_recheck: Duration => task_config.recheck;
    /// Sets [`TaskConfig::cancel_grace`].
    task_cancel_grace: Duration => task_config.cancel_grace;
    /// Sets [`TaskConfig::url_completion_timeout`].
    task_url_completion_timeout: Duration => task_config.url_completion_timeout;
    /// Sets [`TaskConfig::max_live_tasks`].
    max_live_tasks: usize => task_config.max_live_tasks;
    /// Sets [`TaskConfig::max_live_tasks_per_principal`].
    max_live_tasks_per_principal: usize => task_config.max_live_tasks_per_principal;
    /// Sets [`TaskConfig::max_live_tasks_per_anonymous_client`].
    max_live_tasks_per_anonymous_client: usize => task_config.max_live_tasks_per_anonymous_client;
    /// Sets [`TaskConfig::input_wait`].
    task_input_wait: Duration => task_config.input_wait;
}
