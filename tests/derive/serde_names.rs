//! The derive beside serde's: the form asks for the names serde reads, and what the form's parser
//! builds, serde reads back (and the other way round), for every `rename_all` rule, on fields and
//! on variants.

#![allow(clippy::unwrap_used, clippy::panic, reason = "a failing test should stop loudly")]

use elicit_runtime::Elicit;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// One struct and one enum per rule, both renamed by serde alone; the rule arrives through a
/// `macro_rules!` fragment, wrapped in the invisible group the derive must look through.
macro_rules! rule_case {
    ($module:ident, $rule:expr) => {
        mod $module {
            use super::*;

            #[derive(Elicit, Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
            #[serde(rename_all = $rule)]
            pub(crate) enum SeatClass {
                PremiumEconomy,
                FirstClass,
            }

            #[derive(Elicit, Serialize, Deserialize, Debug, Clone, PartialEq)]
            #[serde(rename_all = $rule)]
            pub(crate) struct Booking {
                pub(crate) given_name: String,
                pub(crate) seat_class: SeatClass,
                pub(crate) window_seat: Option<bool>,
            }

            pub(crate) fn sample() -> Booking {
                Booking { given_name: "Ada".into(), seat_class: SeatClass::FirstClass, window_seat: Some(true) }
            }
        }
    };
}

rule_case!(lower, "lowercase");
rule_case!(upper, "UPPERCASE");
rule_case!(pascal, "PascalCase");
rule_case!(camel, "camelCase");
rule_case!(snake, "snake_case");
rule_case!(screaming_snake, "SCREAMING_SNAKE_CASE");
rule_case!(kebab, "kebab-case");
rule_case!(screaming_kebab, "SCREAMING-KEBAB-CASE");

/// Checks one rule: the schema's property names and choices are serde's, and values cross both
/// ways.
fn round_trip<T>(sample: T, expected_fields: [&str; 3], expected_variants: [&str; 2])
where
    T: Elicit + Serialize + for<'de> Deserialize<'de> + PartialEq + std::fmt::Debug + Clone,
{
    let schema = T::requested_schema().to_json();
    let names: Vec<&str> = schema["properties"].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(names, expected_fields);
    let serde_content = match serde_json::to_value(&sample).unwrap() {
        Value::Object(map) => map,
        other => panic!("{other}"),
    };
    let serde_names: Vec<&str> = serde_content.keys().map(String::as_str).collect();
    assert_eq!(serde_names, expected_fields, "the form asks for the names serde writes");
    let choices = &schema["properties"][expected_fields[1]]["enum"];
    assert_eq!(choices, &json!(expected_variants));
    // What serde writes, the form's parser reads; what the form writes, serde reads.
    assert_eq!(T::from_content(&serde_content).unwrap(), sample);
    let form_content = sample.to_content();
    assert_eq!(serde_json::from_value::<T>(Value::Object(form_content)).unwrap(), sample);
}

#[test]
fn every_rename_all_rule_agrees_with_serde() {
    round_trip(lower::sample(), ["given_name", "seat_class", "window_seat"], ["premiumeconomy", "firstclass"]);
    round_trip(upper::sample(), ["GIVEN_NAME", "SEAT_CLASS", "WINDOW_SEAT"], ["PREMIUMECONOMY", "FIRSTCLASS"]);
    round_trip(pascal::sample(), ["GivenName", "SeatClass", "WindowSeat"], ["PremiumEconomy", "FirstClass"]);
    round_trip(camel::sample(), ["givenName", "seatClass", "windowSeat"], ["premiumEconomy", "firstClass"]);
    round_trip(snake::sample(), ["given_name", "seat_class", "window_seat"], ["premium_economy", "first_class"]);
    round_trip(
        screaming_snake::sample(),
        ["GIVEN_NAME", "SEAT_CLASS", "WINDOW_SEAT"],
        ["PREMIUM_ECONOMY", "FIRST_CLASS"],
    );
    round_trip(kebab::sample(), ["given-name", "seat-class", "window-seat"], ["premium-economy", "first-class"]);
    round_trip(
        screaming_kebab::sample(),
        ["GIVEN-NAME", "SEAT-CLASS", "WINDOW-SEAT"],
        ["PREMIUM-ECONOMY", "FIRST-CLASS"],
    );
}

/// `rename`, `default`, `skip` and `alias` from serde; `rename` given by both, agreeing.
#[derive(Elicit, Serialize, Deserialize, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
struct Search {
    #[serde(rename = "q")]
    query: String,
    #[serde(default)]
    page_size: u32,
    #[serde(default = "first_page")]
    page: u32,
    #[serde(skip)]
    cursor: Option<String>,
    #[serde(alias = "sort")]
    #[elicit(rename = "order")]
    #[serde(rename = "order")]
    sort_order: Option<String>,
}

fn first_page() -> u32 {
    1
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

#[test]
fn serde_names_defaults_and_skips_are_honoured() {
    let schema = Search::requested_schema().to_json();
    assert_eq!(
        schema,
        json!({
            "type": "object",
            "properties": {
                "q": {"type": "string"},
                "pageSize": {"type": "integer", "minimum": 0, "maximum": u32::MAX},
                "page": {"type": "integer", "minimum": 0, "maximum": u32::MAX},
                "order": {"type": "string"},
            },
            "required": ["q"],
        })
    );
    // Absent fields are filled in as serde fills them.
    let content = object(json!({"q": "rust"}));
    let parsed = Search::from_content(&content).unwrap();
    let by_serde: Search = serde_json::from_value(Value::Object(content)).unwrap();
    assert_eq!(parsed, by_serde);
    assert_eq!(parsed, Search { query: "rust".into(), page_size: 0, page: 1, cursor: None, sort_order: None });
    // The skipped field is not asked and not written.
    let written = Search { cursor: Some("c".into()), ..parsed }.to_content();
    assert!(!written.contains_key("cursor"), "{written:?}");
}
