//! A real browser on the payment page: the real `elicit` books a trip against a real
//! `travel-server`, its `--browser` command hands the consented URL to this test, and a headless
//! Chromium, driven over the Chrome DevTools protocol, opens the page and clicks Approve (or
//! Deny). The browser keeps the page's nonce cookie and posts the form's hidden token by itself,
//! so this is the anti-forgery check as users meet it; elicit's next retry then completes.
//!
//! With bearer tokens on, the browser signs in with the one-time ticket of the payment link (a
//! session cookie, then the clean page) and approves as the user who started the payment, while
//! a browser that did not sign in, or replays the link, is refused.
//!
//! Everything stays on loopback. Without Chromium installed the tests are skipped with a message
//! — except under `CI`, where its absence fails them (scripts/test.sh installs it).

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::{cli, skip};

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tungstenite::{Message, WebSocket};

use cli::{Browser, Run, Sandbox, TravelServer, elicit};

/// The bound on each test: the `elicit` run, and every wait on the browser.
const LIMIT: Duration = Duration::from_secs(55);
/// How long Chromium may take to start and print its DevTools address.
const BROWSER_STARTUP: Duration = Duration::from_secs(20);
/// How often the page is looked at while waiting for it.
const POLL: Duration = Duration::from_millis(100);

/// One Chromium at a time: the machine is small and each test starts its own.
static ONE_BROWSER: Mutex<()> = Mutex::new(());

/// Chromium's path: `/usr/bin/chromium` (Debian's package) or `chromium` on the `PATH`.
fn chromium() -> Option<PathBuf> {
    let debian = PathBuf::from("/usr/bin/chromium");
    if debian.is_file() {
        return Some(debian);
    }
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .map(|dir| dir.join("chromium"))
        .find(|candidate| candidate.is_file())
}

/// Chromium's path, or `None` after a SKIPPED line when it is missing outside CI.
fn chromium_or_skip(test: &str) -> Option<PathBuf> {
    if let Some(path) = chromium() {
        return Some(path);
    }
    skip::missing_tool(test, "chromium", "apt-get install chromium");
    None
}

// ---- Chromium and the DevTools protocol ----

/// A headless Chromium with a fresh profile, closed (or killed) when dropped.
struct Chromium {
    child: Child,
    devtools: Cdp,
    stderr: Arc<Mutex<Vec<String>>>,
    _profile: tempfile::TempDir,
}

