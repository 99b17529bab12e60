//! The engine in an rmcp server of one's own (`own-server`: a `#[tool_router]`, a `ServerHandler`
//! written by hand, no `McpServer`): the real `elicit` binary drives its plain tool and its tools
//! that ask by form and by URL, to accept, decline and cancel, over HTTP (both eras) and stdio;
//! and the wire layer puts rmcp right on that server too (no `elicitationId`, `-32602`), on
//! rmcp's default SSE answers; a `#[tool]`'s arguments are completed by a form.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::cli;
use elicit_test_support::server;

use std::process::Command;
use std::time::Duration;

use elicit_test_support::process;
use serde_json::{Value, json};

use cli::{Browser, Run, Sandbox, bins, elicit};
use server::http::Client;

use crate::own_server_clients::Pipe;

/// The bound on every run.
const LIMIT: Duration = Duration::from_secs(60);

/// `elicit`'s flags for a 2025-era session.
pub(crate) const SESSION_2025: &[&str] = &["--protocol", "2025-11-25"];

/// A running `own-server --listen 127.0.0.1:0`, killed when dropped.
pub(crate) struct OwnServer(process::Listening);

pub(crate) fn own_server_bin() -> std::path::PathBuf {
    bins();
    process::debug_bin("own-server")
}

impl OwnServer {
    pub(crate) fn start() -> OwnServer {
        let mut command = Command::new(own_server_bin());
        command.args(["--listen", "127.0.0.1:0"]).env_remove("ELICIT_STATE_KEYS").env_remove("RUST_LOG");
        OwnServer(process::Listening::start(command))
    }

    pub(crate) fn mcp_url(&self) -> String {
        self.0.mcp_url()
    }
}

/// Where a client reaches the server: over HTTP (`elicit --url URL`), or over stdio, starting
/// `own-server --stdio` itself (`elicit --stdio COMMAND`).
pub(crate) enum Target<'a> {
    Http(&'a OwnServer),
    Stdio,
}

/// `elicit call TARGET TOOL --answers FILE --browser SCRIPT [extra]`.
pub(crate) fn call(
    target: &Target<'_>,
    tool: &str,
    sandbox: &Sandbox,
    answers: &Value,
    browser: Browser,
    extra: &[&str],
) -> Run {
    let file = sandbox.answers(answers);
    let browser = sandbox.browser(browser);
    let stdio_command = format!("{} --stdio --page-listen 127.0.0.1:0", own_server_bin().display());
    let (flag, value) = match target {
        Target::Http(server) => ("--url", server.mcp_url()),
        Target::Stdio => ("--stdio", stdio_command),
    };
    let mut args = vec!["call", flag, &value, tool, "--answers", &file, "--browser", &browser];
    args.extend_from_slice(extra);
    elicit(&args, LIMIT)
}

/// The answers file for the form asked under `key`.
fn name(key: &str, action: &str) -> Value {
    let answer = match action {
        "accept" => json!({"action": "accept", "content": {"name": "Ada"}}),
        other => json!({"action": other}),
    };
    json!({ key: answer })
}

/// The form tool, every outcome, on `target`; the ask is keyed `key` (`name` on 2026-07-28; a
/// 2025-era session's pushed asks are numbered).
pub(crate) fn greet_every_outcome(target: &Target<'_>, key: &str, extra: &[&str]) {
    let sandbox = Sandbox::new();
    for (action, expected) in
        [("accept", "Hello, Ada!"), ("decline", "You declined to give your name."), ("cancel", "Greeting cancelled.")]
    {
        call(target, "greet", &sandbox, &name(key, action), Browser::Approve, extra)
            .success()
            .stdout_has(expected)
            .stderr_has(&format!("own-server asks ({key})"));
    }
}

