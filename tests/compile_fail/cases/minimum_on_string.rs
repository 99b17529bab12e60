use elicit_runtime::Elicit;

#[derive(Elicit)]
struct Booking {
    #[elicit(minimum = 1)]
    name: String,
}

fn main() {}
