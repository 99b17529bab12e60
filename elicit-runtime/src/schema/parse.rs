//! Parsing a server's schema (client side): anything outside the subset is refused.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

use serde_json::{Map, Number, Value};

use super::model::*;
use crate::content::clip;

/// Why a `requestedSchema` received from a server was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
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
    /// Properties come in the order `value` holds them: the server's order when `serde_json` keeps
    /// insertion order (`preserve_order`, which the `server` and `client` features turn on), else sorted by name.
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
            let schema =
                parse_primitive(schema).map_err(|reason| SchemaError { property: Some(clip(name)), reason })?;
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

fn check_text(text: &str) -> Result<(), String> {
    if text.len() > MAX_TEXT_LEN { Err(format!("text longer than {MAX_TEXT_LEN} bytes")) } else { Ok(()) }
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
    let items = value.and_then(Value::as_array).ok_or_else(|| format!("`{key}` must be an array"))?;
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

/// One property's schema: its shared `title` and `description`, then the kind its `type` (and, for
/// strings, `oneOf`/`enum`) names, each read by its own step.
fn parse_primitive(value: &Value) -> Result<PrimitiveSchema, String> {
    let object = value.as_object().ok_or("must be a JSON object")?;
    let title = text_field(object, "title")?;
    let description = text_field(object, "description")?;
    let kind = object.get("type").and_then(Value::as_str).ok_or("`type` is missing or not a string")?;
    match kind {
        "string" if object.contains_key("oneOf") || object.contains_key("enum") => {
            parse_single_select(object, title, description).map(PrimitiveSchema::SingleSelect)
        }
        "string" => parse_string(object, title, description).map(PrimitiveSchema::String),
        "number" | "integer" => {
            parse_number(object, kind == "integer", title, description).map(PrimitiveSchema::Number)
        }
        "boolean" => parse_boolean(object, title, description).map(PrimitiveSchema::Boolean),
        "array" => parse_multi_select(object, title, description).map(PrimitiveSchema::MultiSelect),
        "object" => Err("nested objects are not allowed in a requestedSchema".into()),
        other => Err(format!("unsupported type `{}`", clip(other))),
    }
}

/// A single-select: titled `oneOf`, plain `enum`, or the legacy `enum` with `enumNames`.
fn parse_single_select(
    object: &Map<String, Value>,
    title: Option<Text>,
    description: Option<Text>,
) -> Result<SingleSelectSchema, String> {
    let (options, titled) = if object.contains_key("oneOf") {
        (parse_options(object.get("oneOf"), true, "oneOf")?, true)
    } else {
        let mut options = parse_options(object.get("enum"), false, "enum")?;
        let titled = apply_enum_names(object.get("enumNames"), &mut options)?;
        (options, titled)
    };
    let default = text_field(object, "default")?;
    if let Some(default) = &default
        && !options.iter().any(|o| o.value == *default)
    {
        return Err(format!("default `{}` is not among the choices", clip(default)));
    }
    Ok(SingleSelectSchema { title, description, options, titled, default })
}

/// The legacy form's display names beside the `enum` values, as titles; whether there were any.
fn apply_enum_names(names: Option<&Value>, options: &mut [EnumOption]) -> Result<bool, String> {
    let Some(names) = names else { return Ok(false) };
    let names = names.as_array().ok_or("`enumNames` must be an array")?;
    if names.len() != options.len() {
        return Err("`enumNames` must name every `enum` value".into());
    }
    for (option, name) in options.iter_mut().zip(names) {
        let name = name.as_str().ok_or("`enumNames` must list strings")?;
        check_text(name)?;
        option.title = Some(Cow::Owned(name.to_owned()));
    }
    Ok(true)
}

/// A free-text string: its `format`, length bounds and default.
fn parse_string(
    object: &Map<String, Value>,
    title: Option<Text>,
    description: Option<Text>,
) -> Result<StringSchema, String> {
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
    Ok(StringSchema { title, description, min_length, max_length, format, default })
}

/// A number or integer: its bounds and default.
fn parse_number(
    object: &Map<String, Value>,
    integer: bool,
    title: Option<Text>,
    description: Option<Text>,
) -> Result<NumberSchema, String> {
    let minimum = number_field(object, "minimum")?;
    let maximum = number_field(object, "maximum")?;
    check_order(minimum.as_ref().and_then(Number::as_f64), maximum.as_ref().and_then(Number::as_f64), "bounds")?;
    let default = number_field(object, "default")?;
    Ok(NumberSchema { integer, title, description, minimum, maximum, default })
}

/// A boolean and its default.
fn parse_boolean(
    object: &Map<String, Value>,
    title: Option<Text>,
    description: Option<Text>,
) -> Result<BooleanSchema, String> {
    let default = match object.get("default") {
        None => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return Err("`default` must be a boolean".into()),
    };
    Ok(BooleanSchema { title, description, default })
}

/// An array, allowed only as a multi-select: titled `items.anyOf` or plain `items.enum`, its count
/// bounds and default.
fn parse_multi_select(
    object: &Map<String, Value>,
    title: Option<Text>,
    description: Option<Text>,
) -> Result<MultiSelectSchema, String> {
    let items = object
        .get("items")
        .and_then(Value::as_object)
        .ok_or("arrays are allowed only as multi-selects: `items` must be an object with `enum` or `anyOf`")?;
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
    let default = parse_choices_default(object.get("default"), &options)?;
    Ok(MultiSelectSchema { title, description, min_items, max_items, options, titled, default })
}

/// A multi-select's default: strings, each among the choices.
fn parse_choices_default(default: Option<&Value>, options: &[EnumOption]) -> Result<Option<Vec<Text>>, String> {
    match default {
        None => Ok(None),
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
            Ok(Some(chosen))
        }
        Some(_) => Err("`default` must be an array of strings".into()),
    }
}
