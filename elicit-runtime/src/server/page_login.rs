//! Who opened the page of a URL-mode step: one-time sign-in links for the browser.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chacha20poly1305::aead::OsRng;
use chacha20poly1305::aead::rand_core::RngCore as _;
use serde_json::json;

use super::store::{StoreError, UrlCompletions, UrlStatus};
use crate::state::{Binding, KeyRing, StateErrorKind, StateSealer};

/// The binding method of a sign-in ticket: no request has it, so no `requestState` opens as one.
const TICKET_METHOD: &str = "elicit-runtime/page-login/ticket";
/// The binding method of a browser session.
const SESSION_METHOD: &str = "elicit-runtime/page-login/session";
/// The binding audience of both.
const AUDIENCE: &str = "elicit-runtime/page-login/v1";
/// Random bytes naming a ticket's one-time record.
const NONCE_LEN: usize = 16;
/// Tickets and sessions longer than this are refused before any work (a principal of a few
/// hundred bytes fits).
const MAX_TOKEN_LEN: usize = 2048;
/// The default lifetime of a ticket: the engine's default for a URL-mode step.
const DEFAULT_TTL: Duration = Duration::from_secs(15 * 60);
/// The default bound on waiting for a ticket's one-time record to reach the store.
const DEFAULT_REDEEM_WAIT: Duration = Duration::from_secs(2);
/// How often a redeem looks for a ticket's record that is not in the store yet.
const REDEEM_POLL: Duration = Duration::from_millis(25);

/// Why a sign-in ticket was not accepted, or could not be made.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PageLoginError {
    /// Not a ticket of this server for this step: altered, for another step, sealed with a key
    /// the ring does not hold, or its one-time record is not in the store.
    Invalid,
    /// A ticket of this server for this step whose lifetime is over.
    Expired,
    /// The ticket was redeemed already: a link opened twice, or by someone else first.
    Used,
    /// The principal is too long to travel in a ticket.
    TooLarge,
    /// A ticket can only be made on a Tokio runtime (its one-time record is written by a task).
    NoRuntime,
    /// The completion store failed: the page should say "try again later" and log the detail.
    Store(StoreError),
}

impl std::fmt::Display for PageLoginError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PageLoginError::Invalid => f.write_str("the sign-in link is not valid"),
            PageLoginError::Expired => f.write_str("the sign-in link has expired"),
            PageLoginError::Used => f.write_str("the sign-in link was used already"),
            PageLoginError::TooLarge => f.write_str("the principal is too long for a sign-in link"),
            PageLoginError::NoRuntime => f.write_str("sign-in links are made on a Tokio runtime"),
            PageLoginError::Store(error) => write!(f, "sign-in link: {error}"),
        }
    }
}

impl std::error::Error for PageLoginError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PageLoginError::Store(error) => Some(error),
            _ => None,
        }
    }
}

