//! The ring of sealing keys: the first seals, every one opens, each known by a short id.

use std::fmt;

use aes_gcm_siv::Aes256GcmSiv;
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use chacha20poly1305::XChaCha20Poly1305;
use chacha20poly1305::aead::{KeyInit, OsRng};
use sha2::{Digest, Sha256};

use super::{KEY_ID_LABEL, KEY_ID_LEN, KEY_V2_LABEL};

pub(super) type KeyId = [u8; KEY_ID_LEN];

/// One ring key, ready for both envelope versions (key schedules done once).
#[derive(Clone)]
pub(super) struct Ciphers {
    /// Version 1: XChaCha20-Poly1305 under the key itself.
    pub(super) v1: XChaCha20Poly1305,
    /// Version 2: AES-256-GCM-SIV under `SHA-256(KEY_V2_LABEL || key)`.
    pub(super) v2: Aes256GcmSiv,
}

impl Ciphers {
    fn new(key: &[u8; 32]) -> Self {
        let v2_key = Sha256::new().chain_update(KEY_V2_LABEL).chain_update(key).finalize();
        Self { v1: XChaCha20Poly1305::new(key.into()), v2: Aes256GcmSiv::new(&v2_key) }
    }
}

pub(super) fn key_id(key: &[u8; 32]) -> KeyId {
    let hash = Sha256::new().chain_update(KEY_ID_LABEL).chain_update(key).finalize();
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
            Self::Empty => f.write_str("requestState key ring is empty: at least one key is required"),
            Self::EmptyEntry { index } => {
                write!(f, "requestState key entry {index} (0-based) is empty")
            }
            Self::InvalidBase64 { index } => write!(
                f,
                "requestState key entry {index} (0-based) is not valid base64 \
                 (standard or URL-safe alphabet, padded or unpadded)"
            ),
            Self::WrongLength { index, len } => {
                write!(f, "requestState key entry {index} (0-based) decodes to {len} bytes; exactly 32 are required")
            }
            Self::DuplicateKey { index } => {
                write!(f, "requestState key entry {index} (0-based) duplicates an earlier key")
            }
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
    /// `(key id, ciphers)` in configuration order; the first entry seals.
    /// Ciphers are kept instead of raw keys so the key schedule is done once.
    entries: Vec<(KeyId, Ciphers)>,
}

impl KeyRing {
    /// Builds a ring from raw 32-byte keys; the first one seals.
    ///
    /// Fails if `keys` is empty or repeats a key.
    pub fn new(keys: Vec<[u8; 32]>) -> Result<Self, KeyRingError> {
        if keys.is_empty() {
            return Err(KeyRingError::Empty);
        }
        let mut entries: Vec<(KeyId, Ciphers)> = Vec::with_capacity(keys.len());
        for (index, key) in keys.iter().enumerate() {
            let id = key_id(key);
            if entries.iter().any(|(existing, _)| *existing == id) {
                return Err(KeyRingError::DuplicateKey { index });
            }
            entries.push((id, Ciphers::new(key)));
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
                bytes.as_slice().try_into().map_err(|_| KeyRingError::WrongLength { index, len: bytes.len() })?;
            keys.push(key);
        }
        Self::new(keys)
    }

    /// The keys in the environment variable `var` (comma-separated base64, as
    /// [`KeyRing::from_base64_list`]; the first seals), or, when it is unset or blank, a
    /// [generated](KeyRing::generate) ring with a warning logged (`tracing`): a state sealed
    /// with it opens in this process only, so every instance behind one address needs `var`.
    ///
    /// # Errors
    ///
    /// As [`KeyRing::from_base64_list`], for a value that is set and not a key list.
    #[cfg(feature = "server")]
    pub fn from_env_or_generate(var: &str) -> Result<Self, KeyRingError> {
        match std::env::var(var) {
            Ok(list) if !list.trim().is_empty() => KeyRing::from_base64_list(&list),
            _ => {
                tracing::warn!(target: "elicit_runtime", var, "no sealing keys set: a random key no other process shares");
                Ok(KeyRing::generate())
            }
        }
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
        Self { entries: vec![(id, Ciphers::new(&raw))] }
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

    pub(super) fn sealing(&self) -> Option<&(KeyId, Ciphers)> {
        self.entries.first()
    }

    pub(super) fn find(&self, id: &[u8]) -> Option<&Ciphers> {
        self.entries.iter().find(|(candidate, _)| candidate.as_slice() == id).map(|(_, cipher)| cipher)
    }
}

fn decode_key_entry(entry: &str) -> Option<Vec<u8>> {
    // Operators paste keys from many tools; accepting every common base64
    // flavour avoids pointless configuration failures without weakening
    // anything, since the length check below still applies.
    [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD].into_iter().find_map(|engine| engine.decode(entry).ok())
}

impl fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Key ids are already public (every token carries one), keys never are.
        struct Ids<'a>(&'a [(KeyId, Ciphers)]);
        impl fmt::Debug for Ids<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let mut list = f.debug_list();
                for (id, _) in self.0 {
                    list.entry(&format_args!("{:02x}{:02x}{:02x}{:02x}", id[0], id[1], id[2], id[3]));
                }
                list.finish()
            }
        }
        f.debug_struct("KeyRing").field("key_ids", &Ids(&self.entries)).finish()
    }
}
