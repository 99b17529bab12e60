//! The HTTP edge of the rmcp adapter. `Origin` is validated by default on
//! `/mcp` (loopback origins allowed, others configurable, a request without `Origin` passes), for
//! both eras; request bodies are bounded before anything parses them (413, configurable); and the
//! mistyped-params check answers only once rmcp's `Host`, `Origin` and header checks have passed.
//! One principal, or one anonymous address, at its quota of flow records leaves the store to the
//! others.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use elicit_runtime::rmcp::{McpServer, McpServerBuilder};
use elicit_runtime::server::store::InProcessStore;
use elicit_runtime::server::{Engine, Flow, FlowError};
use elicit_runtime::state::KeyRing;
use elicit_test_support::server::{serve, serve_by_address};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

/// A server whose tool `count` counts its runs in `calls`.
fn builder(calls: &Arc<AtomicUsize>) -> McpServerBuilder {
    let engine = Engine::builder("hardening-http", KeyRing::generate()).build();
    let calls = calls.clone();
    let count = move |_flow: Flow| {
        calls.fetch_add(1, Ordering::SeqCst);
        async { Ok::<_, FlowError>(CallToolResult::success(vec![ContentBlock::text("counted")])) }
    };
    McpServer::builder("hardening-http", "1.0.0", engine)
        .tool(Tool::new("count", "test", Arc::new(JsonObject::new())), count)
}

fn call(params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params})
}

