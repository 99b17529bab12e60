use elicit_runtime::Elicit;

#[derive(Elicit)]
struct Flight {
    #[elicit(placeholder = "AF123")]
    number: String,
}

fn main() {}
