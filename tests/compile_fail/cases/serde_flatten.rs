use elicit_runtime::Elicit;
use serde::Deserialize;

#[derive(Deserialize)]
struct Address {
    city: String,
}

#[derive(Elicit, Deserialize)]
struct Order {
    #[serde(flatten)]
    address: Address,
}

fn main() {}