/// POSTs `body` with the headers revision 2026-07-28 asks for, plus `extra` (which override).
async fn post(url: &str, extra: &[(&str, &str)], body: String) -> (u16, String) {
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "count"),
    ];
    for (name, value) in extra {
        headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        headers.push((name, value));
    }
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let mut request = client.post(url).body(body);
    for (name, value) in headers {
        request = request.header(name, value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn origin_is_validated_by_default_and_configurable() {
    let calls = Arc::new(AtomicUsize::new(0));
    let url = serve(builder(&calls).build().unwrap()).await;
    let good = call(json!({"name": "count", "arguments": {}})).to_string();
    // No Origin (not a browser): allowed, as the spec says.
    assert_eq!(post(&url, &[], good.clone()).await.0, 200);
    // Loopback origins, any port: allowed.
    for origin in ["http://localhost:5173", "http://127.0.0.1:8080", "http://[::1]:3000"] {
        assert_eq!(post(&url, &[("Origin", origin)], good.clone()).await.0, 200, "{origin}");
    }
    // Any other origin, `null` and garbage: 403, before the handler runs.
    let before = calls.load(Ordering::SeqCst);
    for origin in ["http://evil.example", "https://localhost.evil.example", "null", "not an origin"] {
        assert_eq!(post(&url, &[("Origin", origin)], good.clone()).await.0, 403, "{origin}");
    }
    assert_eq!(calls.load(Ordering::SeqCst), before, "a refused request must not run the handler");
    // The 2025 era's `initialize` is checked the same way.
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let legacy =
        [("MCP-Protocol-Version", "2025-11-25"), ("Mcp-Method", "initialize"), ("Origin", "http://evil.example")];
    assert_eq!(post(&url, &legacy, initialize.to_string()).await.0, 403);
    let legacy_local =
        [("MCP-Protocol-Version", "2025-11-25"), ("Mcp-Method", "initialize"), ("Origin", "http://localhost:1")];
    assert_eq!(post(&url, &legacy_local, initialize.to_string()).await.0, 200);

    // Configured origins are allowed besides loopback; others still are not.
    let url = serve(builder(&calls).allowed_origins(["https://app.example"]).build().unwrap()).await;
    assert_eq!(post(&url, &[("Origin", "https://app.example")], good.clone()).await.0, 200);
    assert_eq!(post(&url, &[("Origin", "http://localhost:5173")], good.clone()).await.0, 200);
    assert_eq!(post(&url, &[("Origin", "https://other.example")], good).await.0, 403);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_bodies_are_bounded_before_any_parse() {
    let calls = Arc::new(AtomicUsize::new(0));
    let url = serve(builder(&calls).max_request_body(16 * 1024).build().unwrap()).await;
    let before = calls.load(Ordering::SeqCst);
    // Well-formed but too large, and too large and not JSON at all: both 413.
    let padded = call(json!({"name": "count", "arguments": {"pad": "x".repeat(32 * 1024)}})).to_string();
    assert_eq!(post(&url, &[], padded).await.0, 413);
    assert_eq!(post(&url, &[], "[".repeat(64 * 1024)).await.0, 413);
    // Mistyped params too large: the size decides, not the parameter check.
    let mistyped = call(json!({"name": "count", "arguments": {"pad": "x".repeat(32 * 1024)}, "inputResponses": 5}));
    assert_eq!(post(&url, &[], mistyped.to_string()).await.0, 413);
    assert_eq!(calls.load(Ordering::SeqCst), before);
    // A foreign Host or Origin is refused before the body is read: 403, not 413.
    let large = call(json!({"name": "count", "arguments": {"pad": "x".repeat(32 * 1024)}})).to_string();
    assert_eq!(post(&url, &[("Origin", "https://evil.example")], large.clone()).await.0, 403);
    assert_eq!(post(&url, &[("Host", "evil.example")], large).await.0, 403);
    // Under the bound, served.
    let small = call(json!({"name": "count", "arguments": {"pad": "x".repeat(8 * 1024)}})).to_string();
    let (status, body) = post(&url, &[], small).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("counted"), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mistyped_params_are_checked_after_host_origin_and_header_checks() {
    let calls = Arc::new(AtomicUsize::new(0));
    let url = serve(builder(&calls).build().unwrap()).await;
    let mistyped = call(json!({"name": "count", "arguments": {}, "inputResponses": 5})).to_string();
    let before = calls.load(Ordering::SeqCst);
    // A foreign Host: rmcp's DNS-rebinding check answers 403, not our -32602.
    let (status, body) = post(&url, &[("Host", "evil.example")], mistyped.clone()).await;
    assert_eq!(status, 403, "{body}");
    // A foreign Origin: 403.
    let (status, body) = post(&url, &[("Origin", "http://evil.example")], mistyped.clone()).await;
    assert_eq!(status, 403, "{body}");
    // An `Mcp-Name` header contradicting the body: rmcp's header check answers (400).
    let (status, body) = post(&url, &[("Mcp-Name", "other")], mistyped.clone()).await;
    assert_eq!(status, 400, "{body}");
    assert!(!body.contains("`inputResponses` must be an object"), "{body}");
    // A wrong Accept: 406.
    assert_eq!(post(&url, &[("Accept", "text/html")], mistyped.clone()).await.0, 406);
    // Everything else right: -32602 with the reason, HTTP 200, and the handler never ran.
    let (status, body) = post(&url, &[], mistyped).await;
    assert_eq!(status, 200, "{body}");
    let reply: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(reply["id"], json!(7), "{reply}");
    assert_eq!(reply["error"]["code"], json!(-32602), "{reply}");
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("`inputResponses` must be an object"), "{message}");
    for (params, expected) in [
        (json!({"name": "count", "arguments": {}, "inputResponses": null}), "`inputResponses` must be an object"),
        (json!({"name": "count", "arguments": {}, "requestState": 5}), "`requestState` must be the string"),
        (json!({"name": "count", "arguments": 5}), "`arguments` must be an object"),
    ] {
        let (status, body) = post(&url, &[], call(params.clone()).to_string()).await;
        assert_eq!(status, 200, "{params}: {body}");
        let reply: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(reply["error"]["code"], json!(-32602), "{params}: {reply}");
        assert!(reply["error"]["message"].as_str().unwrap().starts_with(expected), "{params}: {reply}");
    }
    assert_eq!(calls.load(Ordering::SeqCst), before, "a mistyped request must not run the handler");
}

/// Opens a 2025-era session (`initialize`) on `mcp_url` from the loopback address `from`; the
/// response, kept unread so the session stays as the client left it.
async fn initialize(mcp_url: &str, from: [u8; 4]) -> reqwest::Response {
    let client = reqwest::Client::builder().no_proxy().local_address(std::net::IpAddr::from(from)).build().unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "anonymous", "version": "1.0.0"}}});
    client
        .post(mcp_url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(init.to_string())
        .send()
        .await
        .unwrap()
}

