//! The alternative a Rust author weighs against the engine: the same `ask_name` and `plain` tools
//! ([`crate::server::FLOW_TOOL`], [`crate::server::PLAIN_TOOL`])
//! written by hand on rmcp, the way its Multi Round-Trip support is meant to be used — a `#[tool]`
//! in a `#[tool_router]` reading the `RequestState` and `InputResponses` extractors, the state
//! sealed with rmcp's HMAC `RequestStateCodec`, bound to the tool by associated data and given a
//! lifetime.
//!
//! It does what a careful hand-written server must and no more: checks the elicitation capability
//! each round (`-32021` without it), opens the echoed state (a forged or expired one is `-32602`),
//! reads the answer, and asks again when it is missing or not a string. It does not encrypt the
//! state, bind it to a principal or the arguments, re-ask with the user's values, or validate
//! against the schema beyond the one field: the engine does all of that, which is the cost this
//! comparison measures.

use std::sync::Arc;
use std::time::Duration;

use rmcp::handler::server::tool::{InputResponses, RequestState};
use rmcp::model::{
    CallToolResponse, CallToolResult, ClientCapabilities, ClientResult, ContentBlock, ElicitRequest,
    ElicitRequestParams, ElicitationAction, ElicitationSchema, InputRequest, InputRequests, InputRequiredResult,
    ProtocolVersion, RequestStateCodec, SealOptions, ServerCapabilities, ServerConfig, ServerRequest,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, tool, tool_handler, tool_router};
use serde_json::json;

/// The input request key of the one form.
const KEY: &str = "name";
/// What the state is bound to: a state sealed for another tool does not open here.
const BINDING: &[u8] = b"tools/call:ask_name";
/// How long a sealed state stays valid (the engine's default lifetime is of the same order).
const STATE_TTL: Duration = Duration::from_secs(600);

/// The hand-written server: one codec shared by every request.
#[derive(Clone)]
pub struct ByHand {
    codec: Arc<RequestStateCodec>,
    tool_router: rmcp::handler::server::router::tool::ToolRouter<ByHand>,
}

impl ByHand {
    /// A server sealing with a fresh random 32-byte key.
    pub fn new() -> Result<ByHand, String> {
        let mut key = [0u8; 32];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut random| std::io::Read::read_exact(&mut random, &mut key))
            .map_err(|e| format!("no randomness for the state key: {e}"))?;
        let codec = RequestStateCodec::try_new(key.to_vec()).map_err(|e| e.to_string())?;
        Ok(ByHand { codec: Arc::new(codec), tool_router: Self::tool_router() })
    }

    /// The round-one answer: one form asking for a name, and a freshly sealed state.
    fn ask(&self) -> CallToolResponse {
        let mut requests = InputRequests::new();
        requests.insert(KEY.to_owned(), InputRequest::Elicitation(ElicitRequest::new(name_form())));
        let state = self.codec.seal_with(b"asked", &SealOptions::new().associated_data(BINDING).ttl(STATE_TTL));
        InputRequiredResult::new(Some(requests), Some(state)).into()
    }
}

/// The one form: what is your name?
fn name_form() -> ElicitRequestParams {
    let schema = json!({
        "type": "object",
        "properties": {"name": {"type": "string", "description": "Your name"}},
        "required": ["name"],
    });
    let requested_schema: ElicitationSchema = match serde_json::from_value(schema) {
        Ok(schema) => schema,
        Err(_) => unreachable!("the schema above is a valid ElicitationSchema"),
    };
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: "What is your name?".to_owned(),
        requested_schema,
    }
}

fn text(text: String) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(text)]).into()
}

#[tool_router]
impl ByHand {
    #[tool(name = "ask_name", description = "Asks for a name with one form, then greets it")]
    async fn ask_name(
        &self,
        RequestState(state): RequestState,
        InputResponses(responses): InputResponses,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let declared = context.client_capabilities().is_some_and(|caps| caps.elicitation.is_some());
        if !declared {
            let mut required = ClientCapabilities::default();
            required.elicitation = Some(Default::default());
            return Err(ErrorData::missing_required_client_capability(required));
        }
        let Some(state) = state else { return Ok(self.ask()) };
        if self.codec.open_with(&state, BINDING).is_err() {
            return Err(ErrorData::invalid_params("invalid requestState", None));
        }
        let Some(answer) = responses.as_ref().and_then(|responses| responses.get(KEY)) else {
            return Ok(self.ask());
        };
        Ok(match answer.get("action").and_then(|action| action.as_str()) {
            Some("accept") => match answer.pointer("/content/name").and_then(|name| name.as_str()) {
                Some(name) => text(format!("Hello, {name}!")),
                None => self.ask(),
            },
            Some("decline" | "cancel") => text("Hello, stranger!".to_owned()),
            _ => return Err(ErrorData::invalid_params("invalid inputResponses", None)),
        })
    }

    #[tool(name = "plain", description = "Answers at once")]
    async fn plain(&self) -> Result<CallToolResponse, ErrorData> {
        Ok(text("pong".to_owned()))
    }
}

// The router built once, not per call (the macro's default rebuilds it for every call).
#[tool_handler(router = self.tool_router)]
impl ServerHandler for ByHand {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(&[ProtocolVersion::V_2026_07_28])
    }
}

