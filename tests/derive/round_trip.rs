//! A property of every field type the derive supports (every integer width, `f32`, `f64`, dates
//! and date-times, `Url`, `Email`, strings, and field types of one's own): a value at each of its
//! bounds, and at random in between, survives `to_content` → `from_content` unchanged, and the
//! independent JSON Schema validator accepts the content written. The bounds are the schema's:
//! declared ones, fractional for numbers, and the types' own where the schema states them in full.

use std::fmt::Debug;

use chrono::{DateTime, Datelike as _, Duration, FixedOffset, NaiveDate, TimeZone as _, Utc};
use elicit_runtime::{Elicit, Email};
use elicit_test_support::rng::Rng;
use elicit_test_support::spec;
use serde_json::Value;

use crate::fields::ProjectKey;

/// A newtype field type, through `#[elicit(transparent)]`; `ProjectKey` is one of one's own.
#[derive(Elicit, Debug, PartialEq, Clone, Copy)]
#[elicit(transparent)]
struct Seats(u16);

/// Declared bounds on every numeric type; the 64- and 128-bit ones inside `±(2^53 - 1)`, the
/// range every JSON peer (and the schema) holds exactly.
#[derive(Elicit, Debug, PartialEq)]
struct Bounded {
    #[elicit(minimum = -100, maximum = 101)]
    a_i8: i8,
    #[elicit(minimum = -30000, maximum = 3)]
    a_i16: i16,
    #[elicit(minimum = -7, maximum = 2000000000)]
    a_i32: i32,
    #[elicit(minimum = -9007199254740991, maximum = 9007199254740991)]
    a_i64: i64,
    #[elicit(minimum = -9007199254740991, maximum = 9007199254740990)]
    a_i128: i128,
    #[elicit(minimum = -5, maximum = 9007199254740991)]
    a_isize: isize,
    #[elicit(minimum = 1, maximum = 254)]
    a_u8: u8,
    #[elicit(minimum = 10, maximum = 65535)]
    a_u16: u16,
    #[elicit(minimum = 0, maximum = 4000000000)]
    a_u32: u32,
    #[elicit(minimum = 5, maximum = 9007199254740991)]
    a_u64: u64,
    #[elicit(minimum = 0, maximum = 9007199254740991)]
    a_u128: u128,
    #[elicit(minimum = 3, maximum = 9007199254740991)]
    a_usize: usize,
    #[elicit(minimum = 0.1, maximum = 0.3)]
    a_f32: f32,
    #[elicit(minimum = -2.5e-3, maximum = 1.7976931348623157e308)]
    a_f64: f64,
    #[elicit(minimum = -0.7, maximum = 1e30)]
    wide_f32: f32,
    #[elicit(minimum = 2, maximum = 9)]
    seats: Seats,
    #[elicit(min_length = 2, max_length = 6)]
    ticket: ProjectKey,
    #[elicit(min_length = 1, max_length = 12)]
    name: String,
}

/// The types' own ranges, which the schema states in full for these types.
#[derive(Elicit, Debug, PartialEq)]
struct TypeRange {
    a_i8: i8,
    a_i16: i16,
    a_i32: i32,
    a_u8: u8,
    a_u16: u16,
    a_u32: u32,
    a_f32: f32,
    a_f64: Option<f64>,
    seats: Seats,
    day: NaiveDate,
    at: DateTime<Utc>,
    local: DateTime<FixedOffset>,
    link: url::Url,
    mail: Email,
}

/// A bound of a field: the low one, the high one, or at random in between.
#[derive(Clone, Copy)]
enum Pick {
    Low,
    High,
    Between,
}

fn int(rng: &mut Rng, lo: i128, hi: i128) -> i128 {
    match pick(rng) {
        Pick::Low => lo,
        Pick::High => hi,
        Pick::Between => lo + (u128::from(rng.next_u64()) % (hi - lo + 1) as u128) as i128,
    }
}

fn float(rng: &mut Rng, lo: f64, hi: f64) -> f64 {
    match pick(rng) {
        Pick::Low => lo,
        Pick::High => hi,
        // Spread over the magnitudes too: a uniform draw in a wide range is nearly always huge.
        Pick::Between if rng.one_in(2) => (lo + rng.unit() * (hi / 2.0 - lo / 2.0) * 2.0).clamp(lo, hi),
        Pick::Between => (lo.max(0.0) + rng.unit() * 10f64.powi(rng.range(-5, 5) as i32)).clamp(lo, hi),
    }
}

fn text(rng: &mut Rng, min: usize, max: usize, letters: &[char]) -> String {
    let len = int(rng, min as i128, max as i128) as usize;
    (0..len).map(|_| *rng.pick(letters)).collect()
}

fn pick(rng: &mut Rng) -> Pick {
    *rng.pick(&[Pick::Low, Pick::High, Pick::Between])
}

macro_rules! ints {
    ($rng:expr, $ty:ty, $lo:expr, $hi:expr) => {
        <$ty>::try_from(int($rng, $lo, $hi)).expect("inside the type")
    };
}