/// 32 anonymous sessions from one address (the per-client cap), then a 33rd from it and one
/// from another address: the first client is refused, the other is not locked out by it.
pub(crate) async fn one_anonymous_client_cannot_lock_out_the_others(mcp_url: &str) {
    let mut open = Vec::new();
    for i in 0..32 {
        let response = initialize(mcp_url, [127, 0, 0, 1]).await;
        assert_eq!(response.status(), 200, "session {i}");
        open.push(response);
    }
    assert_eq!(initialize(mcp_url, [127, 0, 0, 1]).await.status(), 429, "one client opened a 33rd session");
    let other = initialize(mcp_url, [127, 0, 0, 2]).await;
    assert_eq!(other.status(), 200, "another anonymous client was locked out by the first");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn travel_server_tells_anonymous_clients_apart_by_address() {
    let server = elicit_test_support::server::process::ServerProcess::travel(&elicit_test_support::server::key_b64());
    one_anonymous_client_cannot_lock_out_the_others(&server.mcp_url()).await;
}

/// A 2026-07-28 `tools/call` of `group_booking` as a task, from address `from`: the JSON-RPC reply.
async fn group_booking_task(mcp_url: &str, from: [u8; 4]) -> Value {
    let client = reqwest::Client::builder().no_proxy().local_address(std::net::IpAddr::from(from)).build().unwrap();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "group_booking", "arguments": {"checks": 20},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {
                "elicitation": {"form": {}}, "extensions": {"io.modelcontextprotocol/tasks": {}}}}}});
    let response = client
        .post(mcp_url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "group_booking")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = response.status();
    let bytes = response.bytes().await.unwrap();
    serde_json::from_slice(&bytes)
        .ok()
        .or_else(|| elicit_test_support::mcp::sse_message(&bytes, 1))
        .unwrap_or_else(|| panic!("HTTP {status}: {}", String::from_utf8_lossy(&bytes)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn travel_server_caps_anonymous_tasks_per_address_so_another_still_gets_one() {
    let server = elicit_test_support::server::process::ServerProcess::travel(&elicit_test_support::server::key_b64());
    let url = server.mcp_url();
    // The per-client default (16) from one address: each call becomes a task, which stays live
    // (it checks for a while, then waits for a choice).
    for i in 0..16 {
        let reply = group_booking_task(&url, [127, 0, 0, 1]).await;
        assert_eq!(reply["result"]["resultType"], "task", "task {i}: {reply}");
    }
    let refused = group_booking_task(&url, [127, 0, 0, 1]).await;
    let message = refused["error"]["message"].as_str().unwrap_or_else(|| panic!("not refused: {refused}"));
    assert!(message.contains("runs 16 tasks"), "{refused}");
    // Another anonymous client still gets a task.
    let other = group_booking_task(&url, [127, 0, 0, 2]).await;
    assert_eq!(other["result"]["resultType"], "task", "another address was locked out: {other}");
}

/// A server whose tool `charge` runs a `once` (a flow record each call) on a store that lets each
/// owner hold 2 flow records; its principal is the `X-User` header, when there is one.
fn charging_server() -> McpServer {
    let store = Arc::new(InProcessStore::new().max_flow_records_per_principal(2));
    let engine = Engine::builder("flow-quota", KeyRing::generate()).store(store).build();
    let charge = |flow: Flow| async move {
        let charged: u32 = flow.once("charge", || async { Ok(7) }).await?;
        Ok::<_, FlowError>(CallToolResult::success(vec![ContentBlock::text(format!("charged {charged}"))]))
    };
    McpServer::builder("flow-quota", "1.0.0", engine)
        .principal(|ctx| {
            let parts = ctx.extensions.get::<axum::http::request::Parts>()?;
            parts.headers.get("x-user")?.to_str().ok().map(str::to_owned)
        })
        .tool(Tool::new("charge", "test", Arc::new(JsonObject::new())), charge)
        .build()
        .unwrap()
}

/// `tools/call charge` from address `from`, as `user` when given: the JSON-RPC reply.
async fn charge(url: &str, from: [u8; 4], user: Option<&str>) -> Value {
    let client = reqwest::Client::builder().no_proxy().local_address(std::net::IpAddr::from(from)).build().unwrap();
    let mut request = client
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "charge");
    if let Some(user) = user {
        request = request.header("X-User", user);
    }
    let response = request.body(call(json!({"name": "charge", "arguments": {}})).to_string()).send().await.unwrap();
    let bytes = response.bytes().await.unwrap();
    serde_json::from_slice(&bytes)
        .ok()
        .or_else(|| elicit_test_support::mcp::sse_message(&bytes, 7))
        .unwrap_or_else(|| panic!("not JSON-RPC: {}", String::from_utf8_lossy(&bytes)))
}

/// The reply's error message, when it is the quota of flow records.
fn quota_refusal(reply: &Value) -> bool {
    reply["error"]["code"] == -32603
        && reply["error"]["message"].as_str().is_some_and(|m| m.contains("2 live flow records"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_principal_or_address_at_its_quota_of_flow_records_leaves_room_for_the_others() {
    let server = charging_server();
    let url = serve_by_address(&server).await;
    let (here, there) = ([127, 0, 0, 1], [127, 0, 0, 2]);
    // Alice, from one address, holds her two flow records; her third flow is refused, saying so.
    for i in 0..2 {
        let reply = charge(&url, here, Some("alice")).await;
        assert_eq!(reply["result"]["content"][0]["text"], "charged 7", "alice's flow {i}: {reply}");
    }
    let refused = charge(&url, here, Some("alice")).await;
    assert!(quota_refusal(&refused), "{refused}");
    // Bob, from the same address, is served: a principal counts as itself.
    assert!(charge(&url, here, Some("bob")).await["result"].is_object());
    // Anonymous callers count by address: one at its quota, another still served.
    for _ in 0..2 {
        assert!(charge(&url, here, None).await["result"].is_object());
    }
    assert!(quota_refusal(&charge(&url, here, None).await));
    let reply = charge(&url, there, None).await;
    assert_eq!(reply["result"]["content"][0]["text"], "charged 7", "{reply}");
}

/// One `tools/call` of `count` on `connection`, kept alive: the answer's body.
async fn exchange(connection: &mut TcpStream) -> String {
    let body = call(json!({"name": "count", "arguments": {}})).to_string();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: tools/call\r\nMcp-Name: count\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    connection.write_all(format!("{head}{body}").as_bytes()).await.unwrap();
    let mut reply = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let read = connection.read(&mut chunk).await.unwrap();
        assert!(read > 0, "closed before answering: {}", String::from_utf8_lossy(&reply));
        reply.extend_from_slice(&chunk[..read]);
        let text = String::from_utf8_lossy(&reply).into_owned();
        let Some((head, body)) = text.split_once("\r\n\r\n") else { continue };
        let length = head
            .lines()
            .find_map(|line| line.to_ascii_lowercase().strip_prefix("content-length: ").map(str::to_owned))
            .unwrap_or_else(|| panic!("no content-length: {head}"));
        if body.len() >= length.trim().parse::<usize>().unwrap() {
            return body.to_owned();
        }
    }
}

/// Waits for the server to close `connection`, reading what it still sends.
async fn closed(connection: &mut TcpStream) {
    let mut rest = Vec::new();
    // Only the header read timeout closes these connections; the guard, far past it, fails the
    // test when nothing does (the paused clock jumps to it).
    let read = tokio::time::timeout(Duration::from_secs(3600), connection.read_to_end(&mut rest)).await;
    assert!(read.is_ok(), "the connection is still open: {}", String::from_utf8_lossy(&rest));
}

/// `serve_http` closes a connection that sends no request head within 30 s of when it may: one
/// silent since it connected, one stopped halfway through a head, one idle after its answers. A
/// connection sending its heads in time is served on, each head read given its own 30 s (a third
/// request 40 s after the first is answered). In paused time: the clock jumps to the next timer
/// whenever nothing else can run.
#[tokio::test(start_paused = true)]
async fn serve_http_closes_connections_slow_to_send_a_request_head() {
    let calls = Arc::new(AtomicUsize::new(0));
    let server = builder(&calls).build().unwrap();
    let url = serve_by_address(&server).await;
    let address = url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
    let mut silent = TcpStream::connect(&address).await.unwrap();
    let mut halfway = TcpStream::connect(&address).await.unwrap();
    halfway.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n").await.unwrap();
    let mut busy = TcpStream::connect(&address).await.unwrap();
    for _ in 0..3 {
        let reply = exchange(&mut busy).await;
        assert!(reply.contains("counted"), "{reply}");
        tokio::time::advance(Duration::from_secs(20)).await;
    }
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    closed(&mut silent).await;
    closed(&mut halfway).await;
    closed(&mut busy).await;
}
