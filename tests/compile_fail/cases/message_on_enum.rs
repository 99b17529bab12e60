use elicit_runtime::Elicit;

#[derive(Elicit)]
#[elicit(message = "Pick a cabin")]
enum Cabin {
    Economy,
    Business,
}

// The enum's derive failed, but its fallback impls keep these fields from adding errors.
#[derive(Elicit)]
struct Booking {
    cabin: Cabin,
    extras: Vec<Cabin>,
}

fn main() {}
