//! Errors say nothing internal. A completion-store failure reaches the client
//! as a generic `-32603` (the store's address and the failure stay in the server's log), and a
//! Redis password never appears in any message, start-up errors of `travel-server` included.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::redis::Redis;
use elicit_test_support::server;

use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use elicit_runtime::rmcp::McpServer;
use elicit_runtime::server::{Engine, Flow, FlowError, RedisStore, UrlAnswer};
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

/// Runs `travel-server --store STORE` to its exit; its status and stderr.
fn travel_server_with_store(store: &str) -> (bool, String) {
    let mut child = Command::new(travel_server_bin())
        .args(["--listen", "127.0.0.1:0", "--store", store])
        .env("ELICIT_STATE_KEYS", server::key_b64())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + STARTUP;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("travel-server --store {store} did not exit");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    (status.success(), stderr)
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

/// A `travel-server --store STORE` on a loopback port: its `/mcp` URL, the process and its stderr
/// so far.
fn travel_server_listening(store: &str) -> (String, Child, Arc<Mutex<Vec<String>>>) {
    let mut child = Command::new(travel_server_bin())
        .args(["--listen", "127.0.0.1:0", "--store", store])
        .env("ELICIT_STATE_KEYS", server::key_b64())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let lines = Arc::new(Mutex::new(Vec::new()));
    let (found, address) = mpsc::channel();
    let kept = lines.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("listening on ") {
                let _ = found.send(url.to_owned());
            }
            kept.lock().unwrap().push(line);
        }
    });
    let url = address.recv_timeout(STARTUP).expect("travel-server reports its address");
    (url, child, lines)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn travel_server_logs_the_detail_the_client_is_not_told() {
    let Some(mut redis) = redis() else { return };
    let (url, mut child, log) = travel_server_listening(&redis.url());
    let client = Client::new(&url);
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
    for _ in 0..500 {
        if log.lock().unwrap().iter().any(|line| line.contains(&detail)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let log = log.lock().unwrap().join("\n");
    let _ = child.kill();
    let _ = child.wait();
    assert!(log.contains(&detail), "the server log lacks the detail:\n{log}");
    assert!(!log.contains(PASSWORD), "{log}");
}
