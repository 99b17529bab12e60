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
    BooleanSchema, EnumOption, MultiSelectSchema, NumberSchema, PrimitiveSchema, SingleSelectSchema,
    StringFormat, StringSchema, Text,
};

/// A numeric bound or default as written in an attribute.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound {
    /// An integer literal.
    Int(i128),
    /// A literal with a fraction or exponent.
    Float(f64),
}

impl Bound {
    /// The bound as a JSON number (integers stay integers where JSON can hold them).
    pub fn to_number(self) -> Number {
        match self {
            Bound::Int(i) => {
                if let Ok(i) = i64::try_from(i) {
                    Number::from(i)
                } else if let Ok(u) = u64::try_from(i) {
                    Number::from(u)
                } else {
                    float_number(i as f64)
                }
            }
            Bound::Float(f) => float_number(f),
        }
    }

    /// Compares a JSON number's value with this bound exactly: an `f64` cannot hold every integer
    /// bound (`2^53 + 1`, `i128::MAX`), and rounding the bound would let a value slip past it.
    fn cmp_value(self, value: f64) -> Ordering {
        match self {
            Bound::Int(bound) => cmp_f64_i128(value, bound),
            Bound::Float(bound) => value.partial_cmp(&bound).unwrap_or(Ordering::Equal),
        }
    }

    /// The bound as a JSON number for a schema, rounded toward the allowed side when JSON cannot
    /// hold it exactly, so that the schema never admits a value the parser refuses.
    fn to_schema_number(self, is_maximum: bool) -> Number {
        let Bound::Int(i) = self else { return self.to_number() };
        if i64::try_from(i).is_ok() || u64::try_from(i).is_ok() {
            return self.to_number();
        }
        let f = i as f64;
        let f = match (cmp_f64_i128(f, i), is_maximum) {
            (Ordering::Greater, true) => f.next_down(),
            (Ordering::Less, false) => f.next_up(),
            _ => f,
        };
        float_number(f)
    }
}

/// Exact order of a finite `f64` and an `i128`.
pub(crate) fn cmp_f64_i128(f: f64, i: i128) -> Ordering {
    // 2^127 is exactly representable; every f64 in [-2^127, 2^127) truncates to an i128 exactly.
    const LIMIT: f64 = 170_141_183_460_469_231_731_687_303_715_884_105_728.0;
    if f >= LIMIT {
        return Ordering::Greater;
    }
    if f < -LIMIT {
        return Ordering::Less;
    }
    let whole = f.trunc();
    (whole as i128).cmp(&i).then_with(|| (f - whole).partial_cmp(&0.0).unwrap_or(Ordering::Equal))
}

fn float_number(f: f64) -> Number {
    // Attribute values are finite (the derive rejects anything else); 0 is a safe fallback.
    Number::from_f64(f).unwrap_or_else(|| Number::from(0))
}

/// A default as written in an attribute.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DefaultValue {
    /// For string and single-select fields (the wire value).
    Str(&'static str),
    /// For number and integer fields.
    Number(Bound),
    /// For boolean fields.
    Bool(bool),
    /// For multi-select fields (wire values).
    List(&'static [&'static str]),
}

/// The constraints and annotations declared on one field.
///
/// Built as a `const` by the derive; start from [`FieldRules::EMPTY`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FieldRules {
    /// `title`.
    pub title: Option<&'static str>,
    /// `description` (or the doc comment).
    pub description: Option<&'static str>,
    /// `minLength`.
    pub min_length: Option<u64>,
    /// `maxLength`.
    pub max_length: Option<u64>,
    /// `minimum`.
    pub minimum: Option<Bound>,
    /// `maximum`.
    pub maximum: Option<Bound>,
    /// `minItems`.
    pub min_items: Option<u64>,
    /// `maxItems`.
    pub max_items: Option<u64>,
    /// `format` (string fields).
    pub format: Option<StringFormat>,
    /// `default`.
    pub default: Option<DefaultValue>,
}

