//! Streamable HTTP: the layers that put right what rmcp gets wrong on the wire (mistyped Multi
//! Round-Trip params, `elicitationId` on URL requests), around any router serving rmcp.

use std::sync::Arc;

use ::rmcp::RoleServer;
use ::rmcp::model::ErrorData;
use ::rmcp::service::RequestContext;
use ::rmcp::transport::StreamableHttpServerConfig;
use axum::body::{Body, HttpBody as _};
use axum::http::{HeaderName, Request as HttpRequest, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::wire::{INPUT_REQUESTS, RESULT_INPUT_REQUIRED, RESULT_TYPE};

use super::params::malformed_params;

/// The default bound on a request body.
pub const DEFAULT_MAX_REQUEST_BODY: usize = 4 * 1024 * 1024;

/// Puts right, around a router serving rmcp's `StreamableHttpService` (yours or
/// [`McpServer::http_router`](super::McpServer::http_router)'s), what rmcp gets wrong on the wire: a Multi Round-Trip request
/// whose `inputResponses`, `requestState` or `arguments` is mistyped is marked for `-32602`
/// (answered by [`ToolCall`](super::ToolCall) and [`Elicitation::call_tool`](super::Elicitation::call_tool),
/// where rmcp alone would refuse it as undecodable), and URL-mode input requests lose the
/// `elicitationId` member that revision 2026-07-28 removed, in JSON answers and on SSE streams
/// alike.
///
/// Pass the `config` your `StreamableHttpService` runs with: its `allowed_hosts` and
/// `allowed_origins` are checked before the layer reads a body (a request rmcp would refuse with
/// 403 is handed to rmcp unread, to refuse), and its `max_request_body_bytes` bounds what the
/// layer reads (413 beyond).
///
/// ```no_run
/// # use std::sync::Arc;
/// # use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
/// # use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
/// # fn demo<S: rmcp::ServerHandler + Clone>(my_server: S) -> axum::Router {
/// let config = StreamableHttpServerConfig::default()
///     // Browsers on other sites must not reach a local server (DNS rebinding): only pages of
///     // this machine, on any port, may send an `Origin`; requests without one pass.
///     .with_allowed_origins(["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"])
///     .enforce_origin_validation();
/// let service =
///     StreamableHttpService::new(move || Ok(my_server.clone()), Arc::new(LocalSessionManager::default()), config.clone());
/// elicit_runtime::rmcp::wire_layer(axum::Router::new().nest_service("/mcp", service), &config)
/// # }
/// ```
pub fn wire_layer(router: axum::Router, config: &StreamableHttpServerConfig) -> axum::Router {
    let gate = Arc::new(Gate::new(config));
    router.layer(middleware::from_fn_with_state(gate, put_right))
}

/// The layer of [`wire_layer`]: both of its fixes in one middleware, since axum boxes and clones
/// the inner service of each middleware on every request.
async fn put_right(
    axum::extract::State(gate): axum::extract::State<Arc<Gate>>,
    request: HttpRequest<Body>,
    next: Next,
) -> Response {
    put_right_around(&gate, request, |request| next.run(request)).await
}

/// What [`wire_layer`] does to a request and its response, around `serve`: the layer calls it
/// with the rest of the router, [`McpServer::http_router`](super::McpServer::http_router) with
/// its service directly (a middleware of axum's costs a boxed, cloned service and a boxed future
/// on every request).
pub(super) async fn put_right_around<F, Fut>(gate: &Gate, request: HttpRequest<Body>, serve: F) -> Response
where
    F: FnOnce(HttpRequest<Body>) -> Fut,
    Fut: std::future::Future<Output = Response>,
{
    let (request, session_call) = match mark_malformed_params(gate, request).await {
        Ok(marked) => marked,
        Err(refused) => return refused,
    };
    let response = strip_legacy_fields(serve(request).await).await;
    let is_sse = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    match session_call {
        Some(id) if is_sse => {
            let (parts, body) = response.into_parts();
            Response::from_parts(parts, Body::from_stream(answered_or_failed(body, id)))
        }
        _ => response,
    }
}

/// What rmcp lets in, checked before a body is read. The lists are parsed once, here, as rmcp
/// reads them; a request is then checked without allocating.
#[derive(Debug)]
pub(super) struct Gate {
    /// Empty: rmcp checks no host.
    allowed_hosts: Vec<AllowedHost>,
    /// Empty: whether rmcp checks depends on a setting it keeps private.
    allowed_origins: Vec<AllowedOrigin>,
    max_body: usize,
}

/// An allowed `Host`: lowercase, without brackets, with the port it requires if any.
#[derive(Debug)]
struct AllowedHost {
    host: String,
    port: Option<u16>,
}

/// An allowed `Origin`: `origin` is `None` for an entry that parses as no origin (it lets nothing
/// in), `Some(None)` for `null`.
#[derive(Debug)]
struct AllowedOrigin {
    #[allow(clippy::option_option, reason = "an entry that parses as nothing and the `null` origin differ")]
    origin: Option<Option<(String, String, Option<u16>)>>,
    any_port: bool,
}

impl Gate {
    pub(super) fn new(config: &StreamableHttpServerConfig) -> Self {
        let allowed_hosts = config
            .allowed_hosts
            .iter()
            .map(|allowed| {
                let allowed = allowed.trim();
                match axum::http::uri::Authority::try_from(allowed) {
                    Ok(a) => AllowedHost { host: normalize_host(a.host()), port: a.port_u16() },
                    Err(_) => AllowedHost { host: normalize_host(allowed), port: None },
                }
            })
            .collect();
        let allowed_origins = config
            .allowed_origins
            .iter()
            .map(|allowed| {
                let allowed = allowed.trim();
                let (base, any_port) = match allowed.strip_suffix(":*") {
                    Some(base) => (base, true),
                    None => (allowed, false),
                };
                AllowedOrigin { origin: parse_origin(base), any_port }
            })
            .collect();
        Self { allowed_hosts, allowed_origins, max_body: config.max_request_body_bytes }
    }

    /// `true` when rmcp's `Host` and `Origin` checks surely pass. Anything else (a host or
    /// origin not on the lists, a header that does not parse) is left to rmcp, unread.
    fn lets_in(&self, parts: &axum::http::request::Parts) -> bool {
        self.host_allowed(parts) && self.origin_allowed(parts)
    }

    fn host_allowed(&self, parts: &axum::http::request::Parts) -> bool {
        if self.allowed_hosts.is_empty() {
            return true;
        }
        let authority = match parts.headers.get(header::HOST) {
            Some(host) => host.to_str().ok().and_then(|h| axum::http::uri::Authority::try_from(h).ok()),
            None => parts.uri.authority().cloned(),
        };
        let Some(authority) = authority else { return false };
        let host = bare_host(authority.host());
        self.allowed_hosts.iter().any(|allowed| {
            allowed.host.eq_ignore_ascii_case(host) && allowed.port.is_none_or(|p| authority.port_u16() == Some(p))
        })
    }

    fn origin_allowed(&self, parts: &axum::http::request::Parts) -> bool {
        let Some(origin) = parts.headers.get(header::ORIGIN) else { return true };
        if self.allowed_origins.is_empty() {
            return false;
        }
        let Some(origin) = origin.to_str().ok().and_then(parse_origin) else { return false };
        self.allowed_origins.iter().any(|allowed| {
            let Some(allowed_origin) = &allowed.origin else { return false };
            match (allowed_origin, &origin) {
                (None, None) => true,
                (Some((a_scheme, a_host, a_port)), Some((scheme, host, port))) => {
                    let default = match scheme.as_str() {
                        "http" => Some(80),
                        "https" => Some(443),
                        _ => None,
                    };
                    a_scheme == scheme
                        && a_host == host
                        && (allowed.any_port || a_port.is_none_or(|a| port.or(default) == Some(a)))
                }
                _ => false,
            }
        })
    }
}

/// A serialised origin: `None` for `null`, else scheme, host and port.
#[allow(clippy::option_option, reason = "absent (unparsable) and the `null` origin are different answers")]
fn parse_origin(value: &str) -> Option<Option<(String, String, Option<u16>)>> {
    let value = value.trim();
    if value.eq_ignore_ascii_case("null") {
        return Some(None);
    }
    let uri = axum::http::Uri::try_from(value).ok()?;
    let authority = uri.authority()?;
    Some(Some((uri.scheme_str()?.to_ascii_lowercase(), normalize_host(authority.host()), authority.port_u16())))
}

/// A host without the brackets of an IPv6 literal.
fn bare_host(host: &str) -> &str {
    host.trim_matches('[').trim_matches(']')
}

fn normalize_host(host: &str) -> String {
    bare_host(host).to_ascii_lowercase()
}

/// A byte string looked for in every request or response body, with its searcher built once:
/// building one costs more than most of the searches it then runs.
pub(super) type Needle = std::sync::LazyLock<memchr::memmem::Finder<'static>>;

/// Whether `needle` occurs in `bytes`.
pub(super) fn contains(bytes: &[u8], needle: &Needle) -> bool {
    needle.find(bytes).is_some()
}

/// Why a Multi Round-Trip request's parameters are mistyped, put in the HTTP request's extensions
/// by [`mark_malformed_params`] for the handler to answer.
#[derive(Debug, Clone, Copy)]
struct MalformedParams(&'static str);

/// rmcp decodes request parameters into typed structs, so a wrongly typed `inputResponses`,
/// `requestState` or `arguments` never reaches the engine: rmcp refuses the body as undecodable.
/// The protocol calls that invalid params (`-32602`, HTTP 200). A request whose `Host` or `Origin`
/// rmcp would refuse is passed on unread, for rmcp to refuse; otherwise this layer reads the body
/// (at most the configured bytes, 413 beyond, before anything parses it); when its parameters are mistyped it
/// drops the mistyped members and marks the request, so rmcp still runs every check of its own
/// (`Host`, `Origin`, `Accept`, `Content-Type`, the protocol headers) in its own order and only
/// then hands the request to the handler, which answers `-32602` without running anything
/// ([`refuse_marked`]). `inputResponses: null` is refused too: the member is optional, not nullable.
///
/// `Err`: the answer, the request refused (413). `Ok`: the request to pass on, and the id of a
/// call on a 2025-era session (its answer comes on the SSE stream of the response).
async fn mark_malformed_params(
    gate: &Gate,
    request: HttpRequest<Body>,
) -> Result<(HttpRequest<Body>, Option<Value>), Response> {
    let too_large = || (axum::http::StatusCode::PAYLOAD_TOO_LARGE, "request body too large").into_response();
    let (mut parts, body) = request.into_parts();
    if !gate.lets_in(&parts) {
        // rmcp refuses it (403 or 400) before reading anything; so is nothing read here.
        return Ok((HttpRequest::from_parts(parts, body), None));
    }
    let max_body = gate.max_body;
    let announced =
        parts.headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if announced.is_some_and(|n| n > max_body as u64) {
        return Err(too_large());
    }
    let Ok(bytes) = axum::body::to_bytes(body, max_body).await else {
        return Err(too_large());
    };
    if !parts.headers.contains_key(&MCP_NAME)
        && let Some(value) = task_id_header(&bytes)
    {
        parts.headers.insert(MCP_NAME, value);
    }
    // A call on a 2025-era session: its answer comes on the SSE stream of this response.
    let session_call = if parts.headers.contains_key(&MCP_SESSION_ID) {
        own_head(&mut parts);
        request_id(&bytes)
    } else {
        None
    };
    let body = match malformed_params(&bytes) {
        Some((reason, repaired)) => {
            parts.extensions.insert(MalformedParams(reason));
            parts.headers.remove(header::CONTENT_LENGTH);
            Body::from(repaired)
        }
        None => Body::from(bytes),
    };
    Ok((HttpRequest::from_parts(parts, body), session_call))
}

/// Gives a request's head its own bytes. hyper parses the head in place: the URI and every header
/// value are slices of the connection's read buffer, so whoever keeps the head keeps that buffer
/// (8 KiB). rmcp keeps the head in the request's context for as long as the call runs, and a
/// 2025-era session's call or stream can wait for minutes. Copied, the head holds a few hundred
/// bytes, and the buffer goes as soon as hyper lets its own hold go. Stock hyper 1.x holds a read
/// buffer for as long as the connection is open, so this alone frees nothing yet; with hyper
/// releasing it while a read waits on an empty buffer (BENCHMARKS.md measures hyper patched that
/// way) it is 7 KiB less per parked flow, and without this copy the patch frees nothing. Calls of
/// the current revision complete in their request, so only session requests pay for the copy.
fn own_head(parts: &mut axum::http::request::Parts) {
    for value in parts.headers.values_mut() {
        // Bytes that were a header value are one again: the copy cannot fail.
        if let Ok(mut owned) = axum::http::HeaderValue::from_bytes(value.as_bytes()) {
            owned.set_sensitive(value.is_sensitive());
            *value = owned;
        }
    }
    if let Ok(uri) = axum::http::Uri::try_from(parts.uri.to_string()) {
        parts.uri = uri;
    }
}

/// The routing header of the Tasks extension's methods.
const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");

/// The header of a 2025-era session.
pub(super) const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");

/// The member the 2025-era strip looks for.
static ELICITATION_ID: Needle = Needle::new(|| memchr::memmem::Finder::new(b"elicitationId"));

/// For a `tasks/get`, `tasks/update` or `tasks/cancel` request sent without `Mcp-Name` (the
/// extension says the client MUST send it; FastMCP's task client does not), the header its
/// `params.taskId` names: the task is found wherever its record lives, so the server needs the
/// header for nothing but the check that it matches, and a missing one is supplied rather than
/// refused. A header that is present and differs is still refused (`-32020`).
fn task_id_header(bytes: &[u8]) -> Option<axum::http::HeaderValue> {
    #[derive(serde::Deserialize)]
    struct Params {
        #[serde(rename = "taskId")]
        task_id: Option<String>,
    }
    #[derive(serde::Deserialize)]
    struct Head {
        method: Option<String>,
        params: Option<Params>,
    }
    static NEEDLE: Needle = Needle::new(|| memchr::memmem::Finder::new(b"\"tasks/"));
    if !contains(bytes, &NEEDLE) {
        return None;
    }
    let head: Head = serde_json::from_slice(bytes).ok()?;
    let method = head.method?;
    if !matches!(method.as_str(), "tasks/get" | "tasks/update" | "tasks/cancel") {
        return None;
    }
    let id = head.params?.task_id?;
    // Only plain visible ASCII (what the engine mints): anything else would need the header's
    // base64 sentinel, and is left for rmcp to refuse.
    if id.is_empty() || id.len() > 256 || !id.bytes().all(|b| b.is_ascii_graphic()) {
        return None;
    }
    axum::http::HeaderValue::from_str(&id).ok()
}

/// The id of a JSON-RPC request (not a response, not a notification) in `bytes`.
fn request_id(bytes: &[u8]) -> Option<Value> {
    #[derive(serde::Deserialize)]
    struct Head {
        id: Option<Value>,
        method: Option<serde::de::IgnoredAny>,
    }
    let head: Head = serde_json::from_slice(bytes).ok()?;
    head.method.and(head.id)
}

/// The SSE stream of a call on a 2025-era session, passed on as it comes; when it ends without
/// the call's answer (the session ended under it: `DELETE`, its keep-alive, the server closing
/// it), an error for the call is added, so the client's call fails instead of waiting for an
/// answer that will not come.
fn answered_or_failed(
    body: Body,
    id: Value,
) -> impl futures_util::Stream<Item = Result<axum::body::Bytes, axum::Error>> + Send {
    struct Call {
        inner: axum::body::BodyDataStream,
        id: Value,
        /// Bytes of an unfinished line.
        partial: Vec<u8>,
        answered: bool,
        ended: bool,
    }
    let call = Call { inner: body.into_data_stream(), id, partial: Vec::new(), answered: false, ended: false };
    futures_util::stream::unfold(call, |mut call| async move {
        use futures_util::StreamExt as _;
        if call.ended {
            return None;
        }
        match call.inner.next().await {
            Some(Ok(chunk)) => {
                if !call.answered {
                    call.partial.extend_from_slice(&chunk);
                    let complete = call.partial.iter().rposition(|b| *b == b'\n').map_or(0, |at| at + 1);
                    call.answered = call.partial[..complete]
                        .split(|b| *b == b'\n')
                        .filter_map(|line| line.strip_prefix(b"data:"))
                        .any(|data| answers(data, &call.id));
                    call.partial.drain(..complete);
                    if call.partial.len() > MAX_REWRITE_BODY {
                        // A line this long is no answer rmcp writes; stop looking.
                        call.answered = true;
                    }
                }
                Some((Ok(chunk), call))
            }
            Some(Err(error)) => {
                call.ended = true;
                Some((Err(error), call))
            }
            None if call.answered => None,
            None => {
                call.ended = true;
                let error = serde_json::json!({"jsonrpc": "2.0", "id": call.id, "error": {
                    "code": crate::wire::codes::INTERNAL_ERROR,
                    "message": "the session ended before this call finished"}});
                Some((Ok(axum::body::Bytes::from(format!("data: {error}\n\n"))), call))
            }
        }
    })
}

/// Whether an SSE `data:` payload is the answer (result or error) to request `id`.
fn answers(data: &[u8], id: &Value) -> bool {
    static NEEDLE: Needle = Needle::new(|| memchr::memmem::Finder::new(b"\"id\""));
    if !contains(data, &NEEDLE) {
        return false;
    }
    let Ok(message) = serde_json::from_slice::<Value>(data.trim_ascii()) else { return false };
    message.get("method").is_none()
        && message.get("id") == Some(id)
        && (message.get("result").is_some() || message.get("error").is_some())
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
/// removed. This layer drops it from `input_required` responses, so what goes on the wire is
/// exactly the revision's shape: JSON bodies (`json_response(true)`) and the events of SSE
/// streams (rmcp's default), whatever else the server's `StreamableHttpServerConfig` says.
async fn strip_legacy_fields(response: Response) -> Response {
    let content_type = response.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    if content_type.starts_with("text/event-stream") {
        let (parts, body) = response.into_parts();
        return Response::from_parts(parts, Body::from_stream(sse_stripped(body)));
    }
    if !content_type.starts_with("application/json") {
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

/// An SSE body with [`rewrite_input_required`] applied to each `data:` line, passed on line by
/// line as it arrives (a pushed request, a keep-alive, the priming event are never held back).
/// rmcp writes each JSON-RPC message on one `data:` line; a line longer than
/// [`MAX_REWRITE_BODY`] passes untouched.
fn sse_stripped(body: Body) -> impl futures_util::Stream<Item = Result<axum::body::Bytes, axum::Error>> + Send {
    struct Lines {
        inner: axum::body::BodyDataStream,
        buffer: Vec<u8>,
        ended: bool,
    }
    let lines = Lines { inner: body.into_data_stream(), buffer: Vec::new(), ended: false };
    futures_util::stream::unfold(lines, |mut lines| async move {
        use futures_util::StreamExt as _;
        loop {
            if let Some(last) = lines.buffer.iter().rposition(|b| *b == b'\n') {
                let rest = lines.buffer.split_off(last + 1);
                let complete = std::mem::replace(&mut lines.buffer, rest);
                return Some((Ok(axum::body::Bytes::from(strip_sse_lines(complete))), lines));
            }
            if lines.buffer.len() > MAX_REWRITE_BODY || (lines.ended && !lines.buffer.is_empty()) {
                let passed = std::mem::take(&mut lines.buffer);
                return Some((Ok(axum::body::Bytes::from(passed)), lines));
            }
            if lines.ended {
                return None;
            }
            match lines.inner.next().await {
                Some(Ok(chunk)) => lines.buffer.extend_from_slice(&chunk),
                Some(Err(error)) => {
                    lines.ended = true;
                    lines.buffer.clear();
                    return Some((Err(error), lines));
                }
                None => lines.ended = true,
            }
        }
    })
}

/// Complete SSE lines (each ending in `\n`), each `data:` line put right.
fn strip_sse_lines(lines: Vec<u8>) -> Vec<u8> {
    if !contains(&lines, &ELICITATION_ID) {
        return lines;
    }
    let mut out = Vec::with_capacity(lines.len());
    for line in lines.split_inclusive(|b| *b == b'\n') {
        let rewritten = line.strip_prefix(b"data:").and_then(|data| {
            let ending = if data.ends_with(b"\r\n") { 2 } else { 1 };
            let payload = &data[..data.len() - ending];
            let payload = payload.strip_prefix(b" ").unwrap_or(payload);
            rewrite_input_required(payload).map(|json| (json, &data[data.len() - ending..]))
        });
        match rewritten {
            Some((json, ending)) => {
                out.extend_from_slice(b"data: ");
                out.extend_from_slice(&json);
                out.extend_from_slice(ending);
            }
            None => out.extend_from_slice(line),
        }
    }
    out
}

pub(super) fn rewrite_input_required(bytes: &[u8]) -> Option<Vec<u8>> {
    // Cheap pre-check: most responses are not input-required results.
    if !contains(bytes, &ELICITATION_ID) {
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

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failing test should stop loudly")]
mod tests {
    use futures_util::StreamExt as _;
    use serde_json::json;

    use super::*;

    /// A head parsed in place (its URI and header values slices of one buffer, as hyper parses it)
    /// holds that buffer until `own_head` copies it out; the copy keeps every value and the
    /// sensitive mark.
    #[test]
    fn an_owned_head_holds_nothing_of_the_buffer_it_was_parsed_from() {
        let buffer = axum::body::Bytes::from(b"/mcp?x=1 application/json secret-token".to_vec());
        let slice = |from: usize, to: usize| buffer.slice(from..to);
        let (mut parts, ()) = HttpRequest::new(()).into_parts();
        parts.uri = axum::http::Uri::from_maybe_shared(slice(0, 8)).unwrap();
        parts.headers.insert(header::CONTENT_TYPE, axum::http::HeaderValue::from_maybe_shared(slice(9, 25)).unwrap());
        let mut token = axum::http::HeaderValue::from_maybe_shared(slice(26, 38)).unwrap();
        token.set_sensitive(true);
        parts.headers.insert(header::AUTHORIZATION, token);
        assert!(!buffer.is_unique(), "the parsed head shares the buffer");

        own_head(&mut parts);

        assert!(buffer.is_unique(), "the owned head still holds the buffer");
        assert_eq!(parts.uri, "/mcp?x=1");
        assert_eq!(parts.headers[header::CONTENT_TYPE], "application/json");
        assert_eq!(parts.headers[header::AUTHORIZATION], "secret-token");
        assert!(parts.headers[header::AUTHORIZATION].is_sensitive());
    }

    /// An `input_required` result on an SSE stream loses `elicitationId`, however the stream is cut
    /// into chunks; every other line passes byte for byte.
    #[tokio::test]
    async fn sse_events_lose_elicitation_id_whatever_the_chunks() {
        let result = json!({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "input_required", "inputRequests": {
            "pay": {"method": "elicitation/create", "params": {"mode": "url", "message": "m", "url": "https://p.example/1", "elicitationId": ""}}}}});
        let pushed = json!({"jsonrpc": "2.0", "id": 0, "method": "elicitation/create", "params": {"mode": "url", "elicitationId": "x"}});
        let stream = format!("id: 0\nretry: 3000\ndata: \n\ndata: {pushed}\n\ndata: {result}\r\n\n: ping\n\n");
        for chunk in [1, 7, 64, stream.len()] {
            let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
                stream.as_bytes().chunks(chunk).map(|c| Ok(c.to_vec())).collect();
            let body = Body::from_stream(futures_util::stream::iter(chunks));
            let out: Vec<u8> = sse_stripped(body).map(|c| c.unwrap().to_vec()).collect::<Vec<_>>().await.concat();
            let out = String::from_utf8(out).unwrap();
            let expected = json!({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "input_required", "inputRequests": {
                "pay": {"method": "elicitation/create", "params": {"mode": "url", "message": "m", "url": "https://p.example/1"}}}}});
            assert_eq!(
                out,
                format!("id: 0\nretry: 3000\ndata: \n\ndata: {pushed}\n\ndata: {expected}\r\n\n: ping\n\n"),
                "chunks of {chunk}"
            );
        }
    }
}
