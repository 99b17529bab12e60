//! The field types a form may hold, and how each one maps to the schema and back.
//!
//! A derived [`crate::Elicit`] type hands each field's declared constraints to [`FieldValue`] as a
//! `const` [`FieldRules`]; the same rules produce the field's schema and check the field's answer,
//! so the schema and the parser cannot disagree. The derive has already refused constraints that do
//! not apply to a field's type, so an implementation reads only the rules that concern it.

use std::cmp::Ordering;
use std::collections::{BTreeSet, HashSet};
use std::hash::Hash;

use serde_json::{Number, Value};

use crate::content::{check_format, check_length, expected};
use crate::schema::{
    BooleanSchema, EnumOption, MultiSelectSchema, NumberSchema, PrimitiveSchema, SingleSelectSchema, StringFormat,
    StringSchema, Text,
};

mod email;
mod external;
// The select helpers are what the derive's expansion calls, through `elicit_runtime::__private`;
// the rules are also the public input of every `FieldValue` implementation.
pub(crate) mod rules;
mod scalar;
pub(crate) mod select;
mod shape;
mod wrappers;

pub use email::Email;
pub(crate) use rules::cmp_f64_i128;
use rules::float_number;
pub use rules::{Bound, DefaultValue, FieldRules};
#[cfg(feature = "client")]
pub(crate) use scalar::integer_of;
pub use scalar::{parse_str, string_schema};
pub use select::{ElicitEnum, Variant};
pub use shape::FieldShape;

/// Why a value is not a valid answer for a field: the text follows the field's name in a message
/// (`"must be at most 9"`), and the derived parser collects it into [`crate::ContentErrors`].
///
/// Converts from a `String` or a `&str`, so an implementation writes `Err("must be ...".into())`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidValue(String);

impl InvalidValue {
    /// An invalid value, for this reason.
    pub fn new(reason: impl Into<String>) -> Self {
        InvalidValue(reason.into())
    }

    /// The reason, phrased to follow the field's name.
    pub fn reason(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for InvalidValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidValue {}

impl From<String> for InvalidValue {
    fn from(reason: String) -> Self {
        InvalidValue(reason)
    }
}

impl From<crate::content::LengthError> for InvalidValue {
    fn from(error: crate::content::LengthError) -> Self {
        InvalidValue(error.to_string())
    }
}

impl From<crate::content::FormatError> for InvalidValue {
    fn from(error: crate::content::FormatError) -> Self {
        InvalidValue(error.to_string())
    }
}

impl From<&str> for InvalidValue {
    fn from(reason: &str) -> Self {
        InvalidValue(reason.to_owned())
    }
}

/// The reason alone, for code that keeps reasons as text (a `with` module's `parse`).
impl From<InvalidValue> for String {
    fn from(invalid: InvalidValue) -> Self {
        invalid.0
    }
}

/// A type that can be one field of a form: the one extension point for field types.
///
/// Implemented for `String`, `Box<str>`, `Arc<str>`, `Cow<'static, str>`, `bool`, every integer
/// type and its `NonZero` form, `f32`/`f64`, [`crate::Email`], `Option<T>` of those, unit enums
/// deriving `Elicit`, `Vec`/`BTreeSet`/`HashSet` of such enums, and (behind features) `chrono` and
/// `time` dates and `url::Url`.
///
/// A type of your own becomes a field by implementing this trait, whose signatures use only public
/// types; a newtype over a field type gets it from `#[derive(Elicit)]` with
/// `#[elicit(transparent)]`, and a foreign type is reached with a field's `#[elicit(with = path)]`.
///
/// ```
/// use elicit_runtime::field::{FieldRules, FieldShape, FieldValue, InvalidValue, parse_str, string_schema};
/// use elicit_runtime::schema::PrimitiveSchema;
/// use serde_json::Value;
///
/// /// A project key: two to ten capital letters.
/// struct ProjectKey(String);
///
/// impl FieldValue for ProjectKey {
///     const SHAPE: FieldShape = FieldShape::String;
///
///     fn schema(rules: &FieldRules) -> PrimitiveSchema {
///         string_schema(rules, rules.format)
///     }
///
///     fn parse(value: &Value, rules: &FieldRules) -> Result<Self, InvalidValue> {
///         let text = parse_str(value, rules, rules.format)?;
///         let shaped = (2..=10).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_uppercase());
///         if shaped { Ok(ProjectKey(text.to_owned())) } else { Err("must be 2 to 10 capital letters".into()) }
///     }
///
///     fn to_value(&self) -> Option<Value> {
///         Some(Value::String(self.0.clone()))
///     }
/// }
///
/// assert!(ProjectKey::parse(&"ELIC".into(), &FieldRules::EMPTY).is_ok());
/// assert!(ProjectKey::parse(&"elic".into(), &FieldRules::EMPTY).is_err());
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a field of an elicitation form",
    label = "not a form field type",
    note = "a form field must be a string, bool, integer, f32/f64, `Email`, a unit enum deriving `Elicit`, a `Vec`/`BTreeSet`/`HashSet` of such an enum, or an `Option` of one of these",
    note = "the protocol's requestedSchema is flat: nested structs, maps and lists of non-enums cannot be expressed",
    note = "a type of your own becomes a field by implementing `FieldValue`, by `#[elicit(transparent)]` on a newtype, or through `#[elicit(with = path)]` on the field"
)]
pub trait FieldValue: Sized {
    /// `false` for fields the user may leave out (`Option<T>`).
    const REQUIRED: bool = true;

    /// What the schema of this type is, for the derive's compile-time checks of a field's
    /// attributes (a `min_length` on a number, a `default` that is not a variant).
    const SHAPE: FieldShape;

    /// The range of an integer type (`None` for any other), for the derive's compile-time checks
    /// of a field's bounds and default when it cannot name the type (a newtype, an alias).
    const RANGE: Option<(i128, i128)> = None;

    /// The field's schema under these rules.
    fn schema(rules: &FieldRules) -> PrimitiveSchema;

    /// Parses and checks the answer for this field. The error follows the field name in a
    /// message (`"must be at most 9"`).
    fn parse(value: &Value, rules: &FieldRules) -> Result<Self, InvalidValue>;

    /// The value when the field is absent from the answer (`None` = "is required").
    fn absent() -> Option<Self> {
        None
    }

    /// The value of the field's declared `default`, used when the answer leaves the field out.
    /// The default reads the default's JSON value as an answer; a type whose schema states the
    /// default otherwise (an `f32` states it at its own precision) reads it the same way.
    fn from_default(default: DefaultValue, rules: &FieldRules) -> Result<Self, InvalidValue> {
        Self::parse(&default.to_value(), rules)
    }

    /// The answer a client would send for this value (`None` = leave the key out).
    fn to_value(&self) -> Option<Value>;
}

#[cfg(test)]
mod tests;