impl Chromium {
    fn start(path: &Path) -> Chromium {
        let profile = tempfile::Builder::new().prefix("elicit-chromium").tempdir().expect("a profile folder");
        let mut child = Command::new(path)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-quic",
                // Containers give /dev/shm a few megabytes; Chromium then crashes tabs.
                "--disable-dev-shm-usage",
                // Loopback only, whatever proxy the environment names.
                "--no-proxy-server",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", path.display()));
        let stderr = child.stderr.take().expect("stderr is piped");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (found, address) = mpsc::channel();
        {
            let lines = lines.clone();
            // Keeps draining stderr for the life of the browser so it never blocks on a full pipe.
            std::thread::spawn(move || {
                let mut found = Some(found);
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    if let Some(url) = line.strip_prefix("DevTools listening on ")
                        && let Some(found) = found.take()
                    {
                        let _ = found.send(url.trim().to_owned());
                    }
                    lines.lock().unwrap_or_else(|e| e.into_inner()).push(line);
                }
            });
        }
        let Ok(url) = address.recv_timeout(BROWSER_STARTUP) else {
            let _ = child.kill();
            let _ = child.wait();
            let seen = lines.lock().unwrap_or_else(|e| e.into_inner()).join("\n");
            panic!("Chromium did not print its DevTools address within {BROWSER_STARTUP:?}; stderr:\n{seen}");
        };
        let devtools = Cdp::connect(&url);
        Chromium { child, devtools, stderr: lines, _profile: profile }
    }

    /// Opens `url` in a new tab; returns the DevTools session attached to it.
    fn open(&mut self, url: &str) -> String {
        let target = self.devtools.call(None, "Target.createTarget", json!({"url": url})).expect("a new tab");
        let target = target["targetId"].as_str().expect("a target id").to_owned();
        let attached = self
            .devtools
            .call(None, "Target.attachToTarget", json!({"targetId": target, "flatten": true}))
            .expect("attach to the tab");
        attached["sessionId"].as_str().expect("a session id").to_owned()
    }

    /// Opens `url` in a new tab of a fresh browser context (its own cookies, as another browser
    /// would have); returns the DevTools session attached to it.
    fn open_isolated(&mut self, url: &str) -> String {
        let context = self.devtools.call(None, "Target.createBrowserContext", json!({})).expect("a browser context");
        let context = context["browserContextId"].as_str().expect("a context id").to_owned();
        let target = self
            .devtools
            .call(None, "Target.createTarget", json!({"url": url, "browserContextId": context}))
            .expect("a new tab");
        let target = target["targetId"].as_str().expect("a target id").to_owned();
        let attached = self
            .devtools
            .call(None, "Target.attachToTarget", json!({"targetId": target, "flatten": true}))
            .expect("attach to the tab");
        attached["sessionId"].as_str().expect("a session id").to_owned()
    }

    /// Evaluates `expression` in the tab's page; `None` while the page cannot answer (it is
    /// loading or navigating).
    fn evaluate(&mut self, session: &str, expression: &str) -> Option<Value> {
        let reply = self
            .devtools
            .call(Some(session), "Runtime.evaluate", json!({"expression": expression, "returnByValue": true}))
            .ok()?;
        if reply.get("exceptionDetails").is_some() {
            return None;
        }
        reply["result"].get("value").cloned().filter(|v| !v.is_null())
    }

    /// Polls `expression` until it yields a value, for at most `limit`.
    fn wait_for(&mut self, session: &str, expression: &str, limit: Duration, what: &str) -> Value {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(value) = self.evaluate(session, expression) {
                return value;
            }
            if Instant::now() > deadline {
                let page = self.evaluate(session, "document.documentElement.outerHTML").unwrap_or_default();
                panic!("{what} within {limit:?}; the page:\n{page}\nChromium's stderr:\n{}", self.stderr());
            }
            std::thread::sleep(POLL);
        }
    }

    /// Clicks the element with id `id` as a user would: real mouse events at its centre.
    fn click(&mut self, session: &str, id: &str, limit: Duration) {
        let expression = format!(
            "(() => {{ const el = document.getElementById('{id}'); \
               if (document.readyState !== 'complete' || !el) return null; \
               el.scrollIntoView({{block: 'center'}}); const r = el.getBoundingClientRect(); \
               return [r.left + r.width / 2, r.top + r.height / 2]; }})()"
        );
        let at = self.wait_for(session, &expression, limit, &format!("no #{id} button on the page"));
        let (x, y) = (at[0].as_f64().expect("x"), at[1].as_f64().expect("y"));
        for kind in ["mouseMoved", "mousePressed", "mouseReleased"] {
            let event = json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1});
            self.devtools
                .call(Some(session), "Input.dispatchMouseEvent", event)
                .unwrap_or_else(|e| panic!("{kind}: {e}"));
        }
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap_or_else(|e| e.into_inner()).join("\n")
    }
}

impl Drop for Chromium {
    fn drop(&mut self) {
        // A clean close lets Chromium take its helper processes down with it.
        let _ = self.devtools.call(None, "Browser.close", json!({}));
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A DevTools protocol connection: JSON commands over a WebSocket, answered by id; events are
/// skipped.
struct Cdp {
    socket: WebSocket<TcpStream>,
    next_id: u64,
}

/// The bound on one DevTools command.
const COMMAND: Duration = Duration::from_secs(10);

impl Cdp {
    fn connect(url: &str) -> Cdp {
        let host = url
            .strip_prefix("ws://")
            .and_then(|rest| rest.split('/').next())
            .unwrap_or_else(|| panic!("not a ws:// DevTools address: {url}"));
        let addr: SocketAddr = host.parse().unwrap_or_else(|e| panic!("{host}: {e}"));
        assert!(addr.ip().is_loopback(), "DevTools listens on {addr}, not loopback");
        let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect to DevTools");
        stream.set_read_timeout(Some(COMMAND)).expect("timeout");
        let (socket, _) =
            tungstenite::client(url, stream).unwrap_or_else(|e| panic!("DevTools handshake with {url}: {e}"));
        // Short reads from here on, so each command is bounded by its own deadline.
        socket.get_ref().set_read_timeout(Some(Duration::from_millis(200))).expect("timeout");
        Cdp { socket, next_id: 1 }
    }

    /// Sends `method` (to the tab of `session`, or to the browser) and waits for its answer.
    fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next_id;
        self.next_id += 1;
        let mut command = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            command["sessionId"] = json!(session);
        }
        self.socket.send(Message::text(command.to_string())).map_err(|e| format!("{method}: sending: {e}"))?;
        let deadline = Instant::now() + COMMAND;
        loop {
            if Instant::now() > deadline {
                return Err(format!("{method}: no answer within {COMMAND:?}"));
            }
            let message = match self.socket.read() {
                Ok(message) => message,
                Err(tungstenite::Error::Io(e))
                    if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) =>
                {
                    continue;
                }
                Err(e) => return Err(format!("{method}: {e}")),
            };
            let Message::Text(text) = message else { continue };
            let reply: Value = serde_json::from_str(text.as_str()).map_err(|e| format!("{method}: {e}: {text}"))?;
            if reply.get("id") != Some(&json!(id)) {
                continue; // an event, or the answer to an earlier command that timed out
            }
            return match reply.get("error") {
                Some(error) => Err(format!("{method}: {error}")),
                None => Ok(reply.get("result").cloned().unwrap_or(Value::Null)),
            };
        }
    }
}

