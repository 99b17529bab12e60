use std::collections::HashMap;

use elicit_runtime::Elicit;

#[derive(Elicit)]
struct Settings {
    values: HashMap<String, String>,
}

fn main() {}