/// Mints and redeems one-time sign-in links for the pages of URL-mode steps, and the browser
/// sessions they are exchanged for. Cheap to clone.
///
/// In URL mode the server hands the client a URL and the user opens it in a browser. The spec
/// requires the server to verify that the person who opens it is the user the step is for, but a
/// browser sends none of the credentials an MCP client does (no `Authorization` header). A
/// [`PageLogin`] closes that gap with the pattern of a magic link:
///
/// 1. Where the engine builds the step's URL (the closure of [`Flow::url`]), the server adds a
///    *ticket* from [`PageLogin::ticket`]: sealed (AEAD, with a key ring) for that step id and the
///    flow's principal, valid for a limited time, and usable once.
/// 2. The page, opened with the ticket, calls [`PageLogin::redeem`]: it checks the seal, the step
///    and the expiry, and consumes the ticket in the completion store, so a replayed link, a link
///    for another step or a forged one is refused. It returns the principal.
/// 3. The page then gives the browser a *session* ([`PageLogin::session`]) in an `HttpOnly`,
///    `SameSite` cookie scoped to the step's page, and redirects to the page without the ticket
///    (so it is neither bookmarked nor sent on). Each later request names its user by
///    [`PageLogin::session_principal`], and the page records the decision under that identity: the
///    `by` of [`UrlCompletions::complete`](super::store::UrlCompletions::complete), which refuses anyone but the step's owner.
///
/// **This does not meet the spec's rule that a URL-mode link carry no credential.** The ticket
/// *is* a credential in the URL: whoever holds the link before its owner opens it (a log, a
/// proxy, a shoulder, a chat the link was pasted into) is signed in as the owner. It is kept for
/// servers whose users have only static API tokens and no browser sign-in. A server with an
/// OpenID provider signs the page's visitor in through it instead (a
/// `pages::kit::VisitorCheck` (feature `pages`) running the authorization code flow with
/// PKCE, as the showcase `travel-server --oidc-issuer … --oidc-client-id …` does); a server with
/// its own browser sign-in uses `pages::kit::AuthenticatedVisitors`.
///
/// The page, not this type, decides what an unsigned browser may do; a server with users should
/// refuse an anonymous decision. API clients that present the server's own credentials (a bearer
/// token) need no ticket.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// use elicit_runtime::server::store::{InProcessStore, UrlCompletions};
/// use elicit_runtime::server::{PageLogin, PageLoginError};
/// use elicit_runtime::state::KeyRing;
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let store: Arc<dyn UrlCompletions> = Arc::new(InProcessStore::new());
/// let logins = PageLogin::new(KeyRing::generate(), store.clone());
/// // The engine registered step "Zm9vYmFyYmF6cXV4MTIzNDU" for alice; its URL carries a ticket.
/// let step = "Zm9vYmFyYmF6cXV4MTIzNDU";
/// let ticket = logins.ticket(step, "alice")?;
/// let url = format!("https://pay.example/pay/{step}?login={ticket}");
/// # let _ = url;
///
/// // The browser opens the URL: the page redeems the ticket and keeps a session in a cookie.
/// let user = logins.redeem(step, &ticket).await?;
/// assert_eq!(user, "alice");
/// let cookie = logins.session(step, &user)?;
/// assert_eq!(logins.session_principal(step, &cookie).as_deref(), Some("alice"));
///
/// // The link works once, and only for its step.
/// assert_eq!(logins.redeem(step, &ticket).await, Err(PageLoginError::Used));
/// assert_eq!(logins.redeem("QW5vdGhlclN0ZXBJZDEyMzQ", &ticket).await, Err(PageLoginError::Invalid));
/// assert_eq!(logins.session_principal("QW5vdGhlclN0ZXBJZDEyMzQ", &cookie), None);
/// # Ok::<(), PageLoginError>(())
/// # }).unwrap();
/// ```
///
/// **Keys.** Tickets and sessions are sealed like `requestState` ([`StateSealer`]), under a ring
/// of their own or the engine's own ring: they are bound to names no request carries, so a
/// ticket never opens as a state, a session never as a ticket, nor the reverse. Instances that
/// share the ring and the store accept each other's tickets and sessions; rotating keys works as
/// for states (the first key seals, every key opens).
///
/// **Single use.** [`PageLogin::ticket`] is synchronous, because URLs are built in a synchronous
/// closure; the ticket's one-time record is written to the store by a task on the current Tokio
/// runtime, and [`PageLogin::redeem`] waits for it a little ([`PageLogin::with_redeem_wait`]) in
/// case the browser is faster than the store. The record is one per step and principal, however
/// many tickets are made for it (a flow replays its round, and builds its link again, on every
/// retry of the client): the first ticket redeemed signs its browser in, and every ticket of that
/// step is then used. Registering it again is a no-op, so replays neither add records nor count
/// against the principal's quota. It lives as long as the first ticket, under a key
/// (`{step}.login.{digest of the principal}`) that is never a step id of the engine's.
///
/// [`Flow::url`]: super::Flow::url
#[derive(Clone)]
pub struct PageLogin {
    tickets: StateSealer,
    sessions: StateSealer,
    store: Arc<dyn UrlCompletions>,
    redeem_wait: Duration,
}

