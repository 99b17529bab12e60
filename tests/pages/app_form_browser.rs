//! The draft app-rendered forms (SEP-3118) in a real browser: headless Chromium loads a host page
//! that embeds the engine's MCP App in an iframe and speaks the Apps bridge to it (`ui/initialize`
//! answered with `hostCapabilities.elicitation`, then `elicitation/create` with the params of the
//! engine's own ask, hint included). The App shows the ask's message and defaults, the test fills
//! its controls and presses its buttons, and what the App answers is handed back to the engine as
//! the client's `inputResponses`: the flow resumes with the typed value, or the decline or cancel.
//!
//! The host page is this test's (no MCP host is available here): a same-origin `srcdoc` frame, so
//! the test can reach the App's controls; the App runs under its own policy (script by hash).

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use std::time::Duration;

use elicit_runtime::apps::AppForm;
use elicit_runtime::server::{Answer, Engine, Flow, FlowError, Outcome, Request};
use elicit_runtime::state::KeyRing;
use elicit_test_support::chromium::{Chromium, chromium_or_skip};
use serde_json::{Value, json};

use crate::form_page::Seat;

const LIMIT: Duration = Duration::from_secs(30);
const SEAT_APP: &str = "ui://pages-test/seat";

fn negotiating() -> serde_json::Map<String, Value> {
    json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}},
        "extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"], "elicitation": {}}}}})
    .as_object()
    .unwrap()
    .clone()
}

async fn ask_seat(flow: Flow) -> Result<String, FlowError> {
    Ok(match flow.form_with::<Seat>("seat", "Choose your <seat>").await? {
        Answer::Accepted(seat) => format!("{seat:?}"),
        Answer::Declined => "declined".to_owned(),
        Answer::Cancelled => "cancelled".to_owned(),
    })
}

/// A host page embedding `app` and forwarding `params` as `elicitation/create` once the App is
/// initialized; the App's answer lands in `window.answer`, its capabilities in `window.appCapabilities`.
fn host_page(app: &str, params: &Value) -> String {
    // JSON inside a script element: `</` must not end it.
    let embed = |value: &Value| value.to_string().replace("</", "<\\/");
    format!(
        r#"<!doctype html><html><head><meta charset="utf-8"><title>host</title></head><body><script>
const app = {app}, params = {params};
const frame = document.createElement("iframe");
frame.setAttribute("sandbox", "allow-scripts allow-forms allow-same-origin");
frame.style.width = "600px"; frame.style.height = "700px";
frame.srcdoc = app;
document.body.appendChild(frame);
window.addEventListener("message", (event) => {{
  if (event.source !== frame.contentWindow) return;
  const m = event.data, reply = (message) => frame.contentWindow.postMessage(Object.assign({{jsonrpc: "2.0"}}, message), "*");
  if (m.method === "ui/initialize") {{
    window.appCapabilities = m.params.appCapabilities;
    reply({{id: m.id, result: {{protocolVersion: "2026-01-26", hostInfo: {{name: "test-host", version: "0"}},
      hostCapabilities: {{elicitation: {{}}}}, hostContext: {{}}}}}});
  }} else if (m.method === "ui/notifications/initialized") {{
    reply({{id: "ask-1", method: "elicitation/create", params}});
  }} else if (m.id === "ask-1") {{
    window.answer = m.result || {{error: m.error}};
  }}
}});
</script></body></html>"#,
        app = embed(&Value::String(app.to_owned())),
        params = embed(params),
    )
}

/// Serves `page` at `/` of a loopback port; the URL.
async fn serve_page(page: String) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let router = axum::Router::new().route("/", axum::routing::get(move || async move { axum::response::Html(page) }));
    tokio::spawn(async move { axum::serve(listener, router).await });
    url
}

/// Evaluates `script` in the App's document (the frame's).
fn in_app(script: &str) -> String {
    format!(
        "(() => {{ const f = document.querySelector('iframe'); const d = f && f.contentDocument; if (!d) return null; {script} }})()"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_answers_through_the_app_and_the_flow_resumes_typed() {
    let Some(path) = chromium_or_skip("chromium_answers_through_the_app_and_the_flow_resumes_typed") else { return };
    let form = AppForm::new::<Seat>(SEAT_APP).unwrap();
    let engine = Engine::builder("app-form-browser", KeyRing::generate()).app_form(form.clone()).build();
    let meta = negotiating();
    let request = Request::new("tools/call", "seat").meta(Some(&meta));

    for (press, expected) in [
        ("accept", "Seat { name: \"Ada <b>\", seats: 3, side: Aisle, offers: true }"),
        ("decline", "declined"),
        ("cancel", "cancelled"),
    ] {
        let Outcome::InputRequired(asked) = engine.run(&request, ask_seat).await.unwrap() else { panic!("no ask") };
        let params = asked.input_requests[0].1.to_json()["params"].clone();
        // The host resolves the hint on the server that asked.
        let uri = params["_meta"]["ui"]["resourceUri"].as_str().unwrap();
        let app = engine.app_forms().iter().find(|f| f.uri() == uri).unwrap().html().to_owned();
        let url = serve_page(host_page(&app, &params)).await;

        let path = path.clone();
        let answer = tokio::task::spawn_blocking(move || {
            let mut browser = Chromium::start(&path);
            let tab = browser.open(&url);
            let caps = browser.wait_for(&tab, "window.appCapabilities || null", LIMIT, "the App's ui/initialize");
            assert_eq!(caps, json!({"elicitation": {}}));
            // The App shows the ask's own message, as text.
            let shown = in_app("const h = d.getElementById('message'); return h && h.textContent === 'Choose your <seat>' ? h.textContent : null;");
            browser.wait_for(&tab, &shown, LIMIT, "the ask's message in the App");
            // The schema's default is shown (seats: 1).
            let seats = browser.evaluate(&tab, &in_app("return d.querySelector('[name=\"f.seats\"]').value;")).unwrap();
            assert_eq!(seats, json!("1"));
            browser.evaluate(
                &tab,
                &in_app(
                    "d.querySelector('[name=\"f.name\"]').value = 'Ada <b>'; \
                     d.querySelector('[name=\"f.seats\"]').value = '3'; \
                     d.querySelector('[name=\"f.side\"]').value = 'aisle'; \
                     d.querySelector('[name=\"f.offers\"]').checked = true; return true;",
                ),
            );
            browser.evaluate(&tab, &in_app(&format!("d.getElementById('{press}').click(); return true;")));
            browser.wait_for(&tab, "window.answer || null", LIMIT, "the App's answer")
        })
        .await
        .unwrap();

        // The host returns the App's ElicitResult as the client's answer.
        let responses = json!({ "seat": answer });
        let retry = request.input_responses(Some(&responses)).request_state(asked.request_state.as_deref());
        let Outcome::Complete(text) = engine.run(&retry, ask_seat).await.unwrap() else {
            panic!("not complete: {answer}")
        };
        assert_eq!(text, expected, "{press}: {answer}");
    }
}