impl FieldRules {
    /// No constraint, no annotation.
    pub const EMPTY: FieldRules = FieldRules {
        title: None,
        description: None,
        min_length: None,
        max_length: None,
        minimum: None,
        maximum: None,
        min_items: None,
        max_items: None,
        format: None,
        default: None,
    };

    fn title(&self) -> Option<Text> {
        self.title.map(Text::Borrowed)
    }

    fn description(&self) -> Option<Text> {
        self.description.map(Text::Borrowed)
    }

    fn default_str(&self) -> Option<Text> {
        match self.default {
            Some(DefaultValue::Str(s)) => Some(Text::Borrowed(s)),
            _ => None,
        }
    }
}

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

impl FieldValue for String {
    fn schema(rules: &FieldRules) -> PrimitiveSchema {
        string_schema(rules, rules.format)
    }

    fn parse(value: &Value, rules: &FieldRules) -> Result<Self, String> {
        parse_str(value, rules, rules.format).map(str::to_owned)
    }

    fn to_value(&self) -> Option<Value> {
        Some(Value::String(self.clone()))
    }
}

/// The schema of a string field whose type may imply a format.
pub fn string_schema(rules: &FieldRules, format: Option<StringFormat>) -> PrimitiveSchema {
    PrimitiveSchema::String(StringSchema {
        title: rules.title(),
        description: rules.description(),
        min_length: rules.min_length,
        max_length: rules.max_length,
        format,
        default: rules.default_str(),
    })
}

/// Checks a string answer: type, length bounds, format.
pub fn parse_str<'v>(
    value: &'v Value,
    rules: &FieldRules,
    format: Option<StringFormat>,
) -> Result<&'v str, String> {
    let text = value.as_str().ok_or_else(|| expected("a string", value))?;
    check_length(text, rules.min_length, rules.max_length)?;
    if let Some(format) = format {
        check_format(text, format)?;
    }
    Ok(text)
}

impl FieldValue for bool {
    fn schema(rules: &FieldRules) -> PrimitiveSchema {
        PrimitiveSchema::Boolean(BooleanSchema {
            title: rules.title(),
            description: rules.description(),
            default: match rules.default {
                Some(DefaultValue::Bool(b)) => Some(b),
                _ => None,
            },
        })
    }

    fn parse(value: &Value, _rules: &FieldRules) -> Result<Self, String> {
        value.as_bool().ok_or_else(|| expected("a boolean", value))
    }

    fn to_value(&self) -> Option<Value> {
        Some(Value::Bool(*self))
    }
}

fn number_schema(rules: &FieldRules, integer: bool, min: Option<Bound>, max: Option<Bound>) -> PrimitiveSchema {
    PrimitiveSchema::Number(NumberSchema {
        integer,
        title: rules.title(),
        description: rules.description(),
        minimum: rules.minimum.or(min).map(|b| b.to_schema_number(false)),
        maximum: rules.maximum.or(max).map(|b| b.to_schema_number(true)),
        default: match rules.default {
            Some(DefaultValue::Number(n)) => Some(n.to_number()),
            _ => None,
        },
    })
}

fn check_bounds(value: f64, rules: &FieldRules) -> Result<(), String> {
    if let Some(min) = rules.minimum
        && min.cmp_value(value) == Ordering::Less
    {
        return Err(format!("must be at least {}", min.to_schema_number(false)));
    }
    if let Some(max) = rules.maximum
        && max.cmp_value(value) == Ordering::Greater
    {
        return Err(format!("must be at most {}", max.to_schema_number(true)));
    }
    Ok(())
}

