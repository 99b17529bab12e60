use elicit_runtime::{Elicit, Email};

type Site = String;

#[derive(Elicit)]
struct Profile {
    #[elicit(format = "uri", default = "example.com")]
    home: String,
    #[elicit(format = "date", default = "2026-02-30")]
    birthday: String,
    #[elicit(format = "date-time", default = "2026-07-28 09:30")]
    seen: Option<String>,
    #[elicit(format = "email", default = "ada.example.com")]
    mail: String,
    #[elicit(default = "ada at example.com")]
    work: Email,
    #[elicit(format = "uri", default = "https://example.com/ok")]
    fine: String,
    #[elicit(format = "uri", default = "www.example.com")]
    site: Site,
}

fn main() {}
