//! Building an [`McpServer`]: what it serves (tools, prompts, resources, templates, completion)
//! and what its HTTP endpoint lets in.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use futures_util::FutureExt as _;

use ::rmcp::RoleServer;
use ::rmcp::handler::server::tool::IntoCallToolResult;
use ::rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, ErrorData, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, Implementation, Prompt, ReadResourceResult, Resource, ResourceTemplate, Tool,
};
use ::rmcp::service::RequestContext;

use crate::server::{Engine, Flow, FlowError};

use crate::server::task::TaskSupport;

use super::super::extract::Elicitation;
use super::sessions::SessionLimits;
use super::uri_template::UriTemplate;
use super::{
    BoxFuture, DEFAULT_MAX_REQUEST_BODY, FlowHandler, HttpLimits, Inner, McpServer, McpServerBuilder, PromptHandler,
    RawPromptHandler, RawToolHandler, Registered, RegisteredPrompt, RegisteredResource, RegisteredTemplate,
    TemplateHandler, ToolHandler, ToolResponse,
};

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

/// One thing [`McpServerBuilder::build`] refuses.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildProblem {
    /// Two tools with this name.
    DuplicateTool(String),
    /// Two prompts with this name.
    DuplicatePrompt(String),
    /// Two resources with this URI.
    DuplicateResource(String),
    /// Two resource templates with this URI template.
    DuplicateTemplate(String),
    /// A resource template that cannot be served.
    Template(TemplateError),
    /// A presentation policy for a tool not registered (before it).
    UnknownTool(String),
}

impl std::fmt::Display for BuildProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BuildProblem::DuplicateTool(name) => write!(f, "tool `{name}` is registered more than once"),
            BuildProblem::DuplicatePrompt(name) => write!(f, "prompt `{name}` is registered more than once"),
            BuildProblem::DuplicateResource(uri) => write!(f, "resource `{uri}` is registered more than once"),
            BuildProblem::DuplicateTemplate(uri) => {
                write!(f, "resource template `{uri}` is registered more than once")
            }
            BuildProblem::Template(error) => error.fmt(f),
            BuildProblem::UnknownTool(name) => {
                write!(f, "a presentation policy names tool `{name}`, which is not registered before it")
            }
        }
    }
}

/// Why [`McpServerBuilder::build`] refused: every problem it found, in the order found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildError {
    problems: Vec<BuildProblem>,
}

impl BuildError {
    /// Every problem found.
    pub fn problems(&self) -> &[BuildProblem] {
        &self.problems
    }
}

impl std::fmt::Display for BuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the MCP server cannot be built: ")?;
        for (i, problem) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            problem.fmt(f)?;
        }
        Ok(())
    }
}

impl std::error::Error for BuildError {}

/// Each name of `names` seen before, once, as `problem(name)`.
fn duplicates<'a>(
    names: impl Iterator<Item = &'a str>,
    problem: fn(String) -> BuildProblem,
    problems: &mut Vec<BuildProblem>,
) {
    let mut seen = std::collections::HashSet::new();
    let mut reported = std::collections::HashSet::new();
    for name in names {
        if !seen.insert(name) && reported.insert(name) {
            problems.push(problem(name.to_owned()));
        }
    }
}

/// A URI read through a resource template: the URI and the value of each template variable.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
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

/// A tool handler's running future, boxed, its value made rmcp's response. A combinator rather
/// than `async move { running.await.map(..) }`: an async block keeps the future it captured
/// beside the one it awaits, so the box would be twice the handler's future, allocated for every
/// call and held for as long as a 2025-era call waits on its ask.
fn tool_response<T, Fut>(running: Fut) -> BoxFuture<Result<ToolResponse, FlowError>>
where
    T: IntoCallToolResult + Send + 'static,
    Fut: Future<Output = Result<T, FlowError>> + Send + 'static,
{
    Box::pin(running.map(|result| result.map(IntoCallToolResult::into_call_tool_result)))
}

