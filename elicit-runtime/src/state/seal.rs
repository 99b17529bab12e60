//! Sealing and opening `requestState` tokens.

use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chacha20poly1305::aead::generic_array::GenericArray;
use chacha20poly1305::aead::generic_array::typenum::Unsigned as _;
use chacha20poly1305::aead::rand_core::RngCore as _;
use chacha20poly1305::aead::{AeadInPlace, OsRng};
use rand::Rng as _;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::binding::Binding;
use super::keys::{Ciphers, KeyRing};
use super::*;

/// The envelope format [`StateSealer::seal`] writes. Every version is opened, whichever one seals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum EnvelopeVersion {
    /// Version 1: XChaCha20-Poly1305 with a 24-byte random nonce.
    V1,
    /// Version 2 (the default): AES-256-GCM-SIV, nonce-misuse resistant, with a 12-byte random
    /// nonce under a key derived from the ring's key.
    #[default]
    V2,
}

impl EnvelopeVersion {
    /// The version byte that starts the envelope.
    pub fn byte(self) -> u8 {
        match self {
            Self::V1 => VERSION_1,
            Self::V2 => VERSION_2,
        }
    }

    fn from_byte(byte: u8) -> Option<Self> {
        match byte {
            VERSION_1 => Some(Self::V1),
            VERSION_2 => Some(Self::V2),
            _ => None,
        }
    }

    fn nonce_len(self) -> usize {
        match self {
            Self::V1 => NONCE_LEN_V1,
            Self::V2 => NONCE_LEN_V2,
        }
    }

    /// Bytes before the ciphertext: version, key id and nonce.
    fn header_len(self) -> usize {
        1 + KEY_ID_LEN + self.nonce_len()
    }

    /// Smallest decoded token: an empty payload still carries the expiry and the tag.
    fn min_decoded_len(self) -> usize {
        self.header_len() + EXPIRY_LEN + TAG_LEN
    }
}

///
/// Clients must only ever see [`INVALID_STATE_MESSAGE`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StateErrorKind {
    /// The token text exceeds the configured cap; it was not decoded.
    TooLarge,
    /// The token is not URL-safe unpadded base64, or is too short to be one.
    Malformed,
    /// The envelope version byte is not one this server opens.
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
    /// Sealing only ([`StateSealer::seal_json`]): the value could not be written as JSON (a
    /// `Serialize` implementation failed). A server-side bug, never caused by a client's token.
    Unserializable,
    /// Opening only ([`StateSealer::open_json`]): the token authenticated, but its payload is not
    /// the JSON of the type asked for (a state sealed by another use of the same keys).
    UnreadablePayload,
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
            StateErrorKind::Unserializable => f.write_str("requestState payload could not be written as JSON"),
            _ => f.write_str(INVALID_STATE_MESSAGE),
        }
    }
}

impl std::error::Error for StateError {}

/// Seals and opens `requestState` tokens with a [`KeyRing`].
///
/// Sealing allocates the token's bytes once and its text once; opening decodes the text into one
/// buffer and decrypts it there. The nonces of version 2 come from the thread's CSPRNG (`rand`'s
/// `ThreadRng`: ChaCha12, seeded from the OS and reseeded from it every 64 KiB of output), not
/// from a system call per seal: 96 random bits a state, and AES-256-GCM-SIV, which makes even a
/// repeated nonce (a process forked or a VM restored with the generator's state copied) reveal
/// only whether two states were equal. Version 1's XChaCha20-Poly1305 has no such margin, so its
/// nonces still come straight from the OS.
#[derive(Debug, Clone)]
pub struct StateSealer {
    ring: KeyRing,
    ttl: Duration,
    max_token_len: usize,
    version: EnvelopeVersion,
    plaintext_hint: PlaintextHint,
}

/// The plaintext length of the latest [`StateSealer::seal_json`], so that the next one sizes its
/// buffer right the first time: a flow's states grow slowly from round to round. Only a
/// capacity: a wrong guess costs a reallocation, never a wrong token.
#[derive(Debug, Default)]
struct PlaintextHint(AtomicUsize);

