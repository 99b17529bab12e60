//! Sealing and opening `requestState` tokens.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chacha20poly1305::aead::{Aead, AeadCore, OsRng, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};

use super::keys::KeyRing;
use super::binding::Binding;
use super::*;

///
/// Clients must only ever see [`INVALID_STATE_MESSAGE`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StateErrorKind {
    /// The token text exceeds the configured cap; it was not decoded.
    TooLarge,
    /// The token is not URL-safe unpadded base64, or is too short to be one.
    Malformed,
    /// The envelope version byte is not one this server writes.
    UnsupportedVersion,
    /// No key in the ring has the token's key id (e.g. a retired key).
    UnknownKey,
    /// Authentication failed: the token was altered, or it belongs to a
    /// different binding (other method, tool, arguments, principal or
    /// audience).
    Forged,
    /// The token authenticated but its lifetime is over.
    Expired,
    /// Sealing only: the payload would make the token exceed the cap. This
    /// is a server-side bug or limit, never caused by a client's token.
    PayloadTooLarge,
}

/// Failure to seal or open a `requestState`.
///
/// `Display` is [`INVALID_STATE_MESSAGE`] for every opening failure, so the
/// error can be sent to a client as is; use [`StateError::kind`] for logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateError {
    kind: StateErrorKind,
}

impl StateError {
    fn new(kind: StateErrorKind) -> Self {
        Self { kind }
    }

    /// The detailed reason, for the server's logs and for tests only.
    pub fn kind(&self) -> StateErrorKind {
        self.kind
    }
}

impl fmt::Display for StateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            // Seal side: the client never caused or sees this one, and the
            // operator needs to know it is not an invalid token.
            StateErrorKind::PayloadTooLarge => {
                f.write_str("requestState payload too large to seal within the token length cap")
            }
            _ => f.write_str(INVALID_STATE_MESSAGE),
        }
    }
}

impl std::error::Error for StateError {}

/// Seals and opens `requestState` tokens with a [`KeyRing`].
#[derive(Debug, Clone)]
pub struct StateSealer {
    ring: KeyRing,
    ttl: Duration,
    max_token_len: usize,
}

impl StateSealer {
    /// A sealer with a 15-minute lifetime and a 64 KiB cap on token text.
    pub fn new(ring: KeyRing) -> Self {
        Self {
            ring,
            ttl: DEFAULT_TTL,
            max_token_len: DEFAULT_MAX_TOKEN_LEN,
        }
    }

    /// Sets how long a sealed state stays valid.
    ///
    /// Expiry has one-second resolution: a state is valid while the whole
    /// seconds elapsed since the epoch are below `seal time (whole seconds) +
    /// ttl (whole seconds)`, so it lives at most `ttl`.
    #[must_use]
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// Sets the maximum length, in bytes of token text, that is sealed or
    /// opened. Longer tokens are refused before any decoding work.
    #[must_use]
    pub fn with_max_token_len(mut self, max_token_len: usize) -> Self {
        self.max_token_len = max_token_len;
        self
    }

    /// The configured lifetime of sealed states.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The configured cap on token text, in bytes.
    pub fn max_token_len(&self) -> usize {
        self.max_token_len
    }

    /// Seals `payload` for the request described by `binding`.
    ///
    /// Fails only with [`StateErrorKind::PayloadTooLarge`], when the token
    /// would exceed the configured cap (and so could never be opened).
    pub fn seal(
        &self,
        binding: &Binding<'_>,
        payload: &[u8],
        now: SystemTime,
    ) -> Result<String, StateError> {
        let too_large = || StateError::new(StateErrorKind::PayloadTooLarge);
        let decoded_len = payload
            .len()
            .checked_add(MIN_DECODED_LEN)
            .ok_or_else(too_large)?;
        let token_len = base64::encoded_len(decoded_len, false).ok_or_else(too_large)?;
        if token_len > self.max_token_len {
            return Err(too_large());
        }

        let (key_id, cipher) = self.ring.sealing().ok_or_else(too_large)?;
        let expiry = unix_secs(now).saturating_add(self.ttl.as_secs());

        let mut plaintext = Vec::with_capacity(EXPIRY_LEN + payload.len());
        plaintext.extend_from_slice(&expiry.to_be_bytes());
        plaintext.extend_from_slice(payload);

        // 192-bit random nonces make collisions negligible even across many
        // replicas sharing a key, which is why XChaCha rather than ChaCha.
        let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
        let aad = binding.encode_aad(key_id);
        // The AEAD only refuses plaintexts beyond ~256 GiB, far above any cap.
        let ciphertext = cipher
            .encrypt(
                &nonce,
                Payload {
                    msg: &plaintext,
                    aad: &aad,
                },
            )
            .map_err(|_| too_large())?;

        let mut envelope = Vec::with_capacity(HEADER_LEN + ciphertext.len());
        envelope.push(VERSION);
        envelope.extend_from_slice(key_id);
        envelope.extend_from_slice(nonce.as_slice());
        envelope.extend_from_slice(&ciphertext);
        Ok(URL_SAFE_NO_PAD.encode(envelope))
    }

    /// Opens a token previously produced by [`StateSealer::seal`] for the same
    /// binding, returning the payload.
    ///
    /// Never panics, whatever the token; every failure displays as
    /// [`INVALID_STATE_MESSAGE`].
    pub fn open(
        &self,
        binding: &Binding<'_>,
        token: &str,
        now: SystemTime,
    ) -> Result<Vec<u8>, StateError> {
        use StateErrorKind as K;
        let fail = StateError::new;

        // Before decoding, so an oversized token costs no allocation or work.
        if token.len() > self.max_token_len {
            return Err(fail(K::TooLarge));
        }
        // Strict decoding (no padding, canonical trailing bits): the client
        // must echo the token byte for byte, so there is no reason to accept
        // alternative spellings of it.
        let envelope = URL_SAFE_NO_PAD
            .decode(token)
            .map_err(|_| fail(K::Malformed))?;

        let (&version, rest) = envelope.split_first().ok_or(fail(K::Malformed))?;
        if version != VERSION {
            return Err(fail(K::UnsupportedVersion));
        }
        if envelope.len() < MIN_DECODED_LEN {
            return Err(fail(K::Malformed));
        }
        let (key_id, rest) = rest
            .split_at_checked(KEY_ID_LEN)
            .ok_or(fail(K::Malformed))?;
        let (nonce, ciphertext) = rest.split_at_checked(NONCE_LEN).ok_or(fail(K::Malformed))?;
        let cipher = self.ring.find(key_id).ok_or(fail(K::UnknownKey))?;

        let aad = binding.encode_aad(key_id);
        let plaintext = cipher
            .decrypt(
                XNonce::from_slice(nonce),
                Payload {
                    msg: ciphertext,
                    aad: &aad,
                },
            )
            .map_err(|_| fail(K::Forged))?;

        let (expiry, payload) = plaintext
            .split_at_checked(EXPIRY_LEN)
            .ok_or(fail(K::Forged))?;
        let expiry: [u8; EXPIRY_LEN] = expiry.try_into().map_err(|_| fail(K::Forged))?;
        if unix_secs(now) >= u64::from_be_bytes(expiry) {
            return Err(fail(K::Expired));
        }
        Ok(payload.to_vec())
    }
}

/// Whole seconds since the Unix epoch; a clock set before 1970 counts as 0
/// rather than failing, which can only make states look older.
fn unix_secs(now: SystemTime) -> u64 {
    now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}
