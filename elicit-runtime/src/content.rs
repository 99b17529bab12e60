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
///
/// ```
/// use elicit_runtime::content::{LengthError, check_length};
///
/// assert_eq!(check_length("héé", Some(3), Some(3)), Ok(()));
/// let error = check_length("ab", Some(3), None).unwrap_err();
/// assert_eq!(error, LengthError::TooShort { min: 3 });
/// assert_eq!(error.to_string(), "must be at least 3 characters long");
/// ```
pub fn check_length(text: &str, min: Option<u64>, max: Option<u64>) -> Result<(), LengthError> {
    // Counting stops as soon as the answer is known: a hostile multi-megabyte answer costs no more
    // than the larger bound, and nothing at all when there is none.
    // A character takes one to four bytes, so the byte length alone often decides, and the count
    // is skipped.
    let bytes = text.len() as u64;
    if max.is_none_or(|max| bytes <= max) && min.is_none_or(|min| bytes.div_ceil(4) >= min) {
        return Ok(());
    }
    let limit = match (min, max) {
        (None, None) => return Ok(()),
        (_, Some(max)) => max.saturating_add(1),
        (Some(min), None) => min,
    };
    let count = text.chars().take(usize::try_from(limit).unwrap_or(usize::MAX)).count() as u64;
    if let Some(min) = min
        && count < min
    {
        return Err(LengthError::TooShort { min });
    }
    if let Some(max) = max
        && count > max
    {
        return Err(LengthError::TooLong { max });
    }
    Ok(())
}

/// Why [`check_length`] refused a string. `Display` follows the field's name
/// (`"must be at least 3 characters long"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LengthError {
    /// Fewer characters than `min`.
    TooShort {
        /// The least number of characters allowed.
        min: u64,
    },
    /// More characters than `max`.
    TooLong {
        /// The most characters allowed.
        max: u64,
    },
}

impl fmt::Display for LengthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LengthError::TooShort { min } => write!(f, "must be at least {} long", counted(*min, "character")),
            LengthError::TooLong { max } => write!(f, "must be at most {} long", counted(*max, "character")),
        }
    }
}

impl std::error::Error for LengthError {}

/// Why a JSON value is not read as an integer (JSON Schema's `integer`: any number with no
/// fractional part). `Display` follows the field's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum IntegerError {
    /// Not a number at all.
    NotANumber {
        /// The JSON type found instead ([`json_type_name`]).
        found: &'static str,
    },
    /// A number with a fractional part.
    Fraction,
    /// Past the 64-bit integers: the number arrived rounded, so the integer meant is not known.
    Inexact,
    /// Beyond any integer type.
    OutOfRange,
}

impl fmt::Display for IntegerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IntegerError::NotANumber { found } => write!(f, "must be an integer, found {found}"),
            IntegerError::Fraction => f.write_str("must be an integer, found a number with a fraction"),
            IntegerError::Inexact => {
                f.write_str("is too large to be read exactly: integers past 64 bits arrive rounded in JSON")
            }
            IntegerError::OutOfRange => f.write_str("is out of range"),
        }
    }
}

impl std::error::Error for IntegerError {}

/// `"1 character"`, `"2 characters"`: a count and its noun, plural unless the count is 1.
pub(crate) fn counted(count: u64, noun: &str) -> String {
    if count == 1 { format!("1 {noun}") } else { format!("{count} {noun}s") }
}

/// Checks `text` against a declared format.
///
/// ```
/// use elicit_runtime::content::check_format;
/// use elicit_runtime::schema::StringFormat;
///
/// assert!(check_format("ada@example.com", StringFormat::Email).is_ok());
/// let error = check_format("2026-13-01", StringFormat::Date).unwrap_err();
/// assert_eq!(error.format(), StringFormat::Date);
/// assert_eq!(error.to_string(), "must be a date (YYYY-MM-DD)");
/// ```
pub fn check_format(text: &str, format: StringFormat) -> Result<(), FormatError> {
    let ok = match format {
        StringFormat::Email => is_email(text),
        StringFormat::Uri => is_uri(text),
        StringFormat::Date => is_date(text),
        StringFormat::DateTime => is_date_time(text),
    };
    if ok { Ok(()) } else { Err(FormatError::new(format)) }
}

/// Why [`check_format`] refused a string: it does not have this format. `Display` follows the
/// field's name (`"must be an e-mail address"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FormatError {
    format: StringFormat,
}

