//! Phase 1: `#[elicit(..)]` attributes and doc comments turned into plain values.
//!
//! The vocabulary is closed: every keyword is spelled once below, and an unknown, misplaced or
//! repeated key is an error on that key. Nothing here emits tokens.

use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::parse::{ParseStream, Parser as _};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned as _;
use syn::{Attribute, Expr, ExprLit, ExprUnary, Lit, LitStr, UnOp};

use crate::case::{RULE_NAMES, RenameRule};
use crate::ctxt::Ctxt;
use crate::ty::Format;

pub(crate) const ELICIT: &str = "elicit";

pub(crate) const MESSAGE: &str = "message";
pub(crate) const RENAME_ALL: &str = "rename_all";
pub(crate) const CRATE: &str = "crate";
pub(crate) const DESERIALIZE: &str = "deserialize";
pub(crate) const JSON_SCHEMA: &str = "json_schema";
pub(crate) const RENAME: &str = "rename";
pub(crate) const TITLE: &str = "title";
pub(crate) const DESCRIPTION: &str = "description";
pub(crate) const DEFAULT: &str = "default";
pub(crate) const MIN_LENGTH: &str = "min_length";
pub(crate) const MAX_LENGTH: &str = "max_length";
pub(crate) const MINIMUM: &str = "minimum";
pub(crate) const MAXIMUM: &str = "maximum";
pub(crate) const MIN_ITEMS: &str = "min_items";
pub(crate) const MAX_ITEMS: &str = "max_items";
pub(crate) const FORMAT: &str = "format";
pub(crate) const TRANSPARENT: &str = "transparent";
pub(crate) const VALIDATE: &str = "validate";
pub(crate) const WITH: &str = "with";
pub(crate) const REQUIRED: &str = "required";
pub(crate) const SKIP: &str = "skip";
pub(crate) const FLATTEN: &str = "flatten";
/// Not a keyword: named so that asking for it gets an explanation instead of "unknown".
const PATTERN: &str = "pattern";

const CONTAINER_KEYS: &[&str] = &[MESSAGE, RENAME_ALL, CRATE, DESERIALIZE, JSON_SCHEMA, TRANSPARENT, VALIDATE];
const ENUM_KEYS: &[&str] = &[RENAME_ALL, CRATE];
const FIELD_KEYS: &[&str] = &[
    RENAME,
    TITLE,
    DESCRIPTION,
    DEFAULT,
    MIN_LENGTH,
    MAX_LENGTH,
    MINIMUM,
    MAXIMUM,
    MIN_ITEMS,
    MAX_ITEMS,
    FORMAT,
    REQUIRED,
    VALIDATE,
    WITH,
    SKIP,
    FLATTEN,
];
const VARIANT_KEYS: &[&str] = &[RENAME, TITLE];

/// An attribute value with the spans of its key and of its value.
#[derive(Debug, Clone)]
pub(crate) struct Spanned<T> {
    pub(crate) value: T,
    /// For errors about where the key is used.
    pub(crate) key: Span,
    /// The value's first token, for generated code that should point at the value.
    pub(crate) span: Span,
    /// The value's tokens, for errors about the value: `-1` is two tokens, and an error spanned
    /// by `span` alone would underline only the `-` (stable `Span::join` is not available).
    pub(crate) tokens: TokenStream,
}

impl<T> Spanned<T> {
    pub(crate) fn new(value: T, key: Span, tokens: &impl ToTokens) -> Self {
        let tokens = tokens.to_token_stream();
        let span = tokens.clone().into_iter().next().map_or(key, |token| token.span());
        Spanned { value, key, span, tokens }
    }

    pub(crate) fn with<U>(self, value: U) -> Spanned<U> {
        Spanned { value, key: self.key, span: self.span, tokens: self.tokens }
    }
}

/// A numeric literal, possibly negated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Number {
    Int(i128),
    Float(f64),
}

impl Number {
    pub(crate) fn as_f64(self) -> f64 {
        match self {
            Number::Int(i) => i as f64,
            Number::Float(f) => f,
        }
    }
}

/// A `default = ..` value, before it is matched against the field's type.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum DefaultLit {
    Str(String),
    Number(Number),
    Bool(bool),
    List(Vec<String>),
}

