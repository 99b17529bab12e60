//! A URL-mode page signing its visitor in through a real OpenID provider, in a real browser: no
//! credential in the link. `oidc-provider` (pinned in `.tools/peers/oidc`, configured by
//! tests/peers/oidc_provider.mjs, two accounts) registers the page server as its client; the
//! engine's form pages use the showcase's `OpenIdSignIn` (authorization code, PKCE S256, `state`
//! and `nonce` bound to the step, the ID token verified against the provider's keys, its subject
//! compared with the step's owner).
//!
//! - A link opened with no sign-in is sent to the provider, with PKCE, state and nonce; an MCP
//!   client's bearer credential does not open the page either.
//! - The owner signs in at the provider in headless Chromium, lands on the form, answers it, and
//!   the flow resumes with the typed answer.
//! - A forged `state`, a state started by another browser, and the owner's own callback replayed
//!   are refused.
//! - Another user signed in at the provider is refused by the page (subject mismatch), no session
//!   is given, and the step stays open: the flow does not complete.
//!
//! With `ELICIT_SIGN_IN_SCREENSHOT=path.png` set, the refusal page is saved there. Without
//! Chromium, Node 22 or oidc-provider the test is skipped with a message (not under `CI`).

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use elicit_examples::bearer::{BearerTokens, OpenIdTokens, authenticate};
use elicit_examples::page_sign_in::{CALLBACK_PATH, OWNER_PARAM, OpenIdClient, OpenIdSignIn};
use elicit_runtime::server::pages::PAGE_PATH;
use elicit_runtime::server::pages::kit::SESSION_COOKIE;
use elicit_runtime::server::store::UrlStatus;
use elicit_runtime::server::{Engine, Outcome};
use elicit_runtime::state::KeyRing;
use elicit_test_support::chromium::{Chromium, chromium_or_skip};
use elicit_test_support::peers::oidc::{Account, Provider, node_or_skip};
use serde_json::{Value, json};

use crate::form_page::{Served, first_round, retry};

/// The bound on every wait.
const LIMIT: Duration = Duration::from_secs(60);
/// The step's owner, and another user of the same provider.
const OWNER: Account = Account { login: "ada", password: "an0ther-Passw0rd", sub: "ada-lovelace" };
const OTHER: Account = Account { login: "bob", password: "b0b-Passw0rd", sub: "bob-builder" };

fn http() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().redirect(reqwest::redirect::Policy::none()).build().unwrap()
}

