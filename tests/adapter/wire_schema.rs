//! Everything a real `travel-server` sends satisfies the spec's schema
//! (`tests/fixtures/spec/schema-2026-07-28.json`): `tools/call` results — complete and input-required —
//! as `CallToolResultResponse`, errors as `JSONRPCErrorResponse`, `tools/list` as
//! `ListToolsResultResponse`. URL-mode input requests carry no `elicitationId` (a 2025-11-25
//! member rmcp adds and the adapter strips). The validators are shown to reject broken replies,
//! so a pass means something.
//!
//! (The end-to-end and two-instance tests check every reply against the schema as well: the
//! shared client validates each one as it arrives.)

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::server;

use std::collections::BTreeSet;

use serde_json::{Value, json};

use server::http::{Client, Exchange, browser_submit};
use server::process::ServerProcess;
use server::schema::{definition_for, validator, violations};

fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

fn trip() -> Value {
    json!({
        "from": "AMS", "to": "LIS", "depart": "2026-11-03", "arriveBy": "2026-11-03T18:00:00+01:00",
        "travellers": 3, "budget": 450.5, "cabin": "premium_economy", "seat": "aisle",
        "meals": ["vegetarian", "gluten-free"], "extras": ["checked_bag", "insurance"],
        "email": "ada@example.com", "loyaltyPage": "https://loyalty.example/ada", "alerts": true
    })
}

