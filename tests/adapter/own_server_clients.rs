//! `own-server` (an rmcp `#[tool_router]` server written against the public API) driven by every
//! client it is meant for, on both transports: the official TypeScript SDK v1 (a 2025-11-25 host)
//! over stdio and over Streamable HTTP with rmcp's default config, one session making every call
//! in turn; the `elicit` binary in a 2025-era session (forms and the page) and in both eras on the
//! tool whose arguments a form completes; and, on stdio, the raw wire: a 2026-07-28 URL ask
//! carries no `elicitationId`, and a replayed round does not run the `once` again.

use std::process::Stdio;
use std::time::Duration;

use elicit_test_support::cli::{Browser, Sandbox};
use elicit_test_support::peers::clients::{Conversation, Sdk, Target as PeerTarget};
use elicit_test_support::server::http::{browser_get, browser_submit};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

use crate::own_server::{
    OwnServer, SESSION_2025, Target, approve_every_outcome, call, greet_every_outcome, own_server_bin,
};

/// How long one message of `own-server` may take to arrive.
const EVENT: Duration = Duration::from_secs(60);

// ---- the TypeScript SDK v1: one session, every tool and outcome ----

/// The calls of the session, in order (see tests/peers/ts_v1_session.mjs), with what each must
/// end with. The last is no URL step: on stdio the server (and its page) ends with the session,
/// which the peer closes as soon as its last call ended.
fn session_calls() -> Vec<(Value, &'static str)> {
    vec![
        (json!({"tool": "greet", "form": {"name": "Ada"}}), "Hello, Ada!"),
        (json!({"tool": "greet", "form": "decline"}), "You declined to give your name."),
        (json!({"tool": "greet", "form": "cancel"}), "Greeting cancelled."),
        // The URL step: the page of the server's own is approved, then denied, as a browser does.
        (json!({"tool": "approve", "url": "accept", "page": "approve"}), "Transfer approved."),
        (json!({"tool": "approve", "url": "accept", "page": "deny"}), "Transfer denied on the page."),
        (json!({"tool": "approve", "url": "decline"}), "You declined to open the page."),
        (json!({"tool": "approve", "url": "cancel"}), "Transfer cancelled."),
        // `Parameters<FormArgs<Order>>`: the valid quantity is kept, only the missing item is asked.
        (json!({"tool": "order", "arguments": {"quantity": 2}, "form": {"item": "tea"}}), ": 2 × tea."),
        (json!({"tool": "order", "arguments": {"quantity": 12}, "form": "decline"}), "Nothing ordered."),
        (json!({"tool": "order", "form": "cancel"}), "Nothing ordered."),
        // `TaskSupport::Optional` for a client without the Tasks extension: an ordinary call.
        (json!({"tool": "reserve", "form": {"seats": 3}}), "Holding 3 seat(s)."),
    ]
}

