//! The constraints a derived field declares, as `const` values.

use super::*;

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

    /// A constant bound (`maximum = MAX`) of a field whose type has `shape`, given as the constant
    /// cast both ways: an integer for an integer type whose constant is a whole number, else the
    /// number (which the integer type's checks then refuse as not an integer).
    pub const fn of_shape(shape: super::FieldShape, as_integer: i128, as_number: f64) -> Bound {
        if matches!(shape, super::FieldShape::Integer) && as_integer as f64 == as_number {
            Bound::Int(as_integer)
        } else {
            Bound::Float(as_number)
        }
    }

    /// Compares a JSON number's value with this bound exactly: an `f64` cannot hold every integer
    /// bound (`2^53 + 1`, `i128::MAX`), and rounding the bound would let a value slip past it.
    pub(super) fn cmp_value(self, value: f64) -> Ordering {
        match self {
            Bound::Int(bound) => cmp_f64_i128(value, bound),
            Bound::Float(bound) => value.partial_cmp(&bound).unwrap_or(Ordering::Equal),
        }
    }

    /// The bound as a JSON number for a schema, rounded toward the allowed side when JSON cannot
    /// hold it exactly, so that the schema never admits a value the parser refuses.
    pub(super) fn to_schema_number(self, is_maximum: bool) -> Number {
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
    // An integer within ±2^53 is an `f64` exactly, and comparing two `f64`s is exact: the usual
    // bound needs no 128-bit conversion (nor the software routine that converts an `i128`).
    const EXACT: u128 = 1 << 53;
    if i.unsigned_abs() <= EXACT
        && let Ok(i) = i64::try_from(i)
        && let Some(order) = f.partial_cmp(&(i as f64))
    {
        return order;
    }
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

pub(super) fn float_number(f: f64) -> Number {
    // Attribute values are finite (the derive rejects anything else); 0 is a safe fallback.
    Number::from_f64(f).unwrap_or_else(|| Number::from(0))
}

/// A bound as an `f64`, for the rough comparisons of [`FieldRules::inconsistency`].
const fn as_f64(bound: Bound) -> f64 {
    match bound {
        Bound::Int(i) => i as f64,
        Bound::Float(f) => f,
    }
}

/// Unicode scalar values in `text`, as JSON Schema counts a length.
const fn char_count(text: &str) -> u64 {
    let bytes = text.as_bytes();
    let (mut i, mut count) = (0, 0);
    while i < bytes.len() {
        // Every scalar value has exactly one byte that is not a continuation byte (0b10xxxxxx).
        if bytes[i] & 0xC0 != 0x80 {
            count += 1;
        }
        i += 1;
    }
    count
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

impl DefaultValue {
    /// The default as the answer a client would send.
    pub fn to_value(self) -> Value {
        match self {
            DefaultValue::Str(s) => Value::String(s.to_owned()),
            DefaultValue::Number(n) => Value::Number(n.to_number()),
            DefaultValue::Bool(b) => Value::Bool(b),
            DefaultValue::List(values) => Value::Array(values.iter().map(|v| Value::String((*v).to_owned())).collect()),
        }
    }
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
    /// `Some(true)`: listed in `required` even with a default; `Some(false)`: optional although
    /// the type is not (a default the schema cannot state, filled in by the parser); `None`: the
    /// type decides, and a `default` makes the field optional.
    pub required: Option<bool>,
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
        required: None,
    };

    /// Whether a field of a type that is `type_required` ([`super::FieldValue::REQUIRED`]) is
    /// listed in `required`: a field with a default is not, unless it says so.
    pub const fn is_required(&self, type_required: bool) -> bool {
        match self.required {
            Some(required) => required,
            None => type_required && self.default.is_none(),
        }
    }

    /// The first reason these rules contradict themselves or the field's integer type (`range`),
    /// or `None`. A `const fn`: derived code evaluates it at compile time when a bound, length or
    /// default is a constant expression, which the derive itself cannot read.
    pub const fn inconsistency(&self, range: Option<(i128, i128)>) -> Option<&'static str> {
        if let (Some(min), Some(max)) = (self.min_length, self.max_length)
            && min > max
        {
            return Some("`min_length` is greater than `max_length`");
        }
        if let (Some(min), Some(max)) = (self.min_items, self.max_items)
            && min > max
        {
            return Some("`min_items` is greater than `max_items`");
        }
        if let (Some(min), Some(max)) = (self.minimum, self.maximum)
            && as_f64(min) > as_f64(max)
        {
            return Some("`minimum` is greater than `maximum`");
        }
        if let Some((low, high)) = range {
            let bounds = [self.minimum, self.maximum];
            let mut i = 0;
            while i < bounds.len() {
                match bounds[i] {
                    Some(Bound::Int(b)) if b < low || b > high => {
                        return Some("a bound is outside the range of the field's integer type");
                    }
                    Some(Bound::Float(_)) => return Some("bounds of an integer field must be integers"),
                    _ => {}
                }
                i += 1;
            }
        }
        match self.default {
            Some(DefaultValue::Str(text)) => {
                let count = char_count(text);
                if let Some(min) = self.min_length
                    && count < min
                {
                    return Some("`default` is shorter than `min_length`");
                }
                if let Some(max) = self.max_length
                    && count > max
                {
                    return Some("`default` is longer than `max_length`");
                }
            }
            Some(DefaultValue::Number(n)) => {
                let value = as_f64(n);
                let below = match (self.minimum, range) {
                    (Some(min), _) => value < as_f64(min),
                    (None, Some((low, _))) => value < low as f64,
                    (None, None) => false,
                };
                let above = match (self.maximum, range) {
                    (Some(max), _) => value > as_f64(max),
                    (None, Some((_, high))) => value > high as f64,
                    (None, None) => false,
                };
                if below || above {
                    return Some("`default` is outside the field's range");
                }
                if range.is_some() && matches!(n, Bound::Float(_)) {
                    return Some("the `default` of an integer field must be an integer");
                }
            }
            Some(DefaultValue::List(values)) => {
                let count = values.len() as u64;
                if let Some(min) = self.min_items
                    && count < min
                {
                    return Some("`default` has fewer values than `min_items`");
                }
                if let Some(max) = self.max_items
                    && count > max
                {
                    return Some("`default` has more values than `max_items`");
                }
            }
            Some(DefaultValue::Bool(_)) | None => {}
        }
        None
    }

    pub(super) fn title(&self) -> Option<Text> {
        self.title.map(Text::Borrowed)
    }

    pub(super) fn description(&self) -> Option<Text> {
        self.description.map(Text::Borrowed)
    }

    pub(super) fn default_str(&self) -> Option<Text> {
        match self.default {
            Some(DefaultValue::Str(s)) => Some(Text::Borrowed(s)),
            _ => None,
        }
    }
}
