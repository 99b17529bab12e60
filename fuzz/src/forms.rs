//! Derived forms: one with every required field kind and the small contact form the engine handler
//! asks for; the form with every optional kind, the numbers (flattened into the first) and the
//! selects are the tests' own (`elicit_test_support::forms`).

use std::collections::BTreeSet;

use chrono::{DateTime, FixedOffset, NaiveDate, Utc};
use elicit_runtime::{Elicit, Email};
use url::Url;

pub use elicit_test_support::forms::{Cabin, Colour, Extra, Numbers, Optionals};

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
    // Every integer type at its natural range, both float types, an `i64` bounded past 2^53 and a
    // `HashSet` multi-select: the tests' form, spliced in.
    #[elicit(flatten)]
    pub numbers: Numbers,
    #[elicit(minimum = -10, maximum = 10, default = 0)]
    pub ranged: i32,
    #[elicit(minimum = 0.5, maximum = 99.5, default = 1.5)]
    pub ratio: f64,
    pub colour: Colour,
    #[elicit(default = "business")]
    pub cabin: Cabin,
    #[elicit(min_items = 1, max_items = 3, default = ["red"])]
    pub colours: Vec<Colour>,
    #[elicit(min_items = 2)]
    pub extras: BTreeSet<Extra>,
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
