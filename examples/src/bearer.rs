//! Bearer tokens for the showcase: who is calling, as the engine's principal.
//!
//! Tokens come from `ELICIT_BEARER_TOKENS` or a `--tokens FILE`, each `TOKEN=USER` (commas or
//! newlines between entries, `#` comments in the file). With none configured the server stays
//! open, as before. With some, `/mcp` needs `Authorization: Bearer TOKEN` (401 otherwise), and the
//! user becomes the request's [`Principal`]: its `requestState` and payment steps are bound to
//! that user, and the payment page records a decision only for the user who started the payment.
//!
//! Or the tokens are an OpenID provider's ([`OpenIdTokens`], `--oidc-issuer URL`): access tokens
//! in the JWT profile (RFC 9068, `typ: at+jwt`) that the authorization server signed with a key it
//! publishes (its JWKS, fetched again when a token names a key not seen yet), issued by it, for
//! this server (the audience is this server's `/mcp` URL, as a resource indicator names it),
//! unexpired, carrying the scope this server asks for; the token's `sub` becomes the principal.
//! The server then publishes its protected resource metadata (RFC 9728) naming that issuer, and
//! its refusals point at it (`WWW-Authenticate: Bearer resource_metadata=...`), so a client can
//! discover where to sign in.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use elicit_runtime::rmcp::Principal;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use tokio::sync::Mutex;

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

// ---- an OpenID provider's access tokens ----

/// The scope this server asks for (and names in its metadata) when it accepts an OpenID
/// provider's tokens.
pub const OPENID_SCOPE: &str = "mcp";
/// The clock skew allowed on `exp` and `nbf`.
const LEEWAY: u64 = 5;
/// The least time between two fetches of the provider's keys for tokens naming an unknown key
/// (the first such token after start-up fetches them at once).
const KEYS_REFETCH: Duration = Duration::from_secs(30);
/// The signature algorithms accepted: asymmetric ones only (never a shared secret).
const ALGORITHMS: [Algorithm; 7] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// Why a bearer token was not accepted, or the provider could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenError {
    /// The provider's metadata or keys could not be fetched or read.
    Provider(String),
    /// The token is not an access token this server accepts (its reason is for the log and the
    /// `error_description`, never the token itself).
    Invalid(String),
    /// The token is valid but lacks the scope this server asks for.
    InsufficientScope,
}

impl std::fmt::Display for TokenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TokenError::Provider(reason) => write!(f, "the OpenID provider: {reason}"),
            TokenError::Invalid(reason) => write!(f, "the access token is not accepted: {reason}"),
            TokenError::InsufficientScope => write!(f, "the access token lacks the `{OPENID_SCOPE}` scope"),
        }
    }
}

impl std::error::Error for TokenError {}

/// Access tokens of one OpenID provider, for one resource (this server's `/mcp` URL).
#[derive(Clone, Debug)]
pub struct OpenIdTokens(Arc<OpenId>);

#[derive(Debug)]
struct OpenId {
    issuer: String,
    resource: String,
    /// Empty: the keys are never fetched again.
    jwks_uri: String,
    /// Where a browser signs in, and where a code is exchanged (the page sign-in,
    /// [`crate::page_sign_in`]); empty when the metadata names none.
    authorization_endpoint: String,
    token_endpoint: String,
    http: reqwest::Client,
    /// The keys last fetched: read without waiting, even while a fetch runs.
    keys: std::sync::RwLock<Arc<JwkSet>>,
    /// When a token naming an unknown key last made the keys be fetched again, whether the fetch
    /// succeeded or failed; held while such a fetch runs, by the requests that need it only.
    refetched: Mutex<Option<Instant>>,
    /// The least time between two such fetches.
    refetch_every: Duration,
}

/// The part of the provider's metadata this server reads.
#[derive(Deserialize)]
struct ProviderMetadata {
    issuer: String,
    jwks_uri: String,
    #[serde(default)]
    authorization_endpoint: String,
    #[serde(default)]
    token_endpoint: String,
}

/// The claims of an ID token the page sign-in reads (the rest are checked by the validation).
#[derive(Deserialize)]
struct IdClaims {
    sub: String,
    #[serde(default)]
    nonce: Option<String>,
    #[serde(default)]
    aud: serde_json::Value,
    #[serde(default)]
    azp: Option<String>,
}

