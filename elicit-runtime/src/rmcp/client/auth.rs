//! OAuth 2.1 authorization for [`Client`](super::Client) (feature `rmcp-auth`), on rmcp's own
//! `auth` support: protected resource metadata discovery (from `WWW-Authenticate`, then the
//! well-known paths), authorization server metadata with its issuer checked, PKCE S256, the
//! `resource` indicator, client ID metadata documents, dynamic registration or pre-registered
//! credentials, the scope rules, `iss` in the authorization response compared exactly, a
//! resource that is not the server refused, and refresh tokens used where they were offered.
//!
//! The person's side is the application's: an [`Authorizer`] gives the redirect URI and puts the
//! authorization URL before the person (consent first), then returns the URL the authorization
//! server redirected their browser to. Tokens live in a [`TokenStore`]: in memory, or a file per
//! server and account with owner-only permissions ([`TokenStore::file`]).

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, CredentialStore, OAuthState, StoredCredentials,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::sync::Mutex;

/// A boxed future, for the [`Authorizer`] trait (used behind `dyn`).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Why an authorization did not complete.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthorizeError {
    /// The person declined or closed the authorization.
    Declined,
    /// The authorization could not be shown or its redirect not received.
    Unavailable(String),
    /// The OAuth exchange failed (discovery, registration, the token endpoint, a check).
    OAuth(String),
    /// The server still refused after this many authorizations.
    TooManyAttempts(u32),
}

impl std::fmt::Display for AuthorizeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AuthorizeError::Declined => write!(f, "the authorization was declined"),
            AuthorizeError::Unavailable(reason) => write!(f, "cannot complete the authorization: {reason}"),
            AuthorizeError::OAuth(reason) => write!(f, "authorization failed: {reason}"),
            AuthorizeError::TooManyAttempts(n) => {
                write!(f, "the server still refused access after {n} authorizations; giving up")
            }
        }
    }
}

impl std::error::Error for AuthorizeError {}

impl From<AuthError> for AuthorizeError {
    fn from(error: AuthError) -> Self {
        AuthorizeError::OAuth(error.to_string())
    }
}

/// The person's side of an authorization.
pub trait Authorizer: Send + Sync {
    /// The redirect URI to register and send for the next authorization (for a terminal
    /// application, a loopback listener bound now).
    fn redirect_uri(&self) -> BoxFuture<'_, Result<String, AuthorizeError>>;

    /// Puts `url`, the authorization server's page, before the person — with their consent before
    /// anything opens it — and returns the full URL the authorization server redirected to (with
    /// `code`, `state` and perhaps `iss`).
    fn authorize<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<String, AuthorizeError>>;
}

/// Where tokens are kept between runs.
#[derive(Debug, Clone, Default)]
pub struct TokenStore {
    file: Option<PathBuf>,
}

/// What a token file holds: the server and account it is for, and rmcp's credentials.
#[derive(Serialize, Deserialize)]
struct TokenFile {
    server: String,
    account: String,
    credentials: Option<StoredCredentials>,
}

impl TokenStore {
    /// Tokens kept in memory for this process only.
    pub fn memory() -> TokenStore {
        TokenStore { file: None }
    }

    /// Tokens kept in `dir` (created owner-only), one file per `server` and `account`, readable
    /// and writable by the owner only.
    pub fn file(dir: &Path, server: &str, account: &str) -> TokenStore {
        TokenStore { file: Some(dir.join(token_file_name(server, account))) }
    }

