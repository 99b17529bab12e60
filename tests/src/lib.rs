//! What the tests, benchmarks, load generator and fuzz targets share: finding the workspace and its
//! target folder, building the workspace's binaries with a time bound, and starting a server
//! process that is waited for through its `listening on http://ADDR/mcp` line and killed on drop
//! ([`process`]); the one JSON-RPC-over-HTTP client ([`mcp`]); the payment-page submitter
//! ([`payment`]); and the representative form types ([`forms`]).
//!
//! The test crates under `tests/` keep their `support`, `clisupport` and `common` modules as thin
//! layers over this library, with the names the tests already use. With `default-features = false`
//! (the fuzz targets) only the forms and the process helpers are built.

#![allow(clippy::panic, reason = "test helpers report a failure by panicking, with the reason")]

#[allow(missing_docs, reason = "a field's doc comment becomes its form's description; most need none")]
pub mod forms;
#[cfg(feature = "net")]
pub mod mcp;
#[cfg(feature = "net")]
pub mod payment;
pub mod process;
