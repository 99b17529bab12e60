//! Phase 4: code generation from the checked intermediate form. It never reports user errors.
//!
//! Generated code is thin: it declares each field's rules as a `const` and calls `#[doc(hidden)]`
//! helpers of the runtime, reached through one path (`::elicit_runtime`, or `crate = ".."`).

use proc_macro2::{Literal, TokenStream};
use quote::{ToTokens as _, format_ident, quote, quote_spanned};
use syn::ext::IdentExt as _;
use syn::spanned::Spanned as _;
use syn::{DeriveInput, Path};

use crate::ast::{Enum, Fallback, Field, Flatten, Input, Struct, Through, Transparent};
use crate::attr::{self, DefaultLit, Number};
use crate::check;
use crate::ctxt::Ctxt;
use crate::dummy;
use crate::ty::Kind;

/// Used when a struct has neither `message` nor a doc comment.
const DEFAULT_MESSAGE: &str = "Please provide the following information.";

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

/// The checks left to constant evaluation (a field's rules against its type, a default's variants
/// and format, flattened names), emitted beside the derive's own errors so that one build reports
/// them too. Fields whose type the derive refused are left out: their error is already reported.
fn checks_beside_errors(input: &Struct<'_>, rt: &Path) -> TokenStream {
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

/// Impls with unreachable bodies beside the compile error, so the user sees the real error and
/// not a cascade of "trait not implemented" errors where the type is used.
fn fallback(input: &DeriveInput, rt: &Path) -> TokenStream {
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
fn field_value_fallback(input: &DeriveInput, rt: &Path, shape: TokenStream) -> TokenStream {
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

fn some<T: quote::ToTokens>(value: Option<T>) -> TokenStream {
    match value {
        Some(value) => quote!(::core::option::Option::Some(#value)),
        None => quote!(::core::option::Option::None),
    }
}

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
fn rules(field: &Field<'_>, rt: &Path) -> TokenStream {
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

/// A struct's expansion, in steps: its message, one `const` block per field, the parser, the
/// writer, the optional `Deserialize`, then the `Elicit` impl that puts them together.
fn expand_struct(input: &Struct<'_>, rt: &Path) -> TokenStream {
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

/// Compile-time checks that a flattened form's wire names (its `FIELD_NAMES`: every name it puts
/// on the wire, at every depth) collide neither with this form's own nor with another flattened
/// form's, whatever the order of the fields. A form implemented by hand lists no names; its
/// collisions are found when the schema is first built (`unique_properties`).
fn flatten_checks(input: &Struct<'_>, fields: &[FieldNames<'_>], rt: &Path) -> TokenStream {
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

/// A field's compile-time checks that the derive leaves to constant evaluation: the variants of a
/// multi-select default, the rules against a type it cannot name, constant expressions, and the
/// format of a string default.
fn field_checks(names: &FieldNames<'_>, rt: &Path) -> TokenStream {
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

/// `Deserialize` through the validating parser, for `#[elicit(deserialize)]`.
/// `#[elicit(json_schema)]`: a `schemars::JsonSchema` impl giving the `requestedSchema` (a compile
/// error naming the runtime's `schemars` feature when it is off).
fn json_schema_impl(input: &Struct<'_>, ident: &syn::Ident, name: &str, rt: &Path) -> TokenStream {
    if input.attrs.json_schema.is_none() {
        return TokenStream::new();
    }
    quote! { #rt::__impl_json_schema!(#ident, #name); }
}

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

/// `transparent`: the newtype is a field type through its one field.
fn expand_transparent(input: &Transparent<'_>, rt: &Path) -> TokenStream {
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

fn expand_enum(input: &Enum<'_>, rt: &Path) -> TokenStream {
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
