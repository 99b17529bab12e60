//! `elicitationId` dropped from the URL-mode input requests of an `input_required` result.
//!
//! **rmcp behaviour corrected** (rmcp 3.11.0, still so): rmcp has one type for a URL-mode
//! elicitation, the 2025-era `elicitation/create` request, and serialises it with
//! `elicitationId` inside `inputRequests` too, a member revision 2026-07-28 removed from input
//! requests. It is dropped from `input_required` results only (a 2025-era pushed request keeps
//! it: that revision requires it), in JSON answers, on SSE streams and on stdio.
//!
//! **Shown by** `tests/adapter/wire_schema.rs` (every result checked against the revision's
//! schema), the 2026-07-28 URL-mode flows of `tests/adapter/streamable_http/era_2026.rs` and
//! `tests/adapter/stdio/era_2026.rs`, and this module's unit test (SSE cut into any chunks).

use axum::body::{Body, HttpBody as _};
use axum::http::header;
use axum::response::Response;
use serde_json::Value;

use crate::wire::{INPUT_REQUESTS, RESULT_INPUT_REQUIRED, RESULT_TYPE};

use super::{Needle, contains};

/// The member the 2025-era strip looks for.
static ELICITATION_ID: Needle = Needle::new(|| memchr::memmem::Finder::new(b"elicitationId"));

/// Largest response body the rewrite below will buffer.
pub(super) const MAX_REWRITE_BODY: usize = 4 * 1024 * 1024;

/// rmcp serialises URL-mode elicitations with `elicitationId`, a member that revision 2026-07-28
/// removed. This layer drops it from `input_required` responses, so what goes on the wire is
/// exactly the revision's shape: JSON bodies (`json_response(true)`) and the events of SSE
/// streams (rmcp's default), whatever else the server's `StreamableHttpServerConfig` says.
pub(super) async fn strip_elicitation_id(response: Response) -> Response {
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
    let bytes = match super::read_bounded(body, MAX_REWRITE_BODY).await {
        Some(bytes) => bytes,
        // The body announced its length and then failed to deliver it: nothing to salvage.
        None => {
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
                // rmcp writes an event in one chunk: one with nothing to strip goes on as it came,
                // uncopied (what `strip_sse_lines` would make of it, byte for byte).
                Some(Ok(chunk))
                    if lines.buffer.is_empty() && chunk.ends_with(b"\n") && !contains(&chunk, &ELICITATION_ID) =>
                {
                    return Some((Ok(chunk), lines));
                }
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
