//! The form pages the engine renders, the kit's approval page, and the payment page: forged decisions refused, the amount and the cookie's scope, signing in with a
//! payment link, and a real headless browser clicking through it.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking, with the reason")]

mod amount_and_cookie;
/// The draft app-rendered forms: the engine's MCP App answering over the Apps bridge in Chromium.
mod app_form_browser;
mod approval_page;
mod browser;
mod eras_and_stores;
mod filler;
mod form_browser;
mod form_page;
mod login;
mod payment_page;
mod provider_sign_in;
mod url_only;
