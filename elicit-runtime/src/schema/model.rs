//! The schema's types: exactly the protocol's subset.

use std::borrow::Cow;
use std::fmt;

use serde_json::{Map, Number, Value};

/// Text held by a schema: `'static` for derived schemas, owned for schemas parsed off the wire.
pub type Text = Cow<'static, str>;

/// The `requestedSchema` of a form-mode elicitation: a flat object of primitive properties.
///
/// ```
/// use elicit_runtime::schema::{BooleanSchema, PrimitiveSchema, Property, RequestedSchema};
///
/// let schema = RequestedSchema::new(vec![Property::required(
///     "ok",
///     PrimitiveSchema::Boolean(BooleanSchema::default()),
/// )]);
/// assert_eq!(
///     serde_json::to_string(&schema).unwrap(),
///     r#"{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}"#
/// );
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct RequestedSchema {
    /// The properties, in the order a client should present them.
    pub properties: Vec<Property>,
}

/// One property of a [`RequestedSchema`].
#[derive(Debug, Clone, PartialEq)]
pub struct Property {
    /// The key under which the answer appears in the returned `content`.
    pub name: Text,
    /// Whether the property is listed in `required`.
    pub required: bool,
    /// What the property holds.
    pub schema: PrimitiveSchema,
}

/// The schema of one property: the protocol's `PrimitiveSchemaDefinition`.
#[derive(Debug, Clone, PartialEq)]
pub enum PrimitiveSchema {
    /// `type: "string"` without `enum`/`oneOf`.
    String(StringSchema),
    /// `type: "number"` or `type: "integer"`.
    Number(NumberSchema),
    /// `type: "boolean"`.
    Boolean(BooleanSchema),
    /// `type: "string"` with `enum` (untitled) or `oneOf` (titled).
    SingleSelect(SingleSelectSchema),
    /// `type: "array"` with `items.enum` (untitled) or `items.anyOf` (titled).
    MultiSelect(MultiSelectSchema),
}

/// The formats a string property may declare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StringFormat {
    /// `email`: an e-mail address.
    Email,
    /// `uri`: an absolute URI.
    Uri,
    /// `date`: an RFC 3339 full-date (`2026-07-28`).
    Date,
    /// `date-time`: an RFC 3339 date-time (`2026-07-28T09:30:00Z`).
    DateTime,
}

impl StringFormat {
    /// The keyword as it appears in the schema.
    pub const fn as_str(self) -> &'static str {
        match self {
            StringFormat::Email => "email",
            StringFormat::Uri => "uri",
            StringFormat::Date => "date",
            StringFormat::DateTime => "date-time",
        }
    }

    /// The format named by a schema keyword, if the protocol knows it.
    pub fn from_keyword(keyword: &str) -> Option<Self> {
        match keyword {
            "email" => Some(StringFormat::Email),
            "uri" => Some(StringFormat::Uri),
            "date" => Some(StringFormat::Date),
            "date-time" => Some(StringFormat::DateTime),
            _ => None,
        }
    }
}

impl fmt::Display for StringFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string property.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StringSchema {
    /// Display label.
    pub title: Option<Text>,
    /// Help text.
    pub description: Option<Text>,
    /// Fewest characters (Unicode scalar values).
    pub min_length: Option<u64>,
    /// Most characters (Unicode scalar values).
    pub max_length: Option<u64>,
    /// Declared format.
    pub format: Option<StringFormat>,
    /// Value to pre-fill.
    pub default: Option<Text>,
}

/// The largest integer every JSON peer holds exactly (`2^53 - 1`, JavaScript's
/// `Number.MAX_SAFE_INTEGER`). Derived integer fields clamp their schema's bounds to `±` this, and
/// typed peers (rmcp holds an integer schema's bounds and default in an `i64`) decode it.
pub const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// An integer a JSON peer holds exactly, as an integer: `3.0` becomes `3`; a fraction or a value
/// past `±(2^53 - 1)` gives `None`.
pub fn safe_integer_number(n: &Number) -> Option<Number> {
    let whole = match (n.as_i64(), n.as_f64()) {
        (Some(i), _) => i,
        (None, Some(f)) if f.fract() == 0.0 && f.abs() <= MAX_SAFE_INTEGER as f64 => f as i64,
        _ => return None,
    };
    (whole.unsigned_abs() <= MAX_SAFE_INTEGER.unsigned_abs()).then(|| Number::from(whole))
}

