//! `Flow::form_page`: a typed form asked through a page the server renders. The page is filled by
//! a plain HTTP client reading the page's own controls; the answer is recorded by the page and
//! comes back typed on the client's retry. Then everything an attacker tries: no anti-forgery
//! token, another principal, an expired step, a second submission, an oversized body, markup in
//! values.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use std::sync::Arc;
use std::time::Duration;

use elicit_runtime::Elicit;
use elicit_runtime::server::pages::kit::{PageLoginVisitors, SESSION_COOKIE};
use elicit_runtime::server::{Answer, Engine, EngineBuilder, Flow, Outcome, PageLogin, Request};
use elicit_runtime::state::KeyRing;
use elicit_test_support::wait;
use serde_json::{Value, json};

use crate::filler::PageForm;

/// Your seat
#[derive(Elicit, Debug, Clone, PartialEq)]
pub(crate) struct Seat {
    /// As on your passport
    #[elicit(title = "Name", min_length = 1, max_length = 40)]
    pub(crate) name: String,
    /// How many seats
    #[elicit(title = "Seats", minimum = 1, maximum = 4, default = 1)]
    pub(crate) seats: u8,
    /// Window or aisle
    #[elicit(title = "Side")]
    pub(crate) side: Side,
    /// Send me offers
    #[elicit(title = "Offers", default = false)]
    pub(crate) offers: bool,
}

/// Which side of the cabin.
#[derive(Elicit, Debug, Clone, Copy, PartialEq)]
#[elicit(rename_all = "lowercase")]
pub(crate) enum Side {
    /// Window
    Window,
    /// Aisle
    Aisle,
}

/// An engine serving its form pages on a loopback port of this process.
pub(crate) struct Served {
    pub(crate) engine: Arc<Engine>,
    pub(crate) base: String,
}

/// Binds a port, builds the engine with `build` (given the builder and the pages' public URL),
/// serves its pages there.
pub(crate) async fn serve(build: impl FnOnce(EngineBuilder, &str) -> Engine) -> Served {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let engine = Arc::new(build(Engine::builder("form-page-test", KeyRing::generate()), &base));
    let router = engine.form_pages().unwrap().router();
    tokio::spawn(async move { axum::serve(listener, router).await });
    Served { engine, base }
}

fn url_only() -> serde_json::Map<String, Value> {
    json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {"url": {}}}}).as_object().unwrap().clone()
}

pub(crate) async fn ask(flow: Flow) -> Result<String, elicit_runtime::server::FlowError> {
    Ok(match flow.form_page::<Seat>("seat", "Choose your <seat>").await? {
        Answer::Accepted(seat) => format!("{seat:?}"),
        Answer::Declined => "declined".to_owned(),
        Answer::Cancelled => "cancelled".to_owned(),
    })
}

/// Round 1 of a flow asking for a `Seat` by page, as `principal`: the page's link and the state.
pub(crate) async fn first_round(served: &Served, principal: Option<&str>) -> (String, String) {
    let meta = url_only();
    let request = Request::new("tools/call", "seat").meta(Some(&meta)).principal(principal);
    let Outcome::InputRequired(asked) = served.engine.run(&request, ask).await.unwrap() else { panic!("no ask") };
    let params = asked.input_requests[0].1.to_json()["params"].clone();
    assert_eq!(params["mode"], "url", "{params}");
    assert_eq!(params["message"], "Choose your <seat>");
    (params["url"].as_str().unwrap().to_owned(), asked.request_state.unwrap())
}

/// The client's retry after the user consented: the flow's result.
pub(crate) async fn retry(served: &Served, principal: Option<&str>, state: &str) -> Outcome<String> {
    let meta = url_only();
    let consent = json!({"seat": {"action": "accept"}});
    let request = Request::new("tools/call", "seat")
        .meta(Some(&meta))
        .principal(principal)
        .input_responses(Some(&consent))
        .request_state(Some(state));
    served.engine.run(&request, ask).await.unwrap()
}

