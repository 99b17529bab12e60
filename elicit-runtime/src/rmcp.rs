//! Serving engine handlers from an [rmcp](https://docs.rs/rmcp) server (feature `rmcp`).
//!
//! [`McpServer`] is an rmcp `ServerHandler` for protocol revision 2026-07-28 only: register tools
//! and prompts whose handlers take a [`Flow`], and the adapter does the Multi Round-Trip plumbing —
//! reading `_meta`, `inputResponses` and `requestState` off each request, running the
//! [`Engine`], and answering with the complete result, an `InputRequiredResult`, or the JSON-RPC
//! error the engine chose. Serve it over stateless Streamable HTTP with [`McpServer::http_router`]
//! or over stdio with [`McpServer::serve_stdio`].

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use axum::body::{Body, HttpBody as _};
use axum::http::{Request as HttpRequest, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use ::rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorCode, ErrorData, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, Implementation, InputRequest as RmcpInputRequest,
    InputRequiredResult as RmcpInputRequired, ListPromptsResult, ListToolsResult, PaginatedRequestParams, Prompt,
    ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
};
use ::rmcp::service::RequestContext;
use ::rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use ::rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use ::rmcp::{RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value};

use crate::server::{Engine, EngineError, Flow, FlowError, Outcome, Request};
use crate::wire::{InputRequiredResult, RESULT_INPUT_REQUIRED};

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;
type FlowHandler<R> = Arc<dyn Fn(Flow) -> BoxFuture<Result<R, FlowError>> + Send + Sync>;
/// A tool served without the engine: it sees the raw rmcp request and context.
type RawToolHandler =
    Arc<dyn Fn(CallToolRequestParams, RequestContext<RoleServer>) -> BoxFuture<Result<CallToolResponse, ErrorData>> + Send + Sync>;

enum ToolHandler {
    Flow(FlowHandler<CallToolResult>),
    Raw(RawToolHandler),
}

struct Registered<H> {
    spec: H,
    handler: ToolHandler,
}

struct RegisteredPrompt {
    prompt: Prompt,
    handler: FlowHandler<GetPromptResult>,
}

struct Inner {
    engine: Engine,
    info: Implementation,
    instructions: Option<String>,
    tools: Vec<Registered<Tool>>,
    prompts: Vec<RegisteredPrompt>,
}

/// The protocol revisions served: this adapter implements only 2026-07-28.
const SUPPORTED: &[ProtocolVersion] = &[ProtocolVersion::V_2026_07_28];

/// An rmcp server whose tools and prompts are engine handlers. Cheap to clone.
#[derive(Clone)]
pub struct McpServer {
    inner: Arc<Inner>,
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
        self.inner.prompts.push(RegisteredPrompt { prompt, handler });
        self
    }

    /// Instructions returned by `server/discover`.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.inner.instructions = Some(instructions.into());
        self
    }

    /// The server.
    pub fn build(self) -> McpServer {
        McpServer { inner: Arc::new(self.inner) }
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
            },
        }
    }

    /// The engine the handlers run on (for pages that record URL-mode completion).
    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    /// An axum router serving this server at `/mcp` over stateless Streamable HTTP.
    ///
    /// Only loopback `Host` headers are accepted unless `allowed_hosts` names others.
    pub fn http_router(&self, allowed_hosts: &[String]) -> axum::Router {
        let mut config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_sse_keep_alive(None);
        if !allowed_hosts.is_empty() {
            let mut hosts = vec!["localhost".to_owned(), "127.0.0.1".to_owned(), "::1".to_owned()];
            hosts.extend(allowed_hosts.iter().cloned());
            config = config.with_allowed_hosts(hosts);
        }
        let server = self.clone();
        let service =
            StreamableHttpService::new(move || Ok(server.clone()), Arc::new(NeverSessionManager::default()), config);
        axum::Router::new()
            .nest_service("/mcp", service)
            .layer(middleware::from_fn(strip_legacy_fields))
            .layer(middleware::from_fn(refuse_malformed_params))
    }

    /// Serves this server over stdin/stdout until the client closes stdin.
    pub async fn serve_stdio(self) -> std::io::Result<()> {
        let running = self.serve(::rmcp::transport::stdio()).await.map_err(std::io::Error::other)?;
        running.waiting().await.map_err(std::io::Error::other)?;
        Ok(())
    }

    async fn run<R>(
        &self,
        method: &str,
        name: &str,
        arguments: Option<Value>,
        input_responses: Option<Value>,
        request_state: Option<&str>,
        ctx: &RequestContext<RoleServer>,
        handler: &FlowHandler<R>,
    ) -> Result<Outcome<R>, ErrorData> {
        let meta: &Map<String, Value> = &ctx.meta.0.0;
        let request = Request::new(method, name)
            .arguments(arguments.as_ref())
            .meta(Some(meta))
            .input_responses(input_responses.as_ref())
            .request_state(request_state);
        self.inner.engine.run(&request, |flow| handler(flow)).await.map_err(engine_error)
    }
}

