use elicit_runtime::Elicit;

#[derive(Elicit)]
#[elicit(rename_all = "lowercase")]
enum Meal {
    Vegetarian,
    Vegan,
}

#[derive(Elicit)]
struct Booking {
    #[elicit(default = ["vegan", "kosher"])]
    meals: Vec<Meal>,
}

fn main() {}
