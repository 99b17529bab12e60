//! The agreement test: over a generated corpus of answers, an independent validator (the
//! `jsonschema` crate, JSON Schema 2020-12 with format assertions on) accepts an answer against the
//! derived `requestedSchema` exactly when the derived parser accepts it; and every typed value
//! survives `to_content` then `from_content` unchanged.
//!
//! Numbers follow DESIGN.md and DIGEST §6.1: `type: number` takes any JSON number, `type: integer`
//! takes any number without a fractional part (so `3.0` is the integer 3).
//!
//! The corpus stays away from three corners, each named where its candidates are listed:
//! two quirks of the validator's `email` check, and URIs that `url::Url` (a WHATWG parser) cannot
//! hold although RFC 3986 allows them (the schema language cannot express that restriction).

#![allow(clippy::panic, reason = "a test reports a failure by panicking, with the offending input")]

use elicit_test_support::spec;

use std::collections::{BTreeSet, HashSet};
use std::fmt::Debug;
use std::num::NonZeroU32;
use std::sync::Arc;

use chrono::{DateTime, Duration, FixedOffset, NaiveDate, SecondsFormat, TimeZone, Utc};
use elicit_runtime::content::check_format;
use elicit_runtime::schema::{MultiSelectSchema, NumberSchema, PrimitiveSchema, StringFormat, StringSchema};
use elicit_runtime::{Elicit, Email};
use serde_json::{Map, Number, Value, json};
use url::Url;

use elicit_test_support::formats::VALID_EMAILS;
use elicit_test_support::forms::{Cabin, Colour, Extra, Numbers, Optionals, Profile};
use elicit_test_support::rng::Rng;

// ---- format candidates: every list below, and the support crate's `VALID_EMAILS`, is judged the
// same way by both sides ----

// Kept out of the corpus, as quirks of jsonschema 0.61's `email` check:
// - `Ada <ada@example.com>`: it accepts a display name, which an RFC 5321 Mailbox does not have;
// - host labels with `--` in the 3rd and 4th positions (`ab--cd.com`): it applies the IDNA A-label
//   rules of the `hostname` format, which RFC 5321's Domain grammar does not.
const EMAILS_INVALID: &[&str] = &[
    "ada.example.com",
    "ada@",
    "@example.com",
    "a@@b.com",
    "ada@exa mple.com",
    "ada@example..com",
    "ada@-example.com",
    "ada@a-.com",
    "",
    " ada@example.com",
    "ada@example.com ",
    "é@example.com",
    "ada@exämple.com",
    "ada@ex_ample.com",
    "a..b@example.com",
    ".a@example.com",
    "ada@example.com.",
    "ada@[300.1.1.1]",
    "ada@[IPv6:nope]",
];

/// Absolute URIs that `url::Url` also holds. Generated `Url` values stay inside RFC 3986 too: the
/// WHATWG parser keeps `|`, `^`, `[`, `]` as they are in a path or query (`https://h/a|b`), so such
/// a `Url` writes content that neither side accepts as a `uri` (see `impl FieldValue for url::Url` in the
/// runtime).
const URIS_VALID: &[&str] = &[
    "https://example.com",
    "https://example.com/a?b=c#d",
    "urn:isbn:0451450523",
    "mailto:ada@example.com",
    "ftp://ftp.example.com/file.txt",
    "http://[::1]:8080/",
    "file:///etc/hosts",
    "a:b",
    "http://user@host/",
    "HTTP://EXAMPLE.COM",
    "http://%41.com/",
    "https://example.com/%20space",
    "data:text/plain,hello",
    "tel:+1-201-555-0123",
];

/// Valid RFC 3986 URIs that `url::Url` refuses (empty host of a special scheme, a port beyond
/// 65535, an IPvFuture literal): the schema accepts them, a `Url` field cannot hold them. They are
/// used only for `String` fields with `format = "uri"`.
const URIS_NOT_URL: &[&str] = &["http:", "http://", "http://example.com:99999/", "http://[v1.x]/"];

const URIS_INVALID: &[&str] = &[
    "/relative/path",
    "example.com",
    "//example.com/x",
    "http://exa mple.com",
    "",
    "ht tp://x",
    "http://example.com/%zz",
    "1http://x",
    "?q",
    "http://ex\\ample.com",
    "https://exämple.com/",
    "http://example.com/#a#b",
    "http://[::1/",
];