impl DefaultLit {
    pub(crate) fn describe(&self) -> &'static str {
        match self {
            DefaultLit::Str(_) => "a string",
            DefaultLit::Number(Number::Int(_)) => "an integer",
            DefaultLit::Number(Number::Float(_)) => "a number",
            DefaultLit::Bool(_) => "a boolean",
            DefaultLit::List(_) => "a list",
        }
    }
}

#[derive(Default)]
pub(crate) struct ContainerAttrs {
    pub(crate) message: Option<Spanned<String>>,
    pub(crate) rename_all: Option<Spanned<RenameRule>>,
    pub(crate) krate: Option<Spanned<syn::Path>>,
    /// `deserialize`: also implement serde's `Deserialize` through the validating parser.
    pub(crate) deserialize: Option<Spanned<()>>,
    /// `json_schema`: also implement `schemars::JsonSchema` with the `requestedSchema` (needs the
    /// runtime's `schemars` feature). Opt-in, so that turning the feature on never collides with
    /// a `#[derive(JsonSchema)]` of the same type: the feature stays additive.
    pub(crate) json_schema: Option<Spanned<()>>,
    /// `transparent`: a newtype that is a field type, through its one field.
    pub(crate) transparent: Option<Spanned<()>>,
    /// `validate = path`: `fn(&Self) -> Result<(), ContentErrors>`, run after every field check.
    pub(crate) validate: Option<Spanned<syn::Path>>,
    pub(crate) doc: Option<String>,
    /// Serde's `deny_unknown_fields` beside the derive: the validating `Deserialize` refuses keys
    /// the form does not have, as serde's would.
    pub(crate) deny_unknown_fields: bool,
}

/// A bound, length or default given as a constant expression (`maximum = MAX_SEATS`), checked
/// by constant evaluation instead of by the derive.
pub(crate) struct ConstValue {
    pub(crate) key: &'static str,
    pub(crate) key_span: Span,
    pub(crate) expr: Expr,
}

/// The keys whose value may be a constant expression.
const CONST_KEYS: &[&str] = &[DEFAULT, MIN_LENGTH, MAX_LENGTH, MINIMUM, MAXIMUM, MIN_ITEMS, MAX_ITEMS];

/// An expression that names or computes a constant, as opposed to a literal (checked here) or
/// something that is not a value at all.
fn is_const_expr(expr: &Expr) -> bool {
    match ungroup(expr) {
        Expr::Path(_) | Expr::Binary(_) | Expr::Call(_) | Expr::Cast(_) | Expr::Field(_) | Expr::Index(_) => true,
        Expr::MethodCall(_) | Expr::Block(_) => true,
        // A block (`{ N + 1 }`) where syn is built without its `full` feature (another crate of the
        // build may turn it on: then the arm above takes it).
        Expr::Verbatim(tokens) => {
            matches!(tokens.clone().into_iter().next(), Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace)
        }
        Expr::Unary(ExprUnary { op: UnOp::Neg(_), expr, .. }) => is_const_expr(expr),
        _ => false,
    }
}

#[derive(Default)]
pub(crate) struct FieldAttrs {
    /// Values of [`CONST_KEYS`] given as constant expressions.
    pub(crate) consts: Vec<ConstValue>,
    pub(crate) rename: Option<Spanned<String>>,
    pub(crate) title: Option<Spanned<String>>,
    pub(crate) description: Option<Spanned<String>>,
    pub(crate) default: Option<Spanned<DefaultLit>>,
    pub(crate) min_length: Option<Spanned<u64>>,
    pub(crate) max_length: Option<Spanned<u64>>,
    pub(crate) minimum: Option<Spanned<Number>>,
    pub(crate) maximum: Option<Spanned<Number>>,
    pub(crate) min_items: Option<Spanned<u64>>,
    pub(crate) max_items: Option<Spanned<u64>>,
    pub(crate) format: Option<Spanned<Format>>,
    /// `required`: listed in `required` even with a default.
    pub(crate) required: Option<Spanned<()>>,
    /// `validate = path`: `fn(&T) -> Result<(), impl Display>`, run after the schema's checks.
    pub(crate) validate: Option<Spanned<syn::Path>>,
    /// `with = path`: a module with `schema`, `parse` and `to_value` for a type that is not a
    /// `FieldValue`.
    pub(crate) with: Option<Spanned<syn::Path>>,
    /// `skip`: not part of the form; filled with `Default::default()`.
    pub(crate) skip: Option<Spanned<()>>,
    /// `flatten`: the field's form (a struct deriving `Elicit`) is spliced into this one.
    pub(crate) flatten: Option<Spanned<()>>,
    pub(crate) doc: Option<String>,
}

