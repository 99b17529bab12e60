//! What the benchmarks share: one representative form in two spellings — ours (`#[derive(Elicit)]`)
//! and the closest `serde` + `schemars` equivalent that rmcp's `ElicitationSchema::from_type`
//! accepts — a valid answer to it, the payload of a `requestState` holding three answers, and a
//! counting allocator.
//!
//! The form uses every kind of property the protocol allows: strings with length bounds and each of
//! the four formats, an integer and a number with bounds, a boolean, untitled and titled single
//! selects, untitled and titled multi-selects, required and optional fields, and defaults.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use chrono::{DateTime, FixedOffset, NaiveDate};
use elicit_runtime::__private::FlowPayload;
use elicit_runtime::state::{Binding, KeyRing, StateSealer, digest_arguments};
use elicit_runtime::{Elicit, Email, RequestedSchema};
use rmcp::model::{ElicitationSchema, RequestStateCodec, SealOptions};
use serde::Deserialize;
use serde_json::{Map, Value, json};

pub mod e2e;
pub mod legacy;
pub mod rmcp_by_hand;
pub mod server;

/// Where would you like to fly?
#[derive(Elicit, Debug, Clone, PartialEq)]
#[elicit(rename_all = "camelCase")]
pub struct Booking {
    /// Your full name
    #[elicit(title = "Name", min_length = 1, max_length = 64)]
    pub name: String,
    /// Where we send your e-ticket
    #[elicit(title = "E-mail")]
    pub email: Email,
    /// Your loyalty programme page, if any
    #[elicit(title = "Loyalty page", format = "uri")]
    pub loyalty_page: Option<String>,
    /// The showcase's departure date, latest arrival, travellers and budget, spliced into this form.
    #[elicit(flatten)]
    pub schedule: Schedule,
    /// Send me fare alerts
    #[elicit(title = "Fare alerts", default = false)]
    pub alerts: bool,
    /// Seat preference
    #[elicit(title = "Seat")]
    pub seat: Seat,
    /// Cabin class
    #[elicit(title = "Cabin", default = "economy")]
    pub cabin: Cabin,
    /// Meals you would like (two at most)
    #[elicit(title = "Meals", max_items = 2)]
    pub meals: Vec<Meal>,
    /// Anything else to add
    #[elicit(title = "Extras")]
    pub extras: Vec<Extra>,
}

// The choices and the schedule are the showcase's own (`travel-server`'s trip form): the
// benchmarked form is a representative one, not a look-alike.
pub use elicit_examples::travel::{Cabin, Extra, Meal, Schedule, Seat};

// The same form for `serde` and `schemars`, spelled so that rmcp's `ElicitationSchema::from_type`
// accepts it: enums inlined (no `$ref`), titles and bounds as schemars attributes. (Doc comments
// become schema descriptions, hence plain comments here.) `serde` checks the types only: lengths,
// bounds, item counts and the `email`/`uri` formats go unchecked; dates are checked by chrono.
/// Where would you like to fly?
#[derive(Deserialize, schemars::JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SerdeBooking {
    /// Your full name
    #[schemars(title = "Name", length(min = 1, max = 64))]
    pub name: String,
    /// Where we send your e-ticket
    #[schemars(title = "E-mail", email)]
    pub email: String,
    /// Your loyalty programme page, if any
    #[schemars(title = "Loyalty page", url)]
    pub loyalty_page: Option<String>,
    /// Date of the outbound flight
    #[schemars(title = "Departure date")]
    pub depart: NaiveDate,
    /// Latest arrival, with your UTC offset
    #[schemars(title = "Arrive by")]
    pub arrive_by: Option<DateTime<FixedOffset>>,
    /// How many people travel
    #[schemars(title = "Travellers", range(min = 1, max = 9))]
    #[serde(default = "one")]
    pub travellers: u8,
    /// Most you want to pay per traveller, in euros
    #[schemars(title = "Budget (EUR)", range(min = 0.0, max = 100000.0))]
    pub budget: Option<f64>,
    /// Send me fare alerts
    #[schemars(title = "Fare alerts")]
    #[serde(default)]
    pub alerts: bool,
    /// Seat preference
    #[schemars(title = "Seat")]
    pub seat: SerdeSeat,
    /// Cabin class
    #[schemars(title = "Cabin", extend("default" = "economy"))]
    pub cabin: SerdeCabin,
    /// Meals you would like (two at most)
    #[schemars(title = "Meals", length(max = 2))]
    pub meals: Vec<SerdeMeal>,
    /// Anything else to add
    #[schemars(title = "Extras")]
    pub extras: Vec<SerdeExtra>,
}

fn one() -> u8 {
    1
}

/// [`Seat`] for serde.
#[derive(Deserialize, schemars::JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
#[allow(missing_docs, reason = "schemars turns variant docs into a `oneOf`, which rmcp reads as no select at all")]
pub enum SerdeSeat {
    Window,
    Aisle,
}

