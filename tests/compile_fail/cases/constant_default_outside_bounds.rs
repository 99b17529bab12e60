use elicit_runtime::Elicit;

const MAX_SEATS: u8 = 9;
const DEFAULT_SEATS: u8 = MAX_SEATS + 1;

#[derive(Elicit)]
struct Booking {
    #[elicit(maximum = MAX_SEATS, default = DEFAULT_SEATS)]
    seats: u8,
}

fn main() {}
