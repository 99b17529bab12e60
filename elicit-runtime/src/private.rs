//! Not public API: the paths derived code (and the benchmarks) use, as `::elicit_runtime::__private::..`,
//! and the `__impl_json_schema!` macro it calls (exported at the crate root, as every
//! `#[macro_export]` macro is).

pub use crate::field::rules::{Bound, DefaultValue, FieldRules};
pub use crate::field::select::{Variant, has_variant, has_variants, parse_single_select, single_select_schema};
pub use crate::field::{ElicitEnum, FieldShape, FieldValue, InvalidValue};
pub use crate::schema::{PrimitiveSchema, Property, RequestedSchema, StringFormat};
pub use crate::{ContentErrors, Elicit};
pub use serde_json::{Map, Value};
pub use std::sync::OnceLock;

/// The payload the engine seals in `requestState`: for the benchmarks, which seal and open
/// exactly what the engine does.
#[cfg(feature = "server")]
pub use crate::server::payload::Payload as FlowPayload;

use std::borrow::Cow;
use std::fmt::Display;
use std::marker::PhantomData;

/// The functions of a field's `#[elicit(with = path)]` module, gathered by the derive into a
/// local type: the field type need not implement [`FieldValue`].
pub trait FieldWith {
    /// The field's type.
    type Value;
    /// `path::schema`.
    fn schema(rules: &FieldRules) -> PrimitiveSchema;
    /// `path::parse`.
    fn parse(value: &Value, rules: &FieldRules) -> Result<Self::Value, InvalidValue>;
    /// `path::to_value`.
    fn to_value(value: &Self::Value) -> Option<Value>;
    /// The value when the field is absent: `None` (required), or for an `Option` field,
    /// `Some(None)`.
    fn absent() -> Option<Self::Value> {
        None
    }
}

/// How one field's value is read and written: through its [`FieldValue`] impl, or through a
/// `with` module. One set of helpers below serves both.
pub trait Codec {
    /// The field's type.
    type Value;
    /// Whether the field is listed in `required` under these rules.
    fn required(rules: &FieldRules) -> bool;
    /// As [`FieldValue::schema`].
    fn schema(rules: &FieldRules) -> PrimitiveSchema;
    /// As [`FieldValue::parse`].
    fn parse(value: &Value, rules: &FieldRules) -> Result<Self::Value, InvalidValue>;
    /// As [`FieldValue::absent`].
    fn absent() -> Option<Self::Value>;
    /// The value of the field's declared `default`.
    fn from_default(default: DefaultValue, rules: &FieldRules) -> Result<Self::Value, InvalidValue> {
        Self::parse(&default.to_value(), rules)
    }
    /// As [`FieldValue::to_value`].
    fn to_value(value: &Self::Value) -> Option<Value>;
}

/// A [`FieldValue`] type as a [`Codec`].
pub struct Direct<T>(PhantomData<T>);

impl<T: FieldValue> Codec for Direct<T> {
    type Value = T;
    fn required(rules: &FieldRules) -> bool {
        // A multi-select that allows no choice is answered by leaving it out (attributes.md,
        // "Multi-selects").
        let optional_multi =
            matches!(T::SHAPE, FieldShape::MultiSelect(_)) && rules.min_items.is_none_or(|min| min == 0);
        rules.is_required(T::REQUIRED && !optional_multi)
    }
    fn from_default(default: DefaultValue, rules: &FieldRules) -> Result<T, InvalidValue> {
        T::from_default(default, rules)
    }
    fn schema(rules: &FieldRules) -> PrimitiveSchema {
        T::schema(rules)
    }
    fn parse(value: &Value, rules: &FieldRules) -> Result<T, InvalidValue> {
        T::parse(value, rules)
    }
    fn absent() -> Option<T> {
        T::absent()
    }
    fn to_value(value: &T) -> Option<Value> {
        value.to_value()
    }
}

/// A `with` module as a [`Codec`].
pub struct Via<W>(PhantomData<W>);

impl<W: FieldWith> Codec for Via<W> {
    type Value = W::Value;
    fn required(rules: &FieldRules) -> bool {
        rules.is_required(W::absent().is_none())
    }
    fn schema(rules: &FieldRules) -> PrimitiveSchema {
        W::schema(rules)
    }
    fn parse(value: &Value, rules: &FieldRules) -> Result<W::Value, InvalidValue> {
        W::parse(value, rules)
    }
    fn absent() -> Option<W::Value> {
        W::absent()
    }
    fn to_value(value: &W::Value) -> Option<Value> {
        W::to_value(value)
    }
}

