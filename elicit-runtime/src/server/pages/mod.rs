//! Pages the server renders for URL-mode steps (feature `pages`): [`Flow::form_page`](super::Flow::form_page) asks for a
//! typed form through a page of the server's own, the answer never passing through the client;
//! the same page stands in for form mode for hosts that open links but draw no forms
//! ([`EngineBuilder::form_fallback`](super::EngineBuilder::form_fallback)). [`FormPages::router`]
//! serves them; [`kit`]'s blocks serve custom pages.
//!
//! A step's link is `{public_url}/form/{step}?d={descriptor}`: the step's id (the engine's 128
//! random bits) and a descriptor sealed with the engine's keys naming the form and the message, so
//! any instance sharing the keys can show it. The descriptor is no credential: the page verifies
//! its visitor with the engine's [`VisitorCheck`] and the store records the answer only for the
//! step's owner, once, while the step lives.

mod approval;
pub mod kit;
mod routes;

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::store::UrlCompletions;
use crate::Elicit;
use crate::content::ContentErrors;
use crate::schema::RequestedSchema;
use crate::state::{Binding, StateSealer};
use kit::{AntiForgery, VisitorCheck};

/// The path under which the form pages are served: `/form/{step}`.
pub const PAGE_PATH: &str = "/form/";
/// The query parameter of a page link carrying its sealed descriptor.
pub const DESCRIPTOR_PARAM: &str = "d";
/// The largest form submission read, in bytes; a larger body is refused (413).
pub const MAX_POST_BODY: usize = 64 * 1024;
/// The binding method of descriptors.
const DESCRIPTOR_METHOD: &str = "elicit-runtime/pages/descriptor";

/// A form the pages can show: its schema and its type's own parser, which returns the validated
/// value's content.
#[derive(Clone, Copy)]
struct FormEntry {
    schema: &'static RequestedSchema,
    parse: ParseFn,
}

/// A form type's parser, returning the validated value as content.
type ParseFn = fn(&Map<String, Value>) -> Result<Map<String, Value>, ContentErrors>;

fn parse_as<T: Elicit>(content: &Map<String, Value>) -> Result<Map<String, Value>, ContentErrors> {
    T::from_content(content).map(|value| value.to_content())
}

/// What a page link's descriptor says: which form, with which message; for a form cut to the
/// fields a tool's arguments lacked ([`Flow::complete_args`](super::Flow::complete_args)), those fields and the values kept.
#[derive(Serialize, Deserialize)]
struct Descriptor {
    form: String,
    message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    only: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    kept: Map<String, Value>,
}

/// A form cut to some of its fields, the others' values kept.
pub(in crate::server) struct Cut {
    pub(in crate::server) only: Vec<String>,
    pub(in crate::server) kept: Map<String, Value>,
}

/// A page's form as its link describes it.
struct Described {
    entry: FormEntry,
    message: String,
    only: Option<Vec<String>>,
    kept: Map<String, Value>,
}

impl Described {
    /// The schema the page shows: the form's, or its cut.
    fn schema(&self) -> std::borrow::Cow<'static, RequestedSchema> {
        match &self.only {
            None => std::borrow::Cow::Borrowed(self.entry.schema),
            Some(only) => {
                let mut schema = self.entry.schema.clone();
                schema.properties.retain(|p| only.iter().any(|name| *name == p.name));
                std::borrow::Cow::Owned(schema)
            }
        }
    }

    /// Validates a submission with the type's own parser, the kept values merged in: the answer's content.
    fn parse(&self, posted: &Map<String, Value>) -> Result<Map<String, Value>, ContentErrors> {
        if self.only.is_none() && self.kept.is_empty() {
            return (self.entry.parse)(posted);
        }
        let mut merged = self.kept.clone();
        let shown = |name: &String| self.only.as_ref().is_none_or(|only| only.contains(name));
        merged.extend(posted.iter().filter(|(name, _)| shown(name)).map(|(k, v)| (k.clone(), v.clone())));
        (self.entry.parse)(&merged)
    }
}

/// The engine's form pages: the forms they can show, the keys their links and tokens are sealed
/// with, the store answers are recorded in, and how visitors are verified. Cheap to clone.
#[derive(Clone)]
pub struct FormPages {
    inner: Arc<Inner>,
}

