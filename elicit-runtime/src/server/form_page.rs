//! [`Flow::form_page`]: a typed form asked through a page the engine renders (URL mode), and
//! `Flow::form`'s fallback to it for hosts that open links but draw no forms. The pages
//! themselves, their routes and kit, are in `pages/`, below the flow that holds them.

use serde_json::{Map, Value};

use super::answer::{Answer, FlowError, UrlAnswer};
use super::flow::Flow;
use super::pages::Cut;
use crate::Elicit;

impl Flow {
    /// Asks for a `T` through a form page the server renders (URL mode): the user fills it in the
    /// browser, the page validates it with `T`'s own parser and records it as the step's
    /// completion, and it comes back typed, like [`Flow::form`]. The answer never passes through
    /// the client: the way to ask for passwords, card data and API keys, which the spec keeps out
    /// of form mode. The page's Decline and Cancel buttons, and the client's, give
    /// [`Answer::Declined`] and [`Answer::Cancelled`].
    ///
    /// Needs [`EngineBuilder::form_pages`](super::EngineBuilder::form_pages), the pages' routes
    /// served ([`FormPages::router`](super::pages::FormPages::router)) and a client that declares URL mode.
    ///
    /// # Errors
    ///
    /// As [`Flow::url`]; [`FlowError::Failed`] when the engine has no form pages.
    pub async fn form_page<T: Elicit>(&self, key: &str, message: &str) -> Result<Answer<T>, FlowError> {
        self.page_ask::<T>(key, message, None).await
    }

    /// [`Flow::form_page`], the form cut to some fields when `cut` says so.
    pub(super) async fn page_ask<T: Elicit>(
        &self,
        key: &str,
        message: &str,
        cut: Option<Cut>,
    ) -> Result<Answer<T>, FlowError> {
        let Some(pages) = self.shared.pages.clone() else {
            return Err(self.fail(FlowError::Failed(
                "form pages are not configured on this engine (EngineBuilder::form_pages)".to_owned(),
            )));
        };
        pages.register::<T>();
        let principal = self.principal().map(str::to_owned);
        let form = std::any::type_name::<T>();
        let answer =
            self.url(key, message, |step| pages.link(step, form, message, cut.as_ref(), principal.as_deref())).await?;
        let recorded = match answer {
            UrlAnswer::Declined => return Ok(Answer::Declined),
            UrlAnswer::Cancelled => return Ok(Answer::Cancelled),
            UrlAnswer::Completed(recorded) => recorded,
        };
        match recorded.get("action").and_then(Value::as_str) {
            Some("accept") => {
                let empty = Map::new();
                let content = recorded.get("content").and_then(Value::as_object).unwrap_or(&empty);
                T::from_content(content).map(Answer::Accepted).map_err(|errors| {
                    self.fail(FlowError::Failed(format!("the page recorded an answer its form refuses: {errors}")))
                })
            }
            Some("decline") => Ok(Answer::Declined),
            _ => Ok(Answer::Cancelled),
        }
    }

    /// Whether `flow.form` asks through the page: the client declared URL mode but not form mode,
    /// and the engine's pages fall back.
    pub(super) fn asks_through_page(&self) -> bool {
        let capabilities = self.capabilities();
        !capabilities.form
            && capabilities.url
            && self.shared.pages.as_ref().is_some_and(|pages| self.lock().form_fallback.unwrap_or(pages.fallback()))
    }
}

impl Flow {
    /// Decides for this flow (this tool) whether [`Flow::form`] asks through the form page when
    /// the client declares URL mode but not form mode, whatever the engine's
    /// [`EngineBuilder::form_fallback`](super::EngineBuilder::form_fallback) says. Every clone of
    /// the flow shares the choice.
    pub fn form_fallback(&self, on: bool) -> &Self {
        self.lock().form_fallback = Some(on);
        self
    }
}
