//! What is emitted beside the derive's own errors: impls with unreachable bodies, so that the user
//! sees the real error and not a cascade where the type is used, and the checks left to constant
//! evaluation, so that one build reports them too.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{DeriveInput, Path};

use super::FieldNames;
use super::const_checks::{field_checks, flatten_checks};
use super::rules::rules;
use crate::ast::Struct;

/// The checks left to constant evaluation (a field's rules against its type, a default's variants
/// and format, flattened names), emitted beside the derive's own errors so that one build reports
/// them too. Fields whose type the derive refused are left out: their error is already reported.
pub(super) fn checks_beside_errors(input: &Struct<'_>, rt: &Path) -> TokenStream {
    let fields: Vec<FieldNames<'_>> =
        input.body.iter().enumerate().map(|(i, field)| FieldNames::new(i, field)).collect();
    let mut items = TokenStream::new();
    for names in fields.iter().filter(|names| names.is_question()) {
        if names.field.field_type.is_none() || names.field.attrs.with.is_some() {
            continue;
        }
        let checks = field_checks(names, rt);
        if !checks.is_empty() {
            let (rules_const, rules) = (&names.rules_const, rules(names.field, rt));
            items.extend(quote!(const #rules_const: #rt::__private::FieldRules = #rules; #checks));
        }
    }
    items.extend(flatten_checks(input, &fields, rt));
    items
}

/// Impls with unreachable bodies beside the compile error, so the user sees the real error and
/// not a cascade of "trait not implemented" errors where the type is used.
pub(super) fn fallback(input: &DeriveInput, rt: &Path) -> TokenStream {
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    match &input.data {
        syn::Data::Struct(_) if input.attrs.iter().any(crate::ast::is_transparent) => {
            field_value_fallback(input, rt, quote!(#rt::__private::FieldShape::String))
        }
        syn::Data::Struct(_) => quote! {
            #[automatically_derived]
            impl #impl_generics #rt::Elicit for #ident #ty_generics #where_clause {
                const MESSAGE: &'static ::core::primitive::str = "";
                fn requested_schema() -> &'static #rt::__private::RequestedSchema { ::core::unreachable!() }
                fn from_content(
                    _: &#rt::__private::Map<::std::string::String, #rt::__private::Value>,
                ) -> ::core::result::Result<Self, #rt::__private::ContentErrors> { ::core::unreachable!() }
                fn to_content(&self) -> #rt::__private::Map<::std::string::String, #rt::__private::Value> {
                    ::core::unreachable!()
                }
            }
        },
        syn::Data::Enum(_) => {
            let field_value = field_value_fallback(input, rt, quote!(#rt::__private::FieldShape::SingleSelect(&[])));
            quote! {
                #[automatically_derived]
                impl #impl_generics #rt::__private::ElicitEnum for #ident #ty_generics #where_clause {
                    const VARIANTS: &'static [#rt::__private::Variant] = &[];
                    fn from_wire(_: &::core::primitive::str) -> ::core::option::Option<Self> { ::core::unreachable!() }
                    fn to_wire(&self) -> &'static ::core::primitive::str { ::core::unreachable!() }
                }
                #field_value
            }
        }
        syn::Data::Union(_) => TokenStream::new(),
    }
}

/// The `FieldValue` impl of [`fallback`], with `shape` as its `SHAPE`.
pub(super) fn field_value_fallback(input: &DeriveInput, rt: &Path, shape: TokenStream) -> TokenStream {
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    quote! {
        #[automatically_derived]
        impl #impl_generics #rt::__private::FieldValue for #ident #ty_generics #where_clause {
            const SHAPE: #rt::__private::FieldShape = #shape;
            fn schema(_: &#rt::__private::FieldRules) -> #rt::__private::PrimitiveSchema { ::core::unreachable!() }
            fn parse(
                _: &#rt::__private::Value,
                _: &#rt::__private::FieldRules,
            ) -> ::core::result::Result<Self, #rt::__private::InvalidValue> { ::core::unreachable!() }
            fn to_value(&self) -> ::core::option::Option<#rt::__private::Value> { ::core::unreachable!() }
        }
    }
}
