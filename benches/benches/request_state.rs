//! `requestState` holding three answers: our sealer (AES-256-GCM-SIV, envelope version 2, encrypted
//! and bound) against rmcp's `RequestStateCodec` (HMAC-SHA256, signed only), both bound to the
//! request and with a lifetime. Both seal the engine's flow payload and open it back into that
//! type (its answers kept as raw JSON until read): ours through the engine's own calls.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use elicit_benches::StateBench;

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
    group.finish();
}

criterion_group!(benches, request_state);
criterion_main!(benches);
