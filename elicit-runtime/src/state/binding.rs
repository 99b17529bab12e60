//! What a sealed state is bound to, encoded as associated data.

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{AAD_LABEL, KEY_ID_LEN};

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
    /// Encodes the binding as associated data for an envelope of `version`.
    ///
    /// Every variable-length field is prefixed with its length, and the
    /// optional principal with a presence tag, so that no two distinct
    /// bindings (e.g. `name = "ab", audience = "c"` versus `name = "a",
    /// audience = "bc"`, or no principal versus an empty one) encode alike.
    pub(super) fn encode_aad(&self, version: u8, key_id: &[u8]) -> Vec<u8> {
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
        aad.push(version);
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
