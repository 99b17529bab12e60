//! `requestedSchema` of the representative form: ours (derived, built once) and its wire
//! serialisation, against rmcp's `ElicitationSchema::from_type` on the schemars spelling.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use elicit_benches::{ours_schema, ours_schema_wire, rmcp_schema};

fn schema(c: &mut Criterion) {
    assert!(rmcp_schema().is_some(), "rmcp must accept the schemars spelling");
    let mut group = c.benchmark_group("schema");
    group.bench_function("ours_requested_schema", |b| b.iter(|| black_box(ours_schema())));
    group.bench_function("ours_to_wire_json", |b| b.iter(|| black_box(ours_schema_wire())));
    group.bench_function("rmcp_from_type", |b| b.iter(|| black_box(rmcp_schema())));
    group.finish();
}

criterion_group!(benches, schema);
criterion_main!(benches);