/// [`Cabin`] for serde.
#[derive(Deserialize, schemars::JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
// rmcp's titled select needs `type: "string"` beside the `oneOf`, which schemars leaves out.
#[schemars(inline, extend("type" = "string"))]
pub enum SerdeCabin {
    /// Economy.
    #[schemars(title = "Economy")]
    Economy,
    /// Premium economy.
    #[schemars(title = "Premium economy")]
    PremiumEconomy,
    /// Business.
    #[schemars(title = "Business class")]
    Business,
}

/// [`Meal`] for serde.
#[derive(Deserialize, schemars::JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
#[schemars(inline, description = "")]
#[allow(missing_docs, reason = "schemars turns variant docs into a `oneOf`, which rmcp reads as no select at all")]
pub enum SerdeMeal {
    Vegetarian,
    Vegan,
    GlutenFree,
}

/// [`Extra`] for serde (rmcp turns the `oneOf` schemars writes into the `anyOf` of a titled
/// multi-select).
#[derive(Deserialize, schemars::JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
#[schemars(inline, description = "")]
pub enum SerdeExtra {
    /// A checked bag.
    #[schemars(title = "Extra checked bag")]
    CheckedBag,
    /// Lounge access.
    #[schemars(title = "Lounge access")]
    Lounge,
    /// Insurance.
    #[schemars(title = "Travel insurance")]
    Insurance,
}

/// A valid answer to the form, every field present: what a client sends as `content`.
pub fn booking_content() -> Map<String, Value> {
    match json!({
        "name": "Ada Lovelace",
        "email": "ada@example.com",
        "loyaltyPage": "https://miles.example.com/members/ada",
        "depart": "2026-07-28",
        "arriveBy": "2026-07-28T18:30:00+02:00",
        "travellers": 2,
        "budget": 450.5,
        "alerts": true,
        "seat": "window",
        "cabin": "premium_economy",
        "meals": ["vegetarian", "gluten-free"],
        "extras": ["checked_bag", "insurance"]
    }) {
        Value::Object(content) => content,
        _ => Map::new(),
    }
}

/// The `requestState` payload of a flow that has collected three answers, as JSON: the engine's
/// state layout (`{"a": {key: answer}}`).
pub fn three_answers_state() -> Value {
    json!({"a": {
        "trip": {"action": "accept", "content": {"from": "CDG", "to": "SFO", "depart": "2026-07-28", "travellers": 2}},
        "seat": {"action": "accept", "content": {"seat": "window", "meals": ["vegetarian"]}},
        "confirm": {"action": "accept", "content": {"ok": true}}
    }})
}

/// Ours: the derived `requestedSchema` (built once, then shared).
pub fn ours_schema() -> &'static RequestedSchema {
    Booking::requested_schema()
}

/// Ours: the schema serialised for the wire.
pub fn ours_schema_wire() -> Vec<u8> {
    serde_json::to_vec(Booking::requested_schema()).unwrap_or_default()
}

/// rmcp: `ElicitationSchema::from_type` on the schemars spelling (generated anew on every call:
/// rmcp offers no cache).
pub fn rmcp_schema() -> Option<ElicitationSchema> {
    ElicitationSchema::from_type::<SerdeBooking>().ok()
}

/// A JSON Schema validator for the form's `content`, built once from our wire schema: draft
/// 2020-12 (the protocol's dialect), formats checked.
pub fn content_validator() -> Result<jsonschema::Validator, String> {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(&Booking::requested_schema().to_json())
        .map_err(|e| e.to_string())
}

/// Parses with a validator first, then serde: what a server without a derived parser would do.
pub fn validate_then_deserialize(validator: &jsonschema::Validator, content: Value) -> Option<SerdeBooking> {
    if !validator.is_valid(&content) {
        return None;
    }
    serde_json::from_value(content).ok()
}

/// The sealing comparison: our AEAD sealer and rmcp's HMAC codec, each bound to the same request
/// (method, tool, digest of the arguments, audience) and with the same 15-minute lifetime.
///
/// Both sides seal the same value of the same type and open it back into that type: the engine's
/// own flow payload, which is what the engine opens a `requestState` into (its answers stay raw
/// JSON until a round reads one). Ours goes through the engine's own calls, so its figure is the
/// engine's path.
pub struct StateBench {
    sealer: StateSealer,
    codec: RequestStateCodec,
    arguments_digest: [u8; 32],
    associated_data: Vec<u8>,
    /// The state: three answers, as a round that opened it and read none holds it.
    pub payload: FlowPayload,
}

const TTL: Duration = Duration::from_secs(15 * 60);
const AUDIENCE: &str = "elicit-bench";
const TOOL: &str = "book_trip";

