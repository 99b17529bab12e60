//! The rmcp `ServerHandler` of an [`McpServer`]: each request run on the engine (statelessly, or
//! live in a 2025-era session), and the engine's outcomes converted to rmcp's results.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, OnceLock, PoisonError};

use ::rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestMethod, CompleteRequestParams, CompleteResult,
    ElicitRequest, ElicitRequestParams, ElicitationSchema, ErrorCode, ErrorData, GetPromptRequestParams,
    GetPromptResponse, InputRequest as RmcpInputRequest, InputRequiredResult as RmcpInputRequired, JsonObject,
    ListPromptsResult, ListResourceTemplatesRequestMethod, ListResourceTemplatesResult, ListResourcesRequestMethod,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, PromptsCapability, ProtocolVersion,
    ReadResourceRequestMethod, ReadResourceRequestParams, ReadResourceResponse, ResourcesCapability,
    ServerCapabilities, ServerConfig, Tool, ToolsCapability,
};
use ::rmcp::model::{
    CancelledNotification, CancelledNotificationParam, CustomNotification, CustomRequest, RequestId,
    ServerNotification, ServerRequest,
};
use ::rmcp::service::{Peer, PeerRequestOptions, RequestContext, ServiceError};
use ::rmcp::{RoleServer, ServerHandler};
use serde_json::Value;

use crate::schema::RequestedSchema;
use crate::server::{EngineError, Flow, FlowError, LiveFuture, LivePeer, Outcome, Request};
use crate::wire::{self, ElicitParams, InputRequest, InputRequiredResult};

use super::http::refuse_marked;
use super::own::responses_value;
use super::uri_template;
use super::{BoxFuture, McpServer, PromptHandler, SUPPORTED_PROTOCOL_VERSIONS, TemplateMatch, ToolHandler};

impl McpServer {
    /// Runs one round of `handler` for `request`, with the `_meta` rmcp moved into `ctx`.
    async fn run<R>(
        &self,
        request: Request<'_>,
        ctx: &RequestContext<RoleServer>,
        handler: impl FnOnce(Flow) -> BoxFuture<Result<R, FlowError>>,
    ) -> Result<Outcome<R>, ErrorData> {
        self.connection.run(request, ctx, handler).await
    }
}

/// A 2025-era client, reached through rmcp. Sent from within the handler of the client's call,
/// so rmcp routes each request onto that call's stream.
pub(super) struct RmcpPeer(pub(super) Peer<RoleServer>);

