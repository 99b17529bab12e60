//! A struct with named fields, a form: its message, one `const` block per field, the schema's
//! properties, the parser (`from_content`), the writer (`to_content`), the optional `Deserialize`
//! and `JsonSchema` impls, and the `Elicit` impl that puts them together.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::Path;
use syn::ext::IdentExt as _;
use syn::spanned::Spanned as _;

use super::FieldNames;
use super::const_checks::{field_checks, flatten_checks};
use super::rules::rules;
use crate::ast::{Fallback, Flatten, Struct};

/// Used when a struct has neither `message` nor a doc comment.
const DEFAULT_MESSAGE: &str = "Please provide the following information.";

/// A struct's expansion, in steps: its message, one `const` block per field, the parser, the
/// writer, the optional `Deserialize`, then the `Elicit` impl that puts them together.
pub(super) fn expand_struct(input: &Struct<'_>, rt: &Path) -> TokenStream {
    let ident = input.ident;
    let message = struct_message(input);
    let fields: Vec<FieldNames<'_>> =
        input.body.iter().enumerate().map(|(i, field)| FieldNames::new(i, field)).collect();
    let items = fields.iter().filter(|names| names.is_question()).map(|names| field_items(names, rt));
    let flatten_checks = flatten_checks(input, &fields, rt);
    let all_names = all_names(&fields, rt);
    let properties = properties(input, &fields, rt);
    let from_content = from_content_body(input, &fields, rt);
    let to_content = to_content_body(&fields, rt);
    let deserialize = deserialize_impl(input, rt);
    let name = ident.to_string();
    let json_schema = json_schema_impl(input, ident, &name, rt);

    quote! {
        #(#items)*
        #flatten_checks
        #all_names

        #[automatically_derived]
        impl #rt::Elicit for #ident {
            const MESSAGE: &'static ::core::primitive::str = #message;
            const FIELD_NAMES: &'static [&'static ::core::primitive::str] = &__NAMES;

            fn requested_schema() -> &'static #rt::__private::RequestedSchema {
                static __SCHEMA: #rt::__private::OnceLock<#rt::__private::RequestedSchema> =
                    #rt::__private::OnceLock::new();
                __SCHEMA.get_or_init(|| {
                    #properties
                })
            }

            fn from_content(
                __content: &#rt::__private::Map<::std::string::String, #rt::__private::Value>,
            ) -> ::core::result::Result<Self, #rt::__private::ContentErrors> {
                #from_content
            }

            fn to_content(&self) -> #rt::__private::Map<::std::string::String, #rt::__private::Value> {
                #to_content
            }
        }

        #deserialize

        #json_schema
    }
}

