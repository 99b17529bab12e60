//! The travel-server's payment page refuses forged decisions: a `POST` must carry the nonce
//! cookie its page set and the hidden token made for that page and that nonce, or it is refused
//! with 403 and nothing is recorded; a decision is recorded once; showing the page records
//! nothing. Most tests serve the page in process over a store they can look into; the last one
//! runs the real `travel-server`.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::server;

use std::sync::Arc;
use std::time::Duration;

use elicit_examples::ServerKeys;
use elicit_examples::csrf::PageSecrets;
use elicit_examples::travel::payment_page;
use elicit_runtime::server::store::{InProcessStore, UrlCompletions, UrlStatus};
use serde_json::json;

use server::http::{Client, PageVisit, browser_get, post_form, visit_page};
use server::process::ServerProcess;

/// Serves the payment page on a loopback port of this process; returns its base URL.
async fn serve(store: Arc<dyn UrlCompletions>, secrets: PageSecrets) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, payment_page(store, secrets)).await });
    format!("http://{addr}")
}

/// One page server over a store the test can look into.
struct Page {
    base: String,
    store: Arc<InProcessStore>,
}

impl Page {
    async fn start() -> Page {
        let store = Arc::new(InProcessStore::new());
        let base = serve(store.clone(), PageSecrets::random().unwrap()).await;
        Page { base, store }
    }

    /// Registers a fresh step, as the engine does when it mints a URL; returns its page URL.
    async fn mint(&self) -> (String, String) {
        mint(&*self.store, &self.base).await
    }

    async fn status(&self, id: &str) -> UrlStatus {
        self.store.status(id).await.unwrap()
    }
}

/// A fresh id of the engine's shape (128 random bits, URL-safe) registered pending in `store`;
/// returns it and its page URL under `base`.
async fn mint(store: &dyn UrlCompletions, base: &str) -> (String, String) {
    let id = server::base64url(&server::raw_key()[..16]);
    assert_eq!(id.len(), 22);
    store.register(&id, Duration::from_secs(60), None).await.unwrap();
    (id.clone(), format!("{base}/pay/{id}"))
}

/// Visits a pending page and checks it offers its forms.
async fn visit(url: &str) -> PageVisit {
    let visit = visit_page(url).await;
    assert_eq!(visit.status, 200, "{}", visit.body);
    assert!(visit.cookie.is_some() && visit.token.is_some(), "no cookie or token: {visit:?}");
    visit
}

fn csrf(token: &str) -> String {
    format!("csrf={token}")
}

/// Asserts a refusal: 403 with the page that says nothing was recorded.
fn refused((status, body): (u16, String), what: &str) {
    assert_eq!(status, 403, "{what}: {body}");
    assert!(body.contains("Request refused") && body.contains("nothing was recorded"), "{what}: {body}");
}

#[tokio::test]
async fn showing_the_page_sets_a_strict_cookie_and_a_token_and_records_nothing() {
    let page = Page::start().await;
    let (id, url) = page.mint().await;
    let first = visit(&url).await;
    let second = visit(&url).await;

    let [set_cookie] = first.set_cookies.as_slice() else { panic!("one Set-Cookie expected: {first:?}") };
    // Scoped to this payment.
    for attribute in ["HttpOnly", "SameSite=Strict", &format!("Path=/pay/{id}")] {
        assert!(set_cookie.split("; ").any(|a| a == attribute), "{attribute} missing from {set_cookie}");
    }
    assert_ne!(first.cookie, second.cookie, "a fresh nonce per visit");
    assert_ne!(first.token, second.token, "a token per visit");
    // The page names the request by the start of its id, which the user's client showed in the link.
    assert!(first.body.contains(&format!("<code id=\"request\">{}</code>", &id[..8])), "{}", first.body);
    assert!(first.body.contains("id=\"approve\"") && first.body.contains("id=\"deny\""), "{}", first.body);

    assert_eq!(page.status(&id).await, UrlStatus::Pending, "GET completes nothing");
    // Each visit's own pair works.
    assert_eq!(second.submit("approve").await, 200);
}

