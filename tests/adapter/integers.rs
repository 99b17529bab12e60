//! Every integer field type can be asked. A form of `u64`, `i128` and `usize`
//! fields goes through the rmcp adapter (whose integer schema holds `i64` bounds) over Streamable
//! HTTP and over stdio: the schema's bounds are clamped to `±(2^53 - 1)`, the answer is parsed in
//! full, and a refused answer is asked again with integer defaults.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::server;

use std::sync::Arc;
use std::time::Duration;

use elicit_runtime::Elicit;
use elicit_runtime::rmcp::McpServer;
use elicit_runtime::server::{Answer, Engine, Flow, FlowError};
use elicit_runtime::state::KeyRing;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf};

use server::http::Client;

const SAFE: i64 = (1 << 53) - 1;

/// Wide integers.
#[derive(Debug, Elicit)]
struct Wide {
    /// A count.
    count: u64,
    /// A signed offset.
    #[elicit(minimum = -5)]
    delta: i128,
    /// A position.
    index: usize,
}

async fn wide(flow: Flow) -> Result<CallToolResult, FlowError> {
    let text = match flow.form::<Wide>("wide").await? {
        Answer::Accepted(w) => format!("count={} delta={} index={}", w.count, w.delta, w.index),
        other => format!("{other:?}"),
    };
    Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
}

fn server() -> McpServer {
    let engine = Engine::builder("integers", KeyRing::generate()).build();
    McpServer::builder("integers", "1.0.0", engine)
        .tool(Tool::new("wide", "Asks for wide integers", Arc::new(JsonObject::new())), wide)
        .build()
        .unwrap()
}

/// The schema asked for: integer bounds clamped to the interoperable range.
fn check_schema(params: &Value) {
    let schema = &params["requestedSchema"]["properties"];
    assert_eq!(
        schema["count"],
        json!({"type": "integer", "description": "A count.", "minimum": 0, "maximum": SAFE}),
        "{params}"
    );
    assert_eq!(
        schema["delta"],
        json!({"type": "integer", "description": "A signed offset.", "minimum": -5, "maximum": SAFE})
    );
    assert_eq!(
        schema["index"],
        json!({"type": "integer", "description": "A position.", "minimum": 0, "maximum": SAFE})
    );
}

fn accept(content: Value) -> Value {
    json!({"wide": {"action": "accept", "content": content}})
}

/// Past the schema's range but inside the fields' types: parsed in full.
fn wide_answer() -> Value {
    json!({"count": u64::MAX, "delta": 9_007_199_254_740_993_i64, "index": 3.0})
}

const WIDE_TEXT: &str = "count=18446744073709551615 delta=9007199254740993 index=3";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wide_integers_complete_over_http() {
    let url = server::serve(server()).await;
    let client = Client::new(&url);

    let asked = client.call("wide", json!({})).await.asked();
    check_schema(asked.params("wide"));
    let done = client.retry("wide", json!({}), accept(wide_answer()), Some(asked.state())).await;
    assert_eq!(done.text(), WIDE_TEXT);

    // Refused (below `delta`'s minimum, a fraction): asked again, the integer answer that passed
    // kept as an integer default; the refused values (quoted in the message) are never defaults.
    let asked = client.call("wide", json!({})).await.asked();
    let again = client
        .retry("wide", json!({}), accept(json!({"count": 7.0, "delta": -6, "index": 1.5})), Some(asked.state()))
        .await
        .asked();
    let properties = &again.params("wide")["requestedSchema"]["properties"];
    assert_eq!(properties["count"]["default"], json!(7));
    assert!(properties["count"]["default"].is_i64());
    assert!(properties["delta"].get("default").is_none(), "{properties}");
    assert!(properties["index"].get("default").is_none(), "{properties}");
    let done = client
        .retry("wide", json!({}), accept(json!({"count": 7, "delta": -5, "index": 0})), Some(again.state()))
        .await;
    assert_eq!(done.text(), "count=7 delta=-5 index=0");
}

/// The client end of a stdio pipe.
struct Pipe {
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    writer: WriteHalf<DuplexStream>,
    next_id: u64,
}

impl Pipe {
    fn start() -> Pipe {
        let (client, server_end) = tokio::io::duplex(64 * 1024);
        let (read, write) = tokio::io::split(server_end);
        tokio::spawn(server().serve_io(read, write));
        let (read, writer) = tokio::io::split(client);
        Pipe { lines: BufReader::new(read).lines(), writer, next_id: 1 }
    }

    async fn call(&mut self, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let mut params = params;
        params["name"] = json!("wide");
        params["arguments"] = json!({});
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        });
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
        self.writer.write_all(format!("{request}\n").as_bytes()).await.unwrap();
        let line = tokio::time::timeout(Duration::from_secs(30), self.lines.next_line())
            .await
            .expect("the server went silent");
        let reply: Value = serde_json::from_str(&line.unwrap().expect("a reply")).unwrap();
        assert_eq!(reply["id"], id, "{reply}");
        server::schema::assert_valid("tools/call", &reply);
        reply
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wide_integers_complete_over_stdio() {
    let mut pipe = Pipe::start();
    let asked = pipe.call(json!({})).await;
    let result = &asked["result"];
    assert_eq!(result["resultType"], "input_required", "{asked}");
    check_schema(&result["inputRequests"]["wide"]["params"]);
    let state = result["requestState"].clone();
    let done = pipe.call(json!({"inputResponses": accept(wide_answer()), "requestState": state})).await;
    assert_eq!(done["result"]["content"][0]["text"], WIDE_TEXT, "{done}");
}