/// Reads a JSON number as an integer, the way JSON Schema's `integer` type means it: any number
/// with no fractional part, so `3.0` is the integer 3.
pub fn integer_of(value: &Value) -> Result<i128, String> {
    let Value::Number(n) = value else {
        return Err(expected("an integer", value));
    };
    if let Some(i) = n.as_i64() {
        return Ok(i128::from(i));
    }
    if let Some(u) = n.as_u64() {
        return Ok(i128::from(u));
    }
    match n.as_f64() {
        Some(f) if f.fract() != 0.0 => Err("must be an integer, found a number with a fraction".to_owned()),
        // Inside [-2^127, 2^127) the conversion is exact; beyond it no integer type can hold the
        // value (and `as` would saturate, silently changing it).
        Some(f) if cmp_f64_i128(f, i128::MIN).is_ge() && cmp_f64_i128(f, i128::MAX).is_le() => Ok(f as i128),
        _ => Err("is out of range".to_owned()),
    }
}

/// The range of an integer type as bounds; `u128` is capped at `i128::MAX`, as the derive states.
fn type_range<T: TryInto<i128> + Copy>(min: T, max: T) -> (Bound, Bound) {
    (Bound::Int(min.try_into().unwrap_or(i128::MIN)), Bound::Int(max.try_into().unwrap_or(i128::MAX)))
}

macro_rules! integer_field {
    ($($ty:ty),*) => {$(
        impl FieldValue for $ty {
            fn schema(rules: &FieldRules) -> PrimitiveSchema {
                let (min, max) = type_range(<$ty>::MIN, <$ty>::MAX);
                number_schema(rules, true, Some(min), Some(max))
            }

            fn parse(value: &Value, rules: &FieldRules) -> Result<Self, String> {
                let (type_min, type_max) = type_range(<$ty>::MIN, <$ty>::MAX);
                let min = rules.minimum.unwrap_or(type_min);
                let max = rules.maximum.unwrap_or(type_max);
                let i = match integer_of(value) {
                    Ok(i) => i,
                    // Integral but beyond any integer type (`1e308`): state the bound it breaks.
                    Err(reason) => {
                        return Err(match value.as_f64() {
                            Some(f) if f.fract() == 0.0 && f > 0.0 => {
                                format!("must be at most {}", max.to_schema_number(true))
                            }
                            Some(f) if f.fract() == 0.0 => format!("must be at least {}", min.to_schema_number(false)),
                            _ => reason,
                        });
                    }
                };
                // Exact integer comparison where the bound is an integer; f64 would blur 64-bit bounds.
                let below = |bound: Bound| match bound {
                    Bound::Int(b) => i < b,
                    Bound::Float(b) => cmp_f64_i128(b, i) == Ordering::Greater,
                };
                let above = |bound: Bound| match bound {
                    Bound::Int(b) => i > b,
                    Bound::Float(b) => cmp_f64_i128(b, i) == Ordering::Less,
                };
                if below(min) {
                    return Err(format!("must be at least {}", min.to_schema_number(false)));
                }
                if above(max) {
                    return Err(format!("must be at most {}", max.to_schema_number(true)));
                }
                <$ty>::try_from(i).map_err(|_| "is out of range".to_owned())
            }

            fn to_value(&self) -> Option<Value> {
                // Only a `u128` above `i128::MAX` falls back to a (rounded) float.
                let number = match i128::try_from(*self) {
                    Ok(i) => Bound::Int(i).to_number(),
                    Err(_) => float_number(*self as f64),
                };
                Some(Value::Number(number))
            }
        }
    )*};
}

integer_field!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize);

impl FieldValue for f64 {
    fn schema(rules: &FieldRules) -> PrimitiveSchema {
        number_schema(rules, false, None, None)
    }

    fn parse(value: &Value, rules: &FieldRules) -> Result<Self, String> {
        let f = value.as_f64().ok_or_else(|| expected("a number", value))?;
        check_bounds(f, rules)?;
        Ok(f)
    }

    fn to_value(&self) -> Option<Value> {
        Number::from_f64(*self).map(Value::Number)
    }
}

impl FieldValue for f32 {
    fn schema(rules: &FieldRules) -> PrimitiveSchema {
        // Bounds keep a client from sending what an f32 cannot hold.
        number_schema(rules, false, Some(Bound::Float(f64::from(f32::MIN))), Some(Bound::Float(f64::from(f32::MAX))))
    }

