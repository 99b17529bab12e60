//! The payment page states the amount and the trip being paid, and its nonce cookie is scoped to
//! that payment (`Path=/pay/{id}`) and `Secure` when the page is served over HTTPS (a public base
//! URL in `https`, or `X-Forwarded-Proto: https`). A store failure shows a generic page: the
//! store's address and error stay in the server's log.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::server;

use std::sync::Arc;
use std::time::Duration;

use elicit_examples::csrf::PageSecrets;
use elicit_examples::travel::{
    PaymentSummaries, PaymentSummary, payment_page_at, payment_page_with_logins, payment_url,
};
use elicit_runtime::server::PageLogin;
use elicit_runtime::server::store::{InProcessStore, RedisStore, UrlCompletions};
use elicit_runtime::state::KeyRing;
use elicit_test_support::redis::Redis;
use serde_json::json;

use server::http::{Client, browser_submit, http_client};
use server::process::ServerProcess;

/// GETs `url` with `headers`; the status, the nonce cookie's `Set-Cookie` header and the page.
async fn get(url: &str, headers: &[(&str, &str)]) -> (u16, String, String) {
    let mut request = http_client().get(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let cookie = response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|c| c.starts_with("pay_nonce="))
        .unwrap_or_default()
        .to_owned();
    (status, cookie, response.text().await.unwrap())
}

