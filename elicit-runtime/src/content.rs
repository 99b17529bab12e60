//! Validation of the `content` a client returns for a form-mode elicitation.
//!
//! Derived parsers are thin: they call the functions here (through [`crate::field::FieldValue`]),
//! which check every constraint the schema states and collect every failing field instead of
//! stopping at the first, so a user can be told everything that needs fixing at once.

use std::borrow::Cow;
use std::fmt;

use serde_json::Value;

use crate::schema::StringFormat;

/// The reason text of a [`FieldErrorKind::Missing`] field.
pub const MISSING_REASON: &str = "is required";

/// What kind of failure a [`FieldError`] is, so callers need not match on its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FieldErrorKind {
    /// A required field is absent from the answer.
    Missing,
    /// The field is present but its value breaks the schema (type, bound, format, choice).
    Invalid,
}

/// One field of the answer that failed: its wire name and why.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FieldError {
    /// The property's wire name.
    pub field: Cow<'static, str>,
    /// Missing or invalid.
    pub kind: FieldErrorKind,
    /// What is wrong, phrased to follow the field name (`"must be at least 1"`).
    pub reason: String,
}

impl FieldError {
    /// `true` when a required field is absent.
    pub fn is_missing(&self) -> bool {
        self.kind == FieldErrorKind::Missing
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` {}", self.field, self.reason)
    }
}

impl std::error::Error for FieldError {}

/// Every field of an answer that failed validation, in declaration order.
///
/// ```
/// use elicit_runtime::content::ContentErrors;
///
/// let mut errors = ContentErrors::new();
/// errors.push("age", "must be at least 18");
/// errors.push_missing("email");
/// assert_eq!(errors.to_string(), "`age` must be at least 18; `email` is required");
/// assert!(errors.get("email").unwrap().is_missing());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ContentErrors {
    errors: Vec<FieldError>,
}

impl ContentErrors {
    /// No errors yet.
    pub const fn new() -> Self {
        ContentErrors { errors: Vec::new() }
    }

    /// Records that `field` failed for `reason` ([`FieldErrorKind::Invalid`]); an absent required
    /// field is [`Self::push_missing`].
    pub fn push(&mut self, field: impl Into<Cow<'static, str>>, reason: impl Into<String>) {
        self.errors.push(FieldError { field: field.into(), kind: FieldErrorKind::Invalid, reason: reason.into() });
    }

    /// Records that the required `field` is absent.
    pub fn push_missing(&mut self, field: impl Into<Cow<'static, str>>) {
        self.errors.push(FieldError {
            field: field.into(),
            kind: FieldErrorKind::Missing,
            reason: MISSING_REASON.into(),
        });
    }

    /// Appends every failure of `other` (a flattened form's, a validator's).
    pub fn extend(&mut self, other: ContentErrors) {
        self.errors.extend(other.errors);
    }

    /// `true` when nothing failed.
    pub fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }

    /// How many fields failed.
    pub fn len(&self) -> usize {
        self.errors.len()
    }

    /// The failures, in declaration order.
    pub fn iter(&self) -> std::slice::Iter<'_, FieldError> {
        self.errors.iter()
    }

    /// The failure recorded for `field`, if any.
    pub fn get(&self, field: &str) -> Option<&FieldError> {
        self.errors.iter().find(|e| e.field == field)
    }
}

impl<'a> IntoIterator for &'a ContentErrors {
    type Item = &'a FieldError;
    type IntoIter = std::slice::Iter<'a, FieldError>;
    fn into_iter(self) -> Self::IntoIter {
        self.errors.iter()
    }
}

impl fmt::Display for ContentErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, error) in self.errors.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{error}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ContentErrors {}

