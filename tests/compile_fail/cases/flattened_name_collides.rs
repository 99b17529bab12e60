use elicit_runtime::Elicit;

#[derive(Elicit)]
struct Address {
    city: String,
}

#[derive(Elicit)]
struct Order {
    city: String,
    #[elicit(flatten)]
    address: Address,
}

fn main() {}