#[tokio::test]
async fn a_post_without_the_cookie_is_refused_and_records_nothing() {
    let page = Page::start().await;
    let (id, url) = page.mint().await;
    let visit = visit(&url).await;
    let token = visit.token.clone().unwrap();

    refused(post_form(&format!("{url}/approve"), None, &csrf(&token)).await, "token without its cookie");
    refused(post_form(&format!("{url}/deny"), None, &csrf(&token)).await, "deny without the cookie");
    refused(post_form(&format!("{url}/approve"), None, "").await, "a bare POST, as before the hardening");
    refused(post_form(&format!("{url}/approve"), Some("pay_nonce="), &csrf(&token)).await, "an empty cookie");
    assert_eq!(page.status(&id).await, UrlStatus::Pending, "nothing recorded");

    // The step is still the user's to decide.
    assert_eq!(visit.submit("approve").await, 200);
    assert_eq!(page.status(&id).await, UrlStatus::Completed(json!({"approved": true})));
}

#[tokio::test]
async fn a_wrong_token_is_refused() {
    let page = Page::start().await;
    let (id, url) = page.mint().await;
    let visit = visit(&url).await;
    let cookie = visit.cookie.clone().unwrap();
    let token = visit.token.clone().unwrap();
    let approve = format!("{url}/approve");

    let mut flipped = token.clone().into_bytes();
    flipped[0] = if flipped[0] == b'A' { b'B' } else { b'A' };
    let flipped = String::from_utf8(flipped).unwrap();
    refused(post_form(&approve, Some(&cookie), &csrf(&flipped)).await, "a token with one character changed");
    refused(post_form(&approve, Some(&cookie), &csrf(&token[..token.len() - 2])).await, "a truncated token");
    refused(post_form(&approve, Some(&cookie), "").await, "the cookie without a token");
    refused(post_form(&approve, Some(&cookie), "csrf=not%20base64").await, "garbage");

    // Another visit's token with this visit's cookie: the token is bound to its own nonce.
    let other = visit_page(&url).await;
    refused(post_form(&approve, Some(&cookie), &csrf(other.token.as_deref().unwrap())).await, "another visit's token");
    // A second nonce cookie planted next to the page's makes the cookie ambiguous: refused.
    let planted = format!("{cookie}; {}", other.cookie.as_deref().unwrap());
    refused(post_form(&approve, Some(&planted), &csrf(&token)).await, "two nonce cookies");
    // Another deployment's page (another secret) cannot mint tokens this one accepts.
    let stranger = Page::start().await;
    let (_, stranger_url) = stranger.mint().await;
    let theirs = visit_page(&stranger_url).await;
    refused(
        post_form(&approve, theirs.cookie.as_deref(), &csrf(theirs.token.as_deref().unwrap())).await,
        "another deployment's pair",
    );

    assert_eq!(page.status(&id).await, UrlStatus::Pending, "nothing recorded");
}

#[tokio::test]
async fn a_token_from_another_payment_is_refused() {
    let page = Page::start().await;
    let (_, url_a) = page.mint().await;
    let (id_b, url_b) = page.mint().await;
    let on_a = visit(&url_a).await;
    let (cookie, token) = (on_a.cookie.as_deref(), on_a.token.as_deref().unwrap());

    refused(post_form(&format!("{url_b}/approve"), cookie, &csrf(token)).await, "A's pair on B's approve");
    refused(post_form(&format!("{url_b}/deny"), cookie, &csrf(token)).await, "A's pair on B's deny");
    assert_eq!(page.status(&id_b).await, UrlStatus::Pending, "nothing recorded for B");
    assert_eq!(visit(&url_b).await.submit("deny").await, 200, "B's own page still decides B");
}

#[tokio::test]
async fn a_replayed_decision_is_409_and_changes_nothing() {
    let page = Page::start().await;
    let (id, url) = page.mint().await;
    let visit = visit(&url).await;
    assert_eq!(visit.submit("approve").await, 200);
    assert_eq!(visit.submit("approve").await, 409, "the same approval replayed");
    assert_eq!(visit.submit("deny").await, 409, "a deny after the approval");
    assert_eq!(page.status(&id).await, UrlStatus::Completed(json!({"approved": true})));
    let (status, body) = browser_get(&url).await;
    assert_eq!(status, 409, "{body}");
    assert!(!body.contains("csrf"), "an answered page offers no form: {body}");
}

