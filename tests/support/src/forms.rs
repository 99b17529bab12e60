//! Representative form types: together they use every schema kind and every attribute. The tests'
//! golden schemas, the agreement and robustness tests, and the fuzz targets use these; the
//! benchmarks keep their `Booking`, whose `serde` + `schemars` twin is what they measure against.
//!
//! A field's doc comment becomes its form's description, so fields and variants carry one only where
//! the schema should show it.

use std::collections::BTreeSet;

use chrono::{DateTime, NaiveDate, Utc};
use elicit_runtime::{Elicit, Email};
use url::Url;

/// Tell us about yourself
///
/// Everything is kept private.
#[derive(Elicit, Debug, Clone, PartialEq)]
#[elicit(rename_all = "camelCase")]
pub struct Profile {
    /// Your full name,
    /// as on your passport
    #[elicit(title = "Name", min_length = 2, max_length = 40, default = "Ada")]
    pub full_name: String,
    #[elicit(format = "email", description = "Where we write to")]
    pub contact_email: String,
    #[elicit(format = "uri", max_length = 200)]
    pub home_page: String,
    #[elicit(format = "date")]
    pub birthday: String,
    #[elicit(format = "date-time", rename = "seen_at")]
    pub last_seen: String,
    #[elicit(title = "Work e-mail")]
    pub work_email: Email,
    pub start_date: NaiveDate,
    pub updated_at: DateTime<Utc>,
    pub website: Url,
    /// Send me the newsletter
    #[elicit(default = true)]
    pub subscribed: bool,
    pub level: u8,
    #[elicit(minimum = -10, maximum = 10, default = 0)]
    pub offset: i32,
    #[elicit(minimum = 0.5, maximum = 99.5, default = 1.5)]
    pub ratio: f64,
    pub nickname: Option<String>,
    pub age: Option<u16>,
    pub colour: Colour,
    #[elicit(title = "Cabin class", default = "business")]
    pub cabin: Cabin,
    #[elicit(min_items = 1, max_items = 3, default = ["red"])]
    pub colours: Vec<Colour>,
    #[elicit(title = "Extras")]
    pub extras: BTreeSet<Extra>,
    pub r#type: Option<Cabin>,
}

/// An untitled single-select: plain `enum`.
#[derive(Elicit, Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[elicit(rename_all = "lowercase")]
pub enum Colour {
    Red,
    Green,
    #[elicit(rename = "deep-blue")]
    Blue,
}

/// A titled single-select: `oneOf` with `const`/`title`.
#[derive(Elicit, Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[elicit(rename_all = "snake_case")]
pub enum Cabin {
    #[elicit(title = "Economy")]
    Economy,
    #[elicit(title = "Premium economy")]
    PremiumEconomy,
    #[elicit(title = "Business class")]
    Business,
}

/// Titled through one variant only: the whole select is titled and untitled variants show their
/// value.
#[derive(Elicit, Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Extra {
    #[elicit(title = "Extra legroom")]
    Legroom,
    Meal,
    #[elicit(title = "Lounge access")]
    Lounge,
}

/// A form with one field.
#[derive(Elicit, Debug, Clone, PartialEq)]
pub struct Confirm {
    pub ok: bool,
}

/// Optional fields of every kind, and the integer and float types at their extremes.
#[derive(Elicit, Debug, Clone, PartialEq)]
#[elicit(message = "Optional extras")]
pub struct Optionals {
    #[elicit(min_length = 1, max_length = 5)]
    pub short: Option<String>,
    pub email: Option<Email>,
    #[elicit(format = "uri")]
    pub link: Option<String>,
    pub day: Option<NaiveDate>,
    pub moment: Option<DateTime<Utc>>,
    pub site: Option<Url>,
    pub flag: Option<bool>,
    pub small: Option<i8>,
    pub big: Option<u64>,
    pub wide: Option<i64>,
    pub single: Option<f32>,
    #[elicit(minimum = -1.5)]
    pub double: Option<f64>,
    pub colour: Option<Colour>,
    #[elicit(max_items = 2)]
    pub colours: Option<Vec<Colour>>,
    #[elicit(min_items = 1)]
    pub extras: Option<BTreeSet<Extra>>,
}

/// Every integer type at its natural range, both float types, and a `HashSet` multi-select.
#[derive(Elicit, Debug, Clone, PartialEq)]
pub struct Numbers {
    pub a_i8: i8,
    pub a_u8: u8,
    pub a_i16: i16,
    pub a_u16: u16,
    pub a_i32: i32,
    pub a_u32: u32,
    pub a_i64: i64,
    pub a_u64: u64,
    pub a_i128: i128,
    pub a_u128: u128,
    pub a_isize: isize,
    pub a_usize: usize,
    pub a_f32: f32,
    pub a_f64: f64,
    #[elicit(minimum = -9007199254740993, maximum = 9007199254740993)]
    pub narrow_i64: i64,
    #[elicit(minimum = 0, maximum = 1)]
    pub unit: f64,
    #[elicit(min_items = 1, max_items = 2)]
    pub set: std::collections::HashSet<Colour>,
}
