use elicit_runtime::Elicit;
use serde::Deserialize;

#[derive(Elicit, Deserialize)]
#[serde(tag = "kind")]
struct Trip {
    departure: String,
}

fn main() {}
