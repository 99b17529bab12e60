use elicit_runtime::Elicit;

#[derive(Elicit)]
#[elicit(rename_all = "lowercase")]
enum Cabin {
    FirstClass,
    Firstclass,
}

fn main() {}
