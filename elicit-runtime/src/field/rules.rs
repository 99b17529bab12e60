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