impl std::fmt::Debug for PageLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageLogin")
            .field("ticket_ttl", &self.tickets.ttl())
            .field("session_ttl", &self.sessions.ttl())
            .field("redeem_wait", &self.redeem_wait)
            .finish_non_exhaustive()
    }
}

impl PageLogin {
    /// Sign-in links sealed with `ring` (the engine's own, or one of their own), consumed in
    /// `store` (the store the steps live in, shared by every instance serving the page). Tickets
    /// and sessions live 15 minutes, as a URL-mode step does by default.
    pub fn new(ring: KeyRing, store: Arc<dyn UrlCompletions>) -> PageLogin {
        let sealer = StateSealer::new(ring).with_max_token_len(MAX_TOKEN_LEN).with_ttl(DEFAULT_TTL);
        PageLogin { tickets: sealer.clone(), sessions: sealer, store, redeem_wait: DEFAULT_REDEEM_WAIT }
    }

    /// Sets how long a ticket can be redeemed (whole seconds; use the engine's `url_ttl`: a link
    /// is no use after its step). A ticket lives at most `ttl`.
    #[must_use]
    pub fn with_ttl(mut self, ttl: Duration) -> PageLogin {
        self.tickets = self.tickets.with_ttl(ttl);
        self
    }

    /// Sets how long a session is good for after sign-in (whole seconds; 15 minutes unless set).
    #[must_use]
    pub fn with_session_ttl(mut self, ttl: Duration) -> PageLogin {
        self.sessions = self.sessions.with_ttl(ttl);
        self
    }

    /// Sets how long [`PageLogin::redeem`] waits for a fresh ticket's one-time record to reach
    /// the store (2 seconds unless set).
    #[must_use]
    pub fn with_redeem_wait(mut self, wait: Duration) -> PageLogin {
        self.redeem_wait = wait;
        self
    }

