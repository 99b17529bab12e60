//! The setup every server of your own repeats, as small functions: its Streamable HTTP router
//! ([`Elicitation::http_router`]), serving it with the client addresses the session caps need
//! ([`serve_http`]), and the capability a task tool needs ([`with_tasks_extension`]).

use std::time::Duration;

use ::rmcp::ServerHandler;
use ::rmcp::model::{JsonObject, ServerCapabilities, TASKS_EXTENSION_ID};
use ::rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;

use super::{CappedSessions, Elicitation, wire_layer};

/// Browser origins [`Elicitation::http_router`] allows: pages served from this machine, on any
/// port (requests without an `Origin`, not from a browser, always pass).
pub const LOOPBACK_ORIGINS: &[&str] = &[
    "http://localhost:*",
    "https://localhost:*",
    "http://127.0.0.1:*",
    "https://127.0.0.1:*",
    "http://[::1]:*",
    "https://[::1]:*",
];

impl Elicitation {
    /// Your server at `/mcp` over Streamable HTTP, with what every server asking through the
    /// engine needs: each connection its own server, built by `make` from
    /// [`Elicitation::for_connection`] (its own cap on outstanding 2025-era asks); rmcp's
    /// defaults but for the Origin check, on (only [`LOOPBACK_ORIGINS`]: a page of another site
    /// must not reach a local server through the user's browser), loopback `Host`s only, bodies
    /// up to 4 MiB; 2025-era sessions capped overall and per client and kept as long as a pushed
    /// ask may wait ([`CappedSessions`]); and the [`wire_layer`] fixes. Merge
    /// [`Elicitation::page_router`] and pages of your own beside it, outside any bearer-token
    /// layer on `/mcp`; serve the whole with [`serve_http`] (the per-client cap needs the
    /// client's address). For other hosts or origins, [`Elicitation::http_router_with`].
    ///
    /// ```no_run
    /// # use elicit_runtime::rmcp::prelude::*;
    /// # #[derive(Clone)] struct Desk { elicitation: Elicitation }
    /// # impl elicit_runtime::rmcp::rmcp::ServerHandler for Desk {}
    /// # async fn run(elicitation: Elicitation) -> std::io::Result<()> {
    /// let app = elicitation.http_router(|elicitation| Desk { elicitation }).merge(elicitation.page_router());
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
    /// elicit_runtime::rmcp::serve_http(listener, app).await
    /// # }
    /// ```
    pub fn http_router<S, F>(&self, make: F) -> axum::Router
    where
        S: ServerHandler,
        F: Fn(Elicitation) -> S + Send + Sync + 'static,
    {
        let config = StreamableHttpServerConfig::default()
            .with_allowed_origins(LOOPBACK_ORIGINS.iter().copied())
            .enforce_origin_validation();
        self.http_router_with(config, make)
    }

    /// [`Elicitation::http_router`] with rmcp's `config` as it is (its hosts, origins, body
    /// bound; the wire layer reads the same).
    pub fn http_router_with<S, F>(&self, config: StreamableHttpServerConfig, make: F) -> axum::Router
    where
        S: ServerHandler,
        F: Fn(Elicitation) -> S + Send + Sync + 'static,
    {
        let sessions = CappedSessions::new(self.engine().session_config());
        let elicitation = self.clone();
        let service = StreamableHttpService::new(
            move || Ok(make(elicitation.for_connection())),
            sessions.manager(),
            config.clone(),
        );
        wire_layer(sessions.layer(axum::Router::new().nest_service("/mcp", service)), &config)
    }
}

