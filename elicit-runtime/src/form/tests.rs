#![allow(clippy::unwrap_used, clippy::panic, reason = "a failing test should stop loudly")]

use std::borrow::Cow;

use serde_json::{Map, Number, Value, json};

use super::*;
use crate::content::ContentErrors;
use crate::schema::{
    BooleanSchema, EnumOption, MultiSelectSchema, NumberSchema, PrimitiveSchema, Property, RequestedSchema,
    SingleSelectSchema, StringFormat, StringSchema,
};

const HOSTILE: &str = "\"><script>alert(1)</script><img src=x onerror='x'>&amp;";

fn option(value: &'static str, title: Option<&'static str>) -> EnumOption {
    EnumOption { value: Cow::Borrowed(value), title: title.map(Cow::Borrowed) }
}

fn schema() -> RequestedSchema {
    RequestedSchema::new(vec![
        Property::required(
            "name",
            PrimitiveSchema::String(StringSchema {
                title: Some("Name".into()),
                description: Some("Your full name".into()),
                min_length: Some(1),
                max_length: Some(64),
                ..StringSchema::default()
            }),
        ),
        Property::required(
            "email",
            PrimitiveSchema::String(StringSchema { format: Some(StringFormat::Email), ..StringSchema::default() }),
        ),
        Property::optional(
            "arrive",
            PrimitiveSchema::String(StringSchema { format: Some(StringFormat::DateTime), ..StringSchema::default() }),
        ),
        Property::required(
            "travellers",
            PrimitiveSchema::Number(NumberSchema {
                integer: true,
                minimum: Some(Number::from(1)),
                maximum: Some(Number::from(9)),
                default: Some(Number::from(1)),
                ..NumberSchema::default()
            }),
        ),
        Property::optional(
            "alerts",
            PrimitiveSchema::Boolean(BooleanSchema { default: Some(true), ..Default::default() }),
        ),
        Property::required(
            "cabin",
            PrimitiveSchema::SingleSelect(SingleSelectSchema {
                options: vec![option("economy", Some("Economy")), option("business", Some("Business"))],
                titled: true,
                default: Some("economy".into()),
                ..Default::default()
            }),
        ),
        Property::required(
            "meals",
            PrimitiveSchema::MultiSelect(MultiSelectSchema {
                options: vec![option("veg", None), option("fish", None), option("kosher", None)],
                max_items: Some(2),
                ..Default::default()
            }),
        ),
    ])
}

fn render(schema: &RequestedSchema, values: &FormValues, errors: Option<&ContentErrors>) -> String {
    render_form(&FormView::new("Book a trip", schema, values, "/form/abc").errors(errors).token(Some("tok")))
}

