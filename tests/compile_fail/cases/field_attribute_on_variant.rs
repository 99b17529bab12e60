use elicit_runtime::Elicit;

#[derive(Elicit)]
enum Cabin {
    #[elicit(description = "The cheapest seats")]
    Economy,
    Business,
}

fn main() {}
