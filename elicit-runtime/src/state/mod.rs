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
//!
//! Split by job: `keys` holds the [`KeyRing`], `binding` the [`Binding`] a state is sealed to,
//! `seal` the envelope itself ([`StateSealer`]); the format's constants are here, shared by all.

use std::time::Duration;

mod binding;
mod keys;
mod seal;

pub use binding::{Binding, digest_arguments};
pub use keys::{KeyRing, KeyRingError};
pub use seal::{StateError, StateErrorKind, StateSealer};

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

#[cfg(test)]
mod tests;