impl Clone for PlaintextHint {
    fn clone(&self) -> Self {
        Self(AtomicUsize::new(self.0.load(Ordering::Relaxed)))
    }
}

/// Room for a few more bytes than the latest plaintext, as a state grows by an answer a round.
const PLAINTEXT_SLACK: usize = 64;

impl StateSealer {
    /// A sealer with a 15-minute lifetime and a 64 KiB cap on token text.
    pub fn new(ring: KeyRing) -> Self {
        Self {
            ring,
            ttl: DEFAULT_TTL,
            max_token_len: DEFAULT_MAX_TOKEN_LEN,
            version: EnvelopeVersion::default(),
            plaintext_hint: PlaintextHint::default(),
        }
    }

    /// Sets the envelope version that seals (version 2 unless set). Both versions open whatever
    /// this is; sealing version 1 is for a rolling upgrade, while older replicas that open only
    /// version 1 still serve.
    #[must_use]
    pub fn with_sealing_version(mut self, version: EnvelopeVersion) -> Self {
        self.version = version;
        self
    }

    /// The envelope version that seals.
    pub fn sealing_version(&self) -> EnvelopeVersion {
        self.version
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
    pub fn seal(&self, binding: &Binding<'_>, payload: &[u8], now: SystemTime) -> Result<String, StateError> {
        let prefix_len = self.version.header_len() + EXPIRY_LEN;
        let decoded_len = payload.len().checked_add(prefix_len + TAG_LEN).ok_or(too_large())?;
        self.check_len(decoded_len)?;
        let mut envelope = Vec::with_capacity(decoded_len);
        envelope.resize(prefix_len, 0);
        envelope.extend_from_slice(payload);
        self.seal_envelope(binding, envelope, now)
    }

    /// Seals the JSON of `value`, written straight into the token's buffer, for the request
    /// described by `binding`; [`StateSealer::open_json`] reads it back.
    ///
    /// Fails with [`StateErrorKind::PayloadTooLarge`] when the token would exceed the configured
    /// cap, and with [`StateErrorKind::Unserializable`] when `value`'s `Serialize` fails.
    ///
    /// ```
    /// use std::time::SystemTime;
    /// use elicit_runtime::state::{Binding, KeyRing, StateSealer, digest_arguments};
    ///
    /// let sealer = StateSealer::new(KeyRing::generate());
    /// let binding = Binding {
    ///     principal: None,
    ///     method: "tools/call",
    ///     name: "book_trip",
    ///     arguments_digest: digest_arguments(None),
    ///     audience: "https://travel.example",
    /// };
    /// let now = SystemTime::now();
    /// let token = sealer.seal_json(&binding, &vec!["CDG", "SFO"], now)?;
    /// let opened: Vec<String> = sealer.open_json(&binding, &token, now)?;
    /// assert_eq!(opened, ["CDG", "SFO"]);
    /// # Ok::<(), elicit_runtime::state::StateError>(())
    /// ```
    pub fn seal_json<T: Serialize + ?Sized>(
        &self,
        binding: &Binding<'_>,
        value: &T,
        now: SystemTime,
    ) -> Result<String, StateError> {
        let prefix_len = self.version.header_len() + EXPIRY_LEN;
        let hint = self.plaintext_hint.0.load(Ordering::Relaxed);
        let capacity = (prefix_len + TAG_LEN + PLAINTEXT_SLACK).saturating_add(hint).min(self.max_token_len);
        let mut envelope = Vec::with_capacity(capacity);
        envelope.resize(prefix_len, 0);
        serde_json::to_writer(&mut envelope, value).map_err(|_| StateError::new(StateErrorKind::Unserializable))?;
        self.check_len(envelope.len() + TAG_LEN)?;
        // Only a payload that fits sizes the next buffer: one past the cap would not.
        self.plaintext_hint.0.store(envelope.len() - prefix_len, Ordering::Relaxed);
        self.seal_envelope(binding, envelope, now)
    }

    /// Refuses a token of `decoded_len` bytes whose text would pass the cap.
    fn check_len(&self, decoded_len: usize) -> Result<(), StateError> {
        match base64::encoded_len(decoded_len, false) {
            Some(token_len) if token_len <= self.max_token_len => Ok(()),
            _ => Err(too_large()),
        }
    }

    /// Seals `envelope`, a buffer of room for the header and the expiry followed by the payload:
    /// fills them in, encrypts in place, appends the tag, and encodes the token text once.
    fn seal_envelope(
        &self,
        binding: &Binding<'_>,
        mut envelope: Vec<u8>,
        now: SystemTime,
    ) -> Result<String, StateError> {
        let version = self.version;
        let (key_id, ciphers) = self.ring.sealing().ok_or(too_large())?;
        let expiry = unix_secs(now).saturating_add(self.ttl.as_secs());
        let header_len = version.header_len();
        let Some((head, body)) = envelope.split_at_mut_checked(header_len) else { return Err(too_large()) };
        let Some((version_and_key, nonce)) = head.split_at_mut_checked(1 + KEY_ID_LEN) else { return Err(too_large()) };
        for (dst, src) in version_and_key.iter_mut().zip(std::iter::once(version.byte()).chain(key_id.iter().copied()))
        {
            *dst = src;
        }
        match version {
            // See the type's documentation for why version 2 may take the thread's CSPRNG.
            EnvelopeVersion::V2 => rand::rng().fill_bytes(nonce),
            EnvelopeVersion::V1 => OsRng.fill_bytes(nonce),
        }
        let Some(expiry_bytes) = body.get_mut(..EXPIRY_LEN) else { return Err(too_large()) };
        expiry_bytes.copy_from_slice(&expiry.to_be_bytes());

        // The AEADs only refuse plaintexts beyond ~64 GiB, far above any cap.
        let sealed = binding.with_aad(version.byte(), key_id, |aad| match version {
            EnvelopeVersion::V1 => encrypt(&ciphers.v1, aad, &mut envelope, header_len),
            EnvelopeVersion::V2 => encrypt(&ciphers.v2, aad, &mut envelope, header_len),
        });
        if !sealed {
            return Err(too_large());
        }
        let mut token = String::with_capacity(base64::encoded_len(envelope.len(), false).unwrap_or_default());
        URL_SAFE_NO_PAD.encode_string(&envelope, &mut token);
        Ok(token)
    }

    /// Opens a token previously produced by [`StateSealer::seal`] for the same
    /// binding, returning the payload. Tokens of every [`EnvelopeVersion`] open.
    ///
    /// Never panics, whatever the token; every failure displays as
    /// [`INVALID_STATE_MESSAGE`].
    pub fn open(&self, binding: &Binding<'_>, token: &str, now: SystemTime) -> Result<Vec<u8>, StateError> {
        let (mut envelope, payload) = self.open_in_place(binding, token, now)?;
        // The payload, moved to the front of the buffer the token was decoded into.
        envelope.truncate(payload.end);
        envelope.drain(..payload.start);
        Ok(envelope)
    }

    /// Opens a token produced by [`StateSealer::seal_json`] for the same binding and reads its
    /// JSON as a `T`, straight from the buffer the token was decrypted in.
    ///
    /// Fails like [`StateSealer::open`], and with [`StateErrorKind::UnreadablePayload`] when the
    /// payload is not the JSON of a `T`. Never panics, whatever the token; every failure displays
    /// as [`INVALID_STATE_MESSAGE`].
    pub fn open_json<T: DeserializeOwned>(
        &self,
        binding: &Binding<'_>,
        token: &str,
        now: SystemTime,
    ) -> Result<T, StateError> {
        let (envelope, payload) = self.open_in_place(binding, token, now)?;
        let unreadable = StateError::new(StateErrorKind::UnreadablePayload);
        serde_json::from_slice(envelope.get(payload).ok_or(unreadable)?).map_err(|_| unreadable)
    }

    /// Decodes, authenticates and decrypts `token` in one buffer: the buffer and where in it the
    /// payload lies.
    fn open_in_place(
        &self,
        binding: &Binding<'_>,
        token: &str,
        now: SystemTime,
    ) -> Result<(Vec<u8>, Range<usize>), StateError> {
        use StateErrorKind as K;
        let fail = StateError::new;

        // Before decoding, so an oversized token costs no allocation or work.
        if token.len() > self.max_token_len {
            return Err(fail(K::TooLarge));
        }
        // Strict decoding (no padding, canonical trailing bits): the client
        // must echo the token byte for byte, so there is no reason to accept
        // alternative spellings of it.
        let mut envelope = URL_SAFE_NO_PAD.decode(token).map_err(|_| fail(K::Malformed))?;

        let &version_byte = envelope.first().ok_or(fail(K::Malformed))?;
        let version = EnvelopeVersion::from_byte(version_byte).ok_or(fail(K::UnsupportedVersion))?;
        if envelope.len() < version.min_decoded_len() {
            return Err(fail(K::Malformed));
        }
        let header_len = version.header_len();
        let tag_at = envelope.len() - TAG_LEN;
        let (head, body) = envelope.split_at_mut(header_len);
        let key_id = head.get(1..1 + KEY_ID_LEN).ok_or(fail(K::Malformed))?;
        let nonce = head.get(1 + KEY_ID_LEN..).ok_or(fail(K::Malformed))?;
        let ciphers: &Ciphers = self.ring.find(key_id).ok_or(fail(K::UnknownKey))?;
        let (ciphertext, tag) = body.split_at_mut_checked(tag_at - header_len).ok_or(fail(K::Malformed))?;
        let opened = binding.with_aad(version_byte, key_id, |aad| match version {
            EnvelopeVersion::V1 => decrypt(&ciphers.v1, nonce, aad, ciphertext, tag),
            EnvelopeVersion::V2 => decrypt(&ciphers.v2, nonce, aad, ciphertext, tag),
        });
        if !opened {
            return Err(fail(K::Forged));
        }

        let expiry: [u8; EXPIRY_LEN] =
            ciphertext.get(..EXPIRY_LEN).and_then(|bytes| bytes.try_into().ok()).ok_or(fail(K::Forged))?;
        if unix_secs(now) >= u64::from_be_bytes(expiry) {
            return Err(fail(K::Expired));
        }
        Ok((envelope, header_len + EXPIRY_LEN..tag_at))
    }
}

fn too_large() -> StateError {
    StateError::new(StateErrorKind::PayloadTooLarge)
}

/// Encrypts what follows the header of `envelope` in place and appends the tag; the nonce is the
/// header's end. `false` if the AEAD refuses the length (or the header does not fit the nonce).
fn encrypt<A: AeadInPlace>(cipher: &A, aad: &[u8], envelope: &mut Vec<u8>, header_len: usize) -> bool {
    let Some((head, body)) = envelope.split_at_mut_checked(header_len) else {
        return false;
    };
    let Some(nonce) = head.len().checked_sub(A::NonceSize::USIZE).and_then(|at| head.get(at..)) else {
        return false;
    };
    match cipher.encrypt_in_place_detached(GenericArray::from_slice(nonce), aad, body) {
        Ok(tag) => {
            envelope.extend_from_slice(&tag);
            true
        }
        Err(_) => false,
    }
}

/// Decrypts `ciphertext` in place if `tag` authenticates it; `false` (and the buffer in an
/// unspecified state) otherwise.
fn decrypt<A: AeadInPlace>(cipher: &A, nonce: &[u8], aad: &[u8], ciphertext: &mut [u8], tag: &[u8]) -> bool {
    if nonce.len() != A::NonceSize::USIZE || tag.len() != A::TagSize::USIZE {
        return false;
    }
    cipher
        .decrypt_in_place_detached(GenericArray::from_slice(nonce), aad, ciphertext, GenericArray::from_slice(tag))
        .is_ok()
}

/// Whole seconds since the Unix epoch; a clock set before 1970 counts as 0
/// rather than failing, which can only make states look older.
fn unix_secs(now: SystemTime) -> u64 {
    now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}
