//! Matching URIs against RFC 6570 level-1 URI templates (`test://items/{id}/data`), the form
//! resource templates take.
//!
//! A level-1 expression `{var}` expands to the variable's value with every character outside the
//! unreserved set (`A-Z a-z 0-9 - . _ ~`) percent-encoded. So a URI matches a template exactly when
//! it is such an expansion: the literals agree and each expression stands for a run of unreserved
//! characters and `%XX` triplets, which decode to the variable's value.

use std::collections::BTreeMap;

/// The longest URI matched against templates. Matching takes time and memory linear in the URI's
/// length times the template's parts; real resource URIs are far shorter than this.
pub(crate) const MAX_URI_LEN: usize = 8 * 1024;

/// A parsed level-1 template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UriTemplate {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    /// Literal text, already in the form it takes in an expansion.
    Literal(String),
    /// A `{name}` expression.
    Variable(String),
}

impl UriTemplate {
    /// Parses `template`; the error says why it is not a level-1 template.
    pub(crate) fn parse(template: &str) -> Result<UriTemplate, String> {
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut rest = template;
        while let Some(c) = rest.chars().next() {
            match c {
                '{' => {
                    let end = rest.find('}').ok_or_else(|| format!("unclosed `{{` in `{template}`"))?;
                    let name = &rest[1..end];
                    check_variable_name(name)?;
                    if parts.iter().any(|part| matches!(part, Part::Variable(seen) if seen == name)) {
                        return Err(format!("`{{{name}}}` appears twice; a template names each variable once"));
                    }
                    if !literal.is_empty() {
                        parts.push(Part::Literal(std::mem::take(&mut literal)));
                    }
                    parts.push(Part::Variable(name.to_owned()));
                    rest = &rest[end + 1..];
                }
                '}' => return Err(format!("unmatched `}}` in `{template}`")),
                // An existing `%XX` triplet is copied; any other `%` is data and gets encoded.
                '%' if is_pct_triplet(rest.as_bytes()) => {
                    literal.push_str(&rest[..3]);
                    rest = &rest[3..];
                }
                c => {
                    // Literal characters a URI cannot hold are percent-encoded in the expansion.
                    if c.is_ascii() && (is_unreserved(c as u8) || is_reserved(c as u8)) {
                        literal.push(c);
                    } else {
                        let mut buf = [0u8; 4];
                        for byte in c.encode_utf8(&mut buf).bytes() {
                            literal.push_str(&format!("%{byte:02X}"));
                        }
                    }
                    rest = &rest[c.len_utf8()..];
                }
            }
        }
        if !literal.is_empty() {
            parts.push(Part::Literal(literal));
        }
        Ok(UriTemplate { parts })
    }

    /// The value of each variable when `uri` is an expansion of this template, else `None`.
    ///
    /// When the split is ambiguous (`{a}-{b}` against `1-2-3`), earlier variables take the
    /// longest value that still lets the rest match. A value that does not decode to UTF-8 makes
    /// the URI match nothing. URIs longer than [`MAX_URI_LEN`] match no template.
    ///
    /// No backtracking: one pass from the end computes, for every part and position, whether the
    /// rest of the template can match from there; one pass from the start then takes each
    /// variable's longest value that keeps that true. Both passes are linear in the URI's length
    /// per part, whatever the URI, so no request can make matching expensive.
    pub(crate) fn match_uri(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        if uri.len() > MAX_URI_LEN {
            return None;
        }
        let uri = uri.as_bytes();
        let runs = ValueRuns::of(uri);
        // `longest[i][x]`: for variable part `i`, the largest boundary `e <= x` from which the
        // parts after `i` match the rest of the URI (usize::MAX: none).
        let mut longest: Vec<Vec<usize>> = vec![Vec::new(); self.parts.len()];
        let mut tail_matches: Vec<bool> = (0..=uri.len()).map(|at| at == uri.len()).collect();
        for (index, part) in self.parts.iter().enumerate().rev() {
            let here = match part {
                Part::Literal(text) => (0..=uri.len())
                    .map(|at| uri[at..].starts_with(text.as_bytes()) && tail_matches[at + text.len()])
                    .collect(),
                Part::Variable(_) => {
                    let mut last = Vec::with_capacity(uri.len() + 1);
                    let mut best = usize::MAX;
                    for (at, &matches) in tail_matches.iter().enumerate() {
                        if matches && runs.is_boundary(at) {
                            best = at;
                        }
                        last.push(best);
                    }
                    let here = (0..=uri.len())
                        .map(|at| runs.end(at).is_some_and(|end| last[end] != usize::MAX && last[end] >= at))
                        .collect();
                    longest[index] = last;
                    here
                }
            };
            tail_matches = here;
        }
        if !tail_matches[0] {
            return None;
        }
        let mut variables = BTreeMap::new();
        let mut at = 0;
        for (index, part) in self.parts.iter().enumerate() {
            match part {
                Part::Literal(text) => at += text.len(),
                Part::Variable(name) => {
                    let end = longest[index][runs.end(at)?];
                    variables.insert(name.clone(), percent_decode(&uri[at..end])?);
                    at = end;
                }
            }
        }
        Some(variables)
    }
}

