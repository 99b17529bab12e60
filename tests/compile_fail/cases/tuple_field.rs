use elicit_runtime::Elicit;

#[derive(Elicit)]
struct Trip {
    route: (String, String),
}

fn main() {}
