//! Derived forms: one with every required field kind and the small contact form the engine handler
//! asks for; the form with every optional kind and the selects are the tests' own
//! (`elicit_test_support::forms`).

use std::collections::{BTreeSet, HashSet};

use chrono::{DateTime, FixedOffset, NaiveDate, Utc};
use elicit_runtime::{Elicit, Email};
use url::Url;

pub use elicit_test_support::forms::{Cabin, Colour, Extra, Optionals};

/// Every field kind, required, with constraints and defaults.
#[derive(Elicit, Debug, Clone, PartialEq)]
#[elicit(rename_all = "camelCase")]
pub struct Everything {
    /// Name
    #[elicit(title = "Name", min_length = 2, max_length = 8, default = "Ada")]
    pub name: String,
    #[elicit(format = "email")]
    pub contact: String,
    #[elicit(format = "uri", max_length = 64)]
    pub home: String,
    #[elicit(format = "date")]
    pub born: String,
    #[elicit(format = "date-time", rename = "seen_at")]
    pub seen: String,
    pub work: Email,
    pub day: NaiveDate,
    pub at_utc: DateTime<Utc>,
    pub at_offset: DateTime<FixedOffset>,
    pub site: Url,
    #[elicit(default = true)]
    pub flag: bool,
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
    #[elicit(minimum = -10, maximum = 10, default = 0)]
    pub ranged: i32,
    #[elicit(minimum = -9007199254740993, maximum = 9007199254740993)]
    pub wide: i64,
    pub single: f32,
    pub double: f64,
    #[elicit(minimum = 0.5, maximum = 99.5, default = 1.5)]
    pub ratio: f64,
    pub colour: Colour,
    #[elicit(default = "business")]
    pub cabin: Cabin,
    #[elicit(min_items = 1, max_items = 3, default = ["red"])]
    pub colours: Vec<Colour>,
    #[elicit(min_items = 2)]
    pub extras: BTreeSet<Extra>,
    #[elicit(max_items = 2)]
    pub tags: HashSet<Colour>,
}

/// Who to contact about the booking.
#[derive(Elicit, Debug, Clone, PartialEq)]
pub struct Contact {
    /// Your name
    #[elicit(min_length = 1, max_length = 40)]
    pub name: String,
    pub email: Email,
    #[elicit(minimum = 18)]
    pub age: Option<u8>,
    #[elicit(default = false)]
    pub newsletter: bool,
    pub colour: Colour,
}