    /// The file tokens are kept in, if any.
    pub fn path(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// Removes the stored tokens. `Ok(true)` when there were some.
    ///
    /// # Errors
    ///
    /// The file exists but cannot be removed.
    pub fn remove(&self) -> std::io::Result<bool> {
        let Some(path) = &self.file else { return Ok(false) };
        match std::fs::remove_file(path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }
}

/// The name of the token file of `server` and `account`: a digest, so neither shows in a
/// directory listing and any text makes a valid file name.
fn token_file_name(server: &str, account: &str) -> String {
    let digest = Sha256::digest(format!("{server}\n{account}").as_bytes());
    let hex: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
    format!("{hex}.json")
}

/// rmcp's credential store on a [`TokenStore`].
struct Stored {
    store: TokenStore,
    server: String,
    account: String,
    memory: Mutex<Option<StoredCredentials>>,
}

fn store_error(error: impl std::fmt::Display) -> AuthError {
    AuthError::CredentialStoreError(error.to_string())
}

#[cfg(unix)]
fn owner_only(options: &mut std::fs::OpenOptions) {
    use std::os::unix::fs::OpenOptionsExt;
    options.mode(0o600);
}

#[cfg(not(unix))]
fn owner_only(_options: &mut std::fs::OpenOptions) {}

fn create_dir_owner_only(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
    }
    #[cfg(not(unix))]
    {
        std::fs::create_dir_all(dir)
    }
}

impl Stored {
    fn write(&self, credentials: Option<StoredCredentials>) -> Result<(), AuthError> {
        let Some(path) = &self.store.file else { return Ok(()) };
        if let Some(dir) = path.parent() {
            create_dir_owner_only(dir).map_err(store_error)?;
        }
        let file = TokenFile { server: self.server.clone(), account: self.account.clone(), credentials };
        let text = serde_json::to_vec_pretty(&file).map_err(store_error)?;
        // Written beside, then renamed: a reader never sees half a file.
        let partial = path.with_extension("json.partial");
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        owner_only(&mut options);
        {
            use std::io::Write;
            let mut out = options.open(&partial).map_err(store_error)?;
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                out.set_permissions(std::fs::Permissions::from_mode(0o600)).map_err(store_error)?;
            }
            out.write_all(&text).map_err(store_error)?;
            out.sync_all().map_err(store_error)?;
        }
        std::fs::rename(&partial, path).map_err(store_error)
    }

    fn read(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let Some(path) = &self.store.file else { return Ok(None) };
        let text = match std::fs::read(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(store_error(e)),
        };
        // A file that is not ours (or is for another server) holds nothing for us.
        match serde_json::from_slice::<TokenFile>(&text) {
            Ok(file) if file.server == self.server && file.account == self.account => Ok(file.credentials),
            _ => Ok(None),
        }
    }
}

#[async_trait::async_trait]
impl CredentialStore for Stored {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        if self.store.file.is_none() {
            return Ok(self.memory.lock().await.clone());
        }
        self.read()
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        if self.store.file.is_none() {
            *self.memory.lock().await = Some(credentials);
            return Ok(());
        }
        self.write(Some(credentials))
    }

    async fn clear(&self) -> Result<(), AuthError> {
        *self.memory.lock().await = None;
        self.store.remove().map(|_| ()).map_err(store_error)
    }
}

/// How a [`Client`](super::Client) authorizes with a protected server.
#[derive(Clone)]
pub struct OAuth {
    pub(crate) authorizer: Arc<dyn Authorizer>,
    store: TokenStore,
    account: String,
    client_name: String,
    client_metadata_url: Option<String>,
    preregistered: Option<(String, Option<String>)>,
    scopes: Vec<String>,
    pub(crate) max_authorizations: u32,
}

impl std::fmt::Debug for OAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuth")
            .field("store", &self.store)
            .field("account", &self.account)
            .field("client_name", &self.client_name)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("preregistered", &self.preregistered.as_ref().map(|(id, _)| id))
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

impl OAuth {
    /// Authorization through `authorizer`, tokens in memory, registering as `client_name`
    /// (dynamic registration when the authorization server offers it), asking for the scopes the
    /// server names, and at most 3 authorizations per connection or call (step-up included).
    pub fn new(authorizer: impl Authorizer + 'static, client_name: impl Into<String>) -> OAuth {
        OAuth {
            authorizer: Arc::new(authorizer),
            store: TokenStore::memory(),
            account: "default".to_owned(),
            client_name: client_name.into(),
            client_metadata_url: None,
            preregistered: None,
            scopes: Vec::new(),
            max_authorizations: 3,
        }
    }

    /// Keeps tokens in `store` under `account`.
    pub fn store(mut self, store: TokenStore, account: impl Into<String>) -> OAuth {
        self.store = store;
        self.account = account.into();
        self
    }

