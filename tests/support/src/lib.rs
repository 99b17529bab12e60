//! What the tests, benchmarks, load generator and fuzz targets share: finding the workspace and its
//! target folder, building the workspace's binaries with a time bound, and starting a server
//! process that is waited for through its `listening on http://ADDR/mcp` line and killed on drop
//! ([`process`]); the one JSON-RPC-over-HTTP client ([`mcp`]); the payment-page submitter
//! ([`payment`]); the representative form types ([`forms`]) and values both sides of a format
//! check accept ([`formats`]); a store whose claims are late or lost ([`ledger`], feature `ledger`);
//! and the showcase's booking references ([`mod@reference`]).
//!
//! The behaviour tests' own helpers live here too (feature `harness`, on by default), so that each
//! dependent takes what it uses and nothing is compiled as dead code: [`server`] (keys, a real
//! `travel-server`, the schema-checking MCP client, the engine driver), [`cli`] (the `elicit`
//! binary, a sandbox, a mock server, a pseudo-terminal), [`chromium`] (a headless Chromium over
//! the DevTools protocol), [`spec`] (the protocol's schema and
//! examples), [`rng`] (a deterministic generator), [`redis`] (a private `redis-server`), [`skip`] (a visible skip when a tool is missing),
//! [`peers`] (the official SDK peers), and [`wait`] (bounded waits for a condition). The loadgen and the benchmarks take
//! `default-features = false, features = ["net"]`; the fuzz targets `features = ["ledger"]` (the
//! forms, the formats, the faulty store and the process helpers).

#![allow(clippy::panic, clippy::unwrap_used, reason = "test helpers report a failure by panicking, with the reason")]

pub mod formats;
#[allow(missing_docs, reason = "a field's doc comment becomes its form's description; most need none")]
pub mod forms;
#[cfg(feature = "ledger")]
pub mod ledger;
#[cfg(feature = "net")]
pub mod mcp;
#[cfg(feature = "net")]
pub mod payment;
pub mod process;
pub mod reference;
pub mod rng;

#[cfg(feature = "harness")]
pub mod chromium;
#[cfg(feature = "harness")]
pub mod cli;
#[cfg(feature = "harness")]
pub mod peers;
#[cfg(feature = "harness")]
pub mod redis;
#[cfg(feature = "harness")]
pub mod server;
#[cfg(feature = "harness")]
pub mod skip;
#[cfg(feature = "harness")]
pub mod spec;
#[cfg(feature = "harness")]
pub mod wait;
