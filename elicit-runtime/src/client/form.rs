//! Checking an answer against a server's form before it is sent, and filling in defaults.
//!
//! The client-side twin of the derived parsers: where a derived type knows its schema at compile
//! time, a client holds a [`RequestedSchema`] parsed off the wire and checks content against it
//! with the same rules (the functions of [`crate::content`]).

use std::cmp::Ordering;
use std::fmt;

use serde_json::{Map, Number, Value};

use crate::content::{
    ContentErrors, FormatError, IntegerError, LengthError, check_format, check_length, json_type_name,
};
use crate::field::{cmp_f64_i128, integer_of};
use crate::schema::{PrimitiveSchema, Property, RequestedSchema};

/// Checks one property's value; the error's `Display` follows the property name
/// (`"must be at most 9"`).
///
/// ```
/// use elicit_runtime::client::form::{ValueError, check_value};
/// use elicit_runtime::schema::RequestedSchema;
///
/// let schema = RequestedSchema::from_json(&serde_json::json!({"type": "object",
///     "properties": {"n": {"type": "integer", "maximum": 9}}})).unwrap();
/// let error = check_value(&schema.properties[0], &serde_json::json!(12)).unwrap_err();
/// assert!(matches!(error, ValueError::AboveMaximum { .. }));
/// assert_eq!(error.to_string(), "must be at most 9");
/// ```
pub fn check_value(property: &Property, value: &Value) -> Result<(), ValueError> {
    let wrong_type =
        |expected: &'static str, found: &Value| ValueError::WrongType { expected, found: json_type_name(found) };
    match &property.schema {
        PrimitiveSchema::String(s) => {
            let text = value.as_str().ok_or_else(|| wrong_type("a string", value))?;
            check_length(text, s.min_length, s.max_length)?;
            match s.format {
                Some(format) => Ok(check_format(text, format)?),
                None => Ok(()),
            }
        }
        PrimitiveSchema::Number(s) => {
            let Value::Number(number) = value else {
                return Err(wrong_type(if s.integer { "an integer" } else { "a number" }, value));
            };
            if s.integer {
                integer_of(value)?;
            }
            if let Some(min) = s.minimum.as_ref().filter(|min| number_order(number, min) == Ordering::Less) {
                return Err(ValueError::BelowMinimum { minimum: min.clone() });
            }
            if let Some(max) = s.maximum.as_ref().filter(|max| number_order(number, max) == Ordering::Greater) {
                return Err(ValueError::AboveMaximum { maximum: max.clone() });
            }
            Ok(())
        }
        PrimitiveSchema::Boolean(_) => value.as_bool().map(|_| ()).ok_or_else(|| wrong_type("a boolean", value)),
        PrimitiveSchema::SingleSelect(s) => {
            let text = value.as_str().ok_or_else(|| wrong_type("a string", value))?;
            if s.options.iter().any(|o| o.value == text) { Ok(()) } else { Err(not_an_option(&s.options)) }
        }
        PrimitiveSchema::MultiSelect(s) => {
            let items = value.as_array().ok_or_else(|| wrong_type("an array", value))?;
            let count = items.len() as u64;
            if let Some(min) = s.min_items.filter(|m| count < *m) {
                return Err(ValueError::TooFewItems { min });
            }
            if let Some(max) = s.max_items.filter(|m| count > *m) {
                return Err(ValueError::TooManyItems { max });
            }
            for item in items {
                let item_error = |error| ValueError::Item(Box::new(error));
                let text = item.as_str().ok_or_else(|| item_error(wrong_type("a string", item)))?;
                if !s.options.iter().any(|o| o.value == text) {
                    return Err(item_error(not_an_option(&s.options)));
                }
            }
            Ok(())
        }
    }
}

