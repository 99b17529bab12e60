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

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use axum::body::{Body, HttpBody as _};
use axum::http::{Request as HttpRequest, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use ::rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestMethod, CompleteRequestParams,
    CompleteResult, ElicitRequest, ElicitRequestParams, ElicitationSchema, ErrorCode, ErrorData, GetPromptRequestParams, GetPromptResponse, GetPromptResult, Implementation,
    InputRequest as RmcpInputRequest, InputRequiredResult as RmcpInputRequired, JsonObject, ListPromptsResult,
    ListResourceTemplatesRequestMethod, ListResourceTemplatesResult, ListResourcesRequestMethod, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, Prompt, PromptsCapability, ProtocolVersion, ReadResourceRequestMethod,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource, ResourceTemplate,
    ResourcesCapability, ServerCapabilities, ServerConfig, Tool, ToolsCapability,
};
use ::rmcp::model::{CustomNotification, CustomRequest, ServerNotification, ServerRequest};
use ::rmcp::service::{Peer, RequestContext, ServiceError};
use ::rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use ::rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use ::rmcp::{RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value};

use crate::schema::RequestedSchema;
use crate::server::{AskLimit, Engine, EngineError, Flow, FlowError, LiveFuture, LivePeer, LiveSession, Outcome, Request};
use crate::wire::{ElicitParams, InputRequest, InputRequiredResult, LegacyVersion, RESULT_INPUT_REQUIRED};
use uri_template::UriTemplate;

mod params;
mod stdio;
mod uri_template;

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;
type FlowHandler<R> = Arc<dyn Fn(Flow) -> BoxFuture<Result<R, FlowError>> + Send + Sync>;
/// A tool served without the engine: it sees the raw rmcp request and context.
type RawToolHandler =
    Arc<dyn Fn(CallToolRequestParams, RequestContext<RoleServer>) -> BoxFuture<Result<CallToolResponse, ErrorData>> + Send + Sync>;

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

enum ToolHandler {
    Flow(FlowHandler<CallToolResult>),
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
    engine: Engine,
    info: Implementation,
    instructions: Option<String>,
    tools: Vec<Registered<Tool>>,
    prompts: Vec<RegisteredPrompt>,
    resources: Vec<RegisteredResource>,
    templates: Vec<RegisteredTemplate>,
    completion: Option<CompletionHandler>,
    http: HttpLimits,
}

/// What [`McpServer::http_router`] lets in, set on the builder.
struct HttpLimits {
    /// Browser origins allowed besides loopback ones.
    allowed_origins: Vec<String>,
    /// Largest request body read, in bytes.
    max_request_body: usize,
}

/// Browser origins always allowed: pages served from this machine, on any port.
const LOOPBACK_ORIGINS: &[&str] = &[
    "http://localhost:*",
    "https://localhost:*",
    "http://127.0.0.1:*",
    "https://127.0.0.1:*",
    "http://[::1]:*",
    "https://[::1]:*",
];

/// The default bound on a request body.
pub const DEFAULT_MAX_REQUEST_BODY: usize = 4 * 1024 * 1024;

/// A resource template [`McpServerBuilder::resource_template`] cannot serve: not RFC 6570 level 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError {
    name: String,
    reason: String,
}

impl TemplateError {
    /// The name the template was registered under.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl std::fmt::Display for TemplateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "resource template `{}`: {}", self.name, self.reason)
    }
}

impl std::error::Error for TemplateError {}

/// A URI read through a resource template: the URI and the value of each template variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateMatch {
    /// The URI the client read.
    pub uri: String,
    /// Each variable of the template, by name, with its percent-decoded value.
    pub variables: BTreeMap<String, String>,
}

impl TemplateMatch {
    /// The value of the template variable `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.variables.get(name).map(String::as_str)
    }
}

/// The protocol revisions served: 2026-07-28 statelessly, and the two 2025-era revisions whose
/// clients open with `initialize` (anything older negotiates down to 2025-11-25's answer).
const SUPPORTED: &[ProtocolVersion] =
    &[ProtocolVersion::V_2025_06_18, ProtocolVersion::V_2025_11_25, ProtocolVersion::V_2026_07_28];

