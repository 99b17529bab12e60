//! The restricted schema of a form-mode elicitation (`requestedSchema`).
//!
//! Protocol revision 2026-07-28 allows a flat object whose properties are primitive: strings (with
//! length bounds and one of four formats), numbers and integers (with bounds), booleans, and single-
//! or multi-select enums (untitled `enum` or titled `oneOf`/`anyOf`). This module models exactly that
//! subset, so a value of [`RequestedSchema`] cannot describe anything a client is not required to
//! render, and it serialises to exactly the spec's JSON: keys in a fixed order, properties in
//! declaration order, nothing outside the protocol's grammar.
//!
//! Derived types build their schema once (see [`crate::Elicit::requested_schema`]); clients parse a
//! server's schema with [`RequestedSchema::from_json`], which refuses anything outside the subset.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
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
            PrimitiveSchema::SingleSelect(s) => {
                s.default.as_ref().map(|d| Value::String(d.to_string()))
            }
            PrimitiveSchema::MultiSelect(s) => s.default.as_ref().map(|d| {
                Value::Array(d.iter().map(|v| Value::String(v.to_string())).collect())
            }),
        }
    }
}

// ---- serialisation: fixed key order, absent options skipped ----

impl Serialize for RequestedSchema {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let any_required = self.properties.iter().any(|p| p.required);
        let mut map = serializer.serialize_map(Some(2 + usize::from(any_required)))?;
        map.serialize_entry("type", "object")?;
        map.serialize_entry("properties", &PropertiesMap(&self.properties))?;
        if any_required {
            map.serialize_entry("required", &RequiredList(&self.properties))?;
        }
        map.end()
    }
}

struct PropertiesMap<'a>(&'a [Property]);

impl Serialize for PropertiesMap<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for property in self.0 {
            map.serialize_entry(&*property.name, &property.schema)?;
        }
        map.end()
    }
}

struct RequiredList<'a>(&'a [Property]);

impl Serialize for RequiredList<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        for property in self.0.iter().filter(|p| p.required) {
            seq.serialize_element(&*property.name)?;
        }
        seq.end()
    }
}

struct Options<'a> {
    options: &'a [EnumOption],
    titled: bool,
}

impl Serialize for Options<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.options.len()))?;
        for option in self.options {
            if self.titled {
                seq.serialize_element(&TitledOption(option))?;
            } else {
                seq.serialize_element(&*option.value)?;
            }
        }
        seq.end()
    }
}

struct TitledOption<'a>(&'a EnumOption);

impl Serialize for TitledOption<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("const", &*self.0.value)?;
        // The protocol requires a title on every titled option; fall back to the value.
        map.serialize_entry("title", self.0.title.as_deref().unwrap_or(&self.0.value))?;
        map.end()
    }
}

struct Items<'a>(&'a MultiSelectSchema);

impl Serialize for Items<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let options = Options { options: &self.0.options, titled: self.0.titled };
        if self.0.titled {
            let mut map = serializer.serialize_map(Some(1))?;
            map.serialize_entry("anyOf", &options)?;
            map.end()
        } else {
            let mut map = serializer.serialize_map(Some(2))?;
            map.serialize_entry("type", "string")?;
            map.serialize_entry("enum", &options)?;
            map.end()
        }
    }
}

fn entry<M: SerializeMap, T: Serialize + ?Sized>(
    map: &mut M,
    key: &str,
    value: Option<&T>,
) -> Result<(), M::Error> {
    match value {
        Some(value) => map.serialize_entry(key, value),
        None => Ok(()),
    }
}

