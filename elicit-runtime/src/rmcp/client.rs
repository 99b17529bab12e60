//! The client half of the rmcp adapter (feature `rmcp-client`): one [`Client`] reaches a server of
//! either era, over Streamable HTTP or stdio, and runs calls through the runtime's
//! [`Driver`] with one [`Responder`].
//!
//! Which era a server speaks is found as revision 2026-07-28 says: probe with `server/discover`
//! first; fall back to `initialize` (2025-11-25, which the server may negotiate down to
//! 2025-06-18) only on an answer that is not a modern one, never keyed to one error code; a
//! recognised modern error (`-32020`, `-32021`, `-32022` without a 2025-era revision to offer) stays
//! modern and is reported. On a 2025-era session every request the server pushes
//! (`elicitation/create`, `ping`, …) reaches the same responder through the runtime's bounded push
//! channel, and a `-32042` error has its URL steps shown and the call made again.
//!
//! ```no_run
//! use elicit_runtime::client::Responder;
//! use elicit_runtime::rmcp::client::{Client, ClientOptions, Target};
//!
//! async fn book(responder: &mut impl Responder) -> Result<serde_json::Value, Box<dyn std::error::Error>> {
//!     let options = ClientOptions::new("my-app", "1.0").bearer("a token")?;
//!     let mut client = Client::connect(&Target::http("http://127.0.0.1:8080/mcp"), options).await?;
//!     let result = client.call_tool(responder, "book_trip", serde_json::Map::new()).await;
//!     client.close().await;
//!     Ok(result?)
//! }
//! ```
//!
//! [`RmcpCaller`] is the lower-level piece: the driver's rounds on an rmcp peer you connected
//! yourself, each with its own `_meta`.

#[cfg(feature = "rmcp-auth")]
#[cfg_attr(docsrs, doc(cfg(feature = "rmcp-auth")))]
pub mod auth;
mod caller;
mod push;

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{ProtocolVersion, Tool};
use rmcp::service::{ClientInitializeError, ClientLifecycleMode, ClientServiceExt, Peer, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::{Map, Value};

pub use caller::{RmcpCaller, transport_message};
pub use http::{HeaderName, HeaderValue};

use crate::client::session::{self, SessionReceiver};
use crate::client::{DriveError, Driver, ProtocolError, Responder};
use crate::wire::{self, Capabilities, Revision};
use push::PushHandler;

/// Which protocol revision to speak.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Protocol {
    /// Probe for 2026-07-28, fall back to `initialize` on an answer that is not a modern one.
    #[default]
    Auto,
    /// This revision only: 2026-07-28 is probed (no `initialize`); a revision with sessions
    /// (2025-11-25 or 2025-06-18) opens one with `initialize`.
    Only(Revision),
}

/// rmcp's name for `revision`.
fn protocol_version(revision: Revision) -> ProtocolVersion {
    match revision {
        Revision::V2025_06_18 => ProtocolVersion::V_2025_06_18,
        Revision::V2025_11_25 => ProtocolVersion::V_2025_11_25,
        Revision::V2026_07_28 => ProtocolVersion::V_2026_07_28,
    }
}

/// Where the server is.
#[derive(Debug)]
#[non_exhaustive]
pub enum Target {
    /// A Streamable HTTP endpoint, such as `http://127.0.0.1:8080/mcp`.
    Http(String),
    /// A child process speaking stdio, and how to show it to the user.
    Child {
        /// The command to start (boxed: it is much larger than a URL).
        command: Box<tokio::process::Command>,
        /// The command line as the user knows it.
        shown: String,
    },
}

impl Target {
    /// A Streamable HTTP endpoint.
    pub fn http(url: impl Into<String>) -> Target {
        Target::Http(url.into())
    }

    /// A command line started with `sh -c` as a child process speaking stdio.
    pub fn shell(command_line: impl Into<String>) -> Target {
        let shown = command_line.into();
        let mut command = tokio::process::Command::new("sh");
        command.arg("-c").arg(&shown);
        Target::Child { command: Box::new(command), shown }
    }

