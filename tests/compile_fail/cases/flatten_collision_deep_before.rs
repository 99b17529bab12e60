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

/// The colliding field comes before the group that flattens `city` in two levels down.
#[derive(Elicit)]
struct Booking {
    city: String,
    #[elicit(flatten)]
    stay: Stay,
}

fn main() {}
