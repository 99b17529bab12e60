//! The rmcp adapter on the wire: Streamable HTTP and stdio in each era, the HTTP edge, resources
//! and templates, tool parameters and integer fields, the spec's schema on everything a real
//! `travel-server` sends, servers of one's own, and the official SDK clients against it.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking, with the reason")]

/// The draft app-rendered forms: the App hint on a form ask, and the App as a resource.
mod app_forms;
mod http_edge;
mod integers;
mod mistyped_params;
mod own_server;
mod own_server_clients;
mod plan_trip;
mod presentation;
mod principal;
mod resources;
/// The official SDK clients (2025-11-25) book a trip on a real `travel-server`, FastMCP runs its
/// long-running tool as a task, and the MCP Inspector's web UI draws and submits the forms in
/// each era.
mod sdk_clients {
    mod fastmcp_tasks;
    mod inspector;
    mod python;
    mod typescript;
}
/// A session over a byte pipe, in each era.
mod stdio {
    mod era_2025;
    mod era_2026;
}
mod store_errors;
/// `/mcp` over Streamable HTTP, every message visible, in each era.
mod streamable_http {
    mod era_2025;
    mod era_2026;
}
mod tasks_wire;
mod templates;
mod tool_parameters;
mod wire_schema;
