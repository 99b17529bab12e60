//! Serving engine handlers from an [rmcp](https://docs.rs/rmcp) server (feature `rmcp`).
//!
//! [`McpServer`] is an rmcp `ServerHandler`: register tools, prompts, resources and resource
//! templates whose handlers take a [`Flow`], and the adapter does the plumbing of both eras. A
//! protocol revision 2026-07-28 request is served statelessly with Multi Round-Trip Requests —
//! reading `_meta`, `inputResponses` and `requestState` off each request, running the [`Engine`],
//! and answering with the complete result, an `InputRequiredResult`, or the JSON-RPC error the
//! engine chose. A connection that opens with `initialize` (2025-06-18 or 2025-11-25) is a legacy
//! session: the same handler runs once, live ([`Engine::run_live`]), its asks pushed to the client
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

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use ::rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, ErrorData, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, Implementation, Prompt, ProtocolVersion, ReadResourceResult, Resource,
    ResourceTemplate, Tool,
};
use ::rmcp::service::RequestContext;
use ::rmcp::{RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;

use crate::server::{Engine, Flow, FlowError};
use uri_template::UriTemplate;

mod builder;
mod handler;
mod http;
mod own;
mod params;
mod sessions;
mod stdio;
mod uri_template;

pub use builder::{BuildError, BuildProblem, TemplateError, TemplateMatch};
pub use http::{DEFAULT_MAX_REQUEST_BODY, wire_layer};
pub use own::{ARGUMENTS_KEY, Elicitation, Parameters, Principal, PrincipalHook, PromptCall, ToolCall, principal_of};
pub use sessions::{DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_CLIENT, DEFAULT_SESSION_KEEP_ALIVE};

/// The rmcp this adapter is built on (the pinned version), for servers that name its types
/// through one dependency: `elicit_runtime::rmcp::rmcp::model::CallToolResult`.
pub use ::rmcp;

/// What a server that asks through the engine names in most files:
/// `use elicit_runtime::rmcp::prelude::*;`.
pub mod prelude {
    pub use super::{Elicitation, McpServer, Parameters, PromptCall, SUPPORTED_PROTOCOL_VERSIONS, ToolCall};
    pub use crate::Elicit;
    pub use crate::server::{Answer, Engine, Flow, FlowError, UrlAnswer};
    pub use crate::state::KeyRing;
    pub use ::rmcp::model::{CallToolResponse, CallToolResult, ContentBlock, ErrorData};
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;
type FlowHandler<R> = Arc<dyn Fn(Flow) -> BoxFuture<Result<R, FlowError>> + Send + Sync>;
/// A tool served without the engine: it sees the raw rmcp request and context.
type RawToolHandler = Arc<
    dyn Fn(CallToolRequestParams, RequestContext<RoleServer>) -> BoxFuture<Result<CallToolResponse, ErrorData>>
        + Send
        + Sync,
>;

/// A prompt served without the engine: it sees the raw rmcp request and context.
type RawPromptHandler = Arc<
    dyn Fn(GetPromptRequestParams, RequestContext<RoleServer>) -> BoxFuture<Result<GetPromptResponse, ErrorData>>
        + Send
        + Sync,
>;
/// A resource template's handler: the URI it matched, then the flow.
type TemplateHandler =
    Arc<dyn Fn(TemplateMatch, Flow) -> BoxFuture<Result<ReadResourceResult, FlowError>> + Send + Sync>;
/// The `completion/complete` hook.
type CompletionHandler = Arc<
    dyn Fn(CompleteRequestParams, RequestContext<RoleServer>) -> BoxFuture<Result<CompleteResult, ErrorData>>
        + Send
        + Sync,
>;

/// What a tool handler's value became: rmcp's response, or the error rmcp made of it.
type ToolResponse = Result<CallToolResponse, ErrorData>;

enum ToolHandler {
    Flow(FlowHandler<ToolResponse>),
    Raw(RawToolHandler),
}

struct Registered<H> {
    spec: H,
    handler: ToolHandler,
}

enum PromptHandler {
    Flow(FlowHandler<GetPromptResult>),
    Raw(RawPromptHandler),
}

struct RegisteredPrompt {
    prompt: Prompt,
    handler: PromptHandler,
}

struct RegisteredResource {
    resource: Resource,
    handler: FlowHandler<ReadResourceResult>,
}

struct RegisteredTemplate {
    template: ResourceTemplate,
    pattern: UriTemplate,
    handler: TemplateHandler,
}

struct Inner {
    /// The engine and the principal hook; each connection clones it with its own ask cap.
    elicitation: Elicitation,
    info: Implementation,
    instructions: Option<String>,
    tools: Vec<Registered<Tool>>,
    prompts: Vec<RegisteredPrompt>,
    resources: Vec<RegisteredResource>,
    templates: Vec<RegisteredTemplate>,
    completion: Option<CompletionHandler>,
    http: HttpLimits,
    sessions: sessions::SessionLimits,
}

/// What [`McpServer::http_router`] lets in, set on the builder.
struct HttpLimits {
    /// Browser origins allowed besides loopback ones.
    allowed_origins: Vec<String>,
    /// Largest request body read, in bytes.
    max_request_body: usize,
}

/// The protocol revisions the engine serves: 2026-07-28 statelessly, and the two 2025-era
/// revisions whose clients open with `initialize` and are served live. Return it from your
/// `ServerHandler::supported_protocol_versions` (`Cow::Borrowed(SUPPORTED_PROTOCOL_VERSIONS)`):
/// rmcp's default list also offers 2025-03-26 and 2024-11-05, which the engine does not speak (a
/// 2025-03-26 session would be answered as if it were 2026-07-28). With this list, a client that
/// opens with an older revision is answered with a revision of this list, which it may accept or
/// leave.
pub const SUPPORTED_PROTOCOL_VERSIONS: &[ProtocolVersion] =
    &[ProtocolVersion::V_2025_06_18, ProtocolVersion::V_2025_11_25, ProtocolVersion::V_2026_07_28];

/// An rmcp server whose tools and prompts are engine handlers. Cheap to clone; clones share one
/// connection's cap on outstanding asks ([`McpServer::http_router`] and [`McpServer::serve_stdio`]
/// give every connection its own).
#[derive(Clone)]
pub struct McpServer {
    inner: Arc<Inner>,
    connection: Elicitation,
}

/// Builds an [`McpServer`].
pub struct McpServerBuilder {
    inner: Inner,
    /// What `build` will refuse, found while registering.
    problems: Vec<builder::BuildProblem>,
}

impl McpServer {
    /// The engine the handlers run on (for pages that record URL-mode completion).
    pub fn engine(&self) -> &Engine {
        self.inner.elicitation.engine()
    }

    /// This server for a new connection: same handlers, its own cap on outstanding asks.
    fn for_connection(&self) -> McpServer {
        McpServer { inner: self.inner.clone(), connection: self.inner.elicitation.for_connection() }
    }

    /// Whether the `resources` capability is advertised: any resource or template registered.
    fn has_resources(&self) -> bool {
        !self.inner.resources.is_empty() || !self.inner.templates.is_empty()
    }

    /// Serves this server over stdin/stdout until the client closes stdin.
    ///
    /// The first message picks the era: `initialize` opens a 2025-era session for the life of the
    /// process's stdin; anything else is served as 2026-07-28. At end of input, calls still
    /// running are dropped.
    pub async fn serve_stdio(self) -> std::io::Result<()> {
        self.serve_io(tokio::io::stdin(), tokio::io::stdout()).await
    }

    /// Serves this server over a byte stream of newline-delimited JSON-RPC (what
    /// [`McpServer::serve_stdio`] runs on stdin and stdout) until `read` ends.
    pub async fn serve_io<R, W>(self, read: R, write: W) -> std::io::Result<()>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        serve_io_with(self.for_connection(), read, write).await
    }
}

/// Serves any rmcp `ServerHandler` (yours, or an [`McpServer`]) over a byte stream of
/// newline-delimited JSON-RPC until `read` ends, with the wire fixes [`wire_layer`] makes on
/// HTTP: a Multi Round-Trip request with mistyped params is answered `-32602` (rmcp would say
/// "method not found"), URL-mode input requests lose `elicitationId`, and every 2026-07-28
/// result carries the server's `Implementation` under `_meta["io.modelcontextprotocol/serverInfo"]`.
/// `serve_io_with(server, tokio::io::stdin(), tokio::io::stdout())` serves stdio.
///
/// # Errors
///
/// An I/O error of the stream, or rmcp's failure to start the session.
pub async fn serve_io_with<S, R, W>(service: S, read: R, write: W) -> std::io::Result<()>
where
    S: ServerHandler,
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    // rmcp is served on one end of a pipe; `stdio::pump` carries the lines between the stream
    // and the other end, with the fixes the HTTP layers make.
    let (rmcp_end, pump_end) = stdio::pipe();
    let server_info = serde_json::to_value(service.get_info().server_info).unwrap_or(Value::Null);
    let served = async move {
        let running = service.serve(rmcp_end).await.map_err(std::io::Error::other)?;
        running.waiting().await.map_err(std::io::Error::other)?;
        Ok::<_, std::io::Error>(())
    };
    let pumped = stdio::pump(read, write, tokio::io::split(pump_end), server_info);
    let (served, pumped) = tokio::join!(served, pumped);
    served.and(pumped)
}