#[derive(Default)]
pub(crate) struct VariantAttrs {
    pub(crate) rename: Option<Spanned<String>>,
    pub(crate) title: Option<Spanned<String>>,
}

/// Where an attribute stands, for the "not allowed here" messages.
#[derive(Clone, Copy)]
enum Position {
    Struct,
    Enum,
    Field,
    Variant,
}

impl Position {
    fn keys(self) -> &'static [&'static str] {
        match self {
            Position::Struct => CONTAINER_KEYS,
            Position::Enum => ENUM_KEYS,
            Position::Field => FIELD_KEYS,
            Position::Variant => VARIANT_KEYS,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Position::Struct => "a struct",
            Position::Enum => "an enum",
            Position::Field => "a field",
            Position::Variant => "a variant",
        }
    }
}

/// Walks the `#[elicit(..)]` attributes, calling `on_key` for each allowed key with its value
/// expression; reports unknown and misplaced keys itself.
fn for_each_key(
    cx: &Ctxt,
    attrs: &[Attribute],
    position: Position,
    mut on_key: impl FnMut(&'static str, Span, Option<Expr>),
) {
    for attr in attrs.iter().filter(|a| a.path().is_ident(ELICIT)) {
        let result = attr.parse_nested_meta(|meta| {
            let key_span = meta.path.span();
            let value = if meta.input.peek(syn::Token![=]) { Some(value_expr(meta.value()?)?) } else { None };
            let name = meta.path.get_ident().map(ToString::to_string).unwrap_or_default();
            match position.keys().iter().find(|k| **k == name) {
                Some(key) => on_key(key, key_span, value),
                None if name == PATTERN => cx.error(
                    key_span,
                    "`pattern` is not part of the protocol: a requestedSchema string allows only `min_length`, `max_length` and `format` (email, uri, date, date-time); check the value after parsing instead",
                ),
                None => {
                    let elsewhere = [Position::Struct, Position::Enum, Position::Field, Position::Variant]
                        .into_iter()
                        .find(|p| p.keys().contains(&name.as_str()));
                    let allowed = position.keys().join(", ");
                    match elsewhere {
                        Some(other) => cx.error(
                            key_span,
                            format!("`{name}` applies to {}, not to {}; allowed here: {allowed}", other.name(), position.name()),
                        ),
                        None => cx.error(
                            key_span,
                            format!("unknown elicit attribute `{}`; allowed on {}: {allowed}", path_text(&meta.path), position.name()),
                        ),
                    }
                }
            }
            Ok(())
        });
        if let Err(error) = result {
            cx.push(error);
        }
    }
}

fn path_text(path: &syn::Path) -> String {
    path.segments.iter().map(|s| s.ident.to_string()).collect::<Vec<_>>().join("::")
}

/// Stores `value` in `slot`, or reports a duplicate.
fn set<T>(cx: &Ctxt, slot: &mut Option<Spanned<T>>, key: &str, key_span: Span, value: Option<Spanned<T>>) {
    let Some(value) = value else { return };
    if slot.is_some() {
        cx.error(key_span, format!("duplicate elicit attribute `{key}`; each key may be given once"));
    } else {
        *slot = Some(value);
    }
}

fn require_value(cx: &Ctxt, key: &str, key_span: Span, value: Option<Expr>) -> Option<Expr> {
    if value.is_none() {
        cx.error(key_span, format!("`{key}` needs a value: `{key} = ..`"));
    }
    value
}

/// A key that takes no value.
fn flag(cx: &Ctxt, key: &str, key_span: Span, value: Option<Expr>) -> Option<Spanned<()>> {
    match value {
        None => Some(Spanned { value: (), key: key_span, span: key_span, tokens: TokenStream::new() }),
        Some(expr) => {
            cx.error_spanned_by(&expr, format!("`{key}` is a flag and takes no value"));
            None
        }
    }
}

/// The expression inside the invisible groups `macro_rules!` wraps around a `$value:expr` (or a
/// `$value:literal`) it passes on.
pub(crate) fn ungroup(expr: &Expr) -> &Expr {
    match expr {
        Expr::Group(group) => ungroup(&group.expr),
        Expr::Paren(paren) => ungroup(&paren.expr),
        other => other,
    }
}

/// `key = path::to::function` (or the path as a string, as serde writes it).
fn path_value(cx: &Ctxt, key: &str, key_span: Span, value: Option<Expr>) -> Option<Spanned<syn::Path>> {
    let expr = require_value(cx, key, key_span, value)?;
    match ungroup(&expr) {
        Expr::Path(path) if path.qself.is_none() => Some(Spanned::new(path.path.clone(), key_span, &path.path)),
        Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => match s.parse::<syn::Path>() {
            Ok(path) => Some(Spanned::new(path, key_span, s)),
            Err(_) => {
                cx.error_spanned_by(s, format!("`{key}` takes a path, such as `crate::checks::{key}_this`"));
                None
            }
        },
        other => {
            cx.error_spanned_by(other, format!("`{key}` takes a path, such as `crate::checks::{key}_this`"));
            None
        }
    }
}

fn string_value(cx: &Ctxt, key: &str, key_span: Span, value: Option<Expr>) -> Option<Spanned<String>> {
    let expr = require_value(cx, key, key_span, value)?;
    match ungroup(&expr) {
        Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => Some(Spanned::new(s.value(), key_span, s)),
        other => {
            cx.error_spanned_by(other, format!("`{key}` takes a string literal"));
            None
        }
    }
}

fn count_value(cx: &Ctxt, key: &str, key_span: Span, value: Option<Expr>) -> Option<Spanned<u64>> {
    let expr = require_value(cx, key, key_span, value)?;
    if let Expr::Lit(ExprLit { lit: Lit::Int(i), .. }) = ungroup(&expr)
        && let Ok(n) = i.base10_parse::<u64>()
    {
        return Some(Spanned::new(n, key_span, i));
    }
    cx.error_spanned_by(&expr, format!("`{key}` takes a non-negative integer literal"));
    None
}

fn number_literal(expr: &Expr) -> Option<Number> {
    match expr {
        Expr::Lit(ExprLit { lit: Lit::Int(i), .. }) => i.base10_parse::<i128>().ok().map(Number::Int),
        Expr::Lit(ExprLit { lit: Lit::Float(f), .. }) => {
            f.base10_parse::<f64>().ok().filter(|f| f.is_finite()).map(Number::Float)
        }
        Expr::Unary(ExprUnary { op: UnOp::Neg(_), expr, .. }) => match number_literal(expr)? {
            Number::Int(i) => Some(Number::Int(-i)),
            Number::Float(f) => Some(Number::Float(-f)),
        },
        Expr::Group(group) => number_literal(&group.expr),
        Expr::Paren(paren) => number_literal(&paren.expr),
        _ => None,
    }
}

/// An attribute's value: an expression, or a bracketed list (`default = ["a", "b"]`) kept as its
/// tokens in an `Expr::Verbatim`: syn parses array expressions only with its `full` feature, which
/// the derive does without.
pub(crate) fn value_expr(input: ParseStream<'_>) -> syn::Result<Expr> {
    if input.peek(syn::token::Bracket) {
        let list: TokenTree = input.parse()?;
        return Ok(Expr::Verbatim(list.into_token_stream()));
    }
    // One message whether or not another crate of the build turned syn's `full` on (without it,
    // syn's own would suggest enabling it).
    input.parse().map_err(|error| {
        syn::Error::new(error.span(), "expected a literal, a list of string literals, a path or a constant expression")
    })
}

/// The strings of a bracketed list of string literals; `None` for anything else.
fn string_list(tokens: &TokenStream) -> Option<Vec<String>> {
    let list = |input: ParseStream<'_>| {
        let content;
        syn::bracketed!(content in input);
        Punctuated::<LitStr, syn::Token![,]>::parse_terminated(&content)
    };
    list.parse2(tokens.clone()).ok().map(|strings| strings.iter().map(LitStr::value).collect())
}