    fn parse(value: &Value, rules: &FieldRules) -> Result<Self, String> {
        let f = value.as_f64().ok_or_else(|| expected("a number", value))?;
        let rules = FieldRules {
            minimum: rules.minimum.or(Some(Bound::Float(f64::from(f32::MIN)))),
            maximum: rules.maximum.or(Some(Bound::Float(f64::from(f32::MAX)))),
            ..*rules
        };
        check_bounds(f, &rules)?;
        Ok(f as f32)
    }

    fn to_value(&self) -> Option<Value> {
        Number::from_f64(f64::from(*self)).map(Value::Number)
    }
}

impl<T: FieldValue> FieldValue for Option<T> {
    const REQUIRED: bool = false;

    fn schema(rules: &FieldRules) -> PrimitiveSchema {
        T::schema(rules)
    }

    fn parse(value: &Value, rules: &FieldRules) -> Result<Self, String> {
        // `null` is not "absent": the schema says the property holds a T, and a null is not one.
        T::parse(value, rules).map(Some)
    }

    fn absent() -> Option<Self> {
        Some(None)
    }

    fn to_value(&self) -> Option<Value> {
        self.as_ref().and_then(T::to_value)
    }
}

/// One variant of a unit enum: its wire value and optional display title.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variant {
    /// The string sent on the wire.
    pub value: &'static str,
    /// The label shown to the user; any titled variant makes the whole select titled.
    pub title: Option<&'static str>,
}

/// A unit-only enum usable as a single select, or in a `Vec`/set as a multi-select.
///
/// Implemented by `#[derive(Elicit)]` on a unit-only enum.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a unit enum deriving `Elicit`",
    label = "a list field must hold a unit enum deriving `Elicit`",
    note = "the protocol's only arrays are multi-selects: `Vec`, `BTreeSet` or `HashSet` of a unit enum"
)]
pub trait ElicitEnum: Sized + 'static {
    /// The variants, in declaration order.
    const VARIANTS: &'static [Variant];

    /// The variant whose wire value is `value`.
    fn from_wire(value: &str) -> Option<Self>;

    /// This variant's wire value.
    fn to_wire(&self) -> &'static str;
}

/// `true` when `value` is the wire value of one of `variants` (usable in `const` checks).
pub const fn has_variant(variants: &[Variant], value: &str) -> bool {
    let mut i = 0;
    while i < variants.len() {
        if const_str_eq(variants[i].value, value) {
            return true;
        }
        i += 1;
    }
    false
}

/// `true` when every one of `values` names a variant (usable in `const` checks).
pub const fn has_variants(variants: &[Variant], values: &[&str]) -> bool {
    let mut i = 0;
    while i < values.len() {
        if !has_variant(variants, values[i]) {
            return false;
        }
        i += 1;
    }
    true
}

const fn const_str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

fn options<E: ElicitEnum>() -> (Vec<EnumOption>, bool) {
    let titled = E::VARIANTS.iter().any(|v| v.title.is_some());
    // In a titled select every option carries a title on the wire; an untitled variant shows its
    // value. Filling it in here keeps the model equal to what a client parses off the wire.
    let options = E::VARIANTS
        .iter()
        .map(|v| EnumOption {
            value: Text::Borrowed(v.value),
            title: if titled { Some(Text::Borrowed(v.title.unwrap_or(v.value))) } else { None },
        })
        .collect();
    (options, titled)
}

/// The schema of a single-select field of enum `E` (called by derived code).
pub fn single_select_schema<E: ElicitEnum>(rules: &FieldRules) -> PrimitiveSchema {
    let (options, titled) = options::<E>();
    PrimitiveSchema::SingleSelect(SingleSelectSchema {
        title: rules.title(),
        description: rules.description(),
        options,
        titled,
        default: rules.default_str(),
    })
}