/// Why [`check_value`] refused a value. `Display` follows the property's name
/// (`"must be at most 9"`), as [`ContentErrors`] shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ValueError {
    /// The value is not of the JSON type the property declares.
    WrongType {
        /// The type wanted, as a user would name it (`"a string"`).
        expected: &'static str,
        /// The type found ([`json_type_name`]).
        found: &'static str,
    },
    /// A string breaks the property's length bounds.
    Length(LengthError),
    /// A string lacks the property's `format`.
    Format(FormatError),
    /// An integer property's number is not an integer read exactly.
    Integer(IntegerError),
    /// A number below the property's `minimum`.
    BelowMinimum {
        /// The `minimum`.
        minimum: Number,
    },
    /// A number above the property's `maximum`.
    AboveMaximum {
        /// The `maximum`.
        maximum: Number,
    },
    /// A value that is none of the property's options.
    NotAnOption {
        /// The options' values, in the schema's order.
        options: Vec<String>,
    },
    /// Fewer items selected than `minItems`.
    TooFewItems {
        /// The `minItems`.
        min: u64,
    },
    /// More items selected than `maxItems`.
    TooManyItems {
        /// The `maxItems`.
        max: u64,
    },
    /// One item of a multi-select is refused.
    Item(Box<ValueError>),
}

impl fmt::Display for ValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueError::WrongType { expected, found } => write!(f, "must be {expected}, found {found}"),
            ValueError::Length(error) => error.fmt(f),
            ValueError::Format(error) => error.fmt(f),
            ValueError::Integer(error) => error.fmt(f),
            ValueError::BelowMinimum { minimum } => write!(f, "must be at least {minimum}"),
            ValueError::AboveMaximum { maximum } => write!(f, "must be at most {maximum}"),
            ValueError::NotAnOption { options } => {
                let list: Vec<String> = options.iter().map(|o| format!("`{o}`")).collect();
                write!(f, "must be one of {}", list.join(", "))
            }
            ValueError::TooFewItems { min } => {
                write!(f, "must have at least {} selected", crate::content::counted(*min, "item"))
            }
            ValueError::TooManyItems { max } => {
                write!(f, "must have at most {} selected", crate::content::counted(*max, "item"))
            }
            ValueError::Item(error) => write!(f, "item {error}"),
        }
    }
}

impl std::error::Error for ValueError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ValueError::Length(error) => Some(error),
            ValueError::Format(error) => Some(error),
            ValueError::Integer(error) => Some(error),
            ValueError::Item(error) => Some(&**error),
            _ => None,
        }
    }
}

impl From<LengthError> for ValueError {
    fn from(error: LengthError) -> Self {
        ValueError::Length(error)
    }
}

impl From<FormatError> for ValueError {
    fn from(error: FormatError) -> Self {
        ValueError::Format(error)
    }
}

impl From<IntegerError> for ValueError {
    fn from(error: IntegerError) -> Self {
        ValueError::Integer(error)
    }
}

/// The exact order of two JSON numbers: integers beyond 2^53 compare exactly, not as `f64`.
fn number_order(a: &Number, b: &Number) -> Ordering {
    let whole = |n: &Number| n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from));
    let float = |n: &Number| n.as_f64().unwrap_or(0.0);
    match (whole(a), whole(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(x), None) => cmp_f64_i128(float(b), x).reverse(),
        (None, Some(y)) => cmp_f64_i128(float(a), y),
        (None, None) => float(a).partial_cmp(&float(b)).unwrap_or(Ordering::Equal),
    }
}

fn not_an_option(options: &[crate::schema::EnumOption]) -> ValueError {
    ValueError::NotAnOption { options: options.iter().map(|o| o.value.to_string()).collect() }
}

