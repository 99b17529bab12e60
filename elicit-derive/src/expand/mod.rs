//! Phase 4: code generation from the checked intermediate form. It never reports user errors.
//!
//! Generated code is thin: it declares each field's rules as a `const` and calls `#[doc(hidden)]`
//! helpers of the runtime, reached through one path (`::elicit_runtime`, or `crate = ".."`).
//!
//! One module per shape of input: [`structs`] (a form: its `Elicit` impl, schema, parser and
//! writer), [`enums`] (a unit enum: a single-select field type) and [`transparent`] (a newtype:
//! a field type through its one field). A struct's fields draw on [`rules`] (each field's
//! `FieldRules` as a `const`) and [`const_checks`] (what is left to constant evaluation), and
//! [`on_error`] holds what is emitted beside the derive's errors. The entry point and the helpers
//! those modules share live here.

mod const_checks;
mod enums;
mod on_error;
mod rules;
mod structs;
mod transparent;

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned as _;
use syn::{DeriveInput, Path};

use crate::ast::{Field, Input};
use crate::check;
use crate::ctxt::Ctxt;
use crate::dummy;

use self::enums::expand_enum;
use self::on_error::{checks_beside_errors, fallback, field_value_fallback};
use self::structs::expand_struct;
use self::transparent::expand_transparent;

pub(crate) fn derive(input: &DeriveInput) -> TokenStream {
    let cx = Ctxt::new();
    let parsed = Input::from_syn(&cx, input);
    match &parsed {
        Some(Input::Struct(s)) => check::check_struct(&cx, s),
        Some(Input::Enum(e)) => check::check_enum(&cx, e),
        Some(Input::Transparent(_)) | None => {}
    }
    let rt = runtime_path(&parsed);
    match (cx.check(), parsed) {
        (Ok(()), Some(Input::Struct(s))) => dummy::wrap_in_const(expand_struct(&s, &rt)),
        (Ok(()), Some(Input::Enum(e))) => dummy::wrap_in_const(expand_enum(&e, &rt)),
        (Ok(()), Some(Input::Transparent(t))) => dummy::wrap_in_const(expand_transparent(&t, &rt)),
        // `from_syn` returns `None` only after reporting an error, so this arm is not reached.
        (Ok(()), None) => TokenStream::new(),
        (Err(error), parsed) => {
            let mut out = error.to_compile_error();
            // A newtype whose derive failed still has its field's shape, so the forms using it
            // are checked against that shape, not against a stand-in that misleads.
            let mut items = match &parsed {
                Some(Input::Transparent(t)) => {
                    let ty = t.body.ty;
                    field_value_fallback(input, &rt, quote!(<#ty as #rt::__private::FieldValue>::SHAPE))
                }
                _ => fallback(input, &rt),
            };
            // Every mistake in one build: the field types are still checked beside the attribute
            // errors, so an unsupported type does not wait for them to be fixed (types the derive
            // refused by name are not reported twice).
            if let Some(Input::Struct(s)) = &parsed {
                items.extend(s.body.iter().filter(|f| f.field_type.is_some() && f.attrs.with.is_none()).map(|f| {
                    let ty = f.ty;
                    quote_spanned! {ty.span()=> const _: () = #rt::__private::assert_field::<#ty>(); }
                }));
                items.extend(checks_beside_errors(s, &rt));
            }
            out.extend(dummy::wrap_in_const(items));
            out
        }
    }
}

fn runtime_path(parsed: &Option<Input<'_>>) -> Path {
    let krate = match parsed {
        Some(Input::Struct(s)) => s.attrs.krate.as_ref(),
        Some(Input::Enum(e)) => e.attrs.krate.as_ref(),
        Some(Input::Transparent(t)) => t.attrs.krate.as_ref(),
        None => None,
    };
    match krate {
        Some(path) => path.value.clone(),
        None => syn::parse_quote!(::elicit_runtime),
    }
}

fn some<T: quote::ToTokens>(value: Option<T>) -> TokenStream {
    match value {
        Some(value) => quote!(::core::option::Option::Some(#value)),
        None => quote!(::core::option::Option::None),
    }
}

/// The names the expansion gives field `i`.
struct FieldNames<'a> {
    index: usize,
    field: &'a Field<'a>,
    wire: &'a str,
    rules_const: syn::Ident,
    field_const: syn::Ident,
    var: syn::Ident,
}

impl<'a> FieldNames<'a> {
    /// A field that is one question of the form: neither skipped nor flattened.
    fn is_question(&self) -> bool {
        !self.field.skip && self.field.flatten.is_none()
    }

    fn new(index: usize, field: &'a Field<'a>) -> Self {
        FieldNames {
            index,
            field,
            wire: &field.wire,
            rules_const: format_ident!("__RULES_{}", index),
            field_const: format_ident!("__FIELD_{}", index),
            var: format_ident!("__field{}", index),
        }
    }
}

#[cfg(test)]
mod tests {
    use syn::parse_quote;

    use super::derive;

    fn expand(input: syn::DeriveInput) -> String {
        let output = derive(&input);
        // The output must be valid items whichever way the derive went.
        let _: syn::File = syn::parse2(output.clone()).expect("derive output parses as items");
        output.to_string()
    }

    #[test]
    fn a_valid_struct_expands_without_errors() {
        let output = expand(parse_quote! {
            #[elicit(crate = "::rt")]
            struct Trip { #[elicit(default = "a")] cabin: Cabin, from: String }
        });
        assert!(!output.contains("compile_error"), "{output}");
        assert!(output.contains(":: rt :: __private"), "{output}");
        assert!(!output.contains("elicit_runtime"), "{output}");
        assert!(output.contains("assert_fits (< Cabin as :: rt :: __private :: FieldValue > :: SHAPE"), "{output}");
    }

    #[test]
    fn a_failing_derive_still_implements_the_traits() {
        let output = expand(parse_quote! {
            struct Trip { #[elicit(min_length = 1)] count: u8, #[elicit(colour = "red")] name: String }
        });
        assert_eq!(output.matches("compile_error").count(), 2, "{output}");
        assert!(output.contains("impl :: elicit_runtime :: Elicit for Trip"), "{output}");
        assert!(output.contains("unreachable"), "{output}");

        let output = expand(parse_quote! { #[elicit(message = "m")] enum Cabin { A } });
        assert!(output.contains("ElicitEnum for Cabin"), "{output}");
        assert!(output.contains("FieldValue for Cabin"), "{output}");
    }
}
