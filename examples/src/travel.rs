//! The showcase: a travel agent whose `book_trip` tool asks for a trip with a form that uses every
//! schema kind, sends the user to a payment page it serves itself (URL mode), then asks for a final
//! confirmation — three rounds of straight-line handler code. The page itself lives in
//! [`payment_page`](fn@payment_page).

use std::collections::BTreeSet;
use std::sync::Arc;

use chrono::{DateTime, FixedOffset, NaiveDate};
use elicit_runtime::rmcp::{McpServer, Presentation};
use elicit_runtime::server::pages::kit::{PageLoginVisitors, VisitorCheck};
use elicit_runtime::server::task::TaskSupport;
use elicit_runtime::server::{Answer, Engine, Flow, FlowError, PageLogin, UrlAnswer};
use elicit_runtime::wire::Capabilities;
use elicit_runtime::{Elicit, Email};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

mod group;
mod payment_page;
mod summaries;

pub use group::{Departure, GroupChoice, group_booking, group_schema};

pub use payment_page::{
    LOGIN_PARAM, NONCE_COOKIE, SESSION_COOKIE, payment_link, payment_page, payment_page_at, payment_page_with_logins,
    payment_page_with_visitors, payment_url,
};
pub use summaries::{PaymentSummaries, PaymentSummary};

/// The audience every travel-server instance seals its state for: instances sharing keys resume
/// each other's flows.
pub const AUDIENCE: &str = "travel-server";

/// Where would you like to fly?
#[derive(Elicit, Debug, Clone, PartialEq)]
#[elicit(rename_all = "camelCase")]
pub struct Trip {
    /// From and to: the fields are spliced into this form, as if written here.
    #[elicit(flatten)]
    pub route: Route,
    /// When, how many, and for how much (spliced in too).
    #[elicit(flatten)]
    pub schedule: Schedule,
    /// Cabin class
    #[elicit(title = "Cabin", default = "economy")]
    pub cabin: Cabin,
    /// Seat preference
    #[elicit(title = "Seat")]
    pub seat: Option<Seat>,
    /// Meals you would like (two at most)
    #[elicit(title = "Meals", max_items = 2)]
    pub meals: Vec<Meal>,
    /// Anything else to add
    #[elicit(title = "Extras")]
    pub extras: BTreeSet<Extra>,
    /// Where we send your e-ticket
    #[elicit(title = "E-mail")]
    pub email: Email,
    /// Your loyalty programme page, if any
    #[elicit(title = "Loyalty page")]
    pub loyalty_page: Option<url::Url>,
    /// Send me fare alerts
    #[elicit(title = "Fare alerts", default = false)]
    pub alerts: bool,
}

/// The two airports of a trip: a group of fields that [`Trip`] and [`TripPlan`] both ask for
/// (`#[elicit(flatten)]`).
#[derive(Elicit, Debug, Clone, PartialEq)]
pub struct Route {
    /// Departure airport (IATA code)
    #[elicit(title = "From", min_length = 3, max_length = 3)]
    pub from: String,
    /// Arrival airport (IATA code)
    #[elicit(title = "To", min_length = 3, max_length = 3)]
    pub to: String,
}

/// When a trip goes, for how many, and for how much: a group of fields flattened into [`Trip`].
#[derive(Elicit, Debug, Clone, PartialEq)]
#[elicit(rename_all = "camelCase")]
pub struct Schedule {
    /// Date of the outbound flight
    #[elicit(title = "Departure date")]
    pub depart: NaiveDate,
    /// Latest arrival, with your UTC offset
    #[elicit(title = "Arrive by")]
    pub arrive_by: Option<DateTime<FixedOffset>>,
    /// How many people travel
    #[elicit(title = "Travellers", minimum = 1, maximum = 9, default = 1)]
    pub travellers: u8,
    /// Most you want to pay per traveller, in euros
    #[elicit(title = "Budget (EUR)", minimum = 0, maximum = 100000)]
    pub budget: Option<f64>,
}

/// Cabin class: a titled single select, the one the tests' representative forms use.
pub use elicit_test_support::forms::Cabin;

/// Seat preference: an untitled single select.
#[derive(Elicit, Debug, Clone, Copy, PartialEq, Eq)]
#[elicit(rename_all = "lowercase")]
pub enum Seat {
    /// By the window.
    Window,
    /// On the aisle.
    Aisle,
}

/// Meals: an untitled multi-select.
#[derive(Elicit, Debug, Clone, Copy, PartialEq, Eq)]
#[elicit(rename_all = "kebab-case")]
pub enum Meal {
    /// Vegetarian.
    Vegetarian,
    /// Vegan.
    Vegan,
    /// Gluten free.
    GlutenFree,
}

