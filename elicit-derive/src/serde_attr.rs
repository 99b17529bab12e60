//! Phase 1, beside serde: the `#[serde(..)]` attributes that decide which names and defaults
//! serde's `Deserialize` reads, so the form asks for exactly those.
//!
//! Keys that change nothing the form asks for (`alias`, `bound`, `skip_serializing_if`, ...) are
//! skipped; keys that change the shape serde reads in a way a flat form cannot follow are errors
//! saying why. Nothing here emits tokens.

use proc_macro2::{Span, TokenStream};
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned as _;
use syn::{Attribute, Expr, ExprLit, Lit};

use crate::attr::{Spanned, ungroup};
use crate::case::{RULE_NAMES, RenameRule};
use crate::ctxt::Ctxt;

const SERDE: &str = "serde";

/// A field's `#[serde(default)]` or `#[serde(default = "path")]`.
#[derive(Clone)]
pub(crate) enum SerdeDefault {
    Trait,
    Path(syn::Path),
}

#[derive(Default)]
pub(crate) struct SerdeContainer {
    pub(crate) rename_all: Option<Spanned<RenameRule>>,
    pub(crate) deny_unknown_fields: bool,
}

#[derive(Default)]
pub(crate) struct SerdeField {
    pub(crate) rename: Option<Spanned<String>>,
    pub(crate) default: Option<Spanned<SerdeDefault>>,
    /// `skip` or `skip_deserializing`.
    pub(crate) skip: Option<Span>,
    pub(crate) flatten: Option<Span>,
}

#[derive(Default)]
pub(crate) struct SerdeVariant {
    pub(crate) rename: Option<Spanned<String>>,
}

/// Why a serde key on a struct or enum cannot be honoured.
fn container_refusal(key: &str, transparent: bool) -> Option<&'static str> {
    Some(match key {
        "from" | "try_from" | "remote" if transparent => {
            "an `#[elicit(transparent)]` newtype is read through its one field, and serde would read another type's shape"
        }
        "tag" | "content" | "untagged" => {
            "a form is a flat object of the struct's fields, and a select is a plain string: serde would read another shape than the form asks for"
        }
        "transparent" => {
            "serde would read the one field's shape, not a form of named properties; to make a newtype a field type, add `#[elicit(transparent)]`"
        }
        "from" | "try_from" | "remote" => {
            "serde would read another type's shape, which the form does not ask for; derive `Elicit` on that type instead"
        }
        "default" => {
            "the form cannot state a default it only learns at run time: put `#[serde(default)]` on each field instead"
        }
        _ => return None,
    })
}

/// Why a serde key on a field cannot be honoured.
fn field_refusal(key: &str) -> Option<&'static str> {
    Some(match key {
        "with" | "deserialize_with" => {
            "serde would read this field with its own function, which the form cannot follow; give the field a type implementing `FieldValue`, or use `#[elicit(with = path)]` without serde's"
        }
        _ => return None,
    })
}

/// Why a serde key on a variant cannot be honoured.
fn variant_refusal(key: &str) -> Option<&'static str> {
    Some(match key {
        "skip" | "skip_deserializing" | "other" | "with" | "deserialize_with" | "untagged" => {
            "a select offers every unit variant by its name and serde must read each one back; remove it or rename the variant instead"
        }
        _ => return None,
    })
}

/// Calls `on_key` for every key of every `#[serde(..)]` attribute; a key it does not consume has
/// its value skipped.
fn for_each_key(
    cx: &Ctxt,
    attrs: &[Attribute],
    mut on_key: impl FnMut(&str, &ParseNestedMeta<'_>) -> syn::Result<bool>,
) {
    for attr in attrs.iter().filter(|a| a.path().is_ident(SERDE)) {
        let result = attr.parse_nested_meta(|meta| {
            let name = meta.path.get_ident().map(ToString::to_string).unwrap_or_default();
            if !on_key(&name, &meta)? {
                skip_value(&meta)?;
            }
            Ok(())
        });
        if let Err(error) = result {
            cx.push(error);
        }
    }
}

/// Skips `= value` or `(..)` after a key the form has no use for.
fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        crate::attr::value_expr(meta.value()?)?;
    } else if meta.input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in meta.input);
        content.parse::<TokenStream>()?;
    }
    Ok(())
}