/// An rmcp server whose tools and prompts are engine handlers. Cheap to clone; clones share one
/// connection's cap on outstanding asks ([`McpServer::http_router`] and [`McpServer::serve_stdio`]
/// give every connection its own).
#[derive(Clone)]
pub struct McpServer {
    inner: Arc<Inner>,
    connection: AskLimit,
}

/// Builds an [`McpServer`].
pub struct McpServerBuilder {
    inner: Inner,
}

impl McpServerBuilder {
    /// Adds a tool whose handler runs under the engine.
    pub fn tool<F, Fut>(mut self, tool: Tool, handler: F) -> Self
    where
        F: Fn(Flow) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CallToolResult, FlowError>> + Send + 'static,
    {
        let handler: FlowHandler<CallToolResult> = Arc::new(move |flow| Box::pin(handler(flow)));
        self.inner.tools.push(Registered { spec: tool, handler: ToolHandler::Flow(handler) });
        self
    }

    /// Adds a tool that handles the raw rmcp request itself (no elicitation), for tools that need
    /// the request context, such as logging.
    pub fn raw_tool<F, Fut>(mut self, tool: Tool, handler: F) -> Self
    where
        F: Fn(CallToolRequestParams, RequestContext<RoleServer>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CallToolResponse, ErrorData>> + Send + 'static,
    {
        let handler: RawToolHandler = Arc::new(move |request, ctx| Box::pin(handler(request, ctx)));
        self.inner.tools.push(Registered { spec: tool, handler: ToolHandler::Raw(handler) });
        self
    }

    /// Adds a prompt whose handler runs under the engine.
    pub fn prompt<F, Fut>(mut self, prompt: Prompt, handler: F) -> Self
    where
        F: Fn(Flow) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<GetPromptResult, FlowError>> + Send + 'static,
    {
        let handler: FlowHandler<GetPromptResult> = Arc::new(move |flow| Box::pin(handler(flow)));
        self.inner.prompts.push(RegisteredPrompt { prompt, handler: PromptHandler::Flow(handler) });
        self
    }

    /// Adds a prompt that handles the raw rmcp request itself (no elicitation), for prompts that
    /// need the request context.
    pub fn raw_prompt<F, Fut>(mut self, prompt: Prompt, handler: F) -> Self
    where
        F: Fn(GetPromptRequestParams, RequestContext<RoleServer>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<GetPromptResponse, ErrorData>> + Send + 'static,
    {
        let handler: RawPromptHandler = Arc::new(move |request, ctx| Box::pin(handler(request, ctx)));
        self.inner.prompts.push(RegisteredPrompt { prompt, handler: PromptHandler::Raw(handler) });
        self
    }

    /// Adds a resource whose read runs under the engine: `resources/read` of exactly
    /// `resource.uri` runs `handler`, which may ask for input like a tool (the state is bound to
    /// the method `resources/read` and the URI).
    pub fn resource<F, Fut>(mut self, resource: Resource, handler: F) -> Self
    where
        F: Fn(Flow) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ReadResourceResult, FlowError>> + Send + 'static,
    {
        let handler: FlowHandler<ReadResourceResult> = Arc::new(move |flow| Box::pin(handler(flow)));
        self.inner.resources.push(RegisteredResource { resource, handler });
        self
    }

    /// Adds a resource template whose reads run under the engine: `resources/read` of a URI that
    /// expands `template.uri_template` (and is not a registered resource) runs `handler` with the
    /// variables' values. Templates are tried in the order they were added.
    ///
    /// Templates are RFC 6570 level 1: literal text and `{name}` expressions. A variable stands
    /// for a run of unreserved characters (`A-Z a-z 0-9 - . _ ~`) and `%XX` escapes, which is
    /// what expanding a value produces, so `test://items/{id}` matches `test://items/a%2Fb`
    /// (`id` = `a/b`) but not `test://items/a/b`.
    ///
    /// ```
    /// use elicit_runtime::rmcp::{McpServer, TemplateMatch};
    /// use elicit_runtime::server::{Engine, Flow, FlowError};
    /// use elicit_runtime::state::KeyRing;
    /// use rmcp::model::{ReadResourceResult, ResourceContents, ResourceTemplate};
    ///
    /// async fn item(matched: TemplateMatch, _flow: Flow) -> Result<ReadResourceResult, FlowError> {
    ///     let id = matched.get("id").unwrap_or_default();
    ///     Ok(ReadResourceResult::new(vec![ResourceContents::text(format!("item {id}"), matched.uri.clone())]))
    /// }
    ///
    /// let engine = Engine::builder("shop", KeyRing::generate()).build();
    /// let server = McpServer::builder("shop", "1.0.0", engine)
    ///     .resource_template(ResourceTemplate::new("shop://items/{id}", "items").with_mime_type("text/plain"), item)?
    ///     .build();
    /// # Ok::<(), elicit_runtime::rmcp::TemplateError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`TemplateError`] if the template is not level 1 (operators such as `{+path}`, lists such
    /// as `{a,b}`, modifiers such as `{a*}`, a variable named twice, or unbalanced braces): the
    /// matcher would not know what such a template matches.
    pub fn resource_template<F, Fut>(mut self, template: ResourceTemplate, handler: F) -> Result<Self, TemplateError>
    where
        F: Fn(TemplateMatch, Flow) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ReadResourceResult, FlowError>> + Send + 'static,
    {
        let pattern = UriTemplate::parse(&template.uri_template)
            .map_err(|reason| TemplateError { name: template.name.clone(), reason })?;
        let handler: TemplateHandler = Arc::new(move |matched, flow| Box::pin(handler(matched, flow)));
        self.inner.templates.push(RegisteredTemplate { template, pattern, handler });
        Ok(self)
    }

    /// Answers `completion/complete` with `handler` and advertises the `completions` capability.
    /// Without it the method is not found.
    pub fn completion<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(CompleteRequestParams, RequestContext<RoleServer>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CompleteResult, ErrorData>> + Send + 'static,
    {
        self.inner.completion = Some(Arc::new(move |request, ctx| Box::pin(handler(request, ctx))));
        self
    }

    /// Browser origins allowed to reach `/mcp` over HTTP besides loopback ones (`http` and
    /// `https` on `localhost`, `127.0.0.1` and `[::1]`, any port), each `scheme://host[:port]`
    /// (`:*` for any port; without a port, the scheme's default). A request carrying any other
    /// `Origin` is refused with 403 before it reaches a handler, as the transport spec
    /// requires against DNS rebinding; a request without `Origin` (not from a browser) passes.
    ///
    /// ```
    /// # use elicit_runtime::rmcp::McpServer;
    /// # use elicit_runtime::server::Engine;
    /// # use elicit_runtime::state::KeyRing;
    /// let engine = Engine::builder("shop", KeyRing::generate()).build();
    /// let server = McpServer::builder("shop", "1.0.0", engine).allowed_origins(["https://app.example.com"]).build();
    /// ```
    pub fn allowed_origins(mut self, origins: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.inner.http.allowed_origins.extend(origins.into_iter().map(Into::into));
        self
    }

    /// The largest request body `/mcp` reads, in bytes (default [`DEFAULT_MAX_REQUEST_BODY`]);
    /// a larger one is refused with 413 before any of it is parsed.
    pub fn max_request_body(mut self, bytes: usize) -> Self {
        self.inner.http.max_request_body = bytes;
        self
    }

    /// Instructions returned by `server/discover`.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.inner.instructions = Some(instructions.into());
        self
    }

    /// The server.
    pub fn build(self) -> McpServer {
        let connection = self.inner.engine.ask_limit();
        McpServer { inner: Arc::new(self.inner), connection }
    }
}

impl McpServer {
    /// Starts a server named `name` (reported as `serverInfo`) running handlers on `engine`.
    pub fn builder(name: impl Into<String>, version: impl Into<String>, engine: Engine) -> McpServerBuilder {
        McpServerBuilder {
            inner: Inner {
                engine,
                info: Implementation::new(name, version),
                instructions: None,
                tools: Vec::new(),
                prompts: Vec::new(),
                resources: Vec::new(),
                templates: Vec::new(),
                completion: None,
                http: HttpLimits { allowed_origins: Vec::new(), max_request_body: DEFAULT_MAX_REQUEST_BODY },
            },
        }
    }

    /// The engine the handlers run on (for pages that record URL-mode completion).
    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    /// This server for a new connection: same handlers, its own cap on outstanding asks.
    fn for_connection(&self) -> McpServer {
        McpServer { inner: self.inner.clone(), connection: self.inner.engine.ask_limit() }
    }

    /// Whether the `resources` capability is advertised: any resource or template registered.
    fn has_resources(&self) -> bool {
        !self.inner.resources.is_empty() || !self.inner.templates.is_empty()
    }

    /// An axum router serving this server at `/mcp` over Streamable HTTP: 2026-07-28 requests
    /// statelessly (JSON answers), and 2025-era clients in sessions (`Mcp-Session-Id`, kept in
    /// this process: several instances need affinity on that header; `DELETE` ends one).
    ///
    /// Only loopback `Host` headers are accepted unless `allowed_hosts` names others; only
    /// loopback `Origin`s unless [`McpServerBuilder::allowed_origins`] names others (a request
    /// without `Origin` passes). Bodies larger than [`McpServerBuilder::max_request_body`] are
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
        let server = self.clone();
        let service = StreamableHttpService::new(
            move || Ok(server.for_connection()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        axum::Router::new()
            .nest_service("/mcp", service)
            .layer(middleware::from_fn(strip_legacy_fields))
            .layer(middleware::from_fn_with_state(self.inner.http.max_request_body, mark_malformed_params))
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
        // rmcp is served on one end of a pipe; `stdio::pump` carries the lines between the
        // stream and the other end, with the fixes the HTTP layers make.
        let (rmcp_end, pump_end) = stdio::pipe();
        let server_info = serde_json::to_value(&self.inner.info).unwrap_or(Value::Null);
        let served = async move {
            let running = self.for_connection().serve(rmcp_end).await.map_err(std::io::Error::other)?;
            running.waiting().await.map_err(std::io::Error::other)?;
            Ok::<_, std::io::Error>(())
        };
        let pumped = stdio::pump(read, write, tokio::io::split(pump_end), server_info);
        let (served, pumped) = tokio::join!(served, pumped);
        served.and(pumped)
    }

    /// Runs one round of `handler` for `request`, with the `_meta` rmcp moved into `ctx`.
    async fn run<R>(
        &self,
        request: Request<'_>,
        ctx: &RequestContext<RoleServer>,
        handler: impl FnOnce(Flow) -> BoxFuture<Result<R, FlowError>>,
    ) -> Result<Outcome<R>, ErrorData> {
        if let Some(session) = self.live_session(ctx) {
            let live = self.inner.engine.run_live(&request, &session, handler);
            // `notifications/cancelled`, the end of the session (HTTP `DELETE`, stdio EOF) and a
            // dropped connection cancel the call's token: the task is dropped with its records.
            return tokio::select! {
                result = live => result.map(Outcome::Complete).map_err(engine_error),
                () = ctx.ct.cancelled() => Err(ErrorData::new(ErrorCode(REQUEST_CANCELLED), "the request was cancelled", None)),
            };
        }
        let meta: &Map<String, Value> = &ctx.meta.0.0;
        let request = request.meta(Some(meta));
        self.inner.engine.run(&request, handler).await.map_err(engine_error)
    }

    /// The 2025-era session this request belongs to, if any: a request without a 2026-07-28
    /// `_meta` protocol version, on a connection that negotiated a 2025-era revision with
    /// `initialize`. Capabilities are what the client declared there.
    fn live_session(&self, ctx: &RequestContext<RoleServer>) -> Option<LiveSession> {
        if ctx.meta.protocol_version().is_some() {
            return None;
        }
        let info = ctx.peer.peer_info()?;
        let version = LegacyVersion::parse(info.protocol_version.as_str())?;
        let declared = serde_json::to_value(&info.capabilities).ok();
        let capabilities = version.capabilities(declared.as_ref().and_then(Value::as_object));
        Some(LiveSession::new(version, capabilities, Arc::new(RmcpPeer(ctx.peer.clone())), self.connection.clone()))
    }
}

/// The code rmcp's peers use for a request cancelled before it finished.
const REQUEST_CANCELLED: i32 = -32800;

/// A 2025-era client, reached through rmcp. Sent from within the handler of the client's call,
/// so rmcp routes each request onto that call's stream.
struct RmcpPeer(Peer<RoleServer>);

impl LivePeer for RmcpPeer {
    fn request(&self, method: &'static str, params: Option<Value>) -> LiveFuture<'_, Result<Value, String>> {
        // A custom request carries exactly the revision's params (no `mode` on 2025-06-18);
        // rmcp's typed elicitation always writes one.
        let request = ServerRequest::CustomRequest(CustomRequest::new(method, params));
        Box::pin(async move {
            match self.0.send_request(request).await {
                Ok(result) => serde_json::to_value(result).map_err(|e| e.to_string()),
                Err(ServiceError::McpError(error)) => {
                    Err(format!("the client answered with error {}: {}", error.code.0, crate::wire::clip(&error.message)))
                }
                // Transport detail is for the server's log; the handler's error reaches the client.
                Err(error) => {
                    tracing::warn!(target: "elicit_runtime", %error, method, "a request to a 2025-era client failed in transport");
                    Err("the connection to the client failed".to_owned())
                }
            }
        })
    }

    fn notify(&self, method: &'static str, params: Value) -> LiveFuture<'_, Result<(), String>> {
        let notification = ServerNotification::CustomNotification(CustomNotification::new(method, Some(params)));
        Box::pin(async move {
            self.0.send_notification(notification).await.map_err(|error| {
                tracing::warn!(target: "elicit_runtime", %error, method, "a notification to a 2025-era client failed in transport");
                "the connection to the client failed".to_owned()
            })
        })
    }
}

fn engine_error(error: EngineError) -> ErrorData {
    ErrorData::new(ErrorCode(error.code), error.message, error.data)
}

/// Converts our input-required result into rmcp's typed one.
fn input_required(result: &InputRequiredResult) -> Result<RmcpInputRequired, ErrorData> {
    let mut requests = BTreeMap::new();
    for (key, request) in &result.input_requests {
        let typed = typed_input_request(request).map_err(|error| {
            tracing::error!(target: "elicit_runtime", %error, key, "an input request cannot be encoded for rmcp");
            ErrorData::internal_error("an input request cannot be encoded", None)
        })?;
        requests.insert(key.clone(), typed);
    }
    let requests = if requests.is_empty() { None } else { Some(requests) };
    Ok(RmcpInputRequired::new(requests, result.request_state.clone()))
}

/// One input request as rmcp's type. rmcp's `InputRequest` is an untagged union: decoding into it
/// buffers the request and tries each variant in turn. The method is known here, so the request is
/// decoded straight into its variant, which is what the union would have picked; the form of a
/// derived type takes its schema from [`typed_schema`].
fn typed_input_request(request: &InputRequest) -> Result<RmcpInputRequest, serde_json::Error> {
    if let InputRequest::Elicit(ElicitParams::Form { message, requested_schema: Cow::Borrowed(schema) }) = request {
        return Ok(RmcpInputRequest::Elicitation(ElicitRequest::new(ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: message.clone(),
            requested_schema: typed_schema(schema)?,
        })));
    }
    let json = request.to_json();
    Ok(match request {
        InputRequest::Elicit(_) => RmcpInputRequest::Elicitation(serde_json::from_value(json)?),
        InputRequest::CreateMessage(_) => RmcpInputRequest::CreateMessage(serde_json::from_value(json)?),
        InputRequest::ListRoots => RmcpInputRequest::ListRoots(serde_json::from_value(json)?),
    })
}

/// rmcp's `ElicitationSchema` of a `'static` (derived) schema, decoded once per process. rmcp
/// decodes every property through an untagged union; for a form of a dozen fields that costs more
/// than the rest of the round. A `'static` schema keeps its address for the life of the process,
/// so the address is the key.
fn typed_schema(schema: &'static RequestedSchema) -> Result<ElicitationSchema, serde_json::Error> {
    // Schemas leaked at run time could be many: past this many, decode without keeping.
    const MAX_CACHED: usize = 1024;
    static CACHE: OnceLock<Mutex<HashMap<usize, ElicitationSchema>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Mutex::default);
    // Nothing panics while the lock is held; a poisoned map is still a valid cache.
    let lock = || cache.lock().unwrap_or_else(PoisonError::into_inner);
    let key = std::ptr::from_ref(schema).addr();
    if let Some(typed) = lock().get(&key) {
        return Ok(typed.clone());
    }
    let typed: ElicitationSchema = serde_json::from_value(schema.to_json())?;
    let mut cached = lock();
    if cached.len() < MAX_CACHED {
        cached.insert(key, typed.clone());
    }
    Ok(typed)
}

fn responses_value(responses: Option<BTreeMap<String, Value>>) -> Option<Value> {
    responses.map(|r| Value::Object(r.into_iter().collect()))
}

/// SEP-2164: an unknown URI is invalid params (not an empty `contents`), naming the URI.
fn resource_not_found(uri: &str) -> ErrorData {
    let data = (uri.len() <= uri_template::MAX_URI_LEN).then(|| serde_json::json!({ "uri": uri }));
    ErrorData::invalid_params("Resource not found", data)
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let inner = &self.inner;
        let mut capabilities = ServerCapabilities::default();
        if !inner.tools.is_empty() {
            capabilities.tools = Some(ToolsCapability::default());
        }
        if !inner.prompts.is_empty() {
            capabilities.prompts = Some(PromptsCapability::default());
        }
        if self.has_resources() {
            capabilities.resources = Some(ResourcesCapability::default());
        }
        if inner.completion.is_some() {
            capabilities.completions = Some(JsonObject::new());
        }
        let config = ServerConfig::new(capabilities).with_server_info(self.inner.info.clone());
        match &self.inner.instructions {
            Some(instructions) => config.with_instructions(instructions.clone()),
            None => config,
        }
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(SUPPORTED)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.inner.tools.iter().map(|t| t.spec.clone()).collect()))
    }

