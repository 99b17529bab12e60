//! Binaries of the workspace, built once and run as child processes on loopback ports.

use std::io::{BufRead, BufReader, Read as _};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

/// How long building binaries may take: another cargo holding the build lock, or a cold build on
/// a busy machine, must not hang the tests forever.
pub const BUILD_TIMEOUT: Duration = Duration::from_secs(600);
/// How long a server may take to print its address.
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// The workspace's root folder: the parent of the running package's manifest folder as cargo names
/// it at run time (`cargo test`, `cargo bench`, `cargo run` set `CARGO_MANIFEST_DIR`), else as it
/// was when this crate was built.
///
/// The run-time value comes first because a `target/` copied from another checkout holds this
/// crate built there, still naming the other checkout: cargo does not rebuild a crate when only
/// its folder's absolute path changed.
pub fn workspace_dir() -> PathBuf {
    let manifest =
        std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    manifest.join("..")
}

/// The cargo target folder: `CARGO_TARGET_DIR` (relative to the workspace) or `target/`.
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() { dir } else { workspace_dir().join(dir) }
        }
        None => workspace_dir().join("target"),
    }
}

/// The path of the debug binary `name` in the target folder.
pub fn debug_bin(name: &str) -> PathBuf {
    target_dir().join("debug").join(format!("{name}{}", std::env::consts::EXE_SUFFIX))
}

/// The arguments of the one build command of the workspace's binaries: `workspace_build` in
/// `scripts/lib.sh`, which the test command's build step and `conformance.sh` run.
///
/// Cargo unifies features over the packages a command names, and turns dev-dependencies on only
/// when it builds a target that has them (here the benchmarks): any other selection would build
/// the runtime and its dependencies once more with another feature set, and two selections would
/// rebuild each other's binaries.
pub const BUILD_ARGS: [&str; 4] = ["build", "--workspace", "--bins", "--benches"];

/// Runs `cargo` with [`BUILD_ARGS`] and `--quiet` (a no-op after the test command's build step,
/// or when the binaries are fresh), bounded by [`BUILD_TIMEOUT`]. Building every time, rather
/// than only when a file is missing, keeps a stale binary from testing old code. Panics with
/// cargo's stderr when the build fails.
pub fn build_bins() {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let what = format!("`cargo {} --quiet`", BUILD_ARGS.join(" "));
    let mut build = Command::new(&cargo)
        .args(BUILD_ARGS)
        .arg("--quiet")
        .current_dir(workspace_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {} for {what}: {e}", Path::new(&cargo).display()));
    let mut stderr = build.stderr.take().expect("stderr is piped");
    // Read on a thread so that a chatty build cannot fill the pipe and stall.
    let output = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let deadline = Instant::now() + BUILD_TIMEOUT;
    let status = loop {
        match build.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(100)),
            _ => {
                let _ = build.kill();
                let _ = build.wait();
                panic!("{what} did not finish within {BUILD_TIMEOUT:?}");
            }
        }
    };
    assert!(status.success(), "{what} failed:\n{}", output.join().unwrap_or_default());
}

/// A child process's stderr, drained line by line for the process's whole life (so it never blocks
/// on a full pipe) and kept for failure messages.
#[derive(Debug, Clone, Default)]
pub struct StderrLines(Arc<Mutex<Vec<String>>>);

impl StderrLines {
    /// Everything printed so far, a line a line.
    pub fn text(&self) -> String {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).join("\n")
    }
}

/// Spawns `command` (stdin and stdout to null, stderr piped) and waits, at most `bound`, for the
/// first line of its stderr that `announce` recognises: returns the child, what `announce` made of
/// that line, and the stderr, drained for as long as the child lives. A child that does not
/// announce itself in time is killed and reaped, and the panic says that `name` did not `what`
/// (say, "print its address"), with its stderr.
pub fn spawn_announced<T: Send + 'static>(
    command: &mut Command,
    name: &str,
    what: &str,
    bound: Duration,
    announce: impl Fn(&str) -> Option<T> + Send + 'static,
) -> (Child, T, StderrLines) {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
    let stderr = child.stderr.take().expect("stderr is piped");
    let lines = StderrLines::default();
    let (found, announced) = mpsc::channel();
    {
        let lines = lines.clone();
        std::thread::spawn(move || {
            let mut found = Some(found);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(value) = announce(&line)
                    && let Some(found) = found.take()
                {
                    let _ = found.send(value);
                }
                lines.0.lock().unwrap_or_else(|e| e.into_inner()).push(line);
            }
        });
    }
    match announced.recv_timeout(bound) {
        Ok(value) => (child, value, lines),
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{name} did not {what} within {bound:?}; stderr:\n{}", lines.text())
        }
    }
}

/// A server process that printed `listening on http://ADDR/mcp` on stderr; killed (and reaped)
/// when dropped. Its stderr is kept for failure messages ([`StderrLines`]).
pub struct Listening {
    child: Child,
    addr: SocketAddr,
    stderr: StderrLines,
}

impl Listening {
    /// Spawns `command` (stdin and stdout to null, stderr piped) and waits, at most
    /// [`STARTUP_TIMEOUT`], for its `listening on` line, which must name a loopback address.
    pub fn start(mut command: Command) -> Listening {
        let name = Path::new(command.get_program())
            .file_name()
            .map_or_else(|| command.get_program().to_string_lossy().into_owned(), |n| n.to_string_lossy().into_owned());
        let what = "report `listening on http://ADDR/mcp`";
        let (child, addr, stderr) = spawn_announced(&mut command, &name, what, STARTUP_TIMEOUT, listening_addr);
        let listening = Listening { child, addr, stderr };
        assert!(addr.ip().is_loopback(), "{name} listens on {addr}, not loopback");
        listening
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://ADDR/mcp`.
    pub fn mcp_url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// What the process printed on stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.text()
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The address in a `listening on http://ADDR/mcp` line (text may follow after a space).
pub fn listening_addr(line: &str) -> Option<SocketAddr> {
    let rest = line.split("listening on http://").nth(1)?;
    let url = rest.split_whitespace().next()?;
    url.strip_suffix("/mcp")?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::{BUILD_ARGS, listening_addr};

    #[test]
    fn the_tests_build_with_the_scripts_build_command() {
        // This crate is `tests/support/`.
        let lib = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/lib.sh");
        let lib = std::fs::read_to_string(lib).unwrap();
        let line = format!("workspace_build=(cargo {})", BUILD_ARGS.join(" "));
        assert!(lib.lines().any(|l| l == line), "scripts/lib.sh has no line `{line}`");
    }

    #[test]
    fn the_listening_line_names_the_address() {
        assert_eq!(listening_addr("listening on http://127.0.0.1:8080/mcp"), "127.0.0.1:8080".parse().ok());
        assert_eq!(
            listening_addr("bench-server: listening on http://127.0.0.1:9/mcp (2 threads, ours)"),
            "127.0.0.1:9".parse().ok()
        );
        assert_eq!(listening_addr("listening on http://127.0.0.1:8080/"), None);
        assert_eq!(listening_addr("starting"), None);
    }
}
