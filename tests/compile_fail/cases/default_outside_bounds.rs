use elicit_runtime::Elicit;

#[derive(Elicit)]
struct Booking {
    #[elicit(minimum = 1, maximum = 9, default = 12)]
    travellers: u8,
}

fn main() {}
