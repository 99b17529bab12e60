//! What a derived form does with defaults and nulls, field types of one's own, and validators.

#![allow(clippy::unwrap_used, clippy::panic, reason = "a failing test should stop loudly")]

use std::borrow::Cow;
use std::num::{NonZeroI8, NonZeroU32};
use std::sync::Arc;

use elicit_runtime::Elicit;
use elicit_runtime::content::ContentErrors;
use elicit_runtime::field::{FieldRules, FieldShape, FieldValue, InvalidValue, parse_str, string_schema};
use elicit_runtime::schema::PrimitiveSchema;
use serde_json::{Value, json};

use crate::{object, required};

// ---- defaults and nulls ----

#[derive(Elicit, Debug, PartialEq)]
#[elicit(deserialize)]
struct Query {
    text: String,
    #[elicit(default = 20, minimum = 1, maximum = 100)]
    limit: u32,
    #[elicit(default = 0, required)]
    offset: u32,
    tag: Option<String>,
}

#[test]
fn a_default_makes_a_field_optional_and_fills_it_when_absent() {
    let schema = Query::requested_schema().to_json();
    assert_eq!(required(&schema), ["text", "offset"]);
    assert_eq!(schema["properties"]["limit"]["default"], 20);
    let parsed = Query::from_content(&object(json!({"text": "a", "offset": 3}))).unwrap();
    assert_eq!(parsed, Query { text: "a".into(), limit: 20, offset: 3, tag: None });
    // `required` keeps the field required despite its default.
    let errors = Query::from_content(&object(json!({"text": "a"}))).unwrap_err();
    assert!(errors.get("offset").unwrap().is_missing(), "{errors}");
    // The validating `Deserialize` agrees with `from_content`.
    let deserialized: Query = serde_json::from_value(json!({"text": "a", "offset": 3})).unwrap();
    assert_eq!(deserialized, parsed);
}

#[test]
fn null_is_absent_in_tool_arguments_and_refused_in_form_content() {
    let arguments = json!({"text": "a", "offset": 0, "limit": null, "tag": null});
    let deserialized: Query = serde_json::from_value(arguments.clone()).unwrap();
    assert_eq!(deserialized, Query { text: "a".into(), limit: 20, offset: 0, tag: None });
    // The engine's reading of tool arguments goes through `with_defaults`, which drops nulls too.
    let filled = Query::requested_schema().with_defaults(&object(arguments.clone()));
    assert_eq!(Query::from_content(&filled).unwrap(), deserialized);
    // A form's content follows its schema, which has no nulls.
    let errors = Query::from_content(&object(arguments)).unwrap_err();
    assert_eq!(errors.to_string(), "`limit` must be an integer, found null; `tag` must be a string, found null");
    // A null for a required argument is reported as missing, not as a wrong type.
    let error = serde_json::from_value::<Query>(json!({"text": null, "offset": 0})).unwrap_err();
    assert_eq!(error.to_string(), "`text` is required");
}

// ---- field types of one's own ----

/// A project key: two to ten capital letters, which the schema cannot say.
#[derive(Debug, PartialEq)]
pub(crate) struct ProjectKey(pub(crate) String);

impl FieldValue for ProjectKey {
    const SHAPE: FieldShape = FieldShape::String;

    fn schema(rules: &FieldRules) -> PrimitiveSchema {
        string_schema(rules, rules.format)
    }

    fn parse(value: &Value, rules: &FieldRules) -> Result<Self, InvalidValue> {
        let text = parse_str(value, rules, rules.format)?;
        if text.bytes().all(|b| b.is_ascii_uppercase()) {
            Ok(ProjectKey(text.to_owned()))
        } else {
            Err("must be capital letters".into())
        }
    }

    fn to_value(&self) -> Option<Value> {
        Some(Value::String(self.0.clone()))
    }
}

/// A newtype through its one field.
#[derive(Elicit, Debug, PartialEq)]
#[elicit(transparent)]
struct Seats(u8);

/// A foreign type (here a pair), read through a `with` module.
mod pair_text {
    use super::*;

    pub(crate) fn schema(rules: &FieldRules) -> PrimitiveSchema {
        string_schema(rules, None)
    }

    pub(crate) fn parse(value: &Value, rules: &FieldRules) -> Result<(u8, u8), String> {
        let text = parse_str(value, rules, None)?;
        let (a, b) = text.split_once('x').ok_or("must be written `AxB`")?;
        Ok((a.parse().map_err(|_| "must start with a number")?, b.parse().map_err(|_| "must end with a number")?))
    }