const DATES: &[&str] = &[
    "2026-07-28",
    "2024-02-29",
    "2000-02-29",
    "0001-01-01",
    "0000-01-01",
    "9999-12-31",
    "2023-02-29",
    "1900-02-29",
    "2026-13-01",
    "2026-00-10",
    "2026-7-28",
    "2026-07-28T00:00:00Z",
    "28/07/2026",
    "",
    "２０２６-01-01",
    "2026-07-28 ",
    "+2026-07-28",
];

const DATE_TIMES: &[&str] = &[
    "2026-07-28T09:30:00Z",
    "2026-07-28t09:30:00.123z",
    "2026-07-28T09:30:00+02:00",
    "2026-07-28T09:30:00.5-05:30",
    "2016-12-31T23:59:60Z",
    "2016-12-31T15:59:60-08:00",
    "2026-07-28T09:30:00",
    "2026-07-28 09:30:00Z",
    "2026-07-28T24:00:00Z",
    "2026-07-28T09:30Z",
    "2023-02-29T00:00:00Z",
    "2026-07-28T09:30:00+2:00",
    "2026-07-28T12:00:60Z",
    "2026-07-28T09:30:00.1234567890123Z",
    "2026-07-28T09:30:00+23:59",
    "2026-07-28T09:30:00-00:00",
    "0000-01-01T00:00:00Z",
    "2026-07-28T09:30:00+24:00",
    "2026-07-28T09:30:00ZZ",
    "2026-07-28TT09:30:00Z",
];

/// The fixed lists alone, format by format: the runtime's check and the validator agree on each.
#[test]
fn format_corners_agree() {
    let lists: [(StringFormat, Vec<&str>); 4] = [
        (StringFormat::Email, [VALID_EMAILS, EMAILS_INVALID].concat()),
        (StringFormat::Uri, [URIS_VALID, URIS_NOT_URL, URIS_INVALID].concat()),
        (StringFormat::Date, DATES.to_vec()),
        (StringFormat::DateTime, DATE_TIMES.to_vec()),
    ];
    for (format, inputs) in lists {
        let validator = spec::content_validator(&json!({"type": "string", "format": format.as_str()}));
        for input in inputs {
            let ours = check_format(input, format).is_ok();
            assert_eq!(ours, validator.is_valid(&json!(input)), "{format} {input:?}: runtime says {ours}");
        }
    }
    // The longest address the grammar allows (64-byte local part, 253-byte host name), and one
    // byte more.
    let longest =
        format!("{}@{}.{}.{}.{}", "l".repeat(64), "a".repeat(63), "b".repeat(63), "c".repeat(63), "d".repeat(61));
    let validator = spec::content_validator(&json!({"type": "string", "format": "email"}));
    for (input, ok) in [(longest.clone(), true), (format!("{longest}d"), false), (format!("l{longest}"), false)] {
        assert_eq!(check_format(&input, StringFormat::Email).is_ok(), ok, "{input}");
        assert_eq!(validator.is_valid(&json!(input)), ok, "{input}");
    }
    for valid in VALID_EMAILS {
        assert!(check_format(valid, StringFormat::Email).is_ok(), "{valid}");
    }
    for uri in URIS_VALID {
        assert!(Url::parse(uri).is_ok(), "{uri}");
    }
    for uri in URIS_NOT_URL {
        assert!(check_format(uri, StringFormat::Uri).is_ok() && Url::parse(uri).is_err(), "{uri}");
    }
}

// ---- random values ----

/// Characters for random text: ASCII, JSON escapes, combining marks, astral-plane emoji.
const CHARS: &[char] =
    &['a', 'b', 'Z', '0', ' ', '"', '\\', '\n', '\u{0}', 'é', '日', '😀', '\u{301}', '\u{FEFF}', '-', '.'];

fn text(rng: &mut Rng, min: u64, max: u64) -> String {
    let len = rng.range(min as i64, max as i64);
    (0..len).map(|_| *rng.pick(CHARS)).collect()
}

fn label(rng: &mut Rng) -> String {
    const ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let len = rng.range(1, 8) as usize;
    let mut out: String = (0..len).map(|_| char::from(*rng.pick(ALNUM))).collect();
    // One inner hyphen at most, never in the 3rd-4th positions as `--` (see EMAILS_INVALID).
    if len >= 3 && rng.one_in(3) {
        out.replace_range(1..2, "-");
    }
    out
}

fn email(rng: &mut Rng) -> String {
    if rng.one_in(2) {
        return (*rng.pick(VALID_EMAILS)).to_owned();
    }
    let mut local = label(rng).replace('-', "_");
    if rng.one_in(3) {
        local = format!("{local}.{}", label(rng).replace('-', "+"));
    }
    let domain: Vec<String> = (0..rng.range(1, 3)).map(|_| label(rng)).collect();
    format!("{local}@{}", domain.join("."))
}

