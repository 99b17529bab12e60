//! Sealing of the opaque `requestState` carried by Multi Round-Trip Requests.
//!
//! Under MCP revision 2026-07-28 a server may answer a tool call with
//! `resultType: "input_required"` and an opaque `requestState` string that the
//! client echoes, byte for byte, when it retries the call. Everything the client
//! sends is attacker-controlled, so the state must be both confidential (it may
//! hold partially collected answers) and tamper-proof (the server resumes from
//! it without re-validating its own earlier decisions).
//!
//! A token is the URL-safe, unpadded base64 encoding of
//!
//! ```text
//! version (1 byte, = 1) || key id (4 bytes) || nonce (24 bytes) || ciphertext || tag (16 bytes)
//! ```
//!
//! sealed with XChaCha20-Poly1305, where the plaintext is
//! `expiry (u64 unix seconds, big-endian) || payload` and the associated data
//! covers the version, the key id and a [`Binding`] describing *which* request
//! the state belongs to. The binding is never stored in the token: the server
//! recomputes it from the retried request, so replaying a state against another
//! tool, other arguments, another principal or another audience fails to
//! authenticate.
//!
//! Every opening failure is reported to clients with the same text,
//! [`INVALID_STATE_MESSAGE`], so that the error does not become an oracle;
//! [`StateError::kind`] keeps the detail for the server's own logs.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use chacha20poly1305::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The single message shown for every failure to open a `requestState`.
///
/// Distinguishing "expired" from "forged" or "unknown key" to the client would
/// let an attacker probe the server's keys and clock, so all of them share it.
pub const INVALID_STATE_MESSAGE: &str = "invalid requestState";

/// Envelope version written by [`StateSealer::seal`]; bumping it lets a future
/// format coexist with tokens still in flight.
const VERSION: u8 = 1;
const KEY_ID_LEN: usize = 4;
const NONCE_LEN: usize = 24;
const TAG_LEN: usize = 16;
const EXPIRY_LEN: usize = 8;
/// Bytes before the ciphertext: version, key id and nonce.
const HEADER_LEN: usize = 1 + KEY_ID_LEN + NONCE_LEN;
/// Smallest possible decoded token: an empty payload still carries the expiry
/// and the tag.
const MIN_DECODED_LEN: usize = HEADER_LEN + EXPIRY_LEN + TAG_LEN;

/// Domain labels keep the hashes and the associated data of this module from
/// ever colliding with other uses of the same keys or hash function.
const KEY_ID_LABEL: &[u8] = b"elicit-runtime/requestState/key-id/v1\0";
const AAD_LABEL: &[u8] = b"elicit-runtime/requestState/aad/v1\0";

/// Default lifetime of a sealed state.
const DEFAULT_TTL: Duration = Duration::from_secs(15 * 60);
/// Default cap on the token text, in bytes.
const DEFAULT_MAX_TOKEN_LEN: usize = 64 * 1024;

type KeyId = [u8; KEY_ID_LEN];

fn key_id(key: &[u8; 32]) -> KeyId {
    let hash = Sha256::new()
        .chain_update(KEY_ID_LABEL)
        .chain_update(key)
        .finalize();
    let mut id = [0u8; KEY_ID_LEN];
    // The hash is 32 bytes, so the first four always exist; `zip` keeps this
    // free of indexing anyway.
    for (dst, src) in id.iter_mut().zip(hash.iter()) {
        *dst = *src;
    }
    id
}

/// Why a [`KeyRing`] could not be built.
///
/// Positions are 0-based indexes into the configured list. No variant carries
/// key material, so the error is safe to log.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyRingError {
    /// The ring would contain no key at all.
    Empty,
    /// An entry of the comma-separated list is empty (e.g. a trailing comma).
    EmptyEntry {
        /// 0-based position of the entry in the list.
        index: usize,
    },
    /// An entry is not valid base64 (standard or URL-safe, padded or not).
    InvalidBase64 {
        /// 0-based position of the entry in the list.
        index: usize,
    },
    /// An entry decodes to something other than 32 bytes.
    WrongLength {
        /// 0-based position of the entry in the list.
        index: usize,
        /// Number of bytes the entry decoded to.
        len: usize,
    },
    /// An entry repeats an earlier key (or, astronomically unlikely, shares
    /// its key id), which would make the key id ambiguous when opening.
    DuplicateKey {
        /// 0-based position of the repeated entry in the list.
        index: usize,
    },
}