impl McpServerBuilder {
    /// Adds a tool whose handler runs under the engine. The handler returns anything rmcp turns
    /// into a tool result (`String`, `CallToolResult`, `Json<T>`, ...); its own error becomes a
    /// result with `isError: true` (see [`Elicitation::call_tool`]).
    pub fn tool<T, F, Fut>(mut self, tool: Tool, handler: F) -> Self
    where
        T: IntoCallToolResult + Send + 'static,
        F: Fn(Flow) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<T, FlowError>> + Send + 'static,
    {
        let handler: FlowHandler<ToolResponse> = Arc::new(move |flow| tool_response(handler(flow)));
        self.inner.tools.push(Registered {
            spec: tool,
            handler: ToolHandler::Flow(handler),
            task: TaskSupport::Forbidden,
            policy: None,
        });
        self
    }

    /// Adds a tool whose handler runs under the engine and may run as a task of the Tasks
    /// extension (`io.modelcontextprotocol/tasks`, advertised once such a tool is registered).
    ///
    /// For a client that declares the extension the handler runs as an ordinary Multi
    /// Round-Trip call until it first waits on something other than an ask; the call then
    /// becomes a task and the same handler carries on in the background (see
    /// [`Engine::run_task`](crate::server::Engine::run_task)). For any other client it is
    /// [`McpServerBuilder::tool`] when `support` is [`TaskSupport::Optional`], and `-32021` when
    /// it is [`TaskSupport::Required`].
    pub fn task_tool<T, F, Fut>(mut self, tool: Tool, support: TaskSupport, handler: F) -> Self
    where
        T: IntoCallToolResult + Send + 'static,
        F: Fn(Flow) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<T, FlowError>> + Send + 'static,
    {
        self = self.tool(tool, handler);
        if let Some(registered) = self.inner.tools.last_mut() {
            registered.task = support;
        }
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
        self.inner.tools.push(Registered {
            spec: tool,
            handler: ToolHandler::Raw(handler),
            task: TaskSupport::Forbidden,
            policy: None,
        });
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
    ///     .resource_template(ResourceTemplate::new("shop://items/{id}", "items").with_mime_type("text/plain"), item)
    ///     .build()?;
    /// # Ok::<(), elicit_runtime::rmcp::BuildError>(())
    /// ```
    ///
    /// A template that is not level 1 (operators such as `{+path}`, lists such as `{a,b}`,
    /// modifiers such as `{a*}`, a variable named twice, or unbalanced braces) makes
    /// [`McpServerBuilder::build`] fail with a [`TemplateError`]: the matcher would not know what
    /// such a template matches.
    pub fn resource_template<F, Fut>(mut self, template: ResourceTemplate, handler: F) -> Self
    where
        F: Fn(TemplateMatch, Flow) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ReadResourceResult, FlowError>> + Send + 'static,
    {
        match UriTemplate::parse(&template.uri_template) {
            Ok(pattern) => {
                let handler: TemplateHandler = Arc::new(move |matched, flow| Box::pin(handler(matched, flow)));
                self.inner.templates.push(RegisteredTemplate { template, pattern, handler });
            }
            Err(reason) => {
                self.problems.push(BuildProblem::Template(TemplateError { name: template.name.clone(), reason }));
            }
        }
        self
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
    /// let server = McpServer::builder("shop", "1.0.0", engine).allowed_origins(["https://app.example.com"]).build().unwrap();
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

    /// Takes the authenticated principal from each request with `hook` (default:
    /// [`principal_of`](crate::rmcp::principal_of), a [`Principal`](crate::rmcp::Principal) your HTTP
    /// middleware put in the request's extensions). Every `requestState` is bound to it, so a
    /// state minted for one principal is refused (`-32602`) for another, and so is every URL-mode
    /// step: the store completes it only for the same principal (see
    /// [`UrlCompletions::complete`](crate::server::store::UrlCompletions::complete)).
    pub fn principal<F>(mut self, hook: F) -> Self
    where
        F: Fn(&RequestContext<RoleServer>) -> Option<String> + Send + Sync + 'static,
    {
        self.inner.elicitation = self.inner.elicitation.principal(hook);
        self
    }

    /// At most `sessions` 2025-era sessions open at once on [`McpServer::http_router`] (default
    /// [`DEFAULT_MAX_SESSIONS`](crate::rmcp::DEFAULT_MAX_SESSIONS)). An `initialize` past the cap is
    /// refused with HTTP 503 and a JSON-RPC error saying so; 2026-07-28 requests, which open no
    /// session, are not counted.
    pub fn max_sessions(mut self, sessions: usize) -> Self {
        self.inner.sessions.max_sessions = sessions;
        self
    }

    /// At most `sessions` 2025-era sessions open at once per client (default
    /// [`DEFAULT_MAX_SESSIONS_PER_CLIENT`](crate::rmcp::DEFAULT_MAX_SESSIONS_PER_CLIENT)). A client is
    /// its authenticated [`Principal`](crate::rmcp::Principal) when your middleware put one in the
    /// request, else its IP address when the router is served with
    /// `into_make_service_with_connect_info::<SocketAddr>()`, else every client counts as one.
    /// An `initialize` past the cap is refused with HTTP 429 and a JSON-RPC error saying so.
    pub fn max_sessions_per_client(mut self, sessions: usize) -> Self {
        self.inner.sessions.max_per_client = sessions;
        self
    }

    /// How long a 2025-era session may stay without any event before it is closed (default
    /// [`DEFAULT_SESSION_KEEP_ALIVE`](crate::rmcp::DEFAULT_SESSION_KEEP_ALIVE)). Never less than the
    /// longest wait of the engine's [`SessionConfig`](crate::server::session::SessionConfig) (an ask, a URL
    /// page) plus a few seconds: a session must outlive the asks parked in it, so a shorter
    /// setting is raised to that.
    pub fn session_keep_alive(mut self, keep_alive: std::time::Duration) -> Self {
        self.inner.sessions.keep_alive = keep_alive;
        self
    }

    /// Instructions returned by `server/discover`.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.inner.instructions = Some(instructions.into());
        self
    }

    /// The server.
    ///
    /// # Errors
    ///
    /// [`BuildError`] with every problem found at once: two tools, prompts, resources (same URI)
    /// or resource templates (same URI template) registered under one name, and every template
    /// [`McpServerBuilder::resource_template`] could not parse. A second registration would
    /// otherwise be shadowed by the first without a word.
    pub fn build(self) -> Result<McpServer, BuildError> {
        let mut problems = self.problems;
        let inner = self.inner;
        duplicates(inner.tools.iter().map(|t| t.spec.name.as_ref()), BuildProblem::DuplicateTool, &mut problems);
        duplicates(inner.prompts.iter().map(|p| p.prompt.name.as_str()), BuildProblem::DuplicatePrompt, &mut problems);
        duplicates(
            inner.resources.iter().map(|r| r.resource.uri.as_str()),
            BuildProblem::DuplicateResource,
            &mut problems,
        );
        duplicates(
            inner.templates.iter().map(|t| t.template.uri_template.as_str()),
            BuildProblem::DuplicateTemplate,
            &mut problems,
        );
        if !problems.is_empty() {
            return Err(BuildError { problems });
        }
        let connection = inner.elicitation.for_connection();
        Ok(McpServer { inner: Arc::new(inner), connection })
    }
}

impl McpServer {
    /// Starts a server named `name` (reported as `serverInfo`) running handlers on `engine`.
    pub fn builder(name: impl Into<String>, version: impl Into<String>, engine: Engine) -> McpServerBuilder {
        let builder = McpServerBuilder {
            inner: Inner {
                elicitation: Elicitation::new(engine),
                info: Implementation::new(name, version),
                instructions: None,
                tools: Vec::new(),
                prompts: Vec::new(),
                resources: Vec::new(),
                templates: Vec::new(),
                completion: None,
                http: HttpLimits { allowed_origins: Vec::new(), max_request_body: DEFAULT_MAX_REQUEST_BODY },
                sessions: SessionLimits::default(),
                config: std::sync::OnceLock::new(),
            },
            problems: Vec::new(),
        };
        // The engine's Apps (draft app-rendered forms) are this server's resources.
        #[cfg(feature = "apps")]
        let builder = builder.with_app_forms();
        builder
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The boxed future of a tool call is the handler's future and little more, not twice it.
    #[test]
    fn a_tool_call_boxes_the_handler_future_once() {
        async fn handler() -> Result<String, FlowError> {
            let held = [7u8; 4096];
            tokio::task::yield_now().await;
            Ok(format!("{}", held.iter().map(|b| u32::from(*b)).sum::<u32>()))
        }
        let running = handler();
        let handler_size = std::mem::size_of_val(&running);
        assert!(handler_size >= 4096, "the handler future holds its buffer across the await");
        let boxed = tool_response(running);
        let boxed_size = std::mem::size_of_val(&*boxed);
        assert!(boxed_size < handler_size + 64, "boxed {boxed_size} bytes for a handler future of {handler_size}");
    }
}
