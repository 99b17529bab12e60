use elicit_runtime::Elicit;

#[derive(Elicit)]
struct Booking {
    #[elicit(format = "email")]
    travellers: u8,
}

fn main() {}
