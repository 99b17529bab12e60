use elicit_runtime::Elicit;

struct Cache;

#[derive(Elicit)]
struct Trip {
    departure: String,
    #[elicit(skip)]
    cache: Cache,
}

fn main() {}
