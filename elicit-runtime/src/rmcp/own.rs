//! The setup every server of your own repeats, as small functions: its Streamable HTTP router
//! ([`Elicitation::http_router`]), serving it with the client addresses the session caps need
//! ([`serve_http`]), and the capability a task tool needs ([`with_tasks_extension`]).

use std::net::SocketAddr;

use ::rmcp::ServerHandler;
use ::rmcp::model::{JsonObject, ServerCapabilities, TASKS_EXTENSION_ID};
use ::rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

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

/// Serves `app` on `listener` with each request's client address, which the per-client session
/// cap of [`Elicitation::http_router`] counts by (served without it, every client counts as one).
///
/// # Errors
///
/// As `axum::serve`.
pub async fn serve_http(listener: tokio::net::TcpListener, app: axum::Router) -> std::io::Result<()> {
    axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>()).await
}

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
