//! Derived code under hostile conditions: every warning denied (the workspace lints included, plus
//! allow-by-default ones a sloppy expansion would trip), the prelude's names shadowed by local
//! items, and the runtime reachable only as `::rt` (renamed in `Cargo.toml`), so derived code must
//! use absolute paths and `#[elicit(crate = "::rt")]`.
//!
//! Building this crate is the main test; the unit tests below check that the derived impls work.

#![deny(warnings)]
// Allow-by-default lints that derived code must not trip either. `missing_docs` and
// `unreachable_pub` come from the workspace lints, made errors by `warnings`.
#![deny(
    missing_debug_implementations,
    trivial_casts,
    trivial_numeric_casts,
    unused_qualifications,
    unused_results,
    unused_lifetimes,
    single_use_lifetimes,
    elided_lifetimes_in_paths,
    unused_import_braces,
    let_underscore_drop,
    unit_bindings,
    redundant_lifetimes
)]

use rt::Elicit;

// ---- names a macro might take from the prelude or from the crate root ----

/// Shadows `Option`.
#[derive(Debug)]
pub struct Option;
/// Shadows `Some`.
#[derive(Debug)]
pub struct Some;
/// Shadows `None`.
#[derive(Debug)]
pub struct None;
/// Shadows `Result`.
#[derive(Debug)]
pub struct Result;
/// Shadows `Ok`.
#[derive(Debug)]
pub struct Ok;
/// Shadows `Err`.
#[derive(Debug)]
pub struct Err;
/// Shadows `String`.
#[derive(Debug)]
pub struct String;
/// Shadows `Vec`.
#[derive(Debug)]
pub struct Vec;
/// Shadows `Box`.
#[derive(Debug)]
pub struct Box;
/// Shadows serde_json's `Value`.
#[derive(Debug)]
pub struct Value;
/// Shadows serde_json's `Map`.
#[derive(Debug)]
pub struct Map;
/// Shadows the runtime's `Property`.
#[derive(Debug)]
pub struct Property;
/// Shadows the runtime's `FieldRules`.
#[derive(Debug)]
pub struct FieldRules;
/// Shadows the runtime's `ContentErrors`.
#[derive(Debug)]
pub struct ContentErrors;
/// Shadows `str`.
#[allow(non_camel_case_types, reason = "shadows the primitive on purpose")]
#[derive(Debug)]
pub struct str;
/// Shadows `Clone`.
pub trait Clone {}
/// Shadows `ToOwned`.
pub trait ToOwned {}
/// Shadows `ToString`.
pub trait ToString {}
/// Shadows `Default`.
pub trait Default {}
/// Shadows `Into`.
pub trait Into {}
/// Shadows `From`.
pub trait From {}
/// Shadows `Iterator`.
pub trait Iterator {}
/// Shadows `Sized`.
pub trait Sized {}
/// Shadows `FieldValue`.
pub trait FieldValue {}
/// Shadows `ElicitEnum`.
pub trait ElicitEnum {}
/// Shadows `core`: `::core` must still reach the real crate.
pub mod core {}
/// Shadows `std`: `::std` must still reach the real crate.
pub mod std {}
/// Shadows `serde_json`.
pub mod serde_json {}
/// Shadows the runtime's usual name: derived code must use `crate = "::rt"`.
pub mod elicit_runtime {}

// Macros a sloppy expansion would call unqualified. Textual scope reaches everything below,
// derived code included; the tests call the real ones by path.
#[allow(unused_macros, reason = "unused is the point: derived code must not call it")]
macro_rules! vec {
    ($($t:tt)*) => {
        ::core::compile_error!("the derive called an unqualified `vec!`")
    };
}
#[allow(unused_macros, reason = "unused is the point: derived code must not call it")]
macro_rules! assert {
    ($($t:tt)*) => {
        ::core::compile_error!("the derive called an unqualified `assert!`")
    };
}
#[allow(unused_macros, reason = "unused is the point: derived code must not call it")]
macro_rules! unreachable {
    ($($t:tt)*) => {
        ::core::compile_error!("the derive called an unqualified `unreachable!`")
    };
}
#[allow(unused_macros, reason = "unused is the point: derived code must not call it")]
macro_rules! panic {
    ($($t:tt)*) => {
        ::core::compile_error!("the derive called an unqualified `panic!`")
    };
}

