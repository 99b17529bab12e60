//! A form page step on every store and both eras: the shared Redis store (a real `redis-server`),
//! and a 2025-era session whose client is asked in URL mode mid-call (`elicitation/create`), opens
//! the page, fills it and answers `accept`; the call then returns the typed value.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use std::sync::Arc;

use elicit_runtime::server::{Engine, Outcome, Request};

use elicit_runtime::server::session::{PeerError, PeerFuture, Session, SessionPeer};

use elicit_runtime::server::store::{RedisStore, Store};
use elicit_runtime::state::KeyRing;
use elicit_runtime::wire::{Capabilities, Revision};
use elicit_test_support::redis::Redis;
use serde_json::{Value, json};

use crate::filler::PageForm;
use crate::form_page::{ask, first_round, retry, serve};

/// Fills the seat page as the user would, and submits it.
async fn fill(url: &str) {
    let mut page = PageForm::open(url, None).await;
    assert_eq!(page.status, 200, "{}", page.body);
    page.set("f.name", "Grace").set("f.seats", "3").set("f.side", "window");
    let done = page.press("accept").await;
    assert_eq!(done.status, 200, "{}", done.body);
}

const EXPECTED: &str = r#"Seat { name: "Grace", seats: 3, side: Window, offers: false }"#;

#[tokio::test]
async fn a_form_page_step_completes_on_the_redis_store() {
    let Some(redis) = Redis::start_or_skip("a_form_page_step_completes_on_the_redis_store", None) else { return };
    let store: Arc<dyn Store> = Arc::new(RedisStore::builder(redis.url()).key_prefix("pages").connect().await.unwrap());
    let served = serve(|_, base| {
        Engine::builder("form-page-test", KeyRing::generate()).store(store.clone()).form_pages(base).build()
    })
    .await;
    let (link, state) = first_round(&served, None).await;
    fill(&link).await;
    let Outcome::Complete(text) = retry(&served, None, &state).await else { panic!("not complete") };
    assert_eq!(text, EXPECTED);
}

/// A 2025-11-25 client that opens every URL it is sent and fills the page there.
struct OpensPages;

impl SessionPeer for OpensPages {
    fn request(&self, method: &'static str, params: Option<Value>) -> PeerFuture<'_, Result<Value, PeerError>> {
        Box::pin(async move {
            assert_eq!(method, "elicitation/create");
            let params = params.unwrap();
            assert_eq!(params["mode"], "url", "{params}");
            assert!(params["elicitationId"].is_string(), "2025-11-25 names the step: {params}");
            fill(params["url"].as_str().unwrap()).await;
            Ok(json!({"action": "accept"}))
        })
    }

    fn notify(&self, _method: &'static str, _params: Value) -> PeerFuture<'_, Result<(), PeerError>> {
        Box::pin(async { Ok(()) })
    }
}

#[tokio::test]
async fn a_form_page_step_completes_on_a_2025_era_session() {
    let served = serve(|b, base| b.form_pages(base).build()).await;
    let url_only = Capabilities { url: true, ..Capabilities::default() };
    let session = Session::new(Revision::V2025_11_25, url_only, Arc::new(OpensPages), served.engine.ask_limit());
    let request = Request::new("tools/call", "seat");
    let text = served.engine.run_in_session(&request, &session, ask).await.unwrap();
    assert_eq!(text, EXPECTED);
}