/// `__NAMES`: every wire name of the form in declaration order, its own properties' and each
/// flattened form's (at every depth, since theirs hold their own flattened names), as a `const`
/// array whose length is known at compile time: [`flatten_checks`] compares them.
fn all_names(fields: &[FieldNames<'_>], rt: &Path) -> TokenStream {
    let mut parts = Vec::new();
    let mut lengths = Vec::new();
    for names in fields.iter().filter(|names| !names.field.skip) {
        if names.field.flatten.is_some() {
            let flat = &names.field_const;
            parts.push(quote!(#flat.names));
            lengths.push(quote!(#flat.names.len()));
        } else {
            let wire = names.wire;
            parts.push(quote!(&[#wire]));
            lengths.push(quote!(1));
        }
    }
    quote! {
        const __NAMES_LEN: ::core::primitive::usize = 0 #(+ #lengths)*;
        const __NAMES: [&::core::primitive::str; __NAMES_LEN] =
            #rt::__private::concat_names::<__NAMES_LEN>(&[#(#parts),*]);
    }
}

/// The schema's properties in declaration order: a `vec!` of the form's own, or, with flattened
/// fields, a vector their forms' properties are spliced into.
fn properties(input: &Struct<'_>, fields: &[FieldNames<'_>], rt: &Path) -> TokenStream {
    let property = |FieldNames { wire, field_const, rules_const, .. }: &FieldNames<'_>| quote!((#field_const.property)(#wire, &#rules_const));
    if fields.iter().all(|names| names.field.flatten.is_none()) {
        let properties = fields.iter().filter(|names| names.is_question()).map(property);
        return quote!(#rt::__private::RequestedSchema::new(::std::vec![#(#properties),*]));
    }
    let host = input.ident.to_string();
    let steps = fields.iter().filter(|names| !names.field.skip).map(|names| match &names.field.flatten {
        Some(Flatten { optional, .. }) => {
            let member = names.field.member.unraw().to_string();
            let flat = &names.field_const;
            quote!((#flat.splice)(&mut __properties, #host, #member, #optional);)
        }
        None => {
            let property = property(names);
            quote!(__properties.push(#property);)
        }
    });
    quote! {
        let mut __properties = ::std::vec::Vec::new();
        #(#steps)*
        #rt::__private::unique_properties(&__properties, #host);
        #rt::__private::RequestedSchema::new(__properties)
    }
}

/// The form's message: `message = ".."`, else the doc comment, else the default.
fn struct_message(input: &Struct<'_>) -> String {
    input
        .attrs
        .message
        .as_ref()
        .map(|m| m.value.clone())
        .or_else(|| input.attrs.doc.clone())
        .unwrap_or_else(|| DEFAULT_MESSAGE.to_owned())
}

/// A field's `const`s: its rules, its accessors, and the check of its default variant.
fn field_items(names: &FieldNames<'_>, rt: &Path) -> TokenStream {
    let FieldNames { index, field, rules_const, field_const, .. } = names;
    let ty = field.ty;
    let rules = rules(field, rt);
    let accessors = match &field.attrs.with {
        // The module's three functions, gathered into a local type the runtime's helpers take.
        Some(with) => {
            let adapter = format_ident!("__With{}", index);
            let path = &with.value;
            // An `Option` field read by a module stays optional: absent is `None`.
            let absent = crate::ty::option_argument(ty).map(|_| {
                quote! {
                    fn absent() -> ::core::option::Option<#ty> {
                        ::core::option::Option::Some(::core::option::Option::None)
                    }
                }
            });
            quote_spanned! {with.span=>
                struct #adapter;
                impl #rt::__private::FieldWith for #adapter {
                    type Value = #ty;
                    fn schema(__rules: &#rt::__private::FieldRules) -> #rt::__private::PrimitiveSchema {
                        #path::schema(__rules)
                    }
                    fn parse(
                        __value: &#rt::__private::Value,
                        __rules: &#rt::__private::FieldRules,
                    ) -> ::core::result::Result<#ty, #rt::__private::InvalidValue> {
                        // The module's error is a `String`, a `&str` or an `InvalidValue`.
                        ::core::result::Result::map_err(#path::parse(__value, __rules), ::core::convert::Into::into)
                    }
                    fn to_value(__value: &#ty) -> ::core::option::Option<#rt::__private::Value> {
                        #path::to_value(__value)
                    }
                    #absent
                }
                const #field_const: #rt::__private::FormField<#ty> =
                    #rt::__private::form_field_via::<#rt::__private::Via<#adapter>>();
            }
        }
        // Spanned on the type, so that a type which is not a form field is underlined there.
        None => quote_spanned! {ty.span()=>
            const #field_const: #rt::__private::FormField<#ty> = #rt::__private::form_field::<#ty>();
        },
    };
    let checks = field_checks(names, rt);
    quote! {
        const #rules_const: #rt::__private::FieldRules = #rules;
        #accessors
        #checks
    }
}

/// `from_content`: one walk over the answer in the order of the fields, every field read (and
/// every failure recorded, validators included) before the value is built and the struct's own
/// validator runs.
fn from_content_body(input: &Struct<'_>, fields: &[FieldNames<'_>], rt: &Path) -> TokenStream {
    let asked: Vec<&FieldNames<'_>> = fields.iter().filter(|names| !names.field.skip).collect();
    let reads = asked.iter().map(|FieldNames { field, wire, rules_const, field_const, var, .. }| {
        if let Some(Flatten { optional, .. }) = &field.flatten {
            let read = if *optional { quote!(read_optional) } else { quote!(read) };
            return quote!(let #var = (#field_const.#read)(__content, &mut __errors););
        }
        let read = match &field.fallback {
            Some(fallback) => {
                let fallback = fallback_fn(fallback);
                quote!((#field_const.read_or)(__walk.value(#wire), #wire, &#rules_const, &mut __errors, #fallback))
            }
            None => quote!((#field_const.read)(__walk.value(#wire), #wire, &#rules_const, &mut __errors)),
        };
        let validate = field.attrs.validate.as_ref().map(|v| {
            let path = &v.value;
            quote_spanned!(v.span=> #rt::__private::validate_field(&#var, #wire, &mut __errors, #path);)
        });
        quote! {
            let #var = #read;
            #validate
        }
    });
    let vars: Vec<_> = asked.iter().map(|names| &names.var).collect();
    let members = fields.iter().map(|FieldNames { field, var, .. }| {
        let member = field.member;
        match (&field.fallback, field.skip) {
            (Some(fallback), true) => {
                let fallback = fallback_fn(fallback);
                quote!(#member: (#fallback)())
            }
            // Spanned on the type, which is what must implement `Default`.
            (None, true) => {
                let ty = field.ty;
                quote_spanned!(ty.span()=> #member: <#ty as ::core::default::Default>::default())
            }
            (_, false) => quote!(#member: #var),
        }
    });
    let value = quote!(Self { #(#members),* });
    let value = match &input.attrs.validate {
        Some(v) => {
            let path = &v.value;
            quote_spanned!(v.span=> #rt::__private::validate_struct(#value, #path))
        }
        None => quote!(::core::result::Result::Ok(#value)),
    };
    if asked.is_empty() {
        return quote! {
            let _ = __content;
            #value
        };
    }
    quote! {
        let mut __errors = #rt::__private::ContentErrors::new();
        let mut __walk = #rt::__private::Walk::new(__content);
        #(#reads)*
        match (#(#vars,)*) {
            (#(::core::option::Option::Some(#vars),)*) if __errors.is_empty() => #value,
            _ => ::core::result::Result::Err(__errors),
        }
    }
}

/// The function that fills in an absent field for serde's `default`.
fn fallback_fn(fallback: &Fallback) -> TokenStream {
    match fallback {
        Fallback::Trait => quote!(::core::default::Default::default),
        Fallback::Path(path) => quote!(#path),
    }
}

/// `to_content`: every field written under its wire name.
fn to_content_body(fields: &[FieldNames<'_>], rt: &Path) -> TokenStream {
    let field_count = fields.len();
    let writes =
        fields.iter().filter(|names| !names.field.skip).map(|FieldNames { field, wire, field_const, .. }| {
            let member = field.member;
            match &field.flatten {
                Some(Flatten { optional: true, .. }) => quote! {
                    if let ::core::option::Option::Some(__form) = &self.#member {
                        (#field_const.write)(&mut __content, __form);
                    }
                },
                Some(Flatten { optional: false, .. }) => quote!((#field_const.write)(&mut __content, &self.#member);),
                None => quote!((#field_const.write)(&mut __content, #wire, &self.#member);),
            }
        });
    quote! {
        let mut __content = #rt::__private::Map::with_capacity(#field_count);
        #(#writes)*
        __content
    }
}

/// `#[elicit(json_schema)]`: a `schemars::JsonSchema` impl giving the `requestedSchema` (a compile
/// error naming the runtime's `schemars` feature when it is off).
fn json_schema_impl(input: &Struct<'_>, ident: &syn::Ident, name: &str, rt: &Path) -> TokenStream {
    if input.attrs.json_schema.is_none() {
        return TokenStream::new();
    }
    quote! { #rt::__impl_json_schema!(#ident, #name); }
}

/// `Deserialize` through the validating parser, for `#[elicit(deserialize)]`.
fn deserialize_impl(input: &Struct<'_>, rt: &Path) -> TokenStream {
    if input.attrs.deserialize.is_none() {
        return TokenStream::new();
    }
    let ident = input.ident;
    let deny_unknown = input.attrs.deny_unknown_fields;
    quote! {
        #[automatically_derived]
        impl<'de> #rt::__private::serde::Deserialize<'de> for #ident {
            fn deserialize<__D: #rt::__private::serde::Deserializer<'de>>(
                __deserializer: __D,
            ) -> ::core::result::Result<Self, __D::Error> {
                #rt::__private::deserialize_validated::<'de, Self, __D>(__deserializer, #deny_unknown)
            }
        }
    }
}