/// Every call of [`session_calls`] on one session of the SDK: each ends with its handler's own
/// text; each form asks what it should; each URL request carries the `elicitationId` that
/// 2025-11-25 requires, names the server's own page for that step, and a step the page decided
/// is reported complete (on stdio, where one stream orders it before the session closes).
async fn every_tool_and_outcome(target: Target<'_>) {
    let calls = session_calls();
    let plan = Value::Array(calls.iter().map(|(call, _)| call.clone()).collect());
    let server_bin = own_server_bin();
    let url = match &target {
        Target::Http(server) => Some(server.mcp_url()),
        Target::Stdio => None,
    };
    let peer_target = match &url {
        Some(url) => PeerTarget::Url(url),
        None => PeerTarget::StdioOf(&server_bin),
    };
    let mut peer = Conversation::start_script(Sdk::TsV1, "tests/peers/ts_v1_session.mjs", &plan, peer_target);
    let connected = peer.next().await;
    assert_eq!(connected["event"], "connected", "{connected}");
    assert_eq!(connected["protocolVersion"], "2025-11-25", "{connected}");

    let mut decided = Vec::new();
    let mut completed = Vec::new();
    for (index, (call, expected)) in calls.iter().enumerate() {
        let mut asked = 0;
        let mut page_of_call = None;
        let result = loop {
            let event = peer.next().await;
            match event["event"].as_str() {
                Some("complete") => completed.push(event["elicitationId"].as_str().unwrap().to_owned()),
                Some("form") => {
                    assert_eq!(event["call"], index, "{event}");
                    // Exactly what is missing or invalid: a valid quantity, or none (its default
                    // holds), is not asked again; an out-of-range one is.
                    let wanted = match (&call["tool"], &call["arguments"]["quantity"]) {
                        (tool, _) if tool == "greet" => json!(["name"]),
                        (tool, _) if tool == "reserve" => json!(["seats"]),
                        (_, quantity) if quantity == 12 => json!(["item", "quantity"]),
                        _ => json!(["item"]),
                    };
                    assert_eq!(event["properties"], wanted, "{call}: {event}");
                    asked += 1;
                }
                Some("url") => {
                    assert_eq!(event["call"], index, "{event}");
                    let id = event["elicitationId"].as_str().unwrap_or_else(|| panic!("no elicitationId: {event}"));
                    let page = event["url"].as_str().unwrap();
                    assert!(page.starts_with("http://127.0.0.1:"), "{event}");
                    assert!(page.ends_with(&format!("/pay/{id}")), "{event}");
                    assert_eq!(event["message"], "Approve the transfer of €42.00 on our page.", "{event}");
                    if let Some(decision) = call["page"].as_str() {
                        assert_eq!(browser_submit(page, decision).await, 200, "{event}");
                        decided.push(id.to_owned());
                    }
                    page_of_call = Some(page.to_owned());
                    asked += 1;
                }
                Some("result") => break event,
                _ => panic!("call {index} ({call}) did not end with a result: {:#?}", peer.seen()),
            }
        };
        assert_eq!(result["call"], index, "{result}");
        assert_eq!(asked, 1, "{call}: one ask, answered once");
        let text = result["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text: {result}"));
        assert!(text.ends_with(expected), "{call}: {text}");
        assert_ne!(result["result"]["isError"], true, "{result}");
        if call["tool"] == "order" && call["form"].is_object() {
            assert!(text.starts_with("Order #"), "{text}");
        }
        // A step declined or cancelled is released: its page says so and offers no decision.
        if let (Some(page), None) = (&page_of_call, call["page"].as_str()) {
            let (status, body) = browser_get(page).await;
            assert_eq!(status, 410, "{call}: the step's page still takes it: {body}");
            assert!(!body.contains("<form"), "{call}: {body}");
        }
    }
    loop {
        let event = peer.next().await;
        match event["event"].as_str() {
            Some("complete") => completed.push(event["elicitationId"].as_str().unwrap().to_owned()),
            Some("closed") => break,
            _ => panic!("an event after the last call: {:#?}", peer.seen()),
        }
    }
    if matches!(target, Target::Stdio) {
        assert_eq!(completed, decided, "every step decided on its page is reported complete, in order");
    }
    // (On HTTP rmcp sends the completion on the session's GET stream, which the session may close
    // before reading; any it did read names a step decided on the page.)
    assert!(completed.iter().all(|id| decided.contains(id)), "{completed:?} {decided:?}");
    peer.exited().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_sdk_v1_over_stdio_drives_every_tool_and_outcome() {
    every_tool_and_outcome(Target::Stdio).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_sdk_v1_over_http_drives_every_tool_and_outcome() {
    let server = OwnServer::start();
    every_tool_and_outcome(Target::Http(&server)).await;
}

// ---- the `elicit` binary ----

/// `order`'s arguments completed by a form through the CLI, accepted and declined; `key` is the
/// ask's key in the answers file (`arguments` on 2026-07-28, `#1` in a 2025-era session).
fn order_completed(target: &Target<'_>, key: &str, extra: &[&str]) {
    let sandbox = Sandbox::new();
    let mut args = vec!["--args", r#"{"quantity": 2}"#];
    args.extend_from_slice(extra);
    let accept = json!({ key: {"action": "accept", "content": {"item": "tea"}} });
    let run = call(target, "order", &sandbox, &accept, Browser::Approve, &args).success();
    let text = run.stdout.trim();
    assert!(text.starts_with("Order #") && text.ends_with(": 2 × tea."), "{run}");
    call(target, "order", &sandbox, &json!({ key: {"action": "decline"} }), Browser::Approve, &args)
        .success()
        .stdout_has("Nothing ordered.");
}

#[test]
fn elicit_in_a_2025_session_over_stdio_answers_the_form_and_the_page() {
    greet_every_outcome(&Target::Stdio, "#1", SESSION_2025);
    approve_every_outcome(&Target::Stdio, "*", SESSION_2025);
}

#[test]
fn elicit_in_a_2025_session_over_http_answers_the_page() {
    let server = OwnServer::start();
    approve_every_outcome(&Target::Http(&server), "*", SESSION_2025);
}

#[test]
fn elicit_completes_the_arguments_in_both_eras_on_both_transports() {
    let server = OwnServer::start();
    for target in [Target::Http(&server), Target::Stdio] {
        order_completed(&target, "arguments", &["--protocol", "2026-07-28"]);
        order_completed(&target, "#1", SESSION_2025);
    }
}

// ---- the raw wire on stdio ----

/// `own-server --stdio` (its `serve_io_with`), spoken to line by line.
pub(crate) struct Pipe {
    _child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Pipe {
    pub(crate) fn start() -> Pipe {
        let mut child = tokio::process::Command::new(own_server_bin())
            .args(["--stdio", "--page-listen", "127.0.0.1:0"])
            .env_remove("RUST_LOG")
            .env_remove("ELICIT_STATE_KEYS")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Pipe { _child: child, stdin, lines }
    }

    /// Writes `message` as one line.
    pub(crate) async fn send(&mut self, message: &Value) {
        self.stdin.write_all(format!("{message}\n").as_bytes()).await.unwrap();
    }

    /// The next line, raw; the server going silent fails the test.
    pub(crate) async fn line(&mut self) -> String {
        let line = tokio::time::timeout(EVENT, self.lines.next_line()).await.expect("own-server went silent");
        line.unwrap().expect("a line")
    }

    /// The next line, a JSON message.
    pub(crate) async fn message(&mut self) -> Value {
        let line = self.line().await;
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// Sends a 2026-07-28 `tools/call` and returns the raw line answering it.
    pub(crate) async fn call(&mut self, id: u64, params: Value) -> String {
        let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}, "url": {}}}});
        let mut params = params;
        params["_meta"] = meta;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})).await;
        let line = self.line().await;
        let reply: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert_eq!(reply["id"], id, "{line}");
        line
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_ask_on_stdio_carries_no_elicitation_id() {
    let mut pipe = Pipe::start();
    let raw = pipe.call(1, json!({"name": "approve", "arguments": {}})).await;
    let reply: Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(reply["result"]["resultType"], "input_required", "{raw}");
    let ask = &reply["result"]["inputRequests"]["approval"];
    assert_eq!(ask["method"], "elicitation/create", "{raw}");
    let mut members: Vec<&str> = ask["params"].as_object().unwrap().keys().map(String::as_str).collect();
    members.sort_unstable();
    assert_eq!(members, ["message", "mode", "url"], "{raw}");
    assert!(!raw.contains("elicitationId"), "{raw}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_round_on_stdio_does_not_run_the_once_again() {
    let mut pipe = Pipe::start();
    let raw = pipe.call(1, json!({"name": "order", "arguments": {"quantity": 3}})).await;
    let asked: Value = serde_json::from_str(&raw).unwrap();
    let state = asked["result"]["requestState"].as_str().unwrap_or_else(|| panic!("no state: {raw}")).to_owned();
    let retry = json!({"name": "order", "arguments": {"quantity": 3}, "requestState": state,
        "inputResponses": {"arguments": {"action": "accept", "content": {"item": "jam"}}}});
    let text = |raw: &str| -> String {
        let reply: Value = serde_json::from_str(raw).unwrap();
        reply["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text: {raw}")).to_owned()
    };
    let first = text(&pipe.call(2, retry.clone()).await);
    assert!(first.starts_with("Order #") && first.ends_with(": 3 × jam."), "{first}");
    let again = text(&pipe.call(3, retry).await);
    assert_eq!(again, first, "a replay ran the order's effect again");
    // A new flow is a new order.
    let other = pipe.call(4, json!({"name": "order", "arguments": {"item": "jam", "quantity": 3}})).await;
    assert_ne!(text(&other), first, "{other}");
}
