//! Signing the visitor of a URL-mode page in through an OpenID provider: no credential in the link.
//!
//! The spec asks the server to verify that whoever opens a URL-mode link is the user the step is
//! for, and forbids links that carry a credential. With an OpenID provider the page does what a
//! web application does: a visitor who is not signed in to the page is sent to the provider
//! ([`Visit::SignIn`]) with an authorization request of this server's own (the MCP server is the
//! provider's OAuth client, confidential with a secret or public), comes back to
//! [`CALLBACK_PATH`] with a code, and the server
//!
//! 1. finds the sign-in the callback's `state` names among the sign-ins it started (kept in this
//!    process, used once, for ten minutes at most) and checks that this browser started it (a
//!    cookie of random bytes set when it did, compared by digest): a forged, replayed or
//!    transplanted `state` is refused;
//! 2. exchanges the code at the provider's token endpoint with the PKCE verifier (S256; 32 bytes
//!    of the OS's CSPRNG) and its client credentials;
//! 3. verifies the ID token: signed with a key of the provider's JWKS (the key set and the
//!    verification of [`crate::bearer::OpenIdTokens`]), issued by the provider, for this client
//!    (the audience), unexpired, carrying the sign-in's `nonce`;
//! 4. compares its subject with the step's owner, the principal that started the flow: another
//!    user signed in at the provider is refused, and nothing is recorded;
//! 5. keeps the user in a session cookie sealed for that step and page (`HttpOnly`,
//!    `SameSite=Lax`, scoped to the step's page), and sends the browser back to the page.
//!
//! The link carries the step, the page's own sealed data, and [`OWNER_PARAM`]: the step's owner
//! sealed (AEAD) for that step, so that the page knows whom to expect before any store is asked.
//! It signs nobody in: the visitor still has to sign in at the provider as that user. The MCP
//! client's bearer token does not complete a step either: only the page's session does.
//!
//! Sign-ins in progress live in the memory of the process that started them: behind a load
//! balancer, the callback must reach the same instance (or the sign-in is simply started again).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use axum::routing::get;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use elicit_runtime::form::{Notice, render_notice};
use elicit_runtime::server::pages::kit::{
    PageRequest, Refusal, RefusalKind, Visit, VisitFuture, VisitorCheck, cookie, page_response,
};
use elicit_runtime::state::{Binding, KeyRing, StateSealer};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::bearer::{OpenIdTokens, TokenError};

/// Where the provider sends the browser back: the redirect URI is `{public_url}{CALLBACK_PATH}`.
pub const CALLBACK_PATH: &str = "/sign-in/callback";
/// The query parameter of a step's link naming its owner, sealed (no credential: see the module).
pub const OWNER_PARAM: &str = "for";
/// The scope asked for: an ID token, nothing more.
const SCOPE: &str = "openid";
/// The cookie binding a sign-in to the browser that started it, suffixed with the sign-in's
/// `state` (several tabs may sign in at once).
const BINDING_COOKIE: &str = "elicit_sign_in_";
/// How long a sign-in may take at the provider.
const SIGN_IN_TTL: Duration = Duration::from_secs(10 * 60);
/// The most sign-ins in progress kept at once (the oldest are dropped first).
const MAX_PENDING: usize = 10_000;
/// Binding methods and audience of the sealed values.
const SESSION_METHOD: &str = "elicit-examples/page-sign-in/session";
const OWNER_METHOD: &str = "elicit-examples/page-sign-in/owner";
const AUDIENCE: &str = "elicit-examples/page-sign-in/v1";

/// This server as the provider's OAuth client.
#[derive(Clone)]
pub struct OpenIdClient {
    /// The client id the provider registered for this server.
    pub client_id: String,
    /// Its secret (`client_secret_basic`); `None` for a public client (PKCE alone).
    pub client_secret: Option<String>,
    /// The redirect URI registered with the provider: `{public_url}{CALLBACK_PATH}`.
    pub redirect_uri: String,
}

impl std::fmt::Debug for OpenIdClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenIdClient")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "…"))
            .field("redirect_uri", &self.redirect_uri)
            .finish()
    }
}

/// Why the page sign-in cannot be set up.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SignInSetupError {
    /// The provider's metadata names no authorization or token endpoint.
    NoEndpoints,
}

impl std::fmt::Display for SignInSetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SignInSetupError::NoEndpoints => {
                f.write_str("the OpenID provider's metadata names no authorization_endpoint or token_endpoint")
            }
        }
    }
}

impl std::error::Error for SignInSetupError {}

/// A sign-in started and not finished.
struct Pending {
    step: String,
    owner: String,
    nonce: String,
    verifier: String,
    /// The digest of the binding cookie's value.
    browser: [u8; 32],
    /// The page to go back to: a path of this server, with the link's query.
    return_to: String,
    /// The page's session cookie: its name and the path its steps' pages live under.
    cookie: &'static str,
    page_path: &'static str,
    at: Instant,
}