/// The URL tool, every outcome (and a denial on the page), on `target`; the ask is keyed `key`
/// (`approval` on 2026-07-28; a 2025-era session's pushed URL request is keyed by the
/// `elicitationId` the server mints, which `*` answers).
pub(crate) fn approve_every_outcome(target: &Target<'_>, key: &str, extra: &[&str]) {
    let cases = [
        ("accept", Browser::Approve, "Transfer approved.", true),
        ("accept", Browser::Deny, "Transfer denied on the page.", true),
        ("decline", Browser::Approve, "You declined to open the page.", false),
        ("cancel", Browser::Approve, "Transfer cancelled.", false),
    ];
    for (action, browser, expected, opened) in cases {
        let sandbox = Sandbox::new();
        let answers = json!({ key: {"action": action} });
        let run = call(target, "approve", &sandbox, &answers, browser, extra).success().stdout_has(expected);
        assert_eq!(sandbox.opened().len(), usize::from(opened), "{answers}\n{run}");
        if opened {
            assert!(sandbox.opened()[0].contains("/pay/"), "{:?}", sandbox.opened());
            assert_eq!(sandbox.page_answers(), ["HTTP/1.1 200 OK"], "{run}");
        }
    }
}

#[test]
fn the_cli_lists_and_calls_the_plain_tool() {
    let server = OwnServer::start();
    let run = elicit(&["tools", "--url", &server.mcp_url()], LIMIT).success();
    let mut names: Vec<&str> = run.stdout.lines().filter_map(|l| l.split('\t').next()).collect();
    names.sort_unstable();
    assert_eq!(names, ["approve", "count", "greet", "order", "ping", "reserve", "save_card"], "{run}");
    elicit(&["call", "--url", &server.mcp_url(), "ping"], LIMIT).success().stdout_has("pong");
}

/// `reserve` (`TaskSupport::Optional` through `ToolCall::run_task`): a task for `elicit --tasks`,
/// an ordinary call without it, on 2026-07-28 and in a 2025-era session alike; every outcome of
/// its form reaches the handler each way.
#[test]
fn an_optional_task_tool_serves_clients_with_and_without_the_tasks_extension() {
    let server = OwnServer::start();
    let ways: [&[&str]; 3] = [&["--tasks"], &[], SESSION_2025];
    for extra in ways {
        for (answer, expected) in [
            (json!({"action": "accept", "content": {"seats": 2}}), "Holding 2 seat(s)."),
            (json!({"action": "decline"}), "You declined: no seats held."),
            (json!({"action": "cancel"}), "Reservation cancelled."),
        ] {
            let sandbox = Sandbox::new();
            let run =
                call(&Target::Http(&server), "reserve", &sandbox, &json!({"#1": answer}), Browser::Approve, extra);
            let run = run.success().stdout_has(expected);
            // Only a client of the extension is given a task.
            assert_eq!(run.stderr.contains("runs the call as task"), extra == ["--tasks"], "{extra:?}: {run}");
        }
    }
}

#[test]
fn form_tool_over_http() {
    let server = OwnServer::start();
    greet_every_outcome(&Target::Http(&server), "name", &[]);
}

#[test]
fn form_tool_over_http_in_a_2025_session() {
    let server = OwnServer::start();
    greet_every_outcome(&Target::Http(&server), "#1", SESSION_2025);
}

#[test]
fn url_tool_over_http() {
    let server = OwnServer::start();
    approve_every_outcome(&Target::Http(&server), "approval", &[]);
}

#[test]
fn form_tool_over_stdio() {
    greet_every_outcome(&Target::Stdio, "name", &[]);
}

#[test]
fn url_tool_over_stdio() {
    approve_every_outcome(&Target::Stdio, "approval", &[]);
}

/// The wire layer on a server of one's own: the URL request carries exactly the 2026-07-28
/// fields, a mistyped `inputResponses` is `-32602`, and a state for another tool is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wire_layer_puts_rmcp_right() {
    let server = OwnServer::start();
    let client = Client::new(&server.mcp_url());
    let asked = client.call("approve", json!({})).await.asked();
    let params = asked.params("approval");
    let mut members: Vec<&str> = params.as_object().unwrap().keys().map(String::as_str).collect();
    members.sort_unstable();
    assert_eq!(members, ["message", "mode", "url"], "{params}");

    let reply = client.request("tools/call", json!({"name": "greet", "arguments": {}, "inputResponses": 5})).await;
    let (code, message, _) = reply.error();
    assert_eq!((reply.status, code), (200, -32602), "{message}");
    assert!(message.starts_with("`inputResponses` must be an object"), "{message}");

    // The state `approve` minted is bound to `approve`: `greet` refuses it.
    let responses = json!({"name": {"action": "accept", "content": {"name": "Ada"}}});
    let reply = client.retry("greet", json!({}), responses, Some(asked.state())).await;
    assert_eq!(reply.error().0, -32602);

    // The plain tool is untouched by the layer.
    assert_eq!(client.call("ping", json!({})).await.text(), "pong");
}

