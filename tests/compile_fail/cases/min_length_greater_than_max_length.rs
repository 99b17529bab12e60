use elicit_runtime::Elicit;

#[derive(Elicit)]
struct Airport {
    #[elicit(min_length = 4, max_length = 3)]
    code: String,
}

fn main() {}
