use elicit_runtime::Elicit;

#[derive(Elicit)]
#[elicit(transparent)]
struct Seats(u8);

#[derive(Elicit)]
struct Trip {
    #[elicit(max_length = 3)]
    seats: Seats,
}

fn main() {}
