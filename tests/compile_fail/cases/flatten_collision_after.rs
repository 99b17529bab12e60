use elicit_runtime::Elicit;

#[derive(Elicit)]
struct Address {
    city: String,
}

#[derive(Elicit)]
struct Order {
    #[elicit(flatten)]
    address: Address,
    city: String,
}

fn main() {}