/// The claims of an access token this server reads (the rest are checked by the validation).
#[derive(Deserialize)]
struct Claims {
    sub: String,
    #[serde(default)]
    scope: Option<String>,
}

/// Which JWT a check expects: an OpenID Connect ID token, or an RFC 9068 access token.
#[derive(Clone, Copy)]
enum Kind {
    IdToken,
    AccessToken,
}

/// Claims that name their subject (`sub`).
trait Subject {
    fn subject(&self) -> &str;
}

impl Subject for IdClaims {
    fn subject(&self) -> &str {
        &self.sub
    }
}

impl Subject for Claims {
    fn subject(&self) -> &str {
        &self.sub
    }
}

impl OpenIdTokens {
    /// Discovers the provider `issuer` (its `/.well-known/openid-configuration`, whose `issuer`
    /// must be `issuer` exactly) and fetches its keys, for tokens whose audience is `resource`.
    ///
    /// # Errors
    ///
    /// The metadata or the keys cannot be fetched or read, or the metadata names another issuer.
    pub async fn discover(issuer: &str, resource: &str) -> Result<OpenIdTokens, TokenError> {
        OpenIdTokens::discover_refetching(issuer, resource, KEYS_REFETCH).await
    }

    /// [`OpenIdTokens::discover`], where a token naming a key the provider's set lacks fetches the
    /// keys again at most once per `every` (whether that fetch succeeds or fails), instead of
    /// every 30 seconds.
    ///
    /// # Errors
    ///
    /// As [`OpenIdTokens::discover`].
    pub async fn discover_refetching(
        issuer: &str,
        resource: &str,
        every: Duration,
    ) -> Result<OpenIdTokens, TokenError> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| TokenError::Provider(e.to_string()))?;
        let issuer = issuer.trim_end_matches('/').to_owned();
        let url = format!("{issuer}/.well-known/openid-configuration");
        let metadata: ProviderMetadata = fetch_json(&http, &url).await?;
        if metadata.issuer != issuer {
            return Err(TokenError::Provider(format!("{url} names the issuer {:?}, not {issuer:?}", metadata.issuer)));
        }
        let set: JwkSet = fetch_json(&http, &metadata.jwks_uri).await?;
        Ok(OpenIdTokens(Arc::new(OpenId {
            issuer,
            resource: resource.to_owned(),
            jwks_uri: metadata.jwks_uri,
            authorization_endpoint: metadata.authorization_endpoint,
            token_endpoint: metadata.token_endpoint,
            http,
            keys: std::sync::RwLock::new(Arc::new(set)),
            refetched: Mutex::new(None),
            refetch_every: every,
        })))
    }

    /// Tokens of `issuer` signed with `keys`, for `resource`; the keys are never fetched again.
    pub fn with_keys(issuer: &str, resource: &str, keys: JwkSet) -> OpenIdTokens {
        OpenIdTokens(Arc::new(OpenId {
            issuer: issuer.to_owned(),
            resource: resource.to_owned(),
            jwks_uri: String::new(),
            authorization_endpoint: String::new(),
            token_endpoint: String::new(),
            http: reqwest::Client::new(),
            keys: std::sync::RwLock::new(Arc::new(keys)),
            refetched: Mutex::new(None),
            refetch_every: KEYS_REFETCH,
        }))
    }

    /// The provider's issuer identifier.
    pub fn issuer(&self) -> &str {
        &self.0.issuer
    }

    /// The resource the tokens must be for (their audience).
    pub fn resource(&self) -> &str {
        &self.0.resource
    }

    /// The provider's authorization endpoint (empty when its metadata names none).
    pub fn authorization_endpoint(&self) -> &str {
        &self.0.authorization_endpoint
    }

    /// The provider's token endpoint (empty when its metadata names none).
    pub fn token_endpoint(&self) -> &str {
        &self.0.token_endpoint
    }

    /// The HTTP client talking to the provider (no redirects followed, bounded time).
    pub(crate) fn http(&self) -> &reqwest::Client {
        &self.0.http
    }

    /// The subject (`sub`) of `token` when it is an ID token the provider issued to the client
    /// `client_id` for the sign-in that sent `nonce`: signed with one of the provider's keys
    /// (the same key set, fetched the same way, as access tokens), issued by it, for that client
    /// (its audience, and its `azp` when several audiences are named), unexpired, and carrying
    /// that nonce.
    ///
    /// # Errors
    ///
    /// Why it is not accepted.
    pub async fn id_token_subject(&self, token: &str, client_id: &str, nonce: &str) -> Result<String, TokenError> {
        // An access token signed by the same keys is not an ID token.
        let claims: IdClaims = self.verified(token, Kind::IdToken, client_id).await?;
        // OpenID Connect Core 3.1.3.7: with several audiences, the token says which is the party
        // it was issued to.
        let several = claims.aud.as_array().is_some_and(|audiences| audiences.len() > 1);
        if (several || claims.azp.is_some()) && claims.azp.as_deref() != Some(client_id) {
            return Err(TokenError::Invalid("the token was issued to another party (azp)".into()));
        }
        // Compared in constant time: the nonce is the sign-in's secret.
        let expected = Sha256::digest(nonce.as_bytes());
        let found = Sha256::digest(claims.nonce.as_deref().unwrap_or_default().as_bytes());
        if nonce.is_empty() || claims.nonce.is_none() || expected != found {
            return Err(TokenError::Invalid("the token's nonce is not this sign-in's".into()));
        }
        Ok(claims.sub)
    }

    /// The user (`sub`) of `token`, when it is an access token of the provider for this resource,
    /// unexpired and with [`OPENID_SCOPE`].
    ///
    /// # Errors
    ///
    /// Why it is not accepted.
    pub async fn user(&self, token: &str) -> Result<String, TokenError> {
        // RFC 9068: an access token says so; an ID token (or anything else signed by the same
        // keys) is not one.
        let claims: Claims = self.verified(token, Kind::AccessToken, &self.0.resource).await?;
        if !claims.scope.as_deref().unwrap_or_default().split(' ').any(|s| s == OPENID_SCOPE) {
            return Err(TokenError::InsufficientScope);
        }
        Ok(claims.sub)
    }

    /// The claims of `token`, a JWT of `kind` from the provider for `audience`: its `typ` says
    /// the kind, its algorithm is one of [`ALGORITHMS`], its key is the provider's, and it is
    /// from the issuer, for the audience, unexpired (with [`LEEWAY`]), with a non-empty `sub`.
    async fn verified<C: Subject + serde::de::DeserializeOwned>(
        &self,
        token: &str,
        kind: Kind,
        audience: &str,
    ) -> Result<C, TokenError> {
        let header = jsonwebtoken::decode_header(token).map_err(|e| TokenError::Invalid(e.to_string()))?;
        let typ = header.typ.as_deref().unwrap_or_default().to_ascii_lowercase();
        let access = typ == "at+jwt" || typ == "application/at+jwt";
        match kind {
            Kind::IdToken if access => return Err(TokenError::Invalid("an access token is not an ID token".into())),
            Kind::AccessToken if !access => {
                return Err(TokenError::Invalid("not a JWT access token (typ at+jwt)".into()));
            }
            _ => {}
        }
        if !ALGORITHMS.contains(&header.alg) {
            return Err(TokenError::Invalid(format!("the algorithm {:?} is not accepted", header.alg)));
        }
        let kid = header.kid.ok_or_else(|| TokenError::Invalid("the token names no key (kid)".into()))?;
        let key = self.key(&kid).await?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&self.0.issuer]);
        validation.set_audience(&[audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.leeway = LEEWAY;
        validation.validate_nbf = true;
        let claims =
            jsonwebtoken::decode::<C>(token, &key, &validation).map_err(|e| TokenError::Invalid(e.to_string()))?.claims;
        if claims.subject().is_empty() {
            return Err(TokenError::Invalid("the token's sub is empty".into()));
        }
        Ok(claims)
    }

    /// The verification key `kid`, fetching the provider's keys again when it is not known, at
    /// most once per interval whatever became of the last fetch: a stranger's tokens naming made-up
    /// keys (nothing is checked before the key is found) cannot drive fetches. Only requests that
    /// need a fetch wait for one; a known key is read without waiting.
    async fn key(&self, kid: &str) -> Result<DecodingKey, TokenError> {
        let found = || {
            let keys = self.0.keys.read().unwrap_or_else(|poisoned| poisoned.into_inner()).clone();
            keys.find(kid)
                .map(|jwk| DecodingKey::from_jwk(jwk).map_err(|e| TokenError::Invalid(format!("the key {kid:?}: {e}"))))
        };
        let unknown = || TokenError::Invalid(format!("the provider has no key {kid:?}"));
        if let Some(key) = found() {
            return key;
        }
        if self.0.jwks_uri.is_empty() {
            return Err(unknown());
        }
        let mut refetched = self.0.refetched.lock().await;
        // Fetched by another request while this one waited.
        if let Some(key) = found() {
            return key;
        }
        if refetched.is_some_and(|at| at.elapsed() < self.0.refetch_every) {
            return Err(unknown());
        }
        // The attempt counts before it is made: a failing fetch spaces the next one as well.
        *refetched = Some(Instant::now());
        let set: JwkSet = fetch_json(&self.0.http, &self.0.jwks_uri).await?;
        *self.0.keys.write().unwrap_or_else(|poisoned| poisoned.into_inner()) = Arc::new(set);
        drop(refetched);
        found().unwrap_or_else(|| Err(unknown()))
    }

    /// This server's protected resource metadata (RFC 9728).
    pub fn metadata(&self) -> serde_json::Value {
        serde_json::json!({
            "resource": self.0.resource,
            "authorization_servers": [self.0.issuer],
            "scopes_supported": [OPENID_SCOPE],
            "bearer_methods_supported": ["header"],
        })
    }
}

