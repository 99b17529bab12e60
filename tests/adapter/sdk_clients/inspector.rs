//! The MCP Inspector (the official host for trying servers, pinned 2.12.0) books a trip on a real
//! `travel-server` through its own web UI, in a headless Chromium, as a person would: connect,
//! list the tools, run `book_trip`, type the trip into the form the Inspector draws from our
//! schema, open the payment page from the Inspector's URL dialog and approve it there, tick the
//! confirmation; then run it again and decline the trip form, again and cancel it, again and
//! cancel the URL step in the Inspector's dialog, and again and deny the payment on its page. Each
//! ending is the handler's own text, read from the Inspector's Results panel.
//!
//! In each era: `legacy`, a 2025-11-25 session, where the server pushes each form while the call
//! is open and its completion notification moves the URL dialog on by itself; `modern`, revision
//! 2026-07-28 without a session, where each form comes back as `input_required` (the Inspector
//! marks it a Multi Round-Trip) and the person tells it the page is done ("I've completed it").
//!
//! The browser reaches 127.0.0.1 only. A failed step names itself and the screenshot it saved
//! (under `target/inspector-ui/`). With `ELICIT_INSPECTOR_SCREENSHOTS=DIR` set, the trip form and
//! the URL dialog are saved there as the Inspector drew them (the docs' screenshots:
//! `inspector-form-ERA.png`, `inspector-url-ERA.png`). Without Chromium or the Inspector installed
//! the tests are skipped with a message, except under `CI`.

use std::time::Duration;

use elicit_test_support::chromium::chromium_or_skip;
use elicit_test_support::peers::clients::BOOKED;
use elicit_test_support::peers::inspector::{Era, Inspector, UiRun, installed_or_skip};
use elicit_test_support::process::target_dir;
use elicit_test_support::reference::mask_reference;
use elicit_test_support::server::key_b64;
use elicit_test_support::server::process::ServerProcess;
use serde_json::{Value, json};

/// The bound on each event of the UI: a cold start of Chromium and of the Inspector's page
/// included.
const EVENT: Duration = Duration::from_secs(60);

/// The fields of the trip form, as the Inspector labels them (the schema's titles).
const TRIP_FIELDS: [&str; 13] = [
    "From",
    "To",
    "Departure date",
    "Arrive by",
    "Travellers",
    "Budget (EUR)",
    "Cabin",
    "Seat",
    "Meals",
    "Extras",
    "E-mail",
    "Loyalty page",
    "Fare alerts",
];

/// The trip of the SDK client tests (`peers::clients::trip`, which [`BOOKED`] describes), as a
/// person picks it in the Inspector: titled options by their titles, untitled ones by value.
fn trip_as_typed() -> Value {
    json!({
        "from": "CDG", "to": "JFK", "depart": "2026-09-01", "travellers": 2, "cabin": "Business class",
        "seat": "window", "meals": ["vegan"], "extras": ["Lounge access"], "email": "ada@example.com"
    })
}

/// The trip form drawn, filled and submitted, then the payment step's URL dialog: the page's URL,
/// one of this server's payment pages.
fn trip_to_payment(ui: &mut UiRun, server: &ServerProcess, era: Era) -> String {
    let form = ui.expect("form", EVENT);
    assert_eq!((&form["message"], &form["labels"]), (&json!("Where would you like to fly?"), &json!(TRIP_FIELDS)));
    let link = ui.expect("url", EVENT);
    let url = link["url"].as_str().unwrap();
    assert!(url.starts_with(&format!("{}/pay/", server.base_url())), "{link}");
    assert_eq!(link["mrtr"], era == Era::Modern, "{link}");
    url.to_owned()
}

/// The Results panel after `action`: the handler's `ending`.
fn assert_ending(ui: &mut UiRun, action: &str, ending: &str, server: &ServerProcess) {
    let result = ui.expect("result", EVENT);
    assert_eq!((&result["action"], &result["text"]), (&json!(action), &json!(ending)), "{}", server.stderr());
}

fn books_a_trip_through_the_inspector(test: &str, era: Era, protocol: &str) {
    let Some(chromium) = chromium_or_skip(test) else { return };
    let Some((node, modules)) = installed_or_skip(test) else { return };
    let server = ServerProcess::travel(&key_b64());
    let inspector = Inspector::start(&node, &modules, &server.mcp_url(), era);
    let failures = target_dir().join("inspector-ui");
    std::fs::create_dir_all(&failures).unwrap();
    let plan = json!({
        "url": inspector.url(),
        "era": era.flag(),
        "trip": trip_as_typed(),
        "chromium": chromium,
        "failures": failures,
        "screenshots": std::env::var_os("ELICIT_INSPECTOR_SCREENSHOTS").map(|dir| dir.to_string_lossy().into_owned()),
    });
    let mut ui = UiRun::start(&node, &modules, &plan);

    assert_eq!(ui.expect("connected", EVENT)["protocol"], protocol, "{}", inspector.output());
    assert_eq!(ui.expect("tools", EVENT)["names"], json!(["book_trip", "rate_trip", "plan_trip", "group_booking"]));

    // Accepted: the trip form, the payment page approved, the confirmation.
    let url = trip_to_payment(&mut ui, &server, era);
    let page = ui.expect("page", EVENT);
    assert_eq!((&page["page"], &page["heading"]), (&json!(format!("{url}/approve")), &json!("Payment approved")));
    let confirm = ui.expect("form", EVENT);
    assert_eq!(confirm["message"], "Book CDG → JFK on 2026-09-01 for 2 traveller(s), €1888.00 in total?");
    assert_eq!(confirm["labels"], json!(["Book it"]));
    let booked = ui.expect("result", EVENT);
    assert_eq!(booked["action"], "accept");
    assert_eq!(mask_reference(booked["text"].as_str().unwrap()), BOOKED, "{booked}");

    // Declined, then cancelled, at the trip form.
    for (action, ending) in [
        ("decline", "No booking made: you declined to give the trip details."),
        ("cancel", "Booking cancelled before any details were given."),
    ] {
        assert_eq!(ui.expect("form", EVENT)["message"], "Where would you like to fly?");
        assert_ending(&mut ui, action, ending, &server);
    }

    // Cancelled in the Inspector's URL dialog.
    trip_to_payment(&mut ui, &server, era);
    assert_ending(&mut ui, "cancel-url", "Payment cancelled: nothing was booked.", &server);

    // Denied on the payment page.
    let url = trip_to_payment(&mut ui, &server, era);
    let page = ui.expect("page", EVENT);
    assert_eq!((&page["page"], &page["heading"]), (&json!(format!("{url}/deny")), &json!("Payment denied")));
    assert_ending(&mut ui, "deny-page", "Payment denied on the payment page: nothing was booked.", &server);
    ui.exited(EVENT);
}

#[test]
fn era_2025() {
    books_a_trip_through_the_inspector("sdk_clients::inspector::era_2025", Era::Legacy, "MCP 2025-11-25");
}

#[test]
fn era_2026() {
    books_a_trip_through_the_inspector("sdk_clients::inspector::era_2026", Era::Modern, "MCP 2026-07-28");
}
