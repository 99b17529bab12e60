use elicit_runtime::Elicit;

#[derive(Elicit)]
#[elicit(transparent)]
struct Code(String);

#[derive(Elicit)]
struct Trip {
    #[elicit(max_length = 3, default = "ABCD")]
    from: Code,
}

fn main() {}
