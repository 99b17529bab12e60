use elicit_runtime::Elicit;

#[derive(Elicit)]
struct Booking {
    #[elicit(min_items = 1)]
    name: String,
}

fn main() {}
