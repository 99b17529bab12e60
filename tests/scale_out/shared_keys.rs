//! Two `travel-server` processes sharing `ELICIT_STATE_KEYS` serve each other's
//! rounds — the state is all a retry needs — while an instance with other keys refuses the state
//! with `-32602`, and one whose ring puts a new key in front of the shared one still accepts it.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::server;

use elicit_runtime::state::INVALID_STATE_MESSAGE;
use serde_json::{Value, json};

use server::http::{Client, browser_submit};
use server::process::ServerProcess;

fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

fn rating_answers() -> Value {
    json!({
        "rating": accept(json!({"stars": 5, "comment": "asked on A, answered on B"})),
        "contact": accept(json!({"email": "ada@example.com"})),
    })
}

const RATED: &str = "Thanks for 5 star(s) (asked on A, answered on B); we will write to ada@example.com.";

#[tokio::test]
async fn a_flow_started_on_one_instance_finishes_on_another() {
    let keys = server::key_b64();
    let (a, b) = (ServerProcess::travel(&keys), ServerProcess::travel(&keys));
    assert_ne!(a.mcp_url(), b.mcp_url());
    let (on_a, on_b) = (Client::new(&a.mcp_url()), Client::new(&b.mcp_url()));

    let asked = on_a.call("rate_trip", json!({})).await.asked();
    assert_eq!(asked.keys(), ["contact", "rating"]);
    let done = on_b.retry("rate_trip", json!({}), rating_answers(), Some(asked.state())).await;
    assert_eq!(done.text(), RATED);
}

#[tokio::test]
async fn book_trip_hops_between_instances_round_by_round() {
    let keys = server::key_b64();
    let (a, b) = (ServerProcess::travel(&keys), ServerProcess::travel(&keys));
    let (on_a, on_b) = (Client::new(&a.mcp_url()), Client::new(&b.mcp_url()));
    let trip = json!({
        "from": "LHR", "to": "NRT", "depart": "2026-10-12", "travellers": 1, "cabin": "economy",
        "meals": [], "extras": [], "email": "grace@example.com", "alerts": true
    });

    // Round 1 on A, round 2 on B: B opens A's state and asks for the payment on its own page
    // (URL-mode completion lives in the instance's completion store, so the page step stays on B).
    let round1 = on_a.call("book_trip", json!({})).await.asked();
    let round2 = on_b.retry("book_trip", json!({}), json!({"trip": accept(trip)}), Some(round1.state())).await.asked();
    assert_eq!(round2.keys(), ["payment"]);
    let payment = round2.params("payment");
    assert_eq!(payment["message"], "Approve the payment of €129.00 for LHR → NRT on our payment page.");
    let url = payment["url"].as_str().unwrap();
    assert!(url.starts_with(&format!("{}/pay/", b.base_url())), "{url}");
    assert_eq!(browser_submit(url, "approve").await, 200);
    let round3 = on_b
        .retry("book_trip", json!({}), json!({"payment": {"action": "accept"}}), Some(round2.state()))
        .await
        .asked();
    assert_eq!(round3.keys(), ["confirm"]);

    // Round 4 back on A: the trip, the quote and the completed payment all ride in B's state.
    let confirm = json!({"confirm": accept(json!({"confirm": true}))});
    let done = on_a.retry("book_trip", json!({}), confirm, Some(round3.state())).await;
    assert_eq!(
        elicit_test_support::reference::mask_reference(&done.text()),
        "Booked! Reference <ref>: LHR → NRT on 2026-10-12, 1 traveller(s), €129.00 paid. Your e-ticket goes to grace@example.com."
    );
}

#[tokio::test]
async fn an_instance_with_other_keys_refuses_the_state() {
    let shared = server::key_b64();
    let a = ServerProcess::travel(&shared);
    let stranger = ServerProcess::travel(&server::key_b64());
    let asked = Client::new(&a.mcp_url()).call("rate_trip", json!({})).await.asked();

    let refused =
        Client::new(&stranger.mcp_url()).retry("rate_trip", json!({}), rating_answers(), Some(asked.state())).await;
    assert_eq!(refused.error(), (-32602, INVALID_STATE_MESSAGE, None), "{}", refused.body);

    // Rotation across processes: a new key in front of the shared one still opens A's state...
    let rotated = ServerProcess::travel(&format!("{},{shared}", server::key_b64()));
    let done =
        Client::new(&rotated.mcp_url()).retry("rate_trip", json!({}), rating_answers(), Some(asked.state())).await;
    assert_eq!(done.text(), RATED);
    // ...and what the rotated instance seals, A (which lacks the new key) refuses.
    let sealed_new = Client::new(&rotated.mcp_url()).call("rate_trip", json!({})).await.asked();
    let refused =
        Client::new(&a.mcp_url()).retry("rate_trip", json!({}), rating_answers(), Some(sealed_new.state())).await;
    assert_eq!(refused.error(), (-32602, INVALID_STATE_MESSAGE, None), "{}", refused.body);
}
