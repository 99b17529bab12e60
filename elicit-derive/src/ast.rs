//! Phase 2: the intermediate form. Each node keeps a reference to its syn original for spans;
//! code generation reads only this form.

use proc_macro2::Span;
use syn::spanned::Spanned as _;
use syn::{Data, DataEnum, DeriveInput, Fields, Ident, Type};

use crate::attr::{self, ContainerAttrs, FieldAttrs, Spanned};
use crate::case::RenameRule;
use crate::ctxt::Ctxt;
use crate::serde_attr::{self, SerdeDefault};
use crate::ty::{self, FieldType};

pub(crate) enum Input<'a> {
    Struct(Struct<'a>),
    Enum(Enum<'a>),
    Transparent(Transparent<'a>),
}

/// The type the derive is applied to: its name and container attributes, whatever its shape,
/// and what its shape holds (`body`).
pub(crate) struct Container<'a, Body> {
    pub(crate) ident: &'a Ident,
    pub(crate) attrs: ContainerAttrs,
    pub(crate) body: Body,
}

/// A struct with named fields: its fields.
pub(crate) type Struct<'a> = Container<'a, Vec<Field<'a>>>;

/// A unit-only enum: its variants.
pub(crate) type Enum<'a> = Container<'a, Vec<Variant<'a>>>;

/// `#[elicit(transparent)]`: a struct of one field, which is a field type through that field.
pub(crate) type Transparent<'a> = Container<'a, Through<'a>>;

/// The one field of a transparent struct.
pub(crate) struct Through<'a> {
    pub(crate) member: syn::Member,
    pub(crate) ty: &'a Type,
}

/// How a field that may be absent from the answer is filled in, beside a `default` literal.
pub(crate) enum Fallback {
    /// `Default::default()`.
    Trait,
    /// A function `fn() -> T`.
    Path(syn::Path),
}

pub(crate) struct Field<'a> {
    pub(crate) member: &'a Ident,
    pub(crate) ty: &'a Type,
    /// The property name on the wire, after `rename`/`rename_all`.
    pub(crate) wire: String,
    /// Where a duplicate wire name should be reported.
    pub(crate) wire_span: Span,
    pub(crate) attrs: FieldAttrs,
    /// `None` when the type cannot be a field (already reported), or the field is skipped.
    pub(crate) field_type: Option<FieldType>,
    /// Not part of the form (`skip`, or serde's `skip`/`skip_deserializing`).
    pub(crate) skip: bool,
    /// Serde's `default`: the form's parser fills the field in the same way when it is absent.
    pub(crate) fallback: Option<Fallback>,
    /// `flatten` (or serde's): the field's own form is spliced into this one.
    pub(crate) flatten: Option<Flatten>,
}

/// A flattened field: its form type, and whether it is held in an `Option` (all or none).
pub(crate) struct Flatten {
    pub(crate) form: Type,
    pub(crate) optional: bool,
}

pub(crate) struct Variant<'a> {
    pub(crate) ident: &'a Ident,
    pub(crate) wire: String,
    pub(crate) wire_span: Span,
    pub(crate) title: Option<String>,
}

/// Ours or serde's value of a key both read; given by both, they must agree.
fn agreed<'v, T: PartialEq>(
    cx: &Ctxt,
    key: &str,
    ours: &'v Option<Spanned<T>>,
    theirs: &'v Option<Spanned<T>>,
) -> Option<&'v Spanned<T>> {
    if let (Some(ours), Some(theirs)) = (ours, theirs)
        && ours.value != theirs.value
    {
        cx.error_spanned_by(&ours.tokens, disagreement(key, &ours.tokens, &theirs.tokens));
    }
    ours.as_ref().or(theirs.as_ref())
}

/// The name on the wire of a field or variant, and where to report a duplicate: its `rename`,
/// else its identifier after the container's `rename_all` rule, else its identifier as written.
fn wire_name(rename: Option<&Spanned<String>>, ident: &Ident, rule: Option<impl Fn(&str) -> String>) -> (String, Span) {
    match (rename, rule) {
        (Some(rename), _) => (rename.value.clone(), rename.span),
        (None, Some(rule)) => (rule(&unraw(ident)), ident.span()),
        (None, None) => (unraw(ident), ident.span()),
    }
}