/// Checks `content` against `schema`: every required property present, every present property
/// valid. Keys that are not properties are ignored, as the protocol allows; every failure is
/// reported.
///
/// ```
/// use elicit_runtime::client::form::validate;
/// use elicit_runtime::schema::RequestedSchema;
///
/// let schema = RequestedSchema::from_json(&serde_json::json!({"type": "object",
///     "properties": {"age": {"type": "integer", "minimum": 18}}, "required": ["age"]})).unwrap();
/// let bad = serde_json::json!({"age": 12});
/// assert_eq!(validate(&schema, bad.as_object().unwrap()).unwrap_err().to_string(), "`age` must be at least 18");
/// ```
pub fn validate(schema: &RequestedSchema, content: &Map<String, Value>) -> Result<(), ContentErrors> {
    let mut errors = ContentErrors::new();
    for property in &schema.properties {
        match content.get(property.name.as_ref()) {
            Some(value) => {
                if let Err(reason) = check_value(property, value) {
                    errors.push(property.name.to_string(), reason.to_string());
                }
            }
            None if property.required => errors.push_missing(property.name.to_string()),
            None => {}
        }
    }
    if errors.is_empty() { Ok(()) } else { Err(errors) }
}

/// `content` with the schema's defaults filled in where a property is absent
/// (the same as [`RequestedSchema::with_defaults`]).
pub fn with_defaults(schema: &RequestedSchema, content: &Map<String, Value>) -> Map<String, Value> {
    schema.with_defaults(content)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failing test should stop loudly")]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> RequestedSchema {
        RequestedSchema::from_json(&json!({"type": "object", "properties": {
            "name": {"type": "string", "minLength": 2},
            "email": {"type": "string", "format": "email"},
            "n": {"type": "integer", "minimum": 1, "maximum": 9, "default": 1},
            "x": {"type": "number"},
            "ok": {"type": "boolean"},
            "c": {"type": "string", "enum": ["a", "b"]},
            "m": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "maxItems": 1}
        }, "required": ["name", "n"]}))
        .unwrap()
    }

    #[test]
    fn reports_every_failing_field() {
        let content = json!({"name": "x", "email": "nope", "n": 2.5, "x": "1", "ok": 1, "c": "z", "m": ["a", "b"]});
        let errors = validate(&schema(), content.as_object().unwrap()).unwrap_err();
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_ref()).collect();
        assert_eq!(fields, ["name", "email", "n", "x", "ok", "c", "m"]);
    }

    #[test]
    fn selection_counts_read_as_english() {
        let errors =
            validate(&schema(), json!({"name": "ab", "n": 1, "m": ["a", "b"]}).as_object().unwrap()).unwrap_err();
        assert_eq!(errors.iter().next().unwrap().reason, "must have at most 1 item selected");
        let two = RequestedSchema::from_json(&json!({"type": "object", "properties": {
            "m": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "minItems": 2}}}))
        .unwrap();
        let errors = validate(&two, json!({"m": ["a"]}).as_object().unwrap()).unwrap_err();
        assert_eq!(errors.iter().next().unwrap().reason, "must have at least 2 items selected");
    }

    #[test]
    fn large_integer_bounds_compare_exactly() {
        let schema = RequestedSchema::from_json(&json!({"type": "object", "properties": {
            "n": {"type": "integer", "maximum": 9_007_199_254_740_993_u64}}}))
        .unwrap();
        let ok = json!({"n": 9_007_199_254_740_993_u64});
        let over = json!({"n": 9_007_199_254_740_994_u64});
        assert!(validate(&schema, ok.as_object().unwrap()).is_ok());
        assert!(validate(&schema, over.as_object().unwrap()).is_err(), "2^53 + 2 passed a 2^53 + 1 maximum");
        let fraction = json!({"n": 3.5});
        assert!(validate(&schema, fraction.as_object().unwrap()).is_err());
    }

    #[test]
    fn accepts_valid_content_and_fills_defaults() {
        let content = json!({"name": "Ada"});
        let filled = with_defaults(&schema(), content.as_object().unwrap());
        assert_eq!(filled.get("n"), Some(&json!(1)));
        assert!(validate(&schema(), &filled).is_ok());
        assert!(validate(&schema(), content.as_object().unwrap()).is_err(), "n is required");
    }
}
