use elicit_runtime::Elicit;

#[derive(Elicit)]
#[elicit(rename_all = "lowercase")]
enum Cabin {
    Economy,
    Business,
}

#[derive(Elicit)]
struct Booking {
    #[elicit(default = "first")]
    cabin: Cabin,
}

fn main() {}
