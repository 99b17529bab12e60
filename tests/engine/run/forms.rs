//! The forms the handlers of both eras ask for.

use elicit_runtime::Elicit;

/// Tell us about yourself.
#[derive(Elicit, Debug, Clone, PartialEq)]
pub(super) struct Person {
    /// Your name
    #[elicit(min_length = 2, title = "Name")]
    pub(super) name: String,
    /// Your age
    #[elicit(minimum = 0, maximum = 150, title = "Age")]
    pub(super) age: u8,
}

/// Pick a colour.
#[derive(Elicit, Debug, Clone, PartialEq)]
pub(super) struct Colour {
    /// A colour
    pub(super) colour: String,
}