impl FormatError {
    pub(crate) const fn new(format: StringFormat) -> Self {
        FormatError { format }
    }

    /// The format the string does not have.
    pub fn format(&self) -> StringFormat {
        self.format
    }
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.format {
            StringFormat::Email => "must be an e-mail address",
            StringFormat::Uri => "must be an absolute URI",
            StringFormat::Date => "must be a date (YYYY-MM-DD)",
            StringFormat::DateTime => "must be a date and time with offset (YYYY-MM-DDThh:mm:ssZ)",
        })
    }
}

impl std::error::Error for FormatError {}

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
    // The usual address, a dot-atom at a host name, is checked here in one pass over each part:
    // for those the crate's checks accept exactly what these do (`is_host_name` is the stricter
    // of the two domain rules). A quoted local part and an address literal go to the crate.
    let local_ok = if local.starts_with('"') {
        email_address::EmailAddress::is_valid_local_part(local)
    } else {
        local.len() <= MAX_LOCAL_PART_LEN && is_dot_atom(local.as_bytes())
    };
    let domain_ok = if domain.starts_with('[') {
        email_address::EmailAddress::is_valid_domain(domain) && is_mailbox_domain(domain)
    } else {
        is_host_name(domain.as_bytes())
    };
    local_ok && domain_ok
}

/// The longest local part RFC 5321 allows, in bytes.
const MAX_LOCAL_PART_LEN: usize = 64;

/// RFC 5322 `dot-atom-text` in ASCII: runs of `atext` separated by single dots, with no dot at
/// either end.
const fn is_dot_atom(text: &[u8]) -> bool {
    // `true` where a dot may not come: at the start and after a dot.
    let mut after_dot = true;
    let mut i = 0;
    while i < text.len() {
        let b = text[i];
        if b == b'.' {
            if after_dot {
                return false;
            }
            after_dot = true;
        } else if b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'!' | b'#'
                    | b'$'
                    | b'%'
                    | b'&'
                    | b'\''
                    | b'*'
                    | b'+'
                    | b'-'
                    | b'/'
                    | b'='
                    | b'?'
                    | b'^'
                    | b'_'
                    | b'`'
                    | b'{'
                    | b'|'
                    | b'}'
                    | b'~'
            )
        {
            after_dot = false;
        } else {
            return false;
        }
        i += 1;
    }
    !after_dot
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
        None => is_host_name(domain.as_bytes()),
    }
}

/// RFC 5321 `Domain`: dot-separated labels of 1 to 63 letters, digits and hyphens, neither starting
/// nor ending with a hyphen, at most 253 characters in all.
const fn is_host_name(domain: &[u8]) -> bool {
    if domain.len() > 253 {
        return false;
    }
    // One pass: the length of the label so far and the byte before this one.
    let (mut label, mut last) = (0, b'.');
    let mut i = 0;
    while i < domain.len() {
        let b = domain[i];
        if b == b'.' {
            if label == 0 || last == b'-' {
                return false;
            }
            label = 0;
        } else if b.is_ascii_alphanumeric() || (b == b'-' && label > 0) {
            label += 1;
            if label > 63 {
                return false;
            }
        } else {
            return false;
        }
        last = b;
        i += 1;
    }
    label > 0 && last != b'-'
}

/// An RFC 3986 URI with a scheme (JSON Schema's `uri`, which excludes relative references).
pub(crate) fn is_uri(text: &str) -> bool {
    is_plain_uri(text.as_bytes()) || fluent_uri::Uri::parse(text).is_ok()
}

/// A URI of the usual shape, checked in one pass: a scheme, then an optional authority that is a
/// plain host name (no user info, port, IP literal or percent-encoding), then a path, query and
/// fragment without percent-encoding. `true` only for a valid URI; `false` leaves the verdict to
/// the full parser, which also takes every shape this skips.
const fn is_plain_uri(bytes: &[u8]) -> bool {
    // scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )
    if !has_scheme(bytes) {
        return false;
    }
    let mut i = 1;
    while bytes[i] != b':' {
        i += 1;
    }
    i += 1;
    if i + 1 < bytes.len() && bytes[i] == b'/' && bytes[i + 1] == b'/' {
        // A `reg-name` host, which may be empty (`file:///etc`); the path after it starts with `/`.
        i += 2;
        while i < bytes.len() && URI_HOST[bytes[i] as usize] {
            i += 1;
        }
        if i < bytes.len() && !matches!(bytes[i], b'/' | b'?' | b'#') {
            return false;
        }
    }
    // Without an authority the path cannot start with `//`, which was read as one above. A path of
    // `pchar` and `/`; a `?` starts the query, after which `?` is allowed too, and one `#` starts
    // the fragment.
    let mut fragment = false;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'#' {
            if fragment {
                return false;
            }
            fragment = true;
        } else if !(URI_HOST[b as usize] || matches!(b, b':' | b'@' | b'/' | b'?')) {
            return false;
        }
        i += 1;
    }
    true
}

