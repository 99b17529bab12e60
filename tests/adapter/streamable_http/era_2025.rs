//! A 2025-era session on the rmcp adapter's `/mcp`, driven
//! by a hand-written Streamable HTTP client so every message is visible. `initialize` gives an
//! `Mcp-Session-Id`; a call's pushed `elicitation/create` arrives on that call's SSE stream and is
//! answered with a POST; `DELETE` and `notifications/cancelled` drop the parked task and release
//! its URL record (counted by the engine); an unanswered ask is bounded; sessions do not mix.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use std::sync::Arc;
use std::time::Duration;

use elicit_runtime::Elicit;
use elicit_runtime::rmcp::{McpServer, McpServerBuilder};
use elicit_runtime::server::session::SessionStats;
use elicit_runtime::server::store::UrlStatus;
use elicit_runtime::server::{Answer, Engine, EngineBuilder, Flow, FlowError, UrlAnswer};
use elicit_runtime::state::KeyRing;
use elicit_test_support::server;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use serde_json::{Value, json};

use server::http::{Client, http_client};

/// Who are you?
#[derive(Elicit)]
struct Name {
    name: String,
}

fn text(text: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text.into())])
}

async fn greet(flow: Flow) -> Result<CallToolResult, FlowError> {
    Ok(match flow.form::<Name>("who").await? {
        Answer::Accepted(n) => text(format!("Hello, {}!", n.name)),
        Answer::Declined | Answer::Cancelled => text("Hello, stranger."),
    })
}

async fn pay(flow: Flow) -> Result<CallToolResult, FlowError> {
    Ok(match flow.url("pay", "Pay on our page", |id| format!("https://pay.example/{id}")).await? {
        UrlAnswer::Completed(_) => text("paid"),
        UrlAnswer::Declined | UrlAnswer::Cancelled => text("not paid"),
    })
}

fn tool(name: &'static str) -> Tool {
    Tool::new(name, "test", Arc::new(JsonObject::new()))
}

/// Serves a server with `greet` and `pay` on a loopback port; its `/mcp` URL and the server.
async fn serve(engine: impl FnOnce(EngineBuilder) -> EngineBuilder) -> (String, McpServer) {
    serve_with(engine, |builder| builder).await
}

/// As [`serve`], with more settings; clients are told apart by address.
async fn serve_with(
    engine: impl FnOnce(EngineBuilder) -> EngineBuilder,
    settings: impl FnOnce(McpServerBuilder) -> McpServerBuilder,
) -> (String, McpServer) {
    let engine = engine(Engine::builder("legacy-http", KeyRing::generate())).build();
    let builder = McpServer::builder("legacy-http", "1.0.0", engine).tool(tool("greet"), greet).tool(tool("pay"), pay);
    let server = settings(builder).build().unwrap();
    let url = server::serve_by_address(&server).await;
    (url, server)
}

/// A 2025-11-25 client session.
struct Session {
    url: String,
    id: String,
    client: reqwest::Client,
}

fn post(client: &reqwest::Client, url: &str, session: Option<&str>, body: &Value) -> reqwest::RequestBuilder {
    let mut request = client
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2025-11-25")
        .body(body.to_string());
    if let Some(session) = session {
        request = request.header("Mcp-Session-Id", session);
    }
    request
}

impl Session {
    async fn open(url: &str, elicitation: Value) -> Session {
        Session::open_declaring(url, json!({ "elicitation": elicitation })).await.0
    }

    /// A session whose `initialize` declares `capabilities`; the session and the `initialize` result.
    async fn open_declaring(url: &str, capabilities: Value) -> (Session, Value) {
        let client = http_client();
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": capabilities,
            "clientInfo": {"name": "legacy-http-test", "version": "1.0.0"}}});
        let response = post(&client, url, None, &init).send().await.unwrap();
        assert_eq!(response.status(), 200);
        let id = response.headers().get("mcp-session-id").expect("a session id").to_str().unwrap().to_owned();
        let mut stream = Events { response, buffer: String::new() };
        let answer = stream.next().await.expect("the initialize result");
        assert_eq!(answer["result"]["protocolVersion"], "2025-11-25", "{answer}");
        let session = Session { url: url.to_owned(), id, client };
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(session.send(&initialized).await, 202);
        (session, answer["result"].clone())
    }

    /// Posts a notification or a response; the HTTP status.
    async fn send(&self, message: &Value) -> u16 {
        post(&self.client, &self.url, Some(&self.id), message).send().await.unwrap().status().as_u16()
    }

    /// Starts `tools/call name` with JSON-RPC id `id`; its SSE stream.
    async fn call(&self, id: u64, name: &str) -> Events {
        let call =
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": {}}});
        let response = post(&self.client, &self.url, Some(&self.id), &call).send().await.unwrap();
        assert_eq!(response.status(), 200);
        assert!(response.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
        Events { response, buffer: String::new() }
    }

    async fn delete(&self) -> u16 {
        let request = self
            .client
            .delete(&self.url)
            .header("Mcp-Session-Id", &self.id)
            .header("MCP-Protocol-Version", "2025-11-25");
        request.send().await.unwrap().status().as_u16()
    }
}

