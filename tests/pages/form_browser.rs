//! A real browser on the engine's form pages: headless Chromium, driven over the Chrome DevTools
//! protocol, types into the travel-server's trip form, submits one answer the type's parser
//! refuses (errors beside the fields, every value kept), corrects it and submits; the flow then
//! resumes with the typed `Trip`. Decline and Cancel are pressed on the page too. The browser keeps
//! the page's cookie and posts its hidden token by itself, under the page's strict CSP.
//!
//! With `ELICIT_FORM_SCREENSHOT=path.png` set, the refused form is saved there as the browser
//! drew it (the docs' screenshot). Without Chromium the tests are skipped with a message.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use std::time::Duration;

use base64::Engine as _;
use elicit_examples::travel::Trip;
use elicit_runtime::server::{Answer, Flow, FlowError, Outcome, Request};
use elicit_test_support::chromium::{Chromium, chromium_or_skip};
use serde_json::{Value, json};

use crate::form_page::{Seat, Served, serve};

/// The bound on every wait on the browser.
const LIMIT: Duration = Duration::from_secs(30);

fn url_only() -> serde_json::Map<String, Value> {
    json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {"url": {}}}}).as_object().unwrap().clone()
}

async fn ask_trip(flow: Flow) -> Result<String, FlowError> {
    Ok(match flow.form_page::<Trip>("trip", "Where would you like to fly?").await? {
        Answer::Accepted(trip) => format!(
            "{} → {} on {}, {} traveller(s), meals {:?}, {}",
            trip.route.from, trip.route.to, trip.schedule.depart, trip.schedule.travellers, trip.meals, trip.email
        ),
        Answer::Declined => "declined".to_owned(),
        Answer::Cancelled => "cancelled".to_owned(),
    })
}

async fn ask_seat(flow: Flow) -> Result<String, FlowError> {
    Ok(match flow.form_page::<Seat>("seat", "Choose your seat").await? {
        Answer::Accepted(seat) => format!("{seat:?}"),
        Answer::Declined => "declined".to_owned(),
        Answer::Cancelled => "cancelled".to_owned(),
    })
}

/// Runs a round of `handler` as a URL-only client, with `answers` when retrying: the outcome.
async fn round<F, Fut>(served: &Served, key: &str, state: Option<&str>, handler: F) -> Outcome<String>
where
    F: FnOnce(Flow) -> Fut,
    Fut: Future<Output = Result<String, FlowError>>,
{
    let meta = url_only();
    let consent = json!({ key: {"action": "accept"} });
    let mut request = Request::new("tools/call", "ask").meta(Some(&meta));
    if state.is_some() {
        request = request.input_responses(Some(&consent)).request_state(state);
    }
    served.engine.run(&request, handler).await.unwrap()
}

fn link_and_state(outcome: Outcome<String>) -> (String, String) {
    let Outcome::InputRequired(asked) = outcome else { panic!("no ask") };
    let url = asked.input_requests[0].1.to_json()["params"]["url"].as_str().unwrap().to_owned();
    (url, asked.request_state.unwrap())
}

/// The id of the control named `name` on the page.
fn id_of(browser: &mut Chromium, tab: &str, name: &str) -> String {
    let expression = format!(
        "(() => {{ const el = document.querySelector('[name=\"{name}\"]'); \
           return document.readyState === 'complete' && el ? el.id : null; }})()"
    );
    browser.wait_for(tab, &expression, LIMIT, &format!("no control {name}")).as_str().unwrap().to_owned()
}

fn value_of(browser: &mut Chromium, tab: &str, id: &str) -> Value {
    browser.evaluate(tab, &format!("document.getElementById('{id}').value")).unwrap_or(Value::Null)
}