/// RFC 3986 `unreserved` and `sub-delims`: the bytes of a `reg-name` host other than
/// percent-encoding, and with `:`, `@`, `/` and `?` those of a path, query and fragment.
const URI_HOST: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'-' | b'.' | b'_' | b'~' | b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',' | b';' | b'='
            );
        b += 1;
    }
    table
};

/// The decimal number written in `bytes[from..to]`, all ASCII digits (a `const fn`: defaults are
/// checked at compile time with it).
const fn digits(bytes: &[u8], from: usize, to: usize) -> Option<u32> {
    if from >= to || to > bytes.len() {
        return None;
    }
    let (mut i, mut value) = (from, 0u32);
    while i < to {
        if !bytes[i].is_ascii_digit() {
            return None;
        }
        value = value * 10 + (bytes[i] - b'0') as u32;
        i += 1;
    }
    Some(value)
}

const fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// An RFC 3339 `full-date`: `YYYY-MM-DD` naming a real day.
pub(crate) const fn is_date(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() == 10 && date_parts(b).is_some()
}

/// Year, month and day of a `full-date` naming a real day, in the first ten bytes of `b`.
const fn date_parts(b: &[u8]) -> Option<(u32, u32, u32)> {
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (Some(year), Some(month), Some(day)) = (digits(b, 0, 4), digits(b, 5, 7), digits(b, 8, 10)) else {
        return None;
    };
    if month >= 1 && month <= 12 && day >= 1 && day <= days_in_month(year, month) {
        Some((year, month, day))
    } else {
        None
    }
}

/// The fields of an RFC 3339 `date-time`, as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DateTimeParts {
    pub(crate) year: u32,
    pub(crate) month: u32,
    pub(crate) day: u32,
    pub(crate) hour: u32,
    pub(crate) minute: u32,
    /// 0 to 60 (a leap second).
    pub(crate) second: u32,
    /// The first nine digits of the fraction, as nanoseconds; further digits are dropped.
    pub(crate) nanosecond: u32,
    /// East of UTC.
    pub(crate) offset_minutes: i32,
}

/// An RFC 3339 `date-time`: a full date, `T`, a time with optional fraction, and an offset.
///
/// A leap second (`:60`) is accepted only where RFC 3339 allows it: at 23:59:60 UTC.
pub(crate) const fn is_date_time(text: &str) -> bool {
    date_time_parts(text).is_some()
}

/// The fields of `text` when it is an RFC 3339 `date-time` ([`is_date_time`]), read in the same
/// pass that checks it.
pub(crate) const fn date_time_parts(text: &str) -> Option<DateTimeParts> {
    let b = text.as_bytes();
    if b.len() < 20 || !matches!(b[10], b'T' | b't') {
        return None;
    }
    let Some((year, month, day)) = date_parts(b) else { return None };
    // The time starts at byte 11: `hh:mm:ss`.
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (Some(hour), Some(minute), Some(second)) = (digits(b, 11, 13), digits(b, 14, 16), digits(b, 17, 19)) else {
        return None;
    };
    if hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut at = 19;
    let mut nanosecond = 0;
    if b[at] == b'.' {
        at += 1;
        let start = at;
        let mut scale = 100_000_000;
        while at < b.len() && b[at].is_ascii_digit() {
            // The first nine digits count; further ones are dropped.
            nanosecond += (b[at] - b'0') as u32 * scale;
            scale /= 10;
            at += 1;
        }
        if at == start {
            return None;
        }
    }
    let rest = b.len() - at;
    let offset_minutes: i32 = if rest == 1 && matches!(b[at], b'Z' | b'z') {
        0
    } else if rest == 6 && matches!(b[at], b'+' | b'-') && b[at + 3] == b':' {
        let (Some(oh), Some(om)) = (digits(b, at + 1, at + 3), digits(b, at + 4, at + 6)) else { return None };
        if oh > 23 || om > 59 {
            return None;
        }
        // At most 23 * 60 + 59.
        let minutes = (oh * 60 + om) as i32;
        if b[at] == b'+' { minutes } else { -minutes }
    } else {
        return None;
    };
    if second == 60 {
        // The leap second is the last second of a UTC day.
        let utc = ((hour * 60 + minute) as i64 - offset_minutes as i64).rem_euclid(24 * 60);
        if utc != 23 * 60 + 59 {
            return None;
        }
    }
    Some(DateTimeParts { year, month, day, hour, minute, second, nanosecond, offset_minutes })
}

