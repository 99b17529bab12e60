//! The server engine: straight-line handlers over Multi Round-Trip Requests.
//!
//! Under protocol revision 2026-07-28 a server cannot send requests to the client. When a handler
//! needs input, the request is answered with an `InputRequiredResult`; the client retries with
//! `inputResponses` and the echoed `requestState`. The engine hides that: each round re-runs the
//! handler from the top (the replay model), and every ask whose answer is known — from this round's
//! `inputResponses` or from earlier rounds carried in the sealed state — returns at once. The first
//! unanswered asks suspend the handler and become the `inputRequests` of the result; asks awaited
//! together (`tokio::join!`) go out in one round.
//!
//! The module is laid out by audience. Its root holds what a handler author needs: the
//! [`Engine`] and its [`EngineBuilder`], the [`Flow`] a handler asks through and what an ask
//! returns ([`Answer`], [`UrlAnswer`], [`FlowError`]), a round's [`Request`], [`Outcome`] and
//! [`EngineError`], progress and cancellation ([`RequestHandle`], [`Progress`]), the clock, and
//! [`PageLogin`]. Whoever deploys or implements a store reads [`store`] (the store traits, the
//! task records' trait among them, and the in-process, SQLite and Redis stores); whoever serves
//! tasks, [`task`]; whoever writes a transport for 2025-era clients, [`session`]; whoever serves
//! the engine's pages, `pages`.
//!
//! ```
//! use elicit_runtime::server::{Answer, Engine, Outcome, Request};
//! use elicit_runtime::state::KeyRing;
//! use elicit_runtime::Elicit;
//!
//! /// Who are you?
//! #[derive(Elicit)]
//! struct Name {
//!     name: String,
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
//! let engine = Engine::builder("doc-server", KeyRing::generate()).build();
//! let meta = serde_json::json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
//! let greet = |flow: elicit_runtime::server::Flow| async move {
//!     Ok(match flow.form::<Name>("who").await? {
//!         Answer::Accepted(n) => format!("Hello, {}!", n.name),
//!         Answer::Declined | Answer::Cancelled => "Hello, stranger.".to_owned(),
//!     })
//! };
//!
//! // Round 1: the engine asks.
//! let request = Request::new("tools/call", "greet").meta(meta.as_object());
//! let Outcome::InputRequired(asked) = engine.run(&request, greet).await.unwrap() else { panic!() };
//! assert_eq!(asked.input_requests[0].0, "who");
//!
//! // Round 2: the client answers and echoes the state.
//! let responses = serde_json::json!({"who": {"action": "accept", "content": {"name": "Ada"}}});
//! let retry = request.clone().input_responses(Some(&responses)).request_state(asked.request_state.as_deref());
//! let Outcome::Complete(text) = engine.run(&retry, greet).await.unwrap() else { panic!() };
//! assert_eq!(text, "Hello, Ada!");
//! # });
//! ```
//!
//! # Layout
//!
//! The files read as layers, leaves first. A module imports only from its own layer and the
//! layers before it, so no chain of imports loops back (`tests/hygiene` holds both):
//!
//! 1. Vocabulary that names nothing of the server: `clock`, `config` ([`EngineConfig`]),
//!    `payload` (the sealed state), `reask` (the message of a re-ask).
//! 2. `store`: every store trait and store.
//! 3. What a round speaks: `answer` ([`Answer`], [`UrlAnswer`], [`FlowError`]), `request`
//!    ([`Request`], [`Outcome`], [`EngineError`]), `context` (the request's principal and
//!    transport handle, and what an executor needs of the flow it asks for).
//! 4. What the flow and the executors call: `claim` (claims of ledger slots), `observe` (the
//!    metrics hooks), `page_login`.
//! 5. What a flow holds: the executor of each era — [`session`] (a 2025-era connection, and the
//!    link that pushes its asks), [`task`] (the Tasks extension's vocabulary, and a running
//!    task's link), `exec` (the one `Executor` that chooses between them) — and `pages`.
//! 6. `flow`: the [`Flow`] a handler asks through (form, sampling, roots), over its executor.
//! 7. The flow's other asks, one job a file: `args` (argument completion), `form_page`, `once`,
//!    `url`.
//! 8. `engine`: the [`Engine`], what every round and session shares, and the 2025-era entry point.
//! 9. The engine's other entry points and its builder: `round` ([`Engine::run`]), `task_calls`
//!    ([`Engine::run_task`] and `tasks/*`), `builder` ([`EngineBuilder`]).
//!
//! Where code calls back up, a narrow trait keeps the imports one-way: the executors reach the
//! flow they ask for through `context::AskingFlow`, which the flow implements (a replayed ask
//! answers `Reply::Suspend`, and the flow parks on it), and the metrics hooks read a round's flow
//! through `observe::ObservedFlow`. A type's methods split by job (`impl Flow` in `url.rs`,
//! `impl Engine` in `round.rs`) live above the file that defines the type.

mod answer;
mod args;
mod builder;
mod claim;
mod clock;
mod config;
mod context;
mod engine;
mod exec;
mod flow;
#[cfg(feature = "pages")]
mod form_page;
mod observe;
mod once;
mod page_login;
#[cfg(feature = "pages")]
#[cfg_attr(docsrs, doc(cfg(feature = "pages")))]
pub mod pages;
pub(crate) mod payload;
mod reask;
mod request;
mod round;
pub mod session;
pub mod store;
pub mod task;
mod task_calls;
mod url;

pub use answer::{Answer, FlowError, UrlAnswer};
pub use builder::EngineBuilder;
pub use clock::{Clock, ManualClock, SystemClock};
pub use config::EngineConfig;
pub use context::{Progress, RequestHandle};
pub use engine::Engine;
pub use flow::Flow;
#[cfg(feature = "metrics")]
pub use observe::FAST_DECLINE;
pub use page_login::{PageLogin, PageLoginError};
pub use request::{EngineError, FLOW_CONFLICT, Outcome, Request};
