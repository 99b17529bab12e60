//! Connecting to a server with rmcp's client transports, and sending the driver's requests with
//! their own `_meta`.
//!
//! Which era a server speaks is found as revision 2026-07-28 says: probe with `server/discover`
//! first; fall back to `initialize` (2025-11-25, which the server may negotiate down to
//! 2025-06-18) only on an answer that is not a modern one, never keyed to one error code; a
//! recognised modern error (`-32020`, `-32021`, `-32022` without a legacy version to offer) stays
//! modern and is reported. On a legacy session the handler passes every request the server pushes
//! to the driver through the runtime's bounded push channel.

use std::time::Duration;

use elicit_runtime::client::legacy::{self, PushReceiver, PushRefusal, PushSender};
use elicit_runtime::client::rmcp_caller::{RmcpCaller, transport_message};
use elicit_runtime::client::{DriveError, Driver, Responder};
use elicit_runtime::wire::Capabilities;
#[allow(
    deprecated,
    reason = "sampling and roots are deprecated (SEP-2577); 2025-era servers still send them and get a refusal"
)]
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult, CustomNotification,
    CustomRequest, CustomResult, ElicitRequestParams, ElicitResult, ElicitationCapability, ErrorCode, ErrorData,
    FormElicitationCapability, Implementation, ListRootsResult, ProtocolVersion, Tool, UrlElicitationCapability,
};
use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, ClientServiceExt, NotificationContext, RequestContext, RunningService,
    ServiceError,
};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient};
use serde_json::{Map, Value};

/// This client, as it introduces itself.
pub(crate) fn client_info() -> Value {
    serde_json::json!({"name": "elicit", "version": env!("CARGO_PKG_VERSION")})
}

/// Which revision to speak.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Protocol {
    /// Probe for 2026-07-28, fall back to `initialize`.
    Auto,
    /// 2026-07-28 only.
    Modern,
    /// `initialize` with this 2025-era version.
    Legacy(ProtocolVersion),
}

/// The rmcp handler. Under 2026-07-28 servers send no requests and capabilities go with each
/// request; on a legacy session it declares `capabilities` in `initialize` and hands every
/// request the server pushes to the driver.
#[derive(Clone)]
pub(crate) struct Handler {
    capabilities: Capabilities,
    version: ProtocolVersion,
    pushes: PushSender,
}

fn refusal(refusal: PushRefusal) -> ErrorData {
    ErrorData::new(ErrorCode(refusal.code), refusal.message, None)
}

impl Handler {
    async fn forward<T: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        params: Option<Value>,
    ) -> Result<T, ErrorData> {
        let answer = self.pushes.request(method, params).await.map_err(refusal)?;
        serde_json::from_value(answer)
            .map_err(|e| ErrorData::internal_error(format!("cannot encode the answer: {e}"), None))
    }
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.capabilities.form || self.capabilities.url {
            let mut elicitation = ElicitationCapability::new();
            // 2025-06-18 knows only `elicitation: {}` (form mode).
            if self.version != ProtocolVersion::V_2025_06_18 {
                if self.capabilities.form {
                    elicitation = elicitation.with_form(FormElicitationCapability::default());
                }
                if self.capabilities.url {
                    elicitation = elicitation.with_url(UrlElicitationCapability::default());
                }
            }
            capabilities.elicitation = Some(elicitation);
        }
        ClientConfig::new(capabilities, Implementation::new("elicit", env!("CARGO_PKG_VERSION")))
            .with_protocol_version(self.version.clone())
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let params = serde_json::to_value(&request).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        self.forward("elicitation/create", Some(params)).await
    }

    #[allow(
        deprecated,
        reason = "sampling is deprecated (SEP-2577) but 2025-era servers still send it; it is refused unless declared"
    )]
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let params = serde_json::to_value(&params).ok();
        self.forward("sampling/createMessage", params).await
    }

    #[allow(
        deprecated,
        reason = "roots are deprecated (SEP-2577) but 2025-era servers still ask; refused unless declared"
    )]
    async fn list_roots(&self, _context: RequestContext<RoleClient>) -> Result<ListRootsResult, ErrorData> {
        self.forward("roots/list", None).await
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleClient>,
    ) -> Result<CustomResult, ErrorData> {
        let answer = self.pushes.request(&request.method, request.params).await.map_err(refusal)?;
        Ok(CustomResult(answer))
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        _context: NotificationContext<RoleClient>,
    ) {
        self.pushes.notify(&notification.method, notification.params);
    }
}