/// A handler of one's own server sees its request over stdio (`serve_io_with`): progress goes to
/// the client that asked for it, a cancellation reaches `flow.cancelled()`, and 2026-07-28 results
/// carry the server's `_meta` serverInfo.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_and_cancellation_reach_the_handler_over_stdio() {
    let mut pipe = Pipe::start();
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}, "progressToken": "p-1"});

    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ping", "arguments": {}, "_meta": meta}});
    pipe.send(&ping).await;
    let pong = pipe.message().await;
    assert_eq!(pong["result"]["content"][0]["text"], json!("pong"), "{pong}");
    assert_eq!(pong["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], json!("own-server"), "{pong}");

    let count = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "count", "arguments": {}, "_meta": meta}});
    pipe.send(&count).await;
    for step in 1..=3 {
        let progress = pipe.message().await;
        assert_eq!(progress["method"], json!("notifications/progress"), "{progress}");
        assert_eq!(progress["params"]["progressToken"], json!("p-1"), "{progress}");
        assert_eq!(progress["params"]["progress"], json!(f64::from(step)), "{progress}");
        assert_eq!(progress["params"]["total"], json!(3.0), "{progress}");
    }
    let cancel =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2, "reason": "enough"}});
    pipe.send(&cancel).await;
    let seen = pipe.message().await;
    assert_eq!(seen["method"], json!("notifications/progress"), "{seen}");
    assert_eq!(seen["params"]["message"], json!("cancelled"), "the handler saw the cancellation: {seen}");
}

/// A tool whose arguments a form completes (`Parameters<FormArgs<Order>>`): rmcp lists `Order`'s schema as
/// its `inputSchema` and lets incomplete arguments through to the handler, which asks for
/// exactly what is missing; complete arguments finish at once, and the effect after the ask
/// (an order number, in `once`) is the same on a replay of the last round.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arguments_completed_by_a_form_on_a_tool_router() {
    let server = OwnServer::start();
    let client = Client::new(&server.mcp_url());
    let listed = client.request("tools/list", json!({})).await;
    let order = listed.result()["tools"].as_array().unwrap().iter().find(|t| t["name"] == "order").unwrap().clone();
    let schema = &order["inputSchema"];
    assert_eq!(schema["type"], "object", "{order}");
    let mut properties: Vec<&str> = schema["properties"].as_object().unwrap().keys().map(String::as_str).collect();
    properties.sort_unstable();
    assert_eq!(properties, ["item", "quantity"], "{order}");
    assert_eq!(schema["properties"]["quantity"]["default"], 1, "{order}");

    // Complete arguments (`quantity` takes its default): no form.
    let done = client.call("order", json!({"item": "tea"})).await.text();
    assert!(done.starts_with("Order #") && done.ends_with(": 1 × tea."), "{done}");

    // An invalid quantity and no item: one form, asking for exactly those two.
    let asked = client.call("order", json!({"quantity": 12})).await.asked();
    assert_eq!(asked.keys(), ["arguments"]);
    let mut fields: Vec<&str> = asked.params("arguments")["requestedSchema"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    fields.sort_unstable();
    assert_eq!(fields, ["item", "quantity"]);
    let responses = json!({"arguments": {"action": "accept", "content": {"item": "cake", "quantity": 2}}});
    let first = client.retry("order", json!({"quantity": 12}), responses.clone(), Some(asked.state())).await.text();
    assert!(first.starts_with("Order #") && first.ends_with(": 2 × cake."), "{first}");
    let again = client.retry("order", json!({"quantity": 12}), responses, Some(asked.state())).await.text();
    assert_eq!(again, first, "a replay ran the order's effect again");
}

