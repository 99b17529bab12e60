//! Streamable HTTP: the router of an [`McpServer`], and the layers that put right what rmcp
//! gets wrong on the wire (mistyped Multi Round-Trip params, `elicitationId` on URL requests).

use std::sync::Arc;

use ::rmcp::RoleServer;
use ::rmcp::model::ErrorData;
use ::rmcp::service::RequestContext;
use ::rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use ::rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use axum::body::{Body, HttpBody as _};
use axum::http::{Request as HttpRequest, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::wire::{INPUT_REQUESTS, RESULT_INPUT_REQUIRED, RESULT_TYPE};

use super::McpServer;
use super::params::malformed_params;

/// Browser origins always allowed: pages served from this machine, on any port.
const LOOPBACK_ORIGINS: &[&str] = &[
    "http://localhost:*",
    "https://localhost:*",
    "http://127.0.0.1:*",
    "https://127.0.0.1:*",
    "http://[::1]:*",
    "https://[::1]:*",
];

/// The default bound on a request body.
pub const DEFAULT_MAX_REQUEST_BODY: usize = 4 * 1024 * 1024;

impl McpServer {
    /// An axum router serving this server at `/mcp` over Streamable HTTP: 2026-07-28 requests
    /// statelessly (JSON answers), and 2025-era clients in sessions (`Mcp-Session-Id`, kept in
    /// this process: several instances need affinity on that header; `DELETE` ends one).
    ///
    /// Only loopback `Host` headers are accepted unless `allowed_hosts` names others; only
    /// loopback `Origin`s unless [`McpServerBuilder::allowed_origins`](super::McpServerBuilder::allowed_origins) names others (a request
    /// without `Origin` passes). Bodies larger than [`McpServerBuilder::max_request_body`](super::McpServerBuilder::max_request_body) are
    /// refused (413) before they are parsed.
    pub fn http_router(&self, allowed_hosts: &[String]) -> axum::Router {
        // rmcp routes by era: an `initialize` opens a session whatever this setting says about
        // 2026-07-28 requests, which are always stateless. `json_response` applies to those only;
        // a session's call answers on an SSE stream, which is where its pushed requests go.
        let mut config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(true)
            .with_json_response(true)
            .with_sse_keep_alive(None)
            .with_allowed_origins(
                LOOPBACK_ORIGINS.iter().map(|o| (*o).to_owned()).chain(self.inner.http.allowed_origins.iter().cloned()),
            )
            .enforce_origin_validation()
            .with_max_request_body_bytes(self.inner.http.max_request_body);
        if !allowed_hosts.is_empty() {
            let mut hosts = vec!["localhost".to_owned(), "127.0.0.1".to_owned(), "::1".to_owned()];
            hosts.extend(allowed_hosts.iter().cloned());
            config = config.with_allowed_hosts(hosts);
        }
        let server = self.clone();
        let service = StreamableHttpService::new(
            move || Ok(server.for_connection()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        wire_layer(axum::Router::new().nest_service("/mcp", service), self.inner.http.max_request_body)
    }
}

/// Puts right, around a router serving rmcp's `StreamableHttpService` (yours or
/// [`McpServer::http_router`]'s), what rmcp gets wrong on the wire: a Multi Round-Trip request
/// whose `inputResponses`, `requestState` or `arguments` is mistyped is marked for `-32602`
/// (answered by [`ToolCall`](super::ToolCall) and [`Elicitation::call_tool`](super::Elicitation::call_tool),
/// where rmcp alone would refuse it as undecodable), and URL-mode input requests lose the
/// `elicitationId` member that revision 2026-07-28 removed. Bodies larger than
/// `max_request_body` bytes are refused (413) unread ([`DEFAULT_MAX_REQUEST_BODY`] is a sane
/// bound).
///
/// ```no_run
/// # use std::sync::Arc;
/// # use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
/// # use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
/// # fn demo<S: rmcp::ServerHandler + Clone>(my_server: S) -> axum::Router {
/// let service = StreamableHttpService::new(
///     move || Ok(my_server.clone()),
///     Arc::new(LocalSessionManager::default()),
///     StreamableHttpServerConfig::default().with_json_response(true),
/// );
/// elicit_runtime::rmcp::wire_layer(axum::Router::new().nest_service("/mcp", service), elicit_runtime::rmcp::DEFAULT_MAX_REQUEST_BODY)
/// # }
/// ```
pub fn wire_layer(router: axum::Router, max_request_body: usize) -> axum::Router {
    router
        .layer(middleware::from_fn(strip_legacy_fields))
        .layer(middleware::from_fn_with_state(max_request_body, mark_malformed_params))
}

/// Why a Multi Round-Trip request's parameters are mistyped, put in the HTTP request's extensions
/// by [`mark_malformed_params`] for the handler to answer.
#[derive(Debug, Clone, Copy)]
struct MalformedParams(&'static str);

/// rmcp decodes request parameters into typed structs, so a wrongly typed `inputResponses`,
/// `requestState` or `arguments` never reaches the engine: rmcp refuses the body as undecodable.
/// The protocol calls that invalid params (`-32602`, HTTP 200). This layer reads the body (at most
/// `max_body` bytes, 413 beyond, before anything parses it); when its parameters are mistyped it
/// drops the mistyped members and marks the request, so rmcp still runs every check of its own
/// (`Host`, `Origin`, `Accept`, `Content-Type`, the protocol headers) in its own order and only
/// then hands the request to the handler, which answers `-32602` without running anything
/// ([`refuse_marked`]). `inputResponses: null` is refused too: the member is optional, not nullable.
pub(super) async fn mark_malformed_params(
    axum::extract::State(max_body): axum::extract::State<usize>,
    request: HttpRequest<Body>,
    next: Next,
) -> Response {
    let too_large = || (axum::http::StatusCode::PAYLOAD_TOO_LARGE, "request body too large").into_response();
    let (mut parts, body) = request.into_parts();
    let announced =
        parts.headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if announced.is_some_and(|n| n > max_body as u64) {
        return too_large();
    }
    let Ok(bytes) = axum::body::to_bytes(body, max_body).await else {
        return too_large();
    };
    let body = match malformed_params(&bytes) {
        Some((reason, repaired)) => {
            parts.extensions.insert(MalformedParams(reason));
            parts.headers.remove(header::CONTENT_LENGTH);
            Body::from(repaired)
        }
        None => Body::from(bytes),
    };
    next.run(HttpRequest::from_parts(parts, body)).await
}

/// The `-32602` for a request [`mark_malformed_params`] marked.
pub(super) fn refuse_marked(ctx: &RequestContext<RoleServer>) -> Result<(), ErrorData> {
    let marked =
        ctx.extensions.get::<axum::http::request::Parts>().and_then(|parts| parts.extensions.get::<MalformedParams>());
    match marked {
        Some(MalformedParams(reason)) => Err(ErrorData::invalid_params(*reason, None)),
        None => Ok(()),
    }
}

/// Largest response body the rewrite below will buffer.
const MAX_REWRITE_BODY: usize = 4 * 1024 * 1024;

/// rmcp serialises URL-mode elicitations with `elicitationId`, a member that revision 2026-07-28
/// removed. This layer drops it from JSON `input_required` responses, so what goes on the wire is
/// exactly the revision's shape.
pub(super) async fn strip_legacy_fields(request: HttpRequest<Body>, next: Next) -> Response {
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

pub(super) fn rewrite_input_required(bytes: &[u8]) -> Option<Vec<u8>> {
    // Cheap pre-check: most responses are not input-required results.
    let needle = b"elicitationId";
    if !bytes.windows(needle.len()).any(|w| w == needle) {
        return None;
    }
    let mut message: Value = serde_json::from_slice(bytes).ok()?;
    let result = message.get_mut("result")?;
    if result.get(RESULT_TYPE).and_then(Value::as_str) != Some(RESULT_INPUT_REQUIRED) {
        return None;
    }
    for request in result.get_mut(INPUT_REQUESTS)?.as_object_mut()?.values_mut() {
        if let Some(params) = request.get_mut("params").and_then(Value::as_object_mut) {
            params.remove("elicitationId");
        }
    }
    serde_json::to_vec(&message).ok()
}
