use elicit_runtime::Elicit;

const MAX_CODE: u64 = 3;

#[derive(Elicit)]
struct Airport {
    #[elicit(min_length = 5, max_length = MAX_CODE)]
    code: String,
}

fn main() {}