impl fmt::Display for KeyRingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => {
                f.write_str("requestState key ring is empty: at least one key is required")
            }
            Self::EmptyEntry { index } => {
                write!(f, "requestState key entry {index} (0-based) is empty")
            }
            Self::InvalidBase64 { index } => write!(
                f,
                "requestState key entry {index} (0-based) is not valid base64 \
                 (standard or URL-safe alphabet, padded or unpadded)"
            ),
            Self::WrongLength { index, len } => write!(
                f,
                "requestState key entry {index} (0-based) decodes to {len} bytes; exactly 32 are required"
            ),
            Self::DuplicateKey { index } => write!(
                f,
                "requestState key entry {index} (0-based) duplicates an earlier key"
            ),
        }
    }
}

impl std::error::Error for KeyRingError {}

/// The keys that seal and open `requestState` tokens.
///
/// The first key seals; every key opens, so a new key can be put in front
/// while tokens sealed under the old one (which live at most one TTL) keep
/// working until the old key is removed.
#[derive(Clone)]
pub struct KeyRing {
    /// `(key id, cipher)` in configuration order; the first entry seals.
    /// Ciphers are kept instead of raw keys so the key schedule is done once.
    entries: Vec<(KeyId, XChaCha20Poly1305)>,
}

impl KeyRing {
    /// Builds a ring from raw 32-byte keys; the first one seals.
    ///
    /// Fails if `keys` is empty or repeats a key.
    pub fn new(keys: Vec<[u8; 32]>) -> Result<Self, KeyRingError> {
        if keys.is_empty() {
            return Err(KeyRingError::Empty);
        }
        let mut entries: Vec<(KeyId, XChaCha20Poly1305)> = Vec::with_capacity(keys.len());
        for (index, key) in keys.iter().enumerate() {
            let id = key_id(key);
            if entries.iter().any(|(existing, _)| *existing == id) {
                return Err(KeyRingError::DuplicateKey { index });
            }
            entries.push((id, XChaCha20Poly1305::new(key.into())));
        }
        Ok(Self { entries })
    }

    /// Parses a comma-separated list of base64-encoded 32-byte keys, the form
    /// in which keys usually arrive from an environment variable.
    ///
    /// Each entry is trimmed of surrounding whitespace and may use the
    /// standard or URL-safe alphabet, with or without padding. The error names
    /// the offending entry by position and never echoes its content.
    pub fn from_base64_list(s: &str) -> Result<Self, KeyRingError> {
        let mut keys = Vec::new();
        for (index, entry) in s.split(',').enumerate() {
            let entry = entry.trim();
            if entry.is_empty() {
                return Err(KeyRingError::EmptyEntry { index });
            }
            let bytes = decode_key_entry(entry).ok_or(KeyRingError::InvalidBase64 { index })?;
            let key: [u8; 32] =
                bytes
                    .as_slice()
                    .try_into()
                    .map_err(|_| KeyRingError::WrongLength {
                        index,
                        len: bytes.len(),
                    })?;
            keys.push(key);
        }
        Self::new(keys)
    }

    /// Builds a ring holding one fresh key from the operating system's RNG.
    ///
    /// Suitable for a single-process server; tokens do not survive a restart,
    /// nor are they accepted by other replicas.
    pub fn generate() -> Self {
        let key = XChaCha20Poly1305::generate_key(&mut OsRng);
        let mut raw = [0u8; 32];
        raw.copy_from_slice(key.as_slice());
        let id = key_id(&raw);
        Self {
            entries: vec![(id, XChaCha20Poly1305::new(&key))],
        }
    }

    /// Number of keys in the ring.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Always `false`: a ring cannot be built empty. Provided for symmetry
    /// with [`KeyRing::len`].
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn sealing(&self) -> Option<&(KeyId, XChaCha20Poly1305)> {
        self.entries.first()
    }

    fn find(&self, id: &[u8]) -> Option<&XChaCha20Poly1305> {
        self.entries
            .iter()
            .find(|(candidate, _)| candidate.as_slice() == id)
            .map(|(_, cipher)| cipher)
    }
}

fn decode_key_entry(entry: &str) -> Option<Vec<u8>> {
    // Operators paste keys from many tools; accepting every common base64
    // flavour avoids pointless configuration failures without weakening
    // anything, since the length check below still applies.
    [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD]
        .into_iter()
        .find_map(|engine| engine.decode(entry).ok())
}

