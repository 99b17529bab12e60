//! What a client checks before it shows or opens a URL-mode elicitation's URL.
//!
//! The URL came from a server and may be hostile: only `http` and `https` are ever opened, the
//! host is singled out so the user sees where they are sent (sub-domain spoofing), and look-alike
//! hosts (punycode, mixed scripts), credentials in the URL and plain `http` beyond loopback are
//! flagged. Nothing here fetches the URL.

use std::fmt;
use std::net::IpAddr;

/// Longest URL a client accepts from a server.
pub const MAX_URL_LEN: usize = 8 * 1024;

/// Something about a URL the user should be warned of before consenting.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum UrlWarning {
    /// `http` to a host other than loopback: the page and what the user types travel in clear.
    NotHttps,
    /// The host has punycode labels (`xn--`): it may imitate another name.
    Punycode {
        /// The host as Unicode.
        unicode: String,
    },
    /// A label of the host mixes letters of several scripts (for example Latin and Cyrillic).
    MixedScript,
    /// The URL carries a user name or password, a classic way to disguise the real host.
    Credentials,
}

impl fmt::Display for UrlWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UrlWarning::NotHttps => f.write_str("not https: the connection is not encrypted"),
            UrlWarning::Punycode { unicode } => {
                write!(f, "internationalised host, displayed as `{unicode}`: check it is the site you expect")
            }
            UrlWarning::MixedScript => f.write_str("the host mixes alphabets: it may imitate another site"),
            UrlWarning::Credentials => {
                f.write_str("the URL embeds a user name or password: the real host is the highlighted one")
            }
        }
    }
}

/// Why [`check_url`] refused a URL: it must not be shown as a link nor opened.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum UrlError {
    /// Longer than [`MAX_URL_LEN`] bytes, as received or (`normalised`) once normalised.
    TooLong {
        /// Whether the URL fit as received and grew past the cap once normalised
        /// (percent-encoding).
        normalised: bool,
    },
    /// Not a valid absolute URL.
    Invalid(url::ParseError),
    /// A scheme other than `http` and `https`.
    Scheme {
        /// The scheme, clipped for display.
        scheme: String,
    },
    /// No host.
    NoHost,
}

impl fmt::Display for UrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UrlError::TooLong { normalised: false } => write!(f, "the URL is longer than {MAX_URL_LEN} bytes"),
            UrlError::TooLong { normalised: true } => {
                write!(f, "the URL is longer than {MAX_URL_LEN} bytes once normalised")
            }
            UrlError::Invalid(error) => write!(f, "not a valid absolute URL ({error})"),
            UrlError::Scheme { scheme } => {
                write!(f, "the URL's scheme is `{scheme}`; only http and https URLs are opened")
            }
            UrlError::NoHost => f.write_str("the URL has no host"),
        }
    }
}

impl std::error::Error for UrlError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            UrlError::Invalid(error) => Some(error),
            _ => None,
        }
    }
}

/// A URL that passed the checks, with what the user must be shown.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CheckedUrl {
    /// The full URL, normalised.
    pub url: String,
    /// The host, as it appears in the URL (ASCII; punycode for internationalised names).
    pub host: String,
    /// Byte range of `host` inside `url`, for highlighting.
    pub host_range: std::ops::Range<usize>,
    /// Why the user should look twice.
    pub warnings: Vec<UrlWarning>,
}

