//! The payment page of a server with users: a browser signs in with the one-time ticket of its
//! payment link (exchanged for a session cookie, then redirected to the clean page) and its
//! decision is recorded under that user; a replayed, expired, forged or foreign link is refused,
//! an anonymous decision is refused, a user cannot decide another user's payment, and an API
//! client's bearer token still decides (but must agree with the session). The page is served in
//! process over a store the test looks into; the engine's part (registering a step for its
//! owner) is done on the store as the engine does it.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::server;

use std::sync::Arc;
use std::time::Duration;

use elicit_examples::bearer::{BearerTokens, authenticate};
use elicit_examples::csrf::PageSecrets;
use elicit_examples::travel::{PaymentSummaries, payment_page_with_logins, payment_url};
use elicit_runtime::server::PageLogin;
use elicit_runtime::server::store::{InProcessStore, UrlCompletions, UrlStatus};
use elicit_runtime::state::KeyRing;
use serde_json::json;

use server::http::http_client;

/// A page with logins, over a store the test looks into.
struct Page {
    base: String,
    store: Arc<InProcessStore>,
    logins: PageLogin,
}

impl Page {
    /// Serves the page; with `tokens`, behind the travel-server's optional bearer layer.
    async fn start(tokens: Option<&str>) -> Page {
        let store = Arc::new(InProcessStore::new());
        let logins = PageLogin::new(KeyRing::generate(), store.clone());
        let summaries = PaymentSummaries::new(store.clone());
        let mut app =
            payment_page_with_logins(store.clone(), PageSecrets::random().unwrap(), summaries, "", logins.clone());
        if let Some(tokens) = tokens {
            app = authenticate(app, BearerTokens::parse(tokens).unwrap(), false);
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Page { base, store, logins }
    }

    /// A fresh step owned by `owner`, registered as the engine does; its id and clean page URL.
    async fn step(&self, owner: &str) -> (String, String) {
        let id = server::base64url(&server::raw_key()[..16]);
        self.store.register(&id, Duration::from_secs(60), Some(owner)).await.unwrap();
        (id.clone(), format!("{}/pay/{id}", self.base))
    }

    /// The link `book_trip` hands out for step `id` of `user`.
    fn link(&self, id: &str, user: &str) -> String {
        payment_url(&self.base, id, Some(&self.logins), Some(user))
    }

    async fn status(&self, id: &str) -> UrlStatus {
        self.store.status(id).await.unwrap()
    }
}

/// What a GET answered: status, `Location`, every `Set-Cookie`, and the body.
struct Got {
    status: u16,
    location: Option<String>,
    set_cookies: Vec<String>,
    body: String,
}

impl Got {
    /// `name=value` of cookie `name`, as a browser sends it back.
    fn cookie(&self, name: &str) -> Option<String> {
        self.set_cookies
            .iter()
            .filter_map(|c| c.split(';').next())
            .find(|c| c.starts_with(&format!("{name}=")))
            .map(str::to_owned)
    }

    /// The whole `Set-Cookie` header of cookie `name`.
    fn set_cookie(&self, name: &str) -> Option<&str> {
        self.set_cookies.iter().find(|c| c.starts_with(&format!("{name}="))).map(String::as_str)
    }