impl fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Key ids are already public (every token carries one), keys never are.
        struct Ids<'a>(&'a [(KeyId, XChaCha20Poly1305)]);
        impl fmt::Debug for Ids<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let mut list = f.debug_list();
                for (id, _) in self.0 {
                    list.entry(&format_args!(
                        "{:02x}{:02x}{:02x}{:02x}",
                        id[0], id[1], id[2], id[3]
                    ));
                }
                list.finish()
            }
        }
        f.debug_struct("KeyRing")
            .field("key_ids", &Ids(&self.entries))
            .finish()
    }
}

/// What a sealed state is bound to: the request that must be retried for the
/// state to open.
///
/// The binding is authenticated as associated data, never stored in the
/// token, so the server must rebuild it from the retried request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Binding<'a> {
    /// The authenticated principal (e.g. OAuth subject), if any, so that a
    /// state leaked from one user cannot be replayed by another.
    pub principal: Option<&'a str>,
    /// The JSON-RPC method of the request, e.g. `tools/call`.
    pub method: &'a str,
    /// The tool, prompt or resource name the request targets.
    pub name: &'a str,
    /// [`digest_arguments`] of the request's arguments.
    pub arguments_digest: [u8; 32],
    /// The server (or resource) identity the state is meant for, so that
    /// replicas of different deployments sharing a key do not accept each
    /// other's states.
    pub audience: &'a str,
}

impl Binding<'_> {
    /// Encodes the binding as associated data.
    ///
    /// Every variable-length field is prefixed with its length, and the
    /// optional principal with a presence tag, so that no two distinct
    /// bindings (e.g. `name = "ab", audience = "c"` versus `name = "a",
    /// audience = "bc"`, or no principal versus an empty one) encode alike.
    fn encode_aad(&self, key_id: &[u8]) -> Vec<u8> {
        let principal_len = self.principal.map_or(0, str::len);
        let mut aad = Vec::with_capacity(
            AAD_LABEL.len()
                + 1
                + KEY_ID_LEN
                + 1
                + 8 * 5
                + principal_len
                + self.method.len()
                + self.name.len()
                + self.arguments_digest.len()
                + self.audience.len(),
        );
        aad.extend_from_slice(AAD_LABEL);
        aad.push(VERSION);
        aad.extend_from_slice(key_id);
        match self.principal {
            None => aad.push(0),
            Some(principal) => {
                aad.push(1);
                push_field(&mut aad, principal.as_bytes());
            }
        }
        push_field(&mut aad, self.method.as_bytes());
        push_field(&mut aad, self.name.as_bytes());
        push_field(&mut aad, &self.arguments_digest);
        push_field(&mut aad, self.audience.as_bytes());
        aad
    }
}

fn push_field(out: &mut Vec<u8>, bytes: &[u8]) {
    // usize -> u64 is lossless on every supported target.
    out.extend_from_slice(&(bytes.len() as u64).to_be_bytes());
    out.extend_from_slice(bytes);
}

/// SHA-256 of the canonical JSON encoding of a request's arguments.
///
/// The encoding sorts object keys recursively (by their UTF-8 bytes) and has
/// no whitespace, so the digest does not depend on how the client ordered or
/// formatted its arguments. Absent arguments, `null` and `{}` all digest the
/// same, since they all mean "no arguments". Numbers that are whole and within
/// ±2^53 are written as integers, so that a client that re-serialises the
/// arguments between attempts (JavaScript turns `1.0` into `1`) does not break
/// its own retry.
pub fn digest_arguments(args: Option<&Value>) -> [u8; 32] {
    let empty = Value::Object(serde_json::Map::new());
    let args = match args {
        None | Some(Value::Null) => &empty,
        Some(value) => value,
    };
    let mut hasher = Sha256::new();
    write_canonical(args, &mut hasher);
    hasher.finalize().into()
}

fn write_canonical(value: &Value, out: &mut Sha256) {
    match value {
        Value::Null => out.update(b"null"),
        Value::Bool(true) => out.update(b"true"),
        Value::Bool(false) => out.update(b"false"),
        Value::Number(number) => write_number(number, out),
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.update(b"[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.update(b",");
                }
                write_canonical(item, out);
            }
            out.update(b"]");
        }
        Value::Object(map) => {
            // Sort explicitly: with serde_json's `preserve_order` feature
            // (which any crate in the build may switch on) the map keeps
            // insertion order.
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.update(b"{");
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.update(b",");
                }
                write_string(key, out);
                out.update(b":");
                write_canonical(item, out);
            }
            out.update(b"}");
        }
    }
}