fn choice_error<E: ElicitEnum>() -> String {
    let mut message = String::from("must be one of ");
    for (i, variant) in E::VARIANTS.iter().enumerate() {
        if i > 0 {
            message.push_str(", ");
        }
        message.push('`');
        message.push_str(variant.value);
        message.push('`');
    }
    message
}

/// Parses a single-select answer (called by derived code).
pub fn parse_single_select<E: ElicitEnum>(value: &Value) -> Result<E, String> {
    let text = value.as_str().ok_or_else(|| expected("a string", value))?;
    E::from_wire(text).ok_or_else(choice_error::<E>)
}

fn multi_select_schema<E: ElicitEnum>(rules: &FieldRules) -> PrimitiveSchema {
    let (options, titled) = options::<E>();
    PrimitiveSchema::MultiSelect(MultiSelectSchema {
        title: rules.title(),
        description: rules.description(),
        min_items: rules.min_items,
        max_items: rules.max_items,
        options,
        titled,
        default: match rules.default {
            Some(DefaultValue::List(values)) => Some(values.iter().map(|v| Text::Borrowed(*v)).collect()),
            _ => None,
        },
    })
}

fn parse_multi_select<E: ElicitEnum, C: FromIterator<E>>(value: &Value, rules: &FieldRules) -> Result<C, String> {
    let items = value.as_array().ok_or_else(|| expected("an array", value))?;
    if let Some(min) = rules.min_items
        && (items.len() as u64) < min
    {
        return Err(format!("must have at least {min} items selected"));
    }
    if let Some(max) = rules.max_items
        && items.len() as u64 > max
    {
        return Err(format!("must have at most {max} items selected"));
    }
    items
        .iter()
        .map(|item| parse_single_select::<E>(item).map_err(|reason| format!("item {reason}")))
        .collect()
}

/// A set holds each choice once, so an answer repeating a choice (`["meal", "meal"]`) makes a set
/// smaller than the array: `min_items` is checked again on what the set holds, or a set declared
/// with `min_items = 2` would parse from two copies of one choice into one element (and its
/// content would then fail its own schema). The restricted schema cannot state `uniqueItems`, so
/// for repeated choices, and only for them, the parser of a set is stricter than its schema.
fn parse_set<E: ElicitEnum, C: FromIterator<E>>(value: &Value, rules: &FieldRules, len: impl Fn(&C) -> usize) -> Result<C, String> {
    let set: C = parse_multi_select(value, rules)?;
    match rules.min_items {
        Some(min) if (len(&set) as u64) < min => Err(format!("must have at least {min} different items selected")),
        _ => Ok(set),
    }
}

fn multi_select_value<'a, E: ElicitEnum>(items: impl Iterator<Item = &'a E>) -> Option<Value> {
    Some(Value::Array(items.map(|e| Value::String(e.to_wire().to_owned())).collect()))
}

impl<E: ElicitEnum> FieldValue for Vec<E> {
    fn schema(rules: &FieldRules) -> PrimitiveSchema {
        multi_select_schema::<E>(rules)
    }

    fn parse(value: &Value, rules: &FieldRules) -> Result<Self, String> {
        parse_multi_select(value, rules)
    }

    fn to_value(&self) -> Option<Value> {
        multi_select_value(self.iter())
    }
}

impl<E: ElicitEnum + Ord> FieldValue for BTreeSet<E> {
    fn schema(rules: &FieldRules) -> PrimitiveSchema {
        multi_select_schema::<E>(rules)
    }

    fn parse(value: &Value, rules: &FieldRules) -> Result<Self, String> {
        parse_set(value, rules, BTreeSet::len)
    }

    fn to_value(&self) -> Option<Value> {
        multi_select_value(self.iter())
    }
}

impl<E: ElicitEnum + Eq + Hash, S: std::hash::BuildHasher + Default> FieldValue for HashSet<E, S> {
    fn schema(rules: &FieldRules) -> PrimitiveSchema {
        multi_select_schema::<E>(rules)
    }

