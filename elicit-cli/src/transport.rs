//! Connecting to a server with rmcp's client transports, and sending the driver's requests with
//! their own `_meta`.

use std::time::Duration;

use elicit_runtime::client::{CallError, Caller};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientCapabilities, ClientConfig, ClientRequest, GetPromptRequest,
    GetPromptRequestParams, Implementation, MetaObject, ProtocolVersion, ReadResourceRequest,
    ReadResourceRequestParams, RequestMetaObject, Tool,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, PeerRequestOptions, RunningService, ServiceError};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient};
use serde_json::{Map, Value};

/// This client, as it introduces itself.
pub(crate) fn client_info() -> Value {
    serde_json::json!({"name": "elicit", "version": env!("CARGO_PKG_VERSION")})
}

/// The rmcp handler: it answers nothing itself (under 2026-07-28 servers do not send requests);
/// capabilities are declared per request by the driver.
#[derive(Clone)]
pub(crate) struct Handler;

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(ClientCapabilities::default(), Implementation::new("elicit", env!("CARGO_PKG_VERSION")))
            .with_protocol_version(ProtocolVersion::V_2026_07_28)
    }
}

/// A connected server.
pub(crate) struct Connection {
    client: RunningService<RoleClient, Handler>,
    /// The server's name, for the user.
    pub(crate) server_name: String,
    /// How long any one request may go unanswered.
    timeout: Duration,
}

/// Where the server is.
pub(crate) enum Target {
    /// Streamable HTTP endpoint.
    Url(String),
    /// A command line started as a child process speaking stdio.
    Stdio(String),
}

impl Connection {
    /// Connects and discovers the server (`server/discover`). Every request, discovery included,
    /// fails when the server leaves it unanswered for `timeout`: a server that never answers
    /// must not hold the terminal forever.
    pub(crate) async fn open(target: &Target, timeout: Duration) -> Result<Connection, String> {
        match tokio::time::timeout(timeout, Self::connect(target, timeout)).await {
            Ok(connection) => connection,
            Err(_) => Err(format!("the server did not answer within {} s", timeout.as_secs())),
        }
    }

    async fn connect(target: &Target, timeout: Duration) -> Result<Connection, String> {
        let mode = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
        let (client, fallback) = match target {
            Target::Url(url) => {
                let transport = StreamableHttpClientTransport::from_uri(url.clone());
                let client = Handler.serve_with_lifecycle(transport, mode).await.map_err(|e| format!("cannot connect to {url}: {e}"))?;
                (client, url.clone())
            }
            Target::Stdio(command) => {
                let mut cmd = tokio::process::Command::new("sh");
                cmd.arg("-c").arg(command);
                let transport = TokioChildProcess::new(cmd).map_err(|e| format!("cannot start `{command}`: {e}"))?;
                let client =
                    Handler.serve_with_lifecycle(transport, mode).await.map_err(|e| format!("cannot talk to `{command}`: {e}"))?;
                (client, command.clone())
            }
        };
        let server_name = client
            .peer_info()
            .and_then(|info| info.server_info.as_ref().map(|i| i.name.clone()))
            .filter(|name| !name.is_empty())
            .unwrap_or(fallback);
        Ok(Connection { client, server_name, timeout })
    }

    /// Every tool the server lists.
    pub(crate) async fn tools(&self) -> Result<Vec<Tool>, String> {
        match tokio::time::timeout(self.timeout, self.client.list_all_tools()).await {
            Ok(tools) => tools.map_err(|e| describe(&e)),
            Err(_) => Err(format!("the server did not answer within {} s", self.timeout.as_secs())),
        }
    }

    /// Closes the connection.
    pub(crate) async fn close(self) {
        let _ = self.client.cancel().await;
    }
}

fn describe(error: &ServiceError) -> String {
    match error {
        ServiceError::McpError(e) => format!("server error {}: {}", e.code.0, e.message),
        other => transport_message(other),
    }
}

/// What went wrong on the wire, without rmcp's wrapper naming the transport's Rust type
/// ("Transport send error: Transport [rmcp::transport::worker::WorkerTransport<...>] error: ...").
fn transport_message(error: &ServiceError) -> String {
    match error {
        ServiceError::TransportSend(e) => e.error.to_string(),
        other => other.to_string(),
    }
}

fn json_params<T: serde::de::DeserializeOwned>(params: Map<String, Value>) -> Result<T, CallError> {
    serde_json::from_value(Value::Object(params)).map_err(|e| CallError::Transport(format!("cannot encode the request: {e}")))
}

impl Caller for Connection {
    async fn call(&mut self, method: &str, mut params: Map<String, Value>) -> Result<Value, CallError> {
        // The per-request `_meta` goes through the request options: rmcp would otherwise
        // overwrite it with connection-level metadata.
        let meta = match params.remove("_meta") {
            Some(Value::Object(meta)) => meta,
            _ => Map::new(),
        };
        let request = match method {
            "tools/call" => ClientRequest::CallToolRequest(CallToolRequest::new(json_params::<CallToolRequestParams>(params)?)),
            "prompts/get" => ClientRequest::GetPromptRequest(GetPromptRequest::new(json_params::<GetPromptRequestParams>(params)?)),
            "resources/read" => {
                ClientRequest::ReadResourceRequest(ReadResourceRequest::new(json_params::<ReadResourceRequestParams>(params)?))
            }
            other => return Err(CallError::Transport(format!("`{other}` cannot carry input responses"))),
        };
        let options = PeerRequestOptions::with_timeout(self.timeout).with_meta(RequestMetaObject(MetaObject(meta)));
        let handle = self.client.peer().send_request_with_option(request, options).await.map_err(|e| to_call_error(&e))?;
        let result = handle.await_response().await.map_err(|e| to_call_error(&e))?;
        serde_json::to_value(&result).map_err(|e| CallError::Transport(format!("cannot read the result: {e}")))
    }
}

fn to_call_error(error: &ServiceError) -> CallError {
    match error {
        ServiceError::McpError(e) => CallError::Rpc { code: e.code.0, message: e.message.to_string(), data: e.data.clone() },
        ServiceError::Timeout { timeout } => {
            CallError::Transport(format!("the server did not answer within {} s", timeout.as_secs()))
        }
        other => CallError::Transport(transport_message(other)),
    }
}
