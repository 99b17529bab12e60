//! The wire over stdio is the wire over HTTP. Through `McpServer::serve_io` (what
//! `serve_stdio` runs on stdin and stdout): a URL request carries exactly revision 2026-07-28's
//! fields (no `elicitationId`), Multi Round-Trip requests with mistyped parameters get `-32602`,
//! every 2026-07-28 result carries `_meta` serverInfo, and a 2025-era session keeps the
//! `elicitationId` its revision requires.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::server;

use std::sync::Arc;
use std::time::Duration;

use elicit_runtime::rmcp::McpServer;
use elicit_runtime::server::{Engine, Flow, FlowError, UrlAnswer};
use elicit_runtime::state::KeyRing;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf};

const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

async fn pay(flow: Flow) -> Result<CallToolResult, FlowError> {
    let done = match flow.url("pay", "Pay on our page", |id| format!("https://pay.example/{id}")).await? {
        UrlAnswer::Completed(_) => "paid",
        UrlAnswer::Declined => "declined",
        UrlAnswer::Cancelled => "cancelled",
    };
    Ok(CallToolResult::success(vec![ContentBlock::text(done)]))
}

/// The client end of a stdio pipe to a fresh server.
struct Pipe {
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    writer: WriteHalf<DuplexStream>,
}

impl Pipe {
    fn start() -> Pipe {
        let engine = Engine::builder("stdio-wire", KeyRing::generate()).build();
        let server = McpServer::builder("stdio-wire", "1.2.3", engine)
            .tool(Tool::new("pay", "Pays on a page", Arc::new(JsonObject::new())), pay)
            .build()
            .unwrap();
        let (client, server_end) = tokio::io::duplex(64 * 1024);
        let (read, write) = tokio::io::split(server_end);
        tokio::spawn(server.serve_io(read, write));
        let (read, writer) = tokio::io::split(client);
        Pipe { lines: BufReader::new(read).lines(), writer }
    }

    async fn send_raw(&mut self, line: &str) {
        self.writer.write_all(format!("{line}\n").as_bytes()).await.unwrap();
    }

    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(30), self.lines.next_line())
            .await
            .expect("the server went silent");
        serde_json::from_str(&line.unwrap().expect("a message")).unwrap()
    }

    /// A 2026-07-28 `tools/call pay` with `extra` merged into its params; the reply.
    async fn call(&mut self, id: u64, extra: Value) -> Value {
        let mut params = json!({"name": "pay", "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"url": {}}},
        }});
        for (key, value) in extra.as_object().unwrap() {
            params[key] = value.clone();
        }
        self.send_raw(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string()).await;
        let reply = self.next().await;
        assert_eq!(reply["id"], id, "{reply}");
        reply
    }
}

fn server_info(result: &Value) -> &Value {
    &result["_meta"][SERVER_INFO]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn url_requests_carry_exactly_the_revisions_fields_and_results_name_the_server() {
    let mut pipe = Pipe::start();
    let asked = pipe.call(1, json!({})).await;
    server::schema::assert_valid("tools/call", &asked);
    let result = &asked["result"];
    assert_eq!(result["resultType"], "input_required", "{asked}");
    let request = &result["inputRequests"]["pay"];
    assert_eq!(request["method"], "elicitation/create");
    let params = request["params"].as_object().unwrap();
    let mut keys: Vec<&str> = params.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["message", "mode", "url"], "{request}");
    assert_eq!(params["mode"], "url");
    assert!(params["url"].as_str().unwrap().starts_with("https://pay.example/"));
    assert_eq!(server_info(result), &json!({"name": "stdio-wire", "version": "1.2.3"}), "{asked}");

    // The answer completes the call; that result names the server too.
    let state = result["requestState"].clone();
    let done = pipe.call(2, json!({"inputResponses": {"pay": {"action": "decline"}}, "requestState": state})).await;
    server::schema::assert_valid("tools/call", &done);
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "declined");
    assert_eq!(server_info(&done["result"]), &json!({"name": "stdio-wire", "version": "1.2.3"}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mistyped_round_trip_params_are_invalid_params() {
    let mut pipe = Pipe::start();
    let cases = [
        json!({"inputResponses": "not an object"}),
        json!({"inputResponses": null}),
        json!({"inputResponses": [1]}),
        json!({"requestState": 7}),
        json!({"arguments": "x"}),
    ];
    for (id, extra) in (10..).zip(cases) {
        let reply = pipe.call(id, extra.clone()).await;
        assert_eq!(reply["error"]["code"], -32602, "{extra}: {reply}");
        assert!(reply.get("result").is_none());
    }
    // A string id is echoed as it came; the connection still serves well-formed calls.
    pipe.send_raw(
        r#"{"jsonrpc":"2.0","id":"s-1","method":"prompts/get","params":{"name":"p","inputResponses":false}}"#,
    )
    .await;
    let reply = pipe.next().await;
    assert_eq!((reply["id"].as_str(), reply["error"]["code"].as_i64()), (Some("s-1"), Some(-32602)), "{reply}");
    let asked = pipe.call(20, json!({})).await;
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_session_keeps_its_elicitation_id() {
    let mut pipe = Pipe::start();
    pipe.send_raw(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"url": {}}},
            "clientInfo": {"name": "stdio-wire-test", "version": "1.0.0"}}})
        .to_string(),
    )
    .await;
    let answer = pipe.next().await;
    assert_eq!(answer["result"]["protocolVersion"], "2025-11-25", "{answer}");
    pipe.send_raw(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string()).await;
    pipe.send_raw(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "pay", "arguments": {}}})
            .to_string(),
    )
    .await;
    let ask = pipe.next().await;
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert!(ask["params"]["elicitationId"].is_string(), "2025-11-25 URL requests need their id: {ask}");
    pipe.send_raw(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "cancel"}}).to_string()).await;
    let done = pipe.next().await;
    assert_eq!(done["id"], 1, "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "cancelled");
    assert!(done["result"].get("resultType").is_none(), "a 2025-era result: {done}");
}
