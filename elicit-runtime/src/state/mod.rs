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
//! version (1 byte) || key id (4 bytes) || nonce || ciphertext || tag (16 bytes)
//! ```
//!
//! where the plaintext is `expiry (u64 unix seconds, big-endian) || payload` and the associated
//! data covers the version, the key id and a [`Binding`] describing *which* request the state
//! belongs to. Two versions exist ([`EnvelopeVersion`]):
//!
//! - version 2, sealed by default: AES-256-GCM-SIV (RFC 8452) with a 12-byte random nonce, under
//!   a key derived from the ring's key with a labelled SHA-256. GCM-SIV resists nonce misuse: if
//!   two random nonces ever collide under one key, an observer learns only whether the two sealed
//!   states were identical; the key, other states and forgeries stay out of reach (plain AES-GCM
//!   would leak its authentication key). AES-NI and PCLMULQDQ are used when the CPU has them.
//! - version 1: XChaCha20-Poly1305 with a 24-byte random nonce under the ring's key. Still opened,
//!   so states sealed before an upgrade keep working for their lifetime, and sealed when asked
//!   ([`StateSealer::with_sealing_version`]), for a rolling upgrade whose older replicas open only
//!   version 1.
//!
//! The binding is never stored in the token: the server recomputes it from the retried request,
//! so replaying a state against another tool, other arguments, another principal or another
//! audience fails to authenticate.
//!
//! Every opening failure is reported to clients with the same text,
//! [`INVALID_STATE_MESSAGE`], so that the error does not become an oracle;
//! [`StateError::kind`] keeps the detail for the server's own logs.
//!
//! Split by job: `keys` holds the [`KeyRing`], `binding` the [`Binding`] a state is sealed to,
//! `seal` the envelope itself ([`StateSealer`]); the format's constants are here, shared by all.

use std::time::Duration;

mod binding;
mod keys;
mod seal;

pub use binding::{Binding, digest_arguments};
pub use keys::{KeyRing, KeyRingError};
pub use seal::{EnvelopeVersion, StateError, StateErrorKind, StateSealer};

/// The single message shown for every failure to open a `requestState`.
///
/// Distinguishing "expired" from "forged" or "unknown key" to the client would
/// let an attacker probe the server's keys and clock, so all of them share it.
pub const INVALID_STATE_MESSAGE: &str = "invalid requestState";

/// Envelope version 1: XChaCha20-Poly1305, 24-byte nonce.
const VERSION_1: u8 = 1;
/// Envelope version 2: AES-256-GCM-SIV under a derived key, 12-byte nonce.
const VERSION_2: u8 = 2;
const KEY_ID_LEN: usize = 4;
const NONCE_LEN_V1: usize = 24;
const NONCE_LEN_V2: usize = 12;
const TAG_LEN: usize = 16;
const EXPIRY_LEN: usize = 8;

/// Domain labels keep the hashes and the associated data of this module from
/// ever colliding with other uses of the same keys or hash function.
const KEY_ID_LABEL: &[u8] = b"elicit-runtime/requestState/key-id/v1\0";
const AAD_LABEL: &[u8] = b"elicit-runtime/requestState/aad/v1\0";
/// Derives version 2's AES-256-GCM-SIV key from a ring key, so that no key serves two ciphers.
const KEY_V2_LABEL: &[u8] = b"elicit-runtime/requestState/key/v2\0";

/// Default lifetime of a sealed state.
const DEFAULT_TTL: Duration = Duration::from_secs(15 * 60);
/// Default cap on the token text, in bytes.
const DEFAULT_MAX_TOKEN_LEN: usize = 64 * 1024;

#[cfg(test)]
mod tests;
