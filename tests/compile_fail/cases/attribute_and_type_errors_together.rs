use std::collections::HashMap;

use elicit_runtime::Elicit;

struct Unknown;

#[derive(Elicit)]
struct Trip {
    #[elicit(colour = "red")]
    departure: String,
    notes: HashMap<String, String>,
    mystery: Unknown,
}

fn main() {}