#[test]
fn every_control_has_a_label_its_constraints_and_its_default() {
    let schema = schema();
    let html = render(&schema, &FormValues::defaults(&schema), None);
    for index in 0..3 {
        assert!(html.contains(&format!("<label for=\"field-{index}\">")), "label of field {index}: {html}");
    }
    assert!(html.contains(
        r#"<input id="field-0" name="f.name" type="text" minlength="1" maxlength="64" required aria-describedby="field-0-hint" value="">"#
    ), "{html}");
    assert!(html.contains(r#"<p class="hint" id="field-0-hint">Your full name</p>"#));
    assert!(html.contains(r#"name="f.email" type="email" required"#));
    assert!(html.contains(r#"name="f.arrive" type="datetime-local""#));
    assert!(html.contains(r#"type="number" step="1" min="1" max="9" required value="1""#), "{html}");
    assert!(html.contains(r#"name="f.alerts" value="true" checked>"#), "the default is ticked: {html}");
    assert!(html.contains(r#"<option value="economy" selected>Economy</option>"#));
    assert!(!html.contains("Choose…"), "a select with a default needs no empty choice");
    assert!(html.contains(r#"<fieldset id="field-6"><legend>meals"#));
    assert!(html.contains(r#"<input type="checkbox" id="field-6-0" name="f.meals" value="veg">"#));
    assert!(html.contains(r#"<input type="hidden" name="_token" value="tok">"#));
    assert!(html.contains(r#"value="decline" formnovalidate>"#));
    assert!(html.contains(r#"<meta name="viewport""#), "readable on a phone");
    assert!(!html.contains("<script"), "no script");
}

#[test]
fn author_and_user_strings_are_escaped_everywhere() {
    let hostile = Cow::Borrowed(HOSTILE);
    let schema = RequestedSchema::new(vec![
        Property::required(
            HOSTILE,
            PrimitiveSchema::String(StringSchema {
                title: Some(hostile.clone()),
                description: Some(hostile.clone()),
                ..StringSchema::default()
            }),
        ),
        Property::required(
            "pick",
            PrimitiveSchema::SingleSelect(SingleSelectSchema {
                title: Some(hostile.clone()),
                options: vec![EnumOption { value: hostile.clone(), title: Some(hostile.clone()) }],
                titled: true,
                ..Default::default()
            }),
        ),
        Property::required(
            "many",
            PrimitiveSchema::MultiSelect(MultiSelectSchema {
                options: vec![EnumOption { value: hostile.clone(), title: None }],
                ..Default::default()
            }),
        ),
    ]);
    let mut content = Map::new();
    content.insert(HOSTILE.to_owned(), json!(HOSTILE));
    let values = FormValues::from_content(&schema, &content);
    let mut errors = ContentErrors::new();
    errors.push(HOSTILE, HOSTILE);
    let html =
        render_form(&FormView::new(HOSTILE, &schema, &values, HOSTILE).errors(Some(&errors)).token(Some(HOSTILE)));
    assert!(!html.contains("<script"), "{html}");
    assert!(!html.contains("<img"), "{html}");
    assert!(!html.contains("'x'"), "{html}");
    assert!(
        html.contains("&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=&#39;x&#39;&gt;&amp;amp;")
    );
    let notice = render_notice(&Notice { title: HOSTILE, text: HOSTILE, id: HOSTILE });
    assert!(!notice.contains("<script") && !notice.contains("<img"), "{notice}");
}

#[test]
fn errors_are_shown_beside_their_fields_with_the_values_kept() {
    let schema = schema();
    let posted = parse_post(&schema, b"f.name=&f.email=not-an-email&f.travellers=abc&_action=accept");
    let mut errors = ContentErrors::new();
    errors.push_missing("name");
    errors.push("email", "must be an e-mail address");
    let html = render(&schema, &posted.values(&schema), Some(&errors));
    assert!(html.contains(r#"aria-describedby="field-0-hint field-0-error" aria-invalid="true""#), "{html}");
    assert!(html.contains(r#"<p class="error" id="field-0-error">is required</p>"#));
    assert!(html.contains(r#"<p class="error" id="field-1-error">must be an e-mail address</p>"#));
    assert!(html.contains(r#"aria-describedby="field-1-error" aria-invalid="true" value="not-an-email">"#), "{html}");
    assert!(html.contains(r#"value="abc">"#), "a number the parser refused is shown as typed");
    assert!(html.contains(r#"<div class="errors" role="alert" id="errors">"#));
    assert!(!html.contains(r#"value="true" checked"#), "an unticked box stays unticked, whatever the default");
}

#[test]
fn a_post_reads_as_the_content_a_form_mode_client_sends() {
    let schema = schema();
    let body = b"_token=t%2B1&f.name=Ada+L%C3%B6we&f.email=ada%40example.com&f.arrive=2026-07-28T09%3A30\
&f.travellers=3&f.alerts=true&f.cabin=business&f.meals=veg&f.meals=fish&f.unknown=1&_action=accept";
    let posted = parse_post(&schema, body);
    assert_eq!(posted.action, Some(PageAction::Accept));
    assert_eq!(posted.token.as_deref(), Some("t+1"));
    assert_eq!(
        Value::Object(posted.content),
        json!({"name": "Ada Löwe", "email": "ada@example.com", "arrive": "2026-07-28T09:30:00Z", "travellers": 3,
               "alerts": true, "cabin": "business", "meals": ["veg", "fish"]})
    );
}

#[test]
fn empty_and_unreadable_fields_are_left_for_the_parser() {
    let schema = schema();
    let posted = parse_post(&schema, b"f.name=&f.travellers=2.5x&f.name=second&_action=decline&_action=accept");
    assert_eq!(posted.action, Some(PageAction::Decline), "the first button named wins");
    assert_eq!(
        Value::Object(posted.content),
        json!({"travellers": "2.5x", "alerts": false, "meals": []}),
        "an empty text is absent, a bad number is text, an unticked box is false, no meal is none"
    );
    // Whatever the bytes, the parser answers.
    for body in [&b""[..], b"%", b"&&&==", b"_action=%FF%FE", b"f.=1", &[0xff, 0xfe, b'=', 0x80]] {
        let posted = parse_post(&schema, body);
        assert_eq!(posted.action, None);
    }
}

#[test]
fn date_times_round_trip_through_the_local_control() {
    let schema = schema();
    let mut content = Map::new();
    content.insert("arrive".into(), json!("2026-07-28T09:30:05Z"));
    let html = render(&schema, &FormValues::from_content(&schema, &content), None);
    assert!(html.contains(r#"value="2026-07-28T09:30:05">"#), "{html}");
    let posted = parse_post(&schema, b"f.arrive=2026-07-28T09%3A30%3A05");
    assert_eq!(posted.content["arrive"], "2026-07-28T09:30:05Z");
    let posted = parse_post(&schema, b"f.arrive=2026-07-28T09%3A30%3A05%2B02%3A00");
    assert_eq!(posted.content["arrive"], "2026-07-28T09:30:05+02:00", "a full date-time is kept");
}

#[test]
fn the_policy_allows_the_pages_style_by_hash_and_nothing_else() {
    let policy = content_security_policy();
    assert!(policy.starts_with("default-src 'none'; style-src 'sha256-"), "{policy}");
    assert!(policy.contains("frame-ancestors 'none'"));
    assert!(!policy.contains("unsafe-inline") && !policy.contains("script-src"));
}