#[tokio::test]
async fn instances_sharing_the_sealing_keys_accept_each_other_s_tokens() {
    let shared = server::key_b64();
    let store: Arc<dyn UrlCompletions> = Arc::new(InProcessStore::new());
    let keys = |list: &str| ServerKeys::from_list(list).unwrap().page_secrets;
    let a = serve(store.clone(), keys(&shared)).await;
    let b = serve(store.clone(), keys(&shared)).await;
    // Mid-rotation: a new key in front, the shared one still listed.
    let rotated = serve(store.clone(), keys(&format!("{},{shared}", server::key_b64()))).await;
    let stranger = serve(store.clone(), keys(&server::key_b64())).await;

    // The page shown by A, submitted to B (a load balancer sent the POST elsewhere).
    let (id, on_a) = mint(&*store, &a).await;
    let shown = visit(&on_a).await;
    let (cookie, token) = (shown.cookie.as_deref(), shown.token.as_deref().unwrap());
    refused(
        post_form(&format!("{stranger}/pay/{id}/approve"), cookie, &csrf(token)).await,
        "another deployment's keys",
    );
    assert_eq!(post_form(&format!("{b}/pay/{id}/approve"), cookie, &csrf(token)).await.0, 200);
    assert_eq!(store.status(&id).await.unwrap(), UrlStatus::Completed(json!({"approved": true})));

    // Both ways across a rotation: the rotated instance signs with its new key, which A lacks; so
    // it checks the old key's tokens, and A refuses the new key's.
    let (id, on_a) = mint(&*store, &a).await;
    let shown = visit(&on_a).await;
    let (cookie, token) = (shown.cookie.as_deref(), shown.token.as_deref().unwrap());
    assert_eq!(post_form(&format!("{rotated}/pay/{id}/approve"), cookie, &csrf(token)).await.0, 200);
    let (id, on_rotated) = mint(&*store, &rotated).await;
    let shown = visit(&on_rotated).await;
    let (cookie, token) = (shown.cookie.as_deref(), shown.token.as_deref().unwrap());
    refused(post_form(&format!("{a}/pay/{id}/approve"), cookie, &csrf(token)).await, "a key A does not hold");
}

/// The real server: the page belongs to the flow that minted it, and looking at it (twice) does
/// not complete the step — the consent retry still finds it pending — until the user approves.
#[tokio::test]
async fn showing_the_page_does_not_complete_the_flow_s_step() {
    let server = ServerProcess::travel(&server::key_b64());
    let client = Client::new(&server.mcp_url());
    let trip = json!({
        "from": "CDG", "to": "JFK", "depart": "2026-09-01", "travellers": 1, "cabin": "economy",
        "meals": [], "extras": [], "email": "ada@example.com", "alerts": false
    });
    let round1 = client.call("book_trip", json!({})).await.asked();
    let trip = json!({"trip": {"action": "accept", "content": trip}});
    let payment = client.retry("book_trip", json!({}), trip, Some(round1.state())).await.asked();
    let url = payment.params("payment")["url"].as_str().unwrap().to_owned();
    let id = url.rsplit('/').next().unwrap().to_owned();

    let shown = visit(&url).await;
    assert!(shown.body.contains(&id[..8]), "the page names its request: {}", shown.body);
    assert_eq!(browser_get(&url).await.0, 200);
    let consent = json!({"payment": {"action": "accept"}});
    let again = client.retry("book_trip", json!({}), consent.clone(), Some(payment.state())).await.asked();
    assert_eq!(again.keys(), ["payment"], "still pending after two GETs");
    assert_eq!(again.params("payment")["url"], url.as_str(), "the same step");

    refused(post_form(&format!("{url}/approve"), None, "").await, "a bare POST to the real server");
    assert_eq!(shown.submit("approve").await, 200);
    let confirm = client.retry("book_trip", json!({}), consent, Some(again.state())).await.asked();
    assert_eq!(confirm.keys(), ["confirm"], "the approval reached the flow");
}

/// The shared submitter (`elicit_test_support::payment`, used by these tests and the load generator)
/// names the cookie and the token field the travel-server's page sets.
#[test]
fn the_shared_submitter_speaks_the_page_s_names() {
    assert_eq!(elicit_test_support::payment::NONCE_COOKIE, elicit_examples::travel::NONCE_COOKIE);
    assert_eq!(elicit_test_support::payment::TOKEN_FIELD, elicit_examples::csrf::TOKEN_FIELD);
}
