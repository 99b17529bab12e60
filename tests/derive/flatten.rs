//! Flattened forms: no arrangement of flattened groups and own fields, in any declaration order
//! and at any depth, puts one property name on the wire twice. Collisions the derive can see are
//! compile errors (`tests/compile_fail/cases/flatten_*`); a form implemented by hand, whose names
//! it cannot see, is caught when its host's schema is first built, in either order.

use std::collections::BTreeSet;
use std::fmt::Debug;

use elicit_runtime::Elicit;
use elicit_runtime::content::ContentErrors;
use elicit_runtime::schema::{PrimitiveSchema, Property, RequestedSchema, StringSchema};
use serde_json::{Map, Value};

// ---- the corpus: every arrangement of one own field and two flattened groups ----

#[derive(Elicit, Debug, PartialEq)]
struct Place {
    city: String,
    postcode: Option<String>,
}

#[derive(Elicit, Debug, PartialEq)]
struct Contact {
    email: String,
    phone: Option<String>,
}

/// A group that flattens another: its names reach two levels down.
#[derive(Elicit, Debug, PartialEq)]
struct Stay {
    #[elicit(flatten)]
    place: Place,
    note: String,
}

macro_rules! host {
    ($name:ident { $($fields:tt)* }) => {
        #[derive(Elicit, Debug, PartialEq)]
        struct $name { $($fields)* }
    };
}

/// The six orders of three members, one host struct each.
macro_rules! every_order {
    ($n1:ident $n2:ident $n3:ident $n4:ident $n5:ident $n6:ident; ($($a:tt)*) ($($b:tt)*) ($($c:tt)*)) => {
        host!($n1 { $($a)* $($b)* $($c)* });
        host!($n2 { $($a)* $($c)* $($b)* });
        host!($n3 { $($b)* $($a)* $($c)* });
        host!($n4 { $($b)* $($c)* $($a)* });
        host!($n5 { $($c)* $($a)* $($b)* });
        host!($n6 { $($c)* $($b)* $($a)* });
    };
}

every_order!(P1 P2 P3 P4 P5 P6;
    (name: String,)
    (#[elicit(flatten)] contact: Contact,)
    (#[elicit(flatten)] stay: Stay,));
every_order!(O1 O2 O3 O4 O5 O6;
    (name: String,)
    (#[elicit(flatten)] contact: Option<Contact>,)
    (#[elicit(flatten)] stay: Option<Stay>,));

/// The schema of `T` names each property once, the six the corpus holds; an answer to every
/// property parses, and writes back the same content.
fn arrangement_holds<T: Elicit + Debug>() {
    let names: Vec<&str> = T::requested_schema().properties.iter().map(|p| p.name.as_ref()).collect();
    let unique: BTreeSet<&str> = names.iter().copied().collect();
    assert_eq!(unique.len(), names.len(), "a duplicate property: {names:?}");
    assert_eq!(unique, BTreeSet::from(["name", "email", "phone", "city", "postcode", "note"]), "{names:?}");
    let json = T::requested_schema().to_json();
    let required = json["required"].as_array().map_or(0, Vec::len);
    let listed: BTreeSet<&str> = json["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    assert_eq!(listed.len(), required, "a duplicate in `required`: {json}");
    let content: Map<String, Value> = names.iter().map(|n| ((*n).to_owned(), Value::from(format!("v-{n}")))).collect();
    let value = T::from_content(&content).unwrap_or_else(|e| panic!("{e} in {names:?}"));
    assert_eq!(value.to_content(), content, "{value:?}");
    // The derive's compile-time names are the schema's, in its order.
    assert_eq!(T::FIELD_NAMES, names.as_slice());
}

#[test]
fn every_flatten_arrangement_of_the_corpus_has_unique_property_names() {
    arrangement_holds::<P1>();
    arrangement_holds::<P2>();
    arrangement_holds::<P3>();
    arrangement_holds::<P4>();
    arrangement_holds::<P5>();
    arrangement_holds::<P6>();
    arrangement_holds::<O1>();
    arrangement_holds::<O2>();
    arrangement_holds::<O3>();
    arrangement_holds::<O4>();
    arrangement_holds::<O5>();
    arrangement_holds::<O6>();
}

// ---- a form implemented by hand: its names are known only at run time ----

/// A form with one property, `city`, implemented by hand: `FIELD_NAMES` is empty, so a host's
/// derive cannot compare its names at compile time.
#[derive(Debug)]
struct HandMade;

impl Elicit for HandMade {
    const MESSAGE: &'static str = "By hand";

    fn requested_schema() -> &'static RequestedSchema {
        static SCHEMA: std::sync::OnceLock<RequestedSchema> = std::sync::OnceLock::new();
        SCHEMA.get_or_init(|| {
            RequestedSchema::new(vec![Property::required("city", PrimitiveSchema::String(StringSchema::default()))])
        })
    }

    fn from_content(_: &Map<String, Value>) -> Result<Self, ContentErrors> {
        Ok(HandMade)
    }

    fn to_content(&self) -> Map<String, Value> {
        Map::new()
    }
}

#[derive(Elicit, Debug)]
struct HandMadeFirst {
    #[elicit(flatten)]
    hand: HandMade,
    city: String,
}

#[derive(Elicit, Debug)]
struct HandMadeLast {
    city: String,
    #[elicit(flatten)]
    hand: HandMade,
}

fn schema_panic(build: fn() -> &'static RequestedSchema) -> String {
    let panic = std::panic::catch_unwind(build).expect_err("a duplicate property name must not reach the wire");
    panic.downcast_ref::<String>().cloned().unwrap_or_default()
}

#[test]
fn a_collision_with_a_hand_made_form_is_named_when_the_schema_is_built_in_either_order() {
    assert_eq!(
        schema_panic(HandMadeFirst::requested_schema),
        "`HandMadeFirst`: property `city` is asked by two fields, one of them flattened in; rename one of them"
    );
    assert_eq!(
        schema_panic(HandMadeLast::requested_schema),
        "`HandMadeLast`: property `city` of the flattened field `HandMadeLast.hand` is also asked by another field of `HandMadeLast`; rename one of them"
    );
}