async fn fetch_json<T: serde::de::DeserializeOwned>(http: &reqwest::Client, url: &str) -> Result<T, TokenError> {
    let response = http.get(url).send().await.map_err(|e| TokenError::Provider(format!("{url}: {e}")))?;
    if !response.status().is_success() {
        return Err(TokenError::Provider(format!("{url} answered {}", response.status())));
    }
    response.json().await.map_err(|e| TokenError::Provider(format!("{url}: {e}")))
}

/// The well-known address of the metadata of the resource `resource` (RFC 9728 §3.1: the
/// well-known segment goes between the host and the resource's path).
pub fn metadata_path(resource: &str) -> String {
    let path = url::Url::parse(resource).map(|u| u.path().trim_end_matches('/').to_owned()).unwrap_or_default();
    format!("/.well-known/oauth-protected-resource{path}")
}

/// Authenticates the requests of `router` with `tokens`: an accepted access token makes its
/// `sub` the request's [`Principal`]; any other is refused (401, or 403 for want of scope). A
/// request without one is refused too when `required`, and passes anonymously otherwise. Every
/// refusal points at this server's metadata (`resource_metadata`), which `router` is given.
pub fn authenticate_openid(router: axum::Router, tokens: OpenIdTokens, required: bool) -> axum::Router {
    router.layer(middleware::from_fn_with_state((tokens, required), check_openid))
}

