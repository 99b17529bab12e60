use elicit_runtime::Elicit;

#[derive(Elicit)]
enum Cabin {}

fn main() {}
