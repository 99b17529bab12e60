//! The derive's output for fixed inputs, compared with committed files under `snapshots/`, so a
//! change to code generation shows up as a readable diff (and its size as a line count).
//!
//! Re-bless after an intended change with `ELICIT_BLESS=1 cargo test -p elicit-derive snapshot`,
//! then read the diff.

#![allow(clippy::panic, reason = "a failing test should stop loudly")]

use std::fmt::Write as _;
use std::path::PathBuf;

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use syn::parse_quote;

/// One token per word, a line break after `;`, after `,` directly inside braces (struct literals,
/// match arms) and around brace blocks, four spaces per brace level: enough to read a diff, and to
/// count lines, without depending on a formatter's version.
fn layout(tokens: TokenStream) -> String {
    let mut out = String::new();
    write_tokens(&mut out, tokens, 0, false);
    out.lines().map(str::trim_end).filter(|l| !l.is_empty()).fold(String::new(), |mut acc, line| {
        acc.push_str(line);
        acc.push('\n');
        acc
    })
}

fn write_tokens(out: &mut String, tokens: TokenStream, depth: usize, in_braces: bool) {
    let indent = |out: &mut String, depth: usize| {
        if out.ends_with('\n') {
            out.push_str(&"    ".repeat(depth));
        }
    };
    for token in tokens {
        indent(out, depth);
        match token {
            TokenTree::Group(group) if group.delimiter() == Delimiter::Brace => {
                out.push_str("{\n");
                write_tokens(out, group.stream(), depth + 1, true);
                if !out.ends_with('\n') {
                    out.push('\n');
                }
                out.push_str(&"    ".repeat(depth));
                out.push_str("}\n");
            }
            TokenTree::Group(group) => {
                let (open, close) = match group.delimiter() {
                    Delimiter::Parenthesis => ("(", ")"),
                    Delimiter::Bracket => ("[", "]"),
                    _ => ("", ""),
                };
                // Short groups stay on one line; long ones (argument lists of blocks) nest.
                let inner = group.stream().to_string();
                if inner.contains('{') {
                    out.push_str(open);
                    write_tokens(out, group.stream(), depth + 1, false);
                    indent(out, depth);
                    out.push_str(close);
                    out.push(' ');
                } else {
                    let _ = write!(out, "{open}{inner}{close} ");
                }
            }
            TokenTree::Punct(punct) if punct.as_char() == ';' => out.push_str(";\n"),
            TokenTree::Punct(punct) if punct.as_char() == ',' && in_braces => out.push_str(",\n"),
            other => {
                let _ = write!(out, "{other}");
                if !matches!(&other, TokenTree::Punct(p) if p.spacing() == proc_macro2::Spacing::Joint) {
                    out.push(' ');
                }
            }
        }
    }
}

fn check(name: &str, input: syn::DeriveInput) {
    let actual = layout(crate::expand::derive(&input));
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("snapshots").join(format!("{name}.expanded"));
    if std::env::var_os("ELICIT_BLESS").is_some() {
        std::fs::write(&path, &actual).expect("write the snapshot");
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; bless it with ELICIT_BLESS=1", path.display()));
    assert!(
        expected == actual,
        "the expansion of `{name}` changed ({} lines, was {}); if intended, re-bless with ELICIT_BLESS=1 and read the diff\n{actual}",
        actual.lines().count(),
        expected.lines().count(),
    );
}

#[test]
fn snapshot_of_a_struct() {
    check(
        "struct",
        parse_quote! {
            /// Where to, and how.
            #[elicit(deserialize, json_schema)]
            struct Trip {
                /// The departure airport.
                #[elicit(min_length = 3, max_length = 3, default = "CDG")]
                from: String,
                #[elicit(minimum = 1, maximum = 9, default = 1)]
                travellers: u8,
                #[elicit(minimum = -1.5)]
                budget: Option<f64>,
                #[elicit(min_items = 1, default = ["veg"])]
                meals: Vec<Meal>,
                #[elicit(title = "Cabin", default = "economy")]
                cabin: Cabin,
                #[elicit(format = "uri")]
                homepage: String,
                insured: bool,
            }
        },
    );
}

/// What the newer attributes add: serde's names and defaults, a flattened form, a validator, a
/// `with` module, a skipped field.
#[test]
fn snapshot_of_a_struct_beside_serde() {
    check(
        "serde",
        parse_quote! {
            #[serde(rename_all = "camelCase")]
            #[elicit(validate = checks::dates_in_order)]
            struct Booking {
                #[serde(default)]
                party_size: u8,
                #[elicit(flatten)]
                stay: Stay,
                #[elicit(validate = checks::no_spaces)]
                guest_name: String,
                #[elicit(with = grid)]
                seat: (u8, u8),
                #[serde(skip)]
                cache: Option<String>,
            }
        },
    );
}

#[test]
fn snapshot_of_an_enum() {
    check(
        "enum",
        parse_quote! {
            #[elicit(rename_all = "snake_case")]
            enum Cabin {
                Economy,
                #[elicit(title = "Business class")]
                Business,
            }
        },
    );
}

#[test]
fn snapshot_of_a_failing_derive() {
    check("failing", parse_quote! { struct Trip { #[elicit(min_length = 1)] count: u8 } });
}