/// The route serving `tokens`' protected resource metadata, at [`metadata_path`] and at the
/// bare well-known path.
pub fn metadata_router(tokens: &OpenIdTokens) -> axum::Router {
    let metadata = tokens.metadata();
    let bare = metadata.clone();
    axum::Router::new()
        .route(&metadata_path(tokens.resource()), get(move || async move { axum::Json(metadata) }))
        .route("/.well-known/oauth-protected-resource", get(move || async move { axum::Json(bare) }))
}

async fn check_openid(
    State((tokens, required)): State<(OpenIdTokens, bool)>,
    mut request: Request,
    next: Next,
) -> Response {
    let presented = request.headers().get(header::AUTHORIZATION).map(|value| {
        value.to_str().ok().and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer "))).map(str::trim)
    });
    let challenge = |error: Option<(&str, &str)>| {
        let metadata = format!("{}{}", origin(tokens.resource()), metadata_path(tokens.resource()));
        let mut value = format!("Bearer resource_metadata=\"{metadata}\", scope=\"{OPENID_SCOPE}\"");
        if let Some((code, description)) = error {
            let description: String =
                description.chars().filter(|c| *c != '"' && *c != '\\' && !c.is_control()).collect();
            value.push_str(&format!(", error=\"{code}\", error_description=\"{description}\""));
        }
        HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
    };
    let refuse = |status: StatusCode, error: Option<(&str, &str)>, why: String| {
        (status, [(header::WWW_AUTHENTICATE, challenge(error))], why).into_response()
    };
    match presented {
        Some(Some(token)) => match tokens.user(token).await {
            Ok(user) => {
                request.extensions_mut().insert(Principal(user));
                next.run(request).await
            }
            Err(TokenError::InsufficientScope) => {
                let why = TokenError::InsufficientScope.to_string();
                refuse(StatusCode::FORBIDDEN, Some(("insufficient_scope", &why)), why.clone())
            }
            Err(error @ TokenError::Invalid(_)) => {
                let why = error.to_string();
                refuse(StatusCode::UNAUTHORIZED, Some(("invalid_token", &why)), why.clone())
            }
            Err(error) => {
                tracing::warn!("bearer: {error}");
                (StatusCode::SERVICE_UNAVAILABLE, "the authorization server cannot be reached").into_response()
            }
        },
        Some(None) => refuse(
            StatusCode::UNAUTHORIZED,
            Some(("invalid_request", "the Authorization header must be `Bearer TOKEN`")),
            "the Authorization header must be `Bearer TOKEN`".to_owned(),
        ),
        None if required => refuse(StatusCode::UNAUTHORIZED, None, "a bearer token is required".to_owned()),
        None => next.run(request).await,
    }
}