/// How long [`serve_http`] gives a connection to send a request's head, counted from when it
/// may send one: a connection idle that long between requests is closed too (a parked call's
/// connection is not idle: its response is being written).
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Serves `app` on `listener`: each request with its client's address, which the per-client
/// session cap of [`Elicitation::http_router`] counts by (served without it, every client counts
/// as one); every connection with `TCP_NODELAY` (a 2025-era call's SSE stream is written in small
/// pieces, which Nagle's algorithm would hold back about 40 ms each) and a 30 s header read
/// timeout (a connection that sends no request head within 30 s of when it may, idle between
/// requests included, is closed).
///
/// Each connection is hyper's HTTP/1 connection, built directly. `axum::serve` builds it through
/// hyper-util's `auto` builder, which reads a connection's first bytes to tell HTTP/1 from
/// HTTP/2 (the workspace's axum serves HTTP/1 only) and hands them back to hyper: hyper's first
/// read then returns those 24 bytes alone, and its read buffer grows from 8 to 16 KiB for the
/// life of every connection. A connection holds that buffer for as long as it is open, which for a
/// 2025-era call waiting on a person is as long as the person takes: this serve loop holds about
/// 4.5 KiB less per parked call (BENCHMARKS.md, "Memory per parked 2025-era flow").
///
/// # Errors
///
/// None once listening: a failed accept is retried as `axum::serve` does (the loop runs until the
/// task is dropped). The `Result` keeps the signature of `axum::serve`.
pub async fn serve_http(mut listener: tokio::net::TcpListener, app: axum::Router) -> std::io::Result<()> {
    let mut http1 = hyper::server::conn::http1::Builder::new();
    http1.header_read_timeout(HEADER_READ_TIMEOUT);
    loop {
        let (tcp, client) = axum::serve::Listener::accept(&mut listener).await;
        // Each connection its own timer: the one timer entry it keeps for its header reads.
        let mut http1 = http1.clone();
        http1.timer(ConnectionTimer::default());
        let _ = tcp.set_nodelay(true);
        // What axum's `into_make_service_with_connect_info` adds: the client's address, which
        // `ConnectInfo<SocketAddr>` extracts.
        let service = tower::ServiceExt::map_request(app.clone(), move |mut request: hyper::Request<Incoming>| {
            request.extensions_mut().insert(ConnectInfo(client));
            request.map(axum::body::Body::new)
        });
        let connection = http1.serve_connection(TokioIo::new(tcp), TowerToHyperService::new(service)).with_upgrades();
        tokio::spawn(async move {
            // A connection's error (a reset, a malformed request) is that connection's alone.
            let _ = connection.await;
        });
    }
}

/// The header read timeout's timer for one connection (hyper's `Timer`), arming the runtime's
/// timer wheel about once per [`HEADER_READ_TIMEOUT`] rather than once per request.
///
/// hyper asks for a new sleep each time it starts reading a request head and drops it once the
/// head is read: with hyper-util's `TokioTimer`, a timer entry inserted into the runtime's wheel
/// and removed again for every request a client sends on a kept-alive connection. Here the
/// connection keeps one entry: a head read's sleep waits on it, moving it later only when it fires
/// before that read's deadline (once per timeout on a busy connection), and earlier only when the
/// read's deadline comes first (a connection's first read). A head read still ends when its own
/// deadline passes, as with hyper-util's timer.
#[derive(Clone, Default)]
struct ConnectionTimer {
    entry: std::sync::Arc<std::sync::Mutex<Option<std::pin::Pin<Box<tokio::time::Sleep>>>>>,
}

impl hyper::rt::Timer for ConnectionTimer {
    fn sleep(&self, duration: Duration) -> std::pin::Pin<Box<dyn hyper::rt::Sleep>> {
        self.sleep_until(self.now() + duration)
    }

    fn sleep_until(&self, deadline: std::time::Instant) -> std::pin::Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(HeadReadSleep { deadline: tokio::time::Instant::from_std(deadline), entry: self.entry.clone() })
    }

    /// The runtime's clock (which a test may pause), as hyper-util's timer reads it.
    fn now(&self) -> std::time::Instant {
        tokio::time::Instant::now().into_std()
    }
}

/// One head read's sleep: ready once `deadline` has passed, woken through the connection's entry.
struct HeadReadSleep {
    deadline: tokio::time::Instant,
    entry: std::sync::Arc<std::sync::Mutex<Option<std::pin::Pin<Box<tokio::time::Sleep>>>>>,
}

