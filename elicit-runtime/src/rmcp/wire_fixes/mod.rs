//! What the adapter corrects in rmcp's wire behaviour, each fix in its module, whose doc names the
//! rmcp behaviour it corrects, the rmcp release that still needs it, and the tests that show it.
//!
//! - [`mistyped_params`]: a Multi Round-Trip request with mistyped `inputResponses`,
//!   `requestState` or `arguments` is `-32602`, not rmcp's "method not found" (HTTP and stdio);
//! - [`elicitation_id`]: `input_required` results lose the `elicitationId` rmcp writes into
//!   URL-mode input requests (HTTP JSON and SSE, stdio);
//! - [`task_header`]: a Tasks-extension request without `Mcp-Name` gets the one its body names;
//! - [`session_calls`]: a 2025-era session's call always gets an answer, and its request head is
//!   its own;
//! - [`stdio`]: the same fixes on a newline-delimited stream, and `_meta` `serverInfo` on every
//!   2026-07-28 result;
//! - [`layer`]: the one HTTP middleware that applies them ([`wire_layer`]).
//!
//! Checked against rmcp 3.11.0 (the version in `Cargo.lock`); when rmcp corrects one, its module
//! and its call go, and its tests stay.

pub(super) mod elicitation_id;
pub(super) mod layer;
pub(super) mod mistyped_params;
pub(super) mod session_calls;
pub(super) mod stdio;
pub(super) mod task_header;

pub use layer::{DEFAULT_MAX_REQUEST_BODY, wire_layer};
pub use stdio::serve_io_with;

/// A byte string looked for in every request or response body, with its searcher built once:
/// building one costs more than most of the searches it then runs.
pub(super) type Needle = std::sync::LazyLock<memchr::memmem::Finder<'static>>;

/// Whether `needle` occurs in `bytes`.
pub(super) fn contains(bytes: &[u8], needle: &Needle) -> bool {
    needle.find(bytes).is_some()
}

/// What `axum::body::to_bytes(body, limit)` reads (the body's data, `Err` when the body fails or
/// holds more than `limit` bytes), without its collecting machinery: a body of one frame, as a
/// small request usually comes and as rmcp writes a JSON answer, is handed back as it came.
pub(super) async fn read_body(mut body: axum::body::Body, limit: usize) -> Result<axum::body::Bytes, ()> {
    use axum::body::HttpBody as _;
    let mut first: Option<axum::body::Bytes> = None;
    let mut joined: Vec<u8> = Vec::new();
    let mut total = 0usize;
    while let Some(frame) = std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await {
        let Ok(frame) = frame else { return Err(()) };
        // Trailers are not data (`to_bytes` leaves them out too).
        let Ok(data) = frame.into_data() else { continue };
        total = total.saturating_add(data.len());
        if total > limit {
            return Err(());
        }
        match first.take() {
            None if joined.is_empty() => first = Some(data),
            Some(earlier) => {
                joined.extend_from_slice(&earlier);
                joined.extend_from_slice(&data);
            }
            None => joined.extend_from_slice(&data),
        }
    }
    Ok(first.unwrap_or_else(|| axum::body::Bytes::from(joined)))
}