/// The identifier as written, without `r#`.
fn unraw(ident: &Ident) -> String {
    let text = ident.to_string();
    text.strip_prefix("r#").map(str::to_owned).unwrap_or(text)
}

impl<'a> Input<'a> {
    /// Builds the intermediate form, reporting shapes the protocol cannot express. `None` when the
    /// input is not a struct with named fields or a unit-only enum.
    pub(crate) fn from_syn(cx: &Ctxt, input: &'a DeriveInput) -> Option<Self> {
        if !input.generics.params.is_empty() {
            cx.error_spanned_by(
                &input.generics,
                "`Elicit` cannot be derived for generic types: the requestedSchema must be fixed at compile time",
            );
        }
        if let Data::Struct(data) = &input.data
            && input.attrs.iter().any(is_transparent)
        {
            return Transparent::from_syn(cx, input, &data.fields).map(Input::Transparent);
        }
        match &input.data {
            Data::Struct(data) => Struct::from_syn(cx, input, &data.fields).map(Input::Struct),
            Data::Enum(data) => Some(Input::Enum(Enum::from_syn(cx, input, data))),
            Data::Union(data) => {
                cx.error(
                    data.union_token.span(),
                    "`Elicit` cannot be derived for unions: derive it on a struct with named fields or on a unit-only enum",
                );
                None
            }
        }
    }
}

impl<'a> Struct<'a> {
    /// `None` (after an error) for tuple and unit structs, which have no property names.
    fn from_syn(cx: &Ctxt, input: &'a DeriveInput, fields: &'a Fields) -> Option<Self> {
        let mut attrs = attr::container(cx, &input.attrs, false);
        let serde = serde_attr::container(cx, &input.attrs, false);
        let rule = agreed(cx, "rename_all", &attrs.rename_all, &serde.rename_all).map(|r| r.value);
        attrs.deny_unknown_fields = serde.deny_unknown_fields;
        let named = match fields {
            Fields::Named(named) => named,
            Fields::Unnamed(_) => {
                cx.error_spanned_by(
                    &input.ident,
                    "`Elicit` needs named fields: each field becomes a named property of the form; tuple structs have none",
                );
                return None;
            }
            Fields::Unit => {
                cx.error_spanned_by(
                    &input.ident,
                    "`Elicit` needs named fields: a unit struct would be an empty form; derive it on a struct with fields or on a unit-only enum",
                );
                return None;
            }
        };
        let fields = named.named.iter().filter_map(|field| Field::from_syn(cx, field, rule)).collect();
        Some(Struct { ident: &input.ident, attrs, body: fields })
    }
}

impl<'a> Field<'a> {
    /// `None` only for a field without a name, which a struct with named fields does not have.
    fn from_syn(cx: &Ctxt, field: &'a syn::Field, rule: Option<RenameRule>) -> Option<Self> {
        let member = field.ident.as_ref()?;
        let attrs = attr::field(cx, &field.attrs);
        let serde = serde_attr::field(cx, &field.attrs);
        let rename = agreed(cx, "rename", &attrs.rename, &serde.rename);
        let (wire, wire_span) = wire_name(rename, member, rule.map(|rule| move |name: &str| rule.apply_to_field(name)));
        let skip = attrs.skip.is_some() || serde.skip.is_some();
        let flatten =
            (attrs.flatten.is_some() || serde.flatten.is_some()).then(|| match ty::option_argument(&field.ty) {
                Some(inner) => Flatten { form: inner.clone(), optional: true },
                None => Flatten { form: field.ty.clone(), optional: false },
            });
        // A skipped field, or one read by a `with` module, need not be a field type.
        let field_type = match ty::classify(&field.ty) {
            _ if skip || flatten.is_some() => None,
            Err(_) if attrs.with.is_some() => None,
            Ok(ft) => Some(ft),
            Err(message) => {
                cx.error_spanned_by(&field.ty, message);
                None
            }
        };
        let fallback = serde.default.as_ref().map(|d: &Spanned<SerdeDefault>| match &d.value {
            SerdeDefault::Trait => Fallback::Trait,
            SerdeDefault::Path(path) => Fallback::Path(path.clone()),
        });
        Some(Field { member, ty: &field.ty, wire, wire_span, attrs, field_type, skip, fallback, flatten })
    }
}

