//! `requestState` holding three answers: our sealer (AES-256-GCM-SIV, envelope version 2, encrypted
//! and bound) against rmcp's `RequestStateCodec` (HMAC-SHA256, signed only), both bound to the
//! request and with a lifetime. Both seal the engine's flow payload and open it back into that
//! type (its answers kept as raw JSON until read): ours through the engine's own calls.

use std::hint::black_box;

use aes_gcm_siv::aead::{AeadInPlace, KeyInit};
use aes_gcm_siv::{Aes256GcmSiv, Nonce};
use criterion::{Criterion, criterion_group, criterion_main};
use elicit_benches::StateBench;

/// The associated data our sealer authenticates for the bench's binding, laid out as the runtime
/// writes it (a label, the envelope version, the key id, no principal, then each field after its
/// 8-byte length), with zeros for the key id: the same length, which is what the cipher's cost
/// depends on.
fn binding_aad() -> Vec<u8> {
    let mut aad = b"elicit-runtime/requestState/aad/v1\0".to_vec();
    aad.extend_from_slice(&[2, 0, 0, 0, 0, 0]);
    for field in [&b"tools/call"[..], b"book_trip", &[0; 32], b"elicit-bench"] {
        aad.extend_from_slice(&(field.len() as u64).to_be_bytes());
        aad.extend_from_slice(field);
    }
    aad
}

fn request_state(c: &mut Criterion) {
    let bench = StateBench::new().expect("fixed keys are valid");
    let ours = bench.ours_seal();
    let rmcp = bench.rmcp_seal();
    let rmcp_bare = bench.rmcp_seal_bare();
    assert_eq!(bench.ours_open(&ours).as_ref(), Some(&bench.payload));
    assert_eq!(bench.rmcp_open(&rmcp).as_ref(), Some(&bench.payload));
    assert_eq!(bench.rmcp_open_bare(&rmcp_bare).as_ref(), Some(&bench.payload));

    let mut group = c.benchmark_group("request_state");
    group.bench_function("ours_seal_open", |b| b.iter(|| black_box(bench.ours_open(&bench.ours_seal()))));
    group.bench_function("rmcp_seal_open", |b| b.iter(|| black_box(bench.rmcp_open(&bench.rmcp_seal()))));
    group
        .bench_function("rmcp_bare_seal_open", |b| b.iter(|| black_box(bench.rmcp_open_bare(&bench.rmcp_seal_bare()))));
    group.bench_function("ours_seal", |b| b.iter(|| black_box(bench.ours_seal())));
    group.bench_function("ours_open", |b| b.iter(|| black_box(bench.ours_open(black_box(&ours)))));
    group.bench_function("rmcp_seal", |b| b.iter(|| black_box(bench.rmcp_seal())));
    group.bench_function("rmcp_open", |b| b.iter(|| black_box(bench.rmcp_open(black_box(&rmcp)))));

    // The cipher alone, on what our envelope encrypts for this payload (the 8-byte expiry and the
    // payload's JSON): seal + open as they would cost were writing, reading, base64 and allocation
    // free. A fresh nonce each time, as sealing takes.
    let cipher = Aes256GcmSiv::new(&[7; 32].into());
    let aad = binding_aad();
    // Then on the expiry alone (an empty payload): the cipher's fixed cost per state, the least
    // any encoding of the payload could leave.
    for (id, len) in [("cipher_only", 8 + bench.plaintext_len()), ("cipher_only_expiry", 8)] {
        let mut plaintext = vec![0x41; len];
        let mut counter = 0u64;
        group.bench_function(id, |b| {
            b.iter(|| {
                counter += 1;
                let mut nonce = [0; 12];
                nonce[..8].copy_from_slice(&counter.to_le_bytes());
                let nonce = Nonce::from_slice(&nonce);
                let tag = cipher.encrypt_in_place_detached(nonce, &aad, &mut plaintext);
                let opened = tag.and_then(|tag| cipher.decrypt_in_place_detached(nonce, &aad, &mut plaintext, &tag));
                black_box(opened.is_ok())
            })
        });
    }
    group.finish();
}

criterion_group!(benches, request_state);
criterion_main!(benches);
