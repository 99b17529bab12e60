use elicit_runtime::Elicit;

#[derive(Elicit)]
struct Airport {
    #[elicit(title)]
    code: String,
}

fn main() {}
