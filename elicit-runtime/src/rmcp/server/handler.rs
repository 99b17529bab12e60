//! The rmcp `ServerHandler` of an [`McpServer`]: each request run on the engine (statelessly, or
//! once in a 2025-era session), and the engine's outcomes converted to rmcp's results.

use std::borrow::Cow;

use ::rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestMethod, CompleteRequestParams, CompleteResult, ErrorData,
    GetPromptRequestParams, GetPromptResponse, JsonObject, ListPromptsResult, ListResourceTemplatesRequestMethod,
    ListResourceTemplatesResult, ListResourcesRequestMethod, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, PromptsCapability, ProtocolVersion, ReadResourceRequestMethod, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, ResourcesCapability, ServerCapabilities, ServerConfig, Tool,
    ToolsCapability,
};
use ::rmcp::model::{CancelTaskParams, GetTaskParams, GetTaskResult, TASKS_EXTENSION_ID, UpdateTaskParams};
use ::rmcp::service::RequestContext;
use ::rmcp::{RoleServer, ServerHandler};

use crate::server::task::TaskSupport;
use crate::server::{Flow, FlowError, Outcome};

use super::super::SUPPORTED_PROTOCOL_VERSIONS;
use super::super::convert::input_required;
use super::super::round::{Round, RoundParams};
use super::super::tasks::{declares_tasks, tasks_required};
use super::presentation::{self, Policy, Presentation};
use super::uri_template;
use super::{BoxFuture, McpServer, PromptHandler, RegisteredResource, RegisteredTemplate, TemplateMatch, ToolHandler};

impl McpServer {
    /// Runs one round of `handler`, with the `_meta` rmcp moved into its context.
    async fn run<P: RoundParams, R>(
        &self,
        round: Round<'_, P>,
        handler: impl FnOnce(Flow) -> BoxFuture<Result<R, FlowError>>,
    ) -> Result<Outcome<R>, ErrorData> {
        self.connection.run_round(round, handler).await
    }
}

/// What a `resources/read` URI named: a registered resource, or a template that matched it.
enum NamedResource<'s> {
    Resource(&'s RegisteredResource),
    Template(&'s RegisteredTemplate, TemplateMatch),
}

impl NamedResource<'_> {
    /// Runs the resource's or the template's handler.
    fn handle(self, flow: Flow) -> BoxFuture<Result<ReadResourceResult, FlowError>> {
        match self {
            NamedResource::Resource(resource) => (resource.handler)(flow),
            NamedResource::Template(template, matched) => (template.handler)(matched, flow),
        }
    }
}

/// SEP-2164: an unknown URI is invalid params (not an empty `contents`), naming the URI.
fn resource_not_found(uri: &str) -> ErrorData {
    let data = (uri.len() <= uri_template::MAX_URI_LEN).then(|| serde_json::json!({ "uri": uri }));
    ErrorData::invalid_params("Resource not found", data)
}

impl McpServer {
    /// The server's capabilities, name and instructions, from what was registered.
    fn server_config(&self) -> ServerConfig {
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
        if self.has_tasks() {
            capabilities
                .extensions
                .get_or_insert_with(Default::default)
                .insert(TASKS_EXTENSION_ID.to_owned(), JsonObject::new());
        }
        #[cfg(feature = "apps")]
        self.advertise_app_forms(&mut capabilities);
        let config = ServerConfig::new(capabilities).with_server_info(self.inner.info.clone());
        match &self.inner.instructions {
            Some(instructions) => config.with_instructions(instructions.clone()),
            None => config,
        }
    }
}

impl ServerHandler for McpServer {
    /// Built once: rmcp asks for it on every stateless request.
    fn get_info(&self) -> ServerConfig {
        self.inner.config.get_or_init(|| self.server_config()).clone()
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(SUPPORTED_PROTOCOL_VERSIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let declared = presentation::declared(&ctx, self.inner.elicitation.engine());
        let shown = self.inner.tools.iter().filter(|t| match &t.policy {
            Some(policy) => policy.presentation != Presentation::Hide || policy.carried_by(declared),
            None => true,
        });
        Ok(ListToolsResult::with_all_items(shown.map(|t| t.spec.clone()).collect()))
    }

    /// rmcp checks a `tools/call`'s `Mcp-Param-*` headers against the input schema found here.
    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.inner.tools.iter().find(|t| t.spec.name == name).map(|t| t.spec.clone())
    }

