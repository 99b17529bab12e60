use elicit_runtime::Elicit;

#[derive(Elicit)]
struct Booking {
    #[elicit(default = "two")]
    travellers: u8,
}

fn main() {}
