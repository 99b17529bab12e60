use elicit_runtime::Elicit;

#[derive(Elicit)]
struct Booking {
    #[elicit(maximum = 9.5)]
    travellers: u8,
}

fn main() {}
