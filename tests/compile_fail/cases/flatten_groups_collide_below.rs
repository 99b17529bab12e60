use elicit_runtime::Elicit;

#[derive(Elicit)]
struct Address {
    city: String,
}

#[derive(Elicit)]
struct Delivery {
    #[elicit(flatten)]
    address: Address,
}

#[derive(Elicit)]
struct Billing {
    #[elicit(flatten)]
    address: Option<Address>,
}

/// Two groups whose own names differ, but which both flatten `city` in further down.
#[derive(Elicit)]
struct Order {
    #[elicit(flatten)]
    delivery: Delivery,
    #[elicit(flatten)]
    billing: Billing,
}

fn main() {}