    fn parse(value: &Value, rules: &FieldRules) -> Result<Self, String> {
        parse_set(value, rules, HashSet::len)
    }

    fn to_value(&self) -> Option<Value> {
        // Declaration order, so the answer does not depend on the hasher.
        let mut items: Vec<&E> = self.iter().collect();
        items.sort_by_key(|e| E::VARIANTS.iter().position(|v| v.value == e.to_wire()));
        multi_select_value(items.into_iter())
    }
}

/// An e-mail address: a string field with `format: "email"`, checked on parse.
///
/// ```
/// use elicit_runtime::Email;
///
/// let email: Email = "ada@example.com".parse().unwrap();
/// assert_eq!(email.as_str(), "ada@example.com");
/// assert!("not an address".parse::<Email>().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Email(String);

impl Email {
    /// The address as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The address as an owned string.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl std::str::FromStr for Email {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        check_format(s, StringFormat::Email)?;
        Ok(Email(s.to_owned()))
    }
}

impl std::fmt::Display for Email {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl FieldValue for Email {
    fn schema(rules: &FieldRules) -> PrimitiveSchema {
        string_schema(rules, Some(StringFormat::Email))
    }

    fn parse(value: &Value, rules: &FieldRules) -> Result<Self, String> {
        parse_str(value, rules, Some(StringFormat::Email)).map(|s| Email(s.to_owned()))
    }

    fn to_value(&self) -> Option<Value> {
        Some(Value::String(self.0.clone()))
    }
}

#[cfg(feature = "chrono")]
mod chrono_fields {
    use super::*;
    use chrono::{DateTime, FixedOffset, NaiveDate, SecondsFormat, Utc};

    /// RFC 3339 has four-digit years: a date outside 0000..=9999 writes content that does not
    /// parse back.
    impl FieldValue for NaiveDate {
        fn schema(rules: &FieldRules) -> PrimitiveSchema {
            string_schema(rules, Some(StringFormat::Date))
        }

        fn parse(value: &Value, rules: &FieldRules) -> Result<Self, String> {
            let text = parse_str(value, rules, Some(StringFormat::Date))?;
            // `parse_str` has checked `YYYY-MM-DD` in ASCII digits naming a real day: the parts
            // make the date directly, several times faster than chrono's format-string parser,
            // which stays as the fallback (and the source of the error message).
            match checked_date_parts(text).and_then(|(y, m, d)| NaiveDate::from_ymd_opt(y, m, d)) {
                Some(date) => Ok(date),
                None => NaiveDate::parse_from_str(text, "%Y-%m-%d").map_err(|e| format!("is not a valid date: {e}")),
            }
        }

        fn to_value(&self) -> Option<Value> {
            Some(Value::String(self.format("%Y-%m-%d").to_string()))
        }
    }

    /// Year, month and day of a `YYYY-MM-DD` text of ASCII digits.
    fn checked_date_parts(text: &str) -> Option<(i32, u32, u32)> {
        let bytes = text.as_bytes();
        let number = |range: std::ops::Range<usize>| {
            bytes.get(range)?.iter().try_fold(0u32, |acc, b| b.is_ascii_digit().then(|| acc * 10 + u32::from(b - b'0')))
        };
        if bytes.len() != 10 || bytes[4] != b'-' || bytes[7] != b'-' {
            return None;
        }
        Some((i32::try_from(number(0..4)?).ok()?, number(5..7)?, number(8..10)?))
    }

    fn parse_date_time(value: &Value, rules: &FieldRules) -> Result<DateTime<FixedOffset>, String> {
        let text = parse_str(value, rules, Some(StringFormat::DateTime))?;
        DateTime::parse_from_rfc3339(text).map_err(|e| format!("is not a valid date-time: {e}"))
    }

    impl FieldValue for DateTime<FixedOffset> {
        fn schema(rules: &FieldRules) -> PrimitiveSchema {
            string_schema(rules, Some(StringFormat::DateTime))
        }

