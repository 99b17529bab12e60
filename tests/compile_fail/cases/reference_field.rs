use elicit_runtime::Elicit;

#[derive(Elicit)]
struct Trip {
    from: &'static str,
}

fn main() {}
