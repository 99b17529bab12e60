//! The compile-time checks the derive cannot make itself and leaves to constant evaluation (a
//! default's enum variants and format, rules against a type it cannot name, constant expressions,
//! flattened forms' wire names), each a `const` spanned on the user's token that it is about.

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::Path;
use syn::ext::IdentExt as _;
use syn::spanned::Spanned as _;

use super::{FieldNames, some};
use crate::ast::{Field, Flatten, Struct};
use crate::attr::{self, DefaultLit};
use crate::ty::Kind;

/// For a field with constant-expression values, a `const` evaluation that fails when its rules
/// contradict themselves or the field's integer type, spanned on the first such key.
fn consistency_check(field: &Field<'_>, rules_const: &syn::Ident, rt: &Path) -> TokenStream {
    let Some(first) = field.attrs.consts.first() else { return TokenStream::new() };
    let range = match field.field_type.as_ref().map(|ft| &ft.kind) {
        // Checked with the type's own range by `shape_check`.
        Some(Kind::Other) => return TokenStream::new(),
        Some(Kind::Integer { min, max, .. }) => {
            let (min, max) = (Literal::i128_suffixed(*min), Literal::i128_suffixed(*max));
            quote!(::core::option::Option::Some((#min, #max)))
        }
        _ => quote!(::core::option::Option::None),
    };
    respan(quote!(const _: () = #rt::__private::assert_consistent(&#rules_const, #range);), first.key_span)
}

/// A `const` assertion that an enum default names a variant; the enum's variants are only known
/// to the enum's own derive, so the check runs at constant evaluation, spanned on the default.
/// The constant is named after the field because rustc names it in the error ("evaluation of
/// `_::__DEFAULT_OF_CABIN` failed").
fn default_variant_check(index: usize, field: &Field<'_>, rt: &Path) -> TokenStream {
    let (Some(ft), Some(default)) = (&field.field_type, &field.attrs.default) else { return TokenStream::new() };
    let span = default.span;
    // ASCII only: uppercasing other letters may leave a lowercase one (`ĸ`), which would draw a
    // `non_upper_case_globals` warning on the user's default.
    let member = field.member.unraw().to_string();
    let name = if member.is_ascii() {
        format_ident!("__DEFAULT_OF_{}", member.to_ascii_uppercase(), span = span)
    } else {
        format_ident!("__DEFAULT_OF_FIELD_{}", index, span = span)
    };
    let (element, values, message) = match (&ft.kind, &default.value) {
        (Kind::MultiSelect { element }, DefaultLit::List(values)) => (
            element,
            values.as_slice(),
            "`default` lists a value that is not a variant of this field's enum; use the wire values of its variants (after `rename`/`rename_all`)".to_owned(),
        ),
        _ => return TokenStream::new(),
    };
    quote_spanned! {span=>
        const #name: () = ::core::assert!(
            #rt::__private::has_variants(<#element as #rt::__private::ElicitEnum>::VARIANTS, &[#(#values),*]),
            #message
        );
    }
}

/// Compile-time checks that a flattened form's wire names (its `FIELD_NAMES`: every name it puts
/// on the wire, at every depth) collide neither with this form's own nor with another flattened
/// form's, whatever the order of the fields. A form implemented by hand lists no names; its
/// collisions are found when the schema is first built (`unique_properties`).
pub(super) fn flatten_checks(input: &Struct<'_>, fields: &[FieldNames<'_>], rt: &Path) -> TokenStream {
    let own: Vec<&str> =
        input.body.iter().filter(|f| !f.skip && f.flatten.is_none()).map(|f| f.wire.as_str()).collect();
    let flattened: Vec<&FieldNames<'_>> =
        fields.iter().filter(|names| !names.field.skip && names.field.flatten.is_some()).collect();
    let mut checks = TokenStream::new();
    for (i, names) in flattened.iter().enumerate() {
        let FieldNames { field, field_const, .. } = names;
        let Some(Flatten { form, .. }) = &field.flatten else { continue };
        // The one place the form's type is named: `flattened_form`'s bound reports a type that
        // is not a form once, on the type.
        checks.extend(quote_spanned! {form.span()=>
            const #field_const: #rt::__private::Flattened<#form> = #rt::__private::flattened_form::<#form>();
        });
        let span = field.member.span();
        checks.extend(respan(
            quote! {
                const _: () = ::core::assert!(
                    #rt::__private::disjoint(#field_const.names, &[#(#own),*]),
                    "a property of this flattened form has the wire name of a field of the form it is flattened into"
                );
            },
            span,
        ));
        for other in &flattened[i + 1..] {
            let other = &other.field_const;
            checks.extend(respan(
                quote! {
                    const _: () = ::core::assert!(
                        #rt::__private::disjoint(#field_const.names, #other.names),
                        "a property of this flattened form has the wire name of a property of another flattened form"
                    );
                },
                span,
            ));
        }
    }
    checks
}

/// `tokens` with every token spanned at `span`: a `const` evaluation that fails is reported on
/// the span of the whole expression, which must then be the user's token, not the derive.
fn respan(tokens: TokenStream, span: proc_macro2::Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut token| {
            if let proc_macro2::TokenTree::Group(group) = &token {
                let mut respanned = proc_macro2::Group::new(group.delimiter(), respan(group.stream(), span));
                respanned.set_span(span);
                token = proc_macro2::TokenTree::Group(respanned);
            } else {
                token.set_span(span);
            }
            token
        })
        .collect()
}

/// A field's compile-time checks that the derive leaves to constant evaluation: the variants of a
/// multi-select default, the rules against a type it cannot name, constant expressions, and the
/// format of a string default.
pub(super) fn field_checks(names: &FieldNames<'_>, rt: &Path) -> TokenStream {
    let FieldNames { index, field, rules_const, .. } = names;
    let mut checks = default_variant_check(*index, field, rt);
    checks.extend(shape_check(field, rules_const, rt));
    checks.extend(consistency_check(field, rules_const, rt));
    checks.extend(default_format_check(field, rules_const, rt));
    checks
}

/// For a string field with a format (declared, or implied by its type) and a default, a `const`
/// evaluation that fails when the default certainly does not have that format, spanned on the
/// default: the form must not pre-fill an answer its own parser refuses.
fn default_format_check(field: &Field<'_>, rules_const: &syn::Ident, rt: &Path) -> TokenStream {
    // A type the derive cannot name (an alias of `String`) is checked against a declared format;
    // one its type implies is checked when the schema is built.
    let implied = match field.field_type.as_ref().map(|ft| &ft.kind) {
        Some(Kind::String { format, .. }) => format,
        Some(Kind::Other) => &None,
        _ => return TokenStream::new(),
    };
    if field.attrs.with.is_some() || (field.attrs.format.is_none() && implied.is_none()) {
        return TokenStream::new();
    }
    let span = match (&field.attrs.default, field.attrs.consts.iter().find(|c| c.key == attr::DEFAULT)) {
        (Some(default), _) => default.span,
        (None, Some(constant)) => constant.key_span,
        (None, None) => return TokenStream::new(),
    };
    let implied = some(implied.map(|f| {
        let variant = format_ident!("{}", f.variant());
        quote!(#rt::__private::StringFormat::#variant)
    }));
    respan(quote!(const _: () = #rt::__private::assert_default_format(&#rules_const, #implied);), span)
}

/// For a type the derive cannot classify by name (a newtype, an alias, an enum), a `const`
/// evaluation that fails when the field's rules do not fit the type's `FieldValue::SHAPE`, or
/// contradict themselves or the type's integer range (`FieldValue::RANGE`), spanned on the first
/// declared key.
fn shape_check(field: &Field<'_>, rules_const: &syn::Ident, rt: &Path) -> TokenStream {
    let (Some(ft), None) = (&field.field_type, &field.attrs.with) else { return TokenStream::new() };
    if !matches!(ft.kind, Kind::Other) {
        return TokenStream::new();
    }
    let a = &field.attrs;
    let keys = [
        a.min_length.as_ref().map(|k| k.key),
        a.max_length.as_ref().map(|k| k.key),
        a.minimum.as_ref().map(|k| k.key),
        a.maximum.as_ref().map(|k| k.key),
        a.min_items.as_ref().map(|k| k.key),
        a.max_items.as_ref().map(|k| k.key),
        a.format.as_ref().map(|k| k.key),
        a.default.as_ref().map(|k| k.span),
    ];
    let constants = a.consts.iter().map(|c| c.key_span);
    let Some(span) = keys.into_iter().flatten().chain(constants).next() else { return TokenStream::new() };
    let inner = &ft.inner;
    let value = quote!(<#inner as #rt::__private::FieldValue>);
    let check = quote!(const _: () = #rt::__private::assert_fits(#value::SHAPE, #value::RANGE, &#rules_const););
    respan(check, span)
}
