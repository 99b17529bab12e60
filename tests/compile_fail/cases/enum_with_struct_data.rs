use elicit_runtime::Elicit;

#[derive(Elicit)]
enum Seat {
    Window,
    Numbered { row: u32 },
}

fn main() {}
