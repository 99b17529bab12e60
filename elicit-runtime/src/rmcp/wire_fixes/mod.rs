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