impl Serialize for PrimitiveSchema {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        match self {
            PrimitiveSchema::String(s) => {
                map.serialize_entry("type", "string")?;
                entry(&mut map, "title", s.title.as_deref())?;
                entry(&mut map, "description", s.description.as_deref())?;
                entry(&mut map, "minLength", s.min_length.as_ref())?;
                entry(&mut map, "maxLength", s.max_length.as_ref())?;
                entry(&mut map, "format", s.format.map(StringFormat::as_str))?;
                entry(&mut map, "default", s.default.as_deref())?;
            }
            PrimitiveSchema::Number(s) => {
                map.serialize_entry("type", if s.integer { "integer" } else { "number" })?;
                entry(&mut map, "title", s.title.as_deref())?;
                entry(&mut map, "description", s.description.as_deref())?;
                entry(&mut map, "minimum", s.minimum.as_ref())?;
                entry(&mut map, "maximum", s.maximum.as_ref())?;
                entry(&mut map, "default", s.default.as_ref())?;
            }
            PrimitiveSchema::Boolean(s) => {
                map.serialize_entry("type", "boolean")?;
                entry(&mut map, "title", s.title.as_deref())?;
                entry(&mut map, "description", s.description.as_deref())?;
                entry(&mut map, "default", s.default.as_ref())?;
            }
            PrimitiveSchema::SingleSelect(s) => {
                map.serialize_entry("type", "string")?;
                entry(&mut map, "title", s.title.as_deref())?;
                entry(&mut map, "description", s.description.as_deref())?;
                let options = Options { options: &s.options, titled: s.titled };
                map.serialize_entry(if s.titled { "oneOf" } else { "enum" }, &options)?;
                entry(&mut map, "default", s.default.as_deref())?;
            }
            PrimitiveSchema::MultiSelect(s) => {
                map.serialize_entry("type", "array")?;
                entry(&mut map, "title", s.title.as_deref())?;
                entry(&mut map, "description", s.description.as_deref())?;
                entry(&mut map, "minItems", s.min_items.as_ref())?;
                entry(&mut map, "maxItems", s.max_items.as_ref())?;
                map.serialize_entry("items", &Items(s))?;
                if let Some(default) = &s.default {
                    let values: Vec<&str> = default.iter().map(|v| &**v).collect();
                    map.serialize_entry("default", &values)?;
                }
            }
        }
        map.end()
    }
}

// ---- parsing a server's schema (client side) ----

/// Why a `requestedSchema` received from a server was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    /// The property concerned, or `None` for the root object.
    pub property: Option<String>,
    /// What is wrong, in plain words.
    pub reason: String,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.property {
            Some(name) => write!(f, "requestedSchema property `{name}`: {}", self.reason),
            None => write!(f, "requestedSchema: {}", self.reason),
        }
    }
}

impl std::error::Error for SchemaError {}

/// Limits on a schema parsed from the wire, so a hostile server cannot make a client build a huge
/// form. Generous for any real form.
pub const MAX_PROPERTIES: usize = 256;
/// Most options one select may offer when parsed from the wire.
pub const MAX_OPTIONS: usize = 1024;
/// Longest text (title, description, value, name) accepted from the wire, in bytes.
pub const MAX_TEXT_LEN: usize = 16 * 1024;

impl RequestedSchema {
    /// Parses a server's `requestedSchema`, refusing anything outside the protocol's subset.
    ///
    /// Annotations a client need not understand (`$schema`, unknown keywords) are ignored, as the
    /// protocol's JSON Schema allows extra members; structural violations (nested objects, arrays
    /// of non-enums, empty or duplicate options, `min > max`, an unknown `format`, a default that
    /// does not fit) are errors. The legacy `enumNames` form is read as a titled single-select.
    ///
    /// ```
    /// use elicit_runtime::schema::RequestedSchema;
    ///
    /// let json = serde_json::json!({"type": "object", "properties": {"name": {"type": "string"}}});
    /// let schema = RequestedSchema::from_json(&json).unwrap();
    /// assert_eq!(schema.properties[0].name, "name");
    /// assert!(RequestedSchema::from_json(&serde_json::json!({"type": "array"})).is_err());
    /// ```
    pub fn from_json(value: &Value) -> Result<Self, SchemaError> {
        let root = value.as_object().ok_or_else(|| root_error("must be a JSON object"))?;
        if root.get("type").and_then(Value::as_str) != Some("object") {
            return Err(root_error("`type` must be \"object\""));
        }
        let properties = match root.get("properties") {
            Some(Value::Object(properties)) => properties,
            Some(_) => return Err(root_error("`properties` must be an object")),
            None => return Err(root_error("`properties` is missing")),
        };
        if properties.len() > MAX_PROPERTIES {
            return Err(root_error(&format!("more than {MAX_PROPERTIES} properties")));
        }
        // A set: a hostile `required` may be long, and each property looks itself up in it. Names
        // are checked in order, so the error names the first stranger.
        let mut required: HashSet<&str> = HashSet::new();
        match root.get("required") {
            None => {}
            Some(Value::Array(items)) => {
                for item in items {
                    let name = item.as_str().ok_or_else(|| root_error("`required` must list strings"))?;
                    if !properties.contains_key(name) {
                        return Err(root_error(&format!("`required` names `{}`, which is not a property", clip(name))));
                    }
                    required.insert(name);
                }
            }
            Some(_) => return Err(root_error("`required` must be an array of strings")),
        }
        let mut parsed = Vec::with_capacity(properties.len());
        for (name, schema) in properties {
            check_text(name).map_err(|reason| SchemaError { property: Some(clip(name)), reason })?;
            let schema = parse_primitive(schema)
                .map_err(|reason| SchemaError { property: Some(clip(name)), reason })?;
            parsed.push(Property {
                name: Cow::Owned(name.clone()),
                required: required.contains(&name.as_str()),
                schema,
            });
        }
        Ok(RequestedSchema { properties: parsed })
    }
}

