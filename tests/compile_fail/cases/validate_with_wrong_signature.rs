use elicit_runtime::Elicit;

fn short(text: &str) -> bool {
    text.len() < 4
}

#[derive(Elicit)]
struct Trip {
    #[elicit(validate = short)]
    departure: String,
}

fn main() {}
