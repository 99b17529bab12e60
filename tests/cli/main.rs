//! The `elicit` binary: scripted and interactive runs in each era, hostile servers, what it shows and
//! how, the era probe, credentials, OAuth (a scripted authorization server and a real OpenID provider in a real browser), and the Tasks extension.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking, with the reason")]

mod credentials;
mod era_probe;
/// Servers that misbehave: every run ends on its own, non-zero, with a clear message, in each era.
mod hostile_server {
    mod era_2025;
    mod era_2026;
}
/// Filling forms through a pseudo-terminal, in each era.
mod interactive {
    mod era_2025;
    mod era_2026;
}
mod oauth;
mod oidc;
mod rendering;
/// Answering from a file (`--answers`), in each era.
mod scripted {
    mod era_2025;
    mod era_2026;
    mod every_era;
}
mod server_message;
mod tasks;
mod tasks_showcase;