/// `key = "text"`, or the `deserialize` half of `key(serialize = "..", deserialize = "..")`:
/// the name serde reads.
fn deserialize_name(meta: &ParseNestedMeta<'_>) -> syn::Result<Option<Spanned<String>>> {
    let key = meta.path.span();
    if meta.input.peek(syn::Token![=]) {
        let expr: Expr = meta.value()?.parse()?;
        return match ungroup(&expr) {
            Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => Ok(Some(Spanned::new(s.value(), key, s))),
            _ => Ok(None),
        };
    }
    let mut name = None;
    meta.parse_nested_meta(|inner| {
        if inner.path.is_ident("deserialize") {
            let expr: Expr = inner.value()?.parse()?;
            if let Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) = ungroup(&expr) {
                name = Some(Spanned::new(s.value(), key, s));
            }
        } else {
            skip_value(&inner)?;
        }
        Ok(())
    })?;
    Ok(name)
}

fn refuse(cx: &Ctxt, meta: &ParseNestedMeta<'_>, name: &str, why: &str) {
    cx.error(meta.path.span(), format!("`#[serde({name})]` cannot be honoured by `Elicit`: {why}"));
}

/// `transparent` is whether the type is `#[elicit(transparent)]`, a field type through its field
/// as serde's `transparent` reads it: the two agree there.
pub(crate) fn container(cx: &Ctxt, attrs: &[Attribute], transparent: bool) -> SerdeContainer {
    let mut out = SerdeContainer::default();
    for_each_key(cx, attrs, |name, meta| {
        if transparent && name == "transparent" {
            return Ok(true);
        }
        if let Some(why) = container_refusal(name, transparent) {
            refuse(cx, meta, name, why);
            return Ok(false);
        }
        if name == "deny_unknown_fields" {
            out.deny_unknown_fields = true;
            return Ok(true);
        }
        if name != "rename_all" {
            return Ok(false);
        }
        if let Some(rule) = deserialize_name(meta)? {
            match RenameRule::from_name(&rule.value) {
                Some(value) => out.rename_all = Some(rule.with(value)),
                None => {
                    let names: Vec<&str> = RULE_NAMES.iter().map(|(n, _)| *n).collect();
                    cx.error(
                        rule.span,
                        format!("unknown `rename_all` rule `{}`; expected one of: {}", rule.value, names.join(", ")),
                    );
                }
            }
        }
        Ok(true)
    });
    out
}

pub(crate) fn field(cx: &Ctxt, attrs: &[Attribute]) -> SerdeField {
    let mut out = SerdeField::default();
    for_each_key(cx, attrs, |name, meta| {
        if let Some(why) = field_refusal(name) {
            refuse(cx, meta, name, why);
            return Ok(false);
        }
        let key = meta.path.span();
        match name {
            "rename" => out.rename = deserialize_name(meta)?,
            "skip" | "skip_deserializing" => out.skip = Some(key),
            "flatten" => out.flatten = Some(key),
            "default" if meta.input.peek(syn::Token![=]) => {
                let expr: Expr = meta.value()?.parse()?;
                match ungroup(&expr) {
                    Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => match s.parse::<syn::Path>() {
                        Ok(path) => out.default = Some(Spanned::new(SerdeDefault::Path(path), key, s)),
                        Err(error) => cx.push(error),
                    },
                    other => cx.error_spanned_by(other, "`#[serde(default = ..)]` takes a path in a string"),
                }
            }
            "default" => out.default = Some(Spanned::new(SerdeDefault::Trait, key, &meta.path)),
            _ => return Ok(false),
        }
        Ok(true)
    });
    out
}

pub(crate) fn variant(cx: &Ctxt, attrs: &[Attribute]) -> SerdeVariant {
    let mut out = SerdeVariant::default();
    for_each_key(cx, attrs, |name, meta| {
        if let Some(why) = variant_refusal(name) {
            refuse(cx, meta, name, why);
            return Ok(false);
        }
        if name == "rename" {
            out.rename = deserialize_name(meta)?;
            return Ok(true);
        }
        Ok(false)
    });
    out
}
