//! The restricted schema of a form-mode elicitation (`requestedSchema`).
//!
//! Protocol revision 2026-07-28 allows a flat object whose properties are primitive: strings (with
//! length bounds and one of four formats), numbers and integers (with bounds), booleans, and single-
//! or multi-select enums (untitled `enum` or titled `oneOf`/`anyOf`). This module models exactly that
//! subset, so a value of [`RequestedSchema`] cannot describe anything a client is not required to
//! render, and it serialises to exactly the spec's JSON: keys in a fixed order, properties in
//! declaration order, nothing outside the protocol's grammar.
//!
//! Derived types build their schema once (see [`crate::Elicit::requested_schema`]); clients parse a
//! server's schema with [`RequestedSchema::from_json`], which refuses anything outside the subset.
//!
//! Split by job: `model` holds the types (and the operations on a schema and its content that both
//! the server and the client use), `ser` writes the spec's JSON, `parse` reads a server's schema.

mod model;
mod parse;
mod ser;

pub use model::*;
pub use parse::{MAX_OPTIONS, MAX_PROPERTIES, MAX_TEXT_LEN, SchemaError};

#[cfg(test)]
mod tests;
