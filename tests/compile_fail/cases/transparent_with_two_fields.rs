use elicit_runtime::Elicit;

#[derive(Elicit)]
#[elicit(transparent)]
struct Span {
    start: u8,
    end: u8,
}

fn main() {}
