//! Typed MCP elicitation under the Multi Round-Trip Requests pattern of protocol revision
//! 2026-07-28.
//!
//! Declare what you want to ask as a Rust type and derive [`Elicit`]: the derive produces the
//! protocol's restricted `requestedSchema` and a parser that turns the client's `content` back into
//! the type, checking every constraint the schema states and naming every field that fails.
//! Anything the protocol cannot express is a compile error.
//!
//! ```
//! use elicit_runtime::Elicit;
//!
//! /// Where would you like to fly?
//! #[derive(Elicit, Debug, PartialEq)]
//! struct Trip {
//!     /// Departure airport (IATA code)
//!     #[elicit(title = "From", min_length = 3, max_length = 3)]
//!     from: String,
//!     #[elicit(minimum = 1, maximum = 9, default = 1)]
//!     travellers: u8,
//!     cabin: Cabin,
//!     /// Send me fare alerts
//!     alerts: Option<bool>,
//! }
//!
//! #[derive(Elicit, Debug, PartialEq)]
//! #[elicit(rename_all = "lowercase")]
//! enum Cabin {
//!     #[elicit(title = "Economy")]
//!     Economy,
//!     #[elicit(title = "Business class")]
//!     Business,
//! }
//!
//! let content = serde_json::json!({"from": "CDG", "travellers": 2, "cabin": "business"});
//! let trip = Trip::from_content(content.as_object().unwrap()).unwrap();
//! assert_eq!(trip, Trip { from: "CDG".into(), travellers: 2, cabin: Cabin::Business, alerts: None });
//!
//! let bad = serde_json::json!({"from": "Paris", "travellers": 12});
//! let errors = Trip::from_content(bad.as_object().unwrap()).unwrap_err();
//! assert_eq!(
//!     errors.to_string(),
//!     "`from` must be at most 3 characters long; `travellers` must be at most 9; `cabin` is required"
//! );
//! ```
//!
//! Features: `derive`, `server` and `client` are on by default (the macro, the engine with its
//! sealed state, the client driver); `default-features = false, features = ["derive"]` gives the
//! derive and the parser alone, without crypto, tokio or IDNA. Opt-in: `rmcp` (serve from an rmcp
//! server, both eras; implies `server`), `rmcp-client` (a client of both eras on rmcp; implies
//! `client`), `rmcp-auth` (OAuth 2.1 for that client), `redis` (a store shared by several
//! instances), `chrono`, `time` and `url` (those crates' types as form fields), `schemars`
//! (`#[elicit(json_schema)]` types implement `JsonSchema`). Items that need one are badged with it
//! in these docs.

#![cfg_attr(docsrs, feature(doc_cfg))]

// An ask that names an MCP App to render the form (experimental, from a draft).
#[cfg(feature = "apps")]
#[cfg_attr(docsrs, doc(cfg(feature = "apps")))]
pub mod apps;
// The client half: capabilities per request, the retry driver, the checks owed to the user.
#[cfg(feature = "client")]
#[cfg_attr(docsrs, doc(cfg(feature = "client")))]
pub mod client;
// Validating the `content` a client returns, every failing field named.
pub mod content;
// The field types a form may hold, and their schema and parser.
pub mod field;
// The server-rendered HTML page of a form, and reading its submission.
#[cfg(feature = "forms")]
#[cfg_attr(docsrs, doc(cfg(feature = "forms")))]
pub mod form;
// The rmcp adapter: serving engine handlers from an rmcp server (and its client half).
#[cfg(feature = "rmcp")]
#[cfg_attr(docsrs, doc(cfg(feature = "rmcp")))]
pub mod rmcp;
/// The rmcp adapter's client half alone (feature `rmcp-client` without `rmcp`).
#[cfg(all(feature = "rmcp-client", not(feature = "rmcp")))]
#[cfg_attr(docsrs, doc(cfg(feature = "rmcp-client")))]
pub mod rmcp {
    pub mod client;
}
// The restricted `requestedSchema` of a form.
pub mod schema;
// The server engine: straight-line handlers over Multi Round-Trip Requests.
#[cfg(feature = "server")]
#[cfg_attr(docsrs, doc(cfg(feature = "server")))]
pub mod server;
// Sealing the opaque `requestState` a flow carries between rounds.
#[cfg(feature = "server")]
#[cfg_attr(docsrs, doc(cfg(feature = "server")))]
pub mod state;
// A small random source for this crate's unit tests.
#[cfg(test)]
mod test_rng;
// Every public error type is a `Send + Sync` `std::error::Error` (a test that fails to compile).
#[cfg(test)]
mod error_bounds;
// Helpers for your own tests: catch what no ordinary client shows.
#[cfg(feature = "server")]
#[cfg_attr(docsrs, doc(cfg(feature = "server")))]
pub mod testing;
// The protocol's messages, capabilities and error codes, as this crate speaks them.
pub mod wire;

/// The workspace README's example (a server on rmcp) compiles: `cargo test --doc` builds it.
#[cfg(all(doctest, feature = "rmcp"))]
#[doc = include_str!("../../README.md")]
struct WorkspaceReadme;

/// This crate's README example compiles.
#[cfg(all(doctest, feature = "derive"))]
#[doc = include_str!("../README.md")]
struct CrateReadme;

use serde_json::{Map, Value};

pub use content::ContentErrors;
pub use field::{ElicitEnum, Email, FieldValue, InvalidValue};
pub use schema::RequestedSchema;

/// Derives [`Elicit`] on a struct with named fields, or [`ElicitEnum`] on a unit-only enum.
///
/// # Attribute reference
///
#[doc = include_str!("attributes.md")]
#[cfg(feature = "derive")]
#[cfg_attr(docsrs, doc(cfg(feature = "derive")))]
pub use elicit_derive::Elicit;

/// A type that can be asked for with a form-mode elicitation.
///
/// Implement it with `#[derive(Elicit)]`; the derive guarantees that [`Elicit::requested_schema`]
/// and [`Elicit::from_content`] agree.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a form: it does not implement `Elicit`",
    label = "not a struct deriving `Elicit`",
    note = "a flattened field (`#[elicit(flatten)]` or `#[serde(flatten)]`) must be a struct deriving `Elicit`, or an `Option` of one"
)]
pub trait Elicit: Sized {
    /// The message shown with the form unless the asker supplies one.
    const MESSAGE: &'static str;

    /// The wire names of every property of the form, those it flattens in included (at every
    /// depth), for the derive's compile-time check that a flattened form's names collide with no
    /// other property of its host. Empty for a form implemented by hand: its collisions are found
    /// when the host's schema is first built.
    #[doc(hidden)]
    const FIELD_NAMES: &'static [&'static str] = &[];

    /// The `requestedSchema` of this form, built once and shared: asking for it allocates nothing.
    fn requested_schema() -> &'static RequestedSchema;

    /// Parses a client's `content`, checking every constraint and reporting every failing field.
    /// Keys that are not properties of the form are ignored, as the protocol allows.
    fn from_content(content: &Map<String, Value>) -> Result<Self, ContentErrors>;

    /// The `content` a client would send for this value.
    fn to_content(&self) -> Map<String, Value>;
}

/// Not public API: the paths derived code (and the benchmarks) use.
#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;
