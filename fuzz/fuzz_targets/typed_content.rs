//! Derived parsers on arbitrary `content`: `from_content` of forms using every field kind.
//!
//! A JSON object input is parsed as sent; other input drives a generator of content near the
//! edges of each form's schema. Whenever parsing succeeds, `from_content(to_content(x)) == x`.
//! And the derived parser agrees with the client's validator of the same schema
//! (`client::form::validate`), field by field: the `requestedSchema` accepts a field exactly when
//! the parser does.
//!
//! Two documented gaps are allowed here, nothing else:
//! - `impl FieldValue for url::Url`: a WHATWG URL cannot hold every RFC 3986 URI (so the schema
//!   may admit a `Url` field the parser refuses), and a `Url` may keep characters RFC 3986 forbids
//!   (so its content may not parse back);
//! - `field::parse_set`: a set counts different choices toward `min_items`, which the schema
//!   cannot state, so an answer repeating a choice may pass the schema and fail the parser.

#![no_main]

use std::collections::BTreeSet;
use std::fmt::Debug;

use arbitrary::Unstructured;
use elicit_fuzz::forms::{Contact, Everything, Optionals};
use elicit_fuzz::generate;
use elicit_runtime::client::form;
use elicit_runtime::content::check_format;
use elicit_runtime::schema::{PrimitiveSchema, StringFormat};
use elicit_runtime::{ContentErrors, Elicit};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};

/// Where a form's fields fall into the documented gaps: wire names of its `url::Url` fields and of
/// its set fields.
struct Gaps {
    urls: &'static [&'static str],
    sets: &'static [&'static str],
}

const EVERYTHING: &Gaps = &Gaps { urls: &["site"], sets: &["extras", "set"] };
const OPTIONALS: &Gaps = &Gaps { urls: &["site"], sets: &["extras"] };
const CONTACT: &Gaps = &Gaps { urls: &[], sets: &[] };

fuzz_target!(|data: &[u8]| {
    match elicit_fuzz::json(data) {
        Some(Value::Object(content)) => {
            check::<Everything>(&content, EVERYTHING);
            check::<Optionals>(&content, OPTIONALS);
            check::<Contact>(&content, CONTACT);
        }
        Some(_) => {}
        None => {
            let mut u = Unstructured::new(data);
            let Ok(which) = u.int_in_range(0u8..=2) else { return };
            let generated = match which {
                0 => generate::content(&mut u, Everything::requested_schema()).map(|c| (c, 0)),
                1 => generate::content(&mut u, Optionals::requested_schema()).map(|c| (c, 1)),
                _ => generate::content(&mut u, Contact::requested_schema()).map(|c| (c, 2)),
            };
            match generated {
                Ok((content, 0)) => check::<Everything>(&content, EVERYTHING),
                Ok((content, 1)) => check::<Optionals>(&content, OPTIONALS),
                Ok((content, _)) => check::<Contact>(&content, CONTACT),
                Err(_) => {}
            }
        }
    }
});

fn failing(errors: &ContentErrors) -> BTreeSet<String> {
    errors.iter().map(|e| e.field.to_string()).collect()
}

fn is_past_the_clamp(value: &Value) -> bool {
    const MAX_SAFE: u64 = (1 << 53) - 1;
    match value.as_number() {
        Some(n) => n
            .as_u64()
            .map(|u| u > MAX_SAFE)
            .or_else(|| n.as_i64().map(|i| i.unsigned_abs() > MAX_SAFE))
            .or_else(|| n.as_f64().map(|f| f.fract() == 0.0 && f.abs() > MAX_SAFE as f64))
            .unwrap_or(false),
        None => false,
    }
}

fn repeats_a_choice(value: Option<&Value>) -> bool {
    let Some(items) = value.and_then(Value::as_array) else { return false };
    let distinct: BTreeSet<String> = items.iter().map(Value::to_string).collect();
    distinct.len() < items.len()
}

fn check<T: Elicit + Debug + PartialEq>(content: &Map<String, Value>, gaps: &Gaps) {
    let schema = T::requested_schema();
    let parsed = T::from_content(content);
    let by_parser = parsed.as_ref().err().map(failing).unwrap_or_default();
    let by_schema = form::validate(schema, content).err().as_ref().map(failing).unwrap_or_default();
    for field in by_parser.symmetric_difference(&by_schema) {
        // Only ever the parser refusing what the schema admits.
        let stricter = by_parser.contains(field);
        let value = content.get(field);
        let uri_not_url = gaps.urls.contains(&field.as_str())
            && value.and_then(Value::as_str).is_some_and(|text| url::Url::parse(text).is_err());
        let repeated_choice = gaps.sets.contains(&field.as_str()) && repeats_a_choice(value);
        // Integer bounds in the schema are clamped to what every JSON peer holds exactly
        // (±(2^53−1)); the parser still checks the type's whole range, so only the schema refuses
        // an integer past the clamp.
        let past_clamp = !stricter && value.is_some_and(is_past_the_clamp);
        let gap = (stricter && (uri_not_url || repeated_choice)) || past_clamp;
        assert!(
            gap,
            "parser and schema disagree on `{field}` = {:?}\n  parser: {:?}\n  schema: {by_schema:?}",
            content.get(field),
            parsed.as_ref().err().map(ToString::to_string),
        );
    }
    let Ok(value) = parsed else { return };
    let written = value.to_content();
    // What a parsed value writes is valid against its own schema (the `Url` gap and integers past
    // the clamp aside).
    if let Err(errors) = form::validate(schema, &written) {
        for error in &errors {
            let past_clamp = written.get(error.field.as_ref()).is_some_and(is_past_the_clamp);
            assert!(
                past_clamp || url_not_uri(schema, gaps, &written, &error.field),
                "{value:?} writes invalid `{}`: {errors}",
                error.field
            );
        }
        return;
    }
    match T::from_content(&written) {
        Ok(again) => assert_eq!(again, value, "content {written:?} parses to another value"),
        Err(errors) => panic!("{value:?} writes {written:?}, which does not parse back: {errors}"),
    }
}

/// A `Url` field whose written content is not an RFC 3986 URI.
fn url_not_uri(
    schema: &elicit_runtime::RequestedSchema,
    gaps: &Gaps,
    content: &Map<String, Value>,
    field: &str,
) -> bool {
    let is_uri_field = schema
        .property(field)
        .is_some_and(|p| matches!(&p.schema, PrimitiveSchema::String(s) if s.format == Some(StringFormat::Uri)));
    is_uri_field
        && gaps.urls.contains(&field)
        && content.get(field).and_then(Value::as_str).is_some_and(|text| !uri_ok(text))
}

/// Whether `text` is a URI as the runtime's `format: uri` check reads it.
fn uri_ok(text: &str) -> bool {
    check_format(text, StringFormat::Uri).is_ok()
}