// ---- the derived types ----

/// Book a flight.
///
/// The doc comment becomes the form's message.
#[derive(Elicit, Debug, PartialEq)]
#[elicit(crate = "::rt", rename_all = "camelCase")]
pub struct Booking {
    /// Departure airport (IATA code)
    #[elicit(title = "From", min_length = 3, max_length = 3, default = "CDG")]
    pub from_airport: ::std::string::String,
    /// Where to send the ticket.
    #[elicit(rename = "email", format = "email")]
    pub contact: ::std::string::String,
    /// A typed email address.
    pub backup_email: ::core::option::Option<::rt::Email>,
    /// Window seat, please.
    #[elicit(default = true)]
    pub window_seat: bool,
    /// How many travel.
    #[elicit(minimum = 1, maximum = 9, default = 1)]
    pub travellers: u8,
    /// Preferred cabin temperature.
    #[elicit(minimum = -5, maximum = 5, default = -1)]
    pub temperature: i8,
    /// A bound at the very end of the range.
    #[elicit(minimum = -9223372036854775808, maximum = 9223372036854775807)]
    pub offset: i64,
    /// Budget in cents.
    #[elicit(maximum = 1000000)]
    pub budget: u64,
    /// Luggage weight in kilograms.
    #[elicit(minimum = 0.0, maximum = 32.5, default = 20.0)]
    pub luggage: f64,
    /// Anything else?
    #[elicit(description = "Free text", max_length = 200)]
    pub note: ::core::option::Option<::std::string::String>,
    /// Nights at the destination.
    #[elicit(minimum = 1)]
    pub nights: ::core::option::Option<u32>,
    /// Cabin class.
    #[elicit(default = "economy")]
    pub cabin: Cabin,
    /// Should we confirm by phone?
    pub confirm: ::core::option::Option<Reply>,
    /// Meals (multi-select).
    #[elicit(min_items = 1, max_items = 2, default = ["VEGAN"])]
    pub meals: ::std::vec::Vec<Meal>,
    /// Meals as a set.
    pub snacks: ::std::collections::BTreeSet<Meal>,
    #[elicit(rename = "r#type")]
    /// A raw identifier, renamed to a name with a `#`.
    pub r#type: ::std::string::String,
}

/// A titled single select.
#[derive(Elicit, Debug, PartialEq, Eq)]
#[elicit(crate = "::rt", rename_all = "kebab-case")]
pub enum Cabin {
    /// Economy
    #[elicit(title = "Economy")]
    Economy,
    /// Premium economy
    #[elicit(title = "Premium economy")]
    PremiumEconomy,
    /// Business
    #[elicit(title = "Business", rename = "biz")]
    Business,
}

/// An untitled select whose variants shadow the prelude's constructors.
#[derive(Elicit, Debug, PartialEq, Eq)]
#[elicit(crate = "::rt", rename_all = "lowercase")]
pub enum Reply {
    /// Yes
    Ok,
    /// No
    Err,
    /// Don't care
    None,
}

/// Multi-select choices.
#[derive(Elicit, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[elicit(crate = "::rt", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Meal {
    /// Vegan
    Vegan,
    /// Vegetarian
    Vegetarian,
    /// Gluten free
    GlutenFree,
}

/// A seat count: a field type through `transparent`.
#[derive(Elicit, Debug, PartialEq, Eq)]
#[elicit(crate = "::rt", transparent)]
pub struct Seats(pub u8);

/// The most seats a booking takes.
pub const MAX_SEATS: u8 = 9;
/// The longest note.
pub const MAX_NOTE: u64 = 20;

/// Refuses an empty note.
#[allow(clippy::ptr_arg, reason = "a validator takes `&T` for the field's type `T`")]
pub fn not_blank(note: &::std::string::String) -> ::core::result::Result<(), &'static ::core::primitive::str> {
    if note.trim().is_empty() {
        ::core::result::Result::Err("must not be blank")
    } else {
        ::core::result::Result::Ok(())
    }
}