    pub(crate) fn to_value(value: &(u8, u8)) -> Option<Value> {
        Some(Value::String(format!("{}x{}", value.0, value.1)))
    }
}

#[derive(Elicit, Debug, PartialEq)]
struct Project {
    #[elicit(min_length = 2, max_length = 10)]
    key: ProjectKey,
    #[elicit(maximum = 9)]
    seats: Seats,
    #[elicit(with = pair_text, max_length = 7)]
    grid: (u8, u8),
    team_size: NonZeroU32,
    offset: Option<NonZeroI8>,
    name: Box<str>,
    owner: Arc<str>,
    #[elicit(default = "main")]
    branch: Cow<'static, str>,
}

#[test]
fn own_field_types_are_fields() {
    let schema = Project::requested_schema().to_json();
    assert_eq!(schema["properties"]["key"], json!({"type": "string", "minLength": 2, "maxLength": 10}));
    assert_eq!(schema["properties"]["seats"], json!({"type": "integer", "minimum": 0, "maximum": 9}));
    assert_eq!(schema["properties"]["grid"], json!({"type": "string", "maxLength": 7}));
    assert_eq!(schema["properties"]["team_size"]["minimum"], 1);
    assert_eq!(schema["properties"]["branch"], json!({"type": "string", "default": "main"}));
    assert_eq!(required(&schema), ["key", "seats", "grid", "team_size", "name", "owner"]);
    let content = object(json!({
        "key": "ELIC", "seats": 4, "grid": "3x4", "team_size": 5, "offset": -2, "name": "Elicit", "owner": "Ada",
    }));
    let project = Project::from_content(&content).unwrap();
    assert_eq!(project.key, ProjectKey("ELIC".into()));
    assert_eq!(project.seats, Seats(4));
    assert_eq!(project.grid, (3, 4));
    assert_eq!(project.team_size.get(), 5);
    assert_eq!(project.offset.map(NonZeroI8::get), Some(-2));
    assert_eq!(project.branch, "main");
    let mut written = project.to_content();
    assert_eq!(written.remove("branch"), Some(json!("main")));
    assert_eq!(written, content);
    let bad = object(json!({
        "key": "elic", "seats": 10, "grid": "3by4", "team_size": 0, "offset": 0, "name": 1, "owner": "Ada",
    }));
    assert_eq!(
        Project::from_content(&bad).unwrap_err().to_string(),
        "`key` must be capital letters; `seats` must be at most 9; `grid` must be written `AxB`; \
         `team_size` must be at least 1; `offset` must not be 0; `name` must be a string, found an integer"
    );
    assert_eq!(<Seats as elicit_runtime::field::FieldValue>::SHAPE, FieldShape::Integer);
}

// ---- validators ----

#[allow(clippy::ptr_arg, reason = "a validator takes `&T` for the field's type `T`")]
fn no_spaces(text: &String) -> Result<(), &'static str> {
    if text.contains(' ') { Err("must not contain spaces") } else { Ok(()) }
}

fn end_after_start(range: &Range) -> Result<(), ContentErrors> {
    let mut errors = ContentErrors::new();
    if range.end <= range.start {
        errors.push("end", format!("must be after start ({})", range.start));
    }
    if errors.is_empty() { Ok(()) } else { Err(errors) }
}

#[derive(Elicit, Debug, PartialEq)]
#[elicit(validate = end_after_start)]
struct Range {
    #[elicit(validate = no_spaces)]
    label: String,
    start: u32,
    end: u32,
}

#[test]
fn validators_run_after_the_schema_checks() {
    let ok = Range::from_content(&object(json!({"label": "q1", "start": 1, "end": 2}))).unwrap();
    assert_eq!(ok, Range { label: "q1".into(), start: 1, end: 2 });
    let errors = Range::from_content(&object(json!({"label": "q 1", "start": 1, "end": 2}))).unwrap_err();
    assert_eq!(errors.to_string(), "`label` must not contain spaces");
    // The struct's validator runs once every field is valid, and names the field it blames.
    let errors = Range::from_content(&object(json!({"label": "q1", "start": 5, "end": 2}))).unwrap_err();
    assert_eq!(errors.to_string(), "`end` must be after start (5)");
    // A schema failure comes first: the validators do not see a field that failed it.
    let errors = Range::from_content(&object(json!({"label": 3, "start": 5, "end": 2}))).unwrap_err();
    assert_eq!(errors.to_string(), "`label` must be a string, found an integer");
}