    /// The endpoint as the user knows it: host and port, or the command line.
    pub fn endpoint(&self) -> String {
        match self {
            Target::Http(url) => url::Url::parse(url)
                .ok()
                .and_then(|u| {
                    u.host_str().map(|h| match u.port() {
                        Some(port) => format!("{h}:{port}"),
                        None => h.to_owned(),
                    })
                })
                .unwrap_or_else(|| url.clone()),
            Target::Child { shown, .. } => shown.clone(),
        }
    }
}

/// How a [`Client`] connects and introduces itself.
///
/// Header values are marked sensitive: they never appear in this type's `Debug` output, in the
/// errors of [`Client::connect`], or in rmcp's logs.
#[derive(Clone)]
pub struct ClientOptions {
    name: String,
    version: String,
    protocol: Protocol,
    capabilities: Capabilities,
    timeout: Duration,
    headers: HashMap<HeaderName, HeaderValue>,
    #[cfg(feature = "rmcp-auth")]
    oauth: Option<auth::OAuth>,
}

impl fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<&str> = self.headers.keys().map(HeaderName::as_str).collect();
        f.debug_struct("ClientOptions")
            .field("name", &self.name)
            .field("version", &self.version)
            .field("protocol", &self.protocol)
            .field("capabilities", &self.capabilities)
            .field("timeout", &self.timeout)
            .field("headers", &headers)
            .finish()
    }
}

/// A header [`ClientOptions`] cannot send. It names the header, never its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderError {
    name: String,
    reason: &'static str,
}

impl fmt::Display for HeaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "header `{}`: {}", wire::clip(&self.name), self.reason)
    }
}

impl std::error::Error for HeaderError {}

/// Headers the transport sets itself; a caller may not.
const TRANSPORT_HEADERS: [&str; 7] =
    ["accept", "content-type", "content-length", "host", "mcp-session-id", "mcp-protocol-version", "last-event-id"];

impl ClientOptions {
    /// A client introducing itself as `name` `version`, declaring form and URL mode, probing the
    /// era, and giving up on a request left unanswered for 300 s.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> ClientOptions {
        ClientOptions {
            name: name.into(),
            version: version.into(),
            protocol: Protocol::Auto,
            capabilities: Capabilities::ELICITATION,
            timeout: Duration::from_secs(300),
            headers: HashMap::new(),
            #[cfg(feature = "rmcp-auth")]
            oauth: None,
        }
    }

    /// Authorizes with OAuth 2.1 when the server asks for it (a 401, or a 403 for more scope),
    /// on connecting and during calls (HTTP only).
    #[cfg(feature = "rmcp-auth")]
    #[cfg_attr(docsrs, doc(cfg(feature = "rmcp-auth")))]
    pub fn oauth(mut self, oauth: auth::OAuth) -> ClientOptions {
        self.oauth = Some(oauth);
        self
    }

    /// Which revision to speak (default: probe, then fall back).
    pub fn protocol(mut self, protocol: Protocol) -> ClientOptions {
        self.protocol = protocol;
        self
    }

    /// The capabilities to declare: on every request under 2026-07-28, in `initialize` otherwise.
    pub fn capabilities(mut self, capabilities: Capabilities) -> ClientOptions {
        self.capabilities = capabilities;
        self
    }

    /// Fails any request (the handshake included) the server leaves unanswered this long.
    pub fn timeout(mut self, timeout: Duration) -> ClientOptions {
        self.timeout = timeout;
        self
    }

    /// Sends `name: value` with every HTTP request (ignored on stdio). The value is kept as a
    /// secret.
    ///
    /// # Errors
    ///
    /// The name or value is not a valid HTTP header, or names a header the transport sets itself.
    pub fn header(mut self, name: &str, value: &str) -> Result<ClientOptions, HeaderError> {
        let error = |reason| HeaderError { name: name.to_owned(), reason };
        let header = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| error("not a valid header name"))?;
        if TRANSPORT_HEADERS.contains(&header.as_str()) {
            return Err(error("the transport sets this header itself"));
        }
        let mut value =
            HeaderValue::from_str(value.trim()).map_err(|_| error("the value has characters a header cannot carry"))?;
        value.set_sensitive(true);
        self.headers.insert(header, value);
        Ok(self)
    }

    /// Sends `Authorization: Bearer TOKEN` with every HTTP request.
    ///
    /// # Errors
    ///
    /// The token has characters a header cannot carry.
    pub fn bearer(self, token: &str) -> Result<ClientOptions, HeaderError> {
        self.header("authorization", &format!("Bearer {}", token.trim()))
    }

    /// The client's `clientInfo`.
    pub fn client_info(&self) -> Value {
        serde_json::json!({"name": self.name, "version": self.version})
    }

    /// The capabilities declared.
    pub fn declared(&self) -> Capabilities {
        self.capabilities
    }
}