/// Page sign-ins through one OpenID provider, for this server as one of its clients: the
/// callback route ([`OpenIdSignIn::router`]) and the visitor checks of the pages
/// ([`OpenIdSignIn::visitors`]). Cheap to clone.
#[derive(Clone)]
pub struct OpenIdSignIn(Arc<Inner>);

struct Inner {
    provider: OpenIdTokens,
    client: OpenIdClient,
    sessions: StateSealer,
    owners: StateSealer,
    pending: Mutex<HashMap<String, Pending>>,
}

impl OpenIdSignIn {
    /// Signs page visitors in at `provider` (discovered: its endpoints and keys) as `client`,
    /// sealing sessions and the owners in links with `ring` (the engine's: instances sharing it
    /// accept each other's sessions and links). Links name their owner, and sessions last, for
    /// `ttl` (whole seconds; the engine's `url_ttl`).
    ///
    /// # Errors
    ///
    /// The provider's metadata names no authorization or token endpoint.
    pub fn new(
        provider: OpenIdTokens,
        client: OpenIdClient,
        ring: KeyRing,
        ttl: Duration,
    ) -> Result<Self, SignInSetupError> {
        if provider.authorization_endpoint().is_empty() || provider.token_endpoint().is_empty() {
            return Err(SignInSetupError::NoEndpoints);
        }
        let sealer = StateSealer::new(ring).with_max_token_len(2048).with_ttl(ttl);
        Ok(OpenIdSignIn(Arc::new(Inner {
            provider,
            client,
            sessions: sealer.clone(),
            owners: sealer,
            pending: Mutex::default(),
        })))
    }

    /// The visitor check of pages served under `page_path` (ending with `/`, the step's id
    /// following it), keeping their session in cookie `name` scoped to each step's page.
    pub fn visitors(&self, name: &'static str, page_path: &'static str) -> OpenIdVisitors {
        OpenIdVisitors { sign_in: self.clone(), cookie: name, page_path }
    }

    /// The callback route (`GET` [`CALLBACK_PATH`]), to merge into the server's router.
    pub fn router(&self) -> axum::Router {
        axum::Router::new().route(CALLBACK_PATH, get(callback)).with_state(self.clone())
    }

    /// The number of sign-ins in progress (started, not yet come back).
    pub fn pending(&self) -> usize {
        self.0.pending.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Starts a sign-in for `owner` on `step`: where to send the browser, and the cookie that
    /// binds the sign-in to it.
    fn begin(&self, step: &str, owner: String, return_to: String, visitors: &OpenIdVisitors, https: bool) -> Visit {
        let (Some(state), Some(nonce), Some(verifier), Some(binding)) =
            (random_text(), random_text(), random_text(), random_text())
        else {
            return unavailable("no randomness for a sign-in");
        };
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
        let Ok(mut location) = url::Url::parse(self.0.provider.authorization_endpoint()) else {
            return unavailable("the provider's authorization endpoint is not a URL");
        };
        location
            .query_pairs_mut()
            .append_pair("response_type", "code")
            .append_pair("client_id", &self.0.client.client_id)
            .append_pair("redirect_uri", &self.0.client.redirect_uri)
            .append_pair("scope", SCOPE)
            .append_pair("state", &state)
            .append_pair("nonce", &nonce)
            .append_pair("code_challenge", &challenge)
            .append_pair("code_challenge_method", "S256");
        let pending = Pending {
            step: step.to_owned(),
            owner,
            nonce,
            verifier,
            browser: Sha256::digest(binding.as_bytes()).into(),
            return_to,
            cookie: visitors.cookie,
            page_path: visitors.page_path,
            at: Instant::now(),
        };
        {
            let mut map = self.0.pending.lock().unwrap_or_else(|e| e.into_inner());
            map.retain(|_, p| p.at.elapsed() < SIGN_IN_TTL);
            if map.len() >= MAX_PENDING
                && let Some(oldest) = map.iter().min_by_key(|(_, p)| p.at).map(|(k, _)| k.clone())
            {
                map.remove(&oldest);
            }
            map.insert(state.clone(), pending);
        }
        let secure = if https { "; Secure" } else { "" };
        let max_age = SIGN_IN_TTL.as_secs();
        Visit::SignIn {
            location: location.into(),
            // `Lax`: the provider sends the browser back with a top-level GET from its own site.
            set_cookie: Some(format!(
                "{BINDING_COOKIE}{state}={binding}; HttpOnly; SameSite=Lax; Path={CALLBACK_PATH}; Max-Age={max_age}{secure}"
            )),
        }
    }

    /// The sign-in's code exchanged at the provider, and its ID token verified: the subject.
    async fn finish(&self, code: &str, pending: &Pending) -> Result<String, TokenError> {
        let client = &self.0.client;
        let mut form = vec![
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", client.redirect_uri.as_str()),
            ("code_verifier", pending.verifier.as_str()),
        ];
        let mut request = self.0.provider.http().post(self.0.provider.token_endpoint());
        match &client.client_secret {
            // RFC 6749 §2.3.1: both form-encoded, then Basic.
            Some(secret) => {
                let encode = |text: &str| url::form_urlencoded::byte_serialize(text.as_bytes()).collect::<String>();
                let basic = base64::engine::general_purpose::STANDARD.encode(format!(
                    "{}:{}",
                    encode(&client.client_id),
                    encode(secret)
                ));
                request = request.header(header::AUTHORIZATION, format!("Basic {basic}"));
            }
            None => form.push(("client_id", client.client_id.as_str())),
        }
        let body: String = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(form).finish();
        let response = request
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(header::ACCEPT, "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| TokenError::Provider(format!("the token endpoint: {e}")))?;
        let status = response.status();
        if !status.is_success() {
            // The provider's error code names why (an expired or used code); its text stays in the log.
            let detail = response.text().await.unwrap_or_default();
            return Err(TokenError::Invalid(format!("the token endpoint answered {status}: {detail:.200}")));
        }
        let tokens: TokenResponse =
            response.json().await.map_err(|e| TokenError::Provider(format!("the token endpoint's answer: {e}")))?;
        let id_token =
            tokens.id_token.ok_or_else(|| TokenError::Invalid("the provider returned no ID token".into()))?;
        self.0.provider.id_token_subject(&id_token, &client.client_id, &pending.nonce).await
    }
}

/// The part of the token endpoint's answer read here.
#[derive(Deserialize)]
struct TokenResponse {
    #[serde(default)]
    id_token: Option<String>,
}

/// 32 bytes of the OS's CSPRNG, base64url: a state, a nonce, a PKCE verifier (43 characters, as
/// RFC 7636 asks) or a binding.
fn random_text() -> Option<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).ok()?;
    Some(URL_SAFE_NO_PAD.encode(bytes))
}

