//! A host that opens links but draws no forms: a client declaring URL mode only completes every
//! `travel-server` tool through the server's pages. The real server runs as a process; a plain
//! HTTP client fills each page's own controls and presses its buttons, as the user's browser would.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::server;
use serde_json::{Value, json};

use server::http::{Client, visit_page};
use server::process::ServerProcess;

use crate::filler::PageForm;

/// Calls `tool` with `arguments`, answering every ask through its page (forms filled by `fill`,
/// payments approved), until the tool completes: its text and the keys asked, round by round.
async fn through_pages(
    client: &Client,
    tool: &str,
    arguments: Value,
    fill: impl Fn(&str, &mut PageForm),
) -> (String, Vec<Vec<String>>) {
    let mut reply = client.call(tool, arguments.clone()).await;
    let mut rounds = Vec::new();
    for _ in 0..6 {
        if reply.result()["resultType"] == "complete" {
            return (reply.text(), rounds);
        }
        let asked = reply.asked();
        let mut responses = json!({});
        for key in asked.keys() {
            let params = asked.params(key);
            assert_eq!(params["mode"], "url", "a URL-only client is asked in URL mode only: {params}");
            let url = params["url"].as_str().unwrap();
            if url.contains("/pay/") {
                assert_eq!(visit_page(url).await.submit("approve").await, 200);
            } else {
                let mut page = PageForm::open(url, None).await;
                assert_eq!(page.status, 200, "{}", page.body);
                assert!(page.has_form(), "{}", page.body);
                fill(key, &mut page);
                let done = page.press("accept").await;
                assert_eq!(done.status, 200, "{key}: {}", done.body);
            }
            responses[key] = json!({"action": "accept"});
        }
        rounds.push(asked.keys().into_iter().map(str::to_owned).collect());
        reply = client.retry(tool, arguments.clone(), responses, Some(asked.state())).await;
    }
    panic!("{tool} did not complete: {}", reply.body)
}

#[tokio::test]
async fn a_url_only_client_completes_every_travel_tool_through_the_pages() {
    let server = ServerProcess::travel(&server::key_b64());
    let client = Client::new(&server.mcp_url()).with_capabilities(json!({"elicitation": {"url": {}}}));

    let (booked, rounds) = through_pages(&client, "book_trip", json!({}), |key, page| match key {
        "trip" => {
            page.set("f.from", "CDG")
                .set("f.to", "JFK")
                .set("f.depart", "2026-09-01")
                .set("f.email", "ada@example.com");
            page.tick("f.meals", "vegetarian", true);
            assert_eq!(page.value("f.travellers"), Some("1"), "the default pre-filled");
            assert_eq!(page.ticked("f.meals"), ["vegetarian"]);
        }
        "confirm" => {
            page.tick("f.confirm", "true", true);
        }
        other => panic!("unexpected ask {other}"),
    })
    .await;
    assert_eq!(rounds, [vec!["trip"], vec!["payment"], vec!["confirm"]]);
    assert!(booked.starts_with("Booked! Reference BK-"), "{booked}");
    assert!(booked.contains("CDG → JFK on 2026-09-01") && booked.contains("ada@example.com"), "{booked}");

    let (rated, rounds) = through_pages(&client, "rate_trip", json!({}), |key, page| match key {
        "rating" => {
            page.set("f.stars", "5").set("f.comment", "Smooth <3");
        }
        "contact" => {
            page.set("f.email", "bob@example.com");
        }
        other => panic!("unexpected ask {other}"),
    })
    .await;
    assert_eq!(rounds, [vec!["contact", "rating"]], "two pages asked in one round");
    assert_eq!(rated, "Thanks for 5 star(s) (Smooth <3); we will write to bob@example.com.");

    // Only what the model left out is asked: the page shows the departure date alone.
    let (planned, _) = through_pages(&client, "plan_trip", json!({"from": "CDG", "to": "LIS"}), |key, page| {
        assert_eq!(key, "plan");
        assert!(page.value("f.from").is_none(), "a valid argument is not asked again: {}", page.body);
        page.set("f.depart", "2026-10-02");
    })
    .await;
    assert_eq!(planned, "Planned: CDG → LIS on 2026-10-02, 1 traveller(s), economy.");

    let group = json!({"travellers": 4, "to": "LIS", "checks": 1});
    let (held, _) = through_pages(&client, "group_booking", group, |key, page| {
        assert_eq!(key, "departure");
        page.set("f.departure", "evening");
    })
    .await;
    assert!(held.starts_with("Held 4 seats to LIS") && held.to_lowercase().contains("evening"), "{held}");
}