/// Why [`Client::connect`] failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConnectError {
    /// The child process could not be started.
    Start(String),
    /// The server did not answer the handshake within the time bound (seconds).
    Timeout(u64),
    /// The handshake with an HTTP endpoint failed.
    Handshake {
        /// The endpoint, as the user gave it.
        endpoint: String,
        /// What went wrong.
        reason: String,
    },
    /// The server asked for authorization and it did not complete.
    #[cfg(feature = "rmcp-auth")]
    #[cfg_attr(docsrs, doc(cfg(feature = "rmcp-auth")))]
    Authorization(auth::AuthorizeError),
    /// The handshake with a child process failed.
    Child {
        /// The command line.
        command: String,
        /// What went wrong.
        reason: String,
    },
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnectError::Start(reason) => write!(f, "cannot start the server: {reason}"),
            ConnectError::Timeout(seconds) => write!(f, "the server did not answer within {seconds} s"),
            ConnectError::Handshake { endpoint, reason } => write!(f, "cannot connect to {endpoint}: {reason}"),
            ConnectError::Child { command, reason } => write!(f, "cannot talk to `{command}`: {reason}"),
            #[cfg(feature = "rmcp-auth")]
            ConnectError::Authorization(error) => write!(f, "the server requires authorization: {error}"),
        }
    }
}

impl std::error::Error for ConnectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            #[cfg(feature = "rmcp-auth")]
            ConnectError::Authorization(error) => Some(error),
            _ => None,
        }
    }
}

/// A request other than a driven call failed (listing tools).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RequestError {
    /// The server did not answer within the time bound (seconds).
    Timeout(u64),
    /// The server asked for (more) authorization and it did not complete.
    #[cfg(feature = "rmcp-auth")]
    #[cfg_attr(docsrs, doc(cfg(feature = "rmcp-auth")))]
    Authorization(auth::AuthorizeError),
    /// The server answered with an error, or the connection failed (rmcp's description).
    Failed(String),
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestError::Timeout(seconds) => write!(f, "the server did not answer within {seconds} s"),
            #[cfg(feature = "rmcp-auth")]
            RequestError::Authorization(error) => error.fmt(f),
            RequestError::Failed(reason) => f.write_str(reason),
        }
    }
}

impl std::error::Error for RequestError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            #[cfg(feature = "rmcp-auth")]
            RequestError::Authorization(error) => Some(error),
            _ => None,
        }
    }
}

/// A connected server, of either era.
pub struct Client {
    service: RunningService<RoleClient, PushHandler>,
    server_name: String,
    endpoint: String,
    /// The negotiated revision when it is not 2026-07-28 (calls then run in the session).
    negotiated_session: Option<String>,
    pushes: Option<SessionReceiver>,
    caller: RmcpCaller,
    timeout: Duration,
    capabilities: Capabilities,
    client_info: Value,
    #[cfg(feature = "rmcp-auth")]
    auth: Option<Authorized>,
}