fn unavailable(why: &str) -> Visit {
    Visit::Refused(Refusal { kind: RefusalKind::Unavailable, text: why.to_owned() })
}

fn binding<'a>(method: &'a str, step: &'a str) -> Binding<'a> {
    Binding { principal: None, method, name: step, arguments_digest: [0; 32], audience: AUDIENCE }
}

/// The visitor check of one kind of page (the engine's form pages, the payment page), on an
/// [`OpenIdSignIn`]. Cheap to clone.
#[derive(Clone)]
pub struct OpenIdVisitors {
    sign_in: OpenIdSignIn,
    cookie: &'static str,
    page_path: &'static str,
}

impl OpenIdVisitors {
    fn session(&self, step: &str, request: &PageRequest<'_>) -> Option<String> {
        let sealed = cookie(request.headers, self.cookie)?;
        let who = self.sign_in.0.sessions.open(&binding(SESSION_METHOD, step), sealed, SystemTime::now()).ok()?;
        String::from_utf8(who).ok()
    }

    fn owner(&self, step: &str, request: &PageRequest<'_>) -> Option<String> {
        let query = request.query?;
        let sealed = url::form_urlencoded::parse(query.as_bytes()).find(|(k, _)| k == OWNER_PARAM)?.1;
        let owner = self.sign_in.0.owners.open(&binding(OWNER_METHOD, step), &sealed, SystemTime::now()).ok()?;
        String::from_utf8(owner).ok()
    }
}

impl VisitorCheck for OpenIdVisitors {
    fn link_query(&self, step: &str, principal: Option<&str>) -> Option<String> {
        let sealed = self
            .sign_in
            .0
            .owners
            .seal(&binding(OWNER_METHOD, step), principal?.as_bytes(), SystemTime::now())
            .map_err(|error| tracing::error!(%error, "a step's owner is too long for its link"))
            .ok()?;
        Some(format!("{OWNER_PARAM}={sealed}"))
    }

