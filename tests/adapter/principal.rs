//! The authenticated principal over HTTP: a `travel-server` with two bearer identities binds each
//! flow to its user. Bob presenting Alice's `requestState` gets `-32602`; Bob (or nobody)
//! submitting Alice's payment approval gets a refused page; Alice alone books end to end, with
//! her bearer token (an API client) or by opening her payment link in a browser, which signs her
//! in once.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::server;

use std::process::Command;

use elicit_test_support::process;
use serde_json::{Value, json};

use server::http::{form_and_url, http_client};

const ALICE: &str = "token-alice";
const BOB: &str = "token-bob";

fn start() -> process::Listening {
    let mut command = Command::new(server::process::travel_server_bin());
    command
        .args(["--listen", "127.0.0.1:0", "--store", "memory"])
        .env("ELICIT_STATE_KEYS", server::key_b64())
        .env("ELICIT_BEARER_TOKENS", format!("{ALICE}=alice,{BOB}=bob"))
        .env_remove("RUST_LOG");
    process::Listening::start(command)
}

/// The JSON-RPC body of one `tools/call` of `tool` declaring form and URL mode, with the answers
/// and the state of the previous round, if any.
fn call_body(tool: &str, responses: Option<Value>, state: Option<&str>) -> Value {
    let mut params = json!({"name": tool, "arguments": {}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": form_and_url()}});
    if let Some(responses) = responses {
        params["inputResponses"] = responses;
    }
    if let Some(state) = state {
        params["requestState"] = json!(state);
    }
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
}

/// One `tools/call book_trip` as `token` (or anonymously): the HTTP status and the JSON body.
async fn book_trip(url: &str, token: Option<&str>, responses: Option<Value>, state: Option<&str>) -> (u16, Value) {
    let body = call_body("book_trip", responses, state);
    let mut request = http_client()
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "book_trip");
    if let Some(token) = token {
        request = request.header("Authorization", format!("Bearer {token}"));
    }
    let response = request.body(body.to_string()).send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

fn trip() -> Value {
    json!({"trip": {"action": "accept", "content": {
        "from": "CDG", "to": "JFK", "depart": "2026-09-01", "travellers": 2, "cabin": "business",
        "meals": ["vegan"], "extras": ["lounge"], "email": "ada@example.com", "alerts": false}}})
}

fn state_of(reply: &Value) -> String {
    assert_eq!(reply["result"]["resultType"], json!("input_required"), "{reply}");
    reply["result"]["requestState"].as_str().unwrap().to_owned()
}

/// Alice's flow up to the payment step: the payment URL and the state to continue with.
async fn alice_to_payment(url: &str) -> (String, String) {
    let (_, first) = book_trip(url, Some(ALICE), None, None).await;
    let (_, second) = book_trip(url, Some(ALICE), Some(trip()), Some(&state_of(&first))).await;
    let state = state_of(&second);
    let pay = second["result"]["inputRequests"]["payment"]["params"]["url"].as_str().unwrap().to_owned();
    (pay, state)
}

/// The payment page of a payment link: the link without its sign-in ticket.
fn page_of(link: &str) -> String {
    let (page, ticket) = link.split_once("?login=").unwrap_or_else(|| panic!("no sign-in ticket in {link}"));
    assert!(!ticket.is_empty(), "{link}");
    page.to_owned()
}

/// A client that does not follow redirects, so the tests see the sign-in's `303`.
fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().redirect(reqwest::redirect::Policy::none()).build().unwrap()
}

/// GETs `url` with `cookie` and `token` (each optional): status, `Set-Cookie` `name=value`
/// pairs, and the body.
async fn get(url: &str, cookie: Option<&str>, token: Option<&str>) -> (u16, Vec<String>, String) {
    let mut request = no_redirects().get(url);
    if let Some(cookie) = cookie {
        request = request.header("Cookie", cookie);
    }
    if let Some(token) = token {
        request = request.header("Authorization", format!("Bearer {token}"));
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let cookies = response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok()?.split(';').next().map(str::to_owned))
        .collect();
    (status, cookies, response.text().await.unwrap())
}

/// POSTs the payment page's form `action` as `token` (or anonymously) with `session` (a signed-in
/// browser's cookie, if any), as a browser that opened the page would: its nonce cookie and form
/// token, from a visit made with the session, or else by an API client (Bob's, which any user
/// can be). Returns the status and the page.
async fn submit(page: &str, action: &str, token: Option<&str>, session: Option<&str>) -> (u16, String) {
    let visitor = if session.is_some() { None } else { token.or(Some(BOB)) };
    let (status, cookies, shown) = get(page, session, visitor).await;
    assert_eq!(status, 200, "{shown}");
    let nonce = cookies.into_iter().find(|c| c.starts_with("pay_nonce=")).unwrap();
    let form_token = elicit_test_support::payment::hidden_token(&shown).unwrap();
    let cookie = match session {
        Some(session) => format!("{nonce}; {session}"),
        None => nonce,
    };
    let mut request = http_client()
        .post(format!("{page}/{action}"))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .header("Cookie", cookie);
    if let Some(token) = token {
        request = request.header("Authorization", format!("Bearer {token}"));
    }
    let response = request.body(format!("csrf={form_token}")).send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

/// Alice's flow from the payment step, approved, to the booking.
async fn alice_books(url: &str, state: &str) {
    let (_, confirm) = book_trip(url, Some(ALICE), Some(json!({"payment": {"action": "accept"}})), Some(state)).await;
    let state = state_of(&confirm);
    assert!(confirm["result"]["inputRequests"]["confirm"].is_object(), "{confirm}");
    let answer = json!({"confirm": {"action": "accept", "content": {"confirm": true}}});
    let (_, booked) = book_trip(url, Some(ALICE), Some(answer), Some(&state)).await;
    let text = booked["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.starts_with("Booked!"), "{booked}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_needs_a_known_bearer_token() {
    let server = start();
    assert_eq!(book_trip(&server.mcp_url(), None, None, None).await.0, 401);
    assert_eq!(book_trip(&server.mcp_url(), Some("token-mallory"), None, None).await.0, 401);
    assert_eq!(book_trip(&server.mcp_url(), Some(BOB), None, None).await.0, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_of_alice_is_refused_for_bob() {
    let server = start();
    let url = server.mcp_url();
    let (_, first) = book_trip(&url, Some(ALICE), None, None).await;
    let state = state_of(&first);
    let (status, refused) = book_trip(&url, Some(BOB), Some(trip()), Some(&state)).await;
    assert_eq!(status, 200, "{refused}");
    assert_eq!(refused["error"]["code"], json!(-32602), "{refused}");
    // The same state still works for Alice.
    let (_, continued) = book_trip(&url, Some(ALICE), Some(trip()), Some(&state)).await;
    assert!(continued["result"]["inputRequests"]["payment"].is_object(), "{continued}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_alice_can_approve_her_payment_and_then_she_books() {
    let server = start();
    let url = server.mcp_url();
    let (link, state) = alice_to_payment(&url).await;
    let pay = page_of(&link);

    let (status, page) = submit(&pay, "approve", Some(BOB), None).await;
    assert_eq!(status, 409, "bob: {page}");
    assert!(page.contains("belongs to another user"), "bob: {page}");
    // Nobody: a browser that did not sign in with the link.
    let (status, _, page) = get(&pay, None, None).await;
    assert_eq!(status, 403, "{page}");
    assert!(page.contains("id=\"sign-in\""), "{page}");
    let (status, page) = submit(&pay, "approve", None, None).await;
    assert_eq!(status, 403, "nobody: {page}");
    assert!(page.contains("id=\"sign-in\""), "nobody: {page}");
    // Alice's API client, with her bearer token.
    let (status, page) = submit(&pay, "approve", Some(ALICE), None).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Payment approved"), "{page}");
    alice_books(&url, &state).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alice_signs_in_with_her_payment_link_once_and_books() {
    let server = start();
    let url = server.mcp_url();
    let (link, state) = alice_to_payment(&url).await;
    let pay = page_of(&link);

    // Opening the link: a session cookie, and the page without the ticket.
    let (status, cookies, page) = get(&link, None, None).await;
    assert_eq!(status, 303, "{page}");
    let session = cookies.into_iter().find(|c| c.starts_with("pay_session=")).unwrap();
    // The link works once: opened again elsewhere, or by Bob's client, it signs no one in.
    for (who, token) in [("another browser", None), ("bob", Some(BOB))] {
        let (status, cookies, page) = get(&link, None, token).await;
        assert_eq!(status, 403, "{who}: {page}");
        assert!(!cookies.iter().any(|c| c.starts_with("pay_session=")), "{who}: {cookies:?}");
    }
    let (status, _, page) = get(&pay, Some(&session), None).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Signed in as <strong id=\"user\">alice</strong>"), "{page}");
    // Bob's credentials with Alice's session decide nothing.
    let (status, page) = submit(&pay, "approve", Some(BOB), Some(&session)).await;
    assert_eq!(status, 403, "{page}");
    // Alice's browser, no bearer token: her session decides.
    let (status, page) = submit(&pay, "approve", None, Some(&session)).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Payment approved"), "{page}");
    alice_books(&url, &state).await;
}

/// Who answers the form of `who`.
#[derive(elicit_runtime::Elicit)]
struct Go {
    go: bool,
}

/// `McpServerBuilder::principal`: a hook of the server's own (here a header) names the principal;
/// the state is bound to it and the handler sees it as `flow.principal()`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_builder_hook_names_the_principal() {
    use std::sync::Arc;

    use elicit_runtime::rmcp::McpServer;
    use elicit_runtime::server::{Answer, Engine, Flow, FlowError};
    use elicit_runtime::state::KeyRing;
    use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};

    async fn who(flow: Flow) -> Result<CallToolResult, FlowError> {
        let principal = flow.principal().unwrap_or("nobody").to_owned();
        let went = matches!(flow.form::<Go>("go").await?, Answer::Accepted(Go { go: true }));
        Ok(CallToolResult::success(vec![ContentBlock::text(format!("{principal}: {went}"))]))
    }

    let engine = Engine::builder("hooked", KeyRing::generate()).build();
    let server = McpServer::builder("hooked", "1", engine)
        .principal(|ctx| {
            let parts = ctx.extensions.get::<axum::http::request::Parts>()?;
            parts.headers.get("x-user")?.to_str().ok().map(str::to_owned)
        })
        .tool(Tool::new("who", "Says who you are", Arc::new(JsonObject::new())), who)
        .build()
        .unwrap();
    let url = server::serve(server).await;

    let call = async |user: &str, responses: Option<Value>, state: Option<&str>| -> Value {
        let body = call_body("who", responses, state);
        let response = http_client()
            .post(&url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", "tools/call")
            .header("Mcp-Name", "who")
            .header("x-user", user)
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        response.json().await.unwrap()
    };
    let first = call("alice", None, None).await;
    let state = state_of(&first);
    let go = json!({"go": {"action": "accept", "content": {"go": true}}});
    let refused = call("bob", Some(go.clone()), Some(&state)).await;
    assert_eq!(refused["error"]["code"], json!(-32602), "{refused}");
    let done = call("alice", Some(go), Some(&state)).await;
    assert_eq!(done["result"]["content"][0]["text"], json!("alice: true"), "{done}");
}

/// POSTs `message` to `url` on the 2025-era session `session`, as `token`; the HTTP status.
async fn on_session(url: &str, session: &str, token: &str, message: &Value) -> u16 {
    http_client()
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2025-11-25")
        .header("Mcp-Session-Id", session)
        .header("Authorization", format!("Bearer {token}"))
        .body(message.to_string())
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// A 2025-era session belongs to the principal that opened it: Bob's messages on Alice's session
/// id (an answer to one of her pushed asks, a notification) are refused, hers are taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_session_is_bound_to_the_principal_that_opened_it() {
    let server = start();
    let url = server.mcp_url();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "alice", "version": "1.0.0"}}});
    let opened = http_client()
        .post(&url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("Authorization", format!("Bearer {ALICE}"))
        .body(init.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(opened.status(), 200);
    let session = opened.headers().get("mcp-session-id").unwrap().to_str().unwrap().to_owned();
    let answer = json!({"jsonrpc": "2.0", "id": 0, "result": {"action": "accept", "content": {"name": "Bob"}}});
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(on_session(&url, &session, BOB, &answer).await, 404, "Bob's answer was taken on Alice's session");
    assert_eq!(on_session(&url, &session, BOB, &initialized).await, 404);
    assert_eq!(on_session(&url, &session, ALICE, &initialized).await, 202, "Alice's own session refused her");
    drop(opened);
}
