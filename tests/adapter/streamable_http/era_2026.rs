//! End to end over Streamable HTTP against a real `travel-server` process, with
//! a hand-written client. Every outcome of every step of `book_trip` (form, payment page in URL
//! mode, confirmation), the batched round of `rate_trip`, a form-only client, and an answer that
//! fails validation. Every reply is also checked against the spec's schema by the client.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::server;

use serde_json::{Value, json};

use server::http::{Asked, Client, Reply, browser_get, browser_submit, visit_page};
use server::process::ServerProcess;

/// The trip every booking test answers with.
fn trip() -> Value {
    json!({
        "from": "CDG",
        "to": "JFK",
        "depart": "2026-09-01",
        "travellers": 2,
        "cabin": "business",
        "seat": "window",
        "meals": ["vegan"],
        "extras": ["lounge"],
        "email": "ada@example.com",
        "alerts": false
    })
}

fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

/// Business (€899) plus lounge (€45), for two: €1888.00; reference `CDGJFK-{188800 % 9973}`.
const BOOKED: &str = "Booked! Reference <ref>: CDG → JFK on 2026-09-01, 2 traveller(s), €1888.00 paid. Your e-ticket goes to ada@example.com.";

/// One `book_trip` conversation with one server.
struct Booking {
    client: Client,
}

impl Booking {
    fn new(server: &ServerProcess) -> Self {
        Booking { client: Client::new(&server.mcp_url()) }
    }

    async fn start(&self) -> Reply {
        self.client.call("book_trip", json!({})).await
    }

    async fn answer(&self, responses: Value, asked: &Asked) -> Reply {
        self.client.retry("book_trip", json!({}), responses, Some(asked.state())).await
    }

    /// Round 1 (the trip form) answered: the payment step.
    async fn to_payment(&self) -> Asked {
        let round1 = self.start().await.asked();
        assert_eq!(round1.keys(), ["trip"]);
        let round2 = self.answer(json!({"trip": accept(trip())}), &round1).await.asked();
        assert_eq!(round2.keys(), ["payment"], "after the trip, the payment page");
        round2
    }
}

/// The URL of a URL-mode input request, checked to be this server's payment page, and its id.
fn payment_link(server: &ServerProcess, asked: &Asked) -> (String, String) {
    let params = asked.params("payment");
    assert_eq!(params["mode"], "url", "{params}");
    assert!(params.get("elicitationId").is_none(), "no elicitationId on the 2026-07-28 wire: {params}");
    assert_eq!(params["message"], "Approve the payment of €1888.00 for CDG → JFK on our payment page.");
    let url = params["url"].as_str().unwrap().to_owned();
    let prefix = format!("{}/pay/", server.base_url());
    let id = url.strip_prefix(&prefix).unwrap_or_else(|| panic!("{url} is not under {prefix}")).to_owned();
    assert_eq!(id.len(), 22, "a 128-bit URL-safe id: {id}");
    (url, id)
}

#[tokio::test]
async fn book_trip_accepted_through_all_three_rounds() {
    let server = ServerProcess::travel(&server::key_b64());
    let booking = Booking::new(&server);
    let payment = booking.to_payment().await;
    let (url, _) = payment_link(&server, &payment);

    // The browser: the page shows the approval form, the user approves; a second submission is refused.
    let visit = visit_page(&url).await;
    assert_eq!(visit.status, 200, "{}", visit.body);
    assert!(visit.body.contains("Approve"), "{}", visit.body);
    assert_eq!(visit.submit("approve").await, 200);
    assert_eq!(visit.submit("approve").await, 409, "a step cannot be completed twice");
    assert_eq!(browser_get(&url).await.0, 409, "the page says it was answered");

    let confirm = booking.answer(json!({"payment": {"action": "accept"}}), &payment).await.asked();
    assert_eq!(confirm.keys(), ["confirm"]);
    let params = confirm.params("confirm");
    assert_eq!(params["mode"], "form");
    assert_eq!(params["message"], "Book CDG → JFK on 2026-09-01 for 2 traveller(s), €1888.00 in total?");
    assert_eq!(params["requestedSchema"]["properties"]["confirm"]["type"], "boolean");

    let done = booking.answer(json!({"confirm": accept(json!({"confirm": true}))}), &confirm).await;
    assert_eq!(done.status, 200);
    assert_eq!(elicit_test_support::reference::mask_reference(&done.text()), BOOKED);
}