/// Extras: a titled multi-select.
#[derive(Elicit, Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[elicit(rename_all = "snake_case")]
pub enum Extra {
    /// A checked bag.
    #[elicit(title = "Extra checked bag")]
    CheckedBag,
    /// Lounge access.
    #[elicit(title = "Lounge access")]
    Lounge,
    /// Insurance.
    #[elicit(title = "Travel insurance")]
    Insurance,
}

/// The last step: does the user book?
#[derive(Elicit, Debug, Clone, PartialEq)]
pub struct Confirm {
    /// Tick to book the trip
    #[elicit(title = "Book it")]
    pub confirm: bool,
}

/// How was your last trip?
#[derive(Elicit, Debug, Clone, PartialEq)]
pub struct Rating {
    /// From 1 (poor) to 5 (excellent)
    #[elicit(minimum = 1, maximum = 5)]
    pub stars: u8,
    /// Anything to add
    #[elicit(max_length = 500)]
    pub comment: Option<String>,
}

/// May we contact you about it?
#[derive(Elicit, Debug, Clone, PartialEq)]
pub struct Contact {
    /// Where to write to you
    pub email: Email,
}

/// `plan_trip`'s parameters: one struct is the tool's `inputSchema`, validates the model's
/// arguments, and asks the user for whatever is missing or invalid.
#[derive(Elicit, Debug, Clone, PartialEq)]
#[elicit(rename_all = "camelCase", deserialize, message = "Let us complete your trip plan.")]
pub struct TripPlan {
    /// From and to, as the trip form asks them (spliced into this form).
    #[elicit(flatten)]
    pub route: Route,
    /// Date of the outbound flight
    #[elicit(title = "Departure date")]
    pub depart: NaiveDate,
    /// How many people travel
    #[elicit(title = "Travellers", minimum = 1, maximum = 9, default = 1)]
    pub travellers: u8,
    /// Cabin class, if you have a preference
    #[elicit(title = "Cabin")]
    pub cabin: Option<Cabin>,
}

/// A booking's price and reference, minted once per booking (in [`Flow::once`]) and the same in
/// every replay of its flow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Quote {
    /// Total in euro cents.
    pub total_cents: u64,
    /// Booking reference: random, unique per booking (not derived from the trip).
    pub reference: String,
}

impl Quote {
    fn total(&self) -> String {
        format!("€{}.{:02}", self.total_cents / 100, self.total_cents % 100)
    }
}

/// Prices a trip: a fixed fare per cabin plus extras, per traveller, in euro cents.
pub fn price(trip: &Trip) -> u64 {
    let fare: u64 = match trip.cabin {
        Cabin::Economy => 12_900,
        Cabin::PremiumEconomy => 34_900,
        Cabin::Business => 89_900,
    };
    let extras: u64 = trip
        .extras
        .iter()
        .map(|e| match e {
            Extra::CheckedBag => 3_500,
            Extra::Lounge => 4_500,
            Extra::Insurance => 1_900,
        })
        .sum();
    (fare + extras) * u64::from(trip.schedule.travellers)
}

/// The letters of a booking reference: no 0/O or 1/I to misread.
const REFERENCE_ALPHABET: &[u8; 32] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";

/// A fresh booking reference, `BK-` and 10 random letters (50 bits): unique per booking. Mint it
/// inside `once`, or every replay of the round would book under a new one.
pub fn new_reference() -> Result<String, FlowError> {
    let mut bytes = [0u8; 10];
    getrandom::fill(&mut bytes)
        .map_err(|e| FlowError::Failed(format!("no randomness for a booking reference: {e}")))?;
    let letters: String = bytes.iter().map(|b| char::from(REFERENCE_ALPHABET[usize::from(b % 32)])).collect();
    Ok(format!("BK-{letters}"))
}

fn text(message: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(message.into())])
}

fn empty_schema() -> Arc<JsonObject> {
    let mut schema = JsonObject::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), json!({}));
    Arc::new(schema)
}

/// `book_trip`: form, then payment page, then confirmation. The payment page is told the amount
/// and the trip through `summaries`.
pub async fn book_trip(
    flow: Flow,
    public_url: Arc<str>,
    summaries: PaymentSummaries,
) -> Result<CallToolResult, FlowError> {
    book_trip_signed(flow, public_url, summaries, None).await
}

/// [`book_trip`] on a server with users: the payment link signs the flow's user in to the page
/// with a one-time ticket from `logins` (see [`payment_url`]).
pub async fn book_trip_signed(
    flow: Flow,
    public_url: Arc<str>,
    summaries: PaymentSummaries,
    logins: Option<PageLogin>,
) -> Result<CallToolResult, FlowError> {
    let visitors = logins.map(|logins| {
        Arc::new(PageLoginVisitors::new(logins).with_cookie(SESSION_COOKIE, "/pay/")) as Arc<dyn VisitorCheck>
    });
    book_trip_verified(flow, public_url, summaries, visitors).await
}

