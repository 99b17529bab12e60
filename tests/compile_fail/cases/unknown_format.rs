use elicit_runtime::Elicit;

#[derive(Elicit)]
struct Contact {
    #[elicit(format = "phone")]
    phone: String,
}

fn main() {}
