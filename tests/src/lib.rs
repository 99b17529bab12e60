//! What the tests share (and benches may share): finding the workspace and its target folder,
//! building the workspace's binaries with a time bound, and starting a server process that is
//! waited for through its `listening on http://ADDR/mcp` line and killed on drop.
//!
//! The test crates under `tests/` keep their `support`, `clisupport` and `common` modules as thin
//! layers over this library, with the names the tests already use.

#![allow(clippy::panic, reason = "test helpers report a failure by panicking, with the reason")]

pub mod process;