/// Registers the page server at the provider (dynamic registration): a confidential client
/// whose redirect URI is the callback on loopback (the provider ignores a loopback port, RFC
/// 8252 §7.3). Its id and secret.
async fn register(issuer: &str) -> (String, String) {
    let answer: Value = http()
        .post(format!("{issuer}/reg"))
        .json(&json!({
            "application_type": "native",
            "client_name": "travel pages",
            "redirect_uris": [format!("http://127.0.0.1{CALLBACK_PATH}")],
            "grant_types": ["authorization_code"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "client_secret_basic",
        }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = answer["client_id"].as_str().unwrap_or_else(|| panic!("no client: {answer}")).to_owned();
    (id, answer["client_secret"].as_str().unwrap().to_owned())
}

/// The engine's form pages signing visitors in through `issuer`, served on loopback (behind a
/// static bearer layer, to show that an MCP client's credential does not open a page); the
/// callback's requests are recorded, to replay one.
async fn serve(issuer: &str) -> (Served, Arc<Mutex<Vec<String>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (client_id, client_secret) = register(issuer).await;
    let provider = OpenIdTokens::discover(issuer, &format!("{base}/mcp")).await.unwrap();
    let client =
        OpenIdClient { client_id, client_secret: Some(client_secret), redirect_uri: format!("{base}{CALLBACK_PATH}") };
    let ring = KeyRing::generate();
    let sign_in = OpenIdSignIn::new(provider, client, ring.clone(), Duration::from_secs(600)).unwrap();
    let engine = Arc::new(
        Engine::builder("form-page-test", ring)
            .form_pages(&base)
            .page_visitors(Arc::new(sign_in.visitors(SESSION_COOKIE, PAGE_PATH)))
            .build(),
    );
    let callbacks = Arc::new(Mutex::new(Vec::new()));
    let seen = callbacks.clone();
    let record = axum::middleware::from_fn(move |request: axum::extract::Request, next: axum::middleware::Next| {
        let seen = seen.clone();
        async move {
            if request.uri().path() == CALLBACK_PATH {
                seen.lock().unwrap().push(request.uri().to_string());
            }
            next.run(request).await
        }
    });
    let pages = engine.form_pages().unwrap().router().merge(sign_in.router()).layer(record);
    let app = authenticate(pages, BearerTokens::parse(&format!("tok-ada={}", OWNER.sub)).unwrap(), false);
    tokio::spawn(async move { axum::serve(listener, app).await });
    (Served { engine, base }, callbacks)
}

/// What a GET answered, redirects not followed: status, `Location`, `Set-Cookie`s, body.
async fn get(url: &str, bearer: Option<&str>) -> (u16, String, Vec<String>, String) {
    let mut request = http().get(url);
    if let Some(token) = bearer {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let location = response.headers().get("location").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let cookies =
        response.headers().get_all("set-cookie").iter().filter_map(|v| v.to_str().ok()).map(str::to_owned).collect();
    (status, location, cookies, response.text().await.unwrap())
}

fn step_of(link: &str) -> String {
    let path = &link[link.find(PAGE_PATH).unwrap() + PAGE_PATH.len()..];
    path.split('?').next().unwrap().to_owned()
}

/// Signs in at the provider's pages in `tab` as `account`, allowing this client if asked.
fn sign_in_at_provider(browser: &mut Chromium, tab: &str, account: Account) {
    browser.type_into(tab, "login", account.login, LIMIT);
    browser.type_into(tab, "password", account.password, LIMIT);
    browser.click(tab, "sign-in", LIMIT);
}

/// Waits until `condition` (a script expression) holds on the page after a sign-in, allowing the
/// provider's consent page on the way (the first sign-in of an account to this client) whenever it
/// shows: "Allow" is clicked by the page's own script, once per consent page, so a click cannot be
/// lost while the page settles and no page is answered twice.
fn after_sign_in(browser: &mut Chromium, tab: &str, condition: &str, what: &str) {
    let expression = format!(
        "(() => {{ if (document.readyState !== 'complete') return null; \
         const allow = document.getElementById('allow'); \
         if (allow && !window.__consented) {{ window.__consented = true; allow.click(); return null; }} \
         return ({condition}) ? true : null; }})()"
    );
    browser.wait_for(tab, &expression, LIMIT, what);
}

fn wait_for_element(browser: &mut Chromium, tab: &str, id: &str) {
    after_sign_in(browser, tab, &format!("document.getElementById('{id}')"), &format!("no #{id} on the page"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_visitors_sign_in_through_the_provider_and_only_the_owner_decides() {
    const TEST: &str = "page_visitors_sign_in_through_the_provider_and_only_the_owner_decides";
    let Some(chromium) = chromium_or_skip(TEST) else { return };
    let Some(node) = node_or_skip(TEST) else { return };
    let provider = Provider::start(&node, OWNER, &[OTHER], &[]);
    let (served, callbacks) = serve(&provider.issuer).await;

    // The link names the step and its page; no ticket, nothing that signs anyone in.
    let (link, state) = first_round(&served, Some(OWNER.sub)).await;
    let step = step_of(&link);
    assert!(!link.contains("login="), "{link}");
    assert!(link.contains(&format!("{OWNER_PARAM}=")), "{link}");

    // Opened with no sign-in: sent to the provider, PKCE S256, a state and a nonce, scope openid.
    let (status, location, cookies, _) = get(&link, None).await;
    assert_eq!(status, 303, "{location}");
    let authorize = url::Url::parse(&location).unwrap();
    assert!(location.starts_with(&format!("{}/auth?", provider.issuer)), "{location}");
    let query: std::collections::HashMap<String, String> = authorize.query_pairs().into_owned().collect();
    assert_eq!(query["code_challenge_method"], "S256");
    assert_eq!(query["code_challenge"].len(), 43, "{location}");
    assert_eq!(query["response_type"], "code");
    assert_eq!(query["scope"], "openid");
    assert_eq!(query["redirect_uri"], format!("{}{CALLBACK_PATH}", served.base));
    assert!(query["state"].len() >= 43 && query["nonce"].len() >= 43, "{location}");
    assert!(!location.contains(OWNER.sub), "the owner's name travels sealed only: {location}");
    let binding = cookies.iter().find(|c| c.starts_with("elicit_sign_in_")).unwrap_or_else(|| panic!("{cookies:?}"));
    assert!(binding.contains("HttpOnly") && binding.contains(&format!("Path={CALLBACK_PATH}")), "{binding}");
    // The MCP client's bearer credential (the owner's own) does not open the page either.
    let (status, location, _, _) = get(&link, Some("tok-ada")).await;
    assert_eq!(status, 303, "a bearer token opened the page");
    assert!(location.starts_with(&format!("{}/auth?", provider.issuer)), "{location}");

    // A forged state, and a real state brought back by a browser that did not start it.
    let callback = format!("{}{CALLBACK_PATH}", served.base);
    let (status, _, _, body) = get(&format!("{callback}?code=made-up&state=forged"), None).await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("id=\"sign-in-invalid\""), "{body}");
    let (status, _, cookies, body) = get(&format!("{callback}?code=made-up&state={}", query["state"]), None).await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("not started in this browser"), "{body}");
    assert!(!cookies.iter().any(|c| c.starts_with(SESSION_COOKIE)), "{cookies:?}");

    // Another user's link for the same owner: opened by them in their own browser below.
    let (other_link, other_state) = first_round(&served, Some(OWNER.sub)).await;
    let other_step = step_of(&other_link);
    let screenshot = std::env::var_os("ELICIT_SIGN_IN_SCREENSHOT");

    let browser_link = link.clone();
    let recorded = callbacks.clone();
    let (replayed, mismatch) = tokio::task::spawn_blocking(move || {
        let mut browser = Chromium::start(&chromium);
        // The owner: to the provider, signs in, back to the form, answers it.
        let tab = browser.open(&browser_link);
        sign_in_at_provider(&mut browser, &tab, OWNER);
        after_sign_in(&mut browser, &tab, "document.querySelector('[name=\"f.name\"]')", "the form after signing in");
        let id = browser.evaluate(&tab, "document.querySelector('[name=\"f.name\"]').id").unwrap();
        browser.type_into(&tab, id.as_str().unwrap(), "Ada", LIMIT);
        browser.evaluate(&tab, "document.querySelector('[name=\"f.side\"]').value = 'window'");
        browser.click(&tab, "accept", LIMIT);
        wait_for_element(&mut browser, &tab, "done");

        // The owner's own callback, replayed in the same browser: its state was used.
        let used = recorded.lock().unwrap().last().cloned().unwrap();
        let replay = browser.open(&format!("http://{}{used}", browser_link.split('/').nth(2).unwrap()));
        wait_for_element(&mut browser, &replay, "sign-in-invalid");

        // Another user, signed in at the provider in another browser, opens the owner's link.
        let tab = browser.open_isolated(&other_link);
        sign_in_at_provider(&mut browser, &tab, OTHER);
        wait_for_element(&mut browser, &tab, "subject-mismatch");
        let text = browser.evaluate(&tab, "document.body.innerText").unwrap();
        if let Some(path) = screenshot {
            let shot = browser.command(&tab, "Page.captureScreenshot", json!({"format": "png"})).unwrap();
            let png = base64::engine::general_purpose::STANDARD.decode(shot["data"].as_str().unwrap()).unwrap();
            std::fs::write(path, png).unwrap();
        }
        (used, text)
    })
    .await
    .unwrap();
    assert!(mismatch.as_str().unwrap().contains("another user"), "{mismatch}");

    // The owner's answer came back typed.
    let Outcome::Complete(text) = retry(&served, Some(OWNER.sub), &state).await else { panic!("not complete") };
    assert!(text.contains("name: \"Ada\"") && text.contains("Window"), "{text}");
    // The replayed callback from another client is refused too.
    let (status, _, _, body) = get(&format!("{}{replayed}", served.base), None).await;
    assert_eq!(status, 403, "{body}");
    // The other user's sign-in recorded nothing: the step is open, the flow not complete.
    assert_eq!(served.engine.url_completions().status(&other_step).await.unwrap(), UrlStatus::Pending);
    assert!(matches!(retry(&served, Some(OWNER.sub), &other_state).await, Outcome::InputRequired(_)));
    assert_ne!(step, other_step);
}

/// The showcase's payment page on the same sign-in: its link carries no ticket, a browser
/// without the page's session is sent to the provider, and neither a decision without it nor
/// the owner's bearer token is taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_payment_page_sends_an_unsigned_visitor_to_the_provider_and_takes_no_decision() {
    use elicit_examples::csrf::PageSecrets;
    use elicit_examples::travel::{
        PaymentSummaries, SESSION_COOKIE as PAY_SESSION, payment_link, payment_page_with_visitors,
    };
    use elicit_runtime::server::pages::kit::VisitorCheck;
    use elicit_runtime::server::store::InProcessStore;

    const TEST: &str = "the_payment_page_sends_an_unsigned_visitor_to_the_provider_and_takes_no_decision";
    let Some(node) = node_or_skip(TEST) else { return };
    let provider = Provider::start(&node, OWNER, &[OTHER], &[]);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (client_id, client_secret) = register(&provider.issuer).await;
    let tokens = OpenIdTokens::discover(&provider.issuer, &format!("{base}/mcp")).await.unwrap();
    let client =
        OpenIdClient { client_id, client_secret: Some(client_secret), redirect_uri: format!("{base}{CALLBACK_PATH}") };
    let sign_in = OpenIdSignIn::new(tokens, client, KeyRing::generate(), Duration::from_secs(600)).unwrap();
    let visitors: Arc<dyn VisitorCheck> = Arc::new(sign_in.visitors(PAY_SESSION, "/pay/"));
    let store = Arc::new(InProcessStore::new());
    let summaries = PaymentSummaries::new(store.clone());
    let page =
        payment_page_with_visitors(store.clone(), PageSecrets::random().unwrap(), summaries, &base, visitors.clone());
    let app = authenticate(
        page.merge(sign_in.router()),
        BearerTokens::parse(&format!("tok-ada={}", OWNER.sub)).unwrap(),
        false,
    );
    tokio::spawn(async move { axum::serve(listener, app).await });

    let id = "cGF5bWVudC1vZi1hZGEwMD";
    elicit_runtime::server::store::UrlCompletions::register(&*store, id, Duration::from_secs(600), Some(OWNER.sub))
        .await
        .unwrap();
    let link = payment_link(&base, id, Some(&*visitors), Some(OWNER.sub));
    assert!(!link.contains("login="), "{link}");
    for bearer in [None, Some("tok-ada")] {
        let (status, location, _, _) = get(&link, bearer).await;
        assert_eq!(status, 303, "{location}");
        assert!(location.starts_with(&format!("{}/auth?", provider.issuer)), "{location}");
        assert!(location.contains("code_challenge_method=S256"), "{location}");
    }
    // A decision without the page's session: refused before the store is asked.
    let response = http()
        .post(format!("{base}/pay/{id}/approve"))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body("csrf=x")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 403);
    assert_eq!(elicit_runtime::server::store::UrlCompletions::status(&*store, id).await.unwrap(), UrlStatus::Pending);
}