/// Whether `text` has `format`, as far as constant evaluation can tell: `Some(true)` valid,
/// `Some(false)` invalid, `None` when only the full parsers of the run time can say (a quoted
/// e-mail local part, an address literal, a URI beyond the usual shape). Derived code checks a
/// string `default` with it at compile time; [`check_format`] has the last word when the schema
/// is built.
pub const fn format_verdict(text: &str, format: StringFormat) -> Option<bool> {
    match format {
        StringFormat::Date => Some(is_date(text)),
        StringFormat::DateTime => Some(is_date_time(text)),
        StringFormat::Email => email_verdict(text),
        StringFormat::Uri => {
            let b = text.as_bytes();
            if is_plain_uri(b) {
                Some(true)
            } else if !has_scheme(b) {
                // A URI starts with its scheme; a relative reference is not one.
                Some(false)
            } else {
                None
            }
        }
    }
}

/// `scheme ":"` at the start: `ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"`.
const fn has_scheme(b: &[u8]) -> bool {
    if b.is_empty() || !b[0].is_ascii_alphabetic() {
        return false;
    }
    let mut i = 1;
    while i < b.len() && (b[i].is_ascii_alphanumeric() || matches!(b[i], b'+' | b'-' | b'.')) {
        i += 1;
    }
    i < b.len() && b[i] == b':'
}

/// [`is_email`] where it needs no crate: `None` for a quoted local part or an address literal.
const fn email_verdict(text: &str) -> Option<bool> {
    let b = text.as_bytes();
    if b.len() > MAX_EMAIL_LEN || !text.is_ascii() {
        return Some(false);
    }
    // The last `@` splits the address, as the crate's parser splits it.
    let mut at = b.len();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'@' {
            at = i;
        }
        i += 1;
    }
    if at == b.len() {
        return Some(false);
    }
    let (local, domain) = b.split_at(at);
    let domain = domain.split_at(1).1;
    if (!local.is_empty() && local[0] == b'"') || (!domain.is_empty() && domain[0] == b'[') {
        return None;
    }
    Some(local.len() <= MAX_LOCAL_PART_LEN && is_dot_atom(local) && is_host_name(domain))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic, reason = "a failing test should stop loudly")]
mod tests {
    use super::*;
    use crate::test_rng::Rng;

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

    /// The byte-length shortcut decides as counting the characters does, at the edges of both
    /// bounds and for characters of every width.
    #[test]
    fn length_shortcut_agrees_with_counting() {
        let counted = |text: &str, min: Option<u64>, max: Option<u64>| {
            let count = text.chars().count() as u64;
            min.is_none_or(|min| count >= min) && max.is_none_or(|max| count <= max)
        };
        for unit in ["a", "é", "日", "😀"] {
            for n in 0..6 {
                let text = unit.repeat(n);
                for min in [None, Some(0), Some(1), Some(2), Some(3), Some(5), Some(6)] {
                    for max in [None, Some(0), Some(1), Some(2), Some(4), Some(5), Some(8), Some(20)] {
                        assert_eq!(
                            check_length(&text, min, max).is_ok(),
                            counted(&text, min, max),
                            "{text} {min:?} {max:?}"
                        );
                    }
                }
            }
        }
    }

