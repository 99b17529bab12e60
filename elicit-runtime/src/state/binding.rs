//! What a sealed state is bound to, encoded as associated data.

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::AAD_LABEL;

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

/// Associated data up to this length is encoded on the stack: every binding of a usual request
/// (a tool name, an audience, a principal of a few dozen bytes) fits; a longer one goes to the heap.
const AAD_ON_STACK: usize = 512;

impl Binding<'_> {
    /// The associated data for an envelope of `version`, as a `Vec` (for tests).
    #[cfg(test)]
    pub(super) fn encode_aad(&self, version: u8, key_id: &[u8]) -> Vec<u8> {
        self.with_aad(version, key_id, <[u8]>::to_vec)
    }

    /// Calls `f` with the binding encoded as associated data for an envelope of `version`, built
    /// on the stack when it fits: sealing and opening allocate nothing for it.
    ///
    /// Every variable-length field is prefixed with its length, and the
    /// optional principal with a presence tag, so that no two distinct
    /// bindings (e.g. `name = "ab", audience = "c"` versus `name = "a",
    /// audience = "bc"`, or no principal versus an empty one) encode alike.
    pub(super) fn with_aad<R>(&self, version: u8, key_id: &[u8], f: impl FnOnce(&[u8]) -> R) -> R {
        let len = self.aad_len(key_id);
        if len <= AAD_ON_STACK {
            let mut buf = [0u8; AAD_ON_STACK];
            let mut out = Cursor { buf: &mut buf, at: 0, overflowed: false };
            self.write_aad(version, key_id, &mut out);
            let (at, overflowed) = (out.at, out.overflowed);
            // `aad_len` is exact, so this always holds; were it ever wrong, the heap path below
            // still encodes the whole binding rather than a truncated one.
            if let Some(aad) = buf.get(..at).filter(|_| at == len && !overflowed) {
                return f(aad);
            }
        }
        let mut aad = Vec::with_capacity(len);
        self.write_aad(version, key_id, &mut aad);
        f(&aad)
    }

    /// The exact length `write_aad` writes.
    fn aad_len(&self, key_id: &[u8]) -> usize {
        const LEN: usize = 8;
        let principal = self.principal.map_or(0, |principal| LEN + principal.len());
        let fields = [self.method.len(), self.name.len(), self.arguments_digest.len(), self.audience.len()];
        // The label, the version, the key id, the presence tag, then each field after its length.
        AAD_LABEL.len() + 1 + key_id.len() + 1 + principal + fields.iter().map(|len| LEN + len).sum::<usize>()
    }

    fn write_aad(&self, version: u8, key_id: &[u8], out: &mut impl Sink) {
        out.put(AAD_LABEL);
        out.put(&[version]);
        out.put(key_id);
        match self.principal {
            None => out.put(&[0]),
            Some(principal) => {
                out.put(&[1]);
                put_field(out, principal.as_bytes());
            }
        }
        put_field(out, self.method.as_bytes());
        put_field(out, self.name.as_bytes());
        put_field(out, &self.arguments_digest);
        put_field(out, self.audience.as_bytes());
    }
}

/// Where associated data is written: a stack buffer or a `Vec`.
trait Sink {
    fn put(&mut self, bytes: &[u8]);
}

impl Sink for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

/// A stack buffer filled from the front. It never panics: what would not fit is dropped and
/// `overflowed` set, and the caller then encodes on the heap instead.
struct Cursor<'b> {
    buf: &'b mut [u8],
    at: usize,
    overflowed: bool,
}

impl Sink for Cursor<'_> {
    fn put(&mut self, bytes: &[u8]) {
        let end = self.at.saturating_add(bytes.len());
        match self.buf.get_mut(self.at..end) {
            Some(dst) => {
                dst.copy_from_slice(bytes);
                self.at = end;
            }
            None => self.overflowed = true,
        }
    }
}

fn put_field(out: &mut impl Sink, bytes: &[u8]) {
    // usize -> u64 is lossless on every supported target.
    out.put(&(bytes.len() as u64).to_be_bytes());
    out.put(bytes);
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
