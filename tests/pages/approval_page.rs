//! The page kit's `ApprovalPage`: a URL-mode step's Approve/Deny page mounted in one line. A real
//! headless Chromium opens the link of a real ask and presses the buttons, and the flow resumes
//! with the decision; a hostile title and summary are shown as text. A plain HTTP client then
//! tries what an attacker would: a decision without the cookie or the token, a second decision,
//! someone else's step, an unknown one.
//!
//! With `ELICIT_APPROVAL_SCREENSHOT=path.png` set, the page is saved there as Chromium drew it at
//! phone width (the docs' screenshot). Without Chromium the browser tests are skipped with a
//! message (a failure under `CI`).

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use elicit_runtime::server::pages::kit::{APPROVAL_NONCE_COOKIE, ApprovalPage, PageLoginVisitors, SESSION_COOKIE};
use elicit_runtime::server::{Engine, EngineBuilder, Flow, FlowError, Outcome, PageLogin, Request, UrlAnswer};
use elicit_runtime::state::KeyRing;
use elicit_test_support::chromium::{Chromium, chromium_or_skip};
use serde_json::{Value, json};

use crate::filler::PageForm;

/// The bound on every wait on the browser.
const LIMIT: Duration = Duration::from_secs(30);

/// Markup, quotes and an entity: what a page must show as text.
const HOSTILE: &str = "\"><script>window.pwned=1</script><img src=x onerror='window.pwned=2'>&amp; €42";

/// An engine, its approval page at `/approve`, served on a loopback port of this process.
struct Served {
    engine: Arc<Engine>,
    page: ApprovalPage,
    base: String,
}

async fn serve(build: impl FnOnce(EngineBuilder) -> Engine, page: impl FnOnce(ApprovalPage) -> ApprovalPage) -> Served {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let engine = Arc::new(build(Engine::builder("approval-page-test", KeyRing::generate())));
    let page = page(ApprovalPage::new(&engine, "/approve"));
    let router = page.router();
    tokio::spawn(async move { axum::serve(listener, router).await });
    Served { engine, page, base }
}

/// The tool: asks for approval on the page, says what the page recorded.
async fn approve(flow: Flow, page: ApprovalPage, base: String) -> Result<String, FlowError> {
    let principal = flow.principal().map(str::to_owned);
    let message = "Approve the transfer of €42.00 on our page.";
    Ok(match flow.url("approval", message, |id| page.link(&base, id, principal.as_deref())).await? {
        UrlAnswer::Completed(outcome) => outcome.to_string(),
        UrlAnswer::Declined => "declined".to_owned(),
        UrlAnswer::Cancelled => "cancelled".to_owned(),
    })
}

/// One round as a client declaring URL mode, as `principal`; a retry after consent with `state`.
async fn round(served: &Served, principal: Option<&str>, state: Option<&str>) -> Outcome<String> {
    let meta = json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {"url": {}}}});
    let consent = json!({"approval": {"action": "accept"}});
    let mut request = Request::new("tools/call", "approve").meta(meta.as_object()).principal(principal);
    if state.is_some() {
        request = request.input_responses(Some(&consent)).request_state(state);
    }
    let (page, base) = (served.page.clone(), served.base.clone());
    served.engine.run(&request, |flow| approve(flow, page, base)).await.unwrap()
}

/// The first round: the step's link and the state to retry with.
async fn ask(served: &Served, principal: Option<&str>) -> (String, String) {
    let Outcome::InputRequired(asked) = round(served, principal, None).await else { panic!("no ask") };
    let params = asked.input_requests[0].1.to_json()["params"].clone();
    assert_eq!(params["mode"], "url", "{params}");
    (params["url"].as_str().unwrap().to_owned(), asked.request_state.unwrap())
}

/// The flow's result on the client's retry.
async fn result(served: &Served, principal: Option<&str>, state: &str) -> String {
    match round(served, principal, Some(state)).await {
        Outcome::Complete(text) => text,
        Outcome::InputRequired(_) => "still waiting".to_owned(),
    }
}

