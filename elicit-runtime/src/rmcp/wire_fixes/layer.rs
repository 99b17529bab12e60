//! Streamable HTTP: the one middleware that applies the HTTP wire fixes around any router serving
//! rmcp ([`wire_layer`]), and the gate that decides which request bodies it reads.
//!
//! **rmcp behaviour it works around** (rmcp 3.11.0, still so): rmcp reads and decodes the body
//! itself and offers no hook between the two, so the fixes that need the request's bytes
//! ([`mistyped_params`](super::mistyped_params), [`task_header`](super::task_header),
//! [`session_calls`](super::session_calls)) read it here first, bounded as rmcp bounds it (413),
//! and only when rmcp's own `Host` and `Origin` checks would let the request in (a request rmcp
//! refuses with 403 is handed to it unread).
//!
//! **Shown by** `tests/adapter/http_edge.rs` (413 before any parse, 403 before 413, the mistyped
//! check after rmcp's header checks) and every HTTP test of `tests/adapter/`.

use std::sync::Arc;

use ::rmcp::transport::StreamableHttpServerConfig;
use axum::body::Body;
use axum::http::{HeaderValue, Request as HttpRequest, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::elicitation_id::strip_elicitation_id;
use super::mistyped_params::{MalformedParams, malformed_params};
use super::session_calls::{MCP_SESSION_ID, answered_or_failed, own_head, request_id};
use super::task_header::{MCP_NAME, task_id_header};

/// The default bound on a request body.
pub const DEFAULT_MAX_REQUEST_BODY: usize = 4 * 1024 * 1024;

/// Puts right, around a router serving rmcp's `StreamableHttpService` (yours or
/// [`McpServer::http_router`](crate::rmcp::McpServer::http_router)'s), what rmcp gets wrong on the wire: a Multi Round-Trip request
/// whose `inputResponses`, `requestState` or `arguments` is mistyped is marked for `-32602`
/// (answered by [`ToolCall`](crate::rmcp::ToolCall) and [`Elicitation::call_tool`](crate::rmcp::Elicitation::call_tool),
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
    put_right_around(&gate, request, |request, _| next.run(request)).await
}

/// What [`wire_layer`] does to a request and its response, around `serve`: the layer calls it
/// with the rest of the router, [`McpServer::http_router`](crate::rmcp::McpServer::http_router) with
/// its service directly (a middleware of axum's costs a boxed, cloned service and a boxed future
/// on every request). `serve` is also told whether the request is [`Stateless`].
pub(crate) async fn put_right_around<F, Fut>(gate: &Gate, request: HttpRequest<Body>, serve: F) -> Response
where
    F: FnOnce(HttpRequest<Body>, Stateless) -> Fut,
    Fut: std::future::Future<Output = Response>,
{
    let (request, session_call, stateless) = match mark_malformed_params(gate, request).await {
        Ok(marked) => marked,
        Err(refused) => return refused,
    };
    let response = strip_elicitation_id(serve(request, stateless).await).await;
    // Only a session's call is watched, and only when it is answered on a stream.
    let Some(id) = session_call else { return response };
    let is_sse = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !is_sse {
        return response;
    }
    let (parts, body) = response.into_parts();
    Response::from_parts(parts, Body::from_stream(answered_or_failed(body, id)))
}

/// Whether rmcp, serving 2025-era sessions beside 2026-07-28 requests, surely serves a request
/// statelessly, seen from its head and body before rmcp parses it: a `POST` naming revision
/// 2026-07-28 in its `MCP-Protocol-Version` header, naming no session, and whose body has no
/// `"initialize"` anywhere. rmcp's session routing sends such a request to its stateless path
/// unless the routing's own checks refuse it (its `MCP-Protocol-Version` header, its `_meta`
/// protocol version), checks that path runs too; [`McpServer::http_router`](crate::rmcp::McpServer::http_router)
/// hands it to a service without session routing, which skips the routing's decoding and checks
/// of the request's `_meta`. The one difference: a request both with a `_meta` protocol version
/// missing or not matching its header and with `Mcp-Method` or `Mcp-Name` headers that do not match
/// its body is refused for the latter (the stateless path checks those headers first), where
/// the routing refused it for the former.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stateless(pub(crate) bool);