#[tokio::test]
async fn multi_round_chain_carries_earlier_answers_in_the_state() {
    let server = ServerProcess::travel(&server::key_b64());
    let booking = Booking::new(&server);
    let round1 = booking.start().await.asked();
    let round2 = booking.answer(json!({"trip": accept(trip())}), &round1).await.asked();
    let (url, _) = payment_link(&server, &round2);
    assert_eq!(browser_submit(&url, "approve").await, 200);
    // Each retry sends only the latest round's key; the trip answer rides in the state.
    let round3 = booking.answer(json!({"payment": {"action": "accept"}}), &round2).await.asked();
    let done = booking.answer(json!({"confirm": accept(json!({"confirm": true}))}), &round3).await;
    assert_eq!(elicit_test_support::reference::mask_reference(&done.text()), BOOKED);

    let states = [round1.state(), round2.state(), round3.state()];
    assert!(states[0] != states[1] && states[1] != states[2] && states[0] != states[2], "a fresh state each round");
    let sent: Vec<Vec<String>> = booking
        .client
        .exchanges()
        .iter()
        .map(|e| {
            e.request["params"]["inputResponses"].as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default()
        })
        .collect();
    assert_eq!(sent, [vec![], vec!["trip".to_owned()], vec!["payment".to_owned()], vec!["confirm".to_owned()]]);
    // Every request of the chain is a new JSON-RPC request.
    let mut ids: Vec<u64> = booking.client.exchanges().iter().map(|e| e.request["id"].as_u64().unwrap()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 4, "four distinct JSON-RPC ids");
}

#[tokio::test]
async fn book_trip_form_declined() {
    let server = ServerProcess::travel(&server::key_b64());
    let booking = Booking::new(&server);
    let round1 = booking.start().await.asked();
    let done = booking.answer(json!({"trip": {"action": "decline"}}), &round1).await;
    assert_eq!(done.text(), "No booking made: you declined to give the trip details.");
}

#[tokio::test]
async fn book_trip_form_cancelled() {
    let server = ServerProcess::travel(&server::key_b64());
    let booking = Booking::new(&server);
    let round1 = booking.start().await.asked();
    let done = booking.answer(json!({"trip": {"action": "cancel"}}), &round1).await;
    assert_eq!(done.text(), "Booking cancelled before any details were given.");
}

#[tokio::test]
async fn url_step_accepted_and_completed() {
    let server = ServerProcess::travel(&server::key_b64());
    let booking = Booking::new(&server);
    let payment = booking.to_payment().await;
    let (url, _) = payment_link(&server, &payment);
    assert_eq!(browser_submit(&url, "approve").await, 200);
    let next = booking.answer(json!({"payment": {"action": "accept"}}), &payment).await.asked();
    assert_eq!(next.keys(), ["confirm"], "the URL step resolved, the flow moved on");
}

#[tokio::test]
async fn url_step_declined() {
    let server = ServerProcess::travel(&server::key_b64());
    let booking = Booking::new(&server);
    let payment = booking.to_payment().await;
    let done = booking.answer(json!({"payment": {"action": "decline"}}), &payment).await;
    assert_eq!(done.text(), "You declined to open the payment page: nothing was booked.");
}

#[tokio::test]
async fn url_step_cancelled() {
    let server = ServerProcess::travel(&server::key_b64());
    let booking = Booking::new(&server);
    let payment = booking.to_payment().await;
    let done = booking.answer(json!({"payment": {"action": "cancel"}}), &payment).await;
    assert_eq!(done.text(), "Payment cancelled: nothing was booked.");
}

#[tokio::test]
async fn url_step_accepted_before_the_page_is_submitted_is_asked_again() {
    let server = ServerProcess::travel(&server::key_b64());
    let booking = Booking::new(&server);
    let payment = booking.to_payment().await;
    let (url, _) = payment_link(&server, &payment);

    // Consent only: the page is not submitted yet, so after the engine's bounded wait the same
    // URL elicitation comes back under the same key, with a fresh state, its message saying why.
    let again = booking.answer(json!({"payment": {"action": "accept"}}), &payment).await.asked();
    assert_eq!(again.keys(), ["payment"]);
    let (first, repeated) = (payment.params("payment"), again.params("payment"));
    assert_eq!((&repeated["mode"], &repeated["url"]), (&first["mode"], &first["url"]), "the same page");
    let message = repeated["message"].as_str().unwrap();
    let original = first["message"].as_str().unwrap();
    assert!(message.starts_with(original) && message.contains("not completed yet"), "{message}");
    assert_ne!(again.state(), payment.state(), "a fresh requestState");

    // The page is still open for that step; the user approves, and the next retry completes it.
    let (status, _) = browser_get(&url).await;
    assert_eq!(status, 200);
    assert_eq!(browser_submit(&url, "approve").await, 200);
    let confirm = booking.answer(json!({"payment": {"action": "accept"}}), &again).await.asked();
    assert_eq!(confirm.keys(), ["confirm"]);
    let done = booking.answer(json!({"confirm": accept(json!({"confirm": true}))}), &confirm).await;
    assert_eq!(elicit_test_support::reference::mask_reference(&done.text()), BOOKED);
}

#[tokio::test]
async fn url_step_denied_on_the_page() {
    let server = ServerProcess::travel(&server::key_b64());
    let booking = Booking::new(&server);
    let payment = booking.to_payment().await;
    let (url, _) = payment_link(&server, &payment);
    let visit = visit_page(&url).await;
    assert_eq!(visit.submit("deny").await, 200);
    assert_eq!(visit.submit("approve").await, 409, "a denied payment cannot be approved after");
    let done = booking.answer(json!({"payment": {"action": "accept"}}), &payment).await;
    assert_eq!(done.text(), "Payment denied on the payment page: nothing was booked.");
}

