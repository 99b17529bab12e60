//! Reading a form page's submission: `application/x-www-form-urlencoded` into the answer's
//! `content`, by the schema. Never fails: what cannot be read as its property's type is passed on
//! as text, for the type's own parser to refuse with the message form mode gives.

use serde_json::{Map, Number, Value};

use super::render::FormValues;
use crate::schema::{PrimitiveSchema, RequestedSchema, StringFormat};

/// The prefix of every control that holds a property (`f.<name>`): no property name can collide
/// with the page's own fields.
pub const FIELD_PREFIX: &str = "f.";
/// The name of the buttons' field: `accept`, `decline` or `cancel`.
pub const ACTION_FIELD: &str = "_action";
/// The name of the anti-forgery token's field.
pub const TOKEN_FIELD: &str = "_token";

/// Which button submitted the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageAction {
    /// Submit: the answer is the form's content.
    Accept,
    /// Decline: the user refused.
    Decline,
    /// Cancel: the user dismissed the form.
    Cancel,
}

impl PageAction {
    /// The action as the protocol spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            PageAction::Accept => "accept",
            PageAction::Decline => "decline",
            PageAction::Cancel => "cancel",
        }
    }
}

/// A submission, read.
#[derive(Debug, Clone, PartialEq)]
pub struct Posted {
    /// The button pressed; `None` when the body names none or an unknown one.
    pub action: Option<PageAction>,
    /// The anti-forgery token, if the body carries one.
    pub token: Option<String>,
    /// The answer's `content`: what a form-mode client would have sent for the same input.
    pub content: Map<String, Value>,
    /// The body, for [`Posted::values`].
    body: Vec<u8>,
}

impl Posted {
    /// The controls' text as submitted, to show again beside the errors (read again from the
    /// body: only a refused submission needs it).
    pub fn values(&self, schema: &RequestedSchema) -> FormValues {
        let mut values = FormValues { fields: vec![Vec::new(); schema.properties.len()] };
        let mut fields = Fields::new(schema);
        for (key, value) in form_urlencoded::parse(&self.body) {
            let Some(index) = key.strip_prefix(FIELD_PREFIX).and_then(|name| fields.index(name)) else { continue };
            let multi = matches!(schema.properties[index].schema, PrimitiveSchema::MultiSelect(_));
            let slot = &mut values.fields[index];
            if multi || slot.is_empty() {
                slot.push(value.into_owned());
            }
        }
        values
    }
}

/// Finds a control's property: the one after the last found first (a browser sends the controls
/// in the page's order), then any.
struct Fields<'a> {
    schema: &'a RequestedSchema,
    next: usize,
}

impl<'a> Fields<'a> {
    fn new(schema: &'a RequestedSchema) -> Self {
        Fields { schema, next: 0 }
    }

    fn index(&mut self, name: &str) -> Option<usize> {
        let properties = &self.schema.properties;
        let at = |i: usize| properties.get(i).is_some_and(|p| p.name == name);
        let index = if at(self.next) {
            self.next
        } else if self.next > 0 && at(self.next - 1) {
            self.next - 1
        } else {
            properties.iter().position(|p| p.name == name)?
        };
        self.next = index + 1;
        Some(index)
    }
}

/// What the body held for one property.
enum Slot {
    Unseen,
    /// The first value sent (later ones are ignored), read; `None` for an empty one.
    One(Option<Value>),
    /// Every choice of a multi-select.
    Many(Vec<Value>),
}

