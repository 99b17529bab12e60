//! Testing a server: keys, an rmcp server served in process on a loopback port, a
//! real `travel-server` process that is killed on drop, a small JSON-RPC-over-HTTP client that
//! sends the headers and `_meta` revision 2026-07-28 requires (and checks every reply against the
//! spec's schema), and a driver for the engine without any transport.

#![allow(clippy::panic, clippy::unwrap_used, reason = "test helpers report a failure by panicking")]

pub mod engine;
pub mod http;
pub mod process;
pub mod schema;

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

/// A fresh 32-byte key. Test keys need to differ, not to be secret: `RandomState` is seeded
/// per process from the OS, and a counter keeps keys of one process apart.
pub fn raw_key() -> [u8; 32] {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let state = RandomState::new();
    let mut key = [0u8; 32];
    for (i, chunk) in key.chunks_mut(8).enumerate() {
        let mut hasher = state.build_hasher();
        hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        hasher.write_usize(i);
        chunk.copy_from_slice(&hasher.finish().to_le_bytes());
    }
    key
}

const STANDARD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn encode(bytes: &[u8], alphabet: &[u8; 64], pad: bool) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], chunk.get(1).copied().unwrap_or(0), chunk.get(2).copied().unwrap_or(0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(alphabet[((n >> (18 - 6 * i)) & 63) as usize]));
            } else if pad {
                out.push('=');
            }
        }
    }
    out
}

/// Standard base64 with padding, the form `ELICIT_STATE_KEYS` takes.
pub fn base64(bytes: &[u8]) -> String {
    encode(bytes, STANDARD, true)
}

/// URL-safe base64 without padding, the form of a sealed `requestState`.
pub fn base64url(bytes: &[u8]) -> String {
    encode(bytes, URL_SAFE, false)
}

/// Decodes URL-safe unpadded base64 (lenient about trailing bits: tests only decode what the
/// runtime encoded).
pub fn base64url_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.bytes() {
        let value = URL_SAFE.iter().position(|&a| a == c)? as u32;
        acc = (acc << 6) | value;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// Serves `server` (the rmcp adapter's Streamable HTTP router) on a loopback port for the rest of
/// the test; the URL of its MCP endpoint.
pub async fn serve(server: elicit_runtime::rmcp::McpServer) -> String {
    let (listener, url) = loopback().await;
    let app = server.http_router(&[]);
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// As [`serve`], with each connection's peer address handed to the router, which is how it tells
/// clients apart (a limit per client): served with `rmcp::serve_http`, as a user serves it; the
/// server stays the caller's.
pub async fn serve_by_address(server: &elicit_runtime::rmcp::McpServer) -> String {
    let (listener, url) = loopback().await;
    let app = server.http_router(&[]);
    tokio::spawn(async move { elicit_runtime::rmcp::serve_http(listener, app).await });
    url
}

/// A listener on a free loopback port, and the URL of the MCP endpoint served there.
async fn loopback() -> (tokio::net::TcpListener, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    (listener, url)
}

/// A fresh key, base64-encoded for `ELICIT_STATE_KEYS`.
pub fn key_b64() -> String {
    base64(&raw_key())
}

#[test]
fn base64_matches_rfc_4648_vectors() {
    for (input, expected) in [
        ("", ""),
        ("f", "Zg=="),
        ("fo", "Zm8="),
        ("foo", "Zm9v"),
        ("foob", "Zm9vYg=="),
        ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ] {
        assert_eq!(base64(input.as_bytes()), expected);
    }
    for len in 0..40u8 {
        let bytes: Vec<u8> = (0..len).map(|i| i.wrapping_mul(37).wrapping_add(len)).collect();
        assert_eq!(base64url_decode(&base64url(&bytes)), Some(bytes));
    }
    assert_ne!(raw_key(), raw_key());
}
