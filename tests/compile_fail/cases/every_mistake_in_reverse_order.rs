use elicit_runtime::Elicit;

#[derive(Elicit)]
enum Cabin {
    Economy,
    Business,
}

#[derive(Elicit)]
struct Address {
    city: String,
}

#[derive(Elicit)]
#[elicit(transparent)]
struct Code(String);

/// The mistakes of `every_mistake_with_flatten_and_select_default`, declared the other way round,
/// and a newtype's default past its `max_length`: every one in one build.
#[derive(Elicit)]
struct Booking {
    #[elicit(default = "First")]
    cabin: Cabin,
    city: String,
    #[elicit(flatten)]
    address: Address,
    #[elicit(max_length = 2, default = "ABC")]
    code: Code,
    #[elicit(colour = "red")]
    name: String,
}

fn main() {}
