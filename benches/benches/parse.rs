//! Parsing the accepted `content` of the representative form: ours (every constraint checked),
//! serde alone (types only), and a JSON Schema validator (built once) followed by serde.

use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use elicit_benches::{Booking, SerdeBooking, booking_content, content_validator, validate_then_deserialize};
use elicit_runtime::Elicit;
use serde::Deserialize;
use serde_json::Value;

fn parse(c: &mut Criterion) {
    let content = booking_content();
    let value = Value::Object(content.clone());
    let validator = content_validator().expect("the wire schema compiles");
    // Every contender must accept the answer, or the comparison means nothing.
    assert!(Booking::from_content(&content).is_ok());
    assert!(validate_then_deserialize(&validator, value.clone()).is_some());

    let mut group = c.benchmark_group("parse");
    group.bench_function("ours_from_content", |b| b.iter(|| black_box(Booking::from_content(black_box(&content)))));
    // `from_value` consumes its input: the copy is made outside the timed routine.
    group.bench_function("serde_from_value", |b| {
        b.iter_batched(
            || value.clone(),
            |v| black_box(serde_json::from_value::<SerdeBooking>(v)),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("serde_deserialize_borrowed", |b| {
        b.iter(|| black_box(SerdeBooking::deserialize(black_box(&value))))
    });
    group.bench_function("jsonschema_then_serde", |b| {
        b.iter_batched(|| value.clone(), |v| black_box(validate_then_deserialize(&validator, v)), BatchSize::SmallInput)
    });
    group.finish();
}

criterion_group!(benches, parse);
criterion_main!(benches);
