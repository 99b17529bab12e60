use elicit_runtime::Elicit;

#[derive(Elicit)]
struct Trip {
    from: String,
    #[elicit(rename = "from")]
    origin: String,
}

fn main() {}