fn uri(rng: &mut Rng, url_only: bool) -> String {
    if !url_only && rng.one_in(5) {
        return (*rng.pick(URIS_NOT_URL)).to_owned();
    }
    if rng.one_in(2) {
        return (*rng.pick(URIS_VALID)).to_owned();
    }
    format!("https://{}.example/{}?q={}", label(rng), label(rng), label(rng))
}

fn date(rng: &mut Rng) -> NaiveDate {
    // 0001-01-01 ..= 9999-12-31
    NaiveDate::from_num_days_from_ce_opt(rng.range(1, 3_652_059) as i32).expect("in chrono's range")
}

fn date_time(rng: &mut Rng) -> DateTime<Utc> {
    // Years 0002 ..= 9998, so that any offset keeps the local year within four digits.
    let seconds = rng.range(-62_104_060_800, 253_370_764_800);
    let nanos = match rng.below(3) {
        0 => 0,
        1 => rng.below(1000) as u32 * 1_000_000,
        _ => rng.below(1_000_000_000) as u32,
    };
    Utc.timestamp_opt(seconds, nanos).single().expect("in chrono's range")
}

fn date_time_text(rng: &mut Rng) -> String {
    let offset = FixedOffset::east_opt(rng.range(-86_399, 86_399) as i32 / 60 * 60).expect("within a day");
    let at = date_time(rng).with_timezone(&offset);
    let format = *rng.pick(&[SecondsFormat::Secs, SecondsFormat::Millis, SecondsFormat::Nanos, SecondsFormat::AutoSi]);
    at.to_rfc3339_opts(format, rng.one_in(2))
}

fn colours(rng: &mut Rng, min: i64, max: i64) -> Vec<Colour> {
    (0..rng.range(min, max)).map(|_| *rng.pick(&[Colour::Red, Colour::Green, Colour::Blue])).collect()
}

fn extras(rng: &mut Rng) -> BTreeSet<Extra> {
    [Extra::Legroom, Extra::Meal, Extra::Lounge].into_iter().filter(|_| rng.one_in(2)).collect()
}

fn cabin(rng: &mut Rng) -> Cabin {
    *rng.pick(&[Cabin::Economy, Cabin::PremiumEconomy, Cabin::Business])
}

fn maybe<T>(rng: &mut Rng, make: impl FnOnce(&mut Rng) -> T) -> Option<T> {
    if rng.one_in(2) { Some(make(rng)) } else { None }
}

/// Any finite f64, with the interesting ones over-represented.
fn any_f64(rng: &mut Rng) -> f64 {
    match rng.below(4) {
        0 => *rng.pick(&[0.0, -0.0, f64::MAX, f64::MIN, f64::MIN_POSITIVE, 5e-324, 1e308, -1e308, 0.1]),
        1 => rng.range(-1000, 1000) as f64,
        _ => loop {
            let f = f64::from_bits(rng.next_u64());
            if f.is_finite() {
                break f;
            }
        },
    }
}

fn any_f32(rng: &mut Rng) -> f32 {
    match rng.below(4) {
        0 => *rng.pick(&[0.0, -0.0, f32::MAX, f32::MIN, f32::MIN_POSITIVE, 1e-45, 0.1]),
        1 => rng.range(-1000, 1000) as f32,
        _ => loop {
            let f = f32::from_bits(rng.next_u64() as u32);
            if f.is_finite() {
                break f;
            }
        },
    }
}

/// A random integer of a type, with both ends over-represented.
macro_rules! any_int {
    ($rng:expr, $ty:ty) => {{
        let rng: &mut Rng = $rng;
        match rng.below(6) {
            0 => <$ty>::MIN,
            1 => <$ty>::MAX,
            2 => rng.range(-3, 3).clamp(<$ty>::MIN as i64, <$ty>::MAX.min(3) as i64) as $ty,
            _ => rng.next_u64() as $ty,
        }
    }};
}

/// A 128-bit integer that JSON (without arbitrary precision) holds exactly: one that fits `i64` or
/// `u64`, or a 53-bit mantissa shifted left. Others reach the wire as rounded floats: a limit of
/// JSON numbers in serde_json, not of the runtime, so the corpus does not generate them.
fn wide_int(rng: &mut Rng, signed: bool) -> i128 {
    let magnitude: i128 = match rng.below(3) {
        0 if signed => i128::from(rng.next_u64() >> 1),
        0 => i128::from(rng.next_u64()),
        // Up to 64 bits: past them a JSON number arrives rounded, and the parser refuses it.
        1 => i128::from(rng.next_u64() >> 11) << rng.below(if signed { 10 } else { 11 }),
        _ => i128::from(rng.below(1000)),
    };
    if signed && rng.one_in(2) { -magnitude } else { magnitude }
}

