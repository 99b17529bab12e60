//! [`Flow::complete_args`]: a tool's arguments completed by a form asking for what is missing.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::answer::{Answer, FlowError};
use super::flow::Flow;
use crate::Elicit;

impl Flow {
    /// Completes a tool's arguments: the request's `arguments` parsed as `T` when they are
    /// complete and valid — no elicitation at all — and otherwise a form asking for exactly the
    /// missing or invalid fields, the errors stated in the message. Valid arguments the model sent
    /// are kept and not asked again; an invalid value is never trusted (nor offered as a default).
    /// A field with a `default` the model left out takes that default. The merged answer is
    /// validated again as a whole.
    ///
    /// With the `schemars` feature the same type is the tool's `inputSchema`, so one struct
    /// declares the tool's parameters, validates the model's arguments and asks the user for what
    /// is missing.
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
    /// # let arguments = json!({"name": "Ada"});
    /// # let request = Request::new("tools/call", "greet").arguments(Some(&arguments)).meta(meta.as_object());
    /// let greet = |flow: Flow| async move {
    ///     Ok(match flow.complete_args::<Name>("who").await? {
    ///         Answer::Accepted(n) => format!("Hello, {}!", n.name),
    ///         Answer::Declined | Answer::Cancelled => "Hello, stranger.".to_owned(),
    ///     })
    /// };
    /// // Complete arguments: no elicitation at all.
    /// let Outcome::Complete(text) = engine.run(&request, greet).await.unwrap() else { panic!() };
    /// assert_eq!(text, "Hello, Ada!");
    /// // Missing ones: a form asking for exactly those.
    /// let Outcome::InputRequired(asked) = engine.run(&Request::new("tools/call", "greet").meta(meta.as_object()), greet).await.unwrap()
    /// else {
    ///     panic!()
    /// };
    /// assert!(asked.input_requests[0].1.to_json()["params"]["message"].as_str().unwrap().contains("Missing: `name`."));
    /// # });
    /// ```
    pub async fn complete_args<T: Elicit>(&self, key: &str) -> Result<Answer<T>, FlowError> {
        let full = T::requested_schema();
        // A field with a default that the model left out takes its default, as the user's form
        // would have pre-filled it.
        let provided = match self.arguments() {
            Value::Object(arguments) => full.with_defaults(&arguments),
            _ => full.with_defaults(&Map::new()),
        };
        let errors = match T::from_content(&provided) {
            Ok(value) => return Ok(Answer::Accepted(value)),
            Err(errors) => errors,
        };
        let asked: Vec<&str> = errors.iter().map(|e| e.field.as_ref()).collect();
        let mut schema = full.clone();
        schema.properties.retain(|p| asked.contains(&p.name.as_ref()));
        // Everything asked is needed again: an optional argument is asked because it was invalid.
        // Keep what the schema says; only the failing fields appear.
        let kept: Map<String, Value> = provided
            .into_iter()
            .filter(|(name, _)| !asked.contains(&name.as_str()) && full.property(name).is_some())
            .collect();
        let mut missing = Vec::new();
        let mut invalid = Vec::new();
        for error in &errors {
            if error.is_missing() {
                missing.push(format!("`{}`", error.field));
            } else {
                invalid.push(format!("{error}"));
            }
        }
        let mut message = T::MESSAGE.to_owned();
        if !missing.is_empty() {
            message.push_str(&format!("\n\nMissing: {}.", missing.join(", ")));
        }
        if !invalid.is_empty() {
            message.push_str(&format!("\n\nThe values given were not valid: {}.", invalid.join("; ")));
        }
        let asked: Vec<String> = asked.into_iter().map(str::to_owned).collect();
        #[cfg(feature = "pages")]
        if self.asks_through_page() {
            let cut = super::pages::Cut { only: asked, kept };
            return Box::pin(self.page_ask::<T>(key, &message, Some(cut))).await;
        }
        self.form_schema(key, &message, Cow::Owned(schema), |content| {
            // Only the fields the form asked for: the user's answer cannot overwrite the rest.
            let mut merged = kept.clone();
            merged.extend(content.iter().filter(|(k, _)| asked.contains(k)).map(|(k, v)| (k.clone(), v.clone())));
            T::from_content(&merged)
        })
        .await
    }
}
