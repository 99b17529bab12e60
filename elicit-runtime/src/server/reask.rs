//! What a person reads when an answer is asked again: the fields named by their titles, one line
//! each, the refused value quoted, in plain text (a host renders the message as it is, Markdown
//! and all); and a form whose defaults are only values that satisfy their field.

use serde_json::{Map, Value};

use crate::content::ContentErrors;
use crate::schema::RequestedSchema;

/// The longest refused value quoted back, in characters.
const MAX_QUOTED: usize = 64;

/// The re-ask's message: the handler's `message`, then one line per failing field.
///
/// `Arrive by: must be a date and time (you entered "tomorrow")`.
pub(super) fn message(
    message: &str,
    schema: &RequestedSchema,
    errors: &ContentErrors,
    content: &Map<String, Value>,
) -> String {
    let mut text = format!("{message}\n\nPlease correct:");
    for error in errors {
        let label = schema
            .properties
            .iter()
            .find(|p| p.name == error.field)
            .and_then(|p| p.schema.title())
            .unwrap_or(&error.field);
        text.push('\n');
        text.push_str(&plain(label));
        text.push_str(": ");
        text.push_str(&plain(&error.reason));
        if let Some(value) = content.get(error.field.as_ref()).filter(|_| !error.is_missing()) {
            text.push_str(" (you entered ");
            text.push_str(&quoted(value));
            text.push(')');
        }
    }
    text
}

/// The answer's values a re-asked form may offer as defaults: those of the fields that passed.
/// A refused value is quoted in the message, never sent as a `default` (a host that validates
/// defaults could refuse the whole form).
pub(super) fn valid_values(content: &Map<String, Value>, errors: &ContentErrors) -> Map<String, Value> {
    content.iter().filter(|(name, _)| errors.get(name).is_none()).map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// One line of plain text: no Markdown code marks, no line breaks or other control characters.
fn plain(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c == '`' {
                '"'
            } else if c.is_control() {
                ' '
            } else {
                c
            }
        })
        .collect()
}

/// A refused value as a person reads it: text in quotes, anything else as JSON, clipped.
fn quoted(value: &Value) -> String {
    let text = match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let clipped = match text.char_indices().nth(MAX_QUOTED) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    };
    match value {
        Value::String(_) => format!("\"{}\"", plain(&clipped)),
        _ => plain(&clipped),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failing test should stop loudly")]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::schema::{PrimitiveSchema, Property, StringSchema};

    fn schema() -> RequestedSchema {
        let titled = StringSchema { title: Some("Arrive by".into()), ..StringSchema::default() };
        RequestedSchema::new(vec![
            Property::required("arriveBy", PrimitiveSchema::String(titled)),
            Property::required("name", PrimitiveSchema::String(StringSchema::default())),
        ])
    }

    #[test]
    fn fields_are_named_by_title_one_line_each_with_the_value_quoted() {
        let mut errors = ContentErrors::new();
        errors.push("arriveBy", "must be one of `a`, `b`");
        errors.push_missing("name");
        let content = json!({"arriveBy": "to\nmorrow"});
        let text = message("When?", &schema(), &errors, content.as_object().unwrap());
        assert_eq!(
            text,
            "When?\n\nPlease correct:\nArrive by: must be one of \"a\", \"b\" (you entered \"to morrow\")\nname: is required"
        );
    }

    #[test]
    fn only_values_that_passed_are_kept() {
        let mut errors = ContentErrors::new();
        errors.push("arriveBy", "must be a date");
        let content = json!({"arriveBy": "x", "name": "Ada"});
        let kept = valid_values(content.as_object().unwrap(), &errors);
        assert_eq!(Value::Object(kept), json!({"name": "Ada"}));
    }
}
