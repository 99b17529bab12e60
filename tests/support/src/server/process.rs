//! The real `travel-server` binary, run as a child process on a loopback port and killed on drop
//! (through `crate::process`).

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use crate::process::{Listening, build_bins, debug_bin};

/// The `travel-server` binary, built once per test binary.
///
/// `cargo test -p elicit-tests` does not build another package's binaries, so this runs
/// [`build_bins`]: the test command's build command (a no-op after its build step).
pub fn travel_server_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        build_bins();
        let bin = debug_bin("travel-server");
        assert!(bin.is_file(), "built elicit-examples but {} does not exist", bin.display());
        bin
    })
    .clone()
}

/// A running `travel-server --listen 127.0.0.1:0`; killed (and reaped) when dropped.
pub struct ServerProcess(Listening);

impl ServerProcess {
    /// Starts a travel-server sealing with `keys` (the `ELICIT_STATE_KEYS` value) and waits until
    /// it listens.
    pub fn travel(keys: &str) -> ServerProcess {
        ServerProcess::travel_with(keys, &[])
    }

    /// [`ServerProcess::travel`] with more command-line options (`["--heartbeat-ms", "100"]`).
    pub fn travel_with(keys: &str, options: &[&str]) -> ServerProcess {
        let mut command = Command::new(travel_server_bin());
        command
            .args(["--listen", "127.0.0.1:0", "--store", "memory"])
            .args(options)
            .env("ELICIT_STATE_KEYS", keys)
            .env_remove("RUST_LOG");
        ServerProcess(Listening::start(command))
    }

    /// `http://ADDR`, the base of the payment pages.
    pub fn base_url(&self) -> String {
        self.0.base_url()
    }

    /// `http://ADDR/mcp`.
    pub fn mcp_url(&self) -> String {
        self.0.mcp_url()
    }

    /// What the server printed on stderr so far.
    pub fn stderr(&self) -> String {
        self.0.stderr()
    }
}