impl LivePeer for RmcpPeer {
    fn request(&self, method: &'static str, params: Option<Value>) -> LiveFuture<'_, Result<Value, String>> {
        // A custom request carries exactly the revision's params (no `mode` on 2025-06-18);
        // rmcp's typed elicitation always writes one.
        let request = ServerRequest::CustomRequest(CustomRequest::new(method, params));
        Box::pin(async move {
            let sent = self.0.send_cancellable_request(request, PeerRequestOptions::no_options()).await;
            let answered = match sent {
                Ok(handle) => {
                    // Dropped before the client answers (the ask timed out, the call was
                    // cancelled or dropped): the client is told to stop asking its user.
                    let guard = CancelOnDrop { peer: Some(handle.peer.clone()), id: handle.id.clone() };
                    let answered = handle.await_response().await;
                    guard.disarm();
                    answered
                }
                Err(error) => Err(error),
            };
            match answered {
                Ok(result) => serde_json::to_value(result).map_err(|e| e.to_string()),
                Err(ServiceError::McpError(error)) => Err(format!(
                    "the client answered with error {}: {}",
                    error.code.0,
                    crate::wire::clip(&error.message)
                )),
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

/// Sends `notifications/cancelled` for a pushed request when dropped armed: the server stopped
/// waiting for the answer.
struct CancelOnDrop {
    peer: Option<Peer<RoleServer>>,
    id: RequestId,
}

impl CancelOnDrop {
    fn disarm(mut self) {
        self.peer = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(peer) = self.peer.take() else { return };
        let params = CancelledNotificationParam::new(
            Some(self.id.clone()),
            Some("the server stopped waiting for this answer".to_owned()),
        );
        let notification = ServerNotification::CancelledNotification(CancelledNotification::new(params));
        // Dropping runs outside any task that could await: the notification goes on its own.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(error) = peer.send_notification(notification).await {
                    tracing::debug!(target: "elicit_runtime", %error, "notifications/cancelled could not be sent");
                }
            });
        }
    }
}

/// The JSON-RPC error the engine chose, as rmcp's error: `?` on an engine call in a handler of
/// your own returns it.
impl From<EngineError> for ErrorData {
    fn from(error: EngineError) -> ErrorData {
        ErrorData::new(ErrorCode(error.code), error.message, error.data)
    }
}

/// Converts our input-required result into rmcp's typed one.
pub(super) fn input_required(result: &InputRequiredResult) -> Result<RmcpInputRequired, ErrorData> {
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
        Cow::Borrowed(SUPPORTED_PROTOCOL_VERSIONS)
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
            return Err(ErrorData::invalid_params(
                format!("unknown tool `{}`", crate::wire::clip(&request.name)),
                None,
            ));
        };
        let handler = match &tool.handler {
            ToolHandler::Raw(handler) => return handler(request, ctx).await,
            ToolHandler::Flow(handler) => handler,
        };
        // The same piece a server of your own calls (`ToolCall::run`).
        self.connection.call_tool(request, &ctx, |flow| handler(flow)).await
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
            return Err(ErrorData::invalid_params(
                format!("unknown prompt `{}`", crate::wire::clip(&request.name)),
                None,
            ));
        };
        let handler = match &prompt.handler {
            PromptHandler::Raw(handler) => return handler(request, ctx).await,
            PromptHandler::Flow(handler) => handler,
        };
        // The same piece a server of your own calls (`PromptCall::run`).
        self.connection.get_prompt(request, &ctx, |flow| handler(flow)).await
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
        let round = Request::new(wire::RESOURCES_READ, uri)
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
        let option = |value: &'static str, title: Option<&'static str>| EnumOption {
            value: value.into(),
            title: title.map(Into::into),
        };
        let schema = RequestedSchema::new(vec![
            Property::required(
                "s",
                PrimitiveSchema::String(StringSchema {
                    min_length: Some(1),
                    format: Some(StringFormat::Date),
                    ..Default::default()
                }),
            ),
            Property::optional(
                "n",
                PrimitiveSchema::Number(NumberSchema { integer: true, maximum: Some(9.into()), ..Default::default() }),
            ),
            Property::optional(
                "b",
                PrimitiveSchema::Boolean(BooleanSchema { default: Some(true), ..Default::default() }),
            ),
            Property::required(
                "e",
                PrimitiveSchema::SingleSelect(SingleSelectSchema {
                    options: vec![option("a", None), option("b", None)],
                    ..Default::default()
                }),
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
            InputRequest::Elicit(ElicitParams::Form {
                message: "Fill in".into(),
                requested_schema: Cow::Owned(schema),
            }),
            InputRequest::Elicit(ElicitParams::Form {
                message: "Kept".into(),
                requested_schema: Cow::Borrowed(static_schema),
            }),
            InputRequest::Elicit(ElicitParams::Form {
                message: "Kept".into(),
                requested_schema: Cow::Borrowed(static_schema),
            }),
            InputRequest::Elicit(ElicitParams::Url { message: "Pay".into(), url: "https://pay.example/1".into() }),
            InputRequest::CreateMessage(
                json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Hi"}}], "maxTokens": 5}),
            ),
            InputRequest::ListRoots,
        ];
        for request in &requests {
            let untagged: RmcpInputRequest = serde_json::from_value(request.to_json()).unwrap();
            assert_eq!(typed_input_request(request).unwrap(), untagged, "{request:?}");
        }
    }
}
