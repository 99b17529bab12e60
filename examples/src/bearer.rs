//! Bearer tokens for the showcase: who is calling, as the engine's principal.
//!
//! Tokens come from `ELICIT_BEARER_TOKENS` or a `--tokens FILE`, each `TOKEN=USER` (commas or
//! newlines between entries, `#` comments in the file). With none configured the server stays
//! open, as before. With some, `/mcp` needs `Authorization: Bearer TOKEN` (401 otherwise), and the
//! user becomes the request's [`Principal`]: its `requestState` and payment steps are bound to
//! that user, and the payment page records a decision only for the user who started the payment.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use elicit_runtime::rmcp::Principal;
use sha2::{Digest, Sha256};

/// The environment variable holding `TOKEN=USER` entries.
pub const TOKENS_VAR: &str = "ELICIT_BEARER_TOKENS";

/// Known tokens and their users. Looked up by the token's SHA-256, so the lookup's timing says
/// nothing about how much of a guessed token is right.
#[derive(Clone, Debug)]
pub struct BearerTokens(Arc<HashMap<[u8; 32], String>>);

impl BearerTokens {
    /// Parses `TOKEN=USER` entries separated by commas or newlines; blank entries and lines
    /// starting with `#` are skipped.
    ///
    /// # Errors
    ///
    /// An entry without `=`, or with an empty token or user.
    pub fn parse(text: &str) -> Result<BearerTokens, String> {
        let mut tokens = HashMap::new();
        for entry in text.split([',', '\n']).map(str::trim).filter(|e| !e.is_empty() && !e.starts_with('#')) {
            let (token, user) = entry.split_once('=').ok_or("a bearer token entry must be TOKEN=USER")?;
            let (token, user) = (token.trim(), user.trim());
            if token.is_empty() || user.is_empty() {
                return Err("a bearer token entry must be TOKEN=USER, neither empty".to_owned());
            }
            tokens.insert(digest(token), user.to_owned());
        }
        Ok(BearerTokens(Arc::new(tokens)))
    }

    /// The tokens of `--tokens FILE`, else of [`TOKENS_VAR`]; `None` when neither is set.
    ///
    /// # Errors
    ///
    /// The file cannot be read, or an entry is malformed.
    pub fn configured(file: Option<&str>) -> Result<Option<BearerTokens>, String> {
        let text = match file {
            Some(path) => std::fs::read_to_string(path).map_err(|e| format!("--tokens {path}: {e}"))?,
            None => match std::env::var(TOKENS_VAR) {
                Ok(text) if !text.trim().is_empty() => text,
                _ => return Ok(None),
            },
        };
        BearerTokens::parse(&text).map(Some)
    }

    /// The user of `token`, if it is known.
    pub fn user(&self, token: &str) -> Option<&str> {
        self.0.get(&digest(token)).map(String::as_str)
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// Authenticates the requests of `router`: a known bearer token makes its user the request's
/// [`Principal`]; an unknown one is refused (401). A request without one is refused too when
/// `required`, and passes anonymously otherwise (the payment page's GET, opened in a browser).
pub fn authenticate(router: axum::Router, tokens: BearerTokens, required: bool) -> axum::Router {
    router.layer(middleware::from_fn_with_state((tokens, required), check))
}

async fn check(State((tokens, required)): State<(BearerTokens, bool)>, mut request: Request, next: Next) -> Response {
    let presented = request.headers().get(header::AUTHORIZATION).map(|value| {
        value.to_str().ok().and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer "))).map(str::trim)
    });
    match presented {
        Some(Some(token)) => match tokens.user(token) {
            Some(user) => {
                let principal = Principal(user.to_owned());
                request.extensions_mut().insert(principal);
                next.run(request).await
            }
            None => unauthorized("unknown bearer token"),
        },
        Some(None) => unauthorized("the Authorization header must be `Bearer TOKEN`"),
        None if required => unauthorized("a bearer token is required"),
        None => next.run(request).await,
    }
}

fn unauthorized(why: &'static str) -> Response {
    (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, "Bearer")], why).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_parse_and_malformed_ones_are_refused() {
        let tokens = BearerTokens::parse("# demo\nt-a = alice, t-b=bob\n\n").expect("valid entries");
        assert_eq!(tokens.user("t-a"), Some("alice"));
        assert_eq!(tokens.user("t-b"), Some("bob"));
        assert_eq!(tokens.user("t-c"), None);
        assert!(BearerTokens::parse("no-equals").is_err());
        assert!(BearerTokens::parse("=alice").is_err());
        assert!(BearerTokens::parse("t=").is_err());
    }
}
