use elicit_runtime::Elicit;

#[derive(Elicit)]
struct Nothing;

fn main() {}