fn write_string(s: &str, out: &mut Sha256) {
    // serde_json escapes deterministically; serialising a `str` cannot fail,
    // but fall back to hashing raw bytes behind a distinct marker rather than
    // panicking if it ever did.
    match serde_json::to_string(s) {
        Ok(escaped) => out.update(escaped.as_bytes()),
        Err(_) => {
            out.update(b"\0raw:");
            out.update((s.len() as u64).to_be_bytes());
            out.update(s.as_bytes());
        }
    }
}

fn write_number(number: &serde_json::Number, out: &mut Sha256) {
    const MAX_SAFE: f64 = 9_007_199_254_740_992.0; // 2^53
    if let Some(i) = number.as_i64() {
        out.update(i.to_string().as_bytes());
    } else if let Some(u) = number.as_u64() {
        out.update(u.to_string().as_bytes());
    } else if let Some(f) = number.as_f64() {
        if f.is_finite() && f.fract() == 0.0 && f.abs() <= MAX_SAFE {
            // Lossless: |f| <= 2^53 and whole. Also folds -0.0 into 0.
            out.update((f as i64).to_string().as_bytes());
        } else {
            out.update(number.to_string().as_bytes());
        }
    } else {
        // Only reachable with serde_json's `arbitrary_precision`; its text
        // form is then the best canonical form available.
        out.update(number.to_string().as_bytes());
    }
}

