use elicit_runtime::Elicit;

#[derive(Elicit)]
struct Answer<T> {
    value: T,
}

fn main() {}