/// Shortens attacker-chosen text before it goes into an error message.
pub(crate) fn clip(text: &str) -> String {
    const MAX: usize = 64;
    match text.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// The JSON type of `value`, as a user would name it in an error message.
pub fn json_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a number",
        Value::Number(_) => "an integer",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `"expected X, found Y"`.
pub fn expected(what: &str, found: &Value) -> String {
    format!("must be {what}, found {}", json_type_name(found))
}

/// Checks a string's length, counted in Unicode scalar values as JSON Schema counts it.
pub fn check_length(text: &str, min: Option<u64>, max: Option<u64>) -> Result<(), String> {
    // Counting stops as soon as the answer is known: a hostile multi-megabyte answer costs no more
    // than the larger bound, and nothing at all when there is none.
    let limit = match (min, max) {
        (None, None) => return Ok(()),
        (_, Some(max)) => max.saturating_add(1),
        (Some(min), None) => min,
    };
    let count = text.chars().take(usize::try_from(limit).unwrap_or(usize::MAX)).count() as u64;
    if let Some(min) = min
        && count < min
    {
        return Err(format!("must be at least {min} characters long"));
    }
    if let Some(max) = max
        && count > max
    {
        return Err(format!("must be at most {max} characters long"));
    }
    Ok(())
}

/// Checks `text` against a declared format.
pub fn check_format(text: &str, format: StringFormat) -> Result<(), String> {
    let ok = match format {
        StringFormat::Email => is_email(text),
        StringFormat::Uri => is_uri(text),
        StringFormat::Date => is_date(text),
        StringFormat::DateTime => is_date_time(text),
    };
    if ok {
        Ok(())
    } else {
        Err(match format {
            StringFormat::Email => "must be an e-mail address".to_owned(),
            StringFormat::Uri => "must be an absolute URI".to_owned(),
            StringFormat::Date => "must be a date (YYYY-MM-DD)".to_owned(),
            StringFormat::DateTime => "must be a date and time with offset (YYYY-MM-DDThh:mm:ssZ)".to_owned(),
        })
    }
}

/// An RFC 5321 `Mailbox` (`local-part@domain`), as JSON Schema's `email` format means it.
///
/// That grammar is ASCII only (internationalised addresses are the separate `idn-email` format),
/// has no display name (`Ada <ada@example.com>` is not a mailbox), and its domain is either a host
/// name of letters, digits and hyphens or an address literal (`[192.0.2.1]`, `[IPv6:2001:db8::1]`).
pub(crate) fn is_email(text: &str) -> bool {
    // The parser's own limits (64-byte local part, 254-byte domain), checked before it reads a
    // hostile multi-megabyte answer.
    if text.len() > MAX_EMAIL_LEN || !text.is_ascii() {
        return false;
    }
    // The crate's two part checks, as its parser runs them after splitting at the last `@`; its
    // parser would also look for a display name (refused here: no `Name <...>` passes the part
    // checks either) and copy the address into a `String`.
    let Some((local, domain)) = text.rsplit_once('@') else {
        return false;
    };
    email_address::EmailAddress::is_valid_local_part(local)
        && email_address::EmailAddress::is_valid_domain(domain)
        && is_mailbox_domain(domain)
}

/// 64-byte local part, `@`, 254-byte domain.
const MAX_EMAIL_LEN: usize = 64 + 1 + 254;

/// A host name, or an address literal that is an IPv4 or IPv6 address.
fn is_mailbox_domain(domain: &str) -> bool {
    match domain.strip_prefix('[').and_then(|d| d.strip_suffix(']')) {
        Some(literal) => match literal.get(..5) {
            Some(tag) if tag.eq_ignore_ascii_case("IPv6:") => literal[5..].parse::<std::net::Ipv6Addr>().is_ok(),
            _ => literal.parse::<std::net::Ipv4Addr>().is_ok(),
        },
        None => is_host_name(domain),
    }
}

/// RFC 5321 `Domain`: dot-separated labels of 1 to 63 letters, digits and hyphens, neither starting
/// nor ending with a hyphen, at most 253 characters in all.
fn is_host_name(domain: &str) -> bool {
    domain.len() <= 253
        && domain.split('.').all(|label| {
            let bytes = label.as_bytes();
            (1..=63).contains(&bytes.len())
                && bytes.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'-')
                && bytes.first() != Some(&b'-')
                && bytes.last() != Some(&b'-')
        })
}