    /// Offers this HTTPS client ID metadata document, used when the authorization server
    /// supports them.
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> OAuth {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// Uses a client registered out of band (with its secret for a confidential client).
    pub fn preregistered(mut self, client_id: impl Into<String>, secret: Option<String>) -> OAuth {
        self.preregistered = Some((client_id.into(), secret));
        self
    }

    /// Asks for these scopes instead of the ones the server names.
    pub fn scopes(mut self, scopes: Vec<String>) -> OAuth {
        self.scopes = scopes;
        self
    }

    /// Gives up after this many authorizations in one connection or call (at least 1).
    pub fn max_authorizations(mut self, n: u32) -> OAuth {
        self.max_authorizations = n.max(1);
        self
    }

    /// rmcp's credential store for `server`.
    fn credential_store(&self, server: &str) -> Stored {
        Stored {
            store: self.store.clone(),
            server: server.to_owned(),
            account: self.account.clone(),
            memory: Mutex::new(None),
        }
    }

    /// A manager for `server` with the stored tokens (if any) in place.
    pub(crate) async fn stored_manager(&self, server: &str) -> Result<AuthorizationManager, AuthorizeError> {
        let mut manager = AuthorizationManager::new(server).await?;
        manager.set_credential_store(self.credential_store(server));
        // Stored tokens that cannot be used (another issuer, a broken file) mean a new authorization.
        if manager.initialize_from_store().await.is_err() {
            let _ = self.store.remove();
        }
        Ok(manager)
    }

    /// Runs one authorization for `server` after `challenge` (its `WWW-Authenticate`): discovery,
    /// registration, the person's consent and login, the code exchange. The tokens are saved.
    pub(crate) async fn authorize(
        &self,
        server: &str,
        challenge: &str,
    ) -> Result<AuthorizationManager, AuthorizeError> {
        let mut manager = AuthorizationManager::new(server).await?;
        manager.set_credential_store(self.credential_store(server));
        let mut state = OAuthState::Unauthorized(manager);
        let redirect = self.authorizer.redirect_uri().await?;
        let mut request =
            AuthorizationRequest::new(redirect).with_client_name(self.client_name.clone()).with_challenge(challenge);
        if let Some(url) = &self.client_metadata_url {
            request = request.with_client_metadata_url(url.clone());
        }
        if let Some((id, secret)) = &self.preregistered {
            request = request.with_preregistered_client(id.clone());
            if let Some(secret) = secret {
                request = request.with_client_secret(secret.clone());
            }
        }
        if !self.scopes.is_empty() {
            request = request.with_scopes(self.scopes.clone());
        }
        state.start_authorization(request).await?;
        let url = state.get_authorization_url().await?;
        let redirected = self.authorizer.authorize(&url).await?;
        state.handle_callback_url(&redirected).await?;
        state.into_authorization_manager().ok_or_else(|| AuthorizeError::OAuth("no authorized state".into()))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failing test should stop loudly")]
mod tests {
    use super::*;

    fn stored(dir: &Path, server: &str, account: &str) -> Stored {
        Stored {
            store: TokenStore::file(dir, server, account),
            server: server.to_owned(),
            account: account.to_owned(),
            memory: Mutex::new(None),
        }
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("elicit-token-store-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir.join("tokens")
    }

    #[tokio::test]
    async fn tokens_are_kept_per_server_and_account_in_owner_only_files() {
        let dir = scratch("per-server");
        let a = stored(&dir, "https://a.example/mcp", "default");
        a.save(StoredCredentials::new("client-a".into(), None, vec!["mcp".into()], Some(1))).await.unwrap();
        let path = a.store.path().unwrap().to_owned();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
            assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
        }
        assert_eq!(a.load().await.unwrap().unwrap().client_id, "client-a");
        // Another account, another server: other files, nothing to load yet.
        let work = stored(&dir, "https://a.example/mcp", "work");
        let b = stored(&dir, "https://b.example/mcp", "default");
        assert_ne!(work.store.path(), a.store.path());
        assert_ne!(b.store.path(), a.store.path());
        assert!(work.load().await.unwrap().is_none() && b.load().await.unwrap().is_none());
        // A file that names another server is not taken for this one's.
        std::fs::copy(&path, b.store.path().unwrap()).unwrap();
        assert!(b.load().await.unwrap().is_none());
        // Clearing (logout) removes the file.
        a.clear().await.unwrap();
        assert!(!path.exists());
        assert!(!a.store.remove().unwrap());
        let _ = std::fs::remove_dir_all(dir.parent().unwrap());
    }

    #[tokio::test]
    async fn a_broken_token_file_holds_nothing() {
        let dir = scratch("broken");
        let a = stored(&dir, "https://a.example/mcp", "default");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(a.store.path().unwrap(), b"{not json").unwrap();
        assert!(a.load().await.unwrap().is_none());
        let _ = std::fs::remove_dir_all(dir.parent().unwrap());
    }
}