fn attributes(cookie: &str) -> Vec<String> {
    cookie.split(';').skip(1).map(|a| a.trim().to_ascii_lowercase()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_names_amount_and_trip_and_scopes_its_cookie() {
    let server = ServerProcess::travel(&server::key_b64());
    let client = Client::new(&server.mcp_url());
    let first = client.call("book_trip", json!({})).await.asked();
    let trip = json!({
        "from": "CDG", "to": "JFK", "depart": "2026-09-01", "travellers": 2, "cabin": "business",
        "meals": [], "extras": ["lounge"], "email": "ada@example.com", "alerts": false
    });
    let payment = client
        .retry("book_trip", json!({}), json!({"trip": {"action": "accept", "content": trip}}), Some(first.state()))
        .await
        .asked();
    let url = payment.params("payment")["url"].as_str().unwrap().to_owned();
    let id = url.rsplit('/').next().unwrap().to_owned();

    let (status, cookie, page) = get(&url, &[]).await;
    assert_eq!(status, 200, "{page}");
    // Business (€899) plus lounge (€45), for two.
    assert!(page.contains("<strong id=\"amount\">€1888.00</strong>"), "{page}");
    assert!(page.contains("<strong id=\"trip\">CDG → JFK on 2026-09-01, 2 traveller(s)</strong>"), "{page}");
    let attrs = attributes(&cookie);
    assert!(attrs.contains(&format!("path=/pay/{}", id.to_ascii_lowercase())), "{cookie}");
    assert!(!attrs.contains(&"secure".to_owned()), "plain http: {cookie}");
    // Behind a TLS-terminating proxy.
    let (_, cookie, _) = get(&url, &[("X-Forwarded-Proto", "https")]).await;
    assert!(attributes(&cookie).contains(&"secure".to_owned()), "{cookie}");
    // The page still works as a browser uses it, and the flow goes on to the confirmation.
    assert_eq!(browser_submit(&url, "approve").await, 200);
    let confirm = client
        .retry("book_trip", json!({}), json!({"payment": {"action": "accept"}}), Some(payment.state()))
        .await
        .asked();
    assert_eq!(confirm.keys(), ["confirm"]);
}

/// A fresh id of the engine's shape registered pending in `store`.
async fn mint(store: &dyn UrlCompletions) -> String {
    let id = server::base64url(&server::raw_key()[..16]);
    store.register(&id, Duration::from_secs(60), None).await.unwrap();
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_https_the_cookie_is_secure_and_another_instance_names_the_payment() {
    let store = Arc::new(InProcessStore::new());
    // The page is one instance's; `book_trip` ran on another sharing the store.
    let page_summaries = PaymentSummaries::new(store.clone());
    let other_instance = PaymentSummaries::new(store.clone());
    let app = payment_page_at(store.clone(), PageSecrets::random().unwrap(), page_summaries, "https://pay.example");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });

    // A step nobody described: the page says it does not know what it is for.
    let bare = mint(&*store).await;
    let (status, cookie, page) = get(&format!("{base}/pay/{bare}"), &[]).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("id=\"unknown\""), "{page}");
    let attrs = attributes(&cookie);
    assert!(attrs.contains(&"secure".to_owned()), "an https public URL: {cookie}");
    assert!(attrs.contains(&format!("path=/pay/{}", bare.to_ascii_lowercase())), "{cookie}");

    // Described by the other instance (through the store).
    let described = mint(&*store).await;
    let summary = PaymentSummary { amount: "€12.00".into(), trip: "<b>AMS</b> → LIS".into() };
    other_instance.record(&described, summary.clone());
    // The store's copy is written by a task: wait for it (bounded), as a page refresh would.
    let mut found = None;
    for _ in 0..500 {
        found = PaymentSummaries::new(store.clone()).lookup(&described).await;
        if found.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(found, Some(summary));
    let (_, _, page) = get(&format!("{base}/pay/{described}"), &[]).await;
    assert!(page.contains("<strong id=\"amount\">€12.00</strong>"), "{page}");
    // Escaped: the trip is text, not markup.
    assert!(page.contains("&lt;b&gt;AMS&lt;/b&gt; → LIS"), "{page}");
}

/// Asserts the generic page of a store failure: 503, the same text, nothing about the store.
fn generic_failure((status, page): (u16, String), internals: &[&str], what: &str) {
    assert_eq!(status, 503, "{what}: {page}");
    assert!(page.contains("id=\"unavailable\"") && page.contains("Nothing was recorded"), "{what}: {page}");
    for internal in internals {
        assert!(!page.contains(internal), "{what}: the page told `{internal}`: {page}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_failure_shows_a_generic_page() {
    const PASSWORD: &str = "pa55-Page";
    let Some(mut redis) = Redis::start_or_skip("a_store_failure_shows_a_generic_page", Some(PASSWORD)) else {
        return;
    };
    let store: Arc<dyn UrlCompletions> =
        Arc::new(RedisStore::builder(redis.url()).command_timeout(Duration::from_millis(500)).connect().await.unwrap());
    let logins = PageLogin::new(KeyRing::generate(), store.clone());
    let summaries = PaymentSummaries::new(store.clone());
    let (open, signed) = (
        payment_page_at(store.clone(), PageSecrets::random().unwrap(), summaries.clone(), ""),
        payment_page_with_logins(store.clone(), PageSecrets::random().unwrap(), summaries, "", logins.clone()),
    );
    let mut bases = Vec::new();
    for app in [open, signed] {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        bases.push(format!("http://{}", listener.local_addr().unwrap()));
        tokio::spawn(async move { axum::serve(listener, app).await });
    }
    let (open, signed) = (&bases[0], &bases[1]);

    // With the store up: a page to decide on, and a sign-in link for the page with logins.
    let id = server::base64url(&server::raw_key()[..16]);
    store.register(&id, Duration::from_secs(60), Some("alice")).await.unwrap();
    let (status, cookie, page) = get(&format!("{open}/pay/{id}"), &[]).await;
    assert_eq!(status, 200, "{page}");
    let nonce = cookie.split(';').next().unwrap().to_owned();
    let token = elicit_test_support::payment::hidden_token(&page).unwrap();
    let link = payment_url(signed, &id, Some(&logins), Some("alice"));

    redis.stop();
    let port = redis.port.to_string();
    let internals = ["redis", "Redis", "127.0.0.1", port.as_str(), PASSWORD, "completion store"];
    let shown = get(&format!("{open}/pay/{id}"), &[]).await;
    generic_failure((shown.0, shown.2), &internals, "showing the page");
    let decided =
        server::http::post_form(&format!("{open}/pay/{id}/approve"), Some(&nonce), &format!("csrf={token}")).await;
    generic_failure(decided, &internals, "deciding");
    let (status, _, page) = get(&link, &[]).await;
    generic_failure((status, page), &internals, "signing in");
}