/// A type in the corpus.
/// A newtype field type, through `#[elicit(transparent)]`.
#[derive(Elicit, Debug, PartialEq)]
#[elicit(transparent)]
struct Seats(u8);

/// The reason [`even`] gives: a check the schema cannot state.
const EVEN: &str = "must have an even number of characters";

#[allow(clippy::borrowed_box, reason = "a validator takes `&T` for the field's type `T`")]
fn even(code: &Box<str>) -> Result<(), &'static str> {
    if code.chars().count().is_multiple_of(2) { Ok(()) } else { Err(EVEN) }
}

/// A group of fields flattened into [`Extended`].
#[derive(Elicit, Debug, PartialEq)]
struct Stay {
    #[elicit(minimum = 1, maximum = 30)]
    nights: u8,
    #[elicit(max_length = 20)]
    hotel: Option<String>,
}

/// Field types of one's own, a validated field and a flattened form.
#[derive(Elicit, Debug, PartialEq)]
struct Extended {
    #[elicit(flatten)]
    stay: Stay,
    #[elicit(maximum = 40)]
    seats: Seats,
    team: NonZeroU32,
    #[elicit(min_length = 1, max_length = 12, validate = even)]
    code: Box<str>,
    label: Option<Arc<str>>,
}

impl Subject for Extended {
    fn generate(rng: &mut Rng) -> Self {
        Extended {
            stay: Stay { nights: rng.range(1, 30) as u8, hotel: maybe(rng, |rng| text(rng, 0, 20)) },
            seats: Seats(rng.range(0, 40) as u8),
            team: NonZeroU32::new(rng.range(1, 100_000) as u32).expect("at least 1"),
            code: {
                let mut code = text(rng, 2, 12);
                if !code.chars().count().is_multiple_of(2) {
                    code.push('z');
                }
                code.into()
            },
            label: maybe(rng, |rng| Arc::from(text(rng, 0, 20))),
        }
    }
}

trait Subject: Elicit + Debug + PartialEq {
    /// Properties backed by `url::Url`, which must not be offered URIS_NOT_URL.
    const URL_FIELDS: &'static [&'static str] = &[];

    fn generate(rng: &mut Rng) -> Self;
}

impl Subject for Profile {
    const URL_FIELDS: &'static [&'static str] = &["website"];

    fn generate(rng: &mut Rng) -> Self {
        Profile {
            full_name: text(rng, 2, 40),
            contact_email: email(rng),
            home_page: uri(rng, false),
            birthday: date(rng).format("%Y-%m-%d").to_string(),
            last_seen: date_time_text(rng),
            work_email: email(rng).parse().expect("generated e-mails are valid"),
            start_date: date(rng),
            updated_at: date_time(rng),
            website: Url::parse(&uri(rng, true)).expect("generated URLs are valid"),
            subscribed: rng.one_in(2),
            level: any_int!(rng, u8),
            offset: rng.range(-10, 10) as i32,
            ratio: 0.5 + rng.unit() * 99.0,
            nickname: maybe(rng, |rng| text(rng, 0, 30)),
            age: maybe(rng, |rng| any_int!(rng, u16)),
            colour: *rng.pick(&[Colour::Red, Colour::Green, Colour::Blue]),
            cabin: cabin(rng),
            colours: colours(rng, 1, 3),
            extras: extras(rng),
            r#type: maybe(rng, cabin),
        }
    }
}

impl Subject for Optionals {
    const URL_FIELDS: &'static [&'static str] = &["site"];

    fn generate(rng: &mut Rng) -> Self {
        Optionals {
            short: maybe(rng, |rng| text(rng, 1, 5)),
            email: maybe(rng, |rng| email(rng).parse::<Email>().expect("generated e-mails are valid")),
            link: maybe(rng, |rng| uri(rng, false)),
            day: maybe(rng, date),
            moment: maybe(rng, date_time),
            site: maybe(rng, |rng| Url::parse(&uri(rng, true)).expect("generated URLs are valid")),
            flag: maybe(rng, |rng| rng.one_in(2)),
            small: maybe(rng, |rng| any_int!(rng, i8)),
            big: maybe(rng, |rng| any_int!(rng, u64)),
            wide: maybe(rng, |rng| any_int!(rng, i64)),
            single: maybe(rng, any_f32),
            double: maybe(rng, |rng| if rng.one_in(4) { -1.5 } else { -1.5 + rng.unit() * 1e6 }),
            colour: maybe(rng, |rng| *rng.pick(&[Colour::Red, Colour::Green, Colour::Blue])),
            colours: maybe(rng, |rng| colours(rng, 0, 2)),
            extras: maybe(rng, extras).filter(|set| !set.is_empty()),
        }
    }
}

