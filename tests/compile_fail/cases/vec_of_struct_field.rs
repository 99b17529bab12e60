use elicit_runtime::Elicit;

#[derive(Elicit)]
struct Passenger {
    name: String,
}

#[derive(Elicit)]
struct Booking {
    passengers: Vec<Passenger>,
}

fn main() {}
