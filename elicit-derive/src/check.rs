//! Phase 3: rules that involve several attributes, a field's type, or several fields.
//!
//! One function per rule, each saying why the rule exists; [`check_field`] lists a field's rules
//! in the order their errors are reported.

use std::collections::HashSet;

use proc_macro2::Span;

use crate::ast::{Enum, Field, Struct};
use crate::attr::{self, DefaultLit, FieldAttrs, Number, Spanned};
use crate::ctxt::Ctxt;
use crate::ty::Kind;

pub(crate) fn check_struct(cx: &Ctxt, input: &Struct<'_>) {
    for field in &input.body {
        if field.skip {
            bare(cx, field, "a skipped field: it is not part of the form");
        } else if field.flatten.is_some() {
            bare(cx, field, "a flattened field: its own form's fields carry their attributes");
        } else {
            check_field(cx, field);
        }
    }
    let asked = input.body.iter().filter(|f| !f.skip && f.flatten.is_none());
    unique_names(cx, asked.map(|f| (f.wire.as_str(), f.wire_span)), "property");
}

/// A skipped or flattened field is not itself a question: an attribute that shapes one would be
/// silently ignored.
fn bare(cx: &Ctxt, field: &Field<'_>, what: &str) {
    let a = &field.attrs;
    let keys = [
        (attr::RENAME, a.rename.as_ref().map(|k| k.key)),
        (attr::TITLE, a.title.as_ref().map(|k| k.key)),
        (attr::DESCRIPTION, a.description.as_ref().map(|k| k.key)),
        (attr::DEFAULT, a.default.as_ref().map(|k| k.key)),
        (attr::MIN_LENGTH, a.min_length.as_ref().map(|k| k.key)),
        (attr::MAX_LENGTH, a.max_length.as_ref().map(|k| k.key)),
        (attr::MINIMUM, a.minimum.as_ref().map(|k| k.key)),
        (attr::MAXIMUM, a.maximum.as_ref().map(|k| k.key)),
        (attr::MIN_ITEMS, a.min_items.as_ref().map(|k| k.key)),
        (attr::MAX_ITEMS, a.max_items.as_ref().map(|k| k.key)),
        (attr::FORMAT, a.format.as_ref().map(|k| k.key)),
        (attr::REQUIRED, a.required.as_ref().map(|k| k.key)),
        (attr::VALIDATE, a.validate.as_ref().map(|k| k.key)),
        (attr::WITH, a.with.as_ref().map(|k| k.key)),
        (attr::FLATTEN, a.flatten.as_ref().filter(|_| field.skip).map(|k| k.key)),
    ];
    for (key, span) in keys {
        if let Some(span) = span {
            cx.error(span, format!("`{key}` has no effect on {what}"));
        }
    }
}

pub(crate) fn check_enum(cx: &Ctxt, input: &Enum<'_>) {
    unique_names(cx, input.body.iter().map(|v| (v.wire.as_str(), v.wire_span)), "variant value");
}

/// Two properties (or variant values) with one wire name would make answers ambiguous.
fn unique_names<'a>(cx: &Ctxt, names: impl Iterator<Item = (&'a str, Span)>, what: &str) {
    let mut seen = HashSet::new();
    for (name, span) in names {
        if !seen.insert(name) {
            cx.error(
                span,
                format!("duplicate {what} `{name}` after renaming: every {what} must be unique on the wire"),
            );
        }
    }
}

/// Reports `key` used on a field whose kind it does not apply to.
fn applies_to<T>(cx: &Ctxt, slot: &Option<Spanned<T>>, key: &str, ok: bool, target: &str, kind: &Kind) {
    if let (Some(attr), false) = (slot, ok) {
        cx.error(attr.key, format!("`{key}` applies to {target}, but this is {}", kind.describe()));
    }
}

