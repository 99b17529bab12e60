//! A scriptable MCP server over Streamable HTTP on loopback: it answers `server/discover` and
//! `tools/list` (one tool, `trap`) correctly and hands every `tools/call` to the test's script,
//! which may answer anything at all — the hostile server of the robustness tests, and a
//! recording server for tests that must see what the client sent.

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// The one tool the mock lists.
pub const TOOL: &str = "trap";

/// What the mock answers to a `tools/call`.
pub enum Reply {
    /// A JSON-RPC result with this `result`.
    Result(Value),
    /// A JSON-RPC error.
    #[allow(missing_docs, reason = "the JSON-RPC error's own members")]
    Error { code: i64, message: String },
    /// Raw bytes as the HTTP body, whatever they are.
    #[allow(missing_docs, reason = "the HTTP status, Content-Type and body as sent")]
    Raw { status: u16, content_type: &'static str, body: Vec<u8> },
    /// No answer at all: the request hangs until the client gives up.
    Hang,
}

type Script = dyn Fn(&Value, usize) -> Reply + Send + Sync;

struct Shared {
    script: Box<Script>,
    /// The `params` of every `tools/call`, in order.
    calls: Mutex<Vec<Value>>,
}

/// A running mock server; stopped when dropped.
pub struct MockServer {
    addr: std::net::SocketAddr,
    shared: Arc<Shared>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl MockServer {
    /// Starts a mock whose `tools/call` answers come from `script(params, n)` (n counts calls from
    /// 0).
    pub fn start(script: impl Fn(&Value, usize) -> Reply + Send + Sync + 'static) -> MockServer {
        let shared = Arc::new(Shared { script: Box::new(script), calls: Mutex::new(Vec::new()) });
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime for the mock server");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        listener.set_nonblocking(true).expect("non-blocking listener");
        let addr = listener.local_addr().expect("local address");
        let app = axum::Router::new().route("/mcp", axum::routing::post(handle)).with_state(shared.clone());
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("tokio listener");
            let _ = axum::serve(listener, app).await;
        });
        MockServer { addr, shared, runtime: Some(runtime) }
    }

    /// `http://ADDR/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// The `params` of every `tools/call` received so far.
    pub fn calls(&self) -> Vec<Value> {
        self.shared.calls.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

async fn handle(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return json_response(
            StatusCode::BAD_REQUEST,
            &json!({"jsonrpc": "2.0", "id": null,
            "error": {"code": -32700, "message": "parse error"}}),
        );
    };
    let Some(id) = request.get("id").cloned() else {
        // A notification.
        return StatusCode::ACCEPTED.into_response();
    };
    let method = request.get("method").and_then(Value::as_str).unwrap_or_default();
    let params = request.get("params").cloned().unwrap_or(Value::Null);
    let result = match method {
        "server/discover" => json!({
            "resultType": "complete",
            "ttlMs": 0,
            "cacheScope": "private",
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile-mock", "version": "0.0.1"}
        }),
        "tools/list" => json!({
            "resultType": "complete",
            "tools": [{"name": TOOL, "description": "misbehaves", "inputSchema": {"type": "object", "properties": {}}}]
        }),
        "tools/call" => {
            let n = {
                let mut calls = shared.calls.lock().unwrap_or_else(|e| e.into_inner());
                calls.push(params.clone());
                calls.len() - 1
            };
            match (shared.script)(&params, n) {
                Reply::Result(result) => result,
                Reply::Error { code, message } => {
                    return json_response(
                        StatusCode::OK,
                        &json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": code, "message": message}}),
                    );
                }
                Reply::Raw { status, content_type, body } => {
                    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
                    return (status, [(header::CONTENT_TYPE, content_type)], body).into_response();
                }
                Reply::Hang => std::future::pending().await,
            }
        }
        _ => {
            return json_response(
                StatusCode::NOT_FOUND,
                &json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": "method not found"}}),
            );
        }
    };
    json_response(StatusCode::OK, &json!({"jsonrpc": "2.0", "id": id, "result": result}))
}
