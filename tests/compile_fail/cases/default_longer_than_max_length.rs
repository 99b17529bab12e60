use elicit_runtime::Elicit;

#[derive(Elicit)]
struct Airport {
    #[elicit(max_length = 3, default = "LFPG")]
    code: String,
}

fn main() {}
