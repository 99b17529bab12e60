//! `#[elicit(transparent)]`: a newtype whose `FieldValue` is its one field's.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::Path;
use syn::spanned::Spanned as _;

use crate::ast::{Through, Transparent};

/// `transparent`: the newtype is a field type through its one field.
pub(super) fn expand_transparent(input: &Transparent<'_>, rt: &Path) -> TokenStream {
    let Transparent { ident, body: Through { member, ty }, .. } = input;
    let inner = quote_spanned!(ty.span()=> <#ty as #rt::__private::FieldValue>);
    quote! {
        #[automatically_derived]
        impl #rt::__private::FieldValue for #ident {
            const REQUIRED: ::core::primitive::bool = #inner::REQUIRED;
            const SHAPE: #rt::__private::FieldShape = #inner::SHAPE;
            const RANGE: ::core::option::Option<(::core::primitive::i128, ::core::primitive::i128)> = #inner::RANGE;

            fn schema(__rules: &#rt::__private::FieldRules) -> #rt::__private::PrimitiveSchema {
                #inner::schema(__rules)
            }

            fn parse(
                __value: &#rt::__private::Value,
                __rules: &#rt::__private::FieldRules,
            ) -> ::core::result::Result<Self, #rt::__private::InvalidValue> {
                ::core::result::Result::map(#inner::parse(__value, __rules), |__inner| Self { #member: __inner })
            }

            fn absent() -> ::core::option::Option<Self> {
                ::core::option::Option::map(#inner::absent(), |__inner| Self { #member: __inner })
            }

            fn from_default(
                __default: #rt::__private::DefaultValue,
                __rules: &#rt::__private::FieldRules,
            ) -> ::core::result::Result<Self, #rt::__private::InvalidValue> {
                ::core::result::Result::map(#inner::from_default(__default, __rules), |__inner| Self { #member: __inner })
            }

            fn to_value(&self) -> ::core::option::Option<#rt::__private::Value> {
                #inner::to_value(&self.#member)
            }
        }
    }
}
