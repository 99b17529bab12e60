//! Helpers for the tests of the `elicit` binary: the real binaries (built once per test crate), a
//! real `travel-server` process killed on drop, a sandbox folder with answers files and stand-in
//! browsers, running `elicit` with a time bound (in a config folder of the test's, whose token
//! files it reads), and a scriptable mock MCP server.

pub mod mock;
#[cfg(unix)]
pub mod terminal;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::process;
use serde_json::Value;

/// The binaries under test.
pub struct Bins {
    /// `elicit`.
    pub elicit: PathBuf,
    /// `travel-server`.
    pub travel_server: PathBuf,
}

/// The `elicit` and `travel-server` binaries, built once per test crate.
///
/// `cargo test -p elicit-tests` does not build other packages' binaries; building them is a no-op
/// cargo run when they are fresh.
pub fn bins() -> &'static Bins {
    static BINS: OnceLock<Bins> = OnceLock::new();
    BINS.get_or_init(|| {
        process::build_bins();
        let bin = |name: &str| {
            let path = process::debug_bin(name);
            assert!(path.is_file(), "built the binaries but {} does not exist", path.display());
            path
        };
        Bins { elicit: bin("elicit"), travel_server: bin("travel-server") }
    })
}

// ---- travel-server ----

/// A running `travel-server --listen 127.0.0.1:0`; killed (and reaped) when dropped.
pub struct TravelServer(process::Listening);

impl TravelServer {
    /// Starts a travel-server and waits until it listens.
    pub fn start() -> TravelServer {
        let mut command = Command::new(&bins().travel_server);
        command
            .args(["--listen", "127.0.0.1:0", "--store", "memory"])
            .env_remove("ELICIT_STATE_KEYS")
            .env_remove("RUST_LOG");
        TravelServer(process::Listening::start(command))
    }

    /// `http://ADDR/mcp`.
    pub fn mcp_url(&self) -> String {
        self.0.mcp_url()
    }

    /// `http://ADDR`, the base of the payment pages.
    pub fn base_url(&self) -> String {
        self.0.base_url()
    }
}

// ---- the sandbox: answers files and stand-in browsers ----

/// What a stand-in browser does with the payment page it is asked to open.
#[derive(Debug, Clone, Copy)]
pub enum Browser {
    /// Submits "Approve" at once.
    Approve,
    /// Submits "Deny" at once.
    Deny,
    /// Returns at once and submits "Approve" after this long (the user is slow).
    ApproveAfter(Duration),
    /// Only records the URL; the test submits the page itself.
    RecordOnly,
}