/// The hand-written server at `/mcp`, configured like the engine's adapter: stateless, JSON
/// replies, no keep-alive.
pub fn router() -> Result<axum::Router, String> {
    let server = ByHand::new()?;
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None);
    let service =
        StreamableHttpService::new(move || Ok(server.clone()), Arc::new(NeverSessionManager::default()), config);
    Ok(axum::Router::new().nest_service("/mcp", service))
}

/// The same `ask_name` written by hand on rmcp for 2025-era sessions, where the server *pushes*
/// the form: sent with the session's peer from inside the call (what rmcp's `create_elicitation`
/// does), which rmcp puts on the call's SSE stream, and the answer awaited there. What a Rust author weighs against the engine's 2025-era
/// flows (`bench-loadgen --mode legacy`, `bench-park`): the call holds its connection, its stream
/// and the suspended handler for as long as the user takes, as the engine's does.
#[derive(Clone)]
pub struct ByHandPushed {
    tool_router: rmcp::handler::server::router::tool::ToolRouter<ByHandPushed>,
}

#[tool_router]
impl ByHandPushed {
    #[tool(name = "ask_name", description = "Asks for a name with one form, then greets it")]
    async fn ask_name(&self, context: RequestContext<RoleServer>) -> Result<CallToolResponse, ErrorData> {
        let declared = context.client_capabilities().is_some_and(|caps| caps.elicitation.is_some());
        if !declared {
            return Err(ErrorData::invalid_request("the client did not declare elicitation", None));
        }
        // What rmcp's `create_elicitation` does (it sits behind rmcp's `elicitation` feature, which
        // the workspace does not enable): the request sent from inside the call, so rmcp puts it
        // on the call's stream, and its answer awaited.
        let request = ServerRequest::ElicitRequest(ElicitRequest::new(name_form()));
        let answer = match context.peer.send_request(request).await {
            Ok(ClientResult::ElicitResult(answer)) => answer,
            Ok(_) => return Err(ErrorData::invalid_params("the answer is not an elicitation result", None)),
            Err(error) => return Err(ErrorData::internal_error(format!("the form was not answered: {error}"), None)),
        };
        Ok(match answer.action {
            ElicitationAction::Accept => match answer.content.as_ref().and_then(|content| content.get("name")) {
                Some(serde_json::Value::String(name)) => text(format!("Hello, {name}!")),
                _ => return Err(ErrorData::invalid_params("the answer has no name", None)),
            },
            // Decline, cancel, and any action a later rmcp adds.
            _ => text("Hello, stranger!".to_owned()),
        })
    }

    #[tool(name = "plain", description = "Answers at once")]
    async fn plain(&self) -> Result<CallToolResponse, ErrorData> {
        Ok(text("pong".to_owned()))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for ByHandPushed {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(&[ProtocolVersion::V_2025_11_25])
    }
}

/// The pushing server at `/mcp`: 2025-era sessions in rmcp's `LocalSessionManager` with its
/// defaults, the call's messages on its SSE stream, no keep-alive pings.
pub fn pushed_router() -> axum::Router {
    let server = ByHandPushed { tool_router: ByHandPushed::tool_router() };
    let config = StreamableHttpServerConfig::default().with_legacy_session_mode(true).with_sse_keep_alive(None);
    let service =
        StreamableHttpService::new(move || Ok(server.clone()), Arc::new(LocalSessionManager::default()), config);
    axum::Router::new().nest_service("/mcp", service)
}

#[cfg(test)]
mod tests {
    use crate::e2e::Client;
    use crate::legacy;
    use crate::server::FLOW_TOOL;

    /// The comparison is only fair if the hand-written server really runs the flow: the load
    /// generator's checked flow completes, and a forged state is refused.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn serves_the_checked_flow_and_refuses_a_forged_state() {
        let Ok(router) = super::router() else { unreachable!("the by-hand server starts") };
        let Ok(listener) = tokio::net::TcpListener::bind("127.0.0.1:0").await else { unreachable!("loopback bind") };
        let Ok(address) = listener.local_addr() else { unreachable!("a bound address") };
        tokio::spawn(async move { axum::serve(listener, router).await });
        let Ok(client) = Client::new(&format!("http://{address}/mcp")) else { unreachable!("an HTTP client") };
        assert_eq!(client.flow("Ada").await, Ok(()));
        assert_eq!(client.plain().await, Ok(()));
        let forged = client.call_tool(FLOW_TOOL, None, Some("rs1.forged")).await;
        assert!(forged.as_ref().is_err_and(|e| e.contains("-32602")), "{forged:?}");
    }

    /// The pushing server runs the same checked 2025-era flow as the engine's: the ask arrives on
    /// the call's stream and the result greets the name sent.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_pushed_server_serves_the_checked_2025_flow() {
        let Ok(listener) = tokio::net::TcpListener::bind("127.0.0.1:0").await else { unreachable!("loopback bind") };
        let Ok(address) = listener.local_addr() else { unreachable!("a bound address") };
        tokio::spawn(async move { axum::serve(listener, super::pushed_router()).await });
        let Ok(http) = legacy::http_client() else { unreachable!("an HTTP client") };
        let session = legacy::Session::open(&http, &format!("http://{address}/mcp")).await;
        let Ok(session) = session else { unreachable!("a 2025 session: {session:?}") };
        assert_eq!(session.flow("Ada").await, Ok(()));
        session.close().await;
    }
}