impl Subject for Numbers {
    fn generate(rng: &mut Rng) -> Self {
        Numbers {
            a_i8: any_int!(rng, i8),
            a_u8: any_int!(rng, u8),
            a_i16: any_int!(rng, i16),
            a_u16: any_int!(rng, u16),
            a_i32: any_int!(rng, i32),
            a_u32: any_int!(rng, u32),
            a_i64: any_int!(rng, i64),
            a_u64: any_int!(rng, u64),
            a_i128: wide_int(rng, true),
            a_u128: wide_int(rng, false) as u128,
            a_isize: any_int!(rng, isize),
            a_usize: any_int!(rng, usize),
            a_f32: any_f32(rng),
            a_f64: any_f64(rng),
            narrow_i64: rng.range(-9_007_199_254_740_993, 9_007_199_254_740_993),
            unit: if rng.one_in(8) { 1.0 } else { rng.unit() },
            set: colours(rng, 1, 2).into_iter().collect::<HashSet<_>>(),
        }
    }
}

// ---- mutations, driven by the schema ----

/// A value of the wrong JSON type for most properties.
fn junk(rng: &mut Rng) -> Value {
    match rng.below(9) {
        0 => Value::Null,
        1 => json!(rng.one_in(2)),
        2 => json!(rng.range(-5, 300)),
        3 => json!(2.5),
        4 => json!("3"),
        5 => json!([]),
        6 => json!({}),
        7 => json!(["red"]),
        _ => json!({"const": "red"}),
    }
}

/// An array or object nested 1 to 64 deep, built without recursion.
fn nested(rng: &mut Rng) -> Value {
    let depth = rng.range(1, 64);
    let mut value = junk(rng);
    for level in 0..depth {
        value = if level % 3 == 0 { json!({"k": value}) } else { Value::Array(vec![value]) };
    }
    value
}

fn int_value(i: i128) -> Value {
    if let Ok(i) = i64::try_from(i) {
        json!(i)
    } else if let Ok(u) = u64::try_from(i) {
        json!(u)
    } else {
        json!(i as f64)
    }
}

/// A bound as an exact integer when it is one, else as an f64.
enum Limit {
    Int(i128),
    Float(f64),
}

fn limit(n: &Number) -> Limit {
    match (n.as_i64(), n.as_u64()) {
        (Some(i), _) => Limit::Int(i128::from(i)),
        (_, Some(u)) => Limit::Int(i128::from(u)),
        _ => Limit::Float(n.as_f64().unwrap_or(0.0)),
    }
}

/// The number just past a bound: one integer beyond, or the next f64.
fn past(bound: &Number, up: bool) -> Value {
    match limit(bound) {
        Limit::Int(i) => int_value(if up { i + 1 } else { i - 1 }),
        Limit::Float(f) => json!(if up { f.next_up() } else { f.next_down() }),
    }
}

fn number(rng: &mut Rng, schema: &NumberSchema) -> Value {
    const EXTREMES: &[f64] = &[
        1e308,
        -1e308,
        1.8446744073709552e19,
        9.223372036854776e18,
        -9.223372036854776e18,
        1e-300,
        -0.0,
        1.7014118346046923e38,
        -1.7014118346046923e38,
        1.7e38,
        3.4028235e38,
        9007199254740992.0,
        2.5,
        -2.5,
    ];
    let (lo, hi) = (schema.minimum.as_ref(), schema.maximum.as_ref());
    let lo_f = lo.and_then(Number::as_f64).unwrap_or(-1e6).max(-1e15);
    let hi_f = hi.and_then(Number::as_f64).unwrap_or(1e6).min(1e15);
    let inside = lo_f + (hi_f - lo_f) * rng.unit();
    match rng.below(16) {
        0 => lo.map_or(json!(0), |n| Value::Number(n.clone())),
        1 => hi.map_or(json!(0), |n| Value::Number(n.clone())),
        2 => lo.map_or(json!(-1e300), |n| past(n, false)),
        3 => hi.map_or(json!(1e300), |n| past(n, true)),
        4 => json!(*rng.pick(EXTREMES)),
        5 => json!(*rng.pick(&[u64::MAX, i64::MAX as u64, 9_007_199_254_740_993])),
        6 => json!(*rng.pick(&[i64::MIN, -9_007_199_254_740_993, -1])),
        // A fractional number inside the range.
        7 => json!(inside.floor() + 0.5),
        // An integral number written as a float (`3.0`).
        8 => json!(inside.round()),
        _ if schema.integer => int_value(inside.round() as i128),
        _ => json!(inside),
    }
}