/// A temporary folder for one test: answers files, browser scripts and their logs.
pub struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    /// A fresh temporary folder, removed when dropped.
    #[allow(clippy::new_without_default, reason = "each sandbox is a new folder on disk, not a default value")]
    pub fn new() -> Sandbox {
        Sandbox { dir: tempfile::Builder::new().prefix("elicit-cli-test").tempdir().expect("a temporary folder") }
    }

    /// The path of `name` inside the folder.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Writes an answers file and returns its path.
    pub fn answers(&self, answers: &Value) -> String {
        let path = self.path("answers.json");
        std::fs::write(&path, serde_json::to_vec_pretty(answers).expect("JSON")).expect("write answers");
        path.to_string_lossy().into_owned()
    }

    /// Writes a stand-in browser script and returns the command `elicit --browser` runs. It
    /// appends every URL it is asked to open to `opened.log`; to submit the page it loads it,
    /// keeps the nonce cookie and the form's hidden token as a browser does, posts them back, and
    /// appends the status line of the page's answer to `page.log`. It speaks HTTP with bash's
    /// `/dev/tcp` (and `sed` to read the page), so it needs no other tool.
    pub fn browser(&self, behaviour: Browser) -> String {
        let submit = match behaviour {
            Browser::Approve => "submit \"$1\" approve".to_owned(),
            Browser::Deny => "submit \"$1\" deny".to_owned(),
            Browser::ApproveAfter(delay) => {
                format!("( sleep {}; submit \"$1\" approve ) </dev/null >/dev/null 2>&1 &", delay.as_secs_f32())
            }
            Browser::RecordOnly => ":".to_owned(),
        };
        let script = format!(
            r#"#!/usr/bin/env bash
# A stand-in browser for the tests: records the URL, then plays the user on the payment page.
set -u
dir="$(cd "$(dirname "$0")" && pwd)"
printf '%s\n' "$1" >> "$dir/opened.log"
# submit URL ACTION: GET the page, then POST its ACTION form with the cookie and hidden token
# (the payment page's form at URL/ACTION, or the page kit's approval page's one form at URL).
submit() {{
    local rest="${{1#http://}}"
    local hostport="${{rest%%/*}}"
    local path="/${{rest#*/}}"
    local page cookie token body
    exec 3<>"/dev/tcp/${{hostport%:*}}/${{hostport##*:}}" || exit 1
    printf 'GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n' "$path" "$hostport" >&3
    page="$(cat <&3)"
    exec 3<&-
    cookie="$(printf '%s\n' "$page" | tr -d '\r' | sed -n 's/^[Ss]et-[Cc]ookie: *\(\(pay_nonce\|elicit_approval_nonce\)=[^;]*\).*/\1/p')"
    token="$(printf '%s\n' "$page" | sed -n 's/.*name="csrf" value="\([^"]*\)".*/\1/p')"
    body="csrf=${{token%%$'\n'*}}"
    target="$path/$2"
    if [ -z "$token" ]; then
        # The page kit's approval page: one form posting to the page, the button as `_action`.
        token="$(printf '%s\n' "$page" | sed -n 's/.*name="_token" value="\([^"]*\)".*/\1/p')"
        body="_token=${{token%%$'\n'*}}&_action=$2"
        target="$path"
    fi
    exec 3<>"/dev/tcp/${{hostport%:*}}/${{hostport##*:}}" || exit 1
    printf 'POST %s HTTP/1.1\r\nHost: %s\r\nCookie: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: %s\r\nConnection: close\r\n\r\n%s' \
        "$target" "$hostport" "${{cookie%%$'\n'*}}" "${{#body}}" "$body" >&3
    head -n 1 <&3 >> "$dir/page.log"
    exec 3<&-
}}
{submit}
"#
        );
        self.script("browser.sh", &script).to_string_lossy().into_owned()
    }

    /// Writes the script `name` (its text, `#!` line included) into the folder, executable; its
    /// path.
    pub fn script(&self, name: &str, text: &str) -> PathBuf {
        let path = self.path(name);
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        path
    }

    /// The URLs the stand-in browser was asked to open.
    pub fn opened(&self) -> Vec<String> {
        std::fs::read_to_string(self.path("opened.log"))
            .map(|t| t.lines().map(str::to_owned).collect())
            .unwrap_or_default()
    }

    /// The status lines the payment page answered the stand-in browser with.
    pub fn page_answers(&self) -> Vec<String> {
        std::fs::read_to_string(self.path("page.log"))
            .map(|t| t.lines().map(|l| l.trim().to_owned()).collect())
            .unwrap_or_default()
    }

    /// Waits until `page.log` has `count` lines (a delayed browser submitting in the background).
    pub fn wait_for_page_answers(&self, count: usize, limit: Duration) -> Vec<String> {
        let deadline = Instant::now() + limit;
        loop {
            let answers = self.page_answers();
            if answers.len() >= count || Instant::now() >= deadline {
                return answers;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

// ---- running elicit ----

/// One finished run of `elicit`.
#[derive(Debug)]
pub struct Run {
    /// How it exited.
    pub status: ExitStatus,
    /// Everything it printed on stdout.
    pub stdout: String,
    /// Everything it printed on stderr.
    pub stderr: String,
    /// How long it ran.
    pub elapsed: Duration,
}

impl Run {
    /// Panics with everything the run printed unless it exited 0.
    pub fn success(self) -> Run {
        assert!(self.status.success(), "elicit failed ({}):\n{self}", self.status);
        self.no_panic()
    }

    /// Panics unless the run exited non-zero (and without a panic).
    pub fn failure(self) -> Run {
        assert!(!self.status.success(), "elicit should have failed:\n{self}");
        assert!(self.status.code().is_some(), "elicit was killed by a signal ({}):\n{self}", self.status);
        self.no_panic()
    }

    fn no_panic(self) -> Run {
        assert!(!self.stderr.contains("panicked"), "elicit panicked:\n{self}");
        self
    }

    /// Panics unless stderr contains `needle`.
    pub fn stderr_has(self, needle: &str) -> Run {
        assert!(self.stderr.contains(needle), "stderr lacks {needle:?}:\n{self}");
        self
    }

    /// Panics unless stdout contains `needle`.
    pub fn stdout_has(self, needle: &str) -> Run {
        assert!(self.stdout.contains(needle), "stdout lacks {needle:?}:\n{self}");
        self
    }
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "--- stdout ---\n{}\n--- stderr ---\n{}\n--- after {:?}", self.stdout, self.stderr, self.elapsed)
    }
}

fn drain(mut pipe: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        let _ = tx.send(String::from_utf8_lossy(&bytes).into_owned());
    });
    rx
}

/// Runs `elicit ARGS` with no standard input and waits at most `limit`; a run over the limit is
/// killed and fails the test.
pub fn elicit(args: &[&str], limit: Duration) -> Run {
    elicit_with_env(args, &[], limit)
}

/// [`elicit`] with `env` set for the run (a config folder, a secret in a variable).
pub fn elicit_with_env(args: &[&str], env: &[(&str, &str)], limit: Duration) -> Run {
    let mut command = Command::new(&bins().elicit);
    command.args(args).envs(env.iter().copied());
    run(command, &format!("elicit {args:?}"), limit)
}

/// Starts `command` (`what`, in messages) without `RUST_LOG`, with `stdin` as its standard input
/// and its standard output and error piped.
fn spawn(command: &mut Command, stdin: Stdio, what: &str) -> Child {
    command
        .env_remove("RUST_LOG")
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"))
}

/// Runs `command` (`what`, in messages) without `RUST_LOG`, with no standard input, and waits at
/// most `limit`; a run over the limit is killed and fails the test.
pub fn run(mut command: Command, what: &str, limit: Duration) -> Run {
    let started = Instant::now();
    let mut child = spawn(&mut command, Stdio::null(), what);
    let stdout = drain(child.stdout.take().expect("piped"));
    let stderr = drain(child.stderr.take().expect("piped"));
    let status = loop {
        if let Some(status) = child.try_wait().unwrap_or_else(|e| panic!("cannot wait for {what}: {e}")) {
            break Some(status);
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let elapsed = started.elapsed();
    // A server child (`--stdio`) may hold the pipes a little longer; never wait forever for it.
    let collect = |rx: mpsc::Receiver<String>| rx.recv_timeout(Duration::from_secs(10)).unwrap_or_default();
    let (stdout, stderr) = (collect(stdout), collect(stderr));
    match status {
        Some(status) => Run { status, stdout, stderr, elapsed },
        None => {
            panic!("{what} ran over {limit:?} and was killed\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}")
        }
    }
}

// ---- elicit's config folder ----

/// Runs `elicit ARGS` as [`elicit`] does, with `ELICIT_CONFIG_DIR=config`.
pub fn elicit_in(config: &Path, args: &[&str], limit: Duration) -> Run {
    elicit_with_env(args, &[("ELICIT_CONFIG_DIR", &config.to_string_lossy())], limit)
}

/// Starts `elicit ARGS` with `ELICIT_CONFIG_DIR=config`, without `RUST_LOG`, and with every
/// standard stream piped: no terminal, the test reads what it says and plays the person on its
/// standard input.
pub fn spawn_elicit_in(config: &Path, args: &[&str]) -> Child {
    let mut command = Command::new(&bins().elicit);
    command.args(args).env("ELICIT_CONFIG_DIR", config);
    spawn(&mut command, Stdio::piped(), &format!("elicit {args:?}"))
}

/// The token files `elicit` keeps under `config`.
pub fn token_files(config: &Path) -> Vec<PathBuf> {
    match std::fs::read_dir(config.join("tokens")) {
        Ok(entries) => entries.map(|e| e.expect("a token file").path()).collect(),
        Err(_) => Vec::new(),
    }
}

/// The one token file under `config`, which only its owner may read (0600), in a folder only its
/// owner may enter (0700).
#[cfg(unix)]
pub fn kept_token(config: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;

    let files = token_files(config);
    assert_eq!(files.len(), 1, "{files:?}");
    let mode = |p: &Path| std::fs::metadata(p).expect("a token path").permissions().mode() & 0o777;
    assert_eq!(mode(&files[0]), 0o600, "{}", files[0].display());
    assert_eq!(mode(&config.join("tokens")), 0o700);
    files[0].clone()
}

// ---- the payment page ----

/// Plays the user on the payment page at `url` (http://HOST:PORT/PATH on loopback): loads it,
/// then clicks the button of form `action` (`approve` or `deny`) with the cookie and hidden token
/// the page gave. Returns the status code of the submission.
pub fn http_submit(url: &str, action: &str) -> u16 {
    let host = url::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("not a URL: {url}"));
    assert!(
        host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback()),
        "only loopback is ever contacted, not {host}"
    );
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime for one submission");
    let http =
        reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(10)).build().expect("an HTTP client builds");
    runtime.block_on(async {
        let visit = crate::payment::visit_page(&http, url).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(visit.status, 200, "the page did not show its form: {}", visit.body);
        assert!(visit.cookie.is_some(), "no nonce cookie set by {url}: {}", visit.body);
        visit.submit(&http, action).await.unwrap_or_else(|e| panic!("{e}")).0
    })
}