    fn visit<'a>(&'a self, step: &'a str, request: PageRequest<'a>) -> VisitFuture<'a> {
        Box::pin(async move {
            if let Some(user) = self.session(step, &request) {
                // An API client's credentials naming someone else.
                if request.authenticated.is_some_and(|other| other != user) {
                    let text = "This request names two different users.".to_owned();
                    return Visit::Refused(Refusal { kind: RefusalKind::TwoUsers, text });
                }
                return Visit::Visitor(Some(user));
            }
            // Not signed in to this page (an API client's bearer token does not count): sign in
            // at the provider, as the user the link names.
            let Some(owner) = self.owner(step, &request) else {
                let text = "This page does not know who you are, and its link does not say whose request it is. \
                            Open the link your MCP client showed you."
                    .to_owned();
                return Visit::Refused(Refusal { kind: RefusalKind::NotSignedIn, text });
            };
            let return_to = match request.query {
                Some(query) => format!("{}{step}?{query}", self.page_path),
                None => format!("{}{step}", self.page_path),
            };
            self.sign_in.begin(step, owner, return_to, self, request.https)
        })
    }
}

/// A page of the callback: the page kit's look and security headers.
fn notice(status: StatusCode, title: &str, id: &str, text: &str) -> Response {
    page_response(status, render_notice(&Notice { title, text, id }))
}

fn refused(id: &str, text: &str) -> Response {
    notice(StatusCode::FORBIDDEN, "Sign-in refused", id, text)
}

/// `GET` [`CALLBACK_PATH`]`?code=…&state=…`: the provider sending the browser back.
async fn callback(State(sign_in): State<OpenIdSignIn>, RawQuery(query): RawQuery, headers: HeaderMap) -> Response {
    let params: HashMap<String, String> =
        url::form_urlencoded::parse(query.as_deref().unwrap_or_default().as_bytes()).into_owned().collect();
    let Some(state) = params.get("state") else {
        return refused("sign-in-invalid", "This sign-in is not valid. Nothing was recorded.");
    };
    // Removed before anything is checked: a state is used once, whatever comes of it.
    let pending = sign_in.0.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(state);
    let Some(pending) = pending.filter(|p| p.at.elapsed() < SIGN_IN_TTL) else {
        return refused(
            "sign-in-invalid",
            "This sign-in is not valid, has expired or was used already. Nothing was recorded. Open the link your \
             MCP client showed you again.",
        );
    };
    let cookie_name = format!("{BINDING_COOKIE}{state}");
    let from_this_browser = cookie(&headers, &cookie_name)
        .is_some_and(|value| <[u8; 32]>::from(Sha256::digest(value.as_bytes())) == pending.browser);
    if !from_this_browser {
        return refused(
            "sign-in-invalid",
            "This sign-in was not started in this browser. Nothing was recorded. Open the link your MCP client \
             showed you, in this browser.",
        );
    }
    if params.contains_key("error") {
        return refused(
            "sign-in-declined",
            "The sign-in was not completed at the identity provider. Nothing was recorded.",
        );
    }
    let Some(code) = params.get("code") else {
        return refused("sign-in-invalid", "This sign-in is not valid. Nothing was recorded.");
    };
    let subject = match sign_in.finish(code, &pending).await {
        Ok(subject) => subject,
        Err(error @ TokenError::Provider(_)) => {
            tracing::error!(%error, "a page sign-in could not reach the provider");
            return notice(
                StatusCode::SERVICE_UNAVAILABLE,
                "Try again later",
                "unavailable",
                "The sign-in service is unavailable right now. Nothing was recorded.",
            );
        }
        Err(error) => {
            tracing::warn!(%error, "a page sign-in was refused");
            return refused("sign-in-invalid", "This sign-in could not be verified. Nothing was recorded.");
        }
    };
    if subject != pending.owner {
        tracing::warn!(step = %pending.step, "a page sign-in by another user than the step's owner was refused");
        return refused(
            "subject-mismatch",
            "You are signed in at the identity provider as another user than the one this request is for, so this \
             page cannot take your decision. Nothing was recorded. Sign out at the identity provider, or open the \
             link in the browser of the user who asked.",
        );
    }
    let Ok(session) =
        sign_in.0.sessions.seal(&binding(SESSION_METHOD, &pending.step), subject.as_bytes(), SystemTime::now())
    else {
        return notice(
            StatusCode::SERVICE_UNAVAILABLE,
            "Try again later",
            "unavailable",
            "No page session could be made.",
        );
    };
    let secure = if sign_in.0.client.redirect_uri.starts_with("https://") { "; Secure" } else { "" };
    let (name, path, step) = (pending.cookie, pending.page_path, &pending.step);
    let mut response = notice(StatusCode::SEE_OTHER, "Signed in", "signed-in", "Continue to the page.");
    let cookies = [
        format!("{name}={session}; HttpOnly; SameSite=Lax; Path={path}{step}{secure}"),
        format!("{cookie_name}=; HttpOnly; SameSite=Lax; Path={CALLBACK_PATH}; Max-Age=0{secure}"),
    ];
    for value in cookies.iter().filter_map(|c| HeaderValue::from_str(c).ok()) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
    if let Ok(location) = HeaderValue::from_str(&pending.return_to) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    response
}
