//! The official TypeScript SDK v1 client (pinned 1.32.2, the client
//! most hosts are built on) opens a 2025-11-25 session with `initialize` and books a trip with
//! `travel-server`'s unchanged `book_trip` handler — over Streamable HTTP and over stdio. Accept all
//! (the payment page completed out of band, the completion notification received), decline at the
//! form, cancel at the URL step, and a form-only client at the URL step. And a person slower than
//! the client's request timeout: kept alive by the server's heartbeats when the client gave a
//! `progressToken`, timed out when it did not.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::peers;
use elicit_test_support::server;

use elicit_test_support::reference::mask_reference;
use peers::clients::{BOOKED, Conversation, Sdk, Target, book_trip_every_way, trip};
use serde_json::json;
use server::http::browser_submit;
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

/// The client's request timeout in the slow-person conversations; the person takes three of them
/// at each step, and the server's heartbeat is a tenth of one.
const SHORT_TIMEOUT_MS: u64 = 1500;

fn slow_person(server: &ServerProcess, progress: bool) -> Conversation {
    let plan = json!({"timeout": SHORT_TIMEOUT_MS, "progress": progress, "trip": trip()});
    Conversation::start_script(Sdk::TsV1, "tests/peers/ts_v1_slow_person.mjs", &plan, Target::Http(server))
}

fn heartbeat_server() -> ServerProcess {
    ServerProcess::travel_with(&key_b64(), &["--heartbeat-ms", &(SHORT_TIMEOUT_MS / 10).to_string()])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_slower_than_the_client_timeout_completes_with_heartbeats() {
    let server = heartbeat_server();
    let mut peer = slow_person(&server, true);
    assert_eq!(peer.connected().await, "2025-11-25");
    // Three timeouts went by on the trip form: the call lived on, kept alive by progress.
    let form = peer.expect("form").await;
    assert_eq!(form["message"], "Where would you like to fly?");
    assert!(form["progressWhileWaiting"].as_u64().unwrap() > 0, "{form}");
    // And as long again before consenting to the payment page; the test then approves it.
    let consented = peer.expect("consented").await;
    assert!(consented["progressWhileWaiting"].as_u64().unwrap() > 0, "{consented}");
    assert_eq!(browser_submit(consented["url"].as_str().unwrap(), "approve").await, 200);
    // The completion comes on the session's GET stream, the confirmation and the result on the
    // call's: nothing orders the two, and the peer waits for the completion before it closes.
    let (mut confirm, mut completed, mut ending) = (None, None, None);
    while confirm.is_none() || completed.is_none() || ending.is_none() {
        let event = peer.next().await;
        match event["event"].as_str() {
            Some("confirm") if confirm.is_none() => confirm = Some(event),
            Some("complete") if completed.is_none() => completed = Some(event),
            Some("result") if confirm.is_some() && ending.is_none() => ending = Some(event),
            _ => panic!("expected the completion, the confirmation and the result; so far: {:#?}", peer.seen()),
        }
    }
    assert_eq!(completed.unwrap()["elicitationId"], consented["elicitationId"]);
    let ending = ending.unwrap();
    let text = ending["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(mask_reference(text), BOOKED, "{ending}");
    peer.expect("closed").await;
    peer.exited().await;
}

/// The same client without a `progressToken` (no `onprogress`): the server has no way to reset
/// the client's timer, and the client gives up on the call at its first timeout. What a host
/// without progress gets: a timeout as long as the person may take.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_progress_token_the_client_times_out_and_receives_no_progress() {
    let server = heartbeat_server();
    let mut peer = slow_person(&server, false);
    peer.connected().await;
    let ending = peer.expect("error").await;
    assert_eq!(ending["code"], -32001, "the SDK's own request timeout: {ending}");
    assert_eq!(ending["progress"], 0, "{ending}");
}
