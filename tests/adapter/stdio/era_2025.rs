//! A 2025-era session over a byte pipe (what `serve_stdio` runs on),
//! driven line by line. The first message decides the era; a call's ask is pushed as a request;
//! end of input drops the parked task and releases its URL record (counted by the engine).

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use std::sync::Arc;
use std::time::Duration;

use elicit_runtime::rmcp::McpServer;
use elicit_runtime::server::session::SessionStats;
use elicit_runtime::server::store::UrlStatus;
use elicit_runtime::server::{Engine, EngineBuilder, Flow, FlowError, UrlAnswer};
use elicit_runtime::state::KeyRing;
use rmcp::ServiceExt;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf};

async fn pay(flow: Flow) -> Result<CallToolResult, FlowError> {
    let done = match flow.url("pay", "Pay on our page", |id| format!("https://pay.example/{id}")).await? {
        UrlAnswer::Completed(_) => "paid",
        UrlAnswer::Declined | UrlAnswer::Cancelled => "not paid",
    };
    Ok(CallToolResult::success(vec![ContentBlock::text(done)]))
}

/// The client end of the pipe.
struct Pipe {
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    writer: WriteHalf<DuplexStream>,
}

impl Pipe {
    async fn send(&mut self, message: Value) {
        self.writer.write_all(format!("{message}\n").as_bytes()).await.unwrap();
    }

    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(30), self.lines.next_line())
            .await
            .expect("the server went silent");
        serde_json::from_str(&line.unwrap().expect("a message")).unwrap()
    }
}

fn start() -> (McpServer, Pipe) {
    start_with(|engine| engine)
}

fn start_with(settings: impl FnOnce(EngineBuilder) -> EngineBuilder) -> (McpServer, Pipe) {
    let engine = settings(Engine::builder("legacy-stdio", KeyRing::generate())).build();
    let server = McpServer::builder("legacy-stdio", "1.0.0", engine)
        .tool(Tool::new("pay", "test", Arc::new(JsonObject::new())), pay)
        .build()
        .unwrap();
    let (client, server_end) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server_end);
    let served = server.clone();
    tokio::spawn(async move {
        if let Ok(running) = served.serve((server_read, server_write)).await {
            let _ = running.waiting().await;
        }
    });
    let (read, writer) = tokio::io::split(client);
    (server, Pipe { lines: BufReader::new(read).lines(), writer })
}

async fn open(pipe: &mut Pipe, version: &str, elicitation: Value) -> Value {
    pipe.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {"elicitation": elicitation},
        "clientInfo": {"name": "legacy-stdio-test", "version": "1.0.0"}}}))
        .await;
    let answer = pipe.next().await;
    pipe.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    answer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn end_of_input_drops_the_parked_task_and_releases_its_record() {
    let (server, mut pipe) = start();
    let answer = open(&mut pipe, "2025-11-25", json!({"url": {}})).await;
    assert_eq!(answer["result"]["protocolVersion"], "2025-11-25");
    pipe.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "pay", "arguments": {}}}))
        .await;
    let ask = pipe.next().await;
    assert_eq!(ask["method"], "elicitation/create");
    assert_eq!(ask["params"]["mode"], "url");
    let id = ask["params"]["elicitationId"].as_str().unwrap().to_owned();
    assert_eq!(server.engine().session_stats(), SessionStats { tasks: 1, url_records: 1 });

    // EOF on the server's stdin.
    pipe.writer.shutdown().await.unwrap();
    drop(pipe);
    // rmcp gives running calls up to 5 s to answer after EOF, then cancels them (bounded wait).
    for _ in 0..1500 {
        if server.engine().session_stats() == SessionStats::default() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(server.engine().session_stats(), SessionStats::default());
    assert_eq!(server.engine().url_completions().status(&id).await.unwrap(), UrlStatus::Unknown);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_06_18_session_gets_form_only_and_old_versions_negotiate_down() {
    let (_server, mut pipe) = start();
    let answer = open(&mut pipe, "2025-06-18", json!({"url": {}})).await;
    assert_eq!(answer["result"]["protocolVersion"], "2025-06-18");
    // There is no URL mode on 2025-06-18: the handler's ask is refused without pushing anything.
    pipe.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "pay", "arguments": {}}}))
        .await;
    let error = pipe.next().await;
    assert_eq!(error["id"], 1);
    assert_eq!(error["error"]["code"], -32600, "{error}");

    // A client asking for a revision the server does not serve gets the newest 2025-era one.
    let (_server, mut pipe) = start();
    let answer = open(&mut pipe, "2024-11-05", json!({})).await;
    assert_eq!(answer["result"]["protocolVersion"], "2025-11-25");
}

/// A pushed ask the server stops waiting for (its timeout passed) is withdrawn: the client gets
/// `notifications/cancelled` for that request, so it can close the form it shows, and the call
/// ends with an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_that_times_out_is_cancelled_at_the_client() {
    let (_server, mut pipe) = start_with(|engine| {
        engine
            .session_url_completion_timeout(Duration::from_millis(300))
            .session_ask_timeout(Duration::from_millis(300))
    });
    open(&mut pipe, "2025-11-25", json!({"url": {}})).await;
    pipe.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "pay", "arguments": {}}}))
        .await;
    let ask = pipe.next().await;
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    let (mut cancelled, mut ended) = (None, None);
    while cancelled.is_none() || ended.is_none() {
        let message = pipe.next().await;
        if message["method"] == "notifications/cancelled" {
            cancelled = Some(message);
        } else if message["id"] == 1 {
            ended = Some(message);
        }
    }
    let cancelled = cancelled.unwrap();
    assert_eq!(cancelled["params"]["requestId"], ask["id"], "{cancelled}");
    let ended = ended.unwrap();
    assert!(ended.get("error").is_some(), "{ended}");
}