fn number_value(cx: &Ctxt, key: &str, key_span: Span, value: Option<Expr>) -> Option<Spanned<Number>> {
    let expr = require_value(cx, key, key_span, value)?;
    match number_literal(&expr) {
        Some(n) => Some(Spanned::new(n, key_span, &expr)),
        None => {
            cx.error_spanned_by(&expr, format!("`{key}` takes a finite number literal"));
            None
        }
    }
}

fn default_value(cx: &Ctxt, key_span: Span, value: Option<Expr>) -> Option<Spanned<DefaultLit>> {
    let expr = require_value(cx, DEFAULT, key_span, value)?;
    let parsed = match ungroup(&expr) {
        Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => Some(DefaultLit::Str(s.value())),
        Expr::Lit(ExprLit { lit: Lit::Bool(b), .. }) => Some(DefaultLit::Bool(b.value)),
        Expr::Verbatim(tokens) => string_list(tokens).map(DefaultLit::List),
        other => number_literal(other).map(DefaultLit::Number),
    };
    match parsed {
        Some(value) => Some(Spanned::new(value, key_span, &expr)),
        None => {
            cx.error_spanned_by(
                &expr,
                "`default` takes a literal: a string, a number, `true`/`false`, or a list of strings `[\"a\", \"b\"]`",
            );
            None
        }
    }
}

