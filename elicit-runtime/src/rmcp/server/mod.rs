//! [`McpServer`] in one place: what it serves (registered on [`McpServerBuilder`]), how it answers
//! (its `ServerHandler`), and its two transports (Streamable HTTP with capped, long-lived 2025-era
//! sessions, and stdio). Built on the same pieces a server of your own uses.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use ::rmcp::RoleServer;
use ::rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, ErrorData, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, Implementation, Prompt, ReadResourceResult, Resource, ResourceTemplate, Tool,
};
use ::rmcp::service::RequestContext;
use ::rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use ::rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use axum::response::IntoResponse as _;

use super::extract::Elicitation;
use super::own::LOOPBACK_ORIGINS;
use super::wire_fixes::layer::{DEFAULT_MAX_REQUEST_BODY, Gate, Stateless, put_right_around};
use super::wire_fixes::serve_io_with;
use crate::server::{Engine, Flow, FlowError};
use uri_template::UriTemplate;

#[cfg(feature = "apps")]
mod apps;
mod builder;
mod handler;
mod presentation;
pub(super) mod sessions;
mod uri_template;

pub use builder::{BuildError, BuildProblem, TemplateError, TemplateMatch};
pub use presentation::Presentation;

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
    /// Whether the tool may run as a task of the Tasks extension.
    task: crate::server::task::TaskSupport,
    /// What the tool does when the client cannot carry its asks (none: `Require`).
    policy: Option<presentation::Policy>,
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
    /// What `get_info` answers, built on first use.
    config: std::sync::OnceLock<::rmcp::model::ServerConfig>,
}

/// What [`McpServer::http_router`] lets in, set on the builder.
struct HttpLimits {
    /// Browser origins allowed besides loopback ones.
    allowed_origins: Vec<String>,
    /// Largest request body read, in bytes.
    max_request_body: usize,
}

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

    /// Whether the Tasks extension is advertised: any task-capable tool registered.
    fn has_tasks(&self) -> bool {
        self.inner.tools.iter().any(|t| t.task != crate::server::task::TaskSupport::Forbidden)
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

impl McpServer {
    /// An axum router serving this server at `/mcp` over Streamable HTTP: 2026-07-28 requests
    /// statelessly (JSON answers), and 2025-era clients in sessions (`Mcp-Session-Id`, kept in
    /// this process: several instances need affinity on that header; `DELETE` ends one).
    ///
    /// A 2025-era session lives as long as its asks ([`McpServerBuilder::session_keep_alive`](McpServerBuilder::session_keep_alive)),
    /// and sessions are capped overall and per client ([`McpServerBuilder::max_sessions`](McpServerBuilder::max_sessions),
    /// [`McpServerBuilder::max_sessions_per_client`](McpServerBuilder::max_sessions_per_client)).
    ///
    /// Only loopback `Host` headers are accepted unless `allowed_hosts` names others; only
    /// loopback `Origin`s unless [`McpServerBuilder::allowed_origins`](McpServerBuilder::allowed_origins) names others (a request
    /// without `Origin` passes). Bodies larger than [`McpServerBuilder::max_request_body`](McpServerBuilder::max_request_body) are
    /// refused (413) before they are parsed.
    pub fn http_router(&self, allowed_hosts: &[String]) -> axum::Router {
        // rmcp routes by era: an `initialize` opens a session whatever this setting says about
        // 2026-07-28 requests, which are always stateless. `json_response` applies to those only;
        // a session's call answers on an SSE stream, which is where its pushed requests go.
        let mut config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(true)
            .with_json_response(true)
            .with_sse_keep_alive(None)
            .with_allowed_origins(
                LOOPBACK_ORIGINS.iter().map(|o| (*o).to_owned()).chain(self.inner.http.allowed_origins.iter().cloned()),
            )
            .enforce_origin_validation()
            .with_max_request_body_bytes(self.inner.http.max_request_body);
        if !allowed_hosts.is_empty() {
            let mut hosts = vec!["localhost".to_owned(), "127.0.0.1".to_owned(), "::1".to_owned()];
            hosts.extend(allowed_hosts.iter().cloned());
            config = config.with_allowed_hosts(hosts);
        }
        let keep_alive = sessions::keep_alive(self.inner.sessions.keep_alive, self.engine().session_config());
        let manager = Arc::new(sessions::session_manager(keep_alive));
        let caps = Arc::new(sessions::SessionCaps::new(self.inner.sessions.clone(), manager.clone()));
        let server = self.clone();
        // A request rmcp surely serves statelessly (`Stateless`) goes to a service without
        // rmcp's session routing, which would decode and check the request's `_meta` once more
        // only to route it where this one serves it. Same server, same checks otherwise. Its
        // session manager is rmcp's that keeps none: a stateless `POST` never reaches one (nor
        // its event store: neither has any), and with it rmcp's request future, which every
        // request moves into a fresh allocation, is 1.6 KiB smaller (its session paths go).
        let stateless_config = config.clone().with_legacy_session_mode(false);
        let stateless = Arc::new(StreamableHttpService::new(
            move || Ok(server.for_connection()),
            Arc::new(NeverSessionManager::default()),
            stateless_config,
        ));
        let server = self.clone();
        let service =
            Arc::new(StreamableHttpService::new(move || Ok(server.for_connection()), manager, config.clone()));
        // What `wire_layer` does, called here around the service rather than layered on the
        // router, which would cost a boxed, cloned service and a boxed future per request.
        let gate = Arc::new(Gate::new(&config));
        // rmcp's service behind an `Arc`: axum clones a route's service for every request, and so
        // does each layer in front of it, and rmcp's service carries its whole configuration (the
        // allowed hosts and origins among it). This clones a pointer and calls `handle`, which is
        // what rmcp's own `Service::call` does after cloning itself. A bare service, not a method
        // router: axum would clone a router's endpoint for every method on every request.
        let handle = tower::service_fn(move |request: axum::extract::Request| {
            let (service, stateless, caps, gate) =
                (Arc::clone(&service), Arc::clone(&stateless), Arc::clone(&caps), Arc::clone(&gate));
            async move {
                // rmcp's `handle` future is large (a whole stateless round inline): boxed where it is
                // made, the futures around it stay small, and axum's moves and boxing of this
                // route's future copy a few hundred bytes rather than kilobytes per request.
                let serve = |request, Stateless(surely)| async move {
                    if surely {
                        Box::pin(stateless.handle(request)).await.into_response()
                    } else {
                        Box::pin(service.handle(request)).await.into_response()
                    }
                };
                // No async block of its own: it would hold the request once more.
                let capped = |request, surely: Stateless| {
                    sessions::cap_stateless(&caps, request, surely.0, move |request| serve(request, surely))
                };
                Ok::<_, std::convert::Infallible>(put_right_around(&gate, request, capped).await)
            }
        });
        axum::Router::new().nest_service("/mcp", handle)
    }

    /// The routes of the engine's form pages ([`Engine::form_pages`](crate::server::Engine::form_pages)),
    /// empty when it serves none: `mcp.http_router(&[]).merge(mcp.page_router())`. Kept apart from
    /// [`McpServer::http_router`] because the two take different authentication: a browser
    /// opening a page sends no bearer token, so a layer requiring one on `/mcp` must not cover
    /// the pages.
    #[cfg(feature = "pages")]
    #[cfg_attr(docsrs, doc(cfg(feature = "pages")))]
    pub fn page_router(&self) -> axum::Router {
        self.inner.elicitation.page_router()
    }
}