/// The authorization of a connection: how to authorize again (step-up), and the HTTP client whose
/// tokens every request uses.
#[cfg(feature = "rmcp-auth")]
struct Authorized {
    oauth: auth::OAuth,
    url: String,
    client: AuthHttp,
}

#[cfg(feature = "rmcp-auth")]
type AuthHttp = rmcp::transport::AuthClient<reqwest::Client>;

/// The HTTP client of a handshake.
#[derive(Clone)]
enum Http {
    Plain,
    #[cfg(feature = "rmcp-auth")]
    Auth(AuthHttp),
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("server_name", &self.server_name)
            .field("endpoint", &self.endpoint)
            .field("session_revision", &self.session_revision())
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Connects to `target`, finding its era as `options` say. The handshake fails when the server
    /// leaves it unanswered for the options' timeout: a server that never answers must not hold
    /// the application forever.
    ///
    /// # Errors
    ///
    /// The server cannot be started or reached, refuses the handshake, or does not answer in time.
    pub async fn connect(target: &Target, options: ClientOptions) -> Result<Client, ConnectError> {
        let timeout = options.timeout;
        match tokio::time::timeout(timeout, Self::open(target, options)).await {
            Ok(client) => client,
            Err(_) => Err(ConnectError::Timeout(timeout.as_secs())),
        }
    }

    #[cfg(not(feature = "rmcp-auth"))]
    async fn open(target: &Target, options: ClientOptions) -> Result<Client, ConnectError> {
        Self::open_with(target, &options, Http::Plain).await.map_err(|(error, _)| error)
    }

    /// Connects, authorizing whenever the server answers with a challenge, a bounded number of
    /// times.
    #[cfg(feature = "rmcp-auth")]
    async fn open(target: &Target, options: ClientOptions) -> Result<Client, ConnectError> {
        let (Some(oauth), Target::Http(url)) = (options.oauth.clone(), target) else {
            return Self::open_with(target, &options, Http::Plain).await.map_err(|(error, _)| error);
        };
        let failed = ConnectError::Authorization;
        let manager = oauth.stored_manager(url).await.map_err(failed)?;
        let http = AuthHttp::new(reqwest::Client::default(), manager);
        let mut authorizations = 0;
        loop {
            match Self::open_with(target, &options, Http::Auth(http.clone())).await {
                Ok(mut client) => {
                    client.auth = Some(Authorized { oauth, url: url.clone(), client: http });
                    return Ok(client);
                }
                Err((_, Some(challenge))) if authorizations < oauth.max_authorizations => {
                    authorizations += 1;
                    let manager = oauth.authorize(url, &challenge).await.map_err(failed)?;
                    *http.auth_manager.lock().await = manager;
                }
                Err((_, Some(_))) => {
                    return Err(failed(auth::AuthorizeError::TooManyAttempts(authorizations)));
                }
                Err((error, None)) => return Err(error),
            }
        }
    }