impl std::future::Future for HeadReadSleep {
    type Output = ();

    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        let deadline = self.deadline;
        let mut entry = self.entry.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let sleep = entry.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        if sleep.deadline() > deadline {
            sleep.as_mut().reset(deadline);
        }
        loop {
            match sleep.as_mut().poll(cx) {
                std::task::Poll::Pending => return std::task::Poll::Pending,
                // Fired at this read's deadline (the entry is never later than it, above).
                std::task::Poll::Ready(()) if sleep.deadline() >= deadline => return std::task::Poll::Ready(()),
                // Fired at an earlier read's deadline: wait on for this one's.
                std::task::Poll::Ready(()) => sleep.as_mut().reset(deadline),
            }
        }
    }
}

impl hyper::rt::Sleep for HeadReadSleep {}

/// `capabilities` advertising the Tasks extension (`io.modelcontextprotocol/tasks`): what the
/// `get_info` of a server with a task tool ([`ToolCall::run_task`](super::ToolCall::run_task))
/// returns, as in `ServerCapabilities::builder().enable_tools().build()` passed through this.
pub fn with_tasks_extension(mut capabilities: ServerCapabilities) -> ServerCapabilities {
    capabilities
        .extensions
        .get_or_insert_with(Default::default)
        .insert(TASKS_EXTENSION_ID.to_owned(), JsonObject::new());
    capabilities
}

/// The `ServerHandler` methods every server of your own asking through the engine writes the same
/// way, for its `impl ServerHandler` (beside `#[tool_handler]`): `supported_protocol_versions`
/// answering [`SUPPORTED_PROTOCOL_VERSIONS`](crate::rmcp::SUPPORTED_PROTOCOL_VERSIONS), and
/// `get_task`, `update_task` and `cancel_task` delegated to the [`Elicitation`](crate::rmcp::Elicitation)
/// in the field named (what a task tool, [`ToolCall::run_task`](crate::rmcp::ToolCall::run_task),
/// needs; advertise the extension with [`with_tasks_extension`](crate::rmcp::with_tasks_extension)).
///
/// ```no_run
/// use elicit_runtime::rmcp::prelude::*;
/// use elicit_runtime::rmcp::rmcp::ServerHandler;
///
/// #[derive(Clone)]
/// struct Desk {
///     elicitation: Elicitation,
/// }
///
/// impl ServerHandler for Desk {
///     elicit_runtime::elicitation_handler_methods!(elicitation);
/// }
/// ```
#[macro_export]
macro_rules! elicitation_handler_methods {
    ($field:ident) => {
        fn supported_protocol_versions(
            &self,
        ) -> ::std::borrow::Cow<'static, [$crate::rmcp::rmcp::model::ProtocolVersion]> {
            ::std::borrow::Cow::Borrowed($crate::rmcp::SUPPORTED_PROTOCOL_VERSIONS)
        }

        async fn get_task(
            &self,
            request: $crate::rmcp::rmcp::model::GetTaskParams,
            ctx: $crate::rmcp::rmcp::service::RequestContext<$crate::rmcp::rmcp::RoleServer>,
        ) -> ::std::result::Result<$crate::rmcp::rmcp::model::GetTaskResult, $crate::rmcp::rmcp::model::ErrorData> {
            self.$field.get_task(request, &ctx).await
        }

        async fn update_task(
            &self,
            request: $crate::rmcp::rmcp::model::UpdateTaskParams,
            ctx: $crate::rmcp::rmcp::service::RequestContext<$crate::rmcp::rmcp::RoleServer>,
        ) -> ::std::result::Result<(), $crate::rmcp::rmcp::model::ErrorData> {
            self.$field.update_task(request, &ctx).await
        }

        async fn cancel_task(
            &self,
            request: $crate::rmcp::rmcp::model::CancelTaskParams,
            ctx: $crate::rmcp::rmcp::service::RequestContext<$crate::rmcp::rmcp::RoleServer>,
        ) -> ::std::result::Result<(), $crate::rmcp::rmcp::model::ErrorData> {
            self.$field.cancel_task(request, &ctx).await
        }
    };
}