/// Where a variable's value can end: a value is a run of unreserved characters and `%XX`
/// triplets, so it ends at a token boundary (never inside a triplet) no further than the first
/// byte that is neither.
struct ValueRuns {
    /// `end[at]`: from boundary `at`, the end of the longest run of value tokens; `None` inside a
    /// triplet.
    end: Vec<Option<usize>>,
}

impl ValueRuns {
    fn of(uri: &[u8]) -> ValueRuns {
        // Every `%` followed by two hex digits is a triplet wherever a scan starts: a `%` is not
        // a hex digit, so it is never inside another triplet.
        let mut inside = vec![false; uri.len() + 1];
        for at in 0..uri.len() {
            if is_pct_triplet(&uri[at..]) {
                inside[at + 1] = true;
                inside[at + 2] = true;
            }
        }
        let mut end = vec![None; uri.len() + 1];
        end[uri.len()] = Some(uri.len());
        for at in (0..uri.len()).rev() {
            if inside[at] {
                continue;
            }
            end[at] = if is_pct_triplet(&uri[at..]) {
                end[at + 3]
            } else if is_unreserved(uri[at]) {
                end[at + 1]
            } else {
                Some(at)
            };
        }
        ValueRuns { end }
    }

    fn end(&self, at: usize) -> Option<usize> {
        self.end[at]
    }

    fn is_boundary(&self, at: usize) -> bool {
        self.end[at].is_some()
    }
}

/// Level 1 allows a bare variable name: no operator, no list, no modifier.
fn check_variable_name(name: &str) -> Result<(), String> {
    let bytes = name.as_bytes();
    if bytes.is_empty() {
        return Err("empty expression `{}`".to_owned());
    }
    if let Some(op) = bytes.first().filter(|b| b"+#./;?&=,!@|".contains(b)) {
        return Err(format!("`{{{name}}}` uses the operator `{}`, beyond level 1", char::from(*op)));
    }
    if name.contains([',', ':', '*']) {
        return Err(format!("`{{{name}}}` uses a variable list or modifier, beyond level 1"));
    }
    // varname = varchar *( ["."] varchar ); varchar = ALPHA / DIGIT / "_" / pct-encoded
    let mut at = 0;
    let mut after_dot = true;
    while at < bytes.len() {
        if bytes[at].is_ascii_alphanumeric() || bytes[at] == b'_' {
            at += 1;
        } else if is_pct_triplet(&bytes[at..]) {
            at += 3;
        } else if bytes[at] == b'.' && !after_dot {
            at += 1;
            after_dot = true;
            continue;
        } else {
            return Err(format!("`{{{name}}}` is not a valid variable name"));
        }
        after_dot = false;
    }
    if after_dot {
        return Err(format!("`{{{name}}}` is not a valid variable name"));
    }
    Ok(())
}

fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

fn is_reserved(b: u8) -> bool {
    b":/?#[]@!$&'()*+,;=".contains(&b)
}

fn is_pct_triplet(bytes: &[u8]) -> bool {
    bytes.len() >= 3 && bytes[0] == b'%' && bytes[1].is_ascii_hexdigit() && bytes[2].is_ascii_hexdigit()
}