    /// One connection attempt; a failure carries the server's `WWW-Authenticate` challenge when it
    /// asked for authorization.
    async fn open_with(
        target: &Target,
        options: &ClientOptions,
        http: Http,
    ) -> Result<Client, (ConnectError, Option<String>)> {
        let (sender, receiver) = session::channel();
        let handler = |version: ProtocolVersion| PushHandler {
            capabilities: options.capabilities,
            version,
            pushes: sender.clone(),
            name: options.name.clone(),
            client_version: options.version.clone(),
        };
        let failed =
            |error: &ClientInitializeError| (handshake_error(target, error), error.auth_challenge().map(str::to_owned));
        let service = match &options.protocol {
            Protocol::Only(revision) if !revision.has_sessions() => {
                let mode = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
                handshake(target, options, &http, handler(ProtocolVersion::V_2026_07_28), mode)
                    .await
                    .map_err(|e| failed(&e))?
            }
            Protocol::Only(revision) => {
                handshake(target, options, &http, handler(protocol_version(*revision)), ClientLifecycleMode::Initialize)
                    .await
                    .map_err(|e| failed(&e))?
            }
            Protocol::Auto => {
                let mode = ClientLifecycleMode::Auto {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                    legacy_version: Some(ProtocolVersion::V_2025_11_25),
                };
                match handshake(target, options, &http, handler(ProtocolVersion::V_2026_07_28), mode).await {
                    Ok(service) => service,
                    // Refused for want of authorization: no era was learnt.
                    Err(error) if error.auth_challenge().is_some() => return Err(failed(&error)),
                    Err(error) => match fallback_version(&error) {
                        // Not a modern answer: a fresh connection speaking `initialize`.
                        Some(version) => {
                            handshake(target, options, &http, handler(version), ClientLifecycleMode::Initialize)
                                .await
                                .map_err(|second| {
                                let (first, _) = failed(&error);
                                let (then, challenge) = failed(&second);
                                (first.then(then), challenge)
                            })?
                        }
                        None => return Err(failed(&error)),
                    },
                }
            }
        };
        let endpoint = target.endpoint();
        let info = service.peer_info();
        let server_name = info
            .as_ref()
            .and_then(|info| info.server_info.as_ref().map(|i| i.name.clone()))
            .filter(|name| !name.is_empty())
            .unwrap_or_else(|| endpoint.clone());
        let negotiated = info.as_ref().map(|info| info.protocol_version.to_string());
        let negotiated_session = negotiated.filter(|v| v.as_str() != wire::PROTOCOL_VERSION);
        let caller = RmcpCaller::new(service.peer().clone()).timeout(options.timeout);
        Ok(Client {
            service,
            server_name,
            endpoint,
            negotiated_session,
            pushes: Some(receiver),
            caller,
            timeout: options.timeout,
            capabilities: options.capabilities,
            client_info: options.client_info(),
            #[cfg(feature = "rmcp-auth")]
            auth: None,
        })
    }

    /// The server's name as it introduced itself (its endpoint when it gave none).
    pub fn server_name(&self) -> &str {
        &self.server_name
    }

    /// Where the server is, as the user knows it: host and port, or the command line.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The negotiated revision when it has sessions (a 2025-era one); `None` on 2026-07-28, and
    /// on an older revision this crate does not name (its calls still run in the session).
    pub fn session_revision(&self) -> Option<Revision> {
        self.negotiated_session.as_deref().and_then(Revision::parse).filter(|r| r.has_sessions())
    }

    /// The rmcp peer, for requests the driver does not make.
    pub fn peer(&self) -> &Peer<RoleClient> {
        self.service.peer()
    }

    /// A driver declaring this client's capabilities and naming the server; adjust its limits
    /// and pass it to [`Client::call_with`].
    pub fn driver(&self) -> Driver {
        Driver::new(self.capabilities, self.client_info.clone(), self.server_name.clone())
    }

    /// Runs one call (`tools/call`, `prompts/get`, `resources/read`) to completion with a default
    /// [`Client::driver`], answering every input request through `responder`.
    ///
    /// # Errors
    ///
    /// As [`Client::call_with`].
    pub async fn call<R: Responder>(
        &mut self,
        responder: &mut R,
        method: &str,
        params: Map<String, Value>,
    ) -> Result<Value, DriveError> {
        let driver = self.driver();
        self.call_with(&driver, responder, method, params).await
    }