/// The doc comment, as a description: lines of a paragraph joined by spaces, paragraphs by a blank
/// line.
pub(crate) fn doc_comment(attrs: &[Attribute]) -> Option<String> {
    let mut paragraphs: Vec<String> = Vec::new();
    let mut current = String::new();
    for attr in attrs.iter().filter(|a| a.path().is_ident("doc")) {
        let syn::Meta::NameValue(nv) = &attr.meta else { continue };
        let Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) = &nv.value else { continue };
        // `split`, not `lines`: a blank `///` line is the attribute `""`, which has no lines but
        // separates paragraphs.
        for line in s.value().split('\n') {
            let line = line.trim();
            if line.is_empty() {
                if !current.is_empty() {
                    paragraphs.push(std::mem::take(&mut current));
                }
            } else {
                if !current.is_empty() {
                    current.push(' ');
                }
                current.push_str(line);
            }
        }
    }
    if !current.is_empty() {
        paragraphs.push(current);
    }
    if paragraphs.is_empty() { None } else { Some(paragraphs.join("\n\n")) }
}

pub(crate) fn container(cx: &Ctxt, attrs: &[Attribute], is_enum: bool) -> ContainerAttrs {
    let mut out = ContainerAttrs { doc: doc_comment(attrs), ..Default::default() };
    let position = if is_enum { Position::Enum } else { Position::Struct };
    for_each_key(cx, attrs, position, |key, key_span, value| match key {
        MESSAGE => {
            let value = string_value(cx, key, key_span, value);
            set(cx, &mut out.message, key, key_span, value);
        }
        RENAME_ALL => {
            let value = string_value(cx, key, key_span, value).and_then(|s| match RenameRule::from_name(&s.value) {
                Some(rule) => Some(s.with(rule)),
                None => {
                    let names: Vec<&str> = RULE_NAMES.iter().map(|(n, _)| *n).collect();
                    cx.error(
                        s.span,
                        format!("unknown `rename_all` rule `{}`; expected one of: {}", s.value, names.join(", ")),
                    );
                    None
                }
            });
            set(cx, &mut out.rename_all, key, key_span, value);
        }
        CRATE => {
            let value =
                string_value(cx, key, key_span, value).and_then(|s| match syn::parse_str::<syn::Path>(&s.value) {
                    Ok(path) => Some(s.with(path)),
                    Err(_) => {
                        cx.error(s.span, "`crate` takes a path to elicit-runtime, such as \"::my_runtime\"");
                        None
                    }
                });
            set(cx, &mut out.krate, key, key_span, value);
        }
        DESERIALIZE => set(cx, &mut out.deserialize, key, key_span, flag(cx, key, key_span, value)),
        JSON_SCHEMA => set(cx, &mut out.json_schema, key, key_span, flag(cx, key, key_span, value)),
        TRANSPARENT => set(cx, &mut out.transparent, key, key_span, flag(cx, key, key_span, value)),
        VALIDATE => set(cx, &mut out.validate, key, key_span, path_value(cx, key, key_span, value)),
        _ => {}
    });
    out
}