fn ordered<T: Copy + PartialOrd + std::fmt::Display>(
    cx: &Ctxt,
    min: &Option<Spanned<T>>,
    max: &Option<Spanned<T>>,
    min_key: &str,
    max_key: &str,
) {
    if let (Some(min), Some(max)) = (min, max)
        && min.value > max.value
    {
        cx.error_spanned_by(
            &min.tokens,
            format!("`{min_key}` ({}) is greater than `{max_key}` ({})", min.value, max.value),
        );
    }
}

fn number_text(n: Number) -> String {
    match n {
        Number::Int(i) => i.to_string(),
        Number::Float(f) => f.to_string(),
    }
}

/// The range a numeric field accepts, in Rust's range syntax, for "outside the range" messages.
fn range_text(low: Option<Number>, high: Option<Number>) -> String {
    let low = low.map(number_text).unwrap_or_default();
    match high {
        Some(high) => format!("{low}..={}", number_text(high)),
        None => format!("{low}.."),
    }
}

/// "1 character", "3 characters".
fn count_text(count: u64, noun: &str) -> String {
    if count == 1 { format!("1 {noun}") } else { format!("{count} {noun}s") }
}

/// Reports a count (of characters or of items) in a `default` that its bounds refuse.
fn check_count(
    cx: &Ctxt,
    default: &Spanned<DefaultLit>,
    count: u64,
    noun: &str,
    (min, max): (&Option<Spanned<u64>>, &Option<Spanned<u64>>),
    (min_key, max_key): (&str, &str),
) {
    let verb = if noun == "character" { "is" } else { "has" };
    let long = if noun == "character" { " long" } else { "" };
    if let Some(min) = min.as_ref().filter(|m| count < m.value) {
        cx.error_spanned_by(
            &default.tokens,
            format!("`default` {verb} {}{long}, but `{min_key}` is {}", count_text(count, noun), min.value),
        );
    }
    if let Some(max) = max.as_ref().filter(|m| count > m.value) {
        cx.error_spanned_by(
            &default.tokens,
            format!("`default` {verb} {}{long}, but `{max_key}` is {}", count_text(count, noun), max.value),
        );
    }
}

/// Every rule on one field, in the order its errors are reported.
fn check_field(cx: &Ctxt, field: &Field<'_>) {
    // A `with` module decides what its rules mean.
    if field.attrs.with.is_some() {
        return;
    }
    let Some(ft) = &field.field_type else { return };
    let (a, kind) = (&field.attrs, &ft.kind);
    constants_fit(cx, a, kind);
    keys_fit_the_kind(cx, a, kind);
    format_fits_the_type(cx, a, kind);
    bounds_are_ordered(cx, a);
    integer_bounds_fit_the_type(cx, a, kind);
    default_fits_the_field(cx, a, kind);
}

/// A key given as a constant expression follows the same rules as its literal form; the values
/// themselves are checked at constant evaluation (expand).
fn constants_fit(cx: &Ctxt, a: &FieldAttrs, kind: &Kind) {
    for c in &a.consts {
        let literal_too = match c.key {
            attr::DEFAULT => a.default.is_some(),
            attr::MIN_LENGTH => a.min_length.is_some(),
            attr::MAX_LENGTH => a.max_length.is_some(),
            attr::MINIMUM => a.minimum.is_some(),
            attr::MAXIMUM => a.maximum.is_some(),
            attr::MIN_ITEMS => a.min_items.is_some(),
            _ => a.max_items.is_some(),
        };
        if literal_too {
            cx.error(c.key_span, format!("duplicate elicit attribute `{}`; each key may be given once", c.key));
        }
        let (fits, target) = match c.key {
            attr::MIN_LENGTH | attr::MAX_LENGTH => (matches!(kind, Kind::String { .. }), "string fields"),
            attr::MINIMUM | attr::MAXIMUM => {
                (matches!(kind, Kind::Integer { .. } | Kind::Float { .. }), "integer and number fields")
            }
            attr::MIN_ITEMS | attr::MAX_ITEMS => (matches!(kind, Kind::MultiSelect { .. }), "multi-select fields"),
            _ => (!matches!(kind, Kind::Other), "fields of a type the derive knows by name"),
        };
        if !fits && (c.key == attr::DEFAULT || !matches!(kind, Kind::Other)) {
            cx.error(c.key_span, format!("`{}` applies to {target}, but this is {}", c.key, kind.describe()));
        }
    }
}

