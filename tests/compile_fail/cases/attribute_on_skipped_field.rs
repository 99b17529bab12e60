use elicit_runtime::Elicit;

#[derive(Elicit)]
struct Trip {
    departure: String,
    #[elicit(skip, max_length = 3)]
    cache: String,
}

fn main() {}
