use elicit_runtime::Elicit;
use serde::Deserialize;

#[derive(Elicit, Deserialize)]
#[serde(transparent)]
struct Seats {
    count: u8,
}

fn main() {}