/// Length bounds belong to strings, numeric bounds to integers and numbers, item counts to
/// multi-selects: a key on another kind would be silently ignored by the runtime.
fn keys_fit_the_kind(cx: &Ctxt, a: &FieldAttrs, kind: &Kind) {
    // Checked at constant evaluation against the type's `FieldValue::SHAPE` (expand).
    if matches!(kind, Kind::Other) {
        return;
    }
    let is_string = matches!(kind, Kind::String { .. });
    let is_number = matches!(kind, Kind::Integer { .. } | Kind::Float { .. });
    let is_multi = matches!(kind, Kind::MultiSelect { .. });
    applies_to(cx, &a.min_length, attr::MIN_LENGTH, is_string, "string fields", kind);
    applies_to(cx, &a.max_length, attr::MAX_LENGTH, is_string, "string fields", kind);
    applies_to(cx, &a.minimum, attr::MINIMUM, is_number, "integer and number fields", kind);
    applies_to(cx, &a.maximum, attr::MAXIMUM, is_number, "integer and number fields", kind);
    applies_to(
        cx,
        &a.min_items,
        attr::MIN_ITEMS,
        is_multi,
        "multi-select fields (a `Vec` or set of a unit enum)",
        kind,
    );
    applies_to(
        cx,
        &a.max_items,
        attr::MAX_ITEMS,
        is_multi,
        "multi-select fields (a `Vec` or set of a unit enum)",
        kind,
    );
}

/// `format` applies to a plain `String`; a type that implies a format (`Email`) already has one.
fn format_fits_the_type(cx: &Ctxt, a: &FieldAttrs, kind: &Kind) {
    let Some(format) = &a.format else { return };
    match kind {
        Kind::String { plain: true, .. } | Kind::Other => {}
        Kind::String { format: Some(implied), .. } => cx.error(
            format.key,
            format!("this field's type already has format `{implied}`; `format` applies to `String` fields"),
        ),
        other => cx.error(format.key, format!("`format` applies to string fields, but this is {}", other.describe())),
    }
}

/// A lower bound above its upper bound would make a field no answer can satisfy.
fn bounds_are_ordered(cx: &Ctxt, a: &FieldAttrs) {
    ordered(cx, &a.min_length, &a.max_length, attr::MIN_LENGTH, attr::MAX_LENGTH);
    ordered(cx, &a.min_items, &a.max_items, attr::MIN_ITEMS, attr::MAX_ITEMS);
    if let (Some(min), Some(max)) = (&a.minimum, &a.maximum)
        && min.value.as_f64() > max.value.as_f64()
    {
        cx.error_spanned_by(
            &min.tokens,
            format!("`minimum` ({}) is greater than `maximum` ({})", number_text(min.value), number_text(max.value)),
        );
    }
}

/// Integer bounds must be integers inside the Rust type's range: a wider bound would promise the
/// client values the parser must then refuse.
fn integer_bounds_fit_the_type(cx: &Ctxt, a: &FieldAttrs, kind: &Kind) {
    let Kind::Integer { name, min, max } = kind else { return };
    for bound in [&a.minimum, &a.maximum].into_iter().flatten() {
        match bound.value {
            Number::Int(i) if i < *min || i > *max => cx.error_spanned_by(
                &bound.tokens,
                format!("{i} is outside the range of `{name}`; allowed: {min}..={max}"),
            ),
            Number::Int(_) => {}
            Number::Float(_) => cx.error_spanned_by(
                &bound.tokens,
                format!("bounds of an integer field (`{name}`) must be integer literals"),
            ),
        }
    }
}