/// An RFC 3986 URI with a scheme (JSON Schema's `uri`, which excludes relative references).
pub(crate) fn is_uri(text: &str) -> bool {
    fluent_uri::Uri::parse(text).is_ok()
}

fn digits(bytes: &[u8]) -> Option<u32> {
    if bytes.is_empty() || !bytes.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(bytes.iter().fold(0, |acc, b| acc * 10 + u32::from(b - b'0')))
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// An RFC 3339 `full-date`: `YYYY-MM-DD` naming a real day.
pub(crate) fn is_date(text: &str) -> bool {
    let b = text.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    match (digits(&b[0..4]), digits(&b[5..7]), digits(&b[8..10])) {
        (Some(year), Some(month), Some(day)) => {
            (1..=12).contains(&month) && day >= 1 && day <= days_in_month(year, month)
        }
        _ => false,
    }
}

/// An RFC 3339 `date-time`: a full date, `T`, a time with optional fraction, and an offset.
///
/// A leap second (`:60`) is accepted only where RFC 3339 allows it: at 23:59:60 UTC.
pub(crate) fn is_date_time(text: &str) -> bool {
    let b = text.as_bytes();
    if b.len() < 20 || !matches!(b[10], b'T' | b't') {
        return false;
    }
    let Ok(date) = std::str::from_utf8(&b[..10]) else { return false };
    if !is_date(date) {
        return false;
    }
    let time = &b[11..];
    if time.len() < 9 || time[2] != b':' || time[5] != b':' {
        return false;
    }
    let (Some(hour), Some(minute), Some(second)) = (digits(&time[0..2]), digits(&time[3..5]), digits(&time[6..8]))
    else {
        return false;
    };
    if hour > 23 || minute > 59 || second > 60 {
        return false;
    }
    let mut rest = &time[8..];
    if let Some(fraction) = rest.strip_prefix(b".") {
        let n = fraction.iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 {
            return false;
        }
        rest = &fraction[n..];
    }
    let offset_minutes: i64 = match rest {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let (Some(oh), Some(om)) = (digits(&[*h1, *h2]), digits(&[*m1, *m2])) else {
                return false;
            };
            if oh > 23 || om > 59 {
                return false;
            }
            let minutes = i64::from(oh * 60 + om);
            if *sign == b'+' { minutes } else { -minutes }
        }
        _ => return false,
    };
    if second == 60 {
        // The leap second is the last second of a UTC day.
        let utc = (i64::from(hour * 60 + minute) - offset_minutes).rem_euclid(24 * 60);
        return utc == 23 * 60 + 59;
    }
    true
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic, reason = "a failing test should stop loudly")]
mod tests {
    use super::*;

    #[test]
    fn errors_carry_their_kind() {
        let mut errors = ContentErrors::new();
        errors.push("a", "must be at most 9");
        errors.push_missing("b");
        // The kind is said, never guessed from the text.
        errors.push("c", MISSING_REASON);
        let kinds: Vec<_> = errors.iter().map(|e| e.kind).collect();
        assert_eq!(kinds, [FieldErrorKind::Invalid, FieldErrorKind::Missing, FieldErrorKind::Invalid]);
        assert_eq!(errors.to_string(), "`a` must be at most 9; `b` is required; `c` is required");
    }

    #[test]
    fn dates() {
        for ok in ["2026-07-28", "2024-02-29", "2000-02-29", "0001-01-01"] {
            assert!(is_date(ok), "{ok}");
        }
        for bad in [
            "2026-7-28",
            "2023-02-29",
            "1900-02-29",
            "2026-13-01",
            "2026-00-10",
            "2026-01-32",
            "２０２６-01-01",
            "",
            "2026-01-01T",
        ] {
            assert!(!is_date(bad), "{bad}");
        }
    }

