use elicit_runtime::Elicit;

#[derive(Elicit)]
struct Address {
    city: String,
}

#[derive(Elicit)]
struct Stay {
    #[elicit(flatten)]
    address: Address,
    nights: u8,
}

/// The colliding field comes after the group that flattens `city` in two levels down.
#[derive(Elicit)]
struct Booking {
    #[elicit(flatten)]
    stay: Stay,
    city: String,
}

fn main() {}
