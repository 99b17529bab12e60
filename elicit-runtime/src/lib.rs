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
//! Optional features: `derive`, `server` and `client` (on by default: the macro, the engine with
//! its sealed state, the client driver; `default-features = false, features = ["derive"]` gives the
//! derive and the parser alone, without crypto, tokio or IDNA), `chrono` and `url` (those crates'
//! types as form fields), `schemars` (`#[elicit(json_schema)]` types implement `JsonSchema`), `rmcp` (serve from an rmcp
//! server; implies `server`), `redis` (URL-mode completion shared through Redis). Items that need one are badged
//! with it in these docs.

#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "client")]
#[cfg_attr(docsrs, doc(cfg(feature = "client")))]
pub mod client;
pub mod content;
pub mod field;
#[cfg(feature = "rmcp")]
#[cfg_attr(docsrs, doc(cfg(feature = "rmcp")))]
pub mod rmcp;
pub mod schema;
#[cfg(feature = "server")]
#[cfg_attr(docsrs, doc(cfg(feature = "server")))]
pub mod server;
#[cfg(feature = "server")]
#[cfg_attr(docsrs, doc(cfg(feature = "server")))]
pub mod state;
#[cfg(feature = "server")]
#[cfg_attr(docsrs, doc(cfg(feature = "server")))]
pub mod testing;
pub mod wire;

use serde_json::{Map, Value};

pub use content::ContentErrors;
pub use field::{ElicitEnum, Email, FieldValue};
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
pub trait Elicit: Sized {
    /// The message shown with the form unless the asker supplies one.
    const MESSAGE: &'static str;

    /// The `requestedSchema` of this form, built once and shared: asking for it allocates nothing.
    fn requested_schema() -> &'static RequestedSchema;

    /// Parses a client's `content`, checking every constraint and reporting every failing field.
    /// Keys that are not properties of the form are ignored, as the protocol allows.
    fn from_content(content: &Map<String, Value>) -> Result<Self, ContentErrors>;

    /// The `content` a client would send for this value.
    fn to_content(&self) -> Map<String, Value>;
}

/// Not public API: the paths derived code uses.
#[doc(hidden)]
pub mod __private {
    pub use crate::field::rules::{Bound, DefaultValue, FieldRules};
    pub use crate::field::select::{Variant, has_variant, has_variants, parse_single_select, single_select_schema};
    pub use crate::field::{ElicitEnum, FieldValue};
    pub use crate::schema::{PrimitiveSchema, Property, RequestedSchema, StringFormat};
    pub use crate::{ContentErrors, Elicit};
    pub use serde_json::{Map, Value};
    pub use std::sync::OnceLock;

    use std::borrow::Cow;

    /// The schema of one property.
    pub fn property<T: FieldValue>(name: &'static str, rules: &FieldRules) -> Property {
        Property { name: Cow::Borrowed(name), required: T::REQUIRED, schema: T::schema(rules) }
    }

    /// Reads one field of an answer from its value (`None`: the answer lacks the key), recording
    /// its failure.
    pub fn field<T: FieldValue>(
        value: Option<&Value>,
        name: &'static str,
        rules: &FieldRules,
        errors: &mut ContentErrors,
    ) -> Option<T> {
        match value {
            Some(value) => match T::parse(value, rules) {
                Ok(parsed) => Some(parsed),
                Err(reason) => {
                    errors.push(name, reason);
                    None
                }
            },
            None => {
                let absent = T::absent();
                if absent.is_none() {
                    errors.push_missing(name);
                }
                absent
            }
        }
    }

