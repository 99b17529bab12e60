use elicit_runtime::Elicit;

/// A newtype whose derive fails: its one error is reported, and the form using it is checked
/// against the shape of its field (an integer), so `maximum` there draws no second error.
#[derive(Elicit)]
#[elicit(transparent, message = "Seats")]
struct Seats(u8);

#[derive(Elicit)]
struct Table {
    #[elicit(maximum = 12)]
    seats: Seats,
}

fn main() {}