    /// A ticket signing `principal` in to the page of `step`, to put in the step's URL (it is
    /// URL-safe base64). Registers the ticket's one-time record in the store from a task of the
    /// current Tokio runtime; a store failure there is logged, and the ticket is then refused.
    ///
    /// # Errors
    ///
    /// [`PageLoginError::NoRuntime`] outside a Tokio runtime; [`PageLoginError::TooLarge`] for a
    /// principal too long to seal.
    pub fn ticket(&self, step: &str, principal: &str) -> Result<String, PageLoginError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| PageLoginError::NoRuntime)?;
        let mut nonce = [0u8; NONCE_LEN];
        OsRng.fill_bytes(&mut nonce);
        let mut payload = Vec::with_capacity(NONCE_LEN + principal.len());
        payload.extend_from_slice(&nonce);
        payload.extend_from_slice(principal.as_bytes());
        let ticket = self
            .tickets
            .seal(&binding(TICKET_METHOD, step), &payload, SystemTime::now())
            .map_err(|_| PageLoginError::TooLarge)?;
        let (store, key, ttl, owner) = (self.store.clone(), record_key(step, principal), self.tickets.ttl(), principal);
        let owner = owner.to_owned();
        runtime.spawn(async move {
            if let Err(error) = store.register(&key, ttl, Some(&owner)).await {
                tracing::warn!(target: "elicit_runtime", %error, "could not register a sign-in link; it will be refused");
            }
        });
        Ok(ticket)
    }

    /// Redeems a ticket presented to the page of `step`: the principal it signs in, once.
    ///
    /// # Errors
    ///
    /// [`PageLoginError::Invalid`], [`Expired`](PageLoginError::Expired) or
    /// [`Used`](PageLoginError::Used) for a ticket the page must refuse (never a panic, whatever
    /// the text); [`PageLoginError::Store`] when the store fails.
    pub async fn redeem(&self, step: &str, ticket: &str) -> Result<String, PageLoginError> {
        let payload = self.tickets.open(&binding(TICKET_METHOD, step), ticket, SystemTime::now()).map_err(|error| {
            if error.kind() == StateErrorKind::Expired { PageLoginError::Expired } else { PageLoginError::Invalid }
        })?;
        let (_nonce, principal) = payload.split_at_checked(NONCE_LEN).ok_or(PageLoginError::Invalid)?;
        let principal = std::str::from_utf8(principal).map_err(|_| PageLoginError::Invalid)?;
        let key = record_key(step, principal);
        let deadline = tokio::time::Instant::now() + self.redeem_wait;
        loop {
            let store = |error| PageLoginError::Store(error);
            if self.store.complete(&key, json!({ "step": step }), Some(principal)).await.map_err(store)? {
                return Ok(principal.to_owned());
            }
            match self.store.status(&key).await.map_err(store)? {
                UrlStatus::Completed(_) => return Err(PageLoginError::Used),
                // Not registered yet (the browser beat the task that writes it), or registered
                // between the attempt and this look: try again, within the bound.
                _ if tokio::time::Instant::now() < deadline => tokio::time::sleep(REDEEM_POLL).await,
                // Never registered, or registered for someone else: not a record of this ticket.
                _ => return Err(PageLoginError::Invalid),
            }
        }
    }

    /// The principal a ticket for `step` names, if it opens (without consuming it): a page
    /// refuses a ticket presented with another user's credentials before it spends the step's
    /// one sign-in.
    #[cfg(feature = "pages")]
    pub(crate) fn ticket_principal(&self, step: &str, ticket: &str) -> Option<String> {
        let payload = self.tickets.open(&binding(TICKET_METHOD, step), ticket, SystemTime::now()).ok()?;
        let (_nonce, principal) = payload.split_at_checked(NONCE_LEN)?;
        String::from_utf8(principal.to_vec()).ok()
    }

    /// A session for `principal` on the page of `step`, to keep in an `HttpOnly` cookie scoped
    /// to that page (URL-safe base64, a valid cookie value).
    ///
    /// # Errors
    ///
    /// [`PageLoginError::TooLarge`] for a principal too long to seal.
    pub fn session(&self, step: &str, principal: &str) -> Result<String, PageLoginError> {
        self.sessions
            .seal(&binding(SESSION_METHOD, step), principal.as_bytes(), SystemTime::now())
            .map_err(|_| PageLoginError::TooLarge)
    }

    /// The principal a session cookie signs in to the page of `step`; `None` for anything else
    /// (another step's session, an expired or altered one, a ticket).
    pub fn session_principal(&self, step: &str, session: &str) -> Option<String> {
        let principal = self.sessions.open(&binding(SESSION_METHOD, step), session, SystemTime::now()).ok()?;
        String::from_utf8(principal).ok()
    }
}

/// What tickets and sessions are bound to: their kind and the step's id.
fn binding<'a>(method: &'a str, step: &'a str) -> Binding<'a> {
    Binding { principal: None, method, name: step, arguments_digest: [0; 32], audience: AUDIENCE }
}

/// The store key of the one-time record the tickets of `step` for `principal` share: longer than
/// any step id the engine mints.
fn record_key(step: &str, principal: &str) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(principal.as_bytes());
    format!("{step}.login.{}", URL_SAFE_NO_PAD.encode(&digest[..16]))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failing test should stop loudly")]
mod tests {
    use super::*;
    use crate::server::store::InProcessStore;

    const STEP: &str = "AAAAAAAAAAAAAAAAAAAAAA";
    const OTHER_STEP: &str = "BBBBBBBBBBBBBBBBBBBBBB";

    fn logins(ring: &KeyRing) -> (PageLogin, Arc<InProcessStore>) {
        let store = Arc::new(InProcessStore::new());
        (PageLogin::new(ring.clone(), store.clone()), store)
    }

    #[tokio::test]
    async fn a_ticket_signs_in_its_principal_once_and_only_on_its_step() {
        let ring = KeyRing::generate();
        let (logins, _) = logins(&ring);
        let ticket = logins.ticket(STEP, "alice").unwrap();
        assert_eq!(logins.redeem(OTHER_STEP, &ticket).await, Err(PageLoginError::Invalid), "another step");
        assert_eq!(logins.redeem(STEP, &ticket).await.unwrap(), "alice");
        assert_eq!(logins.redeem(STEP, &ticket).await, Err(PageLoginError::Used), "replayed");
        // Another ticket of the same principal for the same step (the round replayed) shares
        // the step's one sign-in: used.
        let again = logins.ticket(STEP, "alice").unwrap();
        assert_ne!(again, ticket);
        assert_eq!(logins.redeem(STEP, &again).await, Err(PageLoginError::Used));
    }