/// A string around the length bounds, with multi-byte characters.
fn string_around(rng: &mut Rng, schema: &StringSchema) -> String {
    let min = schema.min_length.unwrap_or(0);
    let max = schema.max_length.unwrap_or(min + 30);
    let len = match rng.below(5) {
        0 => min.saturating_sub(1),
        1 => min,
        2 => max,
        3 => max + 1,
        _ => rng.range(0, max as i64 + 2) as u64,
    };
    text(rng, len, len)
}

fn formatted(rng: &mut Rng, format: StringFormat, url_only: bool, max_length: Option<u64>) -> String {
    match format {
        StringFormat::Email => match rng.below(3) {
            0 => email(rng),
            1 => (*rng.pick(EMAILS_INVALID)).to_owned(),
            _ => {
                // A valid address, broken or not by one edit.
                let mut text = email(rng);
                match rng.below(4) {
                    0 => text = text.replacen('@', "", 1),
                    1 => text.insert(rng.below(text.len() as u64) as usize, ' '),
                    2 => text.push('.'),
                    _ => {}
                }
                text
            }
        },
        StringFormat::Uri => match rng.below(4) {
            0 => uri(rng, url_only),
            1 => (*rng.pick(URIS_INVALID)).to_owned(),
            2 => match max_length {
                // Around the length bound.
                Some(max) => {
                    format!("https://example.com/{}", "a".repeat(rng.range(max as i64 - 22, max as i64 - 18) as usize))
                }
                None => uri(rng, url_only),
            },
            _ => format!("{}:{}", label(rng), label(rng)),
        },
        StringFormat::Date => match rng.below(3) {
            0 => date(rng).format("%Y-%m-%d").to_string(),
            1 => (*rng.pick(DATES)).to_owned(),
            _ => {
                let (y, m, d) = (rng.range(0, 9999), rng.range(0, 13), rng.range(0, 32));
                if rng.one_in(8) { format!("{y}-{m}-{d}") } else { format!("{y:04}-{m:02}-{d:02}") }
            }
        },
        StringFormat::DateTime => match rng.below(3) {
            0 => date_time_text(rng),
            1 => (*rng.pick(DATE_TIMES)).to_owned(),
            _ => {
                let date = formatted(rng, StringFormat::Date, url_only, None);
                let sep = *rng.pick(&["T", "t", " "]);
                let (h, mi, s) = (rng.range(0, 24), rng.range(0, 60), rng.range(57, 60));
                let fraction = if rng.one_in(2) { format!(".{}", rng.below(1_000_000)) } else { String::new() };
                let offset = match rng.below(6) {
                    0 => "Z".to_owned(),
                    1 => String::new(),
                    2 => format!("+{:02}:{:02}", rng.range(0, 24), rng.range(0, 60)),
                    3 => format!("-{:02}:{:02}", rng.range(0, 23), rng.range(0, 59)),
                    4 => format!("+{}:00", rng.range(0, 9)),
                    _ => "z".to_owned(),
                };
                format!("{date}{sep}{h:02}:{mi:02}:{s:02}{fraction}{offset}")
            }
        },
    }
}

fn multi(rng: &mut Rng, schema: &MultiSelectSchema) -> Value {
    let len = rng.range(0, schema.max_items.unwrap_or(3) as i64 + 2);
    let items = (0..len)
        .map(|_| {
            if rng.one_in(7) {
                match rng.below(5) {
                    0 => json!("nope"),
                    1 => json!(""),
                    2 => Value::Null,
                    3 => json!(["red"]),
                    _ => json!(1),
                }
            } else {
                json!(rng.pick(&schema.options).value)
            }
        })
        .collect();
    Value::Array(items)
}

fn value_for(rng: &mut Rng, schema: &PrimitiveSchema, url_only: bool) -> Value {
    match schema {
        PrimitiveSchema::String(s) => match s.format {
            Some(format) if !rng.one_in(5) => json!(formatted(rng, format, url_only, s.max_length)),
            _ => json!(string_around(rng, s)),
        },
        PrimitiveSchema::Number(n) => number(rng, n),
        PrimitiveSchema::Boolean(_) => match rng.below(4) {
            0 => json!("true"),
            1 => json!(1),
            _ => json!(rng.one_in(2)),
        },
        PrimitiveSchema::SingleSelect(s) => {
            if rng.one_in(3) {
                let option = &rng.pick(&s.options).value;
                json!(*rng.pick(&["", "RED", "Economy", "unknown", &format!("{option} "), &option.to_uppercase()]))
            } else {
                json!(rng.pick(&s.options).value)
            }
        }
        PrimitiveSchema::MultiSelect(m) => multi(rng, m),
    }
}

