//! The example application `book-trip-app` (the runtime's rmcp-backed `Client`) books a trip on a
//! real `travel-server`: the form, the payment page opened in a stand-in browser, the
//! confirmation — with the same code over 2026-07-28 and over a 2025-era session.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::cli;

use std::process::Command;
use std::time::Duration;

use elicit_test_support::process;

use cli::{Browser, Sandbox, TravelServer};

/// The bound on a run.
const LIMIT: Duration = Duration::from_secs(60);

/// Runs `book-trip-app --url URL --browser SCRIPT --protocol PROTOCOL`; its exit success, stdout
/// and stderr.
fn book(server: &TravelServer, sandbox: &Sandbox, browser: Browser, protocol: &str) -> (bool, String, String) {
    cli::bins();
    let script = sandbox.browser(browser);
    let mut command = Command::new(process::debug_bin("book-trip-app"));
    command.args(["--url", &server.mcp_url(), "--browser", &script, "--protocol", protocol]);
    let run = cli::run(command, "book-trip-app", LIMIT);
    (run.status.success(), run.stdout, run.stderr)
}

/// Books a trip speaking `protocol`, and checks the whole flow ran.
fn books_a_trip(protocol: &str, legacy: bool) {
    let server = TravelServer::start();
    let sandbox = Sandbox::new();
    let (ok, stdout, stderr) = book(&server, &sandbox, Browser::Approve, protocol);
    assert!(ok, "{stdout}\n{stderr}");
    assert_eq!(stderr.contains("travel-server speaks 2025-"), legacy, "{protocol}: {stderr}");
    assert!(
        stdout.contains("Booked!") && stdout.contains("CDG → JFK on 2026-09-01, 2 traveller(s)"),
        "{stdout}\n{stderr}"
    );
    assert!(
        stderr.contains("Where would you like to fly?") && stderr.contains("): Book CDG → JFK on 2026-09-01"),
        "{stderr}"
    );
    assert_eq!(sandbox.opened().len(), 1, "{stderr}");
    assert_eq!(sandbox.page_answers(), ["HTTP/1.1 200 OK"]);
}

#[test]
fn the_app_books_a_trip_over_2026_07_28() {
    books_a_trip("2026-07-28", false);
}

#[test]
fn the_app_finds_the_era_by_itself() {
    books_a_trip("auto", false);
}

#[test]
fn the_same_app_books_a_trip_over_a_2025_11_25_session() {
    books_a_trip("2025-11-25", true);
}

#[test]
fn a_denied_payment_books_nothing() {
    let server = TravelServer::start();
    let sandbox = Sandbox::new();
    let (ok, stdout, stderr) = book(&server, &sandbox, Browser::Deny, "auto");
    assert!(ok, "{stdout}\n{stderr}");
    assert!(stdout.contains("Payment denied on the payment page: nothing was booked."), "{stdout}\n{stderr}");
    assert!(!stderr.contains("asks (confirm)"), "{stderr}");
}