/// [`book_trip`] on a server with users, whose payment link is built for the page's visitor
/// check `visitors` (see [`payment_link`]): with an OpenID sign-in it carries no credential.
pub async fn book_trip_verified(
    flow: Flow,
    public_url: Arc<str>,
    summaries: PaymentSummaries,
    visitors: Option<Arc<dyn VisitorCheck>>,
) -> Result<CallToolResult, FlowError> {
    let trip = match flow.form::<Trip>("trip").await? {
        Answer::Accepted(trip) => trip,
        Answer::Declined => return Ok(text("No booking made: you declined to give the trip details.")),
        Answer::Cancelled => return Ok(text("Booking cancelled before any details were given.")),
    };
    // The booking's reference is minted once per flow: replays of any round, concurrent copies of
    // it, and rounds served by other instances sharing the store all see the same one. The quote
    // belongs to this trip: a fork that answers the trip form otherwise fails as a conflict, so
    // what is booked is what was priced.
    let quote =
        flow.once("quote", || async { Ok(Quote { total_cents: price(&trip), reference: new_reference()? }) }).await?;
    let message = format!(
        "Approve the payment of {} for {} → {} on our payment page.",
        quote.total(),
        trip.route.from,
        trip.route.to
    );
    let summary = PaymentSummary {
        amount: quote.total(),
        trip: format!(
            "{} → {} on {}, {} traveller(s)",
            trip.route.from, trip.route.to, trip.schedule.depart, trip.schedule.travellers
        ),
    };
    let payment = flow
        .url("payment", &message, |id| {
            summaries.record(id, summary);
            payment_link(&public_url, id, visitors.as_deref(), flow.principal())
        })
        .await;
    match payment {
        Ok(UrlAnswer::Completed(outcome)) if outcome.get("approved") == Some(&Value::Bool(true)) => {}
        Ok(UrlAnswer::Completed(_)) => return Ok(text("Payment denied on the payment page: nothing was booked.")),
        Ok(UrlAnswer::Declined) => return Ok(text("You declined to open the payment page: nothing was booked.")),
        Ok(UrlAnswer::Cancelled) => return Ok(text("Payment cancelled: nothing was booked.")),
        Err(FlowError::Unsupported { .. }) => {
            return Ok(CallToolResult::error(vec![ContentBlock::text(
                "This client cannot open web pages (URL-mode elicitation not declared), so the payment step cannot run: nothing was booked.",
            )]));
        }
        Err(other) => return Err(other),
    }
    let question = format!(
        "Book {} → {} on {} for {} traveller(s), {} in total?",
        trip.route.from,
        trip.route.to,
        trip.schedule.depart,
        trip.schedule.travellers,
        quote.total()
    );
    Ok(match flow.form_with::<Confirm>("confirm", &question).await? {
        Answer::Accepted(Confirm { confirm: true }) => text(format!(
            "Booked! Reference {}: {} → {} on {}, {} traveller(s), {} paid. Your e-ticket goes to {}.",
            quote.reference,
            trip.route.from,
            trip.route.to,
            trip.schedule.depart,
            trip.schedule.travellers,
            quote.total(),
            trip.email
        )),
        Answer::Accepted(_) => text("Not booked: you did not tick \"Book it\". The payment approval lapses."),
        Answer::Declined => text("Not booked: you declined the confirmation. The payment approval lapses."),
        Answer::Cancelled => text("Booking cancelled at the confirmation step. The payment approval lapses."),
    })
}

/// `rate_trip`: two forms asked in the same round.
pub async fn rate_trip(flow: Flow) -> Result<CallToolResult, FlowError> {
    let (rating, contact) = tokio::join!(flow.form::<Rating>("rating"), flow.form::<Contact>("contact"));
    let rating = match rating? {
        Answer::Accepted(rating) => rating,
        Answer::Declined | Answer::Cancelled => return Ok(text("No rating recorded.")),
    };
    let comment = rating.comment.as_deref().unwrap_or("no comment");
    Ok(match contact? {
        Answer::Accepted(contact) => {
            text(format!("Thanks for {} star(s) ({comment}); we will write to {}.", rating.stars, contact.email))
        }
        Answer::Declined | Answer::Cancelled => {
            text(format!("Thanks for {} star(s) ({comment}); we will not contact you.", rating.stars))
        }
    })
}

