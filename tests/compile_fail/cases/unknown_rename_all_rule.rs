use elicit_runtime::Elicit;

#[derive(Elicit)]
#[elicit(rename_all = "camel_case")]
struct Trip {
    departure_date: String,
}

fn main() {}