/// Reads a submission of the page rendered for `schema`. Fields that are not the page's are
/// ignored; a field sent twice keeps its first value (a multi-select keeps all of them).
pub fn parse_post(schema: &RequestedSchema, body: &[u8]) -> Posted {
    let mut action = None;
    let mut token = None;
    let mut slots: Vec<Slot> = schema.properties.iter().map(|_| Slot::Unseen).collect();
    let mut fields = Fields::new(schema);
    for (key, value) in form_urlencoded::parse(body) {
        if let Some(name) = key.strip_prefix(FIELD_PREFIX) {
            let Some(index) = fields.index(name) else { continue };
            let property = &schema.properties[index].schema;
            match (&mut slots[index], property) {
                (Slot::Many(choices), _) => choices.push(Value::String(value.into_owned())),
                (slot @ Slot::Unseen, PrimitiveSchema::MultiSelect(_)) => {
                    *slot = Slot::Many(vec![Value::String(value.into_owned())]);
                }
                (slot @ Slot::Unseen, _) => *slot = Slot::One(read(property, value)),
                (Slot::One(_), _) => {}
            }
        } else if key == ACTION_FIELD && action.is_none() {
            action = match value.as_ref() {
                "accept" => Some(PageAction::Accept),
                "decline" => Some(PageAction::Decline),
                "cancel" => Some(PageAction::Cancel),
                _ => None,
            };
        } else if key == TOKEN_FIELD && token.is_none() {
            token = Some(value.into_owned());
        }
    }
    let mut content = Map::new();
    for (property, slot) in schema.properties.iter().zip(slots) {
        let value = match (slot, &property.schema) {
            (Slot::Many(choices), _) => Some(Value::Array(choices)),
            (Slot::One(value), _) => value,
            // A multi-select with nothing ticked is the empty list: the user chose none; an
            // unticked checkbox sends nothing: the user said no.
            (Slot::Unseen, PrimitiveSchema::MultiSelect(_)) => Some(Value::Array(Vec::new())),
            (Slot::Unseen, PrimitiveSchema::Boolean(_)) => Some(Value::Bool(false)),
            (Slot::Unseen, _) => None,
        };
        if let Some(value) = value {
            content.insert(property.name.to_string(), value);
        }
    }
    Posted { action, token, content, body: body.to_vec() }
}

/// The content value of one property from its control's text; `None` for a field left empty.
fn read(schema: &PrimitiveSchema, text: std::borrow::Cow<'_, str>) -> Option<Value> {
    match schema {
        PrimitiveSchema::Boolean(_) => Some(Value::Bool(matches!(text.as_ref(), "true" | "on"))),
        _ if text.is_empty() => None,
        PrimitiveSchema::Number(s) => {
            let text = text.trim();
            let number = if s.integer {
                text.parse::<i64>().ok().map(Number::from)
            } else {
                text.parse::<i64>()
                    .ok()
                    .map(Number::from)
                    .or_else(|| text.parse::<f64>().ok().and_then(Number::from_f64))
            };
            // Not a number: passed on as typed, the parser says what it expected.
            Some(number.map_or_else(|| Value::String(text.to_owned()), Value::Number))
        }
        PrimitiveSchema::String(s) if s.format == Some(StringFormat::DateTime) => {
            Some(Value::String(rfc3339_of(&text)))
        }
        PrimitiveSchema::String(_) | PrimitiveSchema::SingleSelect(_) | PrimitiveSchema::MultiSelect(_) => {
            Some(Value::String(text.into_owned()))
        }
    }
}

/// A `datetime-local` control's value (`2026-07-28T09:30`, seconds optional) as an RFC 3339
/// date-time in UTC; anything else unchanged, for the parser to judge.
fn rfc3339_of(local: &str) -> String {
    let local_shape = |s: &str| {
        let b = s.as_bytes();
        b.len() >= 16 && b[4] == b'-' && b[7] == b'-' && b[10] == b'T' && b[13] == b':' && s.is_ascii()
    };
    match local.len() {
        16 if local_shape(local) => format!("{local}:00Z"),
        19 if local_shape(local) && local.as_bytes()[16] == b':' => format!("{local}Z"),
        _ => local.to_owned(),
    }
}

/// An RFC 3339 date-time in UTC as a `datetime-local` control shows it; other values unchanged
/// (the browser shows what it cannot read as empty, and the default stays the schema's).
pub(super) fn local_of(value: &str) -> String {
    for suffix in ["Z", "z", "+00:00", "-00:00"] {
        if let Some(local) = value.strip_suffix(suffix)
            && local.len() == 19
        {
            return local.to_owned();
        }
    }
    value.to_owned()
}