    /// rmcp checks a `tools/call`'s `Mcp-Param-*` headers against the input schema found here.
    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.inner.tools.iter().find(|t| t.spec.name == name).map(|t| t.spec.clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        refuse_marked(&ctx)?;
        let Some(tool) = self.inner.tools.iter().find(|t| t.spec.name == request.name) else {
            // Not -32601: on HTTP that code means "no such method" (404).
            return Err(ErrorData::invalid_params(format!("unknown tool `{}`", crate::wire::clip(&request.name)), None));
        };
        let handler = match &tool.handler {
            ToolHandler::Raw(handler) => return handler(request, ctx).await,
            ToolHandler::Flow(handler) => handler,
        };
        let arguments = request.arguments.map(Value::Object);
        let responses = responses_value(request.input_responses);
        let round = Request::new("tools/call", &request.name)
            .arguments(arguments.as_ref())
            .input_responses(responses.as_ref())
            .request_state(request.request_state.as_deref());
        match self.run(round, &ctx, |flow| handler(flow)).await? {
            Outcome::Complete(result) => Ok(CallToolResponse::Complete(result)),
            Outcome::InputRequired(result) => Ok(CallToolResponse::InputRequired(input_required(&result)?)),
        }
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(self.inner.prompts.iter().map(|p| p.prompt.clone()).collect()))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        refuse_marked(&ctx)?;
        let Some(prompt) = self.inner.prompts.iter().find(|p| p.prompt.name == request.name) else {
            return Err(ErrorData::invalid_params(format!("unknown prompt `{}`", crate::wire::clip(&request.name)), None));
        };
        let handler = match &prompt.handler {
            PromptHandler::Raw(handler) => return handler(request, ctx).await,
            PromptHandler::Flow(handler) => handler,
        };
        let arguments = request.arguments.map(Value::Object);
        let responses = responses_value(request.input_responses);
        let round = Request::new("prompts/get", &request.name)
            .arguments(arguments.as_ref())
            .input_responses(responses.as_ref())
            .request_state(request.request_state.as_deref());
        match self.run(round, &ctx, |flow| handler(flow)).await? {
            Outcome::Complete(result) => Ok(GetPromptResponse::Complete(result)),
            Outcome::InputRequired(result) => Ok(GetPromptResponse::InputRequired(input_required(&result)?)),
        }
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        if !self.has_resources() {
            return Err(ErrorData::method_not_found::<ListResourcesRequestMethod>());
        }
        Ok(ListResourcesResult::with_all_items(self.inner.resources.iter().map(|r| r.resource.clone()).collect()))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        if !self.has_resources() {
            return Err(ErrorData::method_not_found::<ListResourceTemplatesRequestMethod>());
        }
        Ok(ListResourceTemplatesResult::with_all_items(
            self.inner.templates.iter().map(|t| t.template.clone()).collect(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        refuse_marked(&ctx)?;
        if !self.has_resources() {
            return Err(ErrorData::method_not_found::<ReadResourceRequestMethod>());
        }
        let uri = request.uri.as_str();
        let responses = responses_value(request.input_responses);
        let round = Request::new("resources/read", uri)
            .input_responses(responses.as_ref())
            .request_state(request.request_state.as_deref());
        // A registered resource wins over a template that also matches its URI.
        let outcome = if let Some(resource) = self.inner.resources.iter().find(|r| r.resource.uri == uri) {
            self.run(round, &ctx, |flow| (resource.handler)(flow)).await?
        } else if let Some((template, variables)) =
            self.inner.templates.iter().find_map(|t| t.pattern.match_uri(uri).map(|variables| (t, variables)))
        {
            let matched = TemplateMatch { uri: uri.to_owned(), variables };
            self.run(round, &ctx, |flow| (template.handler)(matched, flow)).await?
        } else {
            return Err(resource_not_found(uri));
        };
        match outcome {
            Outcome::Complete(result) => Ok(ReadResourceResponse::Complete(result)),
            Outcome::InputRequired(result) => Ok(ReadResourceResponse::InputRequired(input_required(&result)?)),
        }
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        match &self.inner.completion {
            Some(handler) => handler(request, ctx).await,
            None => Err(ErrorData::method_not_found::<CompleteRequestMethod>()),
        }
    }
}

/// Why a Multi Round-Trip request's parameters are mistyped, put in the HTTP request's extensions
/// by [`mark_malformed_params`] for the handler to answer.
#[derive(Debug, Clone, Copy)]
struct MalformedParams(&'static str);

/// rmcp decodes request parameters into typed structs, so a wrongly typed `inputResponses`,
/// `requestState` or `arguments` never reaches the engine: rmcp refuses the body as undecodable.
/// The protocol calls that invalid params (`-32602`, HTTP 200). This layer reads the body (at most
/// `max_body` bytes, 413 beyond, before anything parses it); when its parameters are mistyped it
/// drops the mistyped members and marks the request, so rmcp still runs every check of its own
/// (`Host`, `Origin`, `Accept`, `Content-Type`, the protocol headers) in its own order and only
/// then hands the request to the handler, which answers `-32602` without running anything
/// ([`refuse_marked`]). `inputResponses: null` is refused too: the member is optional, not nullable.
async fn mark_malformed_params(
    axum::extract::State(max_body): axum::extract::State<usize>,
    request: HttpRequest<Body>,
    next: Next,
) -> Response {
    let too_large = || (axum::http::StatusCode::PAYLOAD_TOO_LARGE, "request body too large").into_response();
    let (mut parts, body) = request.into_parts();
    let announced = parts.headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if announced.is_some_and(|n| n > max_body as u64) {
        return too_large();
    }
    let Ok(bytes) = axum::body::to_bytes(body, max_body).await else {
        return too_large();
    };
    let body = match params::malformed_params(&bytes) {
        Some((reason, repaired)) => {
            parts.extensions.insert(MalformedParams(reason));
            parts.headers.remove(header::CONTENT_LENGTH);
            Body::from(repaired)
        }
        None => Body::from(bytes),
    };
    next.run(HttpRequest::from_parts(parts, body)).await
}

/// The `-32602` for a request [`mark_malformed_params`] marked.
fn refuse_marked(ctx: &RequestContext<RoleServer>) -> Result<(), ErrorData> {
    let marked = ctx.extensions.get::<axum::http::request::Parts>().and_then(|parts| parts.extensions.get::<MalformedParams>());
    match marked {
        Some(MalformedParams(reason)) => Err(ErrorData::invalid_params(*reason, None)),
        None => Ok(()),
    }
}

/// Largest response body the rewrite below will buffer.
const MAX_REWRITE_BODY: usize = 4 * 1024 * 1024;

/// rmcp serialises URL-mode elicitations with `elicitationId`, a member that revision 2026-07-28
/// removed. This layer drops it from JSON `input_required` responses, so what goes on the wire is
/// exactly the revision's shape.
async fn strip_legacy_fields(request: HttpRequest<Body>, next: Next) -> Response {
    let response = next.run(request).await;
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !is_json {
        return response;
    }
    // Only bodies of a known, bounded length are buffered; anything else passes untouched. The
    // length is usually not a header yet (hyper adds `content-length` from the body's size hint
    // when it writes the response), so the hint counts as well.
    let length = response
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .or_else(|| response.body().size_hint().exact());
    if length.is_none_or(|n| n > MAX_REWRITE_BODY as u64) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_REWRITE_BODY).await {
        Ok(bytes) => bytes,
        // The body announced its length and then failed to deliver it: nothing to salvage.
        Err(_) => {
            parts.status = axum::http::StatusCode::BAD_GATEWAY;
            parts.headers.remove(header::CONTENT_LENGTH);
            return Response::from_parts(parts, Body::empty());
        }
    };
    let rewritten = rewrite_input_required(&bytes);
    let body = match rewritten {
        Some(json) => {
            parts.headers.remove(header::CONTENT_LENGTH);
            Body::from(json)
        }
        None => Body::from(bytes),
    };
    Response::from_parts(parts, body)
}

fn rewrite_input_required(bytes: &[u8]) -> Option<Vec<u8>> {
    // Cheap pre-check: most responses are not input-required results.
    let needle = b"elicitationId";
    if !bytes.windows(needle.len()).any(|w| w == needle) {
        return None;
    }
    let mut message: Value = serde_json::from_slice(bytes).ok()?;
    let result = message.get_mut("result")?;
    if result.get("resultType").and_then(Value::as_str) != Some(RESULT_INPUT_REQUIRED) {
        return None;
    }
    for request in result.get_mut("inputRequests")?.as_object_mut()?.values_mut() {
        if let Some(params) = request.get_mut("params").and_then(Value::as_object_mut) {
            params.remove("elicitationId");
        }
    }
    serde_json::to_vec(&message).ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failing test should stop loudly")]
mod tests {
    use std::borrow::Cow;

    use serde_json::json;

    use super::*;
    use crate::schema::{
        BooleanSchema, EnumOption, MultiSelectSchema, NumberSchema, PrimitiveSchema, Property, RequestedSchema,
        SingleSelectSchema, StringFormat, StringSchema,
    };
    use crate::wire::ElicitParams;

    /// Decoding straight into the variant gives what rmcp's untagged union gives, for every kind
    /// of input request and every kind of property.
    #[test]
    fn typed_input_requests_match_the_untagged_decoding() {
        let option = |value: &'static str, title: Option<&'static str>| EnumOption { value: value.into(), title: title.map(Into::into) };
        let schema = RequestedSchema::new(vec![
            Property::required(
                "s",
                PrimitiveSchema::String(StringSchema { min_length: Some(1), format: Some(StringFormat::Date), ..Default::default() }),
            ),
            Property::optional("n", PrimitiveSchema::Number(NumberSchema { integer: true, maximum: Some(9.into()), ..Default::default() })),
            Property::optional("b", PrimitiveSchema::Boolean(BooleanSchema { default: Some(true), ..Default::default() })),
            Property::required(
                "e",
                PrimitiveSchema::SingleSelect(SingleSelectSchema { options: vec![option("a", None), option("b", None)], ..Default::default() }),
            ),
            Property::required(
                "t",
                PrimitiveSchema::SingleSelect(SingleSelectSchema {
                    options: vec![option("a", Some("A"))],
                    titled: true,
                    ..Default::default()
                }),
            ),
            Property::optional(
                "m",
                PrimitiveSchema::MultiSelect(MultiSelectSchema {
                    options: vec![option("x", Some("X")), option("y", Some("Y"))],
                    titled: true,
                    max_items: Some(1),
                    ..Default::default()
                }),
            ),
        ]);
        // A `'static` schema, as a derived type's: the cached path, twice (decoded, then kept).
        static STATIC_SCHEMA: OnceLock<RequestedSchema> = OnceLock::new();
        let static_schema = STATIC_SCHEMA.get_or_init(|| schema.clone());
        let requests = [
            InputRequest::Elicit(ElicitParams::Form { message: "Fill in".into(), requested_schema: Cow::Owned(schema) }),
            InputRequest::Elicit(ElicitParams::Form { message: "Kept".into(), requested_schema: Cow::Borrowed(static_schema) }),
            InputRequest::Elicit(ElicitParams::Form { message: "Kept".into(), requested_schema: Cow::Borrowed(static_schema) }),
            InputRequest::Elicit(ElicitParams::Url { message: "Pay".into(), url: "https://pay.example/1".into() }),
            InputRequest::CreateMessage(json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Hi"}}], "maxTokens": 5})),
            InputRequest::ListRoots,
        ];
        for request in &requests {
            let untagged: RmcpInputRequest = serde_json::from_value(request.to_json()).unwrap();
            assert_eq!(typed_input_request(request).unwrap(), untagged, "{request:?}");
        }
    }
}
