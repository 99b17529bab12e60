use elicit_runtime::Elicit;

#[derive(Elicit)]
struct Flight {
    #[elicit(pattern = "^[A-Z]{2}[0-9]+$")]
    number: String,
}

fn main() {}
