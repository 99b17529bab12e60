//! Values of the string formats that every judge of them accepts: the runtime's
//! `content::check_format`, jsonschema's format validation, and the parsers of the typed fields.
//! The agreement tests and the fuzz targets' generator draw from these.

/// Valid e-mail addresses (RFC 5321 Mailbox): plain, dotted and tagged local parts, a bare host,
/// address literals of both IP versions, a quoted local part, and a numeric host label.
pub const VALID_EMAILS: &[&str] = &[
    "ada@example.com",
    "a.b+c@sub.example.org",
    "x_y@ex-ample.co",
    "ada@localhost",
    "ada@[192.0.2.1]",
    "ada@[IPv6:2001:db8::1]",
    "\"a b\"@example.com",
    "x@y.z",
    "user%tag@example.com",
    "o'brien@example.ie",
    "ada@123",
];

/// An integer with its thousands separated by commas (`1,000,000`), as the README and the
/// benchmark reports write them.
pub fn thousands(n: impl std::fmt::Display) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (at, c) in digits.chars().enumerate() {
        if at > 0 && (digits.len() - at).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