    /// Calls the tool `name` with `arguments` to completion.
    ///
    /// # Errors
    ///
    /// As [`Client::call_with`].
    pub async fn call_tool<R: Responder>(
        &mut self,
        responder: &mut R,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<Value, DriveError> {
        let mut params = Map::new();
        params.insert("name".into(), Value::String(name.to_owned()));
        params.insert("arguments".into(), Value::Object(arguments));
        self.call(responder, wire::TOOLS_CALL, params).await
    }

    /// Runs one call to completion with `driver`, on whichever era the server speaks: the Multi
    /// Round-Trip loop under 2026-07-28, pushed requests and `-32042` on a 2025-era session.
    ///
    /// # Errors
    ///
    /// The call failed, the server broke the protocol, an input request was refused or could not
    /// be answered, or the user cancelled.
    pub async fn call_with<R: Responder>(
        &mut self,
        driver: &Driver,
        responder: &mut R,
        method: &str,
        params: Map<String, Value>,
    ) -> Result<Value, DriveError> {
        let result = self.call_once(driver, responder, method, params.clone()).await;
        #[cfg(feature = "rmcp-auth")]
        let result = self.step_up(result, driver, responder, method, params).await;
        result
    }

    /// While a call fails because the server wants (more) authorization: authorize, then call
    /// again, a bounded number of times.
    #[cfg(feature = "rmcp-auth")]
    async fn step_up<R: Responder>(
        &mut self,
        mut result: Result<Value, DriveError>,
        driver: &Driver,
        responder: &mut R,
        method: &str,
        params: Map<String, Value>,
    ) -> Result<Value, DriveError> {
        let mut authorizations = 0;
        while result.is_err() {
            let Some(challenge) = self.caller.take_challenge() else { break };
            let Some(authorized) = &self.auth else { break };
            if authorizations >= authorized.oauth.max_authorizations {
                let error = auth::AuthorizeError::TooManyAttempts(authorizations);
                return Err(DriveError::Call(crate::client::CallError::Transport(error.to_string())));
            }
            authorizations += 1;
            let manager = authorized
                .oauth
                .authorize(&authorized.url, &challenge)
                .await
                .map_err(|e| DriveError::Call(crate::client::CallError::Transport(e.to_string())))?;
            *authorized.client.auth_manager.lock().await = manager;
            result = self.call_once(driver, responder, method, params.clone()).await;
        }
        result
    }

    async fn call_once<R: Responder>(
        &mut self,
        driver: &Driver,
        responder: &mut R,
        method: &str,
        params: Map<String, Value>,
    ) -> Result<Value, DriveError> {
        if self.negotiated_session.is_none() {
            return driver.call(&mut self.caller, responder, method, params).await;
        }
        let Some(mut pushes) = self.pushes.take() else {
            return Err(DriveError::Protocol(ProtocolError::new("one call at a time")));
        };
        let result = driver.call_in_session(&mut self.caller, &mut pushes, responder, method, params).await;
        self.pushes = Some(pushes);
        result
    }

    /// Every tool the server lists.
    ///
    /// # Errors
    ///
    /// The request failed or was left unanswered for the time bound.
    #[cfg_attr(
        not(feature = "rmcp-auth"),
        allow(clippy::never_loop, reason = "without `rmcp-auth` nothing asks again; the loop is the authorizing one")
    )]
    pub async fn list_all_tools(&self) -> Result<Vec<Tool>, RequestError> {
        #[cfg(feature = "rmcp-auth")]
        let mut authorizations = 0;
        loop {
            let error = match tokio::time::timeout(self.timeout, self.service.list_all_tools()).await {
                Ok(Ok(tools)) => return Ok(tools),
                Ok(Err(error)) => error,
                Err(_) => {
                    return Err(RequestError::Timeout(self.timeout.as_secs()));
                }
            };
            #[cfg(feature = "rmcp-auth")]
            if let (Some(challenge), Some(authorized)) = (error.auth_challenge(), &self.auth) {
                // The server wants (more) authorization: authorize, then ask again.
                if authorizations >= authorized.oauth.max_authorizations {
                    return Err(RequestError::Authorization(auth::AuthorizeError::TooManyAttempts(authorizations)));
                }
                authorizations += 1;
                let manager = authorized
                    .oauth
                    .authorize(&authorized.url, challenge)
                    .await
                    .map_err(RequestError::Authorization)?;
                *authorized.client.auth_manager.lock().await = manager;
                continue;
            }
            return Err(RequestError::Failed(describe(&error)));
        }
    }

    /// Closes the connection (and ends a child process).
    pub async fn close(self) {
        let _ = self.service.cancel().await;
    }
}

