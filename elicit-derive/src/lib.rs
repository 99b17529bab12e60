//! The `#[derive(Elicit)]` macro. Use it through `elicit-runtime`, which re-exports it and whose
//! documentation describes the attributes.
//!
//! The macro runs in four phases, one direction only: `attr` turns `#[elicit(..)]` into plain
//! values, `ast` builds the intermediate form (classifying each field's type with `ty`),
//! `check` applies the rules that span several attributes or fields, and `expand` generates
//! code from the checked form. Every phase reports into one `ctxt::Ctxt`, so a single build shows
//! every mistake on a type.

mod ast;
mod attr;
mod case;
mod check;
mod ctxt;
mod dummy;
mod expand;
mod serde_attr;
#[cfg(test)]
mod snapshot;
mod ty;

use proc_macro::TokenStream;
use syn::{DeriveInput, parse_macro_input};

/// Derives `Elicit` on a struct with named fields, or `ElicitEnum` on a unit-only enum.
#[proc_macro_derive(Elicit, attributes(elicit))]
pub fn derive_elicit(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand::derive(&input).into()
}