impl<'a> Enum<'a> {
    fn from_syn(cx: &Ctxt, input: &'a DeriveInput, data: &'a DataEnum) -> Self {
        let attrs = attr::container(cx, &input.attrs, true);
        let serde = serde_attr::container(cx, &input.attrs, false);
        let rule = agreed(cx, "rename_all", &attrs.rename_all, &serde.rename_all).map(|r| r.value);
        if data.variants.is_empty() {
            cx.error_spanned_by(&input.ident, "an enum deriving `Elicit` needs at least one variant to choose from");
        }
        let variants = data.variants.iter().map(|variant| Variant::from_syn(cx, variant, rule)).collect();
        Enum { ident: &input.ident, attrs, body: variants }
    }
}

impl<'a> Variant<'a> {
    /// A variant with data is reported and still built, so the rest of the enum is checked.
    fn from_syn(cx: &Ctxt, variant: &'a syn::Variant, rule: Option<RenameRule>) -> Self {
        if !matches!(variant.fields, Fields::Unit) {
            cx.error_spanned_by(
                &variant.fields,
                "enum variants with data cannot be elicited: a select offers fixed string choices, so every variant must be a unit variant",
            );
        }
        let attrs = attr::variant(cx, &variant.attrs);
        let serde = serde_attr::variant(cx, &variant.attrs);
        let rename = agreed(cx, "rename", &attrs.rename, &serde.rename);
        let (wire, wire_span) =
            wire_name(rename, &variant.ident, rule.map(|rule| move |name: &str| rule.apply_to_variant(name)));
        Variant { ident: &variant.ident, wire, wire_span, title: attrs.title.map(|t| t.value) }
    }
}

/// "`#[elicit(rename = "a")]` disagrees with `#[serde(rename = "b")]`".
pub(crate) fn disagreement(key: &str, ours: &proc_macro2::TokenStream, theirs: &proc_macro2::TokenStream) -> String {
    format!(
        "`#[elicit({key} = {ours})]` disagrees with `#[serde({key} = {theirs})]`: the form would ask for a name serde does not read; keep one of them"
    )
}

pub(crate) fn is_transparent(attr: &syn::Attribute) -> bool {
    let mut found = false;
    if attr.path().is_ident(attr::ELICIT) {
        // Errors in the attribute are reported when it is parsed for real.
        let _ = attr.parse_nested_meta(|meta| {
            found |= meta.path.is_ident(attr::TRANSPARENT);
            if meta.input.peek(syn::Token![=]) {
                attr::value_expr(meta.value()?)?;
            }
            Ok(())
        });
    }
    found
}

impl<'a> Transparent<'a> {
    /// `None` (after an error) unless the struct has exactly one field.
    fn from_syn(cx: &Ctxt, input: &'a DeriveInput, fields: &'a Fields) -> Option<Self> {
        let attrs = attr::container(cx, &input.attrs, false);
        let _ = serde_attr::container(cx, &input.attrs, true);
        for (key, used) in [
            (attr::MESSAGE, attrs.message.as_ref().map(|m| m.key)),
            (attr::RENAME_ALL, attrs.rename_all.as_ref().map(|m| m.key)),
            (attr::DESERIALIZE, attrs.deserialize.as_ref().map(|m| m.key)),
            (attr::JSON_SCHEMA, attrs.json_schema.as_ref().map(|m| m.key)),
            (attr::VALIDATE, attrs.validate.as_ref().map(|m| m.key)),
        ] {
            if let Some(span) = used {
                cx.error(
                    span,
                    format!(
                        "`{key}` applies to a form; a `transparent` struct is a field type, so it takes only `crate`"
                    ),
                );
            }
        }
        let mut iter = fields.iter();
        let (Some(field), None) = (iter.next(), iter.next()) else {
            cx.error_spanned_by(
                &input.ident,
                "`transparent` needs a struct of exactly one field: the field type it stands for",
            );
            return None;
        };
        for attr in field.attrs.iter().filter(|a| a.path().is_ident(attr::ELICIT)) {
            cx.error_spanned_by(
                attr,
                "a `transparent` struct's field takes no elicit attributes: put them on the fields that use the struct",
            );
        }
        let member = match &field.ident {
            Some(ident) => syn::Member::Named(ident.clone()),
            None => syn::Member::Unnamed(syn::Index::from(0)),
        };
        Some(Transparent { ident: &input.ident, attrs, body: Through { member, ty: &field.ty } })
    }
}