/// The JSON-RPC messages of one SSE response, in order.
struct Events {
    response: reqwest::Response,
    buffer: String,
}

impl Events {
    /// The next JSON-RPC message, or `None` when the stream ended. Bounded: a silent server fails.
    async fn next(&mut self) -> Option<Value> {
        loop {
            while let Some(end) = self.buffer.find("\n\n") {
                let event: String = self.buffer.drain(..end + 2).collect();
                let data: Vec<&str> =
                    event.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim_start).collect();
                if !data.is_empty() && !data.concat().is_empty() {
                    return Some(serde_json::from_str(&data.join("\n")).unwrap());
                }
            }
            let chunk = tokio::time::timeout(Duration::from_secs(30), self.response.chunk())
                .await
                .expect("the stream went silent");
            match chunk.unwrap() {
                Some(bytes) => self.buffer.push_str(&String::from_utf8_lossy(&bytes)),
                None => return None,
            }
        }
    }

    /// The next message, which must be a request of `method`.
    async fn request(&mut self, method: &str) -> Value {
        let message = self.next().await.expect("a pushed request");
        assert_eq!(message["method"], method, "{message}");
        message
    }
}

/// Waits (bounded) until the engine holds nothing: the task and its records are gone. When a
/// session closes, rmcp gives in-flight handlers up to 5 s to answer before cancelling them.
async fn drained(server: &McpServer) {
    for _ in 0..1500 {
        if server.engine().session_stats() == SessionStats::default() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("still held after the session ended: {:?}", server.engine().session_stats());
}

/// The draft app-rendered forms: a session whose `initialize` declared the UI extension with its
/// `elicitation` member gets `_meta.ui.resourceUri` on the pushed form; one without gets none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pushed_form_names_the_app_only_on_a_session_that_negotiated_it() {
    const NAME_APP: &str = "ui://legacy-http/name";
    let app = elicit_runtime::apps::AppForm::new::<Name>(NAME_APP).unwrap();
    let (url, _server) = serve(move |engine| engine.app_form(app)).await;
    let apps = json!({"mimeTypes": ["text/html;profile=mcp-app"], "elicitation": {}});
    let cases = [
        (json!({"elicitation": {"form": {}}, "extensions": {"io.modelcontextprotocol/ui": apps}}), true),
        (json!({"elicitation": {"form": {}}}), false),
    ];
    for (declared, hinted) in cases {
        let (session, initialized) = Session::open_declaring(&url, declared.clone()).await;
        let advertised = &initialized["capabilities"]["extensions"]["io.modelcontextprotocol/ui"];
        assert_eq!(advertised, &json!({"elicitation": {}}), "{initialized}");
        let mut call = session.call(1, "greet").await;
        let ask = call.request("elicitation/create").await;
        // rmcp puts its own `progressToken` beside the hint in `_meta`.
        let expected = hinted.then(|| json!({"resourceUri": NAME_APP}));
        assert_eq!(ask["params"].pointer("/_meta/ui"), expected.as_ref(), "{declared}: {ask}");
        assert_eq!(ask["params"]["requestedSchema"], Name::requested_schema().to_json());
        let reply =
            json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"name": "Ada"}}});
        assert_eq!(session.send(&reply).await, 202);
        assert_eq!(call.next().await.expect("the call's result")["result"]["content"][0]["text"], "Hello, Ada!");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_pushes_its_ask_on_its_own_stream_and_gets_the_answer() {
    let (url, server) = serve(|engine| engine).await;
    let session = Session::open(&url, json!({})).await;
    let mut call = session.call(1, "greet").await;
    let ask = call.request("elicitation/create").await;
    assert_eq!(ask["params"]["mode"], "form");
    assert_eq!(ask["params"]["requestedSchema"], Name::requested_schema().to_json());
    let reply = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"name": "Ada"}}});
    assert_eq!(session.send(&reply).await, 202);
    let result = call.next().await.expect("the call's result");
    assert_eq!(result["id"], 1);
    assert_eq!(result["result"]["content"][0]["text"], "Hello, Ada!");
    assert_eq!(server.engine().session_stats(), SessionStats::default());

    // A URL ask on a form-only session: the handler's error propagates as -32600, nothing pushed.
    let mut call = session.call(2, "pay").await;
    let error = call.next().await.unwrap();
    assert_eq!(error["error"]["code"], -32600, "{error}");
    assert_eq!(error["error"]["data"]["requiredCapabilities"], json!({"elicitation": {"url": {}}}));
}

