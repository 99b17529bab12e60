//! Legacy sessions are stateful (they live in the instance that answered
//! `initialize`, so a load balancer needs affinity on `Mcp-Session-Id`), but the URL-mode step
//! does not need the page on that instance: two `travel-server` instances share a Redis
//! completion store; the TypeScript SDK v1 client's session lives on instance A, and the
//! payment page is submitted on instance B. B's completion wakes A's parked task, A sends
//! `notifications/elicitation/complete`, and the booking finishes.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::peers;
use elicit_test_support::redis::Redis;
use elicit_test_support::server;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::json;

use peers::clients::{BOOKED, Conversation, Sdk, Target, trip};
use server::http::browser_submit;
use server::key_b64;
use server::process::travel_server_bin;

const STARTUP: Duration = Duration::from_secs(20);

/// A `travel-server --store redis://…` on a free loopback port; killed when dropped.
struct Travel {
    child: Child,
    base: String,
}

impl Travel {
    fn start(redis: &Redis, keys: &str) -> Travel {
        let mut child = Command::new(travel_server_bin())
            .args(["--listen", "127.0.0.1:0", "--store", &format!("redis://127.0.0.1:{}", redis.port)])
            .env("ELICIT_STATE_KEYS", keys)
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("travel-server starts");
        let stderr = child.stderr.take().unwrap();
        let (found, address) = mpsc::channel();
        std::thread::spawn(move || {
            let mut found = Some(found);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let addr = line.strip_prefix("listening on http://").and_then(|r| r.strip_suffix("/mcp"));
                if let (Some(addr), Some(tx)) = (addr.and_then(|a| a.parse::<SocketAddr>().ok()), found.take()) {
                    let _ = tx.send(addr);
                }
            }
        });
        let addr = address.recv_timeout(STARTUP).expect("travel-server reports its address");
        Travel { child, base: format!("http://{addr}") }
    }
}

impl Drop for Travel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_submitted_on_another_instance_wakes_the_parked_legacy_task() {
    let Some(redis) = Redis::start_or_skip("legacy_scale_out", None) else { return };
    let keys = key_b64();
    let a = Travel::start(&redis, &keys);
    let b = Travel::start(&redis, &keys);
    let url = format!("{}/mcp", a.base);
    let plan = json!({"trip": trip(), "payment": "accept", "confirm": true, "awaitCompletions": true});
    let mut peer = Conversation::start(Sdk::TsV1, &plan, Target::Url(&url));
    assert_eq!(peer.connected().await, "2025-11-25");
    peer.expect("form").await;
    let step = peer.expect("url").await;
    let page = step["url"].as_str().unwrap();
    let id = step["elicitationId"].as_str().unwrap();
    assert_eq!(page, format!("{}/pay/{id}", a.base), "A minted the step");
    // The browser lands on B (behind a load balancer the page's host reaches any instance).
    let on_b = format!("{}/pay/{id}", b.base);
    assert_eq!(browser_submit(&on_b, "approve").await, 200);
    let (completed, forms, ending) = peer.completion_and_ending().await;
    assert_eq!(completed, id, "A told the client of B's completion");
    assert_eq!(forms.len(), 1, "the confirmation, once: {forms:?}");
    let (text, is_error) = ending.unwrap();
    assert_eq!((elicit_test_support::reference::mask_reference(&text), is_error), (BOOKED.to_owned(), false));
}