/// A session that makes the server send every kind of reply it has: the tool list; form, URL
/// (first and again while pending) and batched input requests; a re-ask after invalid content;
/// complete results, successful and `isError`; and errors for a bad state, a malformed answer,
/// an unknown tool, a missing capability, and a non-object `inputResponses`.
async fn session(server: &ServerProcess) -> Vec<Exchange> {
    let client = Client::new(&server.mcp_url());
    let list = client.request("tools/list", json!({})).await;
    let names: Vec<&str> =
        list.result()["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"book_trip") && names.contains(&"rate_trip"), "{names:?}");

    // book_trip: invalid trip, corrected trip, URL step pending then approved, confirmation.
    let round1 = client.call("book_trip", json!({})).await.asked();
    let mut invalid = trip();
    invalid["from"] = json!("Amsterdam");
    let again =
        client.retry("book_trip", json!({}), json!({"trip": accept(invalid)}), Some(round1.state())).await.asked();
    let payment =
        client.retry("book_trip", json!({}), json!({"trip": accept(trip())}), Some(again.state())).await.asked();
    let consent = json!({"payment": {"action": "accept"}});
    let pending = client.retry("book_trip", json!({}), consent.clone(), Some(payment.state())).await.asked();
    let url = pending.params("payment")["url"].as_str().unwrap().to_owned();
    assert_eq!(browser_submit(&url, "approve").await, 200);
    let confirm = client.retry("book_trip", json!({}), consent, Some(pending.state())).await.asked();
    let done = client
        .retry("book_trip", json!({}), json!({"confirm": accept(json!({"confirm": true}))}), Some(confirm.state()))
        .await;
    assert!(done.text().starts_with("Booked!"), "{}", done.body);

    // rate_trip: two input requests in one result, both answered.
    let rating = client.call("rate_trip", json!({})).await.asked();
    let answers = json!({"rating": accept(json!({"stars": 3})), "contact": {"action": "cancel"}});
    client.retry("rate_trip", json!({}), answers, Some(rating.state())).await.text();

    // Errors.
    let bad_state = client.retry("book_trip", json!({}), json!({}), Some("AAAA")).await;
    assert_eq!(bad_state.error().0, -32602);
    let bad_answer = client.retry("book_trip", json!({}), json!({"trip": 12345}), Some(round1.state())).await;
    assert_eq!(bad_answer.error().0, -32602);
    let unknown = client.call("no_such_tool", json!({})).await;
    assert_eq!(unknown.error().0, -32602);
    let bare = Client::new(&server.mcp_url()).with_capabilities(json!({}));
    let missing = bare.call("plan_trip", json!({})).await;
    let (code, _, data) = missing.error();
    assert_eq!((code, data), (-32021, Some(&json!({"requiredCapabilities": {"elicitation": {"form": {}}}}))));
    // `book_trip` explains itself to such a client: an error result, schema-checked like the rest.
    assert!(bare.call("book_trip", json!({})).await.complete().1);
    let not_an_object =
        client.request("tools/call", json!({"name": "book_trip", "arguments": {}, "inputResponses": 5})).await;
    assert!(not_an_object.body.get("error").is_some(), "{}", not_an_object.body);

    // A form-only client: the isError result at the URL step.
    let form_only = Client::new(&server.mcp_url()).with_capabilities(json!({"elicitation": {"form": {}}}));
    let round1 = form_only.call("book_trip", json!({})).await.asked();
    let refused = form_only.retry("book_trip", json!({}), json!({"trip": accept(trip())}), Some(round1.state())).await;
    assert!(refused.complete().1, "{}", refused.body);

    [client.exchanges(), bare.exchanges(), form_only.exchanges()].concat()
}

fn result_type(exchange: &Exchange) -> Option<&str> {
    exchange.reply.get("result").and_then(|r| r.get("resultType")).and_then(Value::as_str)
}

#[tokio::test]
async fn every_reply_satisfies_the_spec_schema() {
    let server = ServerProcess::travel(&server::key_b64());
    let exchanges = session(&server).await;
    let mut kinds = BTreeSet::new();
    for exchange in &exchanges {
        let definition = definition_for(&exchange.method, &exchange.reply);
        let errors = violations(&exchange.method, &exchange.reply);
        assert!(errors.is_empty(), "{definition}: {errors:?}\n{}", exchange.reply);
        kinds.insert(match (definition, result_type(exchange)) {
            ("CallToolResultResponse", Some(kind)) => format!("{definition}/{kind}"),
            _ => definition.to_owned(),
        });
        if exchange.reply.get("error").is_some() {
            // Errors of tools/call never come back as 200-with-result, and every one names the request.
            assert_eq!(exchange.reply["id"], exchange.request["id"], "{}", exchange.reply);
        } else {
            assert_eq!(exchange.status, 200, "{}", exchange.reply);
        }
    }
    let expected = [
        "CallToolResultResponse/complete",
        "CallToolResultResponse/input_required",
        "JSONRPCErrorResponse",
        "ListToolsResultResponse",
    ];
    assert_eq!(kinds.iter().map(String::as_str).collect::<Vec<_>>(), expected);
    let codes: BTreeSet<i64> = exchanges.iter().filter_map(|e| e.reply.pointer("/error/code")?.as_i64()).collect();
    assert!(codes.is_superset(&BTreeSet::from([-32602, -32021])), "{codes:?}");
}

#[tokio::test]
async fn url_mode_input_requests_carry_no_elicitation_id() {
    let server = ServerProcess::travel(&server::key_b64());
    let exchanges = session(&server).await;
    let mut url_requests = 0;
    for exchange in &exchanges {
        assert!(
            !exchange.reply.to_string().contains("elicitationId"),
            "a 2025-11-25 member on the wire: {}",
            exchange.reply
        );
        let Some(requests) = exchange.reply.pointer("/result/inputRequests").and_then(Value::as_object) else {
            continue;
        };
        for request in requests.values() {
            if request["params"]["mode"] == "url" {
                url_requests += 1;
                let params = request["params"].as_object().unwrap();
                let mut members: Vec<&str> = params.keys().map(String::as_str).collect();
                members.sort_unstable();
                assert_eq!(members, ["message", "mode", "url"], "{request}");
            }
        }
    }
    // The first URL request and the one sent again while the page was pending.
    assert_eq!(url_requests, 2);
}

#[tokio::test]
async fn the_validators_reject_broken_replies() {
    let server = ServerProcess::travel(&server::key_b64());
    let client = Client::new(&server.mcp_url());
    let list = client.request("tools/list", json!({})).await.body;
    let asked = client.call("book_trip", json!({})).await;
    let mut answer = trip();
    answer["from"] = json!("X");
    let error = client.retry("book_trip", json!({}), json!({"trip": 5}), asked.asked().state.as_deref()).await.body;
    let declined = client
        .retry("book_trip", json!({}), json!({"trip": {"action": "decline"}}), asked.asked().state.as_deref())
        .await
        .body;
    let asked = asked.body;

    let broken: Vec<(&str, Value)> = vec![
        ("tools/list", {
            let mut v = list.clone();
            v["result"].as_object_mut().unwrap().remove("tools");
            v
        }),
        ("tools/list", {
            let mut v = list.clone();
            v["result"]["tools"][0]["inputSchema"] = json!("object");
            v
        }),
        ("tools/call", {
            let mut v = asked.clone();
            v["result"]["inputRequests"]["trip"] = json!({"method": "elicitation/create", "params": {"mode": "url"}});
            v
        }),
        ("tools/call", {
            let mut v = asked.clone();
            v["result"]["requestState"] = json!(42);
            v
        }),
        ("tools/call", {
            let mut v = declined.clone();
            v["result"]["content"] = json!("No booking made");
            v
        }),
        ("tools/call", {
            let mut v = declined.clone();
            v["jsonrpc"] = json!("1.0");
            v
        }),
        ("tools/call", {
            let mut v = error.clone();
            v["error"]["code"] = json!("-32602");
            v
        }),
        ("tools/call", {
            let mut v = error.clone();
            v["error"].as_object_mut().unwrap().remove("message");
            v
        }),
    ];
    // Controls: the originals pass.
    for (method, reply) in
        [("tools/list", &list), ("tools/call", &asked), ("tools/call", &declined), ("tools/call", &error)]
    {
        assert!(violations(method, reply).is_empty(), "{reply}");
    }
    for (method, reply) in broken {
        assert!(
            !violations(method, &reply).is_empty(),
            "a broken reply passed as {}: {reply}",
            definition_for(method, &reply)
        );
    }
    // The validator is the named definition, not the whole document: a request is not a response.
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    assert!(!validator("ListToolsResultResponse").is_valid(&request));
}