/// What the call's request put in its HTTP extensions (here, a marker of the test's).
#[derive(Clone)]
struct Held(#[allow(dead_code, reason = "held only to be counted")] Arc<()>);

/// A parked call waits without its request's context: what the call needs of it (principal,
/// address, progress, cancellation, session) is taken out when it starts, and its HTTP head, the
/// extensions included, is let go, not held for as long as the person takes to answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_call_holds_no_part_of_its_request_head() {
    let engine = Engine::builder("legacy-http", KeyRing::generate()).build();
    let server = McpServer::builder("legacy-http", "1.0.0", engine).tool(tool("greet"), greet).build().unwrap();
    // Only the call carries the header, so only its request carries a marker, counted here.
    let markers = Arc::new(std::sync::Mutex::new(Vec::new()));
    let marked = markers.clone();
    let app =
        server.http_router(&[]).layer(axum::middleware::map_request(move |mut request: axum::extract::Request| {
            if request.headers().contains_key("x-held") {
                let marker = Arc::new(());
                marked.lock().unwrap().push(Arc::downgrade(&marker));
                request.extensions_mut().insert(Held(marker));
            }
            std::future::ready(request)
        }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(elicit_runtime::rmcp::serve_http(listener, app));
    let session = Session::open(&url, json!({})).await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "greet", "arguments": {}}});
    let response = post(&session.client, &url, Some(&session.id), &body).header("x-held", "1").send().await.unwrap();
    assert_eq!(response.status(), 200);
    let mut call = Events { response, buffer: String::new() };
    // The ask is pushed after the call let its context go: nothing to wait for.
    let ask = call.request("elicitation/create").await;
    let markers = markers.lock().unwrap().clone();
    assert_eq!(markers.len(), 1);
    assert_eq!(markers[0].strong_count(), 0, "the parked call still holds its request's extensions");
    let reply = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"name": "Ada"}}});
    assert_eq!(session.send(&reply).await, 202);
    assert_eq!(call.next().await.expect("the call's result")["result"]["content"][0]["text"], "Hello, Ada!");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_drops_the_parked_task_and_releases_its_record() {
    let (url, server) = serve(|engine| engine).await;
    let session = Session::open(&url, json!({"form": {}, "url": {}})).await;
    let mut call = session.call(1, "pay").await;
    let ask = call.request("elicitation/create").await;
    let id = ask["params"]["elicitationId"].as_str().unwrap().to_owned();
    assert_eq!(server.engine().session_stats(), SessionStats { tasks: 1, url_records: 1 });
    assert_eq!(server.engine().url_completions().status(&id).await.unwrap(), UrlStatus::Pending);
    let status = session.delete().await;
    assert!((200..300).contains(&status), "DELETE answered {status}");
    drained(&server).await;
    assert_eq!(server.engine().url_completions().status(&id).await.unwrap(), UrlStatus::Unknown);
    // The session is gone: a request on its id is 404.
    let ping = json!({"jsonrpc": "2.0", "id": 9, "method": "ping"});
    assert_eq!(session.send(&ping).await, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_call_drops_the_task_and_the_session_goes_on() {
    let (url, server) = serve(|engine| engine).await;
    let session = Session::open(&url, json!({"form": {}, "url": {}})).await;
    let mut call = session.call(7, "pay").await;
    let ask = call.request("elicitation/create").await;
    let id = ask["params"]["elicitationId"].as_str().unwrap().to_owned();
    let cancel =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7, "reason": "user"}});
    assert_eq!(session.send(&cancel).await, 202);
    drained(&server).await;
    assert_eq!(server.engine().url_completions().status(&id).await.unwrap(), UrlStatus::Unknown);

    // The session still serves the next call.
    let mut call = session.call(8, "greet").await;
    let ask = call.request("elicitation/create").await;
    let reply = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "decline"}});
    assert_eq!(session.send(&reply).await, 202);
    assert_eq!(call.next().await.unwrap()["result"]["content"][0]["text"], "Hello, stranger.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_ask_ends_the_call_with_a_clear_error() {
    let (url, server) = serve(|engine| engine.session_ask_timeout(Duration::from_millis(200))).await;
    let session = Session::open(&url, json!({})).await;
    let mut call = session.call(1, "greet").await;
    call.request("elicitation/create").await;
    let error = call.next().await.unwrap();
    assert_eq!(error["id"], 1);
    assert_eq!(error["error"]["code"], -32603);
    assert!(error["error"]["message"].as_str().unwrap().contains("did not answer"), "{error}");
    drained(&server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_do_not_mix() {
    let (url, server) = serve(|engine| engine).await;
    let alice = Session::open(&url, json!({})).await;
    let bob = Session::open(&url, json!({})).await;
    assert_ne!(alice.id, bob.id);
    let mut call = alice.call(1, "greet").await;
    let ask = call.request("elicitation/create").await;
    // Bob cannot answer Alice's ask: his session has no such request outstanding.
    let forged =
        json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"name": "Mallory"}}});
    bob.send(&forged).await;
    let reply =
        json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"name": "Alice"}}});
    assert_eq!(alice.send(&reply).await, 202);
    assert_eq!(call.next().await.unwrap()["result"]["content"][0]["text"], "Hello, Alice!");
    drained(&server).await;

    // A 2026-07-28 request on the same endpoint is still served statelessly: the first round
    // of the same handler is an input_required result, not a pushed request.
    let modern = Client::new(&url).with_capabilities(json!({"elicitation": {}}));
    let reply = modern.call("greet", json!({})).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.asked().keys(), ["who"]);
}

