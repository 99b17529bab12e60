use elicit_runtime::Elicit;

type Port = u16;

#[derive(Elicit)]
struct Server {
    #[elicit(maximum = 65536)]
    port: Port,
    #[elicit(minimum = 1, default = 0)]
    backup: Option<Port>,
}

fn main() {}