/// `scheme://host[:port]` of `url`.
fn origin(url: &str) -> String {
    url::Url::parse(url).map(|u| u.origin().ascii_serialization()).unwrap_or_default()
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

    /// A test signing key (Ed25519, PKCS#8), made for these tests only, and its public half.
    const TEST_KEY: &str = "MC4CAQAwBQYDK2VwBCIEIPHo9wqTqCUoO4zFaftCKCQLVlkJ2SDsAEVd7s1v1GsE";
    const TEST_PUBLIC: &str = "YY8oHgH9D26POIGq4cAX5y5U240p0zY9-RpVTVmZnWA";
    const ISSUER: &str = "http://127.0.0.1:9/";
    const RESOURCE: &str = "http://127.0.0.1:8/mcp";

    fn provider() -> OpenIdTokens {
        let keys: JwkSet = serde_json::from_value(serde_json::json!({"keys": [
            {"kty": "OKP", "crv": "Ed25519", "x": TEST_PUBLIC, "kid": "k1", "alg": "EdDSA", "use": "sig"}
        ]}))
        .expect("a key set");
        OpenIdTokens::with_keys(ISSUER, RESOURCE, keys)
    }

    fn now() -> u64 {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("after 1970").as_secs()
    }

    fn token(typ: &str, kid: &str, claims: serde_json::Value) -> String {
        use base64::Engine as _;
        let der = base64::engine::general_purpose::STANDARD.decode(TEST_KEY).expect("base64");
        let mut header = jsonwebtoken::Header::new(Algorithm::EdDSA);
        header.typ = Some(typ.to_owned());
        header.kid = Some(kid.to_owned());
        jsonwebtoken::encode(&header, &claims, &jsonwebtoken::EncodingKey::from_ed_der(&der)).expect("signed")
    }

    fn claims() -> serde_json::Value {
        serde_json::json!({"iss": ISSUER, "aud": RESOURCE, "sub": "ada-lovelace", "exp": now() + 60, "scope": "mcp offline_access"})
    }

    fn with(change: &str, value: serde_json::Value) -> serde_json::Value {
        let mut claims = claims();
        claims[change] = value;
        claims
    }

    #[tokio::test]
    async fn an_access_token_for_this_server_names_its_user() {
        let tokens = provider();
        assert_eq!(tokens.user(&token("at+jwt", "k1", claims())).await, Ok("ada-lovelace".to_owned()));
        // An audience list naming this server is fine too.
        let listed = with("aud", serde_json::json!(["http://elsewhere/mcp", RESOURCE]));
        assert_eq!(tokens.user(&token("at+jwt", "k1", listed)).await, Ok("ada-lovelace".to_owned()));
    }

    #[tokio::test]
    async fn tokens_for_another_server_issuer_time_or_scope_are_refused() {
        let tokens = provider();
        let refused = |claims| {
            let tokens = tokens.clone();
            async move { tokens.user(&token("at+jwt", "k1", claims)).await }
        };
        let invalid = |r: Result<String, TokenError>| matches!(r, Err(TokenError::Invalid(_)));
        assert!(invalid(refused(with("aud", serde_json::json!("http://127.0.0.1:7/mcp"))).await));
        assert!(invalid(refused(with("iss", serde_json::json!("http://127.0.0.1:6/"))).await));
        assert!(invalid(refused(with("exp", serde_json::json!(now() - 2 * LEEWAY - 1))).await));
        assert!(invalid(refused(with("nbf", serde_json::json!(now() + 2 * LEEWAY + 60))).await));
        assert!(invalid(refused(with("sub", serde_json::json!(""))).await));
        let mut no_sub = claims();
        no_sub.as_object_mut().expect("an object").remove("sub");
        assert!(invalid(refused(no_sub).await));
        assert_eq!(refused(with("scope", serde_json::json!("openid"))).await, Err(TokenError::InsufficientScope));
    }

    #[tokio::test]
    async fn id_tokens_unknown_keys_and_garbage_are_refused() {
        let tokens = provider();
        let invalid = |r: Result<String, TokenError>| matches!(r, Err(TokenError::Invalid(_)));
        assert!(invalid(tokens.user(&token("JWT", "k1", claims())).await), "an ID token is no access token");
        assert!(invalid(tokens.user(&token("at+jwt", "k2", claims())).await));
        assert!(invalid(tokens.user("not.a.jwt").await));
        assert!(invalid(tokens.user("").await));
        // A signature that does not match the claims.
        let good = token("at+jwt", "k1", claims());
        let other = token("at+jwt", "k1", with("sub", serde_json::json!("mallory")));
        let (head, _) = good.rsplit_once('.').expect("three parts");
        let (_, signature) = other.rsplit_once('.').expect("three parts");
        assert!(invalid(tokens.user(&format!("{head}.{signature}")).await));
    }

    #[tokio::test]
    async fn an_id_token_names_its_subject_only_for_this_client_and_this_sign_ins_nonce() {
        let tokens = provider();
        let id = |change: &str, value: serde_json::Value| {
            let mut claims = serde_json::json!({"iss": ISSUER, "aud": "pages", "sub": "ada-lovelace",
                "exp": now() + 60, "nonce": "n-1"});
            if value.is_null() {
                claims.as_object_mut().expect("an object").remove(change);
            } else if !change.is_empty() {
                claims[change] = value;
            }
            claims
        };
        let subject = |claims: serde_json::Value, typ: &'static str| {
            let tokens = tokens.clone();
            async move { tokens.id_token_subject(&token(typ, "k1", claims), "pages", "n-1").await }
        };
        assert_eq!(subject(id("", serde_json::json!(0)), "JWT").await, Ok("ada-lovelace".to_owned()));
        let invalid = |r: Result<String, TokenError>| matches!(r, Err(TokenError::Invalid(_)));
        assert!(invalid(subject(id("nonce", serde_json::json!("n-2")), "JWT").await), "another sign-in's nonce");
        assert!(invalid(subject(id("nonce", serde_json::Value::Null), "JWT").await), "no nonce");
        assert!(invalid(subject(id("aud", serde_json::json!("another-client")), "JWT").await), "another client");
        assert!(invalid(subject(id("iss", serde_json::json!("http://127.0.0.1:6/")), "JWT").await));
        assert!(invalid(subject(id("exp", serde_json::json!(now() - 2 * LEEWAY - 1)), "JWT").await));
        assert!(invalid(subject(id("", serde_json::json!(0)), "at+jwt").await), "an access token");
        // Several audiences: the token must name this client as the party it was issued to.
        let shared = id("aud", serde_json::json!(["pages", "another-client"]));
        assert!(invalid(subject(shared.clone(), "JWT").await), "several audiences, no azp");
        let mut issued_to_us = shared;
        issued_to_us["azp"] = serde_json::json!("pages");
        assert_eq!(subject(issued_to_us, "JWT").await, Ok("ada-lovelace".to_owned()));
    }

    #[test]
    fn the_metadata_lives_under_the_resource_path() {
        assert_eq!(metadata_path(RESOURCE), "/.well-known/oauth-protected-resource/mcp");
        let metadata = provider().metadata();
        assert_eq!(metadata["resource"], RESOURCE);
        assert_eq!(metadata["authorization_servers"][0], ISSUER);
    }

    /// Serves `tokens`' layer around a route answering with the request's principal, and its
    /// metadata, on a loopback port; returns the base URL.
    async fn serve(tokens: OpenIdTokens) -> String {
        let echo = axum::Router::new().route(
            "/mcp",
            axum::routing::post(|principal: Option<axum::Extension<Principal>>| async move {
                principal.map(|axum::Extension(Principal(user))| user).unwrap_or_default()
            }),
        );
        let app = authenticate_openid(echo, tokens.clone(), true).merge(metadata_router(&tokens));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let addr = listener.local_addr().expect("an address");
        tokio::spawn(async move { axum::serve(listener, app).await });
        format!("http://{addr}")
    }

    #[tokio::test]
    async fn the_layer_makes_sub_the_principal_and_its_refusals_point_at_the_metadata() {
        let base = serve(provider()).await;
        let http = reqwest::Client::builder().no_proxy().build().expect("a client");
        let post = |token: Option<String>| {
            let mut request = http.post(format!("{base}/mcp"));
            if let Some(token) = token {
                request = request.header("authorization", format!("Bearer {token}"));
            }
            request.send()
        };
        let answer = post(Some(token("at+jwt", "k1", claims()))).await.expect("an answer");
        assert_eq!(answer.status(), 200);
        assert_eq!(answer.text().await.expect("a body"), "ada-lovelace");

        let challenge = |answer: &reqwest::Response| {
            answer.headers().get("www-authenticate").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned()
        };
        let metadata = "resource_metadata=\"http://127.0.0.1:8/.well-known/oauth-protected-resource/mcp\"";
        let none = post(None).await.expect("an answer");
        assert_eq!(none.status(), 401);
        assert!(challenge(&none).contains(metadata) && !challenge(&none).contains("error="), "{}", challenge(&none));
        let expired =
            post(Some(token("at+jwt", "k1", with("exp", serde_json::json!(now() - 60))))).await.expect("an answer");
        assert_eq!(expired.status(), 401);
        assert!(challenge(&expired).contains("error=\"invalid_token\""), "{}", challenge(&expired));
        let narrow =
            post(Some(token("at+jwt", "k1", with("scope", serde_json::json!("openid"))))).await.expect("an answer");
        assert_eq!(narrow.status(), 403);
        assert!(challenge(&narrow).contains("error=\"insufficient_scope\""), "{}", challenge(&narrow));

        let served: serde_json::Value = http
            .get(format!("{base}/.well-known/oauth-protected-resource/mcp"))
            .send()
            .await
            .expect("an answer")
            .json()
            .await
            .expect("JSON");
        assert_eq!(served, provider().metadata());
    }

    /// An OpenID provider on loopback: its metadata, and its key set, whose fetches it counts. It
    /// can answer them with a server error, or hold them until released.
    struct Provider {
        base: String,
        fetches: std::sync::atomic::AtomicUsize,
        failing: std::sync::atomic::AtomicBool,
        holding: std::sync::atomic::AtomicBool,
        release: tokio::sync::Notify,
    }

    impl Provider {
        async fn start() -> Arc<Provider> {
            use std::sync::atomic::Ordering::SeqCst;
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
            let base = format!("http://{}", listener.local_addr().expect("an address"));
            let provider = Arc::new(Provider {
                base,
                fetches: 0.into(),
                failing: false.into(),
                holding: false.into(),
                release: tokio::sync::Notify::new(),
            });
            let (meta, keys) = (provider.clone(), provider.clone());
            let app = axum::Router::new()
                .route(
                    "/.well-known/openid-configuration",
                    get(move || async move {
                        axum::Json(serde_json::json!({"issuer": meta.base, "jwks_uri": format!("{}/jwks", meta.base)}))
                    }),
                )
                .route(
                    "/jwks",
                    get(move || async move {
                        keys.fetches.fetch_add(1, SeqCst);
                        if keys.holding.load(SeqCst) {
                            keys.release.notified().await;
                        }
                        if keys.failing.load(SeqCst) {
                            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
                        }
                        axum::Json(serde_json::json!({"keys": [
                            {"kty": "OKP", "crv": "Ed25519", "x": TEST_PUBLIC, "kid": "k1", "alg": "EdDSA", "use": "sig"}
                        ]}))
                        .into_response()
                    }),
                );
            tokio::spawn(async move { axum::serve(listener, app).await });
            provider
        }

        fn fetches(&self) -> usize {
            self.fetches.load(std::sync::atomic::Ordering::SeqCst)
        }

        /// This provider's tokens, for [`RESOURCE`], refetching at most once an hour.
        async fn tokens(&self) -> OpenIdTokens {
            OpenIdTokens::discover_refetching(&self.base, RESOURCE, Duration::from_secs(3600))
                .await
                .expect("discovered")
        }

        fn token(&self, kid: &str) -> String {
            token("at+jwt", kid, with("iss", serde_json::json!(self.base)))
        }
    }

    /// 100 tokens naming made-up keys, at once: every one refused.
    async fn strangers(provider: &Provider, tokens: &OpenIdTokens) {
        let tries: Vec<_> = (0..100)
            .map(|i| {
                let (tokens, token) = (tokens.clone(), provider.token(&format!("made-up-{i}")));
                tokio::spawn(async move { tokens.user(&token).await })
            })
            .collect();
        for attempt in tries {
            assert!(attempt.await.expect("a result").is_err(), "a token under a made-up key was accepted");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn unknown_key_ids_refetch_at_most_once_per_interval_whether_the_fetch_fails_or_not() {
        use std::sync::atomic::Ordering::SeqCst;
        // The provider fails its key set: 100 made-up keys make one fetch, not 100.
        let failing = Provider::start().await;
        let tokens = failing.tokens().await;
        assert_eq!(failing.fetches(), 1, "discovery fetches the keys");
        failing.failing.store(true, SeqCst);
        strangers(&failing, &tokens).await;
        assert_eq!(failing.fetches(), 2, "made-up key ids drove the key fetches");
        // A valid request needs no fetch and makes none.
        assert_eq!(tokens.user(&failing.token("k1")).await, Ok("ada-lovelace".to_owned()));
        failing.failing.store(false, SeqCst);
        strangers(&failing, &tokens).await;
        assert_eq!(failing.fetches(), 2, "the failed fetch did not space the next one");

        // The provider answers: the same.
        let answering = Provider::start().await;
        let tokens = answering.tokens().await;
        strangers(&answering, &tokens).await;
        assert_eq!(answering.fetches(), 2, "made-up key ids drove the key fetches");
        assert_eq!(tokens.user(&answering.token("k1")).await, Ok("ada-lovelace".to_owned()));
        assert_eq!(answering.fetches(), 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_request_with_a_known_key_does_not_wait_for_a_fetch() {
        use std::sync::atomic::Ordering::SeqCst;
        let provider = Provider::start().await;
        let tokens = provider.tokens().await;
        provider.holding.store(true, SeqCst);
        let stranger = {
            let (tokens, token) = (tokens.clone(), provider.token("made-up"));
            tokio::spawn(async move { tokens.user(&token).await })
        };
        // Wait (bounded) until the stranger's fetch reached the provider, which holds it.
        for _ in 0..500 {
            if provider.fetches() == 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(provider.fetches(), 2, "the made-up key id fetched the keys");
        // While that fetch is held, a valid request is served: the provider is not asked again,
        // and the fetch is still held when it is (released only after).
        let valid = tokio::time::timeout(Duration::from_secs(5), tokens.user(&provider.token("k1"))).await;
        assert_eq!(valid, Ok(Ok("ada-lovelace".to_owned())), "a valid request waited behind a key fetch");
        provider.release.notify_waiters();
        assert!(stranger.await.expect("a result").is_err());
        assert_eq!(provider.fetches(), 2);
    }
}