    #[test]
    fn date_times() {
        for ok in [
            "2026-07-28T09:30:00Z",
            "2026-07-28t09:30:00.123z",
            "2026-07-28T09:30:00+02:00",
            "2016-12-31T23:59:60Z",
            "2016-12-31T15:59:60-08:00",
        ] {
            assert!(is_date_time(ok), "{ok}");
        }
        for bad in [
            "2026-07-28T09:30:00",
            "2026-07-28 09:30:00Z",
            "2026-07-28T24:00:00Z",
            "2026-07-28T09:30:00.Z",
            "2026-07-28T12:00:60Z",
            "2026-07-28T09:30:00+2:00",
            "2026-07-28T09:30Z",
        ] {
            assert!(!is_date_time(bad), "{bad}");
        }
    }

    /// `is_email` agrees with the crate's whole-address parser (no display text) followed by the
    /// same domain rules, on addresses built to split, quote and bracket differently.
    #[test]
    fn the_part_checks_agree_with_the_crates_parser() {
        let parser = |text: &str| {
            let options = email_address::Options::default().without_display_text();
            text.len() <= MAX_EMAIL_LEN
                && text.is_ascii()
                && email_address::EmailAddress::parse_with_options(text, options)
                    .is_ok_and(|address| is_mailbox_domain(address.domain()))
        };
        let locals = [
            "ada",
            "a.b+c",
            "\"a b\"",
            "\"a@b\"",
            "\"a\\\"b\"",
            "\"\"",
            "a..b",
            ".a",
            "a.",
            "a b",
            "<ada",
            "Ada <ada",
            "",
            "x@y",
            "é",
        ];
        let domains = [
            "example.com",
            "[192.0.2.1]",
            "[IPv6:2001:db8::1]",
            "[300.1.1.1]",
            "ex ample.com",
            "example.com>",
            "",
            "-x.com",
            "a..b",
            "x.com.",
            "ex_ample.com",
        ];
        for local in locals {
            for domain in domains {
                let text = format!("{local}@{domain}");
                assert_eq!(is_email(&text), parser(&text), "{text}");
            }
            assert_eq!(is_email(local), parser(local), "{local}");
        }
        for text in ["Ada <ada@example.com>", "<ada@example.com>", "ada@example.com <x>", "a <b> <c@d.e>"] {
            assert_eq!(is_email(text), parser(text), "{text}");
        }
    }

    #[test]
    fn emails_and_uris() {
        assert!(is_email("ada@example.com"));
        assert!(!is_email("ada.example.com"));
        assert!(!is_email("Ada <ada@example.com>"));
        assert!(is_email("ada@[192.0.2.1]"));
        assert!(is_email("ada@[IPv6:2001:db8::1]"));
        assert!(is_email("\"a b\"@example.com"));
        let (local, label, last) = ("l".repeat(64), "a".repeat(63), "d".repeat(61));
        let longest = format!("{local}@{label}.{label}.{label}.{last}");
        assert!(is_email(&longest), "{}", longest.len());
        assert!(!is_email(&format!("{longest}d")));
        let bad = [
            "é@example.com",
            "ada@exämple.com",
            "ada@ex_ample.com",
            "ada@-example.com",
            "ada@[300.1.1.1]",
            "ada@[IPv6:zz]",
        ];
        for bad in bad {
            assert!(!is_email(bad), "{bad}");
        }
        assert!(is_uri("https://example.com/a?b#c"));
        assert!(is_uri("urn:isbn:0451450523"));
        assert!(!is_uri("/relative/path"));
        assert!(!is_uri("http://exa mple.com"));
    }

    #[test]
    fn length_counts_characters_not_bytes() {
        assert!(check_length("héé", Some(3), Some(3)).is_ok());
        assert!(check_length("ab", Some(3), None).is_err());
        assert!(check_length(&"x".repeat(1_000_000), None, Some(5)).is_err());
        assert!(check_length(&"x".repeat(1_000_000), Some(5), None).is_ok());
        assert!(check_length("xxxx", Some(5), None).is_err());
        assert!(check_length("", None, None).is_ok());
    }
}