fn mutate<T: Subject>(rng: &mut Rng, content: &mut Map<String, Value>) {
    let properties = &T::requested_schema().properties;
    if rng.one_in(10) {
        let key = format!("extra{}", rng.below(5));
        let value = if rng.one_in(2) { nested(rng) } else { junk(rng) };
        content.insert(key, value);
        return;
    }
    let property = rng.pick(properties);
    let name = property.name.to_string();
    let value = match rng.below(20) {
        0 | 1 => {
            content.shift_remove(&name);
            return;
        }
        2 | 3 => junk(rng),
        4 => Value::Null,
        5 => nested(rng),
        _ => value_for(rng, &property.schema, T::URL_FIELDS.contains(&&*name)),
    };
    content.insert(name, value);
}

// ---- the test ----

#[derive(Default)]
struct Tally {
    accepted: usize,
    rejected: usize,
    /// Accepted by the parser, refused by the schema only because an integer lies past
    /// `±(2^53 - 1)`, where integer schemas are clamped.
    clamped: usize,
    /// Accepted by the schema, refused only by a validator (a check the schema cannot state).
    validated: usize,
    disagreements: Vec<String>,
}

/// The interoperable integer range integer schemas are clamped to.
const SAFE: i64 = (1 << 53) - 1;

/// `content` with every integer property past `±(2^53 - 1)` moved onto that bound, if any was:
/// the answer the clamped schema judges as the parser judges the original.
fn onto_the_clamp<T: Elicit>(content: &Map<String, Value>) -> Option<Map<String, Value>> {
    let mut moved = content.clone();
    let mut any = false;
    for property in &T::requested_schema().properties {
        let PrimitiveSchema::Number(NumberSchema { integer: true, .. }) = &property.schema else { continue };
        let Some(Value::Number(n)) = moved.get(property.name.as_ref()) else { continue };
        let f = n.as_f64().unwrap_or(0.0);
        let past = n.as_i64().map_or(f.abs() > SAFE as f64, |i| i.unsigned_abs() > SAFE.unsigned_abs());
        if past && f.fract() == 0.0 {
            moved.insert(property.name.to_string(), json!(if f > 0.0 { SAFE } else { -SAFE }));
            any = true;
        }
    }
    any.then_some(moved)
}

fn check<T: Subject>(validator: &jsonschema::Validator, content: &Map<String, Value>, tally: &mut Tally) {
    let value = Value::Object(content.clone());
    let schema_says = validator.is_valid(&value);
    let parsed = T::from_content(content);
    match (schema_says, &parsed) {
        (true, Ok(_)) => tally.accepted += 1,
        (false, Err(_)) => tally.rejected += 1,
        // The schema is narrower than the parser only at the clamp: on the clamp, it agrees.
        // A validator is a check beyond the schema: it may refuse what the schema accepts, and
        // nothing else may.
        (true, Err(errors)) if errors.iter().all(|e| e.reason == EVEN) => tally.validated += 1,
        (false, Ok(_)) if onto_the_clamp::<T>(content).is_some_and(|c| validator.is_valid(&Value::Object(c))) => {
            tally.clamped += 1;
        }
        _ => {
            let validator_errors: Vec<String> = validator.iter_errors(&value).map(|e| e.to_string()).collect();
            let mut shown = value.to_string();
            shown.truncate(600);
            tally.disagreements.push(format!(
                "{}: validator {} ({validator_errors:?}), parser {:?}\n  {shown}",
                std::any::type_name::<T>(),
                if schema_says { "accepts" } else { "rejects" },
                parsed.as_ref().map(|_| "accepts").map_err(ToString::to_string),
            ));
        }
    }
}

fn run<T: Subject>(rng: &mut Rng, values: usize, tally: &mut Tally) {
    let validator = spec::content_validator(&T::requested_schema().to_json());
    for _ in 0..values {
        let value = T::generate(rng);
        let content = value.to_content();
        assert_eq!(T::from_content(&content).as_ref(), Ok(&value), "round trip of {content:?}");
        check::<T>(&validator, &content, tally);
        // Two mutated variants of each answer: one to three edits each.
        for _ in 0..2 {
            let mut mutated = content.clone();
            for _ in 0..rng.range(1, 3) {
                mutate::<T>(rng, &mut mutated);
            }
            check::<T>(&validator, &mutated, tally);
        }
    }
}