fn is_loopback(host: &url::Host<&str>) -> bool {
    match host {
        url::Host::Domain(name) => name.eq_ignore_ascii_case("localhost"),
        url::Host::Ipv4(ip) => IpAddr::V4(*ip).is_loopback(),
        url::Host::Ipv6(ip) => IpAddr::V6(*ip).is_loopback(),
    }
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum Script {
    Latin,
    Greek,
    Cyrillic,
    Other,
}

fn script(c: char) -> Option<Script> {
    if !c.is_alphabetic() {
        return None;
    }
    Some(match u32::from(c) {
        0x0000..=0x024F | 0x1E00..=0x1EFF => Script::Latin,
        0x0370..=0x03FF | 0x1F00..=0x1FFF => Script::Greek,
        0x0400..=0x052F => Script::Cyrillic,
        _ => Script::Other,
    })
}

fn mixes_scripts(label: &str) -> bool {
    let mut seen: Option<Script> = None;
    for s in label.chars().filter_map(script) {
        match seen {
            None => seen = Some(s),
            Some(first) if first != s => return true,
            Some(_) => {}
        }
    }
    false
}

/// Checks a URL from a URL-mode elicitation. `Err` says why it must not be opened.
///
/// ```
/// use elicit_runtime::client::{check_url, UrlWarning};
///
/// let ok = check_url("https://pay.example.com/p/123").unwrap();
/// assert_eq!(&ok.url[ok.host_range.clone()], "pay.example.com");
/// assert!(check_url("javascript:alert(1)").is_err());
/// assert!(check_url("http://example.com/").unwrap().warnings.contains(&UrlWarning::NotHttps));
/// assert!(check_url("http://127.0.0.1:8080/").unwrap().warnings.is_empty());
/// ```
pub fn check_url(raw: &str) -> Result<CheckedUrl, UrlError> {
    if raw.len() > MAX_URL_LEN {
        return Err(UrlError::TooLong { normalised: false });
    }
    let parsed = url::Url::parse(raw).map_err(UrlError::Invalid)?;
    let scheme = parsed.scheme();
    if scheme != "http" && scheme != "https" {
        return Err(UrlError::Scheme { scheme: crate::wire::clip(scheme) });
    }
    let host = parsed.host().ok_or(UrlError::NoHost)?;
    let mut warnings = Vec::new();
    if scheme == "http" && !is_loopback(&host) {
        warnings.push(UrlWarning::NotHttps);
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        warnings.push(UrlWarning::Credentials);
    }
    let host_text = parsed.host_str().unwrap_or_default().to_owned();
    if let url::Host::Domain(name) = host
        && name.split('.').any(|label| label.get(..4).is_some_and(|p| p.eq_ignore_ascii_case("xn--")))
    {
        let (unicode, _) = idna::domain_to_unicode(name);
        if unicode.split('.').any(mixes_scripts) {
            warnings.push(UrlWarning::MixedScript);
        }
        warnings.push(UrlWarning::Punycode { unicode });
    }
    // The parser knows where the host is; searching the text for it could land in a userinfo
    // that repeats the host name (`https://pay.example.com.evil@pay.example.com/`).
    let host_range = parsed[..url::Position::BeforeHost].len()..parsed[..url::Position::AfterHost].len();
    let url = parsed.to_string();
    // Normalising percent-encodes what the raw text held as is (one non-ASCII byte becomes three),
    // so a URL under the cap may come out several times over it: the cap bounds what is shown and
    // opened, and checking the result again must give the same answer.
    if url.len() > MAX_URL_LEN {
        return Err(UrlError::TooLong { normalised: true });
    }
    Ok(CheckedUrl { url, host: host_text, host_range, warnings })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failing test should stop loudly")]
mod tests {
    use super::*;

    #[test]
    fn refuses_other_schemes_and_garbage() {
        for bad in [
            "javascript:alert(1)",
            "file:///etc/passwd",
            "data:text/html,hi",
            "ftp://x.test/",
            "not a url",
            "/relative",
            "",
            "http://",
        ] {
            assert!(check_url(bad).is_err(), "{bad}");
        }
        assert!(check_url(&format!("https://x.test/{}", "a".repeat(MAX_URL_LEN))).is_err());
    }

    /// Found by the `client_parse` fuzz target: 3,000 `é` are 6,000 bytes raw but 18,000 once
    /// percent-encoded, and the normalised URL was returned over the cap (so checking it again
    /// refused it).
    #[test]
    fn the_cap_applies_to_the_normalised_url() {
        let raw = format!("https://x.test/{}", "é".repeat(3_000));
        assert!(raw.len() <= MAX_URL_LEN);
        let error = check_url(&raw).unwrap_err();
        assert_eq!(error, UrlError::TooLong { normalised: true });
        assert!(error.to_string().contains("once normalised"), "{error}");
        let fits = format!("https://x.test/{}", "é".repeat(1_000));
        let checked = check_url(&fits).unwrap();
        assert!(checked.url.len() <= MAX_URL_LEN);
        assert_eq!(check_url(&checked.url), Ok(checked));
    }

    #[test]
    fn flags_look_alikes() {
        // "аpple" with a Cyrillic "а".
        let spoof = check_url("https://xn--pple-43d.com/login").unwrap();
        assert!(spoof.warnings.contains(&UrlWarning::MixedScript), "{:?}", spoof.warnings);
        assert!(spoof.warnings.iter().any(|w| matches!(w, UrlWarning::Punycode { .. })));
        let echo = check_url("https://pay.example.com.evil@pay.example.com/x").unwrap();
        assert_eq!(echo.host_range, 29..44, "the host, not its echo in the userinfo");
        let creds = check_url("https://bank.example@evil.test/").unwrap();
        assert_eq!(creds.host, "evil.test");
        assert_eq!(&creds.url[creds.host_range.clone()], "evil.test");
        assert!(creds.warnings.contains(&UrlWarning::Credentials));
        assert!(check_url("http://localhost:3000/x").unwrap().warnings.is_empty());
        assert!(check_url("http://[::1]:3000/x").unwrap().warnings.is_empty());
    }
}