    /// The one-pass checks of the usual address accept exactly what the crate's part checks did
    /// (followed by the same domain rules), on random addresses over the characters that matter.
    #[test]
    fn the_one_pass_email_check_agrees_with_the_crates_part_checks() {
        let reference = |text: &str| {
            text.len() <= MAX_EMAIL_LEN
                && text.is_ascii()
                && text.rsplit_once('@').is_some_and(|(local, domain)| {
                    email_address::EmailAddress::is_valid_local_part(local)
                        && email_address::EmailAddress::is_valid_domain(domain)
                        && is_mailbox_domain(domain)
                })
        };
        let local = ["a", "Z", "0", ".", "-", "_", "+", "!", "~", "\"", "\\", " ", "(", ",", "é", "@"];
        let domain = ["a", "b", "9", ".", "-", "_", "[", "]", "1.2.3.4", "IPv6:", "::1", " ", "é", "aaaaaaaaaaaaaaaa"];
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for _ in 0..200_000 {
            let text = format!("{}@{}", rng.text(&local, 6), rng.text(&domain, 8));
            assert_eq!(is_email(&text), reference(&text), "{text:?}");
        }
        // Lengths at the limits of a label, a host name and a local part.
        for (local, label, labels) in [(64, 63, 4), (65, 63, 1), (1, 64, 1), (1, 62, 4), (1, 63, 5)] {
            let host = vec!["a".repeat(label); labels].join(".");
            let text = format!("{}@{host}", "l".repeat(local));
            assert_eq!(is_email(&text), reference(&text), "{text}");
        }
    }

    /// What constant evaluation decides about a default's format is what the parser decides, on
    /// random texts of the pieces that matter to each format; it leaves undecided only the shapes
    /// it says it does (a quoted local part, an address literal, a URI beyond the usual shape).
    #[test]
    fn the_compile_time_verdict_never_contradicts_the_parser() {
        let pieces = [
            "a", "Z", "0", "9", "-", ":", "T", "Z", "+", ".", "@", "\"", "[", "]", "/", "//", "?", "#", "%20", " ",
            "é", "2026", "02", "29", "23:59:60", "x.com", "http", "1.2.3.4",
        ];
        let mut rng = Rng(0x51_7CC1_B727_220A);
        let mut undecided = [0; 4];
        for _ in 0..100_000 {
            let text = rng.text(&pieces, 8);
            for (i, format) in [StringFormat::Email, StringFormat::Uri, StringFormat::Date, StringFormat::DateTime]
                .into_iter()
                .enumerate()
            {
                match format_verdict(&text, format) {
                    Some(verdict) => assert_eq!(verdict, check_format(&text, format).is_ok(), "{text:?} {format:?}"),
                    None => undecided[i] += 1,
                }
            }
        }
        // Dates are always decided; e-mails and URIs mostly.
        assert_eq!(undecided[2] + undecided[3], 0);
        assert!(undecided[0] < 50_000 && undecided[1] < 50_000, "{undecided:?}");
        for (text, format, verdict) in [
            ("example.com", StringFormat::Uri, Some(false)),
            ("https://example.com/a", StringFormat::Uri, Some(true)),
            ("http://[::1]/", StringFormat::Uri, None),
            ("ada@example.com", StringFormat::Email, Some(true)),
            ("ada.example.com", StringFormat::Email, Some(false)),
            ("\"a b\"@example.com", StringFormat::Email, None),
            ("2026-02-30", StringFormat::Date, Some(false)),
            ("2026-07-28T09:30:00Z", StringFormat::DateTime, Some(true)),
        ] {
            assert_eq!(format_verdict(text, format), verdict, "{text}");
        }
    }

    /// The one-pass URI check says `true` only where the full parser does, and says it for the
    /// usual shapes.
    #[test]
    fn the_one_pass_uri_check_is_never_wrong() {
        let pieces = [
            "a", "Z", "0", ":", "/", "//", "?", "#", "@", "%", "%2F", "[", "]", ".", "-", "+", "~", "!", "'", "=", " ",
            "é", "\"", "{", "|", "\\", "^", "`",
        ];
        let schemes = ["", "a:", "h://", "ab+c:", "x-y.z://", "1a:", "a"];
        let mut rng = Rng(0x2545_F491_4F6C_DD1D);
        for _ in 0..200_000 {
            let text = format!("{}{}", schemes[rng.index(schemes.len())], rng.text(&pieces, 10));
            if is_plain_uri(text.as_bytes()) {
                assert!(fluent_uri::Uri::parse(text.as_str()).is_ok(), "{text:?}");
            }
        }
        for usual in [
            "https://miles.example.com/members/ada",
            "https://example.com/a?b=c&d=e#top",
            "file:///etc/hosts",
            "urn:isbn:0451450523",
            "mailto:ada@example.com",
            "a:",
            "h://",
        ] {
            assert!(is_plain_uri(usual.as_bytes()), "{usual}");
        }
        for other in ["https://ada@example.com/", "http://example.com:8080/", "http://[::1]/", "http://e.com/%20"] {
            assert!(!is_plain_uri(other.as_bytes()) && is_uri(other), "{other}");
        }
    }
}