/// A session lives as long as its asks: with a keep-alive setting shorter than the engine's ask
/// timeout, a user who answers after the setting has passed still reaches the call (rmcp alone
/// would have closed the idle session, answering the late reply 404 and leaving the call's stream
/// open).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_after_the_keep_alive_setting_still_reaches_the_call() {
    let live = |engine: EngineBuilder| {
        engine.session_ask_timeout(Duration::from_secs(20)).session_url_completion_timeout(Duration::from_secs(1))
    };
    let (url, server) = serve_with(live, |builder| builder.session_keep_alive(Duration::from_millis(500))).await;
    let session = Session::open(&url, json!({})).await;
    let mut call = session.call(1, "greet").await;
    let ask = call.request("elicitation/create").await;
    // The user takes longer than the keep-alive setting to fill the form.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let reply = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"name": "Ada"}}});
    assert_eq!(session.send(&reply).await, 202);
    let result = call.next().await.expect("the call's result");
    assert_eq!(result["result"]["content"][0]["text"], "Hello, Ada!", "{result}");
    drained(&server).await;
}

/// Sessions are capped per client and overall; a refused `initialize` says why, and a client
/// that ends a session may open another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_capped_per_client_and_overall() {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "legacy-http-test", "version": "1.0.0"}}});
    let refused = async |url: &str| {
        let response = post(&http_client(), url, None, &init).send().await.unwrap();
        let status = response.status().as_u16();
        let body: Value = response.json().await.unwrap();
        (status, body["error"]["message"].as_str().unwrap_or_default().to_owned())
    };

    let (url, _server) = serve_with(|engine| engine, |builder| builder.max_sessions_per_client(2)).await;
    let first = Session::open(&url, json!({})).await;
    let _second = Session::open(&url, json!({})).await;
    let (status, message) = refused(&url).await;
    assert_eq!(status, 429, "{message}");
    assert!(message.contains("too many sessions open for this client (at most 2)"), "{message}");
    // Another address is another client (`serve_http` hands the router each request's address).
    let elsewhere =
        reqwest::Client::builder().no_proxy().local_address(std::net::IpAddr::from([127, 0, 0, 2])).build().unwrap();
    let response = post(&elsewhere, &url, None, &init).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 200, "another address is refused as if it were the same client");
    // 2026-07-28 requests open no session and pass.
    assert_eq!(Client::new(&url).call("greet", json!({})).await.asked().keys(), ["who"]);
    assert_eq!(first.delete().await, 202);
    let _third = Session::open(&url, json!({})).await;

    let (url, _server) = serve_with(|engine| engine, |builder| builder.max_sessions(1)).await;
    let _only = Session::open(&url, json!({})).await;
    let (status, message) = refused(&url).await;
    assert_eq!(status, 503, "{message}");
    assert!(message.contains("too many sessions open on this server (at most 1)"), "{message}");
}

/// A session that ends (here with `DELETE`) while a call waits on a pushed ask fails the call
/// with an error, on the call's own stream, which then ends: nothing is left open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_that_ends_fails_its_open_calls() {
    let (url, server) = serve(|engine| engine).await;
    let session = Session::open(&url, json!({})).await;
    let mut call = session.call(1, "greet").await;
    call.request("elicitation/create").await;
    let status = session.delete().await;
    assert!((200..300).contains(&status), "DELETE answered {status}");
    let ending = call.next().await.expect("an error for the call");
    assert_eq!(ending["id"], 1, "{ending}");
    assert_eq!(ending["error"]["message"], "the session ended before this call finished", "{ending}");
    // `next` fails the test if the stream stays open (bounded).
    assert_eq!(call.next().await, None);
    drained(&server).await;
}
