//! Allocations per call of every micro-benchmarked operation, and the sizes of the sealed states,
//! as one JSON object on stdout (read by `bench-report`).
//!
//! ```text
//! cargo run --release -p elicit-benches --bin alloc_count
//! ```

use elicit_benches::{
    Booking, CountingAllocator, SerdeBooking, StateBench, allocations_per_call, booking_content, content_validator,
    ours_schema, ours_schema_wire, rmcp_schema, validate_then_deserialize,
};
use elicit_runtime::Elicit;
use serde::Deserialize;
use serde_json::{Value, json};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

const CALLS: u64 = 1_000;

fn main() {
    let content = booking_content();
    let value = Value::Object(content.clone());
    let validator = match content_validator() {
        Ok(validator) => validator,
        Err(error) => {
            eprintln!("alloc_count: the wire schema does not compile: {error}");
            std::process::exit(1);
        }
    };
    let state = match StateBench::new() {
        Ok(state) => state,
        Err(error) => {
            eprintln!("alloc_count: {error}");
            std::process::exit(1);
        }
    };
    let (ours_token, rmcp_token, rmcp_bare_token) = (state.ours_seal(), state.rmcp_seal(), state.rmcp_seal_bare());

    // `from_value` consumes its input, as in the timed bench: the copy is counted apart and
    // subtracted.
    let clone = allocations_per_call(CALLS, || value.clone());
    let report = json!({
        "allocations_per_call": {
            "schema/ours_requested_schema": allocations_per_call(CALLS, ours_schema),
            "schema/ours_to_wire_json": allocations_per_call(CALLS, ours_schema_wire),
            "schema/rmcp_from_type": allocations_per_call(CALLS, rmcp_schema),
            "parse/ours_from_content": allocations_per_call(CALLS, || Booking::from_content(&content)),
            "parse/serde_from_value": allocations_per_call(CALLS, || serde_json::from_value::<SerdeBooking>(value.clone())) - clone,
            "parse/serde_deserialize_borrowed": allocations_per_call(CALLS, || SerdeBooking::deserialize(&value)),
            "parse/jsonschema_then_serde":
                allocations_per_call(CALLS, || validate_then_deserialize(&validator, value.clone())) - clone,
            "request_state/ours_seal_open": allocations_per_call(CALLS, || state.ours_open(&state.ours_seal())),
            "request_state/rmcp_seal_open": allocations_per_call(CALLS, || state.rmcp_open(&state.rmcp_seal())),
            "request_state/rmcp_bare_seal_open":
                allocations_per_call(CALLS, || state.rmcp_open_bare(&state.rmcp_seal_bare())),
            "request_state/ours_seal": allocations_per_call(CALLS, || state.ours_seal()),
            "request_state/ours_open": allocations_per_call(CALLS, || state.ours_open(&ours_token)),
            "request_state/rmcp_seal": allocations_per_call(CALLS, || state.rmcp_seal()),
            "request_state/rmcp_open": allocations_per_call(CALLS, || state.rmcp_open(&rmcp_token)),
        },
        "sizes": {
            "schema_wire_bytes": ours_schema_wire().len(),
            "state_plaintext_bytes": state.plaintext_len(),
            "state_ours_sealed_bytes": ours_token.len(),
            "state_rmcp_sealed_bytes": rmcp_token.len(),
            "state_rmcp_bare_sealed_bytes": rmcp_bare_token.len(),
        },
    });
    println!("{report:#}");
}
