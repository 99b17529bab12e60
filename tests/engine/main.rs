//! The engine without a transport: how a flow runs in each era, how its `requestState` is sealed,
//! and what replays and forks of a flow may and may not change (exactly once, one outcome, the
//! flow ledger), and tasks: a call that becomes a task, its input requests, cancel and caps.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking, with the reason")]

mod exactly_once;
mod fuzz_regressions;
mod ledger;
/// What an operator sees: the `metrics` feature's counters and spans.
mod observe;
mod one_outcome;
mod replay;
/// How [`Engine::run`](elicit_runtime::server::Engine::run) treats what the client sends back,
/// and what the handler may ask: the 2026-07-28 Multi Round-Trip rounds, and the 2025-era session
/// where every ask is a pushed request.
mod run {
    /// The draft app-rendered forms: the App hint on a form ask, in both eras.
    mod app_forms;
    mod era_2025;
    mod era_2026;
    mod forms;
}
mod sealing;
mod tasks;
