//! The `Mcp-Name` header of the Tasks extension's methods, supplied when a client leaves it out.
//!
//! **rmcp behaviour corrected** (rmcp 3.11.0, still so): rmcp's Streamable HTTP service checks a
//! `tasks/get`, `tasks/update` or `tasks/cancel` request's `Mcp-Name` header against its
//! `params.taskId` and refuses the request when the header is missing; FastMCP's task client
//! sends none. The task is found wherever its record lives, so the header is supplied from the
//! body before rmcp sees the request; a header that is present and differs is still refused
//! (`-32020`).
//!
//! **Shown by** `tests/adapter/sdk_clients/fastmcp_tasks.rs` (FastMCP's task client, which sends
//! no `Mcp-Name`).

use axum::http::HeaderName;

use super::{Needle, contains};

/// The routing header of the Tasks extension's methods.
pub(super) const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");

/// For a `tasks/get`, `tasks/update` or `tasks/cancel` request sent without `Mcp-Name` (the
/// extension says the client MUST send it; FastMCP's task client does not), the header its
/// `params.taskId` names: the task is found wherever its record lives, so the server needs the
/// header for nothing but the check that it matches, and a missing one is supplied rather than
/// refused. A header that is present and differs is still refused (`-32020`).
pub(super) fn task_id_header(bytes: &[u8]) -> Option<axum::http::HeaderValue> {
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
