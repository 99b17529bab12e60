//! One request as the engine runs it: the seam between rmcp's decoded request and the engine's
//! [`Request`].
//!
//! A [`Round`] is built once from what rmcp hands a handler (`CallToolRequestParams`,
//! `GetPromptRequestParams` or `ReadResourceRequestParams`, with the `RequestContext` that holds
//! the request's `_meta`: protocol version, client capabilities, progress token; its peer and its
//! HTTP head), and the Multi Round-Trip params are checked there, once: a request the wire fix
//! marked mistyped ([`mistyped_params`](super::wire_fixes::mistyped_params)) never becomes a
//! round. Every entry point runs a round: [`Elicitation::call_tool`](super::Elicitation::call_tool)
//! and [`ToolCall`](super::ToolCall), [`Elicitation::get_prompt`](super::Elicitation::get_prompt)
//! and [`PromptCall`](super::PromptCall), [`Elicitation::call_tool_task`](super::Elicitation::call_tool_task),
//! and [`McpServer`](super::McpServer)'s tools, prompts and resources. A tool or prompt served
//! without the engine gets rmcp's request back ([`Round::into_inner`]), checked the same way.

use std::collections::BTreeMap;

use ::rmcp::RoleServer;
use ::rmcp::model::{CallToolRequestParams, ErrorData, GetPromptRequestParams, JsonObject, ReadResourceRequestParams};
use ::rmcp::service::RequestContext;
use serde_json::Value;

use super::wire_fixes::mistyped_params::refuse_marked;
use crate::server::Request;
use crate::wire;

/// Whether the request carries a 2026-07-28 `_meta` protocol version: what rmcp's
/// `protocol_version()` answers (any string decodes), without decoding a copy of it.
pub(crate) fn declares_revision(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.meta.0.0.get(wire::META_PROTOCOL_VERSION).is_some_and(Value::is_string)
}

/// rmcp's params of a request the engine runs.
pub(crate) trait RoundParams {
    /// The JSON-RPC method.
    const METHOD: &'static str;

    /// What the request names: a tool, a prompt, a resource's URI.
    fn target(&self) -> &str;

    /// The members the engine reads, taken out.
    fn into_members(self) -> Members;
}

/// The members of a round's params the engine reads, as rmcp decoded them.
pub(crate) struct Members {
    target: String,
    arguments: Option<JsonObject>,
    input_responses: Option<BTreeMap<String, Value>>,
    request_state: Option<String>,
}

impl RoundParams for CallToolRequestParams {
    const METHOD: &'static str = wire::TOOLS_CALL;

    fn target(&self) -> &str {
        &self.name
    }

    fn into_members(self) -> Members {
        Members {
            target: self.name.into_owned(),
            arguments: self.arguments,
            input_responses: self.input_responses,
            request_state: self.request_state,
        }
    }
}

impl RoundParams for GetPromptRequestParams {
    const METHOD: &'static str = wire::PROMPTS_GET;

    fn target(&self) -> &str {
        &self.name
    }

    fn into_members(self) -> Members {
        Members {
            target: self.name,
            arguments: self.arguments,
            input_responses: self.input_responses,
            request_state: self.request_state,
        }
    }
}

impl RoundParams for ReadResourceRequestParams {
    const METHOD: &'static str = wire::RESOURCES_READ;

    fn target(&self) -> &str {
        &self.uri
    }

    fn into_members(self) -> Members {
        Members {
            target: self.uri,
            arguments: None,
            input_responses: self.input_responses,
            request_state: self.request_state,
        }
    }
}

/// One request of a tool, prompt or resource, checked, with its context.
#[derive(Debug)]
pub(crate) struct Round<'c, P> {
    params: P,
    ctx: &'c RequestContext<RoleServer>,
}

impl<'c, P: RoundParams> Round<'c, P> {
    /// The round of rmcp's `params` and `ctx`.
    ///
    /// # Errors
    ///
    /// `-32602` for Multi Round-Trip params the wire fix found mistyped.
    pub(crate) fn new(params: P, ctx: &'c RequestContext<RoleServer>) -> Result<Self, ErrorData> {
        refuse_marked(ctx)?;
        Ok(Round { params, ctx })
    }

    /// What the request names: a tool, a prompt, a resource's URI.
    pub(crate) fn target(&self) -> &str {
        self.params.target()
    }

    /// The request's context.
    pub(crate) fn context(&self) -> &'c RequestContext<RoleServer> {
        self.ctx
    }

    /// rmcp's request, for a handler that runs without the engine.
    pub(crate) fn into_inner(self) -> P {
        self.params
    }

    /// The members the engine reads, owned, and the context.
    pub(crate) fn into_owned(self) -> (OwnedRound, &'c RequestContext<RoleServer>) {
        let Members { target, arguments, input_responses, request_state } = self.params.into_members();
        let round = OwnedRound {
            method: P::METHOD,
            target,
            arguments: arguments.map(Value::Object),
            input_responses: input_responses.map(|r| Value::Object(r.into_iter().collect())),
            request_state,
        };
        (round, self.ctx)
    }
}

/// A round's members in the shapes the engine's [`Request`] borrows.
#[derive(Debug)]
pub(crate) struct OwnedRound {
    method: &'static str,
    target: String,
    arguments: Option<Value>,
    input_responses: Option<Value>,
    request_state: Option<String>,
}

impl OwnedRound {
    /// The engine's request of these members (its `_meta` and principal are the runner's to add:
    /// a 2025-era session's round takes its revision and capabilities from the session).
    pub(crate) fn request(&self) -> Request<'_> {
        Request::new(self.method, &self.target)
            .arguments(self.arguments.as_ref())
            .input_responses(self.input_responses.as_ref())
            .request_state(self.request_state.as_deref())
    }
}
