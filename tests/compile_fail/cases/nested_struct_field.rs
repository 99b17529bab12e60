use elicit_runtime::Elicit;

#[derive(Elicit)]
struct Address {
    city: String,
}

#[derive(Elicit)]
struct Customer {
    name: String,
    address: Address,
}

fn main() {}
