use elicit_runtime::Elicit;
use serde::Deserialize;

#[derive(Elicit, Deserialize)]
struct Trip {
    #[elicit(rename = "from")]
    #[serde(rename = "origin")]
    departure: String,
}

fn main() {}