// ---- the tests ----

fn answers() -> Value {
    json!({
        "trip": {"action": "accept", "content": {
            "from": "CDG", "to": "JFK", "depart": "2026-09-01", "travellers": 2, "cabin": "business",
            "meals": ["vegan"], "extras": ["lounge"], "email": "ada@example.com"}},
        "payment": {"action": "accept"},
        "confirm": {"action": "accept", "content": {"confirm": true}},
    })
}

/// Runs `elicit call … book_trip --answers FILE --browser CMD`; the browser command only records
/// the URL, and the test opens it in Chromium and clicks `button`. Returns the run and the title
/// of the page the click led to.
fn book_in_chromium(test: &str, button: &str) -> Option<(Run, String)> {
    let path = chromium_or_skip(test)?;
    // Building the binaries (a no-op when they are fresh) is not part of the bounded flow.
    cli::bins();
    let _one = ONE_BROWSER.lock().unwrap_or_else(|e| e.into_inner());
    let started = Instant::now();
    let mut browser = Chromium::start(&path);
    let server = TravelServer::start();
    let sandbox = Sandbox::new();
    let file = sandbox.answers(&answers());
    let command = sandbox.browser(Browser::RecordOnly);
    let mcp = server.mcp_url();
    let run = std::thread::spawn(move || {
        elicit(&["call", "--url", &mcp, "book_trip", "--answers", &file, "--browser", &command], LIMIT)
    });

    // The consented URL, as the `--browser` command received it.
    let url = loop {
        if let Some(url) = sandbox.opened().into_iter().next() {
            break url;
        }
        if run.is_finished() {
            let run = run.join().unwrap_or_else(|_| panic!("the elicit thread panicked"));
            panic!("elicit ended without opening the payment page:\n{run}");
        }
        assert!(started.elapsed() < LIMIT, "elicit did not open the payment page within {LIMIT:?}");
        std::thread::sleep(POLL);
    };
    assert!(url.starts_with(&format!("{}/pay/", server.base_url())), "{url}");

    let tab = browser.open(&url);
    let left = LIMIT.saturating_sub(started.elapsed());
    browser.click(&tab, button, left);
    let done = "(() => document.getElementById('done') ? document.title : null)()";
    let title = browser.wait_for(&tab, done, LIMIT.saturating_sub(started.elapsed()), "the decision was not recorded");
    let run = run.join().unwrap_or_else(|_| panic!("the elicit thread panicked"));
    Some((run, title.as_str().unwrap_or_default().to_owned()))
}

#[test]
fn chromium_approves_the_payment_and_elicit_books() {
    let Some((run, title)) = book_in_chromium("chromium_approves_the_payment_and_elicit_books", "approve") else {
        return;
    };
    assert_eq!(title, "Payment approved");
    run.success()
        .stdout_has("Booked!")
        .stdout_has("CDG → JFK on 2026-09-01, 2 traveller(s), €1888.00 paid")
        .stderr_has("travel-server asks (payment) to open");
}

#[test]
fn chromium_denies_the_payment_and_elicit_says_so() {
    let Some((run, title)) = book_in_chromium("chromium_denies_the_payment_and_elicit_says_so", "deny") else { return };
    assert_eq!(title, "Payment denied");
    run.success().stdout_has("Payment denied on the payment page: nothing was booked.");
}

// ---- with bearer tokens: the browser signs in with the link ----

const ALICE: &str = "token-alice";

