//! Phase 3: rules that involve several attributes, a field's type, or several fields.

use std::collections::HashMap;

use proc_macro2::Span;

use crate::ast::{Enum, Field, Struct};
use crate::attr::{self, DefaultLit, Number, Spanned};
use crate::ctxt::Ctxt;
use crate::ty::Kind;

pub(crate) fn check_struct(cx: &Ctxt, input: &Struct<'_>) {
    for field in &input.fields {
        check_field(cx, field);
    }
    unique_names(cx, input.fields.iter().map(|f| (f.wire.as_str(), f.wire_span)), "property");
}

pub(crate) fn check_enum(cx: &Ctxt, input: &Enum<'_>) {
    unique_names(cx, input.variants.iter().map(|v| (v.wire.as_str(), v.wire_span)), "variant value");
}

fn unique_names<'a>(cx: &Ctxt, names: impl Iterator<Item = (&'a str, Span)>, what: &str) {
    let mut seen: HashMap<&str, ()> = HashMap::new();
    for (name, span) in names {
        if seen.insert(name, ()).is_some() {
            cx.error(span, format!("duplicate {what} `{name}` after renaming: every {what} must be unique on the wire"));
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
    if let (Some(min), Some(max)) = (min, max) {
        if min.value > max.value {
            cx.error(min.span, format!("`{min_key}` ({}) is greater than `{max_key}` ({})", min.value, max.value));
        }
    }
}

fn number_text(n: Number) -> String {
    match n {
        Number::Int(i) => i.to_string(),
        Number::Float(f) => f.to_string(),
    }
}

fn check_field(cx: &Ctxt, field: &Field<'_>) {
    let Some(ft) = &field.field_type else { return };
    let a = &field.attrs;
    let kind = &ft.kind;
    let is_string = matches!(kind, Kind::String { .. });
    let is_number = matches!(kind, Kind::Integer { .. } | Kind::Float { .. });
    let is_multi = matches!(kind, Kind::MultiSelect { .. });

    applies_to(cx, &a.min_length, attr::MIN_LENGTH, is_string, "string fields", kind);
    applies_to(cx, &a.max_length, attr::MAX_LENGTH, is_string, "string fields", kind);
    applies_to(cx, &a.minimum, attr::MINIMUM, is_number, "integer and number fields", kind);
    applies_to(cx, &a.maximum, attr::MAXIMUM, is_number, "integer and number fields", kind);
    applies_to(cx, &a.min_items, attr::MIN_ITEMS, is_multi, "multi-select fields (a `Vec` or set of a unit enum)", kind);
    applies_to(cx, &a.max_items, attr::MAX_ITEMS, is_multi, "multi-select fields (a `Vec` or set of a unit enum)", kind);
    if let Some(format) = &a.format {
        match kind {
            Kind::String { plain: true, .. } => {}
            Kind::String { format: Some(implied), .. } => cx.error(
                format.key,
                format!("this field's type already has format `{implied}`; `format` applies to `String` fields"),
            ),
            other => cx.error(format.key, format!("`format` applies to string fields, but this is {}", other.describe())),
        }
    }

    ordered(cx, &a.min_length, &a.max_length, attr::MIN_LENGTH, attr::MAX_LENGTH);
    ordered(cx, &a.min_items, &a.max_items, attr::MIN_ITEMS, attr::MAX_ITEMS);
    if let (Some(min), Some(max)) = (&a.minimum, &a.maximum) {
        if min.value.as_f64() > max.value.as_f64() {
            cx.error(
                min.span,
                format!("`minimum` ({}) is greater than `maximum` ({})", number_text(min.value), number_text(max.value)),
            );
        }
    }

    // Integer bounds must be integers inside the Rust type's range: a wider bound would promise
    // the client values the parser must then refuse.
    let (mut low, mut high) = (None::<f64>, None::<f64>);
    if let Kind::Integer { name, min, max } = kind {
        for bound in [&a.minimum, &a.maximum].into_iter().flatten() {
            match bound.value {
                Number::Int(i) if i < *min || i > *max => cx.error(
                    bound.span,
                    format!("{i} is outside the range of `{name}` ({min}..={max})"),
                ),
                Number::Int(_) => {}
                Number::Float(_) => cx.error(bound.span, format!("bounds of an integer field (`{name}`) must be integer literals")),
            }
        }
        low = Some(*min as f64);
        high = Some(*max as f64);
    }
    if let Some(min) = &a.minimum {
        low = Some(min.value.as_f64());
    }
    if let Some(max) = &a.maximum {
        high = Some(max.value.as_f64());
    }

    let Some(default) = &a.default else { return };
    let mismatch = |expected: &str| {
        cx.error(
            default.span,
            format!("`default` of {} must be {expected}, found {}", kind.describe(), default.value.describe()),
        );
    };
    match (kind, &default.value) {
        (Kind::String { .. } | Kind::SingleSelect, DefaultLit::Str(text)) => {
            let count = text.chars().count() as u64;
            if a.min_length.as_ref().is_some_and(|m| count < m.value)
                || a.max_length.as_ref().is_some_and(|m| count > m.value)
            {
                cx.error(default.span, "`default` does not satisfy `min_length`/`max_length`");
            }
        }
        (Kind::String { .. }, _) => mismatch("a string literal"),
        (Kind::SingleSelect, _) => mismatch("a string literal naming a variant's wire value"),
        (Kind::Bool, DefaultLit::Bool(_)) => {}
        (Kind::Bool, _) => mismatch("`true` or `false`"),
        (Kind::Integer { .. }, DefaultLit::Number(Number::Int(i))) => {
            let i = *i as f64;
            if low.is_some_and(|l| i < l) || high.is_some_and(|h| i > h) {
                cx.error(default.span, "`default` is outside the field's bounds");
            }
        }
        (Kind::Integer { .. }, _) => mismatch("an integer literal"),
        (Kind::Float { .. }, DefaultLit::Number(n)) => {
            let f = n.as_f64();
            if low.is_some_and(|l| f < l) || high.is_some_and(|h| f > h) {
                cx.error(default.span, "`default` is outside the field's bounds");
            }
        }
        (Kind::Float { .. }, _) => mismatch("a number literal"),
        (Kind::MultiSelect { .. }, DefaultLit::List(items)) => {
            let count = items.len() as u64;
            if a.min_items.as_ref().is_some_and(|m| count < m.value)
                || a.max_items.as_ref().is_some_and(|m| count > m.value)
            {
                cx.error(default.span, "`default` does not satisfy `min_items`/`max_items`");
            }
        }
        (Kind::MultiSelect { .. }, _) => mismatch("a list of variant wire values `[\"a\", \"b\"]`"),
    }
}
