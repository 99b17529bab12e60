//! A call on a 2025-era session over Streamable HTTP: its answer is guaranteed, and its request
//! head is its own.
//!
//! **rmcp behaviour corrected** (rmcp 3.11.0, still so): when a 2025-era session ends while one of
//! its calls is still running (`DELETE`, the session's keep-alive, the server closing it), rmcp
//! ends the call's SSE stream without an answer, and the client waits for one that never comes;
//! [`answered_or_failed`] adds a JSON-RPC error for the call to a stream that ends unanswered.
//! rmcp also keeps the request head (parsed by hyper in place, in the connection's 8 KiB read
//! buffer) in the request context for as long as the call runs; [`own_head`] copies it out.
//!
//! **Shown by** `tests/adapter/streamable_http/era_2025.rs` (a session deleted under a waiting
//! call) and this module's unit test (the head holds nothing of the buffer).

use axum::body::Body;
use axum::http::HeaderName;
use serde_json::Value;

use super::{Needle, contains};

/// The header of a 2025-era session.
pub(crate) const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");

/// Gives a request's head its own bytes. hyper parses the head in place: the URI and every header
/// value are slices of the connection's read buffer, so whoever keeps the head keeps that buffer
/// (8 KiB). rmcp keeps the head in the request's context for as long as the call runs, and a
/// 2025-era session's call or stream can wait for minutes. Copied, the head holds a few hundred
/// bytes, and the buffer goes as soon as hyper lets its own hold go. Stock hyper 1.x holds a read
/// buffer for as long as the connection is open, so this alone frees nothing yet; with hyper
/// releasing it while a read waits on an empty buffer (BENCHMARKS.md measures hyper patched that
/// way) it is 7 KiB less per parked flow, and without this copy the patch frees nothing. Calls of
/// the current revision complete in their request, so only session requests pay for the copy.
pub(super) fn own_head(parts: &mut axum::http::request::Parts) {
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

/// The id of a JSON-RPC request (not a response, not a notification) in `bytes`.
pub(super) fn request_id(bytes: &[u8]) -> Option<Value> {
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
pub(super) fn answered_or_failed(
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
                    if call.partial.len() > super::elicitation_id::MAX_REWRITE_BODY {
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
#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failing test should stop loudly")]
mod tests {
    use axum::http::{Request as HttpRequest, header};

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
}
