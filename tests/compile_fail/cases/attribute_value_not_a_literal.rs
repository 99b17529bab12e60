use elicit_runtime::Elicit;

#[derive(Elicit)]
struct Airport {
    #[elicit(max_length = "3")]
    code: String,
}

fn main() {}