async fn handshake(
    target: &Target,
    options: &ClientOptions,
    http: &Http,
    handler: PushHandler,
    mode: ClientLifecycleMode,
) -> Result<RunningService<RoleClient, PushHandler>, ClientInitializeError> {
    match target {
        Target::Http(url) => {
            let config =
                StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(options.headers.clone());
            match http {
                Http::Plain => {
                    handler.serve_with_lifecycle(StreamableHttpClientTransport::from_config(config), mode).await
                }
                #[cfg(feature = "rmcp-auth")]
                Http::Auth(client) => {
                    let transport = StreamableHttpClientTransport::with_client(client.clone(), config);
                    handler.serve_with_lifecycle(transport, mode).await
                }
            }
        }
        Target::Child { command, .. } => {
            let mut command = rebuild(command);
            command.kill_on_drop(true);
            let transport = TokioChildProcess::new(command)
                .map_err(|e| ClientInitializeError::ConnectionClosed(format!("cannot start it: {e}")))?;
            handler.serve_with_lifecycle(transport, mode).await
        }
    }
}

/// A fresh copy of `command` (a probe and its fallback each start the server).
fn rebuild(command: &tokio::process::Command) -> tokio::process::Command {
    let std = command.as_std();
    let mut copy = tokio::process::Command::new(std.get_program());
    copy.args(std.get_args());
    for (key, value) in std.get_envs() {
        match value {
            Some(value) => copy.env(key, value),
            None => copy.env_remove(key),
        };
    }
    if let Some(dir) = std.get_current_dir() {
        copy.current_dir(dir);
    }
    copy
}

/// The `initialize` version to fall back to after a failed probe, or `None` when the answer was
/// a recognised modern one (or there is no server to talk to): then the error stands.
fn fallback_version(error: &ClientInitializeError) -> Option<ProtocolVersion> {
    use crate::wire::codes;
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

fn handshake_error(target: &Target, error: &ClientInitializeError) -> ConnectError {
    if let ClientInitializeError::ConnectionClosed(message) = error
        && let Some(reason) = message.strip_prefix("cannot start it: ")
    {
        return ConnectError::Start(reason.to_owned());
    }
    // Without rmcp's wrapper naming the transport's Rust type ("Transport [rmcp::...] error: ").
    let text = error.to_string();
    let reason = match (text.find("Transport ["), text.find("] error: ")) {
        (Some(start), Some(end)) if start < end => format!("{}{}", &text[..start], &text[end + "] error: ".len()..]),
        _ => text,
    };
    match target {
        Target::Http(url) => ConnectError::Handshake { endpoint: url.clone(), reason },
        Target::Child { shown, .. } => ConnectError::Child { command: shown.clone(), reason },
    }
}

impl ConnectError {
    /// A probe's failure followed by its fallback's: both reasons, in order.
    fn then(self, fallback: ConnectError) -> ConnectError {
        match (self, fallback) {
            (ConnectError::Handshake { endpoint, reason }, ConnectError::Handshake { reason: then, .. }) => {
                ConnectError::Handshake { endpoint, reason: format!("{reason}; then {then}") }
            }
            (ConnectError::Child { command, reason }, ConnectError::Child { reason: then, .. }) => {
                ConnectError::Child { command, reason: format!("{reason}; then {then}") }
            }
            (_, other) => other,
        }
    }
}

fn describe(error: &ServiceError) -> String {
    match error {
        ServiceError::McpError(e) => format!("server error {}: {}", e.code.0, e.message),
        other => transport_message(other),
    }
}