/// The schema of one property.
pub fn property<C: Codec>(name: &'static str, rules: &FieldRules) -> Property {
    let schema = C::schema(rules);
    default_has_its_format(name, &schema);
    Property { name: Cow::Borrowed(name), required: C::required(rules), schema }
}

/// A string `default` must have the field's format, or the form would pre-fill an answer its
/// own parser refuses. The derive checks what constant evaluation can decide; this check, when
/// the schema is first built, has the last word (and sees formats a type implies).
#[allow(
    clippy::panic,
    reason = "a default refused by its own format is a bug in the form's declaration, found on first use"
)]
fn default_has_its_format(name: &str, schema: &PrimitiveSchema) {
    if let PrimitiveSchema::String(string) = schema
        && let (Some(format), Some(default)) = (string.format, &string.default)
        && let Err(reason) = crate::content::check_format(default, format)
    {
        ::core::panic!("property `{name}`: its `default` {default:?} {reason}");
    }
}

/// Fails constant evaluation when a string `default` certainly does not have its field's
/// format, declared in the rules or `implied` by the field's type (see
/// [`crate::content::format_verdict`]).
#[allow(clippy::panic, reason = "runs only at constant evaluation, where a panic is the compile error")]
pub const fn assert_default_format(rules: &FieldRules, implied: Option<StringFormat>) {
    let format = match (rules.format, implied) {
        (Some(format), _) | (None, Some(format)) => format,
        (None, None) => return,
    };
    let Some(DefaultValue::Str(default)) = rules.default else { return };
    if let Some(false) = crate::content::format_verdict(default, format) {
        match format {
            StringFormat::Email => {
                ::core::panic!("`default` is not an e-mail address, as the field's format `email` requires")
            }
            StringFormat::Uri => {
                ::core::panic!("`default` is not an absolute URI, as the field's format `uri` requires")
            }
            StringFormat::Date => {
                ::core::panic!("`default` is not a date (YYYY-MM-DD), as the field's format `date` requires")
            }
            StringFormat::DateTime => ::core::panic!(
                "`default` is not a date and time with offset (YYYY-MM-DDThh:mm:ssZ), as the field's format `date-time` requires"
            ),
        }
    }
}

/// Reads one field of an answer from its value (`None`: the answer lacks the key), recording
/// its failure. An absent field takes its `default`, unless it is declared `required`.
pub fn field<C: Codec>(
    value: Option<&Value>,
    name: &'static str,
    rules: &FieldRules,
    errors: &mut ContentErrors,
) -> Option<C::Value> {
    read::<C>(value, name, rules, errors, None)
}

/// [`field`] for a field whose default is a function (`#[serde(default)]`): `fallback` fills
/// it in when absent.
pub fn field_or<C: Codec>(
    value: Option<&Value>,
    name: &'static str,
    rules: &FieldRules,
    errors: &mut ContentErrors,
    fallback: fn() -> C::Value,
) -> Option<C::Value> {
    read::<C>(value, name, rules, errors, Some(fallback))
}

fn read<C: Codec>(
    value: Option<&Value>,
    name: &'static str,
    rules: &FieldRules,
    errors: &mut ContentErrors,
    fallback: Option<fn() -> C::Value>,
) -> Option<C::Value> {
    let parsed = match (value, rules.required, rules.default, fallback) {
        (Some(value), ..) => C::parse(value, rules),
        (None, Some(true), ..) => {
            errors.push_missing(name);
            return None;
        }
        (None, _, Some(default), _) => C::from_default(default, rules),
        (None, _, None, Some(fallback)) => return Some(fallback()),
        (None, ..) => {
            let absent = if C::required(rules) { None } else { C::absent() };
            if absent.is_none() {
                errors.push_missing(name);
            }
            return absent;
        }
    };
    parsed.map_err(|reason| errors.push(name, reason)).ok()
}

/// Splices the properties of the flattened form `T` into its host's, in place of field
/// `field` of `host`; under an `Option`, none of them is required (all or none). Two
/// properties with one wire name are a bug in the host's declaration, reported when the schema
/// is first built, with both paths named.
#[allow(clippy::panic, reason = "a collision of wire names is a bug in the form's declaration, found on first use")]
pub fn splice<T: Elicit>(properties: &mut Vec<Property>, host: &str, field: &str, optional: bool) {
    for property in &T::requested_schema().properties {
        if properties.iter().any(|p| p.name == property.name) {
            ::core::panic!(
                "`{host}`: property `{}` of the flattened field `{host}.{field}` is also asked by another field of `{host}`; rename one of them",
                property.name
            );
        }
        let mut property = property.clone();
        property.required &= !optional;
        properties.push(property);
    }
}