struct Inner {
    public_url: String,
    sealer: StateSealer,
    anti_forgery: AntiForgery,
    store: Arc<dyn UrlCompletions>,
    visitors: Arc<dyn VisitorCheck>,
    forms: RwLock<HashMap<&'static str, FormEntry>>,
    fallback: bool,
}

impl FormPages {
    pub(super) fn new(
        public_url: &str,
        sealer: &StateSealer,
        ttl: std::time::Duration,
        store: Arc<dyn UrlCompletions>,
        visitors: Arc<dyn VisitorCheck>,
        fallback: bool,
    ) -> Self {
        let sealer = sealer.clone().with_ttl(ttl);
        FormPages {
            inner: Arc::new(Inner {
                public_url: public_url.trim_end_matches('/').to_owned(),
                anti_forgery: AntiForgery::new(&sealer, ttl),
                sealer,
                store,
                visitors,
                forms: RwLock::default(),
                fallback,
            }),
        }
    }

    /// Lets the pages show `T`. [`Flow::form_page`](super::Flow::form_page) registers its form as it asks; register the
    /// forms up front when another instance may serve a page before this one asked for it.
    pub fn register<T: Elicit>(&self) -> &Self {
        let name = std::any::type_name::<T>();
        let known = self.inner.forms.read().unwrap_or_else(|e| e.into_inner()).contains_key(name);
        if !known {
            let entry = FormEntry { schema: T::requested_schema(), parse: parse_as::<T> };
            self.inner.forms.write().unwrap_or_else(|e| e.into_inner()).insert(name, entry);
        }
        self
    }

    fn form(&self, name: &str) -> Option<FormEntry> {
        self.inner.forms.read().unwrap_or_else(|e| e.into_inner()).get(name).copied()
    }

    /// The store answers are recorded in (the engine's).
    pub fn store(&self) -> &Arc<dyn UrlCompletions> {
        &self.inner.store
    }

    /// The anti-forgery tokens of the pages (sealed with the engine's keys).
    pub fn anti_forgery(&self) -> &AntiForgery {
        &self.inner.anti_forgery
    }

    /// How visitors are verified.
    pub fn visitors(&self) -> &Arc<dyn VisitorCheck> {
        &self.inner.visitors
    }

    /// Whether `flow.form` asks through the page for a client that declares URL mode only.
    pub fn fallback(&self) -> bool {
        self.inner.fallback
    }

    /// The link to the page of `step` showing form `form` with `message`.
    pub(in crate::server) fn link(
        &self,
        step: &str,
        form: &str,
        message: &str,
        cut: Option<&Cut>,
        principal: Option<&str>,
    ) -> String {
        let descriptor = Descriptor {
            form: form.to_owned(),
            message: message.to_owned(),
            only: cut.map(|cut| cut.only.clone()),
            kept: cut.map(|cut| cut.kept.clone()).unwrap_or_default(),
        };
        let sealed = self.inner.sealer.seal_json(&descriptor_binding(step), &descriptor, SystemTime::now());
        let mut link = format!("{}{PAGE_PATH}{step}", self.inner.public_url);
        if let Ok(sealed) = sealed {
            link.push('?');
            link.push_str(DESCRIPTOR_PARAM);
            link.push('=');
            link.push_str(&sealed);
        }
        if let Some(extra) = self.inner.visitors.link_query(step, principal) {
            link.push(if link.contains('?') { '&' } else { '?' });
            link.push_str(&extra);
        }
        link
    }

    /// The form and message a link's descriptor names for `step`, if it is one of ours and the form is known.
    fn descriptor(&self, step: &str, sealed: &str) -> Option<Described> {
        let descriptor: Descriptor =
            self.inner.sealer.open_json(&descriptor_binding(step), sealed, SystemTime::now()).ok()?;
        let entry = self.form(&descriptor.form)?;
        Some(Described { entry, message: descriptor.message, only: descriptor.only, kept: descriptor.kept })
    }

    /// The pages' routes (`GET` and `POST` on `/form/{step}`), to merge into the server's router:
    /// `router.merge(engine.form_pages()?.router())`; on [`McpServer`](crate::rmcp::McpServer),
    /// `mcp.page_router()`.
    pub fn router(&self) -> axum::Router {
        routes::router(self.clone())
    }
}

fn descriptor_binding(step: &str) -> Binding<'_> {
    Binding {
        principal: None,
        method: DESCRIPTOR_METHOD,
        name: step,
        arguments_digest: [0; 32],
        audience: kit::AUDIENCE,
    }
}