/// rmcp's default `StreamableHttpServerConfig` answers 2026-07-28 calls as SSE streams: read raw,
/// the stream of a URL ask carries no `elicitationId`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn url_asks_on_sse_streams_carry_no_elicitation_id() {
    let server = OwnServer::start();
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}, "url": {}}}});
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "approve", "arguments": {}, "_meta": meta}});
    let response = server::http::http_client()
        .post(server.mcp_url())
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "approve")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let content_type = response.headers()[reqwest::header::CONTENT_TYPE].to_str().unwrap().to_owned();
    let raw = response.text().await.unwrap();
    assert!(content_type.starts_with("text/event-stream"), "{content_type}: {raw}");
    assert!(raw.contains("\"input_required\"") && raw.contains("\"mode\":\"url\""), "{raw}");
    assert!(!raw.contains("elicitationId"), "{raw}");
}

/// A client that opens with 2025-03-26 (a revision the engine does not speak) is answered with
/// a 2025 revision the server does speak, never served as if it were 2026-07-28.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_revision_is_answered_with_one_the_engine_speaks() {
    let server = OwnServer::start();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "old", "version": "1"}}});
    let response = server::http::http_client()
        .post(server.mcp_url())
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let raw = response.text().await.unwrap();
    let reply = elicit_test_support::mcp::sse_message(raw.as_bytes(), 1)
        .or_else(|| serde_json::from_str(&raw).ok())
        .unwrap_or_else(|| panic!("no reply: {raw}"));
    let version = reply["result"]["protocolVersion"].as_str().unwrap_or_else(|| panic!("{reply}"));
    assert!(["2025-06-18", "2025-11-25"].contains(&version), "{reply}");
}

/// The official TypeScript SDK v1 client (a 2025-11-25 host) on `own-server` over Streamable HTTP
/// with rmcp's default config: the form that completes `order`'s arguments and the URL step of
/// `approve` (its own page, submitted as a browser does) are pushed to it and answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_sdk_v1_drives_forms_and_the_page() {
    use elicit_test_support::peers::clients::{Conversation, Sdk, Target};

    let server = OwnServer::start();
    let url = server.mcp_url();
    let plan = json!({"tool": "order", "arguments": {"quantity": 2}, "trip": {"item": "tea"}});
    let mut peer = Conversation::start(Sdk::TsV1, &plan, Target::Url(&url));
    assert_eq!(peer.connected().await, "2025-11-25");
    let form = peer.expect("form").await;
    // Only the missing argument is asked; the valid one the call carried is kept.
    assert_eq!(form["properties"], json!(["item"]), "{form}");
    let (text, is_error) = peer.ending().await.unwrap_or_else(|error| panic!("{error}"));
    assert!(!is_error && text.starts_with("Order #") && text.ends_with(": 2 × tea."), "{text}");

    let plan = json!({"tool": "approve", "payment": "accept"});
    let mut peer = Conversation::start(Sdk::TsV1, &plan, Target::Url(&url));
    peer.connected().await;
    let asked = peer.expect("url").await;
    let page = asked["url"].as_str().unwrap();
    assert!(page.ends_with(&format!("/pay/{}", asked["elicitationId"].as_str().unwrap())), "{asked}");
    assert_eq!(server::http::browser_submit(page, "approve").await, 200);
    let mut ending = peer.next().await;
    if ending["event"] == "complete" {
        ending = peer.next().await;
    }
    assert_eq!(ending["event"], "result", "{ending}");
    assert_eq!(ending["result"]["content"][0]["text"], "Transfer approved.", "{ending}");
}

/// `own-server` keeps its 2025-era sessions in the capped session manager, told apart by the
/// peer's address: one anonymous client cannot open sessions without bound, nor lock out another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn own_server_caps_sessions_per_client_by_address() {
    let server = OwnServer::start();
    crate::http_edge::one_anonymous_client_cannot_lock_out_the_others(&server.mcp_url()).await;
}
