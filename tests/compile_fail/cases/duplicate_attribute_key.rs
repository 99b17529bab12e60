use elicit_runtime::Elicit;

#[derive(Elicit)]
struct Flight {
    #[elicit(title = "Flight", title = "Flight number")]
    number: String,
}

fn main() {}
