//! What a tool does for a request whose client cannot carry its asks: the presentation policy
//! ([`McpServerBuilder::presentation`]).

use ::rmcp::RoleServer;
use ::rmcp::model::{CallToolResult, ContentBlock};
use ::rmcp::service::RequestContext;
use serde_json::Value;

use crate::server::Engine;
use crate::wire::{Capabilities, Revision};

use super::McpServerBuilder;
use super::builder::BuildProblem;

/// What a tool does when the request's declared capabilities cannot carry its asks (a client that
/// declares no elicitation, or form mode only for a tool that needs a page).
///
/// Whatever the policy, a handler that asks what the client cannot show gets
/// [`FlowError::Unsupported`](crate::server::FlowError::Unsupported): the client *could not ask*,
/// which is never [`Answer::Declined`](crate::server::Answer::Declined) (the person said no).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Presentation {
    /// Listed and run as for any client: the first ask the client cannot carry fails the call
    /// (`-32021` on 2026-07-28, `-32600` on a 2025-era session) unless the handler handles
    /// `FlowError::Unsupported` itself. What a tool without a policy does.
    #[default]
    Require,
    /// Left out of `tools/list` for that request (2026-07-28) or session (2025 era), so the model
    /// never picks a tool it cannot finish; a client that calls it anyway is answered as under
    /// `Require`.
    Hide,
    /// Listed, and a call answered at once with an ordinary tool result, `isError: true`, carrying
    /// this text, for the model to relay (where else to do it, what the person can do); the
    /// handler does not run.
    Explain(String),
}

/// A tool's policy and what its asks need.
#[derive(Debug, Clone)]
pub(super) struct Policy {
    pub(super) needs: Capabilities,
    pub(super) presentation: Presentation,
}

impl Policy {
    /// Whether `declared` carries every ask the tool needs.
    pub(super) fn carried_by(&self, declared: Capabilities) -> bool {
        let needs = self.needs;
        (!needs.form || declared.form)
            && (!needs.url || declared.url)
            && (!needs.sampling || declared.sampling)
            && (!needs.roots || declared.roots)
    }

    /// The result an `Explain` policy answers with.
    pub(super) fn explained(text: &str) -> CallToolResult {
        CallToolResult::error(vec![ContentBlock::text(text.to_owned())])
    }
}

/// What the client of `ctx` can carry: what it declared, and form asks too where it opens links
/// and `engine` asks forms through its pages for such a client
/// ([`EngineBuilder::form_fallback`](crate::server::EngineBuilder::form_fallback)).
pub(super) fn declared(ctx: &RequestContext<RoleServer>, engine: &Engine) -> Capabilities {
    #[cfg_attr(not(feature = "pages"), allow(unused_mut, reason = "only the pages widen it"))]
    let mut declared = declared_by_client(ctx);
    #[cfg(feature = "pages")]
    if declared.url && engine.form_pages().is_some_and(|pages| pages.fallback()) {
        declared.form = true;
    }
    #[cfg(not(feature = "pages"))]
    let _ = engine;
    declared
}

/// What the client of `ctx` declared: this request's `_meta` on 2026-07-28, the session's
/// `initialize` on a 2025-era session.
fn declared_by_client(ctx: &RequestContext<RoleServer>) -> Capabilities {
    if !super::super::round::declares_revision(ctx)
        && let Some(info) = ctx.peer.peer_info()
        && let Some(version) = Revision::parse(info.protocol_version.as_str()).filter(|r| r.has_sessions())
    {
        let declared = serde_json::to_value(&info.capabilities).ok();
        return version.capabilities(declared.as_ref().and_then(Value::as_object));
    }
    Capabilities::from_meta(Some(&ctx.meta.0.0))
}

impl McpServerBuilder {
    /// Sets what the tool `name` (registered before) does for a request whose declared
    /// capabilities lack one of `needs` (what its asks need: `Capabilities { form: true, url:
    /// true, .. }` for a form then a page): see [`Presentation`]. Where the engine asks forms
    /// through its pages for a client that opens links but draws no forms
    /// ([`EngineBuilder::form_fallback`](crate::server::EngineBuilder::form_fallback)), such a
    /// client carries form asks.
    ///
    /// ```
    /// use elicit_runtime::rmcp::{McpServer, Presentation};
    /// use elicit_runtime::rmcp::rmcp::model::Tool;
    /// use elicit_runtime::server::{Engine, Flow};
    /// use elicit_runtime::state::KeyRing;
    /// use elicit_runtime::wire::Capabilities;
    ///
    /// let engine = Engine::builder("doc-server", KeyRing::generate()).build();
    /// let tool = Tool::new("approve", "Asks you to approve", std::sync::Arc::new(Default::default()));
    /// let server = McpServer::builder("doc-server", "1.0", engine)
    ///     .tool(tool, |_flow: Flow| async move { Ok("approved".to_owned()) })
    ///     .presentation("approve", Capabilities { form: true, ..Capabilities::default() }, Presentation::Hide)
    ///     .build()
    ///     .unwrap();
    /// # drop(server);
    /// ```
    pub fn presentation(mut self, name: &str, needs: Capabilities, presentation: Presentation) -> Self {
        match self.inner.tools.iter_mut().find(|t| t.spec.name == name) {
            Some(tool) => tool.policy = Some(Policy { needs, presentation }),
            None => self.problems.push(BuildProblem::UnknownTool(name.to_owned())),
        }
        self
    }
}
