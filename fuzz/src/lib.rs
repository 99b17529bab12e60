//! Shared pieces of the fuzz targets: the forms under test, a deterministic engine and its
//! handler, an in-process client harness, and structure-aware generators of answers.
//!
//! Everything here is deterministic given the fuzz input (one fixed, public key seals every
//! state), so a crash reproduces from its artifact alone and seed tokens stay valid.

#![forbid(unsafe_code)]

pub mod client;
pub mod engine;
#[allow(missing_docs, reason = "a field's doc comment becomes its form description; these need none")]
pub mod forms;
pub mod generate;

use std::future::Future;
use std::sync::OnceLock;

use serde_json::Value;

/// Runs a future to completion on one shared current-thread runtime whose clock is paused: timers
/// (the driver's back-off, the engine's URL wait) fire as soon as nothing else can run.
pub fn block_on<F: Future>(future: F) -> F::Output {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .start_paused(true)
                .build()
                .expect("a current-thread runtime always builds")
        })
        .block_on(future)
}

/// The fuzz input as JSON, when it is JSON.
pub fn json(data: &[u8]) -> Option<Value> {
    serde_json::from_slice(data).ok()
}