    #[allow(clippy::manual_async_fn, reason = "an `async fn` would hold its arguments twice")]
    fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CallToolResponse, ErrorData>> + Send + '_ {
        // An async block rather than an `async fn`: an `async fn` keeps its arguments twice
        // (as taken and as bound), in every request's task for as long as the call waits.
        async move {
            let round = Round::new(request, &ctx)?;
            let Some(tool) = self.inner.tools.iter().find(|t| t.spec.name == round.target()) else {
                // Not -32601: on HTTP that code means "no such method" (404).
                return Err(ErrorData::invalid_params(
                    format!("unknown tool `{}`", crate::wire::clip(round.target())),
                    None,
                ));
            };
            let handler = match &tool.handler {
                ToolHandler::Raw(handler) => {
                    let request = round.into_inner();
                    return handler(request, ctx).await;
                }
                ToolHandler::Flow(handler) => handler,
            };
            if let Some(policy) = &tool.policy
                && let Presentation::Explain(text) = &policy.presentation
                && !policy.carried_by(presentation::declared(round.context(), self.inner.elicitation.engine()))
            {
                return Ok(CallToolResponse::Complete(Policy::explained(text)));
            }
            // Whether the client declares the Tasks extension is decoded from its `_meta` only for
            // a task-capable tool.
            let declares = || declares_tasks(round.context());
            match tool.task {
                TaskSupport::Forbidden => {}
                TaskSupport::Optional if !declares() => {}
                TaskSupport::Required if !declares() => return Err(tasks_required()),
                support => {
                    return self.connection.call_tool_task_round(round, support, |flow| handler(flow)).await;
                }
            }
            // A call in a 2025-era session runs once and may wait on a person for minutes: it
            // waits without the request's context (its HTTP head, its `_meta`), read by now.
            match self.connection.in_session(round) {
                Ok((call, round)) => {
                    drop(ctx);
                    self.connection.call_tool_in_session(call, round, |flow| handler(flow)).await
                }
                // The same piece a server of your own calls (`ToolCall::run`).
                Err(round) => self.connection.call_tool_round(round, |flow| handler(flow)).await,
            }
        }
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(self.inner.prompts.iter().map(|p| p.prompt.clone()).collect()))
    }

    #[allow(clippy::manual_async_fn, reason = "an `async fn` would hold its arguments twice")]
    fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<GetPromptResponse, ErrorData>> + Send + '_ {
        // An async block rather than an `async fn`: an `async fn` keeps its arguments twice
        // (as taken and as bound), in every request's task for as long as the call waits.
        async move {
            let round = Round::new(request, &ctx)?;
            let Some(prompt) = self.inner.prompts.iter().find(|p| p.prompt.name == round.target()) else {
                return Err(ErrorData::invalid_params(
                    format!("unknown prompt `{}`", crate::wire::clip(round.target())),
                    None,
                ));
            };
            let handler = match &prompt.handler {
                PromptHandler::Raw(handler) => {
                    let request = round.into_inner();
                    return handler(request, ctx).await;
                }
                PromptHandler::Flow(handler) => handler,
            };
            // As a tool's: a call in a 2025-era session waits without the request's context.
            match self.connection.in_session(round) {
                Ok((call, round)) => {
                    drop(ctx);
                    self.connection.get_prompt_in_session(call, round, |flow| handler(flow)).await
                }
                // The same piece a server of your own calls (`PromptCall::run`).
                Err(round) => self.connection.get_prompt_round(round, |flow| handler(flow)).await,
            }
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

    #[allow(clippy::manual_async_fn, reason = "an `async fn` would hold its arguments twice")]
    fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ReadResourceResponse, ErrorData>> + Send + '_ {
        // An async block rather than an `async fn`: an `async fn` keeps its arguments twice
        // (as taken and as bound), in every request's task for as long as the call waits.
        async move {
            let round = Round::new(request, &ctx)?;
            if !self.has_resources() {
                return Err(ErrorData::method_not_found::<ReadResourceRequestMethod>());
            }
            let uri = round.target();
            // A registered resource wins over a template that also matches its URI.
            let named = if let Some(resource) = self.inner.resources.iter().find(|r| r.resource.uri == uri) {
                NamedResource::Resource(resource)
            } else if let Some((template, variables)) =
                self.inner.templates.iter().find_map(|t| t.pattern.match_uri(uri).map(|variables| (t, variables)))
            {
                NamedResource::Template(template, TemplateMatch { uri: uri.to_owned(), variables })
            } else {
                return Err(resource_not_found(uri));
            };
            let handler = |flow| named.handle(flow);
            // As a tool's: a call in a 2025-era session waits without the request's context.
            let outcome = match self.connection.in_session(round) {
                Ok((call, round)) => {
                    drop(ctx);
                    self.connection.run_session_round(call, round, handler).await?
                }
                Err(round) => self.run(round, handler).await?,
            };
            match outcome {
                Outcome::Complete(result) => Ok(ReadResourceResponse::Complete(result)),
                Outcome::InputRequired(result) => Ok(ReadResourceResponse::InputRequired(input_required(&result)?)),
            }
        }
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.connection.get_task(request, &ctx).await
    }

    async fn update_task(&self, request: UpdateTaskParams, ctx: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        self.connection.update_task(request, &ctx).await
    }

    async fn cancel_task(&self, request: CancelTaskParams, ctx: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        self.connection.cancel_task(request, &ctx).await
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
