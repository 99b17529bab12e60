//! Serving engine handlers from an [rmcp](https://docs.rs/rmcp) server (feature `rmcp`).
//!
//! [`McpServer`] is an rmcp `ServerHandler`: register tools, prompts, resources and resource
//! templates whose handlers take a [`Flow`](crate::server::Flow), and the adapter does the plumbing of both eras. A
//! protocol revision 2026-07-28 request is served statelessly with Multi Round-Trip Requests —
//! reading `_meta`, `inputResponses` and `requestState` off each request, running the [`Engine`](crate::server::Engine),
//! and answering with the complete result, an `InputRequiredResult`, or the JSON-RPC error the
//! engine chose. A connection that opens with `initialize` (2025-06-18 or 2025-11-25) opens a
//! session: the same handler runs once ([`Engine::run_in_session`](crate::server::Engine::run_in_session)), its asks pushed to the client
//! as requests within the call they serve (on HTTP, on that call's SSE stream). Serve it over
//! Streamable HTTP with [`McpServer::http_router`] or over stdio with [`McpServer::serve_stdio`].
//!
//! The server advertises only what was registered: `tools`, `prompts`, `resources` (for resources
//! or templates) and `completions` (for a [`McpServerBuilder::completion`] hook).
//!
//! A server you wrote (your own `ServerHandler`, a `#[tool_router]`) asks through the same engine
//! without moving its tools: keep an [`Elicitation`] in it, take a [`ToolCall`] in the `#[tool]`s
//! that ask and [`ToolCall::run`] them; wrap its HTTP router in [`wire_layer`], or serve it on
//! stdio with [`serve_io_with`], for the wire fixes `McpServer` makes. `McpServer` is built on
//! these pieces.
//!
//! The modules, leaves first (each imports only those above it): `convert` (the engine's values
//! as rmcp's and back), `peer` (a 2025-era client and a request's progress, over rmcp),
//! `wire_fixes` (what rmcp gets wrong on the wire, each fix in its module with the rmcp release
//! that needs it and the tests that show it), `round` (one request as the engine runs it, built
//! once from rmcp's request and context, its params checked there), `extract` (what a server of your own uses:
//! [`Elicitation`], [`ToolCall`], [`PromptCall`], [`FormArgs`]), and `server` ([`McpServer`] in
//! one place: builder, `ServerHandler`, HTTP router with its sessions, stdio).

#[cfg(feature = "rmcp-client")]
#[cfg_attr(docsrs, doc(cfg(feature = "rmcp-client")))]
pub mod client;
mod convert;
mod extract;
mod own;
mod peer;
mod round;
mod server;
mod tasks;
mod wire_fixes;

pub use extract::{ARGUMENTS_KEY, Elicitation, FormArgs, Principal, PrincipalHook, PromptCall, ToolCall, principal_of};
pub use own::{LOOPBACK_ORIGINS, serve_http, with_tasks_extension};
pub use server::sessions::{
    CappedSessions, DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_CLIENT, DEFAULT_SESSION_KEEP_ALIVE,
};
pub use server::{BuildError, BuildProblem, McpServer, McpServerBuilder, Presentation, TemplateError, TemplateMatch};
pub use wire_fixes::{DEFAULT_MAX_REQUEST_BODY, serve_io_with, wire_layer};

use ::rmcp::model::ProtocolVersion;

/// The rmcp this adapter is built on (the pinned version), for servers that name its types
/// through one dependency: `elicit_runtime::rmcp::rmcp::model::CallToolResult`.
pub use ::rmcp;

/// What a server that asks through the engine names in most files:
/// `use elicit_runtime::rmcp::prelude::*;`. No name here is also one of rmcp's (`Parameters`,
/// `Json`, `tool`, `ServerHandler`, ...) unless it is rmcp's own item re-exported, so the glob
/// sits beside rmcp's imports without shadowing any.
pub mod prelude {
    pub use super::{
        ARGUMENTS_KEY, Elicitation, FormArgs, McpServer, PromptCall, SUPPORTED_PROTOCOL_VERSIONS, ToolCall,
    };
    pub use crate::Elicit;
    pub use crate::server::{Answer, Engine, Flow, FlowError, UrlAnswer};
    pub use crate::state::KeyRing;
    pub use ::rmcp::model::{CallToolResponse, CallToolResult, ContentBlock, ErrorData};
}

/// The protocol revisions the engine serves: 2026-07-28 statelessly, and the two 2025-era
/// revisions whose clients open with `initialize` and are served in their session. Return it from your
/// `ServerHandler::supported_protocol_versions` (`Cow::Borrowed(SUPPORTED_PROTOCOL_VERSIONS)`):
/// rmcp's default list also offers 2025-03-26 and 2024-11-05, which the engine does not speak (a
/// 2025-03-26 session would be answered as if it were 2026-07-28). With this list, a client that
/// opens with an older revision is answered with a revision of this list, which it may accept or
/// leave.
pub const SUPPORTED_PROTOCOL_VERSIONS: &[ProtocolVersion] =
    &[ProtocolVersion::V_2025_06_18, ProtocolVersion::V_2025_11_25, ProtocolVersion::V_2026_07_28];