fn bounded(rng: &mut Rng) -> Bounded {
    const SAFE: i128 = 9_007_199_254_740_991;
    Bounded {
        a_i8: ints!(rng, i8, -100, 101),
        a_i16: ints!(rng, i16, -30000, 3),
        a_i32: ints!(rng, i32, -7, 2_000_000_000),
        a_i64: ints!(rng, i64, -SAFE, SAFE),
        a_i128: ints!(rng, i128, -SAFE, SAFE - 1),
        a_isize: ints!(rng, isize, -5, SAFE),
        a_u8: ints!(rng, u8, 1, 254),
        a_u16: ints!(rng, u16, 10, 65535),
        a_u32: ints!(rng, u32, 0, 4_000_000_000),
        a_u64: ints!(rng, u64, 5, SAFE),
        a_u128: ints!(rng, u128, 0, SAFE),
        a_usize: ints!(rng, usize, 3, SAFE),
        // An f32 field holds the nearest f32 of what it is given, the bounds included.
        a_f32: float(rng, 0.1, 0.3) as f32,
        a_f64: float(rng, -2.5e-3, f64::MAX),
        wide_f32: float(rng, -0.7, 1e30) as f32,
        seats: Seats(ints!(rng, u16, 2, 9)),
        ticket: ProjectKey(text(rng, 2, 6, &['A', 'Q', 'Z'])),
        name: text(rng, 1, 12, &['a', 'é', '日', '😀', ' ']),
    }
}

fn type_range(rng: &mut Rng) -> TypeRange {
    let first = Utc.with_ymd_and_hms(0, 1, 1, 0, 0, 0).single().expect("a real instant");
    let last = Utc.with_ymd_and_hms(9999, 12, 31, 23, 59, 59).single().expect("a real instant")
        + Duration::nanoseconds(999_999_999);
    let span = (last - first).num_seconds();
    let instant = |rng: &mut Rng| match pick(rng) {
        Pick::Low => first,
        Pick::High => last,
        Pick::Between => {
            first + Duration::seconds(rng.range(0, span - 1)) + Duration::nanoseconds(rng.range(0, 999_999_999))
        }
    };
    let at = instant(rng);
    // An offset that keeps the local time inside the four-digit years.
    let offset_minutes = rng.range(-(23 * 60 + 59), 23 * 60 + 59) as i32;
    let offset = FixedOffset::east_opt(offset_minutes * 60).expect("within a day");
    let local_utc = instant(rng);
    let local = local_utc.with_timezone(&offset);
    let local = if (0..=9999).contains(&local.year()) { local } else { local_utc.fixed_offset() };
    let day = match pick(rng) {
        Pick::Low => NaiveDate::from_ymd_opt(0, 1, 1),
        Pick::High => NaiveDate::from_ymd_opt(9999, 12, 31),
        Pick::Between => NaiveDate::from_num_days_from_ce_opt(rng.range(-365, 3_652_058) as i32),
    }
    .expect("a real day");
    TypeRange {
        a_i8: ints!(rng, i8, i8::MIN.into(), i8::MAX.into()),
        a_i16: ints!(rng, i16, i16::MIN.into(), i16::MAX.into()),
        a_i32: ints!(rng, i32, i32::MIN.into(), i32::MAX.into()),
        a_u8: ints!(rng, u8, 0, u8::MAX.into()),
        a_u16: ints!(rng, u16, 0, u16::MAX.into()),
        a_u32: ints!(rng, u32, 0, u32::MAX.into()),
        a_f32: float(rng, f32::MIN.into(), f32::MAX.into()) as f32,
        a_f64: rng.one_in(4).then(|| float(rng, f64::MIN, f64::MAX)),
        seats: Seats(ints!(rng, u16, 0, u16::MAX.into())),
        day,
        at,
        local,
        link: url::Url::parse(&format!("https://example.com/{}?q={}", rng.below(1000), rng.below(9))).expect("a URL"),
        mail: format!("user{}@example.com", rng.below(1000)).parse().expect("an address"),
    }
}

/// `value` written and read back is itself, and its content is valid for the schema; every
/// failure is collected with the content that shows it.
fn survives<T: Elicit + PartialEq + Debug>(value: &T, failures: &mut Vec<String>) {
    let content = value.to_content();
    let validator = spec::content_validator(&T::requested_schema().to_json());
    if !validator.is_valid(&Value::Object(content.clone())) {
        failures.push(format!("the validator refuses {content:?}"));
    }
    match T::from_content(&content) {
        Ok(back) if back == *value && back.to_content() == content => {}
        Ok(back) => failures.push(format!("{value:?} came back as {back:?} from {content:?}")),
        Err(errors) => failures.push(format!("{errors} for {content:?}")),
    }
}

#[test]
fn every_field_type_round_trips_at_its_bounds_and_in_between() {
    let mut rng = Rng::new(0x005E_ED0F_B0D5);
    let mut failures = Vec::new();
    for _ in 0..3000 {
        survives(&bounded(&mut rng), &mut failures);
        survives(&type_range(&mut rng), &mut failures);
    }
    assert!(
        failures.is_empty(),
        "{} failures, first ones:\n{}",
        failures.len(),
        failures[..failures.len().min(10)].join("\n")
    );
}