/// A number or integer property.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NumberSchema {
    /// `true` for `type: "integer"`, `false` for `type: "number"`.
    pub integer: bool,
    /// Display label.
    pub title: Option<Text>,
    /// Help text.
    pub description: Option<Text>,
    /// Inclusive lower bound.
    pub minimum: Option<Number>,
    /// Inclusive upper bound.
    pub maximum: Option<Number>,
    /// Value to pre-fill.
    pub default: Option<Number>,
}

/// A boolean property.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BooleanSchema {
    /// Display label.
    pub title: Option<Text>,
    /// Help text.
    pub description: Option<Text>,
    /// Value to pre-fill.
    pub default: Option<bool>,
}

/// One choice of a select: its wire value and, for titled selects, its label.
#[derive(Debug, Clone, PartialEq)]
pub struct EnumOption {
    /// The value sent back in `content`.
    pub value: Text,
    /// The label shown to the user (titled selects only).
    pub title: Option<Text>,
}

/// A single-select property: one string out of a fixed list.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SingleSelectSchema {
    /// Display label.
    pub title: Option<Text>,
    /// Help text.
    pub description: Option<Text>,
    /// The choices, in presentation order.
    pub options: Vec<EnumOption>,
    /// `oneOf` with `const`/`title` when `true`; plain `enum` when `false`.
    pub titled: bool,
    /// Value to pre-select.
    pub default: Option<Text>,
}

/// A multi-select property: a list of strings out of a fixed list.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MultiSelectSchema {
    /// Display label.
    pub title: Option<Text>,
    /// Help text.
    pub description: Option<Text>,
    /// Fewest selected items.
    pub min_items: Option<u64>,
    /// Most selected items.
    pub max_items: Option<u64>,
    /// The choices, in presentation order.
    pub options: Vec<EnumOption>,
    /// `items.anyOf` with `const`/`title` when `true`; `items.enum` when `false`.
    pub titled: bool,
    /// Values to pre-select.
    pub default: Option<Vec<Text>>,
}

impl RequestedSchema {
    /// A schema with these properties, in this order.
    pub fn new(properties: Vec<Property>) -> Self {
        RequestedSchema { properties }
    }

    /// The property named `name`, if any.
    pub fn property(&self, name: &str) -> Option<&Property> {
        self.properties.iter().find(|p| p.name == name)
    }

