use elicit_runtime::Elicit;
use serde::Deserialize;

mod lenient {
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        serde::Deserialize::deserialize(d)
    }
}

#[derive(Elicit, Deserialize)]
struct Trip {
    #[serde(deserialize_with = "lenient::deserialize")]
    departure: String,
}

fn main() {}