    /// One walk over an answer's `content`, in the order of the form's fields.
    ///
    /// Answers usually list the fields in the form's order (the client builds them from the
    /// `requestedSchema`, whose order a `preserve_order` map keeps), so the entry at the cursor is
    /// compared with the field asked for: a match costs one string comparison and moves the
    /// cursor on. Any other order, or keys the form does not have, fall back to a look-up, so the
    /// value is always exactly `content.get(name)`.
    pub struct Walk<'a> {
        content: &'a Map<String, Value>,
        entries: serde_json::map::Iter<'a>,
        next: Option<(&'a String, &'a Value)>,
    }

    impl<'a> Walk<'a> {
        /// A walk from the first entry.
        pub fn new(content: &'a Map<String, Value>) -> Self {
            let mut entries = content.iter();
            let next = entries.next();
            Walk { content, entries, next }
        }

        /// The value of `name`, as `content.get(name)`.
        pub fn value(&mut self, name: &str) -> Option<&'a Value> {
            match self.next {
                Some((key, value)) if key == name => {
                    self.next = self.entries.next();
                    Some(value)
                }
                _ => self.content.get(name),
            }
        }
    }

    #[cfg(test)]
    #[test]
    fn a_walk_finds_what_get_finds_in_any_order() {
        #![allow(clippy::unwrap_used)]
        let names = ["a", "b", "c", "d", "zz", ""];
        let orders: [&[&str]; 5] =
            [&["a", "b", "c", "d"], &["d", "c", "b", "a"], &["x", "a", "y", "c"], &[], &["b", "a", "", "d"]];
        for order in orders {
            let content: Map<String, Value> =
                order.iter().enumerate().map(|(i, k)| ((*k).to_owned(), Value::from(i))).collect();
            // Asked in the form's order, and in others, every value is the look-up's.
            for asked in [&names[..], &["d", "a", "a", "zz", "c"], &["c", "d"]] {
                let mut walk = Walk::new(&content);
                for name in asked {
                    assert_eq!(walk.value(name), content.get(*name), "{order:?} {asked:?} {name}");
                }
            }
        }
    }

    /// Writes one field of an answer.
    pub fn put<T: FieldValue>(content: &mut Map<String, Value>, name: &'static str, value: &T) {
        if let Some(value) = value.to_value() {
            content.insert(name.to_owned(), value);
        }
    }

    /// The accessors of one field type. The derive builds one per field with [`form_field`], whose
    /// `FieldValue` bound is the only place the field's type is checked: a type that is not a form
    /// field is then reported once, on the type, instead of once per use (schema, parse, write).
    pub struct FormField<T> {
        /// [`property`] for `T`.
        pub property: fn(&'static str, &FieldRules) -> Property,
        /// [`field`] for `T`.
        pub read: fn(Option<&Value>, &'static str, &FieldRules, &mut ContentErrors) -> Option<T>,
        /// [`put`] for `T`.
        pub write: fn(&mut Map<String, Value>, &'static str, &T),
    }

    /// The accessors of `T`, in a `const` of the derived code.
    pub const fn form_field<T: FieldValue>() -> FormField<T> {
        FormField { property: property::<T>, read: field::<T>, write: put::<T> }
    }

    pub use serde;

    /// `Deserialize` for `#[elicit(deserialize)]` types: read a JSON object, then run the same
    /// validating parser as elicited content, so tool arguments get every check too.
    pub fn deserialize_validated<'de, T: Elicit, D: serde::Deserializer<'de>>(deserializer: D) -> Result<T, D::Error> {
        let content = <Map<String, Value> as serde::Deserialize>::deserialize(deserializer)?;
        T::from_content(&content).map_err(<D::Error as serde::de::Error>::custom)
    }

    /// The `schemars` schema of an `Elicit` type: exactly its `requestedSchema`.
    #[cfg(feature = "schemars")]
    pub fn json_schema_of<T: Elicit>() -> schemars::Schema {
        match T::requested_schema().to_json() {
            Value::Object(object) => schemars::Schema::from(object),
            _ => schemars::Schema::default(),
        }
    }

    #[cfg(feature = "schemars")]
    pub use schemars;

    /// Statically checks that a field type can be a form field, with the error on the type.
    pub const fn assert_field<T: FieldValue>() {}
}

/// Implements `schemars::JsonSchema` for a derived type (the runtime's `schemars` feature is on).
#[cfg(feature = "schemars")]
#[doc(hidden)]
#[macro_export]
macro_rules! __impl_json_schema {
    ($ty:ident, $name:expr) => {
        #[automatically_derived]
        impl $crate::__private::schemars::JsonSchema for $ty {
            fn schema_name() -> ::std::borrow::Cow<'static, ::core::primitive::str> {
                ::std::borrow::Cow::Borrowed($name)
            }

            fn json_schema(
                _: &mut $crate::__private::schemars::SchemaGenerator,
            ) -> $crate::__private::schemars::Schema {
                $crate::__private::json_schema_of::<$ty>()
            }

            // Inline: the schema is the whole form, never a `$ref` into `$defs`.
            fn inline_schema() -> bool {
                true
            }
        }
    };
}

/// `#[elicit(json_schema)]` without the runtime's `schemars` feature: a clear compile error.
#[cfg(not(feature = "schemars"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __impl_json_schema {
    ($($tokens:tt)*) => {
        ::core::compile_error!("`#[elicit(json_schema)]` needs elicit-runtime's `schemars` feature");
    };
}
