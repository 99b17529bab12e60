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
    unavailable(test, &format!("`{tool}` is not installed ({install})"));
}

/// Reports that `test` skips for `why` (something it needs is not on this machine); panics under
/// CI, where scripts/test.sh installs everything a test needs.
pub fn unavailable(test: &str, why: &str) {
    assert!(!in_ci(), "{test}: {why}, and CI is set: scripts/test.sh installs it");
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why}");
}