/// One 2026-07-28 `tools/call book_trip` as Alice over HTTP (an API client with her bearer
/// token): the JSON-RPC reply.
fn alice_calls(runtime: &tokio::runtime::Runtime, mcp: &str, responses: Option<Value>, state: Option<&str>) -> Value {
    let mut params = json!({"name": "book_trip", "arguments": {}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}, "url": {}}}}});
    if let Some(responses) = responses {
        params["inputResponses"] = responses;
    }
    if let Some(state) = state {
        params["requestState"] = json!(state);
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    runtime.block_on(async {
        let response = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap()
            .post(mcp)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", "tools/call")
            .header("Mcp-Name", "book_trip")
            .header("Authorization", format!("Bearer {ALICE}"))
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        response.json().await.unwrap()
    })
}

fn state_of(reply: &Value) -> String {
    assert_eq!(reply["result"]["resultType"], json!("input_required"), "{reply}");
    reply["result"]["requestState"].as_str().unwrap().to_owned()
}

#[test]
fn with_tokens_chromium_signs_in_with_the_link_approves_and_alice_books() {
    let Some(path) = chromium_or_skip("with_tokens_chromium_signs_in_with_the_link_approves_and_alice_books") else {
        return;
    };
    let bins = cli::bins();
    let _one = ONE_BROWSER.lock().unwrap_or_else(|e| e.into_inner());
    let started = Instant::now();
    let left = || LIMIT.saturating_sub(started.elapsed());
    let mut browser = Chromium::start(&path);
    let mut command = Command::new(&bins.travel_server);
    command
        .args(["--listen", "127.0.0.1:0"])
        .env_remove("ELICIT_STATE_KEYS")
        .env_remove("RUST_LOG")
        .env("ELICIT_BEARER_TOKENS", format!("{ALICE}=alice,token-bob=bob"));
    let server = elicit_test_support::process::Listening::start(command);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mcp = server.mcp_url();

    // Alice's client, to the payment step.
    let first = alice_calls(&runtime, &mcp, None, None);
    let mut trip = json!({"trip": answers()["trip"].clone()});
    // `elicit` fills in the form's defaults; a client of its own sends every field.
    trip["trip"]["content"]["alerts"] = json!(false);
    let payment = alice_calls(&runtime, &mcp, Some(trip), Some(&state_of(&first)));
    let state = state_of(&payment);
    let link = payment["result"]["inputRequests"]["payment"]["params"]["url"]
        .as_str()
        .unwrap_or_else(|| panic!("no payment step: {payment}"))
        .to_owned();
    let (page, ticket) = link.split_once("?login=").unwrap_or_else(|| panic!("no sign-in ticket: {link}"));
    assert!(page.starts_with(&format!("{}/pay/", server.base_url())) && !ticket.is_empty(), "{link}");

    // A browser that did not sign in: no form, and it is asked to open the link.
    let anonymous = browser.open(page);
    let asked = "(() => document.getElementById('sign-in') && !document.getElementById('approve') ? true : null)()";
    browser.wait_for(&anonymous, asked, left(), "the anonymous page did not ask to sign in");

    // The user opens the link: signed in as Alice, on the page without the ticket; approves.
    let tab = browser.open(&link);
    let user = "(() => document.getElementById('user') ? [document.getElementById('user').textContent, location.search] : null)()";
    let signed_in = browser.wait_for(&tab, user, left(), "the link did not sign the browser in");
    assert_eq!(signed_in, json!(["alice", ""]), "signed in as Alice, ticket out of the address bar");
    browser.click(&tab, "approve", left());
    let done = "(() => document.getElementById('done') ? document.title : null)()";
    let title = browser.wait_for(&tab, done, left(), "the decision was not recorded");
    assert_eq!(title, json!("Payment approved"));

    // The same link in another browser: used already, nobody signed in.
    let replay = browser.open_isolated(&link);
    let refused = "(() => document.getElementById('login-refused') ? document.body.textContent : null)()";
    let said = browser.wait_for(&replay, refused, left(), "the replayed link was not refused");
    assert!(said.as_str().unwrap_or_default().contains("used already"), "{said}");

    // Alice's client goes on: the approval is hers, and she books.
    let confirm = alice_calls(&runtime, &mcp, Some(json!({"payment": answers()["payment"].clone()})), Some(&state));
    let state = state_of(&confirm);
    assert!(confirm["result"]["inputRequests"]["confirm"].is_object(), "{confirm}");
    let booked = alice_calls(&runtime, &mcp, Some(json!({"confirm": answers()["confirm"].clone()})), Some(&state));
    let text = booked["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.starts_with("Booked!"), "{booked}");
}
