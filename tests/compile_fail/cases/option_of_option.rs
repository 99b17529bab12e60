use elicit_runtime::Elicit;

#[derive(Elicit)]
struct Trip {
    note: Option<Option<String>>,
}

fn main() {}