/// Decodes `%XX` triplets; `None` when the bytes are not UTF-8.
fn percent_decode(encoded: &[u8]) -> Option<String> {
    let mut bytes = Vec::with_capacity(encoded.len());
    let mut at = 0;
    while at < encoded.len() {
        if is_pct_triplet(&encoded[at..]) {
            let hex = std::str::from_utf8(&encoded[at + 1..at + 3]).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            at += 3;
        } else {
            bytes.push(encoded[at]);
            at += 1;
        }
    }
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
        Some(pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect())
    }

    fn template(text: &str) -> UriTemplate {
        UriTemplate::parse(text).unwrap_or_else(|e| unreachable!("`{text}` should parse: {e}"))
    }

    #[test]
    fn matches_level_one_expansions() {
        let t = template("test://template/{id}/data");
        assert_eq!(t.match_uri("test://template/123/data"), vars(&[("id", "123")]));
        assert_eq!(t.match_uri("test://template/a%20b/data"), vars(&[("id", "a b")]));
        assert_eq!(t.match_uri("test://template/caf%C3%A9/data"), vars(&[("id", "café")]));
        // The empty string is a value like any other.
        assert_eq!(t.match_uri("test://template//data"), vars(&[("id", "")]));
    }

    #[test]
    fn refuses_what_no_expansion_produces() {
        let t = template("test://template/{id}/data");
        // A reserved character is always encoded in a level-1 value.
        assert_eq!(t.match_uri("test://template/1/2/data"), None);
        assert_eq!(t.match_uri("test://template/1?x/data"), None);
        assert_eq!(t.match_uri("test://template/123/data/more"), None);
        assert_eq!(t.match_uri("test://other/123/data"), None);
        // Not UTF-8 once decoded.
        assert_eq!(t.match_uri("test://template/%FF/data"), None);
    }

    #[test]
    fn earlier_variables_take_the_longest_value() {
        let t = template("x:{a}-{b}");
        assert_eq!(t.match_uri("x:1-2-3"), vars(&[("a", "1-2"), ("b", "3")]));
        let adjacent = template("x:{a}{b}");
        assert_eq!(adjacent.match_uri("x:12"), vars(&[("a", "12"), ("b", "")]));
    }

    #[test]
    fn ambiguous_templates_match_in_linear_time() {
        // Backtracking took cubic time here (every split of 8,000 dashes among three variables).
        let t = template("x:{a}-{b}-{c}");
        let dashes = format!("x:{}", "-".repeat(MAX_URI_LEN - 2));
        assert_eq!(t.match_uri(&dashes), vars(&[("a", &"-".repeat(MAX_URI_LEN - 4)), ("b", ""), ("c", "")]));
        // And when nothing matches, refusing is as quick.
        let t = template("x:{a}-{b}-{c}/");
        assert_eq!(t.match_uri(&dashes), None);
    }

    #[test]
    fn a_value_ends_only_between_tokens() {
        let t = template("x:{a}{b}");
        assert_eq!(t.match_uri("x:%41%42"), vars(&[("a", "AB"), ("b", "")]));
        let t = template("x:{a}2{b}");
        // `%42` is one token: `a` cannot end after `%4`.
        assert_eq!(t.match_uri("x:%422"), vars(&[("a", "B"), ("b", "")]));
        assert_eq!(t.match_uri("x:1%42"), None);
    }

    #[test]
    fn bounds_the_uri_length() {
        let t = template("x:{a}-{b}");
        let long = format!("x:{}", "a-".repeat(MAX_URI_LEN / 2));
        assert_eq!(t.match_uri(&long), None);
        let just = format!("x:{}", "a-".repeat(MAX_URI_LEN / 2 - 2));
        assert!(t.match_uri(&just).is_some());
    }

    #[test]
    fn literals_match_in_their_expanded_form() {
        let t = template("x:a b/{v}");
        assert_eq!(t.match_uri("x:a%20b/1"), vars(&[("v", "1")]));
        assert_eq!(t.match_uri("x:a b/1"), None);
    }

    #[test]
    fn refuses_templates_beyond_level_one() {
        for bad in [
            "x:{a}/{a}",
            "x:{+path}",
            "x:{#frag}",
            "x:{a,b}",
            "x:{a*}",
            "x:{a:3}",
            "x:{}",
            "x:{a",
            "x:a}",
            "x:{a..b}",
            "x:{.a}",
        ] {
            assert!(UriTemplate::parse(bad).is_err(), "`{bad}` should be refused");
        }
        assert!(UriTemplate::parse("x:{a.b_c%41}").is_ok());
        assert!(UriTemplate::parse("no-variables").is_ok());
    }
}
