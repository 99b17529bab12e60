use elicit_runtime::Elicit;

#[derive(Elicit)]
struct Booking {
    #[elicit(minimum = -1)]
    travellers: u8,
}

fn main() {}
