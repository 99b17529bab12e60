use elicit_runtime::Elicit;

#[derive(Elicit)]
struct Booking {
    #[elicit(min_length = 1)]
    travellers: u8,
}

// The derive failed, but its fallback impl keeps uses of the type from adding errors.
fn main() {
    let _ = Booking::requested_schema();
}