fn step_of(link: &str) -> &str {
    link.rsplit('/').next().unwrap().split('?').next().unwrap()
}

#[tokio::test]
async fn a_typed_answer_comes_back_through_the_page_after_one_refused_submission() {
    let served = serve(|b, base| b.form_pages(base).build()).await;
    let (link, state) = first_round(&served, None).await;
    assert!(link.starts_with(&format!("{}/form/", served.base)), "{link}");

    let mut page = PageForm::open(&link, None).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("Choose your &lt;seat&gt;"), "the message, escaped: {}", page.body);
    assert_eq!(page.value("f.seats"), Some("1"), "the default pre-filled");
    // One wrong submission: a name too long, seats out of bounds, no side chosen.
    page.set("f.name", &"x".repeat(41)).set("f.seats", "9");
    let refused = page.press("accept").await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert!(refused.body.contains(r#"<p class="error" id="field-0-error">"#), "{}", refused.body);
    assert!(refused.body.contains(r#"<p class="error" id="field-1-error">must be at most 4</p>"#), "{}", refused.body);
    assert!(refused.body.contains(r#"<p class="error" id="field-2-error">is required</p>"#), "{}", refused.body);
    assert_eq!(refused.value("f.name"), Some("x".repeat(41).as_str()), "values kept");
    assert_eq!(refused.value("f.seats"), Some("9"));
    // Nothing recorded yet: the retry asks again.
    assert!(matches!(retry(&served, None, &state).await, Outcome::InputRequired(_)));

    let mut fixed = refused.clone();
    fixed.set("f.name", "Ada <Lovelace>").set("f.seats", "2").set("f.side", "aisle").tick("f.offers", "true", true);
    let done = fixed.press("accept").await;
    assert_eq!(done.status, 200, "{}", done.body);
    assert!(done.body.contains("id=\"done\""), "{}", done.body);

    let Outcome::Complete(text) = retry(&served, None, &state).await else { panic!("not complete") };
    assert_eq!(text, r#"Seat { name: "Ada <Lovelace>", seats: 2, side: Aisle, offers: true }"#);
}

#[tokio::test]
async fn the_pages_decline_and_cancel_buttons_are_the_answer() {
    let served = serve(|b, base| b.form_pages(base).build()).await;
    for (button, expected) in [("decline", "declined"), ("cancel", "cancelled")] {
        let (link, state) = first_round(&served, None).await;
        let page = PageForm::open(&link, None).await;
        // Refusing needs no valid answer: the required fields stay empty.
        let answered = page.press(button).await;
        assert_eq!(answered.status, 200, "{}", answered.body);
        let Outcome::Complete(text) = retry(&served, None, &state).await else { panic!("not complete") };
        assert_eq!(text, expected);
    }
}

#[tokio::test]
async fn forged_doubled_expired_foreign_and_oversized_submissions_are_refused_with_a_page() {
    let ring = KeyRing::generate();
    let store = Arc::new(elicit_runtime::server::store::InProcessStore::new());
    let logins = PageLogin::new(ring.clone(), store.clone());
    let visitors = Arc::new(PageLoginVisitors::new(logins.clone()));
    let served = serve(|_, base| {
        Engine::builder("form-page-test", ring.clone())
            .store(store.clone())
            .form_pages(base)
            .page_visitors(visitors)
            .build()
    })
    .await;
    let (link, state) = first_round(&served, Some("alice")).await;
    let step = step_of(&link).to_owned();
    assert!(link.contains("&login="), "today's sign-in ticket: {link}");

    // Alice's browser signs in with the link's ticket: redirected to the page with a session.
    let signed = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let response = signed.get(&link).send().await.unwrap();
    assert_eq!(response.status(), 303);
    let location = response.headers()["location"].to_str().unwrap().to_owned();
    assert!(!location.contains("login="), "the ticket leaves the address bar: {location}");
    let session = response.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_owned();
    let page_url = format!("{}{location}", served.base);
    let mut page = PageForm::open(&page_url, Some(&session)).await;
    assert_eq!(page.status, 200, "{}", page.body);
    page.set("f.name", "<script>alert(1)</script>").set("f.side", "window");
    let both = format!("{session}; {}", page.cookie().unwrap());

    // No token: refused, nothing recorded.
    let body = page.encoded("accept");
    let without: String = body.split('&').filter(|p| !p.starts_with("_token=")).collect::<Vec<_>>().join("&");
    let forged = page.post(&without, Some(&both)).await;
    assert_eq!(forged.status, 403, "{}", forged.body);
    assert!(forged.body.contains("id=\"forged\"") && forged.body.contains("nothing was"), "{}", forged.body);
    // The token without its cookie: refused.
    let no_cookie = page.post(&body, Some(&session)).await;
    assert_eq!(no_cookie.status, 403, "{}", no_cookie.body);
    // Bob, signed in to this page, with a valid pair of his own: the store refuses him.
    let bob = format!("{SESSION_COOKIE}={}", logins.session(&step, "bob").unwrap());
    let bobs_page = PageForm::open(&page_url, Some(&bob)).await;
    assert_eq!(bobs_page.status, 200, "bob may look: {}", bobs_page.body);
    let bobs_pair = format!("{bob}; {}", bobs_page.cookie().unwrap());
    let bob_tries = bobs_page.post(&bobs_page.encoded("decline"), Some(&bobs_pair)).await;
    assert_eq!(bob_tries.status, 409, "{}", bob_tries.body);
    assert!(bob_tries.body.contains("belongs to another user"), "{}", bob_tries.body);
    // An anonymous browser is refused before anything.
    let anonymous = PageForm::open(&page_url, None).await;
    assert_eq!(anonymous.status, 403, "{}", anonymous.body);
    // An oversized body.
    let huge = format!("{body}&f.name={}", "a".repeat(70 * 1024));
    let too_large = page.post(&huge, Some(&both)).await;
    assert_eq!(too_large.status, 413, "{}", too_large.body);

    // Alice's own submission, markup and all, is recorded once.
    let done = page.post(&body, Some(&both)).await;
    assert_eq!(done.status, 200, "{}", done.body);
    let twice = page.post(&body, Some(&both)).await;
    assert_eq!(twice.status, 409, "{}", twice.body);
    assert!(twice.body.contains("already answered"), "{}", twice.body);
    let Outcome::Complete(text) = retry(&served, Some("alice"), &state).await else { panic!("not complete") };
    assert!(text.contains(r#"name: "<script>alert(1)</script>""#), "kept as typed: {text}");
    assert!(!done.body.contains("<script>"), "{}", done.body);
}

#[tokio::test]
async fn a_refused_submission_shows_markup_it_was_given_escaped() {
    let served = serve(|b, base| b.form_pages(base).build()).await;
    let (link, _) = first_round(&served, None).await;
    let mut page = PageForm::open(&link, None).await;
    let hostile = "\"><script>alert(1)</script>";
    page.set("f.name", hostile).set("f.seats", hostile);
    let refused = page.press("accept").await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert!(!refused.body.contains("<script>"), "{}", refused.body);
    assert_eq!(refused.value("f.name"), Some(hostile), "kept, escaped in the HTML");
    assert_eq!(refused.value("f.seats"), Some(hostile));
}

#[tokio::test]
async fn a_page_after_its_step_expired_says_so() {
    let served = serve(|b, base| b.url_ttl(Duration::from_secs(1)).form_pages(base).build()).await;
    let (link, _) = first_round(&served, None).await;
    let page = PageForm::open(&link, None).await;
    assert_eq!(page.status, 200, "{}", page.body);
    wait::until_async(Duration::from_secs(10), "the step to expire", || async {
        PageForm::open(&link, None).await.status == 410
    })
    .await;
    let last = page.press("decline").await;
    assert_eq!(last.status, 410, "{}", last.body);
    assert!(last.body.contains("id=\"expired\"") && last.body.contains("Nothing was recorded"), "{}", last.body);
}

/// What round 1 of `flow.form::<Seat>` asks a client declaring `elicitation`, on an engine whose
/// fallback is `engine_fallback` and a tool that sets its own (`tool_fallback`): the mode asked,
/// or the JSON-RPC error code.
async fn first_ask(elicitation: Value, engine_fallback: bool, tool_fallback: Option<bool>) -> Result<String, i32> {
    let served = serve(|b, base| b.form_pages(base).form_fallback(engine_fallback).build()).await;
    let meta = json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": elicitation}});
    let request = Request::new("tools/call", "seat").meta(meta.as_object());
    let handler = |flow: Flow| async move {
        if let Some(on) = tool_fallback {
            flow.form_fallback(on);
        }
        Ok(format!("{:?}", flow.form::<Seat>("seat").await?))
    };
    match served.engine.run(&request, handler).await {
        Ok(Outcome::InputRequired(asked)) => {
            let params = asked.input_requests[0].1.to_json()["params"].clone();
            Ok(params.get("mode").and_then(Value::as_str).unwrap_or("form").to_owned())
        }
        Ok(Outcome::Complete(text)) => panic!("completed without asking: {text}"),
        Err(error) => Err(error.code),
    }
}

#[tokio::test]
async fn form_asks_through_the_page_only_for_a_url_only_client_and_as_the_tool_decides() {
    let url_only = json!({"url": {}});
    assert_eq!(first_ask(url_only.clone(), true, None).await, Ok("url".to_owned()), "the engine's fallback");
    assert_eq!(first_ask(url_only.clone(), false, None).await, Err(-32021), "no fallback: the capability error");
    assert_eq!(first_ask(url_only.clone(), false, Some(true)).await, Ok("url".to_owned()), "the tool turns it on");
    assert_eq!(first_ask(url_only, true, Some(false)).await, Err(-32021), "the tool turns it off");
    // A client that draws forms gets the form, fallback or not.
    assert_eq!(first_ask(json!({"form": {}, "url": {}}), true, None).await, Ok("form".to_owned()));
}

/// The check that meets the spec's rule: the server's own authentication names the visitor (here
/// the travel-server's bearer layer, optional on the pages); the link carries no credential. Alice
/// answers her step; Bob, authenticated, is refused by the store; nobody is refused by the check.
#[tokio::test]
async fn authenticated_visitors_answer_their_own_steps_only() {
    use elicit_examples::bearer::{BearerTokens, authenticate};
    use elicit_runtime::server::pages::kit::AuthenticatedVisitors;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let engine = Engine::builder("form-page-test", KeyRing::generate())
        .form_pages(&base)
        .page_visitors(Arc::new(AuthenticatedVisitors))
        .build();
    let tokens = BearerTokens::parse("tok-a=alice,tok-b=bob").unwrap();
    let router = authenticate(engine.form_pages().unwrap().router(), tokens, false);
    tokio::spawn(async move { axum::serve(listener, router).await });
    let served = Served { engine: Arc::new(engine), base };

    let (link, state) = first_round(&served, Some("alice")).await;
    assert!(!link.contains("login="), "no credential in the link: {link}");
    let nobody = PageForm::open(&link, None).await;
    assert_eq!(nobody.status, 403, "{}", nobody.body);
    let bob = PageForm::open_with(&link, None, &[("authorization", "Bearer tok-b")]).await;
    assert_eq!(bob.status, 200, "{}", bob.body);
    let refused = bob.press("decline").await;
    assert_eq!(refused.status, 409, "{}", refused.body);
    let mut alice = PageForm::open_with(&link, None, &[("authorization", "Bearer tok-a")]).await;
    alice.set("f.name", "Alice").set("f.side", "aisle");
    assert_eq!(alice.press("accept").await.status, 200);
    let Outcome::Complete(text) = retry(&served, Some("alice"), &state).await else { panic!("not complete") };
    assert_eq!(text, r#"Seat { name: "Alice", seats: 1, side: Aisle, offers: false }"#);
}