/// Coarse reason a state could not be sealed or opened, for logs and tests.
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    const K1: [u8; 32] = [1; 32];
    const K2: [u8; 32] = [2; 32];

    fn t0() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_800_000_000)
    }

    fn sealer(keys: Vec<[u8; 32]>) -> StateSealer {
        StateSealer::new(KeyRing::new(keys).unwrap())
    }

    fn binding(digest: [u8; 32]) -> Binding<'static> {
        Binding {
            principal: Some("user-42"),
            method: "tools/call",
            name: "book_flight",
            arguments_digest: digest,
            audience: "https://mcp.example.com",
        }
    }

    fn default_binding() -> Binding<'static> {
        binding(digest_arguments(Some(&json!({"from": "CDG", "to": "SFO"}))))
    }

    fn assert_opening_failure(err: StateError) {
        assert_eq!(err.to_string(), INVALID_STATE_MESSAGE);
        assert_ne!(err.kind(), StateErrorKind::PayloadTooLarge);
    }

    #[test]
    fn round_trip() {
        let s = sealer(vec![K1]);
        let b = default_binding();
        for payload in [
            &b""[..],
            b"x",
            b"{\"step\":2,\"answers\":[1,2,3]}",
            &[0u8; 1000],
        ] {
            let token = s.seal(&b, payload, t0()).unwrap();
            assert!(
                token
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
            );
            assert_eq!(s.open(&b, &token, t0()).unwrap(), payload);
        }
    }

    #[test]
    fn envelope_layout() {
        let s = sealer(vec![K1]);
        let b = default_binding();
        let payload = b"hello";
        let token = s.seal(&b, payload, t0()).unwrap();
        let raw = URL_SAFE_NO_PAD.decode(&token).unwrap();
        assert_eq!(raw.len(), 1 + 4 + 24 + 8 + payload.len() + 16);
        assert_eq!(raw[0], VERSION);
        assert_eq!(&raw[1..5], &key_id(&K1));
        // The payload must not appear in clear.
        assert!(!raw.windows(payload.len()).any(|w| w == payload));
    }

    #[test]
    fn nonces_differ_between_seals() {
        let s = sealer(vec![K1]);
        let b = default_binding();
        let a = s.seal(&b, b"same", t0()).unwrap();
        let c = s.seal(&b, b"same", t0()).unwrap();
        assert_ne!(a, c);
    }

    #[test]
    fn every_bit_flip_fails() {
        let s = sealer(vec![K1]);
        let b = default_binding();
        let token = s.seal(&b, b"payload bytes", t0()).unwrap();
        let raw = URL_SAFE_NO_PAD.decode(&token).unwrap();
        for i in 0..raw.len() {
            for bit in 0..8 {
                let mut tampered = raw.clone();
                tampered[i] ^= 1 << bit;
                let forged = URL_SAFE_NO_PAD.encode(&tampered);
                let err = s.open(&b, &forged, t0()).unwrap_err();
                assert_opening_failure(err);
                let expected = match i {
                    0 => StateErrorKind::UnsupportedVersion,
                    1..=4 => StateErrorKind::UnknownKey,
                    _ => StateErrorKind::Forged,
                };
                assert_eq!(err.kind(), expected, "byte {i} bit {bit}");
            }
        }
    }

    #[test]
    fn tampering_with_token_text_fails() {
        let s = sealer(vec![K1]);
        let b = default_binding();
        let token = s.seal(&b, b"payload", t0()).unwrap();
        let bytes = token.as_bytes();
        for i in 0..bytes.len() {
            for replacement in [b'A', b'-', b'_', b'=', b'+', b'/', b' ', b'z'] {
                if bytes[i] == replacement {
                    continue;
                }
                let mut t = bytes.to_vec();
                t[i] = replacement;
                let t = String::from_utf8(t).unwrap();
                let err = s.open(&b, &t, t0()).unwrap_err();
                assert_opening_failure(err);
            }
        }
    }

    #[test]
    fn truncated_and_extended_tokens_fail() {
        let s = sealer(vec![K1]);
        let b = default_binding();
        let token = s.seal(&b, b"payload", t0()).unwrap();
        for len in 0..token.len() {
            let err = s.open(&b, &token[..len], t0()).unwrap_err();
            assert_opening_failure(err);
            assert!(
                matches!(
                    err.kind(),
                    StateErrorKind::Malformed | StateErrorKind::Forged
                ),
                "len {len}: {:?}",
                err.kind()
            );
        }
        let raw = URL_SAFE_NO_PAD.decode(&token).unwrap();
        for len in 0..raw.len() {
            let t = URL_SAFE_NO_PAD.encode(&raw[..len]);
            assert_opening_failure(s.open(&b, &t, t0()).unwrap_err());
        }
        let mut longer = raw.clone();
        longer.push(0);
        let err = s
            .open(&b, &URL_SAFE_NO_PAD.encode(&longer), t0())
            .unwrap_err();
        assert_eq!(err.kind(), StateErrorKind::Forged);
    }

    #[test]
    fn garbage_fails_without_panicking() {
        let s = sealer(vec![K1]);
        let b = default_binding();
        let cases = [
            "",
            "A",
            "AQ",
            "AQ==",
            "not base64!",
            "////",
            "++++",
            "====",
            "héllo wörld",
            "🦀🦀🦀🦀",
            "\0\0\0\0",
            " AQID",
            "AQID\n",
            &"A".repeat(200),
            &"_".repeat(10_000),
        ];
        for case in cases {
            let err = s.open(&b, case, t0()).unwrap_err();
            assert_opening_failure(err);
        }
        assert_eq!(
            s.open(&b, "", t0()).unwrap_err().kind(),
            StateErrorKind::Malformed
        );
        assert_eq!(
            s.open(&b, "!!", t0()).unwrap_err().kind(),
            StateErrorKind::Malformed
        );
        // Right version byte but far too short.
        let short = URL_SAFE_NO_PAD.encode([VERSION, 0, 0]);
        assert_eq!(
            s.open(&b, &short, t0()).unwrap_err().kind(),
            StateErrorKind::Malformed
        );
        // Wrong version byte is reported even when short.
        let v2 = URL_SAFE_NO_PAD.encode([2u8]);
        assert_eq!(
            s.open(&b, &v2, t0()).unwrap_err().kind(),
            StateErrorKind::UnsupportedVersion
        );
    }

    #[test]
    fn padded_token_is_rejected() {
        let s = sealer(vec![K1]);
        let b = default_binding();
        // Find a payload length whose token needs padding in the standard form.
        for n in 0..3usize {
            let payload = vec![7u8; n];
            let token = s.seal(&b, &payload, t0()).unwrap();
            if !token.len().is_multiple_of(4) {
                let padded = format!("{token}{}", "=".repeat(4 - token.len() % 4));
                let err = s.open(&b, &padded, t0()).unwrap_err();
                assert_eq!(err.kind(), StateErrorKind::Malformed);
                return;
            }
        }
        panic!("no payload length produced an unpadded-length token");
    }

    #[test]
    fn different_binding_fails() {
        let s = sealer(vec![K1]);
        let b = default_binding();
        let token = s.seal(&b, b"state", t0()).unwrap();
        let other_digest = digest_arguments(Some(&json!({"from": "CDG", "to": "JFK"})));
        let variants = [
            Binding {
                method: "prompts/get",
                ..b
            },
            Binding {
                name: "cancel_flight",
                ..b
            },
            Binding {
                arguments_digest: other_digest,
                ..b
            },
            Binding {
                principal: Some("user-43"),
                ..b
            },
            Binding {
                principal: None,
                ..b
            },
            Binding {
                principal: Some(""),
                ..b
            },
            Binding {
                audience: "https://evil.example.com",
                ..b
            },
        ];
        for other in variants {
            let err = s.open(&other, &token, t0()).unwrap_err();
            assert_eq!(err.kind(), StateErrorKind::Forged, "{other:?}");
            assert_opening_failure(err);
        }
    }

    #[test]
    fn binding_field_boundaries_are_unambiguous() {
        let d = [0u8; 32];
        let a = Binding {
            principal: None,
            method: "ab",
            name: "c",
            arguments_digest: d,
            audience: "",
        };
        let c = Binding {
            method: "a",
            name: "bc",
            ..a
        };
        assert_ne!(a.encode_aad(&[0; 4]), c.encode_aad(&[0; 4]));
        let e = Binding {
            principal: Some(""),
            ..a
        };
        assert_ne!(a.encode_aad(&[0; 4]), e.encode_aad(&[0; 4]));
        let f = Binding {
            name: "",
            audience: "c",
            ..a
        };
        assert_ne!(a.encode_aad(&[0; 4]), f.encode_aad(&[0; 4]));
        // A principal that mimics the encoding of "absent" followed by a field.
        let g = Binding {
            principal: None,
            method: "x",
            ..a
        };
        let h = Binding {
            principal: Some("x"),
            method: "",
            ..a
        };
        assert_ne!(g.encode_aad(&[0; 4]), h.encode_aad(&[0; 4]));
    }

    #[test]
    fn expiry() {
        let ttl = Duration::from_secs(600);
        let s = sealer(vec![K1]).with_ttl(ttl);
        let b = default_binding();
        let token = s.seal(&b, b"state", t0()).unwrap();
        let just_before = t0() + ttl - Duration::from_secs(1);
        assert_eq!(s.open(&b, &token, just_before).unwrap(), b"state");
        let just_before_ms = t0() + ttl - Duration::from_millis(1);
        assert_eq!(s.open(&b, &token, just_before_ms).unwrap(), b"state");
        for late in [
            t0() + ttl,
            t0() + ttl + Duration::from_secs(1),
            t0() + ttl * 100,
        ] {
            let err = s.open(&b, &token, late).unwrap_err();
            assert_eq!(err.kind(), StateErrorKind::Expired);
            assert_opening_failure(err);
        }
    }

    #[test]
    fn default_ttl_is_fifteen_minutes() {
        let s = sealer(vec![K1]);
        assert_eq!(s.ttl(), Duration::from_secs(900));
        let b = default_binding();
        let token = s.seal(&b, b"x", t0()).unwrap();
        assert!(s.open(&b, &token, t0() + Duration::from_secs(899)).is_ok());
        let err = s
            .open(&b, &token, t0() + Duration::from_secs(901))
            .unwrap_err();
        assert_eq!(err.kind(), StateErrorKind::Expired);
    }

    #[test]
    fn clock_before_epoch_and_huge_ttl_do_not_panic() {
        let b = default_binding();
        let s = sealer(vec![K1]).with_ttl(Duration::MAX);
        let early = UNIX_EPOCH - Duration::from_secs(10);
        let token = s.seal(&b, b"x", early).unwrap();
        assert!(s.open(&b, &token, early).is_ok());
        let token = s.seal(&b, b"x", t0()).unwrap();
        assert!(s.open(&b, &token, t0()).is_ok());
        let zero = sealer(vec![K1]).with_ttl(Duration::ZERO);
        let token = zero.seal(&b, b"x", t0()).unwrap();
        assert_eq!(
            zero.open(&b, &token, t0()).unwrap_err().kind(),
            StateErrorKind::Expired
        );
    }

    #[test]
    fn key_rotation() {
        let b = default_binding();
        let old = sealer(vec![K1]);
        let token = old.seal(&b, b"state", t0()).unwrap();

        let rotated = sealer(vec![K2, K1]);
        assert_eq!(rotated.open(&b, &token, t0()).unwrap(), b"state");
        // The new ring seals with its first key, which the old ring does not know.
        let new_token = rotated.seal(&b, b"new", t0()).unwrap();
        let raw = URL_SAFE_NO_PAD.decode(&new_token).unwrap();
        assert_eq!(&raw[1..5], &key_id(&K2));
        assert_eq!(
            old.open(&b, &new_token, t0()).unwrap_err().kind(),
            StateErrorKind::UnknownKey
        );

        let retired = sealer(vec![K2]);
        let err = retired.open(&b, &token, t0()).unwrap_err();
        assert_eq!(err.kind(), StateErrorKind::UnknownKey);
        assert_opening_failure(err);
    }

    #[test]
    fn same_key_id_wrong_key_is_forged() {
        // A token whose key id matches but that was made with another key
        // must fail authentication, not be trusted on the id alone.
        let b = default_binding();
        let token = sealer(vec![K2]).seal(&b, b"x", t0()).unwrap();
        let mut raw = URL_SAFE_NO_PAD.decode(&token).unwrap();
        raw[1..5].copy_from_slice(&key_id(&K1));
        let t = URL_SAFE_NO_PAD.encode(&raw);
        assert_eq!(
            sealer(vec![K1]).open(&b, &t, t0()).unwrap_err().kind(),
            StateErrorKind::Forged
        );
    }

    #[test]
    fn over_length_token_rejected_before_decoding() {
        let s = sealer(vec![K1]).with_max_token_len(100);
        let b = default_binding();
        // Not even base64: TooLarge proves the cap is checked first.
        let huge = "!".repeat(101);
        assert_eq!(
            s.open(&b, &huge, t0()).unwrap_err().kind(),
            StateErrorKind::TooLarge
        );
        let err = s.open(&b, &"A".repeat(1 << 20), t0()).unwrap_err();
        assert_eq!(err.kind(), StateErrorKind::TooLarge);
        assert_opening_failure(err);
        // A genuine token over the cap of a stricter sealer is refused too.
        let token = sealer(vec![K1]).seal(&b, &[0u8; 200], t0()).unwrap();
        assert_eq!(
            s.open(&b, &token, t0()).unwrap_err().kind(),
            StateErrorKind::TooLarge
        );
    }

    #[test]
    fn seal_refuses_payload_over_cap() {
        let b = default_binding();
        let cap = 200;
        let s = sealer(vec![K1]).with_max_token_len(cap);
        // Largest payload that fits: the token is exactly at the cap or just below.
        let mut fitting = 0;
        for n in 0..cap {
            match s.seal(&b, &vec![0u8; n], t0()) {
                Ok(token) => {
                    assert!(token.len() <= cap);
                    assert!(s.open(&b, &token, t0()).is_ok());
                    fitting = n;
                }
                Err(err) => {
                    assert_eq!(err.kind(), StateErrorKind::PayloadTooLarge);
                    assert_ne!(err.to_string(), INVALID_STATE_MESSAGE);
                    break;
                }
            }
        }
        assert!(fitting > 0);
        let err = s.seal(&b, &vec![0u8; fitting + 1], t0()).unwrap_err();
        assert_eq!(err.kind(), StateErrorKind::PayloadTooLarge);
        let default = sealer(vec![K1]);
        assert_eq!(default.max_token_len(), 64 * 1024);
        let err = default.seal(&b, &vec![0u8; 64 * 1024], t0()).unwrap_err();
        assert_eq!(err.kind(), StateErrorKind::PayloadTooLarge);
    }

    #[test]
    fn digest_is_key_order_independent() {
        let a: Value =
            serde_json::from_str(r#"{"b":1,"a":{"y":[1,{"q":2,"p":3}],"x":null}}"#).unwrap();
        let c: Value = serde_json::from_str(
            r#"{ "a" : { "x" : null, "y" : [ 1 , { "p" : 3 , "q" : 2 } ] } , "b" : 1 }"#,
        )
        .unwrap();
        assert_eq!(digest_arguments(Some(&a)), digest_arguments(Some(&c)));
        // Array order is meaningful.
        let d = json!({"b": 1, "a": {"y": [{"q": 2, "p": 3}, 1], "x": null}});
        assert_ne!(digest_arguments(Some(&a)), digest_arguments(Some(&d)));
    }

    #[test]
    fn digest_absent_equals_empty_object() {
        let none = digest_arguments(None);
        assert_eq!(none, digest_arguments(Some(&json!({}))));
        assert_eq!(none, digest_arguments(Some(&Value::Null)));
        assert_eq!(none, <[u8; 32]>::from(Sha256::digest(b"{}")));
        assert_ne!(none, digest_arguments(Some(&json!([]))));
        assert_ne!(none, digest_arguments(Some(&json!({"a": null}))));
    }

    #[test]
    fn digest_is_canonical_json() {
        let v = json!({"z": "é\"\n", "a": [true, false, null, -3, 2.5]});
        let expected = r#"{"a":[true,false,null,-3,2.5],"z":"é\"\n"}"#.as_bytes();
        assert_eq!(
            digest_arguments(Some(&v)),
            <[u8; 32]>::from(Sha256::digest(expected))
        );
        // Re-serialising clients may turn 1.0 into 1.
        let float: Value = serde_json::from_str(r#"{"n":1.0,"m":-0.0}"#).unwrap();
        assert_eq!(
            digest_arguments(Some(&float)),
            digest_arguments(Some(&json!({"n": 1, "m": 0})))
        );
        assert_ne!(
            digest_arguments(Some(&json!({"n": 1}))),
            digest_arguments(Some(&json!({"n": "1"})))
        );
        assert_ne!(
            digest_arguments(Some(&json!({"n": 1.5}))),
            digest_arguments(Some(&json!({"n": 1})))
        );
    }

    #[test]
    fn from_base64_list_accepts_all_flavours() {
        let key: [u8; 32] = core::array::from_fn(|i| (i as u8).wrapping_mul(37).wrapping_add(0xfb));
        let padded = STANDARD.encode(key);
        let unpadded = STANDARD_NO_PAD.encode(key);
        let url = URL_SAFE.encode(key);
        let url_unpadded = URL_SAFE_NO_PAD.encode(key);
        assert!(
            padded.contains('+') || padded.contains('/'),
            "test key should exercise the alphabets"
        );
        for entry in [&padded, &unpadded, &url, &url_unpadded] {
            let ring = KeyRing::from_base64_list(&format!("  {entry}\n")).unwrap();
            assert_eq!(ring.len(), 1);
            // Same key as the raw one: tokens interoperate.
            let b = default_binding();
            let token = sealer(vec![key]).seal(&b, b"x", t0()).unwrap();
            assert!(StateSealer::new(ring).open(&b, &token, t0()).is_ok());
        }
        let two = KeyRing::from_base64_list(&format!("{url_unpadded} , {}", STANDARD.encode(K1)))
            .unwrap();
        assert_eq!(two.len(), 2);
        assert!(!two.is_empty());
    }

    #[test]
    fn from_base64_list_errors() {
        fn list_err(s: &str) -> KeyRingError {
            KeyRing::from_base64_list(s).unwrap_err()
        }
        let good = STANDARD.encode(K1);
        let short = STANDARD.encode([0u8; 31]);
        let long = STANDARD.encode([0u8; 33]);
        assert_eq!(list_err(""), KeyRingError::EmptyEntry { index: 0 });
        assert_eq!(list_err("   "), KeyRingError::EmptyEntry { index: 0 });
        assert_eq!(
            list_err(&format!("{good},")),
            KeyRingError::EmptyEntry { index: 1 }
        );
        assert_eq!(
            list_err(&format!("{good},,{good}")),
            KeyRingError::EmptyEntry { index: 1 }
        );
        assert_eq!(
            list_err(&format!("{good},{short}")),
            KeyRingError::WrongLength { index: 1, len: 31 }
        );
        assert_eq!(
            list_err(&long),
            KeyRingError::WrongLength { index: 0, len: 33 }
        );
        let secretish = "s3cr3t!key*material";
        let err = KeyRing::from_base64_list(&format!("{good}, {secretish}")).unwrap_err();
        assert_eq!(err, KeyRingError::InvalidBase64 { index: 1 });
        let message = err.to_string();
        assert!(
            message.contains('1') && message.contains("base64"),
            "{message}"
        );
        assert!(!message.contains(secretish));
        let message = KeyRing::from_base64_list(&short).unwrap_err().to_string();
        assert!(message.contains("31") && message.contains("32") && !message.contains(&short));
        assert_eq!(
            list_err(&format!("{good},{good}")),
            KeyRingError::DuplicateKey { index: 1 }
        );
        assert_eq!(KeyRing::new(vec![]).unwrap_err(), KeyRingError::Empty);
    }

    #[test]
    fn debug_does_not_leak_keys() {
        let key = [0xabu8; 32];
        let ring = KeyRing::new(vec![key, K1]).unwrap();
        let text = format!("{ring:?} {:?}", StateSealer::new(ring.clone()));
        assert!(!text.contains("abab"), "{text}");
        assert!(!text.contains("171"), "{text}");
        assert!(!text.contains(&STANDARD.encode(key)));
        assert!(text.contains("KeyRing"));
    }

    #[test]
    fn generated_rings_work_and_differ() {
        let b = default_binding();
        let a = StateSealer::new(KeyRing::generate());
        let c = StateSealer::new(KeyRing::generate());
        let token = a.seal(&b, b"x", t0()).unwrap();
        assert_eq!(a.open(&b, &token, t0()).unwrap(), b"x");
        assert_eq!(
            c.open(&b, &token, t0()).unwrap_err().kind(),
            StateErrorKind::UnknownKey
        );
    }
}
