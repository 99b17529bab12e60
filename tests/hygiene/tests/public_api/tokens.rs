//! Tokens printed on one line the way rustdoc spells a signature (`&'a self, x: Option<&str>`),
//! so the listing reads like Rust and does not change with the source's layout.

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};
use quote::ToTokens;

enum Atom {
    Word(String),
    Op(String),
    Open(char),
    Close(char),
}

/// `tokens` on one line.
pub(crate) fn text(tokens: &impl ToTokens) -> String {
    let mut atoms = Vec::new();
    split(tokens.to_token_stream(), &mut atoms);
    let mut out = String::new();
    for (i, atom) in atoms.iter().enumerate() {
        if i > 0 && space(&atoms[i - 1], atom) {
            out.push(' ');
        }
        match atom {
            Atom::Word(s) | Atom::Op(s) => out.push_str(s),
            Atom::Open(c) | Atom::Close(c) => out.push(*c),
        }
    }
    out
}

const JOINED: [&str; 6] = ["::", "->", "=>", "..", "...", "..="];

fn split(tokens: TokenStream, out: &mut Vec<Atom>) {
    let mut iter = tokens.into_iter().peekable();
    while let Some(tree) = iter.next() {
        match tree {
            TokenTree::Group(group) => {
                let (open, close) = match group.delimiter() {
                    Delimiter::Parenthesis => ('(', ')'),
                    Delimiter::Bracket => ('[', ']'),
                    Delimiter::Brace => ('{', '}'),
                    Delimiter::None => {
                        split(group.stream(), out);
                        continue;
                    }
                };
                out.push(Atom::Open(open));
                split(group.stream(), out);
                out.push(Atom::Close(close));
            }
            TokenTree::Ident(ident) => out.push(Atom::Word(ident.to_string())),
            TokenTree::Literal(literal) => out.push(Atom::Word(literal.to_string())),
            TokenTree::Punct(punct) => {
                let mut op = punct.as_char().to_string();
                if op == "'"
                    && let Some(TokenTree::Ident(name)) = iter.peek()
                {
                    op.push_str(&name.to_string());
                    iter.next();
                    out.push(Atom::Word(op));
                    continue;
                }
                let mut spacing = punct.spacing();
                while spacing == Spacing::Joint {
                    let Some(TokenTree::Punct(next)) = iter.peek() else { break };
                    let joined = format!("{op}{}", next.as_char());
                    if !JOINED.contains(&joined.as_str()) {
                        break;
                    }
                    op = joined;
                    spacing = next.spacing();
                    iter.next();
                }
                out.push(Atom::Op(op));
            }
        }
    }
}

const KEYWORDS: [&str; 8] = ["for", "in", "as", "dyn", "impl", "mut", "where", "return"];

fn space(before: &Atom, after: &Atom) -> bool {
    use Atom::{Close, Op, Open, Word};
    match (before, after) {
        (Open('{'), Close('}')) => false,
        (Open('{'), _) | (_, Close('}')) => true,
        (Open(_), _) | (_, Close(_)) => false,
        (_, Op(op)) if matches!(op.as_str(), "," | ";" | ":" | "::" | ">") => false,
        (Op(op), _) if matches!(op.as_str(), "::" | "&" | "*" | "<" | "?" | "!" | "-" | "#") => false,
        (Word(word), Op(op)) if op == "<" => KEYWORDS.contains(&word.as_str()) && word != "impl",
        (Close(_), Op(op)) if op == "<" => false,
        (Word(word), Open('(')) => KEYWORDS.contains(&word.as_str()),
        _ => true,
    }
}
