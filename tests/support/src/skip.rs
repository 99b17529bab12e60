//! A test that needs a tool the machine lacks skips itself, visibly: one `SKIPPED TEST: WHY` line
//! on the process's stderr (the harness captures what a passing test prints; scripts/test.sh
//! collects these lines into its tally). Under `CI` a missing tool fails the test instead.

use std::io::Write;

/// Whether this run is CI's: `CI` set to anything but empty or `false`.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|value| !value.is_empty() && value != "false")
}

/// Reports that `test` skips because `tool` is not installed (`install` says how to get it); panics
/// under CI, where a missing tool is a failure.
pub fn missing_tool(test: &str, tool: &str, install: &str) {
    assert!(!in_ci(), "{test}: `{tool}` is not installed, and CI is set: scripts/test.sh installs it ({install})");
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: `{tool}` is not installed ({install})");
}