impl StateBench {
    /// Fixed keys; the payload of [`three_answers_state`].
    pub fn new() -> Result<StateBench, String> {
        let json = serde_json::to_vec(&three_answers_state()).map_err(|e| e.to_string())?;
        let payload = serde_json::from_slice(&json).map_err(|e| e.to_string())?;
        let ring = KeyRing::new(vec![[7; 32]]).map_err(|e| e.to_string())?;
        let codec = RequestStateCodec::try_new([7u8; 32].to_vec()).map_err(|e| e.to_string())?;
        let arguments_digest = digest_arguments(Some(&json!({})));
        // What our binding authenticates, laid out for rmcp's associated data.
        let mut associated_data = b"tools/call\0book_trip\0".to_vec();
        associated_data.extend_from_slice(&arguments_digest);
        associated_data.extend_from_slice(AUDIENCE.as_bytes());
        Ok(StateBench {
            sealer: StateSealer::new(ring).with_ttl(TTL),
            codec,
            arguments_digest,
            associated_data,
            payload,
        })
    }

    fn binding(&self) -> Binding<'_> {
        Binding {
            principal: None,
            method: "tools/call",
            name: TOOL,
            arguments_digest: self.arguments_digest,
            audience: AUDIENCE,
        }
    }

    /// Ours: the state sealed, its JSON written into the token's buffer (the engine's call).
    pub fn ours_seal(&self) -> String {
        self.payload.seal(&self.sealer, &self.binding(), SystemTime::now()).unwrap_or_default()
    }

    /// Ours: a token opened and its JSON read into the payload (the engine's call).
    pub fn ours_open(&self, token: &str) -> Option<FlowPayload> {
        FlowPayload::open(&self.sealer, &self.binding(), token, SystemTime::now())
    }

    /// rmcp: `seal_json_with`, bound by associated data, with a TTL.
    pub fn rmcp_seal(&self) -> String {
        let options = SealOptions::new().associated_data(&self.associated_data).ttl(TTL);
        self.codec.seal_json_with(&self.payload, &options).unwrap_or_default()
    }

    /// rmcp: `open_json_with` against the same associated data, into the same payload type.
    pub fn rmcp_open(&self, token: &str) -> Option<FlowPayload> {
        self.codec.open_json_with(token, &self.associated_data).ok()
    }

    /// rmcp's bare `seal_json` (no binding, no expiry).
    pub fn rmcp_seal_bare(&self) -> String {
        self.codec.seal_json(&self.payload).unwrap_or_default()
    }

    /// rmcp's bare `open_json`.
    pub fn rmcp_open_bare(&self, token: &str) -> Option<FlowPayload> {
        self.codec.open_json(token).ok()
    }

    /// The plaintext the state seals: its compact JSON.
    pub fn plaintext_len(&self) -> usize {
        serde_json::to_vec(&self.payload).map_or(0, |bytes| bytes.len())
    }
}

/// The global allocator with a counter of allocations (and reallocations), for allocations per call.
pub struct CountingAllocator;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

impl CountingAllocator {
    /// Allocations (including reallocations) so far, process-wide.
    pub fn count() -> u64 {
        ALLOCATIONS.load(Ordering::Relaxed)
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged; the counter is
// a relaxed atomic that touches no memory the allocator hands out.
#[allow(unsafe_code, reason = "a GlobalAlloc wrapper cannot be written without it")]
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded as is; the caller upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded as is.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded as is.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as is.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Allocations per call of `f`, averaged over `calls` calls after one warm-up call (which fills
/// once-initialised caches such as a derived type's schema).
pub fn allocations_per_call<R>(calls: u64, mut f: impl FnMut() -> R) -> f64 {
    drop(std::hint::black_box(f()));
    let before = CountingAllocator::count();
    for _ in 0..calls {
        drop(std::hint::black_box(f()));
    }
    (CountingAllocator::count() - before) as f64 / calls as f64
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failing test should stop loudly")]
mod tests {
    use super::*;

    /// Every comparison is between contenders that do the same job on the same input.
    #[test]
    fn the_contenders_agree() {
        let schema = serde_json::to_value(rmcp_schema().unwrap()).unwrap();
        let ours = ours_schema().to_json();
        let names = |schema: &Value| schema["properties"].as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(names(&schema), names(&ours));

        let content = booking_content();
        let booking = Booking::from_content(&content).unwrap();
        let serde = validate_then_deserialize(&content_validator().unwrap(), Value::Object(content)).unwrap();
        assert_eq!((booking.name.as_str(), booking.email.as_str()), (serde.name.as_str(), serde.email.as_str()));
        assert_eq!(
            (booking.schedule.depart, booking.schedule.arrive_by, booking.schedule.travellers),
            (serde.depart, serde.arrive_by, serde.travellers)
        );

        let state = StateBench::new().unwrap();
        assert_eq!(state.ours_open(&state.ours_seal()).unwrap(), state.payload);
        assert_eq!(state.rmcp_open(&state.rmcp_seal()).unwrap(), state.payload);
        assert_eq!(state.rmcp_open_bare(&state.rmcp_seal_bare()).unwrap(), state.payload);
        // Bound: a token does not open against rmcp's bare (unbound) opening.
        assert!(state.rmcp_open_bare(&state.rmcp_seal()).is_none());
    }
}
