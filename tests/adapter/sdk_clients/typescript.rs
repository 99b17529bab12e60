//! The official TypeScript SDK v1 client (pinned 1.32.2, the client
//! most hosts are built on) opens a 2025-11-25 session with `initialize` and books a trip with
//! `travel-server`'s unchanged `book_trip` handler — over Streamable HTTP and over stdio. Accept all
//! (the payment page completed out of band, the completion notification received), decline at the
//! form, cancel at the URL step, and a form-only client at the URL step.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::peers;
use elicit_test_support::server;

use peers::clients::{Sdk, book_trip_every_way};
use server::key_b64;
use server::process::ServerProcess;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn book_trip_over_streamable_http() {
    book_trip_every_way(Sdk::TsV1, || {
        let keys = key_b64();
        (Some(ServerProcess::travel(&keys)), keys)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn book_trip_over_stdio() {
    book_trip_every_way(Sdk::TsV1, || (None, key_b64())).await;
}
