//! What kind of schema a field type has, known at compile time.

use super::Variant;
use super::rules::{DefaultValue, FieldRules};

/// The kind of schema a [`super::FieldValue`] type produces, with the choices of a select.
///
/// The derive classifies the field types it can name (`String`, `u8`, `Vec<E>`) itself; for any
/// other type (a newtype, a foreign type, an enum) it checks the field's attributes against this
/// constant at compile time, so a `min_length` on a type that is not a string is an error, not a
/// silently ignored key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldShape {
    /// A string, with or without a format.
    String,
    /// An integer.
    Integer,
    /// Any number.
    Number,
    /// A boolean.
    Boolean,
    /// One of these choices.
    SingleSelect(&'static [Variant]),
    /// Several of these choices.
    MultiSelect(&'static [Variant]),
}

impl FieldShape {
    /// How the shape is named in the derive's errors.
    pub const fn describe(self) -> &'static str {
        match self {
            FieldShape::String => "a string field",
            FieldShape::Integer => "an integer field",
            FieldShape::Number => "a number field",
            FieldShape::Boolean => "a boolean field",
            FieldShape::SingleSelect(_) => "a single-select field",
            FieldShape::MultiSelect(_) => "a multi-select field",
        }
    }

    /// The first reason `rules` do not apply to a field of this shape, or `None` when they do.
    /// A `const fn`: derived code evaluates it at compile time for types it cannot name.
    pub const fn misfit(self, rules: &FieldRules) -> Option<&'static str> {
        let string = matches!(self, FieldShape::String);
        let number = matches!(self, FieldShape::Integer | FieldShape::Number);
        let multi = matches!(self, FieldShape::MultiSelect(_));
        if (rules.min_length.is_some() || rules.max_length.is_some()) && !string {
            return Some("`min_length` and `max_length` apply to string fields, but this field's type is not a string");
        }
        if rules.format.is_some() && !string {
            return Some("`format` applies to string fields, but this field's type is not a string");
        }
        if (rules.minimum.is_some() || rules.maximum.is_some()) && !number {
            return Some(
                "`minimum` and `maximum` apply to integer and number fields, but this field's type is not a number",
            );
        }
        if (rules.min_items.is_some() || rules.max_items.is_some()) && !multi {
            return Some("`min_items` and `max_items` apply to multi-select fields, but this field's type is not one");
        }
        match (rules.default, self) {
            (None, _)
            | (Some(DefaultValue::Str(_)), FieldShape::String)
            | (Some(DefaultValue::Bool(_)), FieldShape::Boolean)
            | (Some(DefaultValue::Number(_)), FieldShape::Number) => None,
            (Some(DefaultValue::Number(super::Bound::Int(_))), FieldShape::Integer) => None,
            (Some(DefaultValue::Str(value)), FieldShape::SingleSelect(variants)) => {
                if super::select::has_variant(variants, value) {
                    None
                } else {
                    Some("`default` is not a variant of this field's enum; use the wire value of one of its variants")
                }
            }
            (Some(DefaultValue::List(values)), FieldShape::MultiSelect(variants)) => {
                if super::select::has_variants(variants, values) {
                    None
                } else {
                    Some("`default` lists a value that is not a variant of this field's enum")
                }
            }
            _ => Some(
                "`default` does not fit this field's type: a string for a string or a select, an integer or number, `true`/`false`, or a list of wire values for a multi-select",
            ),
        }
    }
}