/// A connected server.
pub(crate) struct Connection {
    client: RunningService<RoleClient, Handler>,
    /// The server's name, for the user.
    pub(crate) server_name: String,
    /// Where it is: the host (and port) or the command line.
    pub(crate) endpoint: String,
    /// The negotiated 2025-era version; `None` on 2026-07-28.
    pub(crate) legacy_version: Option<String>,
    pushes: Option<PushReceiver>,
    /// Sends the driver's rounds with their own `_meta` (the runtime's rmcp-backed caller).
    caller: RmcpCaller,
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
    /// Connects (probing the era as `protocol` says) and declares `capabilities` if the session
    /// is a legacy one. Every request, the handshake included, fails when the server leaves it
    /// unanswered for `timeout`: a server that never answers must not hold the terminal forever.
    pub(crate) async fn open(
        target: &Target,
        timeout: Duration,
        protocol: Protocol,
        capabilities: Capabilities,
    ) -> Result<Connection, String> {
        match tokio::time::timeout(timeout, Self::connect(target, timeout, protocol, capabilities)).await {
            Ok(connection) => connection,
            Err(_) => Err(format!("the server did not answer within {} s", timeout.as_secs())),
        }
    }

    async fn connect(
        target: &Target,
        timeout: Duration,
        protocol: Protocol,
        capabilities: Capabilities,
    ) -> Result<Connection, String> {
        let (sender, receiver) = legacy::channel();
        let handler = |version: ProtocolVersion| Handler { capabilities, version, pushes: sender.clone() };
        let client = match protocol {
            Protocol::Modern => {
                let mode = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
                handshake(target, handler(ProtocolVersion::V_2026_07_28), mode)
                    .await
                    .map_err(|e| describe_init(target, &e))?
            }
            Protocol::Legacy(version) => handshake(target, handler(version), ClientLifecycleMode::Initialize)
                .await
                .map_err(|e| describe_init(target, &e))?,
            Protocol::Auto => {
                let mode = ClientLifecycleMode::Auto {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                    legacy_version: Some(ProtocolVersion::V_2025_11_25),
                };
                match handshake(target, handler(ProtocolVersion::V_2026_07_28), mode).await {
                    Ok(client) => client,
                    Err(error) => match fallback_version(&error) {
                        // Not a modern answer: a fresh connection speaking `initialize`.
                        Some(version) => {
                            handshake(target, handler(version), ClientLifecycleMode::Initialize).await.map_err(|e| {
                                format!("{}; then {}", describe_init(target, &error), describe_init(target, &e))
                            })?
                        }
                        None => return Err(describe_init(target, &error)),
                    },
                }
            }
        };
        let endpoint = target.endpoint();
        let info = client.peer_info();
        let server_name = info
            .as_ref()
            .and_then(|info| info.server_info.as_ref().map(|i| i.name.clone()))
            .filter(|name| !name.is_empty())
            .unwrap_or_else(|| endpoint.clone());
        let negotiated = info.as_ref().map(|info| info.protocol_version.to_string());
        let legacy_version = negotiated.filter(|v| v.as_str() != elicit_runtime::wire::PROTOCOL_VERSION);
        let caller = RmcpCaller::new(client.peer().clone()).timeout(timeout);
        Ok(Connection { client, server_name, endpoint, legacy_version, pushes: Some(receiver), caller, timeout })
    }