fn engine_error(error: EngineError) -> ErrorData {
    ErrorData::new(ErrorCode(error.code), error.message, error.data)
}

/// Converts our input-required result into rmcp's typed one.
fn input_required(result: &InputRequiredResult) -> Result<RmcpInputRequired, ErrorData> {
    let mut requests = BTreeMap::new();
    for (key, request) in &result.input_requests {
        let typed: RmcpInputRequest = serde_json::from_value(request.to_json())
            .map_err(|e| ErrorData::internal_error(format!("input request `{key}` cannot be encoded: {e}"), None))?;
        requests.insert(key.clone(), typed);
    }
    let requests = if requests.is_empty() { None } else { Some(requests) };
    Ok(RmcpInputRequired::new(requests, result.request_state.clone()))
}

fn responses_value(responses: Option<BTreeMap<String, Value>>) -> Option<Value> {
    responses.map(|r| Value::Object(r.into_iter().collect()))
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = if self.inner.prompts.is_empty() {
            ServerCapabilities::builder().enable_tools().build()
        } else {
            ServerCapabilities::builder().enable_tools().enable_prompts().build()
        };
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

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
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
        match self.run("tools/call", &request.name, arguments, responses, request.request_state.as_deref(), &ctx, handler).await? {
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
        let Some(prompt) = self.inner.prompts.iter().find(|p| p.prompt.name == request.name) else {
            return Err(ErrorData::invalid_params(format!("unknown prompt `{}`", crate::wire::clip(&request.name)), None));
        };
        let arguments = request.arguments.map(Value::Object);
        let responses = responses_value(request.input_responses);
        match self
            .run("prompts/get", &request.name, arguments, responses, request.request_state.as_deref(), &ctx, &prompt.handler)
            .await?
        {
            Outcome::Complete(result) => Ok(GetPromptResponse::Complete(result)),
            Outcome::InputRequired(result) => Ok(GetPromptResponse::InputRequired(input_required(&result)?)),
        }
    }
}

/// Largest request body read by the parameter check; larger requests are refused.
const MAX_REQUEST_BODY: usize = 4 * 1024 * 1024;

/// The methods that carry Multi Round-Trip parameters.
const MRTR_METHODS: &[&str] = &["tools/call", "prompts/get", "resources/read"];

/// rmcp decodes request parameters into typed structs, so a wrongly typed `inputResponses`,
/// `requestState` or `arguments` never reaches the engine: rmcp answers "method not found" (404).
/// The protocol calls that invalid params, so this layer answers `-32602` (HTTP 200) itself before
/// rmcp sees the request. `inputResponses: null` is refused too: the member is optional, not nullable.
async fn refuse_malformed_params(request: HttpRequest<Body>, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_REQUEST_BODY).await {
        Ok(bytes) => bytes,
        Err(_) => {
            return (axum::http::StatusCode::PAYLOAD_TOO_LARGE, "request body too large").into_response();
        }
    };
    if let Some((id, message)) = malformed_params(&bytes) {
        let error = serde_json::json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": crate::wire::codes::INVALID_PARAMS, "message": message},
        });
        return axum::Json(error).into_response();
    }
    next.run(HttpRequest::from_parts(parts, Body::from(bytes))).await
}

/// The request id and the reason, when a Multi Round-Trip request's parameters are mistyped.
fn malformed_params(bytes: &[u8]) -> Option<(Value, &'static str)> {
    let message: Value = serde_json::from_slice(bytes).ok()?;
    let method = message.get("method")?.as_str()?;
    if !MRTR_METHODS.contains(&method) {
        return None;
    }
    let id = message.get("id")?.clone();
    let params = message.get("params")?.as_object()?;
    let reason = match (params.get("inputResponses"), params.get("requestState"), params.get("arguments")) {
        (Some(responses), _, _) if !responses.is_object() => "`inputResponses` must be an object keyed like the input requests",
        (_, Some(state), _) if !state.is_string() => "`requestState` must be the string the server sent",
        (_, _, Some(arguments)) if !arguments.is_object() => "`arguments` must be an object",
        _ => return None,
    };
    Some((id, reason))
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
