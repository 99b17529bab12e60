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
// The rules and select helpers are what the derive's expansion calls, through
// `elicit_runtime::__private`: users neither name nor implement them.
pub(crate) mod rules;
mod scalar;
pub(crate) mod select;

pub use email::Email;
use rules::float_number;
pub(crate) use rules::{Bound, DefaultValue, FieldRules, cmp_f64_i128};
#[cfg(feature = "client")]
pub(crate) use scalar::integer_of;
pub(crate) use scalar::{parse_str, string_schema};
pub use select::ElicitEnum;

/// A type that can be one field of a form.
///
/// Implemented for `String`, `bool`, every integer type, `f32`/`f64`, [`crate::Email`],
/// `Option<T>` of those, unit enums deriving `Elicit`, `Vec`/`BTreeSet`/`HashSet` of such enums, and
/// (behind features) `chrono` dates and `url::Url`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a field of an elicitation form",
    label = "not a form field type",
    note = "a form field must be a string, bool, integer, f32/f64, `Email`, a unit enum deriving `Elicit`, a `Vec`/`BTreeSet`/`HashSet` of such an enum, or an `Option` of one of these",
    note = "the protocol's requestedSchema is flat: nested structs, maps and lists of non-enums cannot be expressed"
)]
pub trait FieldValue: Sized {
    /// `false` for fields the user may leave out (`Option<T>`).
    const REQUIRED: bool = true;

    /// The field's schema under these rules.
    fn schema(rules: &FieldRules) -> PrimitiveSchema;

    /// Parses and checks the answer for this field. The error follows the field name in a
    /// message (`"must be at most 9"`).
    fn parse(value: &Value, rules: &FieldRules) -> Result<Self, String>;

    /// The value when the field is absent from the answer (`None` = "is required").
    fn absent() -> Option<Self> {
        None
    }

    /// The answer a client would send for this value (`None` = leave the key out).
    fn to_value(&self) -> Option<Value>;
}

#[cfg(test)]
mod tests;
