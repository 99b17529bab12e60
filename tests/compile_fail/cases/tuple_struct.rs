use elicit_runtime::Elicit;

#[derive(Elicit)]
struct Name(String);

fn main() {}
