//! Phase 2: the intermediate form. Each node keeps a reference to its syn original for spans;
//! code generation reads only this form.

use proc_macro2::Span;
use syn::spanned::Spanned as _;
use syn::{Data, DataEnum, DeriveInput, Fields, Ident, Type};

use crate::attr::{self, ContainerAttrs, FieldAttrs};
use crate::case::RenameRule;
use crate::ctxt::Ctxt;
use crate::ty::{self, FieldType};

pub(crate) enum Input<'a> {
    Struct(Struct<'a>),
    Enum(Enum<'a>),
}

pub(crate) struct Struct<'a> {
    pub(crate) ident: &'a Ident,
    pub(crate) attrs: ContainerAttrs,
    pub(crate) fields: Vec<Field<'a>>,
}

pub(crate) struct Field<'a> {
    pub(crate) member: &'a Ident,
    pub(crate) ty: &'a Type,
    /// The property name on the wire, after `rename`/`rename_all`.
    pub(crate) wire: String,
    /// Where a duplicate wire name should be reported.
    pub(crate) wire_span: Span,
    pub(crate) attrs: FieldAttrs,
    /// `None` when the type cannot be a field (already reported).
    pub(crate) field_type: Option<FieldType>,
}

pub(crate) struct Enum<'a> {
    pub(crate) ident: &'a Ident,
    pub(crate) attrs: ContainerAttrs,
    pub(crate) variants: Vec<Variant<'a>>,
}

pub(crate) struct Variant<'a> {
    pub(crate) ident: &'a Ident,
    pub(crate) wire: String,
    pub(crate) wire_span: Span,
    pub(crate) title: Option<String>,
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
        let attrs = attr::container(cx, &input.attrs, false);
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
        let rule = attrs.rename_all.as_ref().map(|r| r.value);
        let fields = named.named.iter().filter_map(|field| Field::from_syn(cx, field, rule)).collect();
        Some(Struct { ident: &input.ident, attrs, fields })
    }
}

impl<'a> Field<'a> {
    /// `None` only for a field without a name, which a struct with named fields does not have.
    fn from_syn(cx: &Ctxt, field: &'a syn::Field, rule: Option<RenameRule>) -> Option<Self> {
        let member = field.ident.as_ref()?;
        let attrs = attr::field(cx, &field.attrs);
        let wire = match (&attrs.rename, rule) {
            (Some(rename), _) => rename.value.clone(),
            (None, Some(rule)) => rule.apply_to_field(&unraw(member)),
            (None, None) => unraw(member),
        };
        let wire_span = attrs.rename.as_ref().map_or(member.span(), |r| r.span);
        let field_type = match ty::classify(&field.ty) {
            Ok(ft) => Some(ft),
            Err(message) => {
                cx.error_spanned_by(&field.ty, message);
                None
            }
        };
        Some(Field { member, ty: &field.ty, wire, wire_span, attrs, field_type })
    }
}

impl<'a> Enum<'a> {
    fn from_syn(cx: &Ctxt, input: &'a DeriveInput, data: &'a DataEnum) -> Self {
        let attrs = attr::container(cx, &input.attrs, true);
        if data.variants.is_empty() {
            cx.error_spanned_by(&input.ident, "an enum deriving `Elicit` needs at least one variant to choose from");
        }
        let rule = attrs.rename_all.as_ref().map(|r| r.value);
        let variants = data.variants.iter().map(|variant| Variant::from_syn(cx, variant, rule)).collect();
        Enum { ident: &input.ident, attrs, variants }
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
        let wire = match (&attrs.rename, rule) {
            (Some(rename), _) => rename.value.clone(),
            (None, Some(rule)) => rule.apply_to_variant(&unraw(&variant.ident)),
            (None, None) => unraw(&variant.ident),
        };
        let wire_span = attrs.rename.as_ref().map_or(variant.ident.span(), |r| r.span);
        Variant { ident: &variant.ident, wire, wire_span, title: attrs.title.map(|t| t.value) }
    }
}