/// The range a numeric field accepts: its declared bounds, else its Rust type's range.
fn accepted_range(a: &FieldAttrs, kind: &Kind) -> (Option<Number>, Option<Number>) {
    let (mut low, mut high) = match kind {
        Kind::Integer { min, max, .. } => (Some(Number::Int(*min)), Some(Number::Int(*max))),
        _ => (None, None),
    };
    if let Some(min) = &a.minimum {
        low = Some(min.value);
    }
    if let Some(max) = &a.maximum {
        high = Some(max.value);
    }
    (low, high)
}

/// A `default` is a literal of the field's kind that the field's own rules accept: the form must
/// not offer a value its parser refuses.
fn default_fits_the_field(cx: &Ctxt, a: &FieldAttrs, kind: &Kind) {
    let Some(default) = &a.default else { return };
    let mismatch = |expected: &str| {
        cx.error_spanned_by(
            &default.tokens,
            format!("`default` of {} must be {expected}, found {}", kind.describe(), default.value.describe()),
        );
    };
    match (kind, &default.value) {
        // Which variants exist is known only to the enum's own derive: expand checks it at
        // constant evaluation.
        (Kind::Other, _) => {}
        (Kind::String { .. }, DefaultLit::Str(text)) => {
            let count = text.chars().count() as u64;
            let bounds = (&a.min_length, &a.max_length);
            check_count(cx, default, count, "character", bounds, (attr::MIN_LENGTH, attr::MAX_LENGTH));
        }
        (Kind::String { .. }, _) => mismatch("a string literal"),
        (Kind::Bool, DefaultLit::Bool(_)) => {}
        (Kind::Bool, _) => mismatch("`true` or `false`"),
        (Kind::Integer { .. }, DefaultLit::Number(n @ Number::Int(_)))
        | (Kind::Float { .. }, DefaultLit::Number(n)) => {
            let (low, high) = accepted_range(a, kind);
            let outside = low.is_some_and(|l| n.as_f64() < l.as_f64()) || high.is_some_and(|h| n.as_f64() > h.as_f64());
            if outside {
                cx.error_spanned_by(
                    &default.tokens,
                    format!(
                        "`default` ({}) is outside the field's range; allowed: {}",
                        number_text(*n),
                        range_text(low, high)
                    ),
                );
            }
        }
        (Kind::Integer { .. }, _) => mismatch("an integer literal"),
        (Kind::Float { .. }, _) => mismatch("a number literal"),
        (Kind::MultiSelect { .. }, DefaultLit::List(items)) => {
            let bounds = (&a.min_items, &a.max_items);
            check_count(cx, default, items.len() as u64, "value", bounds, (attr::MIN_ITEMS, attr::MAX_ITEMS));
        }
        (Kind::MultiSelect { .. }, _) => mismatch("a list of variant wire values `[\"a\", \"b\"]`"),
    }
}

#[cfg(test)]
mod tests {
    use syn::parse_quote;

    use crate::ast::Input;
    use crate::ctxt::Ctxt;

    /// Every message reported on `input` by the intermediate form and the checks.
    fn errors(input: syn::DeriveInput) -> Vec<String> {
        let cx = Ctxt::new();
        match Input::from_syn(&cx, &input) {
            Some(Input::Struct(s)) => super::check_struct(&cx, &s),
            Some(Input::Enum(e)) => super::check_enum(&cx, &e),
            Some(Input::Transparent(_)) | None => {}
        }
        cx.check().err().into_iter().flatten().map(|e| e.to_string()).collect()
    }

    #[test]
    fn a_valid_struct_passes() {
        let input = parse_quote! {
            #[elicit(rename_all = "camelCase")]
            struct Trip {
                #[elicit(min_length = 3, max_length = 3, default = "CDG")]
                from: String,
                #[elicit(minimum = 1, maximum = 9, default = 1)]
                travellers: u8,
                #[elicit(minimum = -1.5, default = 0)]
                budget: Option<f64>,
                #[elicit(min_items = 1, default = ["a"])]
                meals: Vec<Meal>,
                #[elicit(default = "economy")]
                cabin: Cabin,
                #[elicit(format = "uri")]
                homepage: String,
            }
        };
        assert_eq!(errors(input), Vec::<String>::new());
    }