        fn parse(value: &Value, rules: &FieldRules) -> Result<Self, String> {
            parse_date_time(value, rules)
        }

        fn to_value(&self) -> Option<Value> {
            Some(Value::String(self.to_rfc3339_opts(SecondsFormat::AutoSi, true)))
        }
    }

    impl FieldValue for DateTime<Utc> {
        fn schema(rules: &FieldRules) -> PrimitiveSchema {
            string_schema(rules, Some(StringFormat::DateTime))
        }

        fn parse(value: &Value, rules: &FieldRules) -> Result<Self, String> {
            parse_date_time(value, rules).map(|t| t.with_timezone(&Utc))
        }

        fn to_value(&self) -> Option<Value> {
            Some(Value::String(utc_text(self)))
        }
    }

    /// RFC 3339 text of a UTC instant. An answer at the edge of the four-digit years can name an
    /// instant outside them in UTC (`0000-01-01T00:30:00+01:00` is in the year -1), which UTC text
    /// cannot write; such an instant is written at the widest offset, which brings any instant an
    /// answer can name back to the year 0000 or 9999, so whatever parses writes content that
    /// parses back to it. Instants further out (built by the server) still write unparsable text.
    fn utc_text(time: &DateTime<Utc>) -> String {
        use chrono::Datelike;
        const WIDEST: i32 = 23 * 3600 + 59 * 60;
        let offset = match time.year() {
            ..0 => FixedOffset::east_opt(WIDEST),
            10_000.. => FixedOffset::west_opt(WIDEST),
            _ => None,
        };
        match offset {
            Some(offset) => time.with_timezone(&offset).to_rfc3339_opts(SecondsFormat::AutoSi, true),
            None => time.to_rfc3339_opts(SecondsFormat::AutoSi, true),
        }
    }
}

/// A `uri` string parsed by the WHATWG rules of `url`. Two gaps between those rules and RFC 3986,
/// which the schema's `format: uri` means, cannot be closed here: some valid URIs cannot be held
/// (`http:`, a port above 65535, an IPvFuture host) and are refused on parse although the schema
/// admits them; and a `Url` may keep `|`, `^`, `[` or `]` in its path or query, so its content is
/// not a valid `uri` and does not parse back.
#[cfg(feature = "url")]
impl FieldValue for url::Url {
    fn schema(rules: &FieldRules) -> PrimitiveSchema {
        string_schema(rules, Some(StringFormat::Uri))
    }

    fn parse(value: &Value, rules: &FieldRules) -> Result<Self, String> {
        let text = parse_str(value, rules, Some(StringFormat::Uri))?;
        url::Url::parse(text).map_err(|e| format!("is not a valid URL: {e}"))
    }

    fn to_value(&self) -> Option<Value> {
        Some(Value::String(self.as_str().to_owned()))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic, reason = "a failing test should stop loudly")]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integers_follow_json_schema() {
        let rules = FieldRules::EMPTY;
        assert_eq!(u8::parse(&json!(3.0), &rules), Ok(3));
        assert!(u8::parse(&json!(3.5), &rules).is_err());
        assert!(u8::parse(&json!(256), &rules).is_err());
        assert!(u8::parse(&json!(-1), &rules).is_err());
        assert!(u8::parse(&json!("3"), &rules).is_err());
        assert!(i64::parse(&json!(1e300), &rules).is_err());
        assert_eq!(u64::parse(&json!(u64::MAX), &rules), Ok(u64::MAX));
        assert!(i64::parse(&json!(u64::MAX), &rules).is_err());
        let narrowed = FieldRules { minimum: Some(Bound::Int(1)), maximum: Some(Bound::Int(9)), ..rules };
        assert_eq!(u8::parse(&json!(10), &narrowed), Err("must be at most 9".to_owned()));
        assert_eq!(u8::parse(&json!(0), &narrowed), Err("must be at least 1".to_owned()));
    }