/// Accepts every reservation.
pub fn any_reservation(_: &Reservation) -> ::core::result::Result<(), rt::ContentErrors> {
    ::core::result::Result::Ok(())
}

/// A form with the newer attributes: flatten, constants, validators, a skipped field.
#[derive(Elicit, Debug, PartialEq)]
#[elicit(crate = "::rt", validate = any_reservation)]
pub struct Reservation {
    /// Seats.
    #[elicit(maximum = MAX_SEATS, default = 1)]
    pub seats: Seats,
    /// A note.
    #[elicit(max_length = MAX_NOTE, validate = not_blank)]
    pub note: ::std::string::String,
    /// The confirmation, flattened in.
    #[elicit(flatten)]
    pub confirm: ::core::option::Option<Confirm>,
    /// Not asked.
    #[elicit(skip)]
    pub cache: ::core::primitive::u8,
}

/// A form without fields.
#[derive(Elicit, Debug, PartialEq)]
#[elicit(crate = "::rt", message = "Just confirm.")]
pub struct Confirm {}

/// Derived code in a private module: `unreachable_pub` and `dead_code` must not fire on it.
mod private {
    use rt::Elicit;

    #[derive(Elicit)]
    #[elicit(crate = "::rt")]
    pub(crate) struct Inner {
        pub(crate) name: ::std::string::String,
        pub(crate) choice: Choice,
    }

    #[derive(Elicit)]
    #[elicit(crate = "::rt")]
    pub(crate) enum Choice {
        A,
    }
}

/// Keeps the private types used, so that only derived code could draw a `dead_code` warning.
pub fn private_form_message() -> &'static ::core::primitive::str {
    let _schema = <private::Inner as Elicit>::requested_schema();
    let _choice = private::Choice::A;
    let _name = |inner: &private::Inner| (inner.name.len(), matches!(inner.choice, private::Choice::A));
    private::Inner::MESSAGE
}

#[cfg(test)]
mod tests {
    use ::serde_json::json;
    use rt::Elicit;

    use super::{Booking, Cabin, Confirm, Meal, Reply};

    fn object(value: ::serde_json::Value) -> ::serde_json::Map<String, ::serde_json::Value> {
        value.as_object().cloned().expect("a JSON object")
    }

    fn full_answer() -> ::serde_json::Value {
        json!({
            "fromAirport": "LHR",
            "email": "ada@example.com",
            "backupEmail": "charles@example.com",
            "windowSeat": false,
            "travellers": 2,
            "temperature": -3,
            "offset": -9223372036854775808i64,
            "budget": 1000000,
            "luggage": 23.5,
            "note": "aisle if no window",
            "nights": 4,
            "cabin": "premium-economy",
            "confirm": "none",
            "meals": ["VEGAN", "GLUTEN_FREE"],
            "snacks": ["VEGETARIAN"],
            "r#type": "return",
        })
    }

    #[test]
    fn message_comes_from_the_doc_comment_or_the_attribute() {
        assert_eq!(Booking::MESSAGE, "Book a flight.\n\nThe doc comment becomes the form's message.");
        assert_eq!(Confirm::MESSAGE, "Just confirm.");
        assert_eq!(super::private_form_message(), "Please provide the following information.");
    }

