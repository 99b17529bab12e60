use elicit_runtime::Elicit;

#[derive(Elicit)]
enum Seat {
    Window,
    Numbered(u32),
}

fn main() {}
