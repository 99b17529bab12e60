use std::collections::BTreeMap;

use elicit_runtime::Elicit;

#[derive(Elicit)]
struct Settings {
    values: BTreeMap<String, u32>,
}

fn main() {}
