//! A field's declared rules as one `FieldRules` constant expression, literal values and constant
//! expressions alike.

use proc_macro2::{Literal, TokenStream};
use quote::{ToTokens as _, format_ident, quote};
use syn::Path;

use crate::ast::Field;
use crate::attr::{self, DefaultLit, Number};
use crate::ty::Kind;

fn bound(rt: &Path, n: Number) -> TokenStream {
    // A literal token is unsigned: a negative bound is `-` before its magnitude.
    let (variant, negative, magnitude) = match n {
        Number::Int(i128::MIN) => return quote!(#rt::__private::Bound::Int(::core::primitive::i128::MIN)),
        Number::Int(i) => (quote!(Int), i < 0, Literal::i128_suffixed(i.abs())),
        Number::Float(f) => (quote!(Float), f.is_sign_negative(), Literal::f64_suffixed(f.abs())),
    };
    let sign = negative.then(|| quote!(-));
    quote!(#rt::__private::Bound::#variant(#sign #magnitude))
}

/// The field's `FieldRules` as a `const` expression: the declared rules over `FieldRules::EMPTY`.
pub(super) fn rules(field: &Field<'_>, rt: &Path) -> TokenStream {
    let a = &field.attrs;
    let count = |v: &attr::Spanned<u64>| Literal::u64_suffixed(v.value).into_token_stream();
    let description = a.description.as_ref().map(|d| d.value.clone()).or_else(|| a.doc.clone());
    let format = a.format.as_ref().map(|f| {
        let variant = format_ident!("{}", f.value.variant());
        quote!(#rt::__private::StringFormat::#variant)
    });
    let default = a.default.as_ref().map(|d| match &d.value {
        DefaultLit::Str(s) => quote!(#rt::__private::DefaultValue::Str(#s)),
        DefaultLit::Bool(b) => quote!(#rt::__private::DefaultValue::Bool(#b)),
        DefaultLit::Number(n) => {
            let n = bound(rt, *n);
            quote!(#rt::__private::DefaultValue::Number(#n))
        }
        DefaultLit::List(items) => quote!(#rt::__private::DefaultValue::List(&[#(#items),*])),
    });
    let declared = [
        ("title", a.title.as_ref().map(|t| t.value.to_token_stream())),
        ("description", description.map(|d| d.into_token_stream())),
        ("min_length", a.min_length.as_ref().map(count)),
        ("max_length", a.max_length.as_ref().map(count)),
        ("minimum", a.minimum.as_ref().map(|v| bound(rt, v.value))),
        ("maximum", a.maximum.as_ref().map(|v| bound(rt, v.value))),
        ("min_items", a.min_items.as_ref().map(count)),
        ("max_items", a.max_items.as_ref().map(count)),
        ("format", format),
        ("default", default),
        ("required", required(field)),
    ];
    let declared = declared.map(|(name, value)| {
        let constant = a.consts.iter().find(|c| c.key == name).map(|c| constant(rt, c, field.field_type.as_ref()));
        (name, value.or(constant))
    });
    // Only the declared rules are spelled out, which keeps each field's `const` a few lines.
    let set: Vec<_> = declared
        .into_iter()
        .filter_map(|(name, value)| {
            let name = format_ident!("{}", name);
            value.map(|value| quote!(#name: ::core::option::Option::Some(#value)))
        })
        .collect();
    if set.is_empty() {
        quote!(#rt::__private::FieldRules::EMPTY)
    } else {
        quote!(#rt::__private::FieldRules { #(#set,)* ..#rt::__private::FieldRules::EMPTY })
    }
}

/// A key's constant expression as the rules' value: a length as `u64`, a bound as the field's
/// kind of number, a default as the field's kind of default.
fn constant(rt: &Path, c: &attr::ConstValue, ft: Option<&crate::ty::FieldType>) -> TokenStream {
    let expr = &c.expr;
    let kind = ft.map(|ft| &ft.kind);
    let number = |expr: &syn::Expr| match ft {
        Some(crate::ty::FieldType { kind: Kind::Integer { .. }, .. }) => {
            quote!(#rt::__private::Bound::Int((#expr) as ::core::primitive::i128))
        }
        // A type the derive cannot name: the kind of number its `SHAPE` says.
        Some(crate::ty::FieldType { kind: Kind::Other, inner }) => quote! {
            #rt::__private::Bound::of_shape(
                <#inner as #rt::__private::FieldValue>::SHAPE,
                (#expr) as ::core::primitive::i128,
                (#expr) as ::core::primitive::f64,
            )
        },
        _ => quote!(#rt::__private::Bound::Float((#expr) as ::core::primitive::f64)),
    };
    match c.key {
        attr::MINIMUM | attr::MAXIMUM => number(expr),
        attr::DEFAULT => match kind {
            Some(Kind::Integer { .. } | Kind::Float { .. }) => {
                let n = number(expr);
                quote!(#rt::__private::DefaultValue::Number(#n))
            }
            Some(Kind::Bool) => quote!(#rt::__private::DefaultValue::Bool(#expr)),
            Some(Kind::MultiSelect { .. }) => quote!(#rt::__private::DefaultValue::List(#expr)),
            _ => quote!(#rt::__private::DefaultValue::Str(#expr)),
        },
        _ => quote!((#expr) as ::core::primitive::u64),
    }
}

/// `required` in the rules: forced by `#[elicit(required)]`, or off for a field serde fills in
/// with a function when absent.
fn required(field: &Field<'_>) -> Option<TokenStream> {
    if field.attrs.required.is_some() {
        Some(quote!(true))
    } else if field.fallback.is_some() && field.attrs.default.is_none() {
        Some(quote!(false))
    } else {
        None
    }
}