    /// Runs one call through the driver, on whichever era the server speaks.
    pub(crate) async fn drive<R: Responder>(
        &mut self,
        driver: &Driver,
        responder: &mut R,
        method: &str,
        params: Map<String, Value>,
    ) -> Result<Value, DriveError> {
        if self.legacy_version.is_none() {
            return driver.call(&mut self.caller, responder, method, params).await;
        }
        let Some(mut pushes) = self.pushes.take() else {
            return Err(DriveError::Protocol("one call at a time".into()));
        };
        let result = driver.call_legacy(&mut self.caller, &mut pushes, responder, method, params).await;
        self.pushes = Some(pushes);
        result
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

async fn handshake(
    target: &Target,
    handler: Handler,
    mode: ClientLifecycleMode,
) -> Result<RunningService<RoleClient, Handler>, ClientInitializeError> {
    match target {
        Target::Url(url) => {
            handler.serve_with_lifecycle(StreamableHttpClientTransport::from_uri(url.clone()), mode).await
        }
        Target::Stdio(command) => {
            let mut cmd = tokio::process::Command::new("sh");
            cmd.arg("-c").arg(command);
            let transport = TokioChildProcess::new(cmd)
                .map_err(|e| ClientInitializeError::ConnectionClosed(format!("cannot start it: {e}")))?;
            handler.serve_with_lifecycle(transport, mode).await
        }
    }
}

/// The `initialize` version to fall back to after a failed probe, or `None` when the answer was
/// a recognised modern one (or there is no server to talk to): then the error stands.
fn fallback_version(error: &ClientInitializeError) -> Option<ProtocolVersion> {
    use elicit_runtime::wire::codes;
    match error {
        // rmcp already fell back on the same connection, and that failed too.
        ClientInitializeError::LegacyFallbackFailed { .. } => None,
        ClientInitializeError::JsonRpcError(e)
            if matches!(
                e.code.0,
                codes::HEADER_MISMATCH
                    | codes::MISSING_REQUIRED_CLIENT_CAPABILITY
                    | codes::UNSUPPORTED_PROTOCOL_VERSION
            ) =>
        {
            None
        }
        // A modern server whose only overlap with us is a 2025-era version.
        ClientInitializeError::NoCompatibleProtocolVersion { server_supported, .. } => {
            [ProtocolVersion::V_2025_11_25, ProtocolVersion::V_2025_06_18]
                .into_iter()
                .find(|v| server_supported.contains(v))
        }
        ClientInitializeError::Cancelled | ClientInitializeError::NoPreferredProtocolVersion => None,
        ClientInitializeError::ConnectionClosed(message) if message.starts_with("cannot start") => None,
        // Any other answer (a result that is no DiscoverResult, an HTTP error status, an error
        // without a modern code, a closed stream) is not a modern one.
        _ => Some(ProtocolVersion::V_2025_11_25),
    }
}

fn describe_init(target: &Target, error: &ClientInitializeError) -> String {
    // Without rmcp's wrapper naming the transport's Rust type ("Transport [rmcp::...] error: ").
    let text = error.to_string();
    let text = match (text.find("Transport ["), text.find("] error: ")) {
        (Some(start), Some(end)) if start < end => format!("{}{}", &text[..start], &text[end + "] error: ".len()..]),
        _ => text,
    };
    match target {
        Target::Url(url) => format!("cannot connect to {url}: {text}"),
        Target::Stdio(command) => format!("cannot talk to `{command}`: {text}"),
    }
}

impl Target {
    /// The endpoint as the user knows it: host and port, or the command line.
    pub(crate) fn endpoint(&self) -> String {
        match self {
            Target::Url(url) => url::Url::parse(url)
                .ok()
                .and_then(|u| {
                    u.host_str().map(|h| match u.port() {
                        Some(port) => format!("{h}:{port}"),
                        None => h.to_owned(),
                    })
                })
                .unwrap_or_else(|| url.clone()),
            Target::Stdio(command) => command.clone(),
        }
    }
}

fn describe(error: &ServiceError) -> String {
    match error {
        ServiceError::McpError(e) => format!("server error {}: {}", e.code.0, e.message),
        other => transport_message(other),
    }
}
