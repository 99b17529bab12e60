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

/// All of `body`, as `axum::body::to_bytes(body, max)` reads it (its data frames joined, trailers
/// skipped), `None` where that fails: the body fails, or its data passes `max` bytes. Cheaper for
/// the usual body of one frame, which is handed back as it came (no collecting buffers, no copy),
/// and a body that says it has ended is not polled again: the layer reads every request body and
/// every JSON answer.
pub(super) async fn read_bounded(mut body: axum::body::Body, max: usize) -> Option<axum::body::Bytes> {
    use axum::body::HttpBody as _;
    let mut first: Option<axum::body::Bytes> = None;
    let mut joined: Vec<u8> = Vec::new();
    let mut total = 0usize;
    while !body.is_end_stream() {
        let Some(frame) = std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await else {
            break;
        };
        let Ok(data) = frame.ok()?.into_data() else { continue };
        total = total.checked_add(data.len())?;
        if total > max {
            return None;
        }
        match &first {
            None => first = Some(data),
            Some(head) => {
                if joined.is_empty() {
                    joined.extend_from_slice(head);
                }
                joined.extend_from_slice(&data);
            }
        }
    }
    Some(if joined.is_empty() { first.unwrap_or_default() } else { axum::body::Bytes::from(joined) })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failing test should stop loudly")]
mod tests {
    use axum::body::{Body, Bytes};

    use super::read_bounded;

    /// A body of `chunks`, then an error if `fails`.
    fn body(chunks: &[&[u8]], fails: bool) -> Body {
        let mut items: Vec<Result<Vec<u8>, std::io::Error>> = chunks.iter().map(|c| Ok(c.to_vec())).collect();
        if fails {
            items.push(Err(std::io::Error::other("cut")));
        }
        Body::from_stream(futures_util::stream::iter(items))
    }

    /// Whatever the frames, the bound and a failing body, the answer is `to_bytes`'s.
    #[tokio::test]
    async fn reads_what_to_bytes_reads() {
        let text: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"plain"}}"#;
        let mut compared = 0;
        for cut in [1, 2, 7, 30, text.len() - 1, text.len()] {
            let chunks: Vec<&[u8]> = text.chunks(cut).collect();
            for max in [0, 1, cut, text.len() - 1, text.len(), text.len() + 1, usize::MAX] {
                for fails in [false, true] {
                    let expected = axum::body::to_bytes(body(&chunks, fails), max).await.ok();
                    assert_eq!(
                        read_bounded(body(&chunks, fails), max).await,
                        expected,
                        "cut {cut}, max {max}, fails {fails}"
                    );
                    compared += 1;
                }
            }
        }
        assert_eq!(compared, 84);
        // Empty bodies, of no frame and of empty frames, and a body of one frame as it came.
        assert_eq!(read_bounded(Body::empty(), 0).await, Some(Bytes::new()));
        assert_eq!(read_bounded(body(&[b"", b""], false), 0).await, Some(Bytes::new()));
        assert_eq!(read_bounded(Body::from(text), text.len()).await, Some(Bytes::from_static(text)));
        assert_eq!(read_bounded(Body::from(text), text.len() - 1).await, None);
    }
}