    /// This schema as a JSON value (what goes into `requestedSchema` on the wire).
    pub fn to_json(&self) -> Value {
        // Serialising our own model into a `Value` cannot fail: every key is a string and every
        // number finite.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// `content` with this schema's defaults filled in where a property is absent: what a client
    /// sends when the user accepts the defaults, and the server's reading of partial arguments.
    ///
    /// ```
    /// use elicit_runtime::schema::{BooleanSchema, PrimitiveSchema, Property, RequestedSchema};
    ///
    /// let schema = RequestedSchema::new(vec![Property::optional(
    ///     "ok",
    ///     PrimitiveSchema::Boolean(BooleanSchema { default: Some(true), ..BooleanSchema::default() }),
    /// )]);
    /// let filled = schema.with_defaults(&serde_json::Map::new());
    /// assert_eq!(filled["ok"], true);
    /// ```
    ///
    /// A `null` for a property counts as absent (it is dropped, or replaced by the default):
    /// models send `"limit": null` for an argument they leave out.
    pub fn with_defaults(&self, content: &Map<String, Value>) -> Map<String, Value> {
        let mut filled = content.clone();
        filled.retain(|name, value| !(value.is_null() && self.property(name).is_some()));
        for property in &self.properties {
            if !filled.contains_key(property.name.as_ref())
                && let Some(default) = property.schema.default_value()
            {
                filled.insert(property.name.to_string(), default);
            }
        }
        filled
    }

    /// This schema with the user's previous values as defaults, where a value fits the property:
    /// asking again after a refused answer keeps what the user typed, unless it is longer than the
    /// field allows or than [`MAX_TEXT_LEN`](super::MAX_TEXT_LEN).
    pub fn prefilled_with(&self, content: &Map<String, Value>) -> RequestedSchema {
        let mut schema = self.clone();
        for property in &mut schema.properties {
            let Some(value) = content.get(property.name.as_ref()) else { continue };
            match (&mut property.schema, value) {
                // A value longer than the field allows (or than any text a schema may carry) is
                // not echoed back: it keeps the declared default.
                (PrimitiveSchema::String(s), Value::String(v))
                    if v.len() <= super::MAX_TEXT_LEN
                        && crate::content::check_length(v, None, s.max_length).is_ok() =>
                {
                    s.default = Some(Cow::Owned(v.clone()));
                }
                // An integer property's default stays an integer a peer can hold (`3.0` is offered
                // as `3`); an answer that cannot be one keeps the declared default.
                (PrimitiveSchema::Number(s), Value::Number(n)) if s.integer => {
                    if let Some(n) = safe_integer_number(n) {
                        s.default = Some(n);
                    }
                }
                (PrimitiveSchema::Number(s), Value::Number(n)) => s.default = Some(n.clone()),
                (PrimitiveSchema::Boolean(s), Value::Bool(b)) => s.default = Some(*b),
                (PrimitiveSchema::SingleSelect(s), Value::String(v)) if s.options.iter().any(|o| o.value == *v) => {
                    s.default = Some(Cow::Owned(v.clone()));
                }
                (PrimitiveSchema::MultiSelect(s), Value::Array(items)) => {
                    let chosen: Vec<_> = items
                        .iter()
                        .filter_map(Value::as_str)
                        .filter(|v| s.options.iter().any(|o| o.value == *v))
                        .map(|v| Cow::Owned(v.to_owned()))
                        .collect();
                    s.default = Some(chosen);
                }
                _ => {}
            }
        }
        schema
    }
}

impl Property {
    /// A property listed in `required`.
    pub fn required(name: impl Into<Text>, schema: PrimitiveSchema) -> Self {
        Property { name: name.into(), required: true, schema }
    }

    /// A property the user may leave out.
    pub fn optional(name: impl Into<Text>, schema: PrimitiveSchema) -> Self {
        Property { name: name.into(), required: false, schema }
    }
}

impl PrimitiveSchema {
    /// The display label, if any.
    pub fn title(&self) -> Option<&str> {
        match self {
            PrimitiveSchema::String(s) => s.title.as_deref(),
            PrimitiveSchema::Number(s) => s.title.as_deref(),
            PrimitiveSchema::Boolean(s) => s.title.as_deref(),
            PrimitiveSchema::SingleSelect(s) => s.title.as_deref(),
            PrimitiveSchema::MultiSelect(s) => s.title.as_deref(),
        }
    }

    /// The help text, if any.
    pub fn description(&self) -> Option<&str> {
        match self {
            PrimitiveSchema::String(s) => s.description.as_deref(),
            PrimitiveSchema::Number(s) => s.description.as_deref(),
            PrimitiveSchema::Boolean(s) => s.description.as_deref(),
            PrimitiveSchema::SingleSelect(s) => s.description.as_deref(),
            PrimitiveSchema::MultiSelect(s) => s.description.as_deref(),
        }
    }

    /// The default as a JSON value, if any.
    pub fn default_value(&self) -> Option<Value> {
        match self {
            PrimitiveSchema::String(s) => s.default.as_ref().map(|d| Value::String(d.to_string())),
            PrimitiveSchema::Number(s) => s.default.clone().map(Value::Number),
            PrimitiveSchema::Boolean(s) => s.default.map(Value::Bool),
            PrimitiveSchema::SingleSelect(s) => s.default.as_ref().map(|d| Value::String(d.to_string())),
            PrimitiveSchema::MultiSelect(s) => {
                s.default.as_ref().map(|d| Value::Array(d.iter().map(|v| Value::String(v.to_string())).collect()))
            }
        }
    }
}