    #[test]
    fn integer_schema_carries_type_range() {
        let schema = serde_json::to_value(u8::schema(&FieldRules::EMPTY)).unwrap();
        assert_eq!(schema, json!({"type":"integer","minimum":0,"maximum":255}));
        let schema = serde_json::to_value(u64::schema(&FieldRules::EMPTY)).unwrap();
        assert_eq!(schema, json!({"type":"integer","minimum":0,"maximum":u64::MAX}));
    }

    #[test]
    fn widest_integers_keep_exact_ranges() {
        let rules = FieldRules::EMPTY;
        // `u128::MAX` does not fit the i128 arithmetic: the range stops at `i128::MAX`.
        let schema = serde_json::to_value(u128::schema(&rules)).unwrap();
        assert_eq!(schema["minimum"], json!(0));
        assert_eq!(u128::parse(&json!(5), &rules), Ok(5));
        // `i128::MAX` is not an f64: the schema states the largest f64 below it, never 2^127.
        let max = schema["maximum"].as_f64().unwrap();
        assert!(max < 2f64.powi(127) && max.next_up() == 2f64.powi(127));
        let schema = serde_json::to_value(i128::schema(&rules)).unwrap();
        assert_eq!(schema["minimum"].as_f64(), Some(-(2f64.powi(127))));
        assert_eq!(i128::parse(&json!(1.7e38), &rules), Ok(1.7e38 as i128));
        assert_eq!(i128::parse(&json!(max), &rules), Ok(max as i128));
        assert!(i128::parse(&json!(2f64.powi(127)), &rules).is_err());
        assert_eq!(i128::parse(&json!(-(2f64.powi(127))), &rules), Ok(i128::MIN));
        assert!(u128::parse(&json!(2f64.powi(127)), &rules).is_err());
        assert_eq!(u128::MAX.to_value().and_then(|v| v.as_f64()), Some(2f64.powi(128)));
    }

    #[test]
    fn float_bounds_compare_exactly() {
        // 2^53 + 1 is not an f64; 2^53 is below it and must be refused.
        let rules = FieldRules { minimum: Some(Bound::Int(9_007_199_254_740_993)), ..FieldRules::EMPTY };
        assert!(f64::parse(&json!(9_007_199_254_740_992.0), &rules).is_err());
        assert!(f64::parse(&json!(9_007_199_254_740_994.0), &rules).is_ok());
        let rules = FieldRules { maximum: Some(Bound::Int(0)), ..FieldRules::EMPTY };
        assert!(f64::parse(&json!(-0.0), &rules).is_ok());
        assert!(f64::parse(&json!(1e-300), &rules).is_err());
    }

    #[test]
    fn floats() {
        assert_eq!(f64::parse(&json!(30.5), &FieldRules::EMPTY), Ok(30.5));
        assert_eq!(f64::parse(&json!(3), &FieldRules::EMPTY), Ok(3.0));
        assert!(f32::parse(&json!(1e300), &FieldRules::EMPTY).is_err());
    }

    /// The date fast path agrees with chrono's `%Y-%m-%d` parser on every day of these years
    /// (leap rules, year 0, the last year RFC 3339 can write) and on the days that do not exist.
    #[cfg(feature = "chrono")]
    #[test]
    fn dates_parse_as_chrono_parses_them() {
        use chrono::NaiveDate;
        for year in [0, 1, 1900, 1999, 2000, 2024, 2026, 2100, 9999] {
            for month in 0..=13 {
                for day in 0..=32 {
                    let text = format!("{year:04}-{month:02}-{day:02}");
                    let ours = NaiveDate::parse(&json!(text), &FieldRules::EMPTY).ok();
                    let chrono = NaiveDate::parse_from_str(&text, "%Y-%m-%d").ok();
                    assert_eq!(ours, chrono, "{text}");
                }
            }
        }
        assert!(NaiveDate::parse(&json!("2026-7-28"), &FieldRules::EMPTY).is_err());
        assert!(NaiveDate::parse(&json!("+2026-07-28"), &FieldRules::EMPTY).is_err());
    }
}
