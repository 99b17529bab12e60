use elicit_runtime::Elicit;

struct Address {
    city: String,
}

#[derive(Elicit)]
struct Order {
    #[elicit(flatten)]
    address: Address,
}

fn main() {}