/// Checks, once the schema of a host with flattened forms is built, that no two properties
/// share a wire name, whatever the order of their fields: for forms implemented by hand, whose
/// names the derive cannot see at compile time.
#[allow(clippy::panic, reason = "a collision of wire names is a bug in the form's declaration, found on first use")]
pub fn unique_properties(properties: &[Property], host: &str) {
    for (i, property) in properties.iter().enumerate() {
        if properties[..i].iter().any(|p| p.name == property.name) {
            ::core::panic!(
                "`{host}`: property `{}` is asked by two fields, one of them flattened in; rename one of them",
                property.name
            );
        }
    }
}

/// Every wire name of a form, in declaration order: its own properties' and each flattened
/// form's, as `parts` lists them (usable in `const` items; `N` is the total).
pub const fn concat_names<const N: usize>(parts: &[&'static [&'static str]]) -> [&'static str; N] {
    let mut out = [""; N];
    let (mut i, mut n) = (0, 0);
    while i < parts.len() {
        let mut j = 0;
        while j < parts[i].len() {
            out[n] = parts[i][j];
            n += 1;
            j += 1;
        }
        i += 1;
    }
    out
}

/// Reads a flattened form from its host's content, recording its failures with the host's.
pub fn flattened<T: Elicit>(content: &Map<String, Value>, errors: &mut ContentErrors) -> Option<T> {
    T::from_content(content).map_err(|inner| errors.extend(inner)).ok()
}

/// Reads an optional flattened form: `None` when none of its properties is in the content,
/// else the whole form (all or none).
pub fn flattened_optional<T: Elicit>(content: &Map<String, Value>, errors: &mut ContentErrors) -> Option<Option<T>> {
    let any = T::requested_schema().properties.iter().any(|p| content.contains_key(p.name.as_ref()));
    if any { flattened(content, errors).map(Some) } else { Some(None) }
}

/// Writes a flattened form's content into its host's.
pub fn put_flattened<T: Elicit>(content: &mut Map<String, Value>, value: &T) {
    content.extend(value.to_content());
}

/// The accessors of a flattened form. Like [`FormField`], one `const` per flattened field
/// holds them, so a type that is not a form is reported once, on the field's type.
pub struct Flattened<T> {
    /// [`Elicit::FIELD_NAMES`] of `T`.
    pub names: &'static [&'static str],
    /// [`splice`] for `T`.
    pub splice: fn(&mut Vec<Property>, &str, &str, bool),
    /// [`flattened`] for `T`.
    pub read: fn(&Map<String, Value>, &mut ContentErrors) -> Option<T>,
    /// [`flattened_optional`] for `T`.
    pub read_optional: fn(&Map<String, Value>, &mut ContentErrors) -> Option<Option<T>>,
    /// [`put_flattened`] for `T`.
    pub write: fn(&mut Map<String, Value>, &T),
}

/// The accessors of the form `T`, in a `const` of the derived code.
pub const fn flattened_form<T: Elicit>() -> Flattened<T> {
    Flattened {
        names: T::FIELD_NAMES,
        splice: splice::<T>,
        read: flattened::<T>,
        read_optional: flattened_optional::<T>,
        write: put_flattened::<T>,
    }
}

/// Fails constant evaluation when a field's rules, some of them constant expressions,
/// contradict themselves or the field's integer type.
#[allow(clippy::panic, reason = "runs only at constant evaluation, where a panic is the compile error")]
pub const fn assert_consistent(rules: &FieldRules, range: Option<(i128, i128)>) {
    if let Some(reason) = rules.inconsistency(range) {
        ::core::panic!("{}", reason);
    }
}

/// `true` when no name is in both lists (usable in `const` checks).
pub const fn disjoint(a: &[&str], b: &[&str]) -> bool {
    let mut i = 0;
    while i < a.len() {
        if has_name(b, a[i]) {
            return false;
        }
        i += 1;
    }
    true
}

const fn has_name(names: &[&str], name: &str) -> bool {
    let mut i = 0;
    while i < names.len() {
        let (a, b) = (names[i].as_bytes(), name.as_bytes());
        if a.len() == b.len() {
            let mut j = 0;
            while j < a.len() && a[j] == b[j] {
                j += 1;
            }
            if j == a.len() {
                return true;
            }
        }
        i += 1;
    }
    false
}