/// Waits until the tab shows a page whose `#id` exists: after a submission, the next page.
fn wait_for_element(browser: &mut Chromium, tab: &str, id: &str) {
    let expression = format!("document.readyState === 'complete' && document.getElementById('{id}') ? true : null");
    browser.wait_for(tab, &expression, LIMIT, &format!("no #{id} on the page"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_fills_the_trip_form_is_refused_once_then_the_flow_resumes_typed() {
    let Some(path) = chromium_or_skip("chromium_fills_the_trip_form_is_refused_once_then_the_flow_resumes_typed")
    else {
        return;
    };
    let served = serve(|b, base| b.form_pages(base).build()).await;
    let (url, state) = link_and_state(round(&served, "trip", None, ask_trip).await);
    let screenshot = std::env::var_os("ELICIT_FORM_SCREENSHOT");
    let (engine_side, browser_side) = (served, url.clone());
    let filled = tokio::task::spawn_blocking(move || {
        let mut browser = Chromium::start(&path);
        let tab = browser.open(&browser_side);
        // A phone-sized viewport: the page must read there.
        browser
            .command(
                &tab,
                "Emulation.setDeviceMetricsOverride",
                json!({"width": 412, "height": 900, "deviceScaleFactor": 1, "mobile": true}),
            )
            .unwrap();
        for (name, text) in [("f.from", "CDG"), ("f.to", "JFK"), ("f.email", "ada@example.com")] {
            let id = id_of(&mut browser, &tab, name);
            browser.type_into(&tab, &id, text, LIMIT);
        }
        // A date control takes no typed text in headless Chromium: set as its picker would.
        let depart = id_of(&mut browser, &tab, "f.depart");
        browser.evaluate(&tab, &format!("document.getElementById('{depart}').value = '2026-09-01'"));
        // Three meals where two at most are allowed: only the type's parser knows.
        for meal in 0..3 {
            let meals = id_of(&mut browser, &tab, "f.meals");
            let first = meals.trim_end_matches("-0").to_owned();
            browser.click(&tab, &format!("{first}-{meal}"), LIMIT);
        }
        browser.click(&tab, "accept", LIMIT);
        wait_for_element(&mut browser, &tab, "errors");
        let error = browser
            .wait_for(
                &tab,
                "document.querySelector('fieldset .error') && document.querySelector('fieldset .error').textContent",
                LIMIT,
                "an error beside the meals",
            )
            .as_str()
            .unwrap()
            .to_owned();
        let from = id_of(&mut browser, &tab, "f.from");
        let kept = (value_of(&mut browser, &tab, &from), value_of(&mut browser, &tab, &depart));
        let ticked =
            browser.evaluate(&tab, "document.querySelectorAll('input[name=\"f.meals\"]:checked').length").unwrap();
        if let Some(path) = screenshot {
            let shot = browser
                .command(&tab, "Page.captureScreenshot", json!({"format": "png", "captureBeyondViewport": true}))
                .unwrap();
            let png = base64::engine::general_purpose::STANDARD.decode(shot["data"].as_str().unwrap()).unwrap();
            assert!(png.starts_with(b"\x89PNG"), "a PNG");
            std::fs::write(path, png).unwrap();
        }
        // The user unticks the third meal and submits again.
        let meals = id_of(&mut browser, &tab, "f.meals");
        browser.click(&tab, &format!("{}-2", meals.trim_end_matches("-0")), LIMIT);
        browser.click(&tab, "accept", LIMIT);
        wait_for_element(&mut browser, &tab, "done");
        (error, kept, ticked)
    })
    .await
    .unwrap();
    let (error, (from, depart), ticked) = filled;
    assert_eq!(error, "must have at most 2 items selected");
    assert_eq!((from, depart), (json!("CDG"), json!("2026-09-01")), "values kept after the refusal");
    assert_eq!(ticked, 3, "the ticks kept too");

    let Outcome::Complete(text) = round(&engine_side, "trip", Some(&state), ask_trip).await else {
        panic!("not complete")
    };
    assert_eq!(text, "CDG → JFK on 2026-09-01, 1 traveller(s), meals [Vegetarian, Vegan], ada@example.com");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_declines_and_cancels_from_the_page() {
    let Some(path) = chromium_or_skip("chromium_declines_and_cancels_from_the_page") else { return };
    let served = serve(|b, base| b.form_pages(base).build()).await;
    let mut links = Vec::new();
    for _ in 0..2 {
        links.push(link_and_state(round(&served, "seat", None, ask_seat).await));
    }
    let urls: Vec<String> = links.iter().map(|(url, _)| url.clone()).collect();
    tokio::task::spawn_blocking(move || {
        let mut browser = Chromium::start(&path);
        for (url, button) in urls.iter().zip(["decline", "cancel"]) {
            let tab = browser.open(url);
            // The required fields stay empty: refusing needs no valid answer.
            browser.click(&tab, button, LIMIT);
            wait_for_element(&mut browser, &tab, "done");
        }
    })
    .await
    .unwrap();
    for ((_, state), expected) in links.iter().zip(["declined", "cancelled"]) {
        let Outcome::Complete(text) = round(&served, "seat", Some(state), ask_seat).await else {
            panic!("not complete")
        };
        assert_eq!(text, expected);
    }
}
