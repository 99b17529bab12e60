//! Representative form types: together they use every schema kind and every attribute.

use std::collections::BTreeSet;

use chrono::{DateTime, NaiveDate, Utc};
use elicit_runtime::{Elicit, Email};
use url::Url;

/// Tell us about yourself
///
/// Everything is kept private.
#[derive(Elicit, Debug, Clone, PartialEq)]
#[elicit(rename_all = "camelCase")]
pub(crate) struct Profile {
    /// Your full name,
    /// as on your passport
    #[elicit(title = "Name", min_length = 2, max_length = 40, default = "Ada")]
    pub(crate) full_name: String,
    #[elicit(format = "email", description = "Where we write to")]
    pub(crate) contact_email: String,
    #[elicit(format = "uri", max_length = 200)]
    pub(crate) home_page: String,
    #[elicit(format = "date")]
    pub(crate) birthday: String,
    #[elicit(format = "date-time", rename = "seen_at")]
    pub(crate) last_seen: String,
    #[elicit(title = "Work e-mail")]
    pub(crate) work_email: Email,
    pub(crate) start_date: NaiveDate,
    pub(crate) updated_at: DateTime<Utc>,
    pub(crate) website: Url,
    /// Send me the newsletter
    #[elicit(default = true)]
    pub(crate) subscribed: bool,
    pub(crate) level: u8,
    #[elicit(minimum = -10, maximum = 10, default = 0)]
    pub(crate) offset: i32,
    #[elicit(minimum = 0.5, maximum = 99.5, default = 1.5)]
    pub(crate) ratio: f64,
    pub(crate) nickname: Option<String>,
    pub(crate) age: Option<u16>,
    pub(crate) colour: Colour,
    #[elicit(title = "Cabin class", default = "business")]
    pub(crate) cabin: Cabin,
    #[elicit(min_items = 1, max_items = 3, default = ["red"])]
    pub(crate) colours: Vec<Colour>,
    #[elicit(title = "Extras")]
    pub(crate) extras: BTreeSet<Extra>,
    pub(crate) r#type: Option<Cabin>,
}

/// An untitled single-select: plain `enum`.
#[derive(Elicit, Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[elicit(rename_all = "lowercase")]
pub(crate) enum Colour {
    Red,
    Green,
    #[elicit(rename = "deep-blue")]
    Blue,
}

/// A titled single-select: `oneOf` with `const`/`title`.
#[derive(Elicit, Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[elicit(rename_all = "snake_case")]
pub(crate) enum Cabin {
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
pub(crate) enum Extra {
    #[elicit(title = "Extra legroom")]
    Legroom,
    Meal,
    #[elicit(title = "Lounge access")]
    Lounge,
}

/// A form with one field.
#[derive(Elicit, Debug, Clone, PartialEq)]
pub(crate) struct Confirm {
    pub(crate) ok: bool,
}

/// Optional fields of every kind, and the integer and float types at their extremes.
#[derive(Elicit, Debug, Clone, PartialEq)]
#[elicit(message = "Optional extras")]
pub(crate) struct Optionals {
    #[elicit(min_length = 1, max_length = 5)]
    pub(crate) short: Option<String>,
    pub(crate) email: Option<Email>,
    #[elicit(format = "uri")]
    pub(crate) link: Option<String>,
    pub(crate) day: Option<NaiveDate>,
    pub(crate) moment: Option<DateTime<Utc>>,
    pub(crate) site: Option<Url>,
    pub(crate) flag: Option<bool>,
    pub(crate) small: Option<i8>,
    pub(crate) big: Option<u64>,
    pub(crate) wide: Option<i64>,
    pub(crate) single: Option<f32>,
    #[elicit(minimum = -1.5)]
    pub(crate) double: Option<f64>,
    pub(crate) colour: Option<Colour>,
    #[elicit(max_items = 2)]
    pub(crate) colours: Option<Vec<Colour>>,
    #[elicit(min_items = 1)]
    pub(crate) extras: Option<BTreeSet<Extra>>,
}

/// Every integer type at its natural range, both float types, and a `HashSet` multi-select.
#[derive(Elicit, Debug, Clone, PartialEq)]
pub(crate) struct Numbers {
    pub(crate) a_i8: i8,
    pub(crate) a_u8: u8,
    pub(crate) a_i16: i16,
    pub(crate) a_u16: u16,
    pub(crate) a_i32: i32,
    pub(crate) a_u32: u32,
    pub(crate) a_i64: i64,
    pub(crate) a_u64: u64,
    pub(crate) a_i128: i128,
    pub(crate) a_u128: u128,
    pub(crate) a_isize: isize,
    pub(crate) a_usize: usize,
    pub(crate) a_f32: f32,
    pub(crate) a_f64: f64,
    #[elicit(minimum = -9007199254740993, maximum = 9007199254740993)]
    pub(crate) narrow_i64: i64,
    #[elicit(minimum = 0, maximum = 1)]
    pub(crate) unit: f64,
    #[elicit(min_items = 1, max_items = 2)]
    pub(crate) set: std::collections::HashSet<Colour>,
}