/// Runs a field's `validate` function on its parsed value, recording its refusal under the
/// field's name.
pub fn validate_field<T, E: Display>(
    value: &Option<T>,
    name: &'static str,
    errors: &mut ContentErrors,
    validate: impl FnOnce(&T) -> Result<(), E>,
) {
    if let Some(value) = value
        && let Err(reason) = validate(value)
    {
        errors.push(name, reason.to_string());
    }
}

/// Runs a struct's `validate` function on the value every field check has accepted.
pub fn validate_struct<T>(
    value: T,
    validate: impl FnOnce(&T) -> Result<(), ContentErrors>,
) -> Result<T, ContentErrors> {
    validate(&value).map(|()| value)
}

/// One walk over an answer's `content`, in the order of the form's fields.
///
/// Answers usually list the fields in the form's order (the client builds them from the
/// `requestedSchema`, whose order a `preserve_order` map keeps), so the entry at the cursor is
/// compared with the field asked for: a match costs one string comparison and moves the
/// cursor on. A field a few entries further on is found by looking ahead: the fields of a
/// flattened form sit between a host's fields, and the flattened form's own walk starts at
/// the host's first. Any other order, or keys the form does not have, fall back to a look-up,
/// so the value is always exactly `content.get(name)` (keys are unique).
pub struct Walk<'a> {
    content: &'a Map<String, Value>,
    entries: serde_json::map::Iter<'a>,
    next: Option<(&'a String, &'a Value)>,
}

/// How many entries past the cursor [`Walk::value`] compares before it looks the name up.
const LOOK_AHEAD: usize = 8;

impl<'a> Walk<'a> {
    /// A walk from the first entry.
    pub fn new(content: &'a Map<String, Value>) -> Self {
        let mut entries = content.iter();
        let next = entries.next();
        Walk { content, entries, next }
    }

    /// The value of `name`, as `content.get(name)`.
    pub fn value(&mut self, name: &str) -> Option<&'a Value> {
        if let Some((key, value)) = self.next
            && key == name
        {
            self.next = self.entries.next();
            return Some(value);
        }
        let mut ahead = self.entries.clone();
        for (key, value) in ahead.by_ref().take(LOOK_AHEAD) {
            if key == name {
                self.entries = ahead;
                self.next = self.entries.next();
                return Some(value);
            }
        }
        self.content.get(name)
    }
}

#[cfg(test)]
#[test]
fn a_walk_finds_what_get_finds_in_any_order() {
    #![allow(clippy::unwrap_used, reason = "a failing test should stop loudly")]
    let names = ["a", "b", "c", "d", "zz", ""];
    let long: Vec<String> = (0..20).map(|i| format!("k{i}")).collect();
    let long: Vec<&str> = long.iter().map(String::as_str).collect();
    let orders: [&[&str]; 6] = [
        &["a", "b", "c", "d"],
        &["d", "c", "b", "a"],
        &["x", "a", "y", "c"],
        &[],
        &["b", "a", "", "d"],
        // Past the look-ahead, both ways.
        &long,
    ];
    for order in orders {
        let content: Map<String, Value> =
            order.iter().enumerate().map(|(i, k)| ((*k).to_owned(), Value::from(i))).collect();
        // Asked in the form's order, and in others, every value is the look-up's.
        let far: &[&str] = &["k0", "k12", "k13", "k1", "k19", "k9", "a", "k10"];
        for asked in [&names[..], &["d", "a", "a", "zz", "c"], &["c", "d"], far] {
            let mut walk = Walk::new(&content);
            for name in asked {
                assert_eq!(walk.value(name), content.get(*name), "{order:?} {asked:?} {name}");
            }
        }
    }
}

/// Writes one field of an answer.
pub fn put<C: Codec>(content: &mut Map<String, Value>, name: &'static str, value: &C::Value) {
    if let Some(value) = C::to_value(value) {
        content.insert(name.to_owned(), value);
    }
}