/// Waits until the tab shows a page whose `#id` exists; its text.
fn text_of(browser: &mut Chromium, tab: &str, id: &str) -> String {
    let expression = format!(
        "document.readyState === 'complete' && document.getElementById('{id}') \
           ? document.getElementById('{id}').textContent : null"
    );
    browser.wait_for(tab, &expression, LIMIT, &format!("no #{id} on the page")).as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_approves_one_step_and_denies_another_and_each_flow_gets_its_decision() {
    let Some(path) = chromium_or_skip("chromium_approves_one_step_and_denies_another_and_each_flow_gets_its_decision")
    else {
        return;
    };
    let served = serve(
        |builder| builder.build(),
        |page| {
            page.title("Approve the transfer?")
                .summary(|_step| async { Some("€42.00 from your current account to Ada Lovelace".to_owned()) })
        },
    )
    .await;
    let (first, first_state) = ask(&served, None).await;
    let (second, second_state) = ask(&served, None).await;
    assert!(first.starts_with(&format!("{}/approve/", served.base)), "{first}");
    let screenshot = std::env::var_os("ELICIT_APPROVAL_SCREENSHOT");
    let shown = tokio::task::spawn_blocking(move || {
        let mut browser = Chromium::start(&path);
        let tab = browser.open(&first);
        browser
            .command(
                &tab,
                "Emulation.setDeviceMetricsOverride",
                json!({"width": 412, "height": 360, "deviceScaleFactor": 1, "mobile": true}),
            )
            .unwrap();
        let shown = (text_of(&mut browser, &tab, "title"), text_of(&mut browser, &tab, "summary"));
        if let Some(path) = screenshot {
            let shot = browser.command(&tab, "Page.captureScreenshot", json!({"format": "png"})).unwrap();
            let png = base64::engine::general_purpose::STANDARD.decode(shot["data"].as_str().unwrap()).unwrap();
            assert!(png.starts_with(b"\x89PNG"), "a PNG");
            std::fs::write(path, png).unwrap();
        }
        browser.click(&tab, "approve", LIMIT);
        let approved = text_of(&mut browser, &tab, "done");
        let tab = browser.open(&second);
        browser.click(&tab, "deny", LIMIT);
        let denied = text_of(&mut browser, &tab, "done");
        (shown, approved, denied)
    })
    .await
    .unwrap();
    let ((title, summary), approved, denied) = shown;
    assert_eq!(title, "Approve the transfer?");
    assert_eq!(summary, "€42.00 from your current account to Ada Lovelace");
    assert_eq!(
        (approved.as_str(), denied.as_str()),
        ("Recorded: you can return to your MCP client.", "Recorded: you can return to your MCP client.")
    );
    assert_eq!(result(&served, None, &first_state).await, r#"{"approved":true}"#);
    assert_eq!(result(&served, None, &second_state).await, r#"{"approved":false}"#);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_shows_a_hostile_title_and_summary_as_text_and_runs_none_of_it() {
    let Some(path) = chromium_or_skip("chromium_shows_a_hostile_title_and_summary_as_text_and_runs_none_of_it") else {
        return;
    };
    let served =
        serve(|builder| builder.build(), |page| page.title(HOSTILE).summary(|_| async { Some(HOSTILE.to_owned()) }))
            .await;
    let (link, state) = ask(&served, None).await;
    let seen = tokio::task::spawn_blocking(move || {
        let mut browser = Chromium::start(&path);
        let tab = browser.open(&link);
        let title = text_of(&mut browser, &tab, "title");
        let summary = text_of(&mut browser, &tab, "summary");
        let injected = browser
            .evaluate(&tab, "document.querySelectorAll('script, img').length + (window.pwned ? 100 : 0)")
            .unwrap();
        let tab_title = browser.evaluate(&tab, "document.title").unwrap();
        (title, summary, injected, tab_title)
    })
    .await
    .unwrap();
    assert_eq!(seen, (HOSTILE.to_owned(), HOSTILE.to_owned(), json!(0), json!(HOSTILE)));
    assert_eq!(result(&served, None, &state).await, "still waiting", "showing the page decides nothing");
}

#[tokio::test]
async fn a_decision_without_the_pages_cookie_or_token_is_refused_and_nothing_is_recorded() {
    let served = serve(|builder| builder.build(), |page| page).await;
    let (link, state) = ask(&served, None).await;
    let page = PageForm::open(&link, None).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("id=\"no-summary\""), "no summary set: {}", page.body);
    let nonce = page.cookie().unwrap().to_owned();
    assert!(nonce.starts_with(&format!("{APPROVAL_NONCE_COOKIE}=")), "{nonce}");

    let body = page.encoded("approve");
    let without_token: String = body.split('&').filter(|p| !p.starts_with("_token=")).collect::<Vec<_>>().join("&");
    let (another, planted) = (
        format!("{APPROVAL_NONCE_COOKIE}=AAAAAAAAAAAAAAAAAAAAAA"),
        format!("{nonce}; {APPROVAL_NONCE_COOKIE}=planted"),
    );
    for (what, body, cookie) in [
        ("no cookie", body.as_str(), None),
        ("no token", without_token.as_str(), Some(nonce.as_str())),
        ("another nonce", body.as_str(), Some(another.as_str())),
        // Two nonce cookies (one planted for a wider path) count as none.
        ("a doubled cookie", body.as_str(), Some(planted.as_str())),
    ] {
        let refused = page.post(body, cookie).await;
        assert_eq!(refused.status, 403, "{what}: {}", refused.body);
        assert!(refused.body.contains("id=\"forged\""), "{what}: {}", refused.body);
    }
    // Another step's page: its token is not this step's.
    let (other, _) = ask(&served, None).await;
    let other_page = PageForm::open(&other, None).await;
    let transplanted = page.post(&other_page.encoded("approve"), other_page.cookie()).await;
    assert_eq!(transplanted.status, 403, "{}", transplanted.body);
    assert_eq!(result(&served, None, &state).await, "still waiting");

    // The page's own pair decides.
    let done = page.press("approve").await;
    assert_eq!(done.status, 200, "{}", done.body);
    assert_eq!(result(&served, None, &state).await, r#"{"approved":true}"#);
}

#[tokio::test]
async fn a_second_decision_is_refused_as_used_and_the_page_says_it_was_decided() {
    let served = serve(|builder| builder.build(), |page| page).await;
    let (link, state) = ask(&served, None).await;
    let page = PageForm::open(&link, None).await;
    let denied = page.press("deny").await;
    assert_eq!(denied.status, 200, "{}", denied.body);
    let again = page.press("approve").await;
    assert_eq!(again.status, 404, "{}", again.body);
    assert!(again.body.contains("id=\"not-recorded\""), "{}", again.body);
    let reopened = PageForm::open(&link, None).await;
    assert_eq!(reopened.status, 409, "{}", reopened.body);
    assert!(!reopened.has_form(), "{}", reopened.body);
    assert_eq!(result(&served, None, &state).await, r#"{"approved":false}"#, "the first decision holds");
}

#[tokio::test]
async fn unknown_and_malformed_steps_are_refused_and_every_page_has_the_kits_headers() {
    let served = serve(|builder| builder.build(), |page| page).await;
    let unknown = PageForm::open(&format!("{}/approve/AAAAAAAAAAAAAAAAAAAAAA", served.base), None).await;
    assert_eq!(unknown.status, 410, "{}", unknown.body);
    let malformed = PageForm::open(&format!("{}/approve/%3Cscript%3E", served.base), None).await;
    assert_eq!(malformed.status, 404, "{}", malformed.body);

    let (link, _) = ask(&served, None).await;
    let response = reqwest::get(&link).await.unwrap();
    let header = |name: &str| response.headers().get(name).map(|v| v.to_str().unwrap().to_owned());
    assert_eq!(header("cache-control").as_deref(), Some("no-store"));
    assert_eq!(header("x-frame-options").as_deref(), Some("DENY"));
    assert_eq!(header("referrer-policy").as_deref(), Some("no-referrer"));
    let policy = header("content-security-policy").unwrap();
    assert!(policy.contains("default-src 'none'") && policy.contains("frame-ancestors 'none'"), "{policy}");
    let step = link.rsplit('/').next().unwrap();
    let cookie = header("set-cookie").unwrap();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "{cookie}");
    assert!(cookie.contains(&format!("Path=/approve/{step}")), "scoped to the step's page: {cookie}");
}

/// A step with an owner: without a check no one decides it (a link is not a login); with one,
/// only the owner does.
#[tokio::test]
async fn a_step_with_an_owner_is_decided_only_by_its_verified_owner() {
    let anonymous = serve(|builder| builder.build(), |page| page).await;
    let (link, state) = ask(&anonymous, Some("alice")).await;
    let page = PageForm::open(&link, None).await;
    let refused = page.press("approve").await;
    assert_eq!(refused.status, 404, "no check, no owner's decision: {}", refused.body);
    assert_eq!(result(&anonymous, Some("alice"), &state).await, "still waiting");

    let ring = KeyRing::generate();
    let store = Arc::new(elicit_runtime::server::store::InProcessStore::new());
    let logins = PageLogin::new(ring.clone(), store.clone());
    let visitors = Arc::new(PageLoginVisitors::new(logins.clone()).with_cookie(SESSION_COOKIE, "/approve/"));
    let served = serve(
        |_| Engine::builder("approval-page-test", ring.clone()).store(store.clone()).build(),
        |page| page.visitors(visitors),
    )
    .await;
    let (link, state) = ask(&served, Some("alice")).await;
    assert!(link.contains("?login="), "the check's sign-in ticket: {link}");
    let step = link.rsplit('/').next().unwrap().split('?').next().unwrap().to_owned();
    let page_url = format!("{}/approve/{step}", served.base);
    // Nobody signed in: refused before the page.
    assert_eq!(PageForm::open(&page_url, None).await.status, 403);
    // Bob, signed in to this page: the store refuses his decision.
    let bob = format!("{SESSION_COOKIE}={}", logins.session(&step, "bob").unwrap());
    let bobs_page = PageForm::open(&page_url, Some(&bob)).await;
    assert!(bobs_page.body.contains("<strong id=\"user\">bob</strong>"), "{}", bobs_page.body);
    let bobs_pair = format!("{bob}; {}", bobs_page.cookie().unwrap());
    assert_eq!(bobs_page.post(&bobs_page.encoded("approve"), Some(&bobs_pair)).await.status, 404);
    // Alice opens her link: signed in, sent to the page without the ticket, and decides.
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let signed = client.get(&link).send().await.unwrap();
    assert_eq!(signed.status(), 303);
    assert_eq!(signed.headers()["location"].to_str().unwrap(), format!("/approve/{step}"));
    let session = signed.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_owned();
    let alices_page = PageForm::open(&page_url, Some(&session)).await;
    assert_eq!(alices_page.status, 200, "{}", alices_page.body);
    let pair = format!("{session}; {}", alices_page.cookie().unwrap());
    let done = alices_page.post(&alices_page.encoded("approve"), Some(&pair)).await;
    assert_eq!(done.status, 200, "{}", done.body);
    assert_eq!(result(&served, Some("alice"), &state).await, r#"{"approved":true}"#);
}

/// What the server makes of a decision is its own: here an outcome with the word the flow reads.
#[tokio::test]
async fn the_server_shapes_the_recorded_outcome() {
    let served = serve(
        |builder| builder.build(),
        |page| page.outcome(|approved| json!({"decision": if approved { "yes" } else { "no" }})),
    )
    .await;
    let (link, state) = ask(&served, None).await;
    let page = PageForm::open(&link, None).await;
    assert_eq!(page.press("approve").await.status, 200);
    let outcome: Value = serde_json::from_str(&result(&served, None, &state).await).unwrap();
    assert_eq!(outcome, json!({"decision": "yes"}));
}