pub(crate) fn field(cx: &Ctxt, attrs: &[Attribute]) -> FieldAttrs {
    let mut out = FieldAttrs { doc: doc_comment(attrs), ..Default::default() };
    for_each_key(cx, attrs, Position::Field, |key, key_span, value| match key {
        _ if CONST_KEYS.contains(&key) && value.as_ref().is_some_and(is_const_expr) => {
            if out.consts.iter().any(|c| c.key == key) {
                cx.error(key_span, format!("duplicate elicit attribute `{key}`; each key may be given once"));
            } else if let Some(expr) = value {
                out.consts.push(ConstValue { key, key_span, expr: ungroup(&expr).clone() });
            }
        }
        RENAME => set(cx, &mut out.rename, key, key_span, string_value(cx, key, key_span, value)),
        TITLE => set(cx, &mut out.title, key, key_span, string_value(cx, key, key_span, value)),
        DESCRIPTION => set(cx, &mut out.description, key, key_span, string_value(cx, key, key_span, value)),
        DEFAULT => set(cx, &mut out.default, key, key_span, default_value(cx, key_span, value)),
        MIN_LENGTH => set(cx, &mut out.min_length, key, key_span, count_value(cx, key, key_span, value)),
        MAX_LENGTH => set(cx, &mut out.max_length, key, key_span, count_value(cx, key, key_span, value)),
        MIN_ITEMS => set(cx, &mut out.min_items, key, key_span, count_value(cx, key, key_span, value)),
        MAX_ITEMS => set(cx, &mut out.max_items, key, key_span, count_value(cx, key, key_span, value)),
        MINIMUM => set(cx, &mut out.minimum, key, key_span, number_value(cx, key, key_span, value)),
        MAXIMUM => set(cx, &mut out.maximum, key, key_span, number_value(cx, key, key_span, value)),
        REQUIRED => set(cx, &mut out.required, key, key_span, flag(cx, key, key_span, value)),
        SKIP => set(cx, &mut out.skip, key, key_span, flag(cx, key, key_span, value)),
        FLATTEN => set(cx, &mut out.flatten, key, key_span, flag(cx, key, key_span, value)),
        VALIDATE => set(cx, &mut out.validate, key, key_span, path_value(cx, key, key_span, value)),
        WITH => set(cx, &mut out.with, key, key_span, path_value(cx, key, key_span, value)),
        FORMAT => {
            let value = string_value(cx, key, key_span, value).and_then(|s| match Format::from_name(&s.value) {
                Some(format) => Some(s.with(format)),
                None => {
                    let allowed: Vec<_> = Format::ALL.iter().map(|f| f.name()).collect();
                    cx.error(
                        s.span,
                        format!("unknown format `{}`; the protocol allows: {}", s.value, allowed.join(", ")),
                    );
                    None
                }
            });
            set(cx, &mut out.format, key, key_span, value);
        }
        _ => {}
    });
    out
}

pub(crate) fn variant(cx: &Ctxt, attrs: &[Attribute]) -> VariantAttrs {
    let mut out = VariantAttrs::default();
    for_each_key(cx, attrs, Position::Variant, |key, key_span, value| match key {
        RENAME => set(cx, &mut out.rename, key, key_span, string_value(cx, key, key_span, value)),
        TITLE => set(cx, &mut out.title, key, key_span, string_value(cx, key, key_span, value)),
        _ => {}
    });
    out
}

#[cfg(test)]
mod tests {
    use syn::{Attribute, parse_quote};

    use super::{DefaultLit, Number, doc_comment, field};
    use crate::ctxt::Ctxt;

    /// The messages reported while parsing field attributes.
    fn field_errors(attrs: &[Attribute]) -> Vec<String> {
        let cx = Ctxt::new();
        let _ = field(&cx, attrs);
        cx.check().err().into_iter().flatten().map(|e| e.to_string()).collect()
    }

