//! Anti-forgery tokens for the forms of the pages an example server shows in the user's browser
//! (the travel-server's payment page), on the runtime's page kit
//! ([`AntiForgery`]).
//!
//! A signed double submit: showing a page sets a fresh random nonce in a cookie and embeds a token
//! sealed (AEAD) for the page id and that nonce in the page's forms; a submission counts only when
//! it carries the cookie and a token matching it. Another site can neither read the cookie
//! (`HttpOnly`) nor the page, so it cannot produce a matching pair, and `SameSite=Strict` keeps the
//! browser from attaching the cookie to a cross-site request in the first place. The token covers
//! the page id, so a pair taken from one page is refused on another, and expires with the step.
//!
//! The secret is derived from the `requestState` sealing keys ([`PageSecrets::derive`]), so every
//! instance sharing those keys accepts the others' tokens; like the key ring, the first key's
//! secret seals and every key's secret opens, so keys rotate without refusing forms in flight.

use axum::http::HeaderMap;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use elicit_runtime::server::EngineConfig;
use elicit_runtime::server::pages::kit::AntiForgery;
use elicit_runtime::state::{KeyRing, StateSealer};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// The name of the form field carrying the token.
pub const TOKEN_FIELD: &str = "csrf";

/// Derives the page secret from a sealing key: a distinct label keeps it unrelated to anything
/// else computed from the same key.
const SECRET_LABEL: &[u8] = b"elicit-examples/page-form-secret/v1";
/// Random bytes in a nonce.
const NONCE_BYTES: usize = 16;

/// The secrets that seal and open form tokens: the first seals, every one opens.
#[derive(Clone)]
pub struct PageSecrets {
    tokens: AntiForgery,
    count: usize,
}

impl PageSecrets {
    /// One secret derived from each sealing key, in the key ring's order; `None` for no key.
    pub fn derive<'a>(sealing_keys: impl IntoIterator<Item = &'a [u8; 32]>) -> Option<PageSecrets> {
        let secrets = sealing_keys
            .into_iter()
            .map(|key| {
                let mut mac = <HmacSha256 as KeyInit>::new_from_slice(key).ok()?;
                mac.update(SECRET_LABEL);
                Some(mac.finalize().into_bytes().into())
            })
            .collect::<Option<Vec<[u8; 32]>>>()?;
        PageSecrets::from_secrets(secrets)
    }

    /// A random secret, for a process whose tokens no other process needs to accept.
    pub fn random() -> Result<PageSecrets, getrandom::Error> {
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret)?;
        // One key always makes a ring.
        Ok(PageSecrets::from_secrets(vec![secret]).unwrap_or_else(|| unreachable!("one key makes a ring")))
    }

    fn from_secrets(secrets: Vec<[u8; 32]>) -> Option<PageSecrets> {
        let count = secrets.len();
        let ring = KeyRing::new(secrets).ok()?;
        // A token lives as long as a payment step.
        let tokens = AntiForgery::new(&StateSealer::new(ring), EngineConfig::default().url_ttl);
        Some(PageSecrets { tokens, count })
    }

    /// The token binding page `id` to the browser holding `nonce`, sealed with the first secret.
    pub fn token(&self, id: &str, nonce: &str) -> String {
        // Only a nonce too long to seal has none, and an empty token never verifies.
        self.tokens.token(id, nonce).unwrap_or_default()
    }

    /// Whether `token` is a token of page `id` and `nonce` under any of the secrets, unexpired.
    pub fn verify(&self, id: &str, nonce: &str, token: &str) -> bool {
        self.tokens.verify(id, nonce, token)
    }
}

impl std::fmt::Debug for PageSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PageSecrets({} secret(s), redacted)", self.count)
    }
}

/// A fresh random nonce for one visit of a page: 128 bits, URL-safe base64.
pub fn fresh_nonce() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; NONCE_BYTES];
    getrandom::fill(&mut bytes)?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

/// The value of cookie `name` in the request's `Cookie` headers, if there is exactly one way to
/// read it: a name sent twice (a second cookie planted for a wider path) counts as absent.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    elicit_runtime::server::pages::kit::cookie(headers, name)
}

/// The value of field `name` in a `application/x-www-form-urlencoded` body.
pub fn form_field(body: &[u8], name: &str) -> Option<String> {
    url::form_urlencoded::parse(body).find(|(key, _)| key == name).map(|(_, value)| value.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    const ID: &str = "AAAAAAAAAAAAAAAAAAAAAA";

    fn secrets(key: u8) -> PageSecrets {
        PageSecrets::derive([&[key; 32]]).unwrap_or_else(|| unreachable!())
    }

    #[test]
    fn a_token_verifies_only_for_its_id_nonce_and_secret() {
        let s = secrets(1);
        let token = s.token(ID, "nonce");
        assert!(s.verify(ID, "nonce", &token));
        assert!(!s.verify(ID, "other", &token), "another visit's nonce");
        assert!(!s.verify("BBBBBBBBBBBBBBBBBBBBBB", "nonce", &token), "another page");
        assert!(!secrets(2).verify(ID, "nonce", &token), "another deployment's secret");
        assert!(!s.verify(ID, "nonce", &token[..token.len() - 1]), "a truncated token");
        assert!(!s.verify(ID, "nonce", ""), "no token");
        assert!(!s.verify(ID, "nonce", "not base64!"), "garbage");
        // Moving characters between the id and the nonce is another pair.
        assert!(!s.verify("a", "bc", &s.token("ab", "c")));
    }

    #[test]
    fn secrets_are_derived_per_key_and_every_key_verifies() {
        assert!(secrets(1).verify(ID, "n", &secrets(1).token(ID, "n")), "instances sharing a key agree");
        let rotated = PageSecrets::derive([&[2u8; 32], &[1u8; 32]]).unwrap_or_else(|| unreachable!());
        assert!(rotated.verify(ID, "n", &secrets(1).token(ID, "n")), "the old key's tokens still pass");
        assert!(secrets(2).verify(ID, "n", &rotated.token(ID, "n")), "the first key seals");
        assert!(PageSecrets::derive([]).is_none());
        assert!(format!("{:?}", secrets(1)).contains("redacted"));
    }

    #[test]
    fn nonces_are_fresh() {
        let (a, b) = (fresh_nonce().unwrap_or_default(), fresh_nonce().unwrap_or_default());
        assert_eq!(a.len(), 22);
        assert_ne!(a, b);
    }

    #[test]
    fn cookies_are_read_from_every_header_and_an_ambiguous_one_is_absent() {
        let mut headers = HeaderMap::new();
        headers.append("cookie", HeaderValue::from_static("a=1; pay=xyz"));
        headers.append("cookie", HeaderValue::from_static("b=2"));
        assert_eq!(cookie(&headers, "pay"), Some("xyz"));
        assert_eq!(cookie(&headers, "b"), Some("2"));
        assert_eq!(cookie(&headers, "missing"), None);
        headers.append("cookie", HeaderValue::from_static("pay=planted"));
        assert_eq!(cookie(&headers, "pay"), None);
    }

    #[test]
    fn form_fields_are_decoded() {
        assert_eq!(form_field(b"csrf=a-b_c&x=1", "csrf").as_deref(), Some("a-b_c"));
        assert_eq!(form_field(b"x=%41", "x").as_deref(), Some("A"));
        assert_eq!(form_field(b"", "csrf"), None);
    }
}
