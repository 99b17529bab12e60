//! Errors say nothing internal. A completion-store failure reaches the client
//! as a generic `-32603` (the store's address and the failure stay in the server's log), and a
//! Redis password never appears in any message, start-up errors of `travel-server` included.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::redis::Redis;
use elicit_test_support::{cli, process, server, wait};

use std::net::TcpListener;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use elicit_runtime::rmcp::McpServer;
use elicit_runtime::server::store::RedisStore;
use elicit_runtime::server::{Engine, Flow, FlowError, UrlAnswer};
use elicit_runtime::state::KeyRing;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use serde_json::json;

use server::http::Client;
use server::process::travel_server_bin;

const PASSWORD: &str = "s3cret-Pa55";
const STARTUP: Duration = Duration::from_secs(30);

/// A password-protected `redis-server` (skipped where it is not installed, outside CI).
fn redis() -> Option<Redis> {
    Redis::start_or_skip("hardening_errors", Some(PASSWORD))
}

async fn pay(flow: Flow) -> Result<CallToolResult, FlowError> {
    let paid = flow.url("pay", "Pay on our page", |id| format!("https://pay.example/{id}")).await?;
    Ok(CallToolResult::success(vec![ContentBlock::text(match paid {
        UrlAnswer::Completed(_) => "paid",
        UrlAnswer::Declined | UrlAnswer::Cancelled => "not paid",
    })]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_failure_reaches_the_client_as_a_generic_error() {
    let Some(mut redis) = redis() else { return };
    let store = RedisStore::connect(&redis.url()).await.unwrap();
    let engine = Engine::builder("hardening-errors", KeyRing::generate()).store(Arc::new(store)).build();
    let server = McpServer::builder("hardening-errors", "1.0.0", engine)
        .tool(Tool::new("pay", "test", Arc::new(JsonObject::new())), pay)
        .build()
        .unwrap();
    let url = server::serve(server).await;
    let client = Client::new(&url);
    // With the store up, the URL step is asked.
    assert_eq!(client.call("pay", json!({})).await.asked().keys(), ["pay"]);

    redis.stop();
    let reply = client.call("pay", json!({})).await;
    let (code, message, data) = reply.error();
    assert_eq!(code, -32603, "{}", reply.body);
    assert_eq!(message, "this flow's records are unavailable right now (completion store error); retry later");
    assert!(data.is_none(), "{}", reply.body);
    let body = reply.body.to_string();
    for internal in ["redis", "127.0.0.1", &redis.port.to_string(), PASSWORD] {
        assert!(!body.contains(internal), "the client was told `{internal}`: {body}");
    }
}

/// `travel-server --listen 127.0.0.1:0 --store STORE`, with a fresh state key.
fn travel_server_command(store: &str) -> Command {
    let mut command = Command::new(travel_server_bin());
    command.args(["--listen", "127.0.0.1:0", "--store", store]).env("ELICIT_STATE_KEYS", server::key_b64());
    command
}

/// Runs `travel-server --store STORE` to its exit; its status and stderr.
fn travel_server_with_store(store: &str) -> (bool, String) {
    let run = cli::run(travel_server_command(store), &format!("travel-server --store {store}"), STARTUP);
    (run.status.success(), run.stderr)
}

#[test]
fn start_up_errors_never_show_the_redis_password() {
    // Nothing listens on this port: the connection fails.
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let unreachable = format!("redis://:{PASSWORD}@127.0.0.1:{port}");
    let (ok, stderr) = travel_server_with_store(&unreachable);
    assert!(!ok, "{stderr}");
    assert!(stderr.contains(&format!("redis://:***@127.0.0.1:{port}")), "{stderr}");
    assert!(!stderr.contains(PASSWORD), "{stderr}");
    // A URL the store cannot parse is not echoed at all.
    for bad in [format!("redis://:{PASSWORD}@[bad"), format!("redis://user:{PASSWORD}@host:99999")] {
        let (ok, stderr) = travel_server_with_store(&bad);
        assert!(!ok, "{stderr}");
        assert!(stderr.contains("--store"), "{stderr}");
        assert!(!stderr.contains(PASSWORD), "{stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn travel_server_logs_the_detail_the_client_is_not_told() {
    let Some(mut redis) = redis() else { return };
    let travel_server = process::Listening::start(travel_server_command(&redis.url()));
    let client = Client::new(&travel_server.mcp_url());
    let first = client.call("book_trip", json!({})).await.asked();
    redis.stop();
    let trip = json!({
        "from": "CDG", "to": "JFK", "depart": "2026-09-01", "travellers": 1, "cabin": "economy",
        "meals": [], "extras": [], "email": "ada@example.com", "alerts": false
    });
    let reply = client
        .retry("book_trip", json!({}), json!({"trip": {"action": "accept", "content": trip}}), Some(first.state()))
        .await;
    let (code, message, _) = reply.error();
    assert_eq!(code, -32603);
    assert!(!message.contains("127.0.0.1"), "{message}");
    // The log line is written before the reply is sent; the reader thread may lag behind the pipe.
    let detail = format!("redis at 127.0.0.1:{}", redis.port);
    let logged = || std::future::ready(travel_server.stderr().contains(&detail));
    wait::until_async(Duration::from_secs(5), &format!("the server's log to name {detail}"), logged).await;
    let log = travel_server.stderr();
    assert!(!log.contains(PASSWORD), "{log}");
}