    #[test]
    fn doc_comments_keep_paragraphs() {
        let attrs: Vec<Attribute> = vec![
            parse_quote!(#[doc = " Departure"]),
            parse_quote!(#[doc = " airport"]),
            parse_quote!(#[doc = ""]),
            parse_quote!(#[doc = " IATA code"]),
            parse_quote!(#[elicit(title = "From")]),
        ];
        assert_eq!(doc_comment(&attrs).as_deref(), Some("Departure airport\n\nIATA code"));
        assert_eq!(doc_comment(&[parse_quote!(#[doc = "\n  block\n\n  doc\n"])]).as_deref(), Some("block\n\ndoc"));
        assert_eq!(doc_comment(&[parse_quote!(#[doc = ""])]), None);
    }

    #[test]
    fn values_are_parsed() {
        let cx = Ctxt::new();
        let attrs = field(
            &cx,
            &[
                parse_quote!(#[elicit(rename = "to", minimum = -3, maximum = 2.5, min_length = 1, default = ["a", "b"])]),
            ],
        );
        assert!(cx.check().is_ok());
        assert_eq!(attrs.rename.map(|r| r.value).as_deref(), Some("to"));
        assert_eq!(attrs.minimum.map(|m| m.value), Some(Number::Int(-3)));
        assert_eq!(attrs.maximum.map(|m| m.value), Some(Number::Float(2.5)));
        assert_eq!(attrs.min_length.map(|m| m.value), Some(1));
        assert_eq!(attrs.default.map(|d| d.value), Some(DefaultLit::List(vec!["a".into(), "b".into()])));
    }

    #[test]
    fn every_mistake_is_reported() {
        let errors = field_errors(&[
            parse_quote!(#[elicit(colour = "red", title = "A", title = "B")]),
            parse_quote!(#[elicit(message = "m", pattern = ".*", min_length = -1, format = "phone", default = 'x')]),
        ]);
        assert_eq!(errors.len(), 7, "{errors:#?}");
        assert!(errors[0].starts_with("unknown elicit attribute `colour`; allowed on a field: rename, title"));
        assert_eq!(errors[1], "duplicate elicit attribute `title`; each key may be given once");
        assert!(errors[2].starts_with("`message` applies to a struct, not to a field"));
        assert!(errors[3].starts_with("`pattern` is not part of the protocol"));
        assert_eq!(errors[4], "`min_length` takes a non-negative integer literal");
        assert!(errors[5].starts_with("unknown format `phone`"));
        assert!(errors[6].starts_with("`default` takes a literal"));
    }

    /// Without syn's `full` feature a block is kept as its tokens, and so is a bracketed list:
    /// the block is a constant expression, the list a `default`, and neither anything else.
    #[test]
    fn blocks_and_lists_kept_as_tokens_are_told_apart() {
        use super::{is_const_expr, string_list};
        let block = syn::Expr::Verbatim(quote::quote!({ N + 1 }));
        let list = syn::Expr::Verbatim(quote::quote!(["a", "b"]));
        assert!(is_const_expr(&block));
        assert!(!is_const_expr(&list));
        assert_eq!(string_list(&quote::quote!(["a", "b",])), Some(vec!["a".to_owned(), "b".to_owned()]));
        assert_eq!(string_list(&quote::quote!(["a", 1])), None);
        assert_eq!(string_list(&quote::quote!({ "a" })), None);
        let errors = field_errors(&[parse_quote!(#[elicit(maximum = [1, 2])]), parse_quote!(#[elicit(minimum = )])]);
        assert_eq!(errors.len(), 2, "{errors:#?}");
        assert_eq!(errors[0], "`maximum` takes a finite number literal");
        assert_eq!(errors[1], "expected a literal, a list of string literals, a path or a constant expression");
    }

    #[test]
    fn constant_expressions_are_kept_for_constant_evaluation() {
        let cx = Ctxt::new();
        let attrs =
            field(&cx, &[parse_quote!(#[elicit(maximum = limits::MAX, min_length = 2 * N, default = DEFAULT)])]);
        assert!(cx.check().is_ok());
        let keys: Vec<&str> = attrs.consts.iter().map(|c| c.key).collect();
        assert_eq!(keys, ["maximum", "min_length", "default"]);
        assert!(attrs.maximum.is_none() && attrs.min_length.is_none() && attrs.default.is_none());
        // A literal inside the invisible group of a `macro_rules!` fragment is still a literal.
        let grouped: syn::Expr = syn::Expr::Group(syn::ExprGroup {
            attrs: Vec::new(),
            group_token: Default::default(),
            expr: Box::new(parse_quote!(3)),
        });
        let cx = Ctxt::new();
        let attrs = field(&cx, &[parse_quote!(#[elicit(max_length = #grouped)])]);
        assert!(cx.check().is_ok());
        assert_eq!(attrs.max_length.map(|m| m.value), Some(3));
    }

    #[test]
    fn other_attributes_are_ignored() {
        assert!(field_errors(&[parse_quote!(#[serde(rename = "x")]), parse_quote!(#[doc = "x"])]).is_empty());
    }

    #[test]
    fn messages_are_in_rustc_voice() {
        let errors = field_errors(&[
            parse_quote!(#[elicit(colour, title, rename = 1, max_items = 1.5, minimum = "1", crate = "x")]),
        ]);
        assert_eq!(errors.len(), 6, "{errors:#?}");
        for error in errors {
            assert!(error.starts_with(|c: char| !c.is_uppercase()), "{error}");
            assert!(!error.ends_with('.'), "{error}");
        }
    }
}
