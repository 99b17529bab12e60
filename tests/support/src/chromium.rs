//! A real browser for the tests: a headless Chromium (Debian's `/usr/bin/chromium`, or
//! `chromium` on the `PATH`) with a fresh profile, driven over the Chrome DevTools protocol on a
//! plain WebSocket — open a page, wait for something on it, click, type — and closed when dropped.
//!
//! Without Chromium installed a test is skipped with a message ([`chromium_or_skip`]), except
//! under `CI`, where its absence fails the test (`.ci/run` installs it).

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tungstenite::{Message, WebSocket};

use crate::process::{StderrLines, spawn_announced};

/// How long Chromium may take to start and print its DevTools address.
const STARTUP: Duration = Duration::from_secs(20);
/// How often a page is looked at while waiting for it.
const POLL: Duration = Duration::from_millis(100);
/// The bound on one DevTools command.
const COMMAND: Duration = Duration::from_secs(10);

/// Chromium's path: `/usr/bin/chromium` (Debian's package) or `chromium` on the `PATH`.
pub fn chromium() -> Option<PathBuf> {
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
///
/// # Panics
///
/// When it is missing and `CI` is set.
pub fn chromium_or_skip(test: &str) -> Option<PathBuf> {
    if let Some(path) = chromium() {
        return Some(path);
    }
    crate::skip::missing_tool(test, "chromium", "apt-get install chromium");
    None
}

/// A headless Chromium with a fresh profile, closed (or killed) when dropped.
pub struct Chromium {
    child: Child,
    devtools: Cdp,
    stderr: StderrLines,
    _profile: tempfile::TempDir,
}

impl Chromium {
    /// Starts the Chromium at `path` and connects to its DevTools endpoint.
    ///
    /// # Panics
    ///
    /// When it cannot start or does not print its DevTools address in time.
    pub fn start(path: &Path) -> Chromium {
        let profile = tempfile::Builder::new().prefix("elicit-chromium").tempdir().expect("a profile folder");
        let mut command = Command::new(path);
        command
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
            .arg("about:blank");
        let devtools_url = |line: &str| line.strip_prefix("DevTools listening on ").map(|url| url.trim().to_owned());
        let name = path.display().to_string();
        let (child, url, stderr) =
            spawn_announced(&mut command, &name, "print its DevTools address", STARTUP, devtools_url);
        let devtools = Cdp::connect(&url);
        Chromium { child, devtools, stderr, _profile: profile }
    }

    /// Opens `url` in a new tab; returns the DevTools session attached to it.
    pub fn open(&mut self, url: &str) -> String {
        self.open_tab(json!({"url": url}))
    }

    /// Opens `url` in a new tab of a fresh browser context (its own cookies, as another browser
    /// would have); returns the DevTools session attached to it.
    pub fn open_isolated(&mut self, url: &str) -> String {
        let context = self.devtools.call(None, "Target.createBrowserContext", json!({})).expect("a browser context");
        let context = context["browserContextId"].as_str().expect("a context id").to_owned();
        self.open_tab(json!({"url": url, "browserContextId": context}))
    }

    /// Creates the tab `Target.createTarget` describes with `target`; the session attached to it.
    fn open_tab(&mut self, target: Value) -> String {
        let target = self.devtools.call(None, "Target.createTarget", target).expect("a new tab");
        let target = target["targetId"].as_str().expect("a target id").to_owned();
        let attached = self
            .devtools
            .call(None, "Target.attachToTarget", json!({"targetId": target, "flatten": true}))
            .expect("attach to the tab");
        attached["sessionId"].as_str().expect("a session id").to_owned()
    }

    /// Evaluates `expression` in the tab's page; `None` while the page cannot answer (it is
    /// loading or navigating) or the value is null.
    pub fn evaluate(&mut self, session: &str, expression: &str) -> Option<Value> {
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
    ///
    /// # Panics
    ///
    /// When it yields none within `limit` (`what` says what was awaited; the page is shown).
    pub fn wait_for(&mut self, session: &str, expression: &str, limit: Duration, what: &str) -> Value {
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

    /// The centre of the element with id `id`, once the page is loaded and shows it.
    fn centre(&mut self, session: &str, id: &str, limit: Duration) -> (f64, f64) {
        let expression = format!(
            "(() => {{ const el = document.getElementById('{id}'); \
               if (document.readyState !== 'complete' || !el) return null; \
               el.scrollIntoView({{block: 'center'}}); const r = el.getBoundingClientRect(); \
               return [r.left + r.width / 2, r.top + r.height / 2]; }})()"
        );
        let at = self.wait_for(session, &expression, limit, &format!("no #{id} on the page"));
        (at[0].as_f64().expect("x"), at[1].as_f64().expect("y"))
    }

    /// Clicks the element with id `id` as a user would: real mouse events at its centre.
    ///
    /// # Panics
    ///
    /// When the page does not show it within `limit`, or the browser refuses the events.
    pub fn click(&mut self, session: &str, id: &str, limit: Duration) {
        let (x, y) = self.centre(session, id, limit);
        for kind in ["mouseMoved", "mousePressed", "mouseReleased"] {
            let event = json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1});
            self.devtools
                .call(Some(session), "Input.dispatchMouseEvent", event)
                .unwrap_or_else(|e| panic!("{kind}: {e}"));
        }
    }

    /// Clicks into the field with id `id` and types `text` into it, as keyboard input.
    ///
    /// # Panics
    ///
    /// When the page does not show it within `limit`, or the browser refuses the input.
    pub fn type_into(&mut self, session: &str, id: &str, text: &str, limit: Duration) {
        self.click(session, id, limit);
        self.devtools
            .call(Some(session), "Input.insertText", json!({"text": text}))
            .unwrap_or_else(|e| panic!("typing into #{id}: {e}"));
    }

    /// Sends the DevTools command `method` with `params` to the tab of `session` (a screenshot,
    /// the viewport's size); its result.
    ///
    /// # Errors
    ///
    /// The browser's refusal, as text.
    pub fn command(&mut self, session: &str, method: &str, params: Value) -> Result<Value, String> {
        self.devtools.call(Some(session), method, params)
    }

    /// What Chromium printed on stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.text()
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
