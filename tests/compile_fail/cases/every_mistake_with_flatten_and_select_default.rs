use elicit_runtime::Elicit;

#[derive(Elicit)]
enum Cabin {
    Economy,
    Business,
}

#[derive(Elicit)]
struct Address {
    city: String,
}

/// An attribute error, a flatten collision and a select default that is not a variant: all three
/// in one build.
#[derive(Elicit)]
struct Booking {
    #[elicit(colour = "red")]
    name: String,
    #[elicit(flatten)]
    address: Address,
    city: String,
    #[elicit(default = "First")]
    cabin: Cabin,
}

fn main() {}
