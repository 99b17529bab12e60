//! The official Python SDK v2 client (`mcp==2.3.0`) opens a
//! 2025-11-25 session with `initialize` and books a trip with `travel-server`'s unchanged
//! `book_trip` — over Streamable HTTP and stdio, the same four conversations as the TypeScript
//! SDK v1 test.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::peers;
use elicit_test_support::server;

use peers::clients::{Sdk, book_trip_every_way};
use server::key_b64;
use server::process::ServerProcess;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn book_trip_over_streamable_http() {
    book_trip_every_way(Sdk::PyV2, || {
        let keys = key_b64();
        (Some(ServerProcess::travel(&keys)), keys)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn book_trip_over_stdio() {
    book_trip_every_way(Sdk::PyV2, || (None, key_b64())).await;
}