    #[tokio::test]
    async fn altered_foreign_and_expired_tickets_are_refused() {
        let ring = KeyRing::generate();
        let (logins, store) = logins(&ring);
        let ticket = logins.ticket(STEP, "alice").unwrap();
        let mut altered = ticket.clone().into_bytes();
        let last = altered.len() - 3;
        altered[last] = if altered[last] == b'A' { b'B' } else { b'A' };
        let altered = String::from_utf8(altered).unwrap();
        for bad in [altered.as_str(), "", "not base64!", &"A".repeat(MAX_TOKEN_LEN + 1)] {
            assert_eq!(logins.redeem(STEP, bad).await, Err(PageLoginError::Invalid), "{bad:.40}");
        }
        // Another deployment's key.
        let foreign = PageLogin::new(KeyRing::generate(), store.clone()).ticket(STEP, "alice").unwrap();
        assert_eq!(logins.redeem(STEP, &foreign).await, Err(PageLoginError::Invalid));
        // A session is not a ticket.
        let session = logins.session(STEP, "alice").unwrap();
        assert_eq!(logins.redeem(STEP, &session).await, Err(PageLoginError::Invalid));
        // A ticket whose lifetime is over.
        let expired = logins.clone().with_ttl(Duration::ZERO).ticket(STEP, "alice").unwrap();
        assert_eq!(logins.redeem(STEP, &expired).await, Err(PageLoginError::Expired));
        // The good ticket still works after all that.
        assert_eq!(logins.redeem(STEP, &ticket).await.unwrap(), "alice");
    }

    #[tokio::test]
    async fn instances_sharing_ring_and_store_accept_each_others_tickets() {
        let ring = KeyRing::generate();
        let (a, store) = logins(&ring);
        let b = PageLogin::new(ring.clone(), store.clone());
        let ticket = a.ticket(STEP, "bob").unwrap();
        assert_eq!(b.redeem(STEP, &ticket).await.unwrap(), "bob");
        assert_eq!(a.redeem(STEP, &ticket).await, Err(PageLoginError::Used));
        assert_eq!(b.session_principal(STEP, &a.session(STEP, "bob").unwrap()).as_deref(), Some("bob"));
    }

    #[tokio::test]
    async fn a_ticket_whose_record_never_reached_the_store_is_refused() {
        let ring = KeyRing::generate();
        let (logins, _) = logins(&ring);
        let ticket = logins.ticket(STEP, "alice").unwrap();
        // The same keys over a store that never saw the ticket's record.
        let elsewhere = PageLogin::new(ring, Arc::new(InProcessStore::new())).with_redeem_wait(Duration::ZERO);
        assert_eq!(elsewhere.redeem(STEP, &ticket).await, Err(PageLoginError::Invalid));
    }

    #[tokio::test]
    async fn sessions_name_their_principal_on_their_step_only() {
        let ring = KeyRing::generate();
        let (logins, _) = logins(&ring);
        let session = logins.session(STEP, "alice").unwrap();
        assert_eq!(logins.session_principal(STEP, &session).as_deref(), Some("alice"));
        assert_eq!(logins.session_principal(OTHER_STEP, &session), None);
        assert_eq!(logins.session_principal(STEP, &logins.ticket(STEP, "alice").unwrap()), None, "a ticket");
        let expired = logins.clone().with_session_ttl(Duration::ZERO).session(STEP, "alice").unwrap();
        assert_eq!(logins.session_principal(STEP, &expired), None);
        assert_eq!(logins.session(STEP, &"x".repeat(MAX_TOKEN_LEN)), Err(PageLoginError::TooLarge));
    }

    #[test]
    fn outside_a_runtime_no_ticket_is_made() {
        let (logins, _) = logins(&KeyRing::generate());
        assert_eq!(logins.ticket(STEP, "alice"), Err(PageLoginError::NoRuntime));
    }
}