// ---- flattened forms ----

/// A group of fields written once and spliced into several forms.
#[derive(Elicit, Debug, PartialEq, Clone)]
struct Address {
    #[elicit(min_length = 1)]
    city: String,
    postcode: Option<String>,
}

#[derive(Elicit, Debug, PartialEq)]
struct Delivery {
    recipient: String,
    #[elicit(flatten)]
    address: Address,
    #[elicit(flatten)]
    billing: Option<Billing>,
    express: bool,
}

#[derive(Elicit, Debug, PartialEq)]
struct Billing {
    vat_number: String,
    invoice_email: elicit_runtime::Email,
}

#[test]
fn flattened_fields_are_spliced_in_declaration_order() {
    let schema = Delivery::requested_schema().to_json();
    let names: Vec<&str> = schema["properties"].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(names, ["recipient", "city", "postcode", "vat_number", "invoice_email", "express"]);
    // An optional flattened form is all or none: its fields are not required.
    assert_eq!(required(&schema), ["recipient", "city", "express"]);
    let content = object(json!({"recipient": "Ada", "city": "Paris", "express": true}));
    let delivery = Delivery::from_content(&content).unwrap();
    let address = Address { city: "Paris".into(), postcode: None };
    assert_eq!(delivery, Delivery { recipient: "Ada".into(), address, billing: None, express: true });
    assert_eq!(delivery.to_content(), content);
    // One field of the optional form asks for all of them; errors are the host's.
    let partial = object(json!({"recipient": "Ada", "city": "", "express": true, "vat_number": "FR1"}));
    assert_eq!(
        Delivery::from_content(&partial).unwrap_err().to_string(),
        "`city` must be at least 1 character long; `invoice_email` is required"
    );
    let full = object(json!({
        "recipient": "Ada", "city": "Paris", "express": false, "vat_number": "FR1", "invoice_email": "a@example.com",
    }));
    let delivery = Delivery::from_content(&full).unwrap();
    assert_eq!(delivery.billing.as_ref().map(|b| b.vat_number.as_str()), Some("FR1"));
    assert_eq!(delivery.to_content().len(), full.len());
}

// ---- constants as attribute values ----

mod limits {
    pub(crate) const MAX_SEATS: u8 = 9;
    pub(crate) const CODE: usize = 3;
    pub(crate) const HOME: &str = "CDG";
}

const MIN_BUDGET: f64 = 0.5;

/// Attribute values passed through a `macro_rules!` fragment arrive in an invisible group.
macro_rules! booking_with_title {
    ($title:expr, $seats:literal) => {
        #[derive(Elicit, Debug, PartialEq)]
        struct Booking {
            #[elicit(title = $title, minimum = 1, maximum = limits::MAX_SEATS, default = $seats)]
            seats: u8,
            #[elicit(min_length = limits::CODE, max_length = limits::CODE, default = limits::HOME)]
            from: String,
            #[elicit(minimum = MIN_BUDGET, maximum = MIN_BUDGET * 100.0)]
            budget: f64,
        }
    };
}

booking_with_title!("Seats", 2);

#[test]
fn constants_and_macro_fragments_are_attribute_values() {
    let schema = Booking::requested_schema().to_json();
    assert_eq!(
        schema["properties"]["seats"],
        json!({"type": "integer", "title": "Seats", "minimum": 1, "maximum": 9, "default": 2})
    );
    assert_eq!(
        schema["properties"]["from"],
        json!({"type": "string", "minLength": 3, "maxLength": 3, "default": "CDG"})
    );
    assert_eq!(schema["properties"]["budget"], json!({"type": "number", "minimum": 0.5, "maximum": 50.0}));
    let booking = Booking::from_content(&object(json!({"budget": 10}))).unwrap();
    assert_eq!(booking, Booking { seats: 2, from: "CDG".into(), budget: 10.0 });
    let errors = Booking::from_content(&object(json!({"seats": 10, "from": "ORLY", "budget": 51}))).unwrap_err();
    assert_eq!(
        errors.to_string(),
        "`seats` must be at most 9; `from` must be at most 3 characters long; `budget` must be at most 50.0"
    );
}
