//! A unit-only enum: `ElicitEnum` (its variants' wire values and titles) and `FieldValue` (a
//! single-select field type).

use proc_macro2::TokenStream;
use quote::quote;
use syn::Path;

use super::some;
use crate::ast::Enum;

pub(super) fn expand_enum(input: &Enum<'_>, rt: &Path) -> TokenStream {
    let ident = input.ident;
    let variants: Vec<_> = input
        .body
        .iter()
        .map(|v| {
            let wire = &v.wire;
            let title = some(v.title.as_ref());
            quote!(#rt::__private::Variant { value: #wire, title: #title })
        })
        .collect();
    let idents: Vec<_> = input.body.iter().map(|v| v.ident).collect();
    let wires: Vec<_> = input.body.iter().map(|v| &v.wire).collect();
    quote! {
        #[automatically_derived]
        impl #rt::__private::ElicitEnum for #ident {
            const VARIANTS: &'static [#rt::__private::Variant] = &[#(#variants),*];

            fn from_wire(__value: &::core::primitive::str) -> ::core::option::Option<Self> {
                match __value {
                    #(#wires => ::core::option::Option::Some(Self::#idents),)*
                    _ => ::core::option::Option::None,
                }
            }

            fn to_wire(&self) -> &'static ::core::primitive::str {
                match self {
                    #(Self::#idents => #wires,)*
                }
            }
        }

        #[automatically_derived]
        impl #rt::__private::FieldValue for #ident {
            const SHAPE: #rt::__private::FieldShape =
                #rt::__private::FieldShape::SingleSelect(<Self as #rt::__private::ElicitEnum>::VARIANTS);

            fn schema(__rules: &#rt::__private::FieldRules) -> #rt::__private::PrimitiveSchema {
                #rt::__private::single_select_schema::<Self>(__rules)
            }

            fn parse(
                __value: &#rt::__private::Value,
                _: &#rt::__private::FieldRules,
            ) -> ::core::result::Result<Self, #rt::__private::InvalidValue> {
                #rt::__private::parse_single_select::<Self>(__value)
            }

            fn to_value(&self) -> ::core::option::Option<#rt::__private::Value> {
                ::core::option::Option::Some(#rt::__private::Value::String(
                    ::std::string::String::from(<Self as #rt::__private::ElicitEnum>::to_wire(self)),
                ))
            }
        }
    }
}
