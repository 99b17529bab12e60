//! The one JSON-RPC-over-HTTP client of the tests, benchmarks and load generator: one request per
//! `POST`, with the headers revision 2026-07-28 requires (`MCP-Protocol-Version`, `Mcp-Method`,
//! `Mcp-Name`), the reply read as JSON or as the matching message of an SSE body, and its id
//! checked. What goes in `params._meta` is the caller's: [`with_meta`] adds the usual keys.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

pub use elicit_runtime::wire::PROTOCOL_VERSION;
use elicit_runtime::wire::{META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION};
use serde_json::{Value, json};

/// Client capabilities declaring form and URL elicitation.
pub fn form_and_url() -> Value {
    json!({"elicitation": {"form": {}, "url": {}}})
}

/// Puts the protocol version and `capabilities` in `params._meta`, unless `params` already sets
/// them (a test may send a wrong version on purpose). `params` that is not an object is left alone.
pub fn with_meta(params: &mut Value, capabilities: &Value) {
    let Some(object) = params.as_object_mut() else { return };
    let meta = object.entry("_meta").or_insert_with(|| json!({}));
    if let Some(meta) = meta.as_object_mut() {
        meta.entry(META_PROTOCOL_VERSION).or_insert_with(|| json!(PROTOCOL_VERSION));
        meta.entry(META_CLIENT_CAPABILITIES).or_insert_with(|| capabilities.clone());
    }
}

/// One request and what came back.
#[derive(Debug, Clone)]
pub struct Posted {
    /// The request as sent.
    pub request: Value,
    /// The HTTP status.
    pub status: u16,
    /// The JSON-RPC response, its id checked.
    pub body: Value,
}

/// A plain MCP client over HTTP. Cloning shares the connection pool and the id counter.
#[derive(Clone, Debug)]
pub struct McpHttp {
    http: reqwest::Client,
    next_id: Arc<AtomicU64>,
}

impl McpHttp {
    /// A client whose every HTTP exchange is bounded by `timeout`, with no proxy (everything it
    /// talks to is a server of ours, usually on loopback).
    /// (Building it fails only where the platform cannot build an HTTP client at all; then it is
    /// reqwest's default client.)
    pub fn new(timeout: Duration) -> McpHttp {
        let http =
            reqwest::Client::builder().no_proxy().timeout(timeout).build().unwrap_or_else(|_| reqwest::Client::new());
        McpHttp { http, next_id: Arc::new(AtomicU64::new(1)) }
    }

    /// The underlying HTTP client, for pages that are not MCP (the payment page).
    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// Sends `method` with `params` as they are to `endpoint` and returns the JSON-RPC response
    /// (a result or an error object) with the HTTP status.
    pub async fn post(&self, endpoint: &str, method: &str, params: Value) -> Result<Posted, String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        // `Mcp-Name` is the tool's (prompt's, ...) name, or the `taskId` of the Tasks extension's
        // methods.
        let named_by = if matches!(method, "tasks/get" | "tasks/update" | "tasks/cancel") { "taskId" } else { "name" };
        let name = params.get(named_by).and_then(Value::as_str).map(str::to_owned);
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut builder = self
            .http
            .post(endpoint)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", PROTOCOL_VERSION)
            .header("Mcp-Method", method);
        if let Some(name) = &name {
            builder = builder.header("Mcp-Name", name);
        }
        let response =
            builder.body(request.to_string()).send().await.map_err(|e| format!("{method} to {endpoint}: {e}"))?;
        let status = response.status().as_u16();
        let sse = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let bytes = response.bytes().await.map_err(|e| format!("{method} to {endpoint}: reading the reply: {e}"))?;
        let body = if sse { sse_message(&bytes, id) } else { serde_json::from_slice(&bytes).ok() };
        let Some(body) = body else {
            return Err(format!(
                "{method} to {endpoint}: HTTP {status}, no JSON-RPC reply: {}",
                String::from_utf8_lossy(&bytes)
            ));
        };
        if body.get("id") != Some(&json!(id)) {
            return Err(format!("{method} to {endpoint}: the reply carries another id: {body}"));
        }
        Ok(Posted { request, status, body })
    }
}

/// The message with id `id` in an SSE body (`data:` lines; one event may span several).
pub fn sse_message(body: &[u8], id: u64) -> Option<Value> {
    let text = std::str::from_utf8(body).ok()?;
    let mut data = String::new();
    let mut found = None;
    let mut flush = |data: &mut String| {
        if let Ok(message) = serde_json::from_str::<Value>(data)
            && message.get("id") == Some(&json!(id))
        {
            found = Some(message);
        }
        data.clear();
    };
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(rest.strip_prefix(' ').unwrap_or(rest));
        } else if line.is_empty() {
            flush(&mut data);
        }
    }
    flush(&mut data);
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_message_in_an_sse_body() {
        let body = b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\n\
                     data: \"id\":7,\"result\":{}}\n\n";
        assert_eq!(sse_message(body, 7), Some(json!({"jsonrpc": "2.0", "id": 7, "result": {}})));
        assert!(sse_message(body, 8).is_none());
    }

    #[test]
    fn meta_keeps_what_the_caller_set() {
        let mut params = json!({"name": "t", "_meta": {META_PROTOCOL_VERSION: "1999-01-01"}});
        with_meta(&mut params, &form_and_url());
        assert_eq!(params["_meta"][META_PROTOCOL_VERSION], "1999-01-01");
        assert_eq!(params["_meta"][META_CLIENT_CAPABILITIES], form_and_url());
    }
}