/// The revision whose requests are stateless, as the `MCP-Protocol-Version` header names it.
const STATELESS_REVISION: &[u8] = b"2026-07-28";
/// The method only a 2025-era session opens with.
static INITIALIZE: super::Needle = super::Needle::new(|| memchr::memmem::Finder::new(b"\"initialize\""));
/// The header naming a request's revision.
const MCP_PROTOCOL_VERSION: header::HeaderName = header::HeaderName::from_static("mcp-protocol-version");

/// [`Stateless`], for a request of `method` whose body is `bytes`, from what its head says
/// ([`Head`]): whether its `MCP-Protocol-Version` is revision 2026-07-28 (`revision`), whether it
/// names a session (`in_session`).
fn surely_stateless(method: &axum::http::Method, revision: bool, in_session: bool, bytes: &[u8]) -> Stateless {
    Stateless(revision && !in_session && method == axum::http::Method::POST && !super::contains(bytes, &INITIALIZE))
}

/// The request headers the layer reads, found in one walk over the head: a lookup by name hashes
/// the name and probes, and six of them cost more than walking the ten or so headers a request
/// carries. Each value is the first of its name, as `HeaderMap::get` answers.
#[derive(Debug, Default)]
struct Head<'a> {
    host: Option<&'a HeaderValue>,
    origin: Option<&'a HeaderValue>,
    content_length: Option<&'a HeaderValue>,
    protocol_version: Option<&'a HeaderValue>,
    /// Whether it names its `Mcp-Name`.
    mcp_name: bool,
    /// Whether it names a session (`Mcp-Session-Id`).
    session: bool,
}

impl<'a> Head<'a> {
    fn of(headers: &'a axum::http::HeaderMap) -> Self {
        let mut head = Head::default();
        for (name, value) in headers {
            let first = if name == header::HOST {
                &mut head.host
            } else if name == header::CONTENT_LENGTH {
                &mut head.content_length
            } else if name == header::ORIGIN {
                &mut head.origin
            } else if name == MCP_PROTOCOL_VERSION {
                &mut head.protocol_version
            } else {
                head.mcp_name |= name == MCP_NAME;
                head.session |= name == MCP_SESSION_ID;
                continue;
            };
            first.get_or_insert(value);
        }
        head
    }

    /// Whether its `MCP-Protocol-Version` names revision 2026-07-28.
    fn stateless_revision(&self) -> bool {
        self.protocol_version.is_some_and(|v| v.as_bytes() == STATELESS_REVISION)
    }
}