    /// Keys on a type the derive cannot name (`Cabin`) are left to constant evaluation against its
    /// `FieldValue::SHAPE`; they are not reported here as if it were known to be an enum.
    #[test]
    fn attributes_must_fit_the_field_type() {
        let input = parse_quote! {
            struct Trip {
                #[elicit(min_length = 1, minimum = 1)]
                flag: bool,
                #[elicit(min_items = 1, format = "email")]
                cabin: Cabin,
                #[elicit(format = "email")]
                email: Email,
            }
        };
        assert_eq!(
            errors(input),
            [
                "`min_length` applies to string fields, but this is a boolean field",
                "`minimum` applies to integer and number fields, but this is a boolean field",
                "this field's type already has format `email`; `format` applies to `String` fields",
            ]
        );
    }

    #[test]
    fn bounds_and_defaults() {
        let input = parse_quote! {
            struct Trip {
                #[elicit(min_length = 4, max_length = 3)]
                a: String,
                #[elicit(minimum = 300, maximum = 2.5)]
                b: u8,
                #[elicit(minimum = 1.5, maximum = 1, default = 2)]
                c: f64,
                #[elicit(max_length = 2, default = "long")]
                d: String,
                #[elicit(default = 300)]
                e: u8,
                #[elicit(max_items = 1, default = ["x", "y"])]
                f: Vec<Meal>,
                #[elicit(default = 1)]
                g: bool,
                #[elicit(default = 1.5)]
                h: i32,
                #[elicit(minimum = 0.5, default = 0)]
                i: f32,
            }
        };
        assert_eq!(
            errors(input),
            [
                "`min_length` (4) is greater than `max_length` (3)",
                "`minimum` (300) is greater than `maximum` (2.5)",
                "300 is outside the range of `u8`; allowed: 0..=255",
                "bounds of an integer field (`u8`) must be integer literals",
                "`minimum` (1.5) is greater than `maximum` (1)",
                "`default` (2) is outside the field's range; allowed: 1.5..=1",
                "`default` is 4 characters long, but `max_length` is 2",
                "`default` (300) is outside the field's range; allowed: 0..=255",
                "`default` has 2 values, but `max_items` is 1",
                "`default` of a boolean field must be `true` or `false`, found an integer",
                "`default` of an integer field (`i32`) must be an integer literal, found a number",
                "`default` (0) is outside the field's range; allowed: 0.5..",
            ]
        );
    }

    #[test]
    fn wire_names_must_be_unique() {
        let input = parse_quote! {
            #[elicit(rename_all = "UPPERCASE")]
            struct Trip {
                a: String,
                #[elicit(rename = "A")]
                b: String,
            }
        };
        assert_eq!(errors(input), ["duplicate property `A` after renaming: every property must be unique on the wire"]);
        let input = parse_quote! {
            #[elicit(rename_all = "snake_case")]
            enum Cabin { FirstClass, #[elicit(rename = "first_class")] First }
        };
        assert_eq!(
            errors(input),
            ["duplicate variant value `first_class` after renaming: every variant value must be unique on the wire"]
        );
    }

    #[test]
    fn shapes_the_protocol_cannot_express() {
        assert_eq!(
            errors(parse_quote!(
                struct A(String);
            ))
            .len(),
            1
        );
        assert_eq!(
            errors(parse_quote!(
                struct A;
            ))
            .len(),
            1
        );
        assert_eq!(errors(parse_quote!(union A { a: u8 })).len(), 1);
        assert_eq!(
            errors(parse_quote!(
                enum A {}
            ))
            .len(),
            1
        );
        assert_eq!(
            errors(parse_quote!(
                enum A {
                    B(u8),
                    C { d: u8 },
                    E,
                }
            ))
            .len(),
            2
        );
        // A generic struct is refused, and its fields are still checked in the same build.
        assert_eq!(
            errors(parse_quote!(
                struct A<T> {
                    t: T,
                    m: HashMap<u8, u8>,
                }
            ))
            .len(),
            2
        );
    }
}