/// `plan_trip`: the model's arguments, completed by the user where they fall short.
pub async fn plan_trip(flow: Flow) -> Result<CallToolResult, FlowError> {
    Ok(match flow.complete_args::<TripPlan>("plan").await? {
        Answer::Accepted(plan) => {
            let cabin = match plan.cabin {
                Some(Cabin::Economy) | None => "economy",
                Some(Cabin::PremiumEconomy) => "premium economy",
                Some(Cabin::Business) => "business class",
            };
            text(format!(
                "Planned: {} → {} on {}, {} traveller(s), {cabin}.",
                plan.route.from, plan.route.to, plan.depart, plan.travellers
            ))
        }
        Answer::Declined => text("No plan made: you declined to complete the trip details."),
        Answer::Cancelled => text("Planning cancelled."),
    })
}

/// `plan_trip`'s `inputSchema`: the same schema its missing-argument form is cut from.
fn plan_schema() -> Arc<JsonObject> {
    match TripPlan::requested_schema().to_json() {
        Value::Object(schema) => Arc::new(schema),
        _ => empty_schema(),
    }
}

/// The travel server's MCP side; its payment summaries go to the engine's completion store.
pub fn server(engine: Engine, public_url: &str) -> McpServer {
    let summaries = PaymentSummaries::new(engine.url_completions().clone());
    server_with(engine, public_url, summaries)
}

/// What the tools' asks need at the least: form mode (`book_trip`'s page needs URL mode too, and
/// its handler answers a form-only client itself).
const FORM: Capabilities = Capabilities { form: true, url: false, sampling: false, roots: false };

/// What `book_trip` answers, as a tool result the model relays, to a client that cannot show forms.
pub const NO_FORMS: &str = "Booking needs the traveller's details and consent through forms, and this client cannot show forms (it declares no elicitation). Nothing was booked. Ask the person to book from an MCP client that shows forms, or on the travel agent's website.";

/// The travel server's MCP side, recording payment summaries in `summaries` (share them with
/// [`payment_page_at`]).
pub fn server_with(engine: Engine, public_url: &str, summaries: PaymentSummaries) -> McpServer {
    server_with_logins(engine, public_url, summaries, None)
}

/// [`server_with`], whose payment links sign their user in with `logins` (share them with
/// [`payment_page_with_logins`]).
pub fn server_with_logins(
    engine: Engine,
    public_url: &str,
    summaries: PaymentSummaries,
    logins: Option<PageLogin>,
) -> McpServer {
    let visitors = logins.map(|logins| {
        Arc::new(PageLoginVisitors::new(logins).with_cookie(SESSION_COOKIE, "/pay/")) as Arc<dyn VisitorCheck>
    });
    server_with_visitors(engine, public_url, summaries, visitors)
}

/// [`server_with`], whose payment links are built for the payment page's visitor check
/// `visitors` (share it with [`payment_page_with_visitors`]).
pub fn server_with_visitors(
    engine: Engine,
    public_url: &str,
    summaries: PaymentSummaries,
    visitors: Option<Arc<dyn VisitorCheck>>,
) -> McpServer {
    let public_url: Arc<str> = Arc::from(public_url.trim_end_matches('/'));
    McpServer::builder(AUDIENCE, env!("CARGO_PKG_VERSION"), engine)
        .instructions("A travel agent: book_trip books a flight (form, payment page, confirmation); plan_trip completes a plan from partial arguments; rate_trip asks for feedback; group_booking holds seats for a group (a long check, then a choice; a task for clients of the Tasks extension).")
        .tool(
            Tool::new("book_trip", "Book a flight: asks for the trip, sends you to a payment page, then confirms", empty_schema()),
            move |flow| book_trip_verified(flow, public_url.clone(), summaries.clone(), visitors.clone()),
        )
        .tool(Tool::new("rate_trip", "Rate your last trip (two questions in one round)", empty_schema()), rate_trip)
        .tool(
            Tool::new("plan_trip", "Plan a trip from the arguments given; asks you only for what is missing or invalid", plan_schema()),
            plan_trip,
        )
        .task_tool(
            Tool::new("group_booking", "Hold seats for a group: checks the airlines for a while, then asks which departure", group_schema()),
            TaskSupport::Optional,
            group_booking,
        )
        // For a client that cannot show a form at all (a host that declares no elicitation):
        // booking takes the person's details and consent, so the model is told why it cannot be
        // done here and what the person can do; the feedback form is optional, so it is simply
        // not offered. `plan_trip` asks only for what its arguments lack, and `group_booking`
        // reports through its task: both run, and fail only when they must ask (`Require`).
        .presentation("book_trip", FORM, Presentation::Explain(NO_FORMS.to_owned()))
        .presentation("rate_trip", FORM, Presentation::Hide)
        .presentation("plan_trip", FORM, Presentation::Require)
        .presentation("group_booking", FORM, Presentation::Require)
        .build()
        .expect("four tools with distinct names, each policy naming one of them")
}