/// What rmcp lets in, checked before a body is read. The lists are parsed once, here, as rmcp
/// reads them; a request is then checked without allocating.
#[derive(Debug)]
pub(crate) struct Gate {
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
    pub(crate) fn new(config: &StreamableHttpServerConfig) -> Self {
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
    /// `head`: the request's `Host` and `Origin`, as [`Head::of`] found them.
    fn lets_in(&self, parts: &axum::http::request::Parts, head: &Head<'_>) -> bool {
        self.host_allowed(parts, head.host) && self.origin_allowed(head.origin)
    }

    fn host_allowed(&self, parts: &axum::http::request::Parts, host: Option<&HeaderValue>) -> bool {
        if self.allowed_hosts.is_empty() {
            return true;
        }
        // The usual `Host` (a name or an IPv4 address, maybe a port) is split where it stands;
        // building an `Authority` copies the value onto the heap on every request.
        if let Some((host, port)) = host.and_then(|h| plain_authority(h.as_bytes())) {
            return self.allowed_hosts.iter().any(|allowed| {
                allowed.host.as_bytes().eq_ignore_ascii_case(host) && allowed.port.is_none_or(|p| port == Some(p))
            });
        }
        let authority = match host {
            Some(host) => host.to_str().ok().and_then(|h| axum::http::uri::Authority::try_from(h).ok()),
            None => parts.uri.authority().cloned(),
        };
        let Some(authority) = authority else { return false };
        let host = bare_host(authority.host());
        self.allowed_hosts.iter().any(|allowed| {
            allowed.host.eq_ignore_ascii_case(host) && allowed.port.is_none_or(|p| authority.port_u16() == Some(p))
        })
    }

    fn origin_allowed(&self, origin: Option<&HeaderValue>) -> bool {
        let Some(origin) = origin else { return true };
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

/// `host[:port]` split as `Authority` splits it, for a host of letters, digits, `.` and `-` (a
/// name or an IPv4 address) and a port of one to five digits that fits in `u16`; `None` for
/// anything else (an IPv6 literal, an empty or oversized port, other characters), which
/// `Authority` then reads. The host stays bytes (ASCII, as checked): compared as they are.
fn plain_authority(value: &[u8]) -> Option<(&[u8], Option<u16>)> {
    let (host, port) = match value.iter().position(|b| *b == b':') {
        Some(at) => (&value[..at], Some(&value[at + 1..])),
        None => (value, None),
    };
    if host.is_empty() || !host.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'.' || *b == b'-') {
        return None;
    }
    let port = match port {
        None => None,
        Some(digits) if (1..=5).contains(&digits.len()) && digits.iter().all(u8::is_ascii_digit) => {
            let port = digits.iter().fold(0u32, |port, digit| port * 10 + u32::from(digit - b'0'));
            Some(u16::try_from(port).ok()?)
        }
        Some(_) => return None,
    };
    Some((host, port))
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

/// rmcp decodes request parameters into typed structs, so a wrongly typed `inputResponses`,
/// `requestState` or `arguments` never reaches the engine: rmcp refuses the body as undecodable.
/// The protocol calls that invalid params (`-32602`, HTTP 200). A request whose `Host` or `Origin`
/// rmcp would refuse is passed on unread, for rmcp to refuse; otherwise this layer reads the body
/// (at most the configured bytes, 413 beyond, before anything parses it); when its parameters are mistyped it
/// drops the mistyped members and marks the request, so rmcp still runs every check of its own
/// (`Host`, `Origin`, `Accept`, `Content-Type`, the protocol headers) in its own order and only
/// then hands the request to the handler, which answers `-32602` without running anything
/// ([`refuse_marked`](super::mistyped_params::refuse_marked)). `inputResponses: null` is refused too: the member is optional, not nullable.
///
/// `Err`: the answer, the request refused (413). `Ok`: the request to pass on, the id of a
/// call on a 2025-era session (its answer comes on the SSE stream of the response), and whether
/// rmcp surely serves it statelessly (never for a request passed on unread).
async fn mark_malformed_params(
    gate: &Gate,
    request: HttpRequest<Body>,
) -> Result<(HttpRequest<Body>, Option<Value>, Stateless), Response> {
    let too_large = || (axum::http::StatusCode::PAYLOAD_TOO_LARGE, "request body too large").into_response();
    let (mut parts, body) = request.into_parts();
    let head = Head::of(&parts.headers);
    if !gate.lets_in(&parts, &head) {
        // rmcp refuses it (403 or 400) before reading anything; so is nothing read here.
        return Ok((HttpRequest::from_parts(parts, body), None, Stateless(false)));
    }
    let max_body = gate.max_body;
    let announced = head.content_length.and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    // What the rest reads of the head, before the head changes.
    let (named, in_session) = (head.mcp_name, head.session);
    let revision = head.stateless_revision();
    if announced.is_some_and(|n| n > max_body as u64) {
        return Err(too_large());
    }
    let Some(bytes) = super::read_bounded(body, max_body).await else {
        return Err(too_large());
    };
    if !named && let Some(value) = task_id_header(&bytes) {
        parts.headers.insert(MCP_NAME, value);
    }
    // A call on a 2025-era session: its answer comes on the SSE stream of this response.
    let session_call = if in_session {
        own_head(&mut parts);
        request_id(&bytes)
    } else {
        None
    };
    let stateless = surely_stateless(&parts.method, revision, in_session, &bytes);
    let body = match malformed_params(&bytes) {
        Some((reason, repaired)) => {
            parts.extensions.insert(MalformedParams(reason));
            parts.headers.remove(header::CONTENT_LENGTH);
            Body::from(repaired)
        }
        None => Body::from(bytes),
    };
    Ok((HttpRequest::from_parts(parts, body), session_call, stateless))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failing test should stop loudly")]
mod tests {
    use super::{Head, Stateless, plain_authority, surely_stateless};

    /// Only a `POST` naming revision 2026-07-28, no session, and no `initialize` in its body is
    /// surely stateless.
    #[test]
    fn surely_stateless_takes_only_stateless_requests() {
        let call = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}"#;
        let initialize = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;
        let parts = |method: &str, headers: &[(&str, &str)]| {
            let mut request = axum::http::Request::builder().method(method).uri("/mcp");
            for (name, value) in headers {
                request = request.header(*name, *value);
            }
            request.body(()).unwrap().into_parts().0
        };
        let revision = ("MCP-Protocol-Version", "2026-07-28");
        let session = ("Mcp-Session-Id", "abc");
        // As the layer calls it: whether the head names a session, looked up once.
        let stateless = |method: &str, headers: &[(&str, &str)], body: &[u8]| {
            let parts = parts(method, headers);
            let head = Head::of(&parts.headers);
            surely_stateless(&parts.method, head.stateless_revision(), head.session, body)
        };
        assert_eq!(stateless("POST", &[revision], call), Stateless(true));
        assert_eq!(stateless("POST", &[revision], initialize), Stateless(false));
        assert_eq!(stateless("POST", &[revision, session], call), Stateless(false));
        assert_eq!(stateless("POST", &[("MCP-Protocol-Version", "2025-11-25")], call), Stateless(false));
        assert_eq!(stateless("POST", &[], call), Stateless(false));
        assert_eq!(stateless("GET", &[revision], b""), Stateless(false));
    }

    /// The walk over the head finds what lookups by name find: the first value of each name,
    /// whatever the case of the names and wherever they stand.
    #[test]
    fn head_reads_what_lookups_read() {
        let heads: [&[(&str, &str)]; 4] = [
            &[],
            &[("Host", "a:1"), ("Content-Length", "5"), ("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Name", "x")],
            &[("origin", "http://o"), ("host", "b"), ("HOST", "c"), ("mcp-session-id", "s"), ("Origin", "http://p")],
            &[("x-other", "1"), ("mcp-protocol-version", "2025-11-25"), ("MCP-PROTOCOL-VERSION", "2026-07-28")],
        ];
        for headers in heads {
            let mut map = axum::http::HeaderMap::new();
            for (name, value) in headers {
                map.append(axum::http::HeaderName::try_from(*name).unwrap(), value.parse().unwrap());
            }
            let head = Head::of(&map);
            assert_eq!(head.host, map.get("host"), "{headers:?}");
            assert_eq!(head.origin, map.get("origin"), "{headers:?}");
            assert_eq!(head.content_length, map.get("content-length"), "{headers:?}");
            assert_eq!(head.protocol_version, map.get("mcp-protocol-version"), "{headers:?}");
            assert_eq!(head.mcp_name, map.contains_key("mcp-name"), "{headers:?}");
            assert_eq!(head.session, map.contains_key("mcp-session-id"), "{headers:?}");
        }
    }

    /// Where the short path splits a `Host`, it splits it as `Authority` does; what it declines
    /// is left to `Authority`.
    #[test]
    fn plain_authority_agrees_with_authority() {
        for value in ["127.0.0.1:8941", "localhost", "LocalHost:80", "a-b.example:65535", "x:0", "h:00080"] {
            let authority = axum::http::uri::Authority::try_from(value).unwrap();
            assert_eq!(
                plain_authority(value.as_bytes()),
                Some((authority.host().as_bytes(), authority.port_u16())),
                "{value}"
            );
        }
        for value in
            ["[::1]:80", "localhost:", "h:65536", "h:123456", "h:8a", "user@h", "", ":80", "h:80:81", "h\u{e9}"]
        {
            assert_eq!(plain_authority(value.as_bytes()), None, "{value}");
        }
    }
}