    /// The forms' hidden token.
    fn token(&self) -> Option<String> {
        elicit_test_support::payment::hidden_token(&self.body)
    }
}

/// GETs `url` without following redirects, sending `cookies` and, if given, a bearer token.
async fn get(url: &str, cookies: &[&str], bearer: Option<&str>) -> Got {
    let client = reqwest::Client::builder().no_proxy().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let mut request = client.get(url);
    if !cookies.is_empty() {
        request = request.header("Cookie", cookies.join("; "));
    }
    if let Some(token) = bearer {
        request = request.header("Authorization", format!("Bearer {token}"));
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let location = response.headers().get("location").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let set_cookies =
        response.headers().get_all("set-cookie").iter().filter_map(|v| v.to_str().ok()).map(str::to_owned).collect();
    Got { status, location, set_cookies, body: response.text().await.unwrap() }
}

/// POSTs the form `action` of page `url` with `token`, `cookies` and, if given, a bearer token.
async fn post(url: &str, action: &str, token: &str, cookies: &[&str], bearer: Option<&str>) -> (u16, String) {
    let mut request = http_client()
        .post(format!("{url}/{action}"))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .header("Cookie", cookies.join("; "));
    if let Some(bearer) = bearer {
        request = request.header("Authorization", format!("Bearer {bearer}"));
    }
    let response = request.body(format!("csrf={token}")).send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

/// Opens the link as a browser does: the session cookie it sets, after checking the redirect to
/// the clean page and the cookie's attributes.
async fn sign_in(link: &str, page: &str) -> String {
    let got = get(link, &[], None).await;
    assert_eq!(got.status, 303, "{}", got.body);
    assert_eq!(got.location.as_deref(), Some(&page[page.find("/pay/").unwrap()..]), "to the page without the ticket");
    let set = got.set_cookie("pay_session").unwrap_or_else(|| panic!("no session cookie: {:?}", got.set_cookies));
    let attributes: Vec<String> = set.split(';').skip(1).map(|a| a.trim().to_ascii_lowercase()).collect();
    assert!(attributes.contains(&"httponly".to_owned()), "{set}");
    assert!(attributes.contains(&"samesite=lax".to_owned()), "{set}");
    let path = &page[page.find("/pay/").unwrap()..];
    assert!(attributes.contains(&format!("path={}", path.to_ascii_lowercase())), "{set}");
    got.cookie("pay_session").unwrap()
}

/// Shows the page with `cookies`: the nonce cookie and the forms' token, after checking it is
/// offered.
async fn show(page: &str, cookies: &[&str]) -> (String, String, String) {
    let got = get(page, cookies, None).await;
    assert_eq!(got.status, 200, "{}", got.body);
    (got.cookie("pay_nonce").unwrap(), got.token().unwrap(), got.body)
}

fn refused_sign_in(got: &Got, why: &str) {
    assert_eq!(got.status, 403, "{}", got.body);
    assert!(got.body.contains("id=\"login-refused\"") && got.body.contains(why), "{}", got.body);
    assert!(got.set_cookie("pay_session").is_none(), "{:?}", got.set_cookies);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_signs_its_user_in_once_and_the_decision_is_recorded_for_them() {
    let page = Page::start(None).await;
    let (id, url) = page.step("alice").await;
    let link = page.link(&id, "alice");
    assert!(link.starts_with(&format!("{url}?login=")), "{link}");

    let session = sign_in(&link, &url).await;
    // The same link again, from another browser: refused, nobody signed in.
    refused_sign_in(&get(&link, &[], None).await, "used already");
    // The user's own browser reopening it goes to the page.
    let again = get(&link, &[&session], None).await;
    assert_eq!((again.status, again.location.as_deref()), (303, Some(&url[url.find("/pay/").unwrap()..])));

    let (nonce, token, shown) = show(&url, &[&session]).await;
    assert!(shown.contains("Signed in as <strong id=\"user\">alice</strong>"), "{shown}");
    let (status, body) = post(&url, "approve", &token, &[&nonce, &session], None).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("Payment approved"), "{body}");
    assert_eq!(page.status(&id).await, UrlStatus::Completed(json!({"approved": true})));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_anonymous_browser_and_another_user_cannot_decide() {
    let page = Page::start(None).await;
    let (id, url) = page.step("alice").await;

    // No ticket, no session: the page asks to sign in and offers no form.
    let anonymous = get(&url, &[], None).await;
    assert_eq!(anonymous.status, 403, "{}", anonymous.body);
    assert!(anonymous.body.contains("id=\"sign-in\"") && anonymous.token().is_none(), "{}", anonymous.body);

    // Bob signs in with a link made for him on Alice's step: he sees the page ...
    let bob = sign_in(&page.link(&id, "bob"), &url).await;
    let (nonce, token, _) = show(&url, &[&bob]).await;
    // ... but his decision is not Alice's: the store refuses it.
    let (status, body) = post(&url, "approve", &token, &[&nonce, &bob], None).await;
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("belongs to another user"), "{body}");
    // A valid form token and nonce without a session: refused before the store is asked.
    let (status, body) = post(&url, "approve", &token, &[&nonce], None).await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("id=\"sign-in\""), "{body}");
    // Another step's session does not sign in on this one.
    let (other_id, other_url) = page.step("alice").await;
    let other = sign_in(&page.link(&other_id, "alice"), &other_url).await;
    let (status, body) = post(&url, "deny", &token, &[&nonce, &other], None).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(page.status(&id).await, UrlStatus::Pending, "nothing was recorded");

    // Alice's own link still decides.
    let alice = sign_in(&page.link(&id, "alice"), &url).await;
    let (nonce, token, _) = show(&url, &[&alice]).await;
    assert_eq!(post(&url, "deny", &token, &[&nonce, &alice], None).await.0, 200);
    assert_eq!(page.status(&id).await, UrlStatus::Completed(json!({"approved": false})));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_forged_and_foreign_links_are_refused() {
    let page = Page::start(None).await;
    let (id, url) = page.step("alice").await;

    let expired = page.logins.clone().with_ttl(Duration::ZERO).ticket(&id, "alice").unwrap();
    refused_sign_in(&get(&format!("{url}?login={expired}"), &[], None).await, "expired");

    let (other_id, _) = page.step("alice").await;
    let for_other_step = page.link(&other_id, "alice");
    let ticket = for_other_step.split("?login=").nth(1).unwrap();
    refused_sign_in(&get(&format!("{url}?login={ticket}"), &[], None).await, "not valid");

    let foreign = PageLogin::new(KeyRing::generate(), page.store.clone()).ticket(&id, "alice").unwrap();
    refused_sign_in(&get(&format!("{url}?login={foreign}"), &[], None).await, "not valid");
    refused_sign_in(&get(&format!("{url}?login=%00%FF%2F..%2F"), &[], None).await, "not valid");
    refused_sign_in(&get(&format!("{url}?login={}", "A".repeat(5000)), &[], None).await, "not valid");
    // A session is not a ticket.
    let session = page.logins.session(&id, "alice").unwrap();
    refused_sign_in(&get(&format!("{url}?login={session}"), &[], None).await, "not valid");

    assert_eq!(page.status(&id).await, UrlStatus::Pending);
    // The step's own link still works after all that.
    sign_in(&page.link(&id, "alice"), &url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bearer_token_still_decides_and_must_agree_with_the_session() {
    let page = Page::start(Some("tok-a=alice,tok-b=bob")).await;
    let (id, url) = page.step("alice").await;

    // Bob's API client opening Alice's link: refused, and the step's one sign-in is not spent.
    let link = page.link(&id, "alice");
    let got = get(&link, &[], Some("tok-b")).await;
    assert_eq!(got.status, 403, "{}", got.body);
    assert!(got.body.contains("id=\"two-users\""), "{}", got.body);
    assert!(got.set_cookie("pay_session").is_none());

    // Bob's bearer token with Alice's session.
    let alice = sign_in(&page.link(&id, "alice"), &url).await;
    let (nonce, token, _) = show(&url, &[&alice]).await;
    let (status, body) = post(&url, "approve", &token, &[&nonce, &alice], Some("tok-b")).await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("id=\"two-users\""), "{body}");
    assert_eq!(page.status(&id).await, UrlStatus::Pending);

    // Alice's API client, no session: its bearer token decides.
    let shown = get(&url, &[], Some("tok-a")).await;
    assert_eq!(shown.status, 200, "{}", shown.body);
    let (nonce, token) = (shown.cookie("pay_nonce").unwrap(), shown.token().unwrap());
    assert_eq!(post(&url, "approve", &token, &[&nonce], Some("tok-a")).await.0, 200);
    assert_eq!(page.status(&id).await, UrlStatus::Completed(json!({"approved": true})));
}
