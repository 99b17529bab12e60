use elicit_runtime::Elicit;

#[derive(Elicit)]
#[elicit(title = "Trip")]
struct Trip {
    from: String,
}

fn main() {}