fn root_error(reason: &str) -> SchemaError {
    SchemaError { property: None, reason: reason.to_owned() }
}

/// Shortens attacker-chosen text before it goes into an error message.
fn clip(text: &str) -> String {
    const MAX: usize = 64;
    match text.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

fn check_text(text: &str) -> Result<(), String> {
    if text.len() > MAX_TEXT_LEN {
        Err(format!("text longer than {MAX_TEXT_LEN} bytes"))
    } else {
        Ok(())
    }
}

fn text_field(object: &Map<String, Value>, key: &str) -> Result<Option<Text>, String> {
    match object.get(key) {
        None => Ok(None),
        Some(Value::String(text)) => {
            check_text(text)?;
            Ok(Some(Cow::Owned(text.clone())))
        }
        Some(_) => Err(format!("`{key}` must be a string")),
    }
}

fn count_field(object: &Map<String, Value>, key: &str) -> Result<Option<u64>, String> {
    match object.get(key) {
        None => Ok(None),
        Some(value) => match value.as_u64() {
            Some(count) => Ok(Some(count)),
            None => match value.as_f64() {
                // JSON Schema treats 3.0 as the integer 3.
                Some(f) if f >= 0.0 && f.fract() == 0.0 && f <= u64::MAX as f64 => Ok(Some(f as u64)),
                _ => Err(format!("`{key}` must be a non-negative integer")),
            },
        },
    }
}

fn number_field(object: &Map<String, Value>, key: &str) -> Result<Option<Number>, String> {
    match object.get(key) {
        None => Ok(None),
        Some(Value::Number(n)) => Ok(Some(n.clone())),
        Some(_) => Err(format!("`{key}` must be a number")),
    }
}

fn check_order(min: Option<f64>, max: Option<f64>, what: &str) -> Result<(), String> {
    // Plain for everyday values, exponent form for extremes (`1e308` has 309 digits written out).
    let show = |f: f64| if f.abs() < 1e16 { f.to_string() } else { format!("{f:e}") };
    match (min, max) {
        (Some(min), Some(max)) if min > max => {
            Err(format!("{what}: minimum {} exceeds maximum {}", show(min), show(max)))
        }
        _ => Ok(()),
    }
}

fn parse_options(value: Option<&Value>, titled: bool, key: &str) -> Result<Vec<EnumOption>, String> {
    let items = value
        .and_then(Value::as_array)
        .ok_or_else(|| format!("`{key}` must be an array"))?;
    if items.is_empty() {
        return Err(format!("`{key}` offers no choice"));
    }
    if items.len() > MAX_OPTIONS {
        return Err(format!("`{key}` offers more than {MAX_OPTIONS} choices"));
    }
    let mut options: Vec<EnumOption> = Vec::with_capacity(items.len());
    // Hashing, not pairwise comparison: a thousand long values sharing a prefix would otherwise
    // cost a quadratic number of long comparisons.
    let mut seen: HashSet<String> = HashSet::with_capacity(items.len());
    for item in items {
        let option = if titled {
            let object = item.as_object().ok_or_else(|| format!("`{key}` entries must be objects"))?;
            let value = text_field(object, "const")?.ok_or_else(|| format!("`{key}` entry lacks `const`"))?;
            let title = text_field(object, "title")?.ok_or_else(|| format!("`{key}` entry lacks `title`"))?;
            EnumOption { value, title: Some(title) }
        } else {
            let value = item.as_str().ok_or_else(|| format!("`{key}` must list strings"))?;
            check_text(value)?;
            EnumOption { value: Cow::Owned(value.to_owned()), title: None }
        };
        if !seen.insert(option.value.to_string()) {
            return Err(format!("`{key}` lists `{}` twice", clip(&option.value)));
        }
        options.push(option);
    }
    Ok(options)
}

fn parse_primitive(value: &Value) -> Result<PrimitiveSchema, String> {
    let object = value.as_object().ok_or("must be a JSON object")?;
    let title = text_field(object, "title")?;
    let description = text_field(object, "description")?;
    let kind = object.get("type").and_then(Value::as_str).ok_or("`type` is missing or not a string")?;
    match kind {
        "string" if object.contains_key("oneOf") || object.contains_key("enum") => {
            let (options, titled) = if object.contains_key("oneOf") {
                (parse_options(object.get("oneOf"), true, "oneOf")?, true)
            } else {
                let mut options = parse_options(object.get("enum"), false, "enum")?;
                // Legacy form: display names beside the values.
                let titled = match object.get("enumNames") {
                    None => false,
                    Some(names) => {
                        let names = names.as_array().ok_or("`enumNames` must be an array")?;
                        if names.len() != options.len() {
                            return Err("`enumNames` must name every `enum` value".into());
                        }
                        for (option, name) in options.iter_mut().zip(names) {
                            let name = name.as_str().ok_or("`enumNames` must list strings")?;
                            check_text(name)?;
                            option.title = Some(Cow::Owned(name.to_owned()));
                        }
                        true
                    }
                };
                (options, titled)
            };
            let default = text_field(object, "default")?;
            if let Some(default) = &default
                && !options.iter().any(|o| o.value == *default)
            {
                return Err(format!("default `{}` is not among the choices", clip(default)));
            }
            Ok(PrimitiveSchema::SingleSelect(SingleSelectSchema { title, description, options, titled, default }))
        }
        "string" => {
            let format = match object.get("format") {
                None => None,
                Some(Value::String(f)) => Some(
                    StringFormat::from_keyword(f)
                        .ok_or_else(|| format!("unknown format `{}` (allowed: email, uri, date, date-time)", clip(f)))?,
                ),
                Some(_) => return Err("`format` must be a string".into()),
            };
            let min_length = count_field(object, "minLength")?;
            let max_length = count_field(object, "maxLength")?;
            check_order(min_length.map(|v| v as f64), max_length.map(|v| v as f64), "length")?;
            let default = text_field(object, "default")?;
            Ok(PrimitiveSchema::String(StringSchema { title, description, min_length, max_length, format, default }))
        }
        "number" | "integer" => {
            let minimum = number_field(object, "minimum")?;
            let maximum = number_field(object, "maximum")?;
            check_order(minimum.as_ref().and_then(Number::as_f64), maximum.as_ref().and_then(Number::as_f64), "bounds")?;
            let default = number_field(object, "default")?;
            Ok(PrimitiveSchema::Number(NumberSchema {
                integer: kind == "integer",
                title,
                description,
                minimum,
                maximum,
                default,
            }))
        }
        "boolean" => {
            let default = match object.get("default") {
                None => None,
                Some(Value::Bool(b)) => Some(*b),
                Some(_) => return Err("`default` must be a boolean".into()),
            };
            Ok(PrimitiveSchema::Boolean(BooleanSchema { title, description, default }))
        }
        "array" => {
            let items = object.get("items").and_then(Value::as_object).ok_or(
                "arrays are allowed only as multi-selects: `items` must be an object with `enum` or `anyOf`",
            )?;
            let (options, titled) = if items.contains_key("anyOf") {
                (parse_options(items.get("anyOf"), true, "items.anyOf")?, true)
            } else if items.contains_key("enum") {
                if items.get("type").and_then(Value::as_str) != Some("string") {
                    return Err("`items.type` must be \"string\"".into());
                }
                (parse_options(items.get("enum"), false, "items.enum")?, false)
            } else {
                return Err("arrays are allowed only as multi-selects: `items` needs `enum` or `anyOf`".into());
            };
            let min_items = count_field(object, "minItems")?;
            let max_items = count_field(object, "maxItems")?;
            check_order(min_items.map(|v| v as f64), max_items.map(|v| v as f64), "items")?;
            let default = match object.get("default") {
                None => None,
                Some(Value::Array(values)) => {
                    // The default list has no length limit of its own: look values up in a set.
                    let choices: HashSet<&str> = options.iter().map(|o| &*o.value).collect();
                    let mut chosen = Vec::with_capacity(values.len());
                    for value in values {
                        let value = value.as_str().ok_or("`default` must list strings")?;
                        if !choices.contains(value) {
                            return Err(format!("default `{}` is not among the choices", clip(value)));
                        }
                        chosen.push(Cow::Owned(value.to_owned()));
                    }
                    Some(chosen)
                }
                Some(_) => return Err("`default` must be an array of strings".into()),
            };
            Ok(PrimitiveSchema::MultiSelect(MultiSelectSchema {
                title,
                description,
                min_items,
                max_items,
                options,
                titled,
                default,
            }))
        }
        "object" => Err("nested objects are not allowed in a requestedSchema".into()),
        other => Err(format!("unsupported type `{}`", clip(other))),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic, reason = "a failing test should stop loudly")]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn serialises_every_kind_in_spec_key_order() {
        let schema = RequestedSchema::new(vec![
            Property::required(
                "s",
                PrimitiveSchema::String(StringSchema {
                    title: Some("S".into()),
                    min_length: Some(1),
                    max_length: Some(5),
                    format: Some(StringFormat::Email),
                    ..Default::default()
                }),
            ),
            Property::optional(
                "n",
                PrimitiveSchema::Number(NumberSchema {
                    integer: true,
                    minimum: Some(0.into()),
                    maximum: Some(255.into()),
                    default: Some(1.into()),
                    ..Default::default()
                }),
            ),
            Property::optional(
                "m",
                PrimitiveSchema::MultiSelect(MultiSelectSchema {
                    options: vec![EnumOption { value: "a".into(), title: Some("A".into()) }],
                    titled: true,
                    default: Some(vec!["a".into()]),
                    ..Default::default()
                }),
            ),
        ]);
        assert_eq!(
            serde_json::to_string(&schema).unwrap(),
            concat!(
                r#"{"type":"object","properties":{"#,
                r#""s":{"type":"string","title":"S","minLength":1,"maxLength":5,"format":"email"},"#,
                r#""n":{"type":"integer","minimum":0,"maximum":255,"default":1},"#,
                r#""m":{"type":"array","items":{"anyOf":[{"const":"a","title":"A"}]},"default":["a"]}"#,
                r#"},"required":["s"]}"#
            )
        );
    }

    #[test]
    fn parse_round_trips_every_kind() {
        let json = json!({"type":"object","properties":{
            "s":{"type":"string","title":"S","minLength":1,"maxLength":5,"format":"date","default":"x"},
            "n":{"type":"number","minimum":0.5,"maximum":2,"default":1},
            "b":{"type":"boolean","default":true},
            "e":{"type":"string","enum":["a","b"],"default":"a"},
            "t":{"type":"string","oneOf":[{"const":"a","title":"A"}]},
            "mu":{"type":"array","minItems":1,"maxItems":2,"items":{"type":"string","enum":["a","b"]},"default":["b"]},
            "mt":{"type":"array","items":{"anyOf":[{"const":"a","title":"A"}]}}
        },"required":["s","b"]});
        let schema = RequestedSchema::from_json(&json).unwrap();
        assert_eq!(schema.to_json(), json);
    }

    #[test]
    fn legacy_enum_names_become_titles() {
        let json = json!({"type":"object","properties":{
            "e":{"type":"string","enum":["a","b"],"enumNames":["A","B"]}}});
        let schema = RequestedSchema::from_json(&json).unwrap();
        match &schema.properties[0].schema {
            PrimitiveSchema::SingleSelect(s) => {
                assert!(s.titled);
                assert_eq!(s.options[1].title.as_deref(), Some("B"));
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn refuses_shapes_outside_the_subset() {
        let cases = [
            json!(null),
            json!({"type":"array"}),
            json!({"type":"object"}),
            json!({"type":"object","properties":{"o":{"type":"object","properties":{}}}}),
            json!({"type":"object","properties":{"a":{"type":"array","items":{"type":"string"}}}}),
            json!({"type":"object","properties":{"e":{"type":"string","enum":[]}}}),
            json!({"type":"object","properties":{"e":{"type":"string","enum":["a","a"]}}}),
            json!({"type":"object","properties":{"e":{"type":"string","enum":["a"],"default":"b"}}}),
            json!({"type":"object","properties":{"s":{"type":"string","format":"ipv4"}}}),
            json!({"type":"object","properties":{"s":{"type":"string","minLength":3,"maxLength":2}}}),
            json!({"type":"object","properties":{"s":{"type":"string","minLength":-1}}}),
            json!({"type":"object","properties":{"n":{"type":"integer","minimum":3,"maximum":2}}}),
            json!({"type":"object","properties":{"s":{"type":"string"}},"required":["t"]}),
            json!({"type":"object","properties":{"x":{"type":"null"}}}),
            json!({"type":"object","properties":{"x":{"type":"string","oneOf":[{"const":"a"}]}}}),
        ];
        for case in cases {
            assert!(RequestedSchema::from_json(&case).is_err(), "accepted {case}");
        }
    }

    #[test]
    fn errors_clip_hostile_text() {
        let long = "x".repeat(10_000);
        let json = json!({"type":"object","properties":{"s":{"type":"string","format": long}}});
        let error = RequestedSchema::from_json(&json).unwrap_err().to_string();
        assert!(error.len() < 300, "{error}");
    }
}