    #[test]
    fn schema_has_every_field_under_its_wire_name() {
        let schema = Booking::requested_schema().to_json();
        let names: Vec<&str> =
            schema["properties"].as_object().expect("properties").keys().map(|k| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "fromAirport",
                "email",
                "backupEmail",
                "windowSeat",
                "travellers",
                "temperature",
                "offset",
                "budget",
                "luggage",
                "note",
                "nights",
                "cabin",
                "confirm",
                "meals",
                "snacks",
                "r#type",
            ]
        );
        // Fields with a `default` are filled in when absent, so they are not required; nor is a
        // multi-select without `min_items` (absent is no choice).
        assert_eq!(schema["required"], json!(["email", "offset", "budget", "r#type"]));
    }

    #[test]
    fn schema_states_every_attribute() {
        let p = &Booking::requested_schema().to_json()["properties"];
        assert_eq!(
            p["fromAirport"],
            json!({"type": "string", "title": "From", "description": "Departure airport (IATA code)", "minLength": 3, "maxLength": 3, "default": "CDG"})
        );
        assert_eq!(p["email"]["format"], "email");
        assert_eq!(p["backupEmail"]["format"], "email");
        assert_eq!(p["windowSeat"], json!({"type": "boolean", "description": "Window seat, please.", "default": true}));
        assert_eq!(
            p["travellers"],
            json!({"type": "integer", "description": "How many travel.", "minimum": 1, "maximum": 9, "default": 1})
        );
        assert_eq!(p["temperature"]["minimum"], -5);
        assert_eq!(p["temperature"]["default"], -1);
        // An i64 without declared bounds: its range clamped to what every JSON peer holds exactly.
        assert_eq!(p["offset"]["minimum"], json!(-9_007_199_254_740_991_i64));
        assert_eq!(p["offset"]["maximum"], json!(9_007_199_254_740_991_i64));
        assert_eq!(p["luggage"]["type"], "number");
        assert_eq!(p["luggage"]["maximum"], 32.5);
        assert_eq!(p["note"]["description"], "Free text");
        assert_eq!(p["cabin"]["default"], "economy");
        assert_eq!(
            p["cabin"]["oneOf"],
            json!([
                {"const": "economy", "title": "Economy"},
                {"const": "premium-economy", "title": "Premium economy"},
                {"const": "biz", "title": "Business"},
            ])
        );
        assert_eq!(p["confirm"]["enum"], json!(["ok", "err", "none"]));
        assert_eq!(p["meals"]["minItems"], 1);
        assert_eq!(p["meals"]["maxItems"], 2);
        assert_eq!(p["meals"]["default"], json!(["VEGAN"]));
        assert_eq!(p["meals"]["type"], "array");
    }

    #[test]
    fn a_full_answer_parses_and_round_trips() {
        let content = object(full_answer());
        let booking = Booking::from_content(&content).expect("valid answer");
        assert_eq!(booking.cabin, Cabin::PremiumEconomy);
        assert_eq!(booking.confirm, Some(Reply::None));
        assert_eq!(booking.meals, [Meal::Vegan, Meal::GlutenFree]);
        assert_eq!(booking.offset, i64::MIN);
        assert_eq!(booking.r#type, "return");
        assert_eq!(booking.backup_email.as_ref().map(|e| e.as_str()), Some("charles@example.com"));
        assert_eq!(booking.to_content(), content);
        assert_eq!(Booking::from_content(&booking.to_content()), Ok(booking));
    }

    #[test]
    fn optional_fields_may_be_left_out() {
        let mut content = object(full_answer());
        for key in ["backupEmail", "note", "nights", "confirm"] {
            let _removed = content.remove(key);
        }
        let booking = Booking::from_content(&content).expect("valid answer");
        assert_eq!((booking.note, booking.nights, booking.confirm), (None, None, None));
        ::core::assert!(booking.backup_email.is_none());
    }

    #[test]
    fn every_failing_field_is_reported() {
        let mut content = object(full_answer());
        let _previous = content.insert("fromAirport".into(), json!("Heathrow"));
        let _previous = content.insert("travellers".into(), json!(10));
        let _previous = content.insert("cabin".into(), json!("first"));
        let _previous = content.insert("meals".into(), json!([]));
        let _removed = content.remove("email");
        let errors = Booking::from_content(&content).expect_err("invalid answer");
        let failed: Vec<&str> = errors.iter().map(|e| &*e.field).collect();
        assert_eq!(failed, ["fromAirport", "email", "travellers", "cabin", "meals"]);
    }

    #[test]
    fn a_form_without_fields() {
        assert_eq!(Confirm::requested_schema().to_json(), json!({"type": "object", "properties": {}}));
        assert_eq!(Confirm::from_content(&object(json!({"extra": 1}))), Ok(Confirm {}));
        ::core::assert!(Confirm {}.to_content().is_empty());
    }
}
