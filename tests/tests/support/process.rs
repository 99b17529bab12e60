//! The real `travel-server` binary, run as a child process on a loopback port and killed on drop.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// How long building the example servers may take.
const BUILD: Duration = Duration::from_secs(600);
/// How long a server may take to print its address.
const STARTUP: Duration = Duration::from_secs(30);

fn workspace_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() { dir } else { workspace_dir().join(dir) }
        }
        None => workspace_dir().join("target"),
    }
}

/// The `travel-server` binary, built once per test binary.
///
/// `cargo test -p elicit-tests` does not build another package's binaries, so this runs
/// `cargo build -p elicit-examples --bins` (a no-op when they are fresh). Building every time
/// rather than only when the file is missing keeps a stale binary from testing old code.
pub(crate) fn travel_server_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut build = Command::new(&cargo)
            .args(["build", "--quiet", "-p", "elicit-examples", "--bins"])
            .current_dir(workspace_dir())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {} to build travel-server: {e}", PathBuf::from(&cargo).display()));
        let mut stderr = build.stderr.take().expect("stderr is piped");
        let output = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
            text
        });
        // Bounded: another cargo holding the build lock, or a cold build on a busy machine, must
        // not hang the tests forever.
        let deadline = std::time::Instant::now() + BUILD;
        let status = loop {
            match build.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if std::time::Instant::now() < deadline => std::thread::sleep(Duration::from_millis(100)),
                _ => {
                    let _ = build.kill();
                    let _ = build.wait();
                    panic!("`cargo build -p elicit-examples --bins` did not finish within {BUILD:?}");
                }
            }
        };
        assert!(
            status.success(),
            "`cargo build -p elicit-examples --bins` failed:\n{}",
            output.join().unwrap_or_default()
        );
        let bin = target_dir().join("debug").join(format!("travel-server{}", std::env::consts::EXE_SUFFIX));
        assert!(bin.is_file(), "built elicit-examples but {} does not exist", bin.display());
        bin
    })
    .clone()
}

/// A running `travel-server --listen 127.0.0.1:0`; killed (and reaped) when dropped.
pub(crate) struct ServerProcess {
    child: Child,
    addr: SocketAddr,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl ServerProcess {
    /// Starts a travel-server sealing with `keys` (the `ELICIT_STATE_KEYS` value) and waits until
    /// it listens.
    pub(crate) fn travel(keys: &str) -> ServerProcess {
        let mut child = Command::new(travel_server_bin())
            .args(["--listen", "127.0.0.1:0"])
            .env("ELICIT_STATE_KEYS", keys)
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start travel-server: {e}"));
        let stderr = child.stderr.take().expect("stderr is piped");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (found, addr) = mpsc::channel();
        {
            let lines = lines.clone();
            // Keeps draining stderr for the life of the process so it never blocks on a full pipe.
            std::thread::spawn(move || {
                let mut found = Some(found);
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    if let Some(rest) = line.strip_prefix("listening on http://")
                        && let Some(addr) = rest.strip_suffix("/mcp").and_then(|a| a.parse::<SocketAddr>().ok())
                        && let Some(found) = found.take()
                    {
                        let _ = found.send(addr);
                    }
                    lines.lock().unwrap_or_else(|e| e.into_inner()).push(line);
                }
            });
        }
        match addr.recv_timeout(STARTUP) {
            Ok(addr) => {
                assert!(addr.ip().is_loopback(), "travel-server listens on {addr}, not loopback");
                ServerProcess { child, addr, stderr: lines }
            }
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                let seen = lines.lock().unwrap_or_else(|e| e.into_inner()).join("\n");
                panic!("travel-server did not report `listening on http://ADDR/mcp` within {STARTUP:?}; stderr:\n{seen}")
            }
        }
    }

    /// `http://ADDR`, the base of the payment pages.
    pub(crate) fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://ADDR/mcp`.
    pub(crate) fn mcp_url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// What the server printed on stderr so far.
    pub(crate) fn stderr(&self) -> String {
        self.stderr.lock().unwrap_or_else(|e| e.into_inner()).join("\n")
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