#[tokio::test]
async fn confirmation_declined_after_payment() {
    let server = ServerProcess::travel(&server::key_b64());
    let booking = Booking::new(&server);
    let payment = booking.to_payment().await;
    let (url, _) = payment_link(&server, &payment);
    assert_eq!(browser_submit(&url, "approve").await, 200);
    let confirm = booking.answer(json!({"payment": {"action": "accept"}}), &payment).await.asked();
    let done = booking.answer(json!({"confirm": {"action": "decline"}}), &confirm).await;
    assert_eq!(done.text(), "Not booked: you declined the confirmation. The payment approval lapses.");
}

#[tokio::test]
async fn rate_trip_asks_two_forms_in_one_round() {
    let server = ServerProcess::travel(&server::key_b64());
    let client = Client::new(&server.mcp_url());
    let asked = client.call("rate_trip", json!({})).await.asked();
    assert_eq!(asked.keys(), ["contact", "rating"], "both questions in one InputRequiredResult");
    assert_eq!(asked.params("rating")["message"], "How was your last trip?");
    assert_eq!(asked.params("contact")["message"], "May we contact you about it?");
    let responses = json!({
        "rating": accept(json!({"stars": 4, "comment": "smooth flight"})),
        "contact": accept(json!({"email": "ada@example.com"})),
    });
    let done = client.retry("rate_trip", json!({}), responses, Some(asked.state())).await;
    assert_eq!(done.text(), "Thanks for 4 star(s) (smooth flight); we will write to ada@example.com.");

    // One of the two declined, in the same single retry (of another call: the first one finished,
    // and keeps its result).
    let asked = client.call("rate_trip", json!({})).await.asked();
    let responses = json!({"rating": accept(json!({"stars": 2})), "contact": {"action": "decline"}});
    let done = client.retry("rate_trip", json!({}), responses, Some(asked.state())).await;
    assert_eq!(done.text(), "Thanks for 2 star(s) (no comment); we will not contact you.");
}

#[tokio::test]
async fn form_only_client_gets_an_error_result_at_the_url_step() {
    let server = ServerProcess::travel(&server::key_b64());
    for capabilities in [json!({"elicitation": {"form": {}}}), json!({"elicitation": {}})] {
        let client = Client::new(&server.mcp_url()).with_capabilities(capabilities.clone());
        let round1 = client.call("book_trip", json!({})).await.asked();
        let done = client.retry("book_trip", json!({}), json!({"trip": accept(trip())}), Some(round1.state())).await;
        let (text, is_error) = done.complete();
        assert!(is_error, "an isError result for {capabilities}: {}", done.body);
        assert!(text.contains("cannot open web pages"), "{text}");
        assert!(text.contains("nothing was booked"), "{text}");
        // No URL elicitation was ever sent to this client.
        for exchange in client.exchanges() {
            assert!(!exchange.reply.to_string().contains(r#""mode":"url""#), "{}", exchange.reply);
        }
    }
}

#[tokio::test]
async fn invalid_trip_is_asked_again_with_the_error() {
    let server = ServerProcess::travel(&server::key_b64());
    let booking = Booking::new(&server);
    let round1 = booking.start().await.asked();
    let mut paris = trip();
    paris["from"] = json!("Paris");
    let again = booking.answer(json!({"trip": accept(paris)}), &round1).await.asked();
    assert_eq!(again.keys(), ["trip"], "the trip form again, not an error");
    let params = again.params("trip");
    let message = params["message"].as_str().unwrap();
    assert!(message.starts_with("Where would you like to fly?"), "{message}");
    assert!(message.contains("Please correct:\n") && !message.contains('`'), "plain text: {message}");
    assert!(message.ends_with("(you entered \"Paris\")"), "the refused value quoted: {message}");
    assert_eq!(message.lines().filter(|l| l.contains("(you entered")).count(), 1, "only the failing field: {message}");
    let properties = &params["requestedSchema"]["properties"];
    // A refused value longer than the field allows ("Paris" against `from`'s
    // maxLength 3) is not echoed back as the default; a value that fits is (the runtime's
    // schema::tests::previous_answers_become_defaults_where_they_fit).
    assert_eq!(properties["from"].get("default"), None, "no default longer than maxLength");
    assert_eq!(properties["to"]["default"], "JFK");
    assert_eq!(properties["travellers"]["default"], 2);
    // Corrected, the flow moves on to the payment step.
    let payment = booking.answer(json!({"trip": accept(trip())}), &again).await.asked();
    payment_link(&server, &payment);
}

#[tokio::test]
async fn tampered_state_is_a_json_rpc_error_over_http() {
    let server = ServerProcess::travel(&server::key_b64());
    let booking = Booking::new(&server);
    let round1 = booking.start().await.asked();
    let tampered = format!("{}-TAMPERED", round1.state());
    let reply = booking.client.retry("book_trip", json!({}), json!({"trip": accept(trip())}), Some(&tampered)).await;
    let (code, message, data) = reply.error();
    assert_eq!((code, message, data), (-32602, elicit_runtime::state::INVALID_STATE_MESSAGE, None));
}
