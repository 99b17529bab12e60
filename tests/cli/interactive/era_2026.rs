//! The real `elicit`, without `--answers`, driven through a pseudo-terminal against a real
//! `travel-server`: filling forms by typing (with validation as you type and a change at the
//! review step), Escape cancelling, an explicit Decline, and URL consent with the full URL and
//! host shown, the page opened only after consent, and `r` retrying a pending step at once.
//!
//! Keys are what inquire 0.9.4 (crossterm backend) reads: Enter is `\r`, arrows are CSI
//! sequences, a lone ESC is Escape, DEL is Backspace.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]
#![cfg(unix)]

use elicit_test_support::cli;

use std::time::Duration;

use cli::terminal::{BACKSPACE, DOWN, ENTER, ESCAPE, Terminal};
use cli::{Browser, Sandbox, TravelServer, http_submit};

/// Answers the two forms of `rate_trip`, whichever comes first.
fn fill_rating_and_contact(term: &mut Terminal) {
    for _ in 0..2 {
        term.expect("travel-server asks for information (");
        let key = term.expect(")");
        term.answer("Answer this request?", ENTER); // "Fill in the form"
        match key.trim() {
            "rating" => {
                // Validation as you type: 9 is refused, and the prompt stays.
                term.answer("stars *", &format!("9{ENTER}"));
                term.expect("must be at most 5");
                term.send(&format!("{BACKSPACE}4{ENTER}"));
                term.answer("comment", &format!("Lovely{ENTER}"));
                term.expect("Your answers for travel-server:");
                term.expect("stars: 4");
                term.expect("comment: Lovely");
                // Change an answer once before sending.
                term.answer("Send these answers?", &format!("{DOWN}{ENTER}"));
                term.answer("Which answer?", ENTER); // stars, the first
                term.answer("stars *", &format!("{BACKSPACE}5{ENTER}")); // pre-filled with 4
                term.expect("stars: 5");
                term.answer("Send these answers?", ENTER);
            }
            "contact" => {
                term.answer("email *", &format!("ada@example.com{ENTER}"));
                term.expect("email: ada@example.com");
                term.answer("Send these answers?", ENTER);
            }
            other => panic!("unexpected input request {other:?}\n{}", term.transcript),
        }
    }
}

#[test]
fn rate_trip_filled_in_by_typing() {
    let server = TravelServer::start();
    let mut term = Terminal::start(&["call", "--url", &server.mcp_url(), "rate_trip"]);
    fill_rating_and_contact(&mut term);
    term.expect("Thanks for 5 star(s) (Lovely); we will write to ada@example.com.");
    let (code, screen) = term.finish();
    assert_eq!(code, 0, "{screen}");
}

#[test]
fn escape_at_a_prompt_cancels() {
    let server = TravelServer::start();
    let mut term = Terminal::start(&["call", "--url", &server.mcp_url(), "book_trip"]);
    term.expect("travel-server asks for information (trip)");
    term.answer("Answer this request?", ENTER);
    term.answer("From *", &format!("CD{ESCAPE}"));
    term.expect("Booking cancelled before any details were given.");
    let (code, screen) = term.finish();
    assert_eq!(code, 0, "{screen}");
}

#[test]
fn escape_at_the_first_choice_cancels() {
    let server = TravelServer::start();
    let mut term = Terminal::start(&["call", "--url", &server.mcp_url(), "book_trip"]);
    term.answer("Answer this request?", ESCAPE);
    term.expect("Booking cancelled before any details were given.");
    let (code, screen) = term.finish();
    assert_eq!(code, 0, "{screen}");
}

#[test]
fn explicit_decline() {
    let server = TravelServer::start();
    let mut term = Terminal::start(&["call", "--url", &server.mcp_url(), "book_trip"]);
    term.answer("Answer this request?", &format!("{DOWN}{ENTER}")); // "Decline"
    term.expect("No booking made: you declined to give the trip details.");
    let (code, screen) = term.finish();
    assert_eq!(code, 0, "{screen}");
}

/// Fills `book_trip`'s trip form: the required fields typed, every other field left at its
/// pre-filled default.
fn fill_trip(term: &mut Terminal) {
    term.expect("travel-server asks for information (trip)");
    term.answer("Answer this request?", ENTER);
    term.answer("From *", &format!("CDG{ENTER}"));
    term.answer("To *", &format!("JFK{ENTER}"));
    term.answer("Departure date *", &format!("2026-09-01{ENTER}"));
    term.answer("Arrive by", ENTER);
    term.answer("Travellers", ENTER); // pre-filled 1
    term.answer("Budget (EUR)", ENTER);
    term.answer("Cabin", ENTER); // pre-selected Economy
    term.answer("Seat", ENTER);
    term.answer("Meals", ENTER);
    term.answer("Extras", ENTER);
    term.answer("E-mail", &format!("ada@example.com{ENTER}"));
    term.answer("Loyalty page", ENTER);
    term.answer("Fare alerts", ENTER);
    term.expect("Travellers: 1");
    term.answer("Send these answers?", ENTER);
}

#[test]
fn url_consent_open_in_browser_and_retry_now_while_pending() {
    let server = TravelServer::start();
    let sandbox = Sandbox::new();
    // The browser only records the URL: the test plays the user on the page.
    let browser = sandbox.browser(Browser::RecordOnly);
    let mut term = Terminal::start(&["call", "--url", &server.mcp_url(), "book_trip", "--browser", &browser]);
    fill_trip(&mut term);

    // Consent: the full URL and its host, before anything is opened.
    term.expect("travel-server asks you to open a page (payment)");
    let shown = term.expect_regex(r"http://127\.0\.0\.1:[0-9]+/pay/[A-Za-z0-9_-]{22}");
    assert!(shown.starts_with(&format!("{}/pay/", server.base_url())), "{shown}");
    term.expect("host: 127.0.0.1");
    term.expect("Open this page in your browser?");
    assert!(sandbox.opened().is_empty(), "the page was opened before consent: {:?}", sandbox.opened());
    term.send(ENTER); // "Open in browser"
    term.expect("Opened 127.0.0.1 in your browser.");
    assert_eq!(sandbox.opened(), std::slice::from_ref(&shown), "the page opened is the page shown");

    // The server waits 2 s for the page, then reports it pending: retry at once with `r`.
    term.expect("is not finished yet");
    term.expect("Press r to retry now");
    std::thread::sleep(Duration::from_millis(300));
    term.send("r");
    term.expect("Retrying now.");
    // Pending again (the page is still not submitted; the next automatic retry would be 2 s away).
    term.expect("is not finished yet");
    term.expect("retrying in 2 s.");
    assert_eq!(http_submit(&shown, "approve"), 200);
    std::thread::sleep(Duration::from_millis(300));
    term.send("r");
    // The key, not the automatic retry 2 s later, brings the next step: an ordering check.
    term.expect("Retrying now.");
    term.expect("travel-server asks for information (confirm)");

    term.answer("Answer this request?", ENTER);
    term.answer("Book it *", &format!("y{ENTER}"));
    term.answer("Send these answers?", ENTER);
    term.expect("Booked!");
    let (code, screen) = term.finish();
    assert_eq!(code, 0, "{screen}");
    assert_eq!(sandbox.opened().len(), 1, "opened once: {:?}", sandbox.opened());
}
