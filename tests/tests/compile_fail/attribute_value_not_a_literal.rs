use elicit_runtime::Elicit;

const MAX: u64 = 3;

#[derive(Elicit)]
struct Airport {
    #[elicit(max_length = MAX)]
    code: String,
}

fn main() {}