#[test]
fn schema_accepts_exactly_what_the_parser_accepts() {
    let mut rng = Rng::new(0x2026_0728);
    let mut tally = Tally::default();
    run::<Profile>(&mut rng, 2000, &mut tally);
    run::<Optionals>(&mut rng, 1500, &mut tally);
    run::<Numbers>(&mut rng, 1000, &mut tally);
    run::<Extended>(&mut rng, 1000, &mut tally);
    let total = tally.accepted + tally.rejected + tally.clamped + tally.validated + tally.disagreements.len();
    println!(
        "agreement corpus: {total} objects, {} accepted by both, {} rejected by both, {} past the integer clamp, {} refused by a validator alone, {} disagreements",
        tally.accepted,
        tally.rejected,
        tally.clamped,
        tally.validated,
        tally.disagreements.len()
    );
    assert!(
        tally.disagreements.is_empty(),
        "{} disagreements, first ones:\n{}",
        tally.disagreements.len(),
        tally.disagreements.iter().take(15).cloned().collect::<Vec<_>>().join("\n")
    );
    assert!(total >= 10_000, "corpus too small: {total}");
    assert!(tally.accepted >= 3_000 && tally.rejected >= 3_000, "corpus unbalanced");
    assert!(tally.validated > 0, "the corpus never reached the validator with an answer the schema accepts");
}

/// A few answers pinned by hand, so a reader sees the rules the corpus exercises.
#[test]
fn pinned_answers() {
    let validator = spec::content_validator(&Numbers::requested_schema().to_json());
    let base = Numbers::generate(&mut Rng::new(1)).to_content();
    // A base both sides accept: its wide integers on the clamp.
    let base = onto_the_clamp::<Numbers>(&base).unwrap_or(base);
    // (field, answer, parser accepts, clamped schema accepts)
    let cases: &[(&str, Value, bool, bool)] = &[
        ("a_u8", json!(3.0), true, true),
        ("a_u8", json!(3.5), false, false),
        ("a_u8", json!(256), false, false),
        ("a_u8", json!(-0.0), true, true),
        ("a_u64", json!(u64::MAX), true, false),
        ("a_u64", json!(1.8446744073709552e19), false, false),
        // -2^63 as a float may be the rounding of an integer past 64 bits: refused.
        ("a_i64", json!(-9.223372036854776e18), false, false),
        ("a_i64", json!(i64::MIN), true, false),
        // Past 2^64 a JSON integer arrives rounded: refused, never taken rounded.
        ("a_i128", json!(1.7e38), false, false),
        ("a_i128", json!(1.8446744073709552e19), false, false),
        ("a_i128", json!(-9.223372036854778e18), false, false),
        ("a_i128", json!(18_446_744_073_709_551_615_u64), true, false),
        ("a_i128", json!(1.7014118346046923e38), false, false),
        ("a_u128", json!(-1), false, false),
        // An f32's bounds are stated at its own precision: the largest f32, written shortest.
        ("a_f32", json!(3.4028235e38), true, true),
        ("a_f32", json!(3.4028236e38), false, false),
        ("a_f64", json!(1e308), true, true),
        ("narrow_i64", json!(9_007_199_254_740_993_i64), true, false),
        ("narrow_i64", json!(9_007_199_254_740_994_i64), false, false),
        ("unit", json!(1), true, true),
        ("unit", json!(1.0000000000000002), false, false),
        ("set", json!(["red", "red"]), true, true),
        ("set", json!([]), false, false),
    ];
    for (field, value, ok, schema_ok) in cases {
        let mut content = base.clone();
        content.insert((*field).to_owned(), value.clone());
        let parsed = Numbers::from_content(&content);
        assert_eq!(parsed.is_ok(), *ok, "{field} = {value}: {parsed:?}");
        assert_eq!(validator.is_valid(&Value::Object(content)), *schema_ok, "validator, {field} = {value}");
    }
}

/// `DateTime` keeps fractional seconds and converts offsets; the corpus relies on both.
#[test]
fn typed_dates_normalise_offsets() {
    let content = json!({"moment": "2026-07-28T09:30:00.250+02:00"});
    let parsed = Optionals::from_content(content.as_object().expect("object")).expect("valid");
    let expected = Utc.with_ymd_and_hms(2026, 7, 28, 7, 30, 0).single().expect("valid") + Duration::milliseconds(250);
    assert_eq!(parsed.moment, Some(expected));
    assert_eq!(parsed.to_content()["moment"], json!("2026-07-28T07:30:00.250Z"));
}
