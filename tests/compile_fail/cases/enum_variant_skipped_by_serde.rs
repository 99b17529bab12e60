use elicit_runtime::Elicit;
use serde::Deserialize;

#[derive(Elicit, Deserialize)]
enum Cabin {
    Economy,
    #[serde(skip)]
    Cargo,
}

fn main() {}