/// [`field_or`]'s signature.
pub type ReadOr<T> = fn(Option<&Value>, &'static str, &FieldRules, &mut ContentErrors, fn() -> T) -> Option<T>;

/// The accessors of one field type. The derive builds one per field with [`form_field`], whose
/// `FieldValue` bound is the only place the field's type is checked: a type that is not a form
/// field is then reported once, on the type, instead of once per use (schema, parse, write).
pub struct FormField<T> {
    /// [`property`] for `T`.
    pub property: fn(&'static str, &FieldRules) -> Property,
    /// [`field`] for `T`.
    pub read: fn(Option<&Value>, &'static str, &FieldRules, &mut ContentErrors) -> Option<T>,
    /// [`field_or`] for `T`.
    pub read_or: ReadOr<T>,
    /// [`put`] for `T`.
    pub write: fn(&mut Map<String, Value>, &'static str, &T),
}

/// The accessors of `T`, in a `const` of the derived code.
pub const fn form_field<T: FieldValue>() -> FormField<T> {
    form_field_via::<Direct<T>>()
}

/// The accessors of a field read and written by a `with` module (or any [`Codec`]).
pub const fn form_field_via<C: Codec>() -> FormField<C::Value> {
    FormField { property: property::<C>, read: field::<C>, read_or: field_or::<C>, write: put::<C> }
}

/// Fails constant evaluation with `misfit`'s reason when a field's rules do not fit its type,
/// or with `inconsistency`'s when they contradict themselves or the type's integer `range`
/// (for the types the derive cannot classify by name: newtypes, aliases, enums).
#[allow(clippy::panic, reason = "runs only at constant evaluation, where a panic is the compile error")]
pub const fn assert_fits(shape: FieldShape, range: Option<(i128, i128)>, rules: &FieldRules) {
    if let Some(reason) = shape.misfit(rules) {
        ::core::panic!("{}", reason);
    }
    if let Some(reason) = rules.inconsistency(range) {
        ::core::panic!("{}", reason);
    }
}

pub use serde;

/// `Deserialize` for `#[elicit(deserialize)]` types: read a JSON object, then run the same
/// validating parser as elicited content, so tool arguments get every check too.
///
/// With `deny_unknown` (serde's `deny_unknown_fields` on the struct), a key that is not a
/// property of the form is refused, as serde refuses it.
pub fn deserialize_validated<'de, T: Elicit, D: serde::Deserializer<'de>>(
    deserializer: D,
    deny_unknown: bool,
) -> Result<T, D::Error> {
    let mut content = <Map<String, Value> as serde::Deserialize>::deserialize(deserializer)?;
    if deny_unknown && let Some(key) = content.keys().find(|key| T::requested_schema().property(key).is_none()) {
        return Err(<D::Error as serde::de::Error>::unknown_field(key, T::FIELD_NAMES));
    }
    // Models send `"limit": null` for an argument they leave out: in tool arguments a null
    // is an absent argument (attributes.md, "Defaults and nulls").
    content.retain(|_, value| !value.is_null());
    T::from_content(&content).map_err(<D::Error as serde::de::Error>::custom)
}

/// The `schemars` schema of an `Elicit` type: exactly its `requestedSchema`.
#[cfg(feature = "schemars")]
pub fn json_schema_of<T: Elicit>() -> schemars::Schema {
    match T::requested_schema().to_json() {
        Value::Object(object) => schemars::Schema::from(object),
        _ => schemars::Schema::default(),
    }
}

#[cfg(feature = "schemars")]
pub use schemars;

/// Statically checks that a field type can be a form field, with the error on the type.
pub const fn assert_field<T: FieldValue>() {}

/// Implements `schemars::JsonSchema` for a derived type (the runtime's `schemars` feature is on).
#[cfg(feature = "schemars")]
#[doc(hidden)]
#[macro_export]
macro_rules! __impl_json_schema {
    ($ty:ident, $name:expr) => {
        #[automatically_derived]
        impl $crate::__private::schemars::JsonSchema for $ty {
            fn schema_name() -> ::std::borrow::Cow<'static, ::core::primitive::str> {
                ::std::borrow::Cow::Borrowed($name)
            }

            fn json_schema(
                _: &mut $crate::__private::schemars::SchemaGenerator,
            ) -> $crate::__private::schemars::Schema {
                $crate::__private::json_schema_of::<$ty>()
            }

            // Inline: the schema is the whole form, never a `$ref` into `$defs`.
            fn inline_schema() -> bool {
                true
            }
        }
    };
}

/// `#[elicit(json_schema)]` without the runtime's `schemars` feature: a clear compile error.
#[cfg(not(feature = "schemars"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __impl_json_schema {
    ($($tokens:tt)*) => {
        ::core::compile_error!("`#[elicit(json_schema)]` needs elicit-runtime's `schemars` feature");
    };
}
