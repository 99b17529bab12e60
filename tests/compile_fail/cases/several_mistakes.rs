use std::collections::HashMap;

use elicit_runtime::Elicit;

#[derive(Elicit)]
#[elicit(rename_all = "shouting")]
struct Booking {
    #[elicit(min_length = 1)]
    travellers: u8,
    #[elicit(minimum = 3, maximum = 1)]
    nights: u32,
    #[elicit(format = "phone")]
    phone: String,
    #[elicit(colour = "red")]
    name: String,
    extras: HashMap<String, String>,
    #[elicit(rename = "name")]
    full_name: String,
}

fn main() {}
