//! A Rust application driving `book_trip` on the runtime's rmcp-backed [`Client`]: one call
//! connects to a server of either era (2026-07-28, or a 2025-era session after the probe), and
//! every input request (the trip form, the payment page, the confirmation) reaches this
//! application's one [`Responder`], whether it came back in an `input_required` result or was
//! pushed mid-call.
//!
//! ```text
//! book-trip-app --url http://127.0.0.1:8080/mcp [--browser COMMAND] [--protocol auto|2026-07-28|2025-11-25|2025-06-18]
//! ```
//! The trip and the confirmation are answered by the application; the payment page is opened
//! with `COMMAND URL` (without `--browser` the URL is printed for you to open), and the app waits
//! for it to be completed.

use std::time::Duration;

use elicit_runtime::client::form::with_defaults;
use elicit_runtime::client::{AskContext, CheckedUrl, PendingAction, PendingUrl, Responder};
use elicit_runtime::rmcp::client::{Client, ClientOptions, Protocol, Target};
use elicit_runtime::schema::RequestedSchema;
use elicit_runtime::wire::{ElicitAction, ElicitResult, Revision};
use serde_json::{Map, Value, json};

const USAGE: &str =
    "usage: book-trip-app --url URL [--browser COMMAND] [--protocol auto|2026-07-28|2025-11-25|2025-06-18]";
/// How long the app waits for the payment page to be completed.
const PAGE_WAIT: Duration = Duration::from_secs(60);

/// The application's answers: a fixed trip, an opened payment page, a ticked confirmation.
struct App {
    browser: Option<String>,
    /// A request this app has no answer for, until the driver takes it.
    unknown: Option<String>,
}

impl Responder for App {
    async fn form(&mut self, ctx: AskContext<'_>, message: &str, schema: &RequestedSchema) -> ElicitResult {
        eprintln!("{} asks ({}): {message}", ctx.server, ctx.key);
        // Known by the fields asked for, not by the key: a 2025-era server's pushed requests have
        // no keys of their own.
        let asks = |name: &str| schema.properties.iter().any(|p| p.name.as_ref() == name);
        let answer = if asks("from") && asks("to") {
            json!({"from": "CDG", "to": "JFK", "depart": "2026-09-01", "travellers": 2, "cabin": "business",
                "meals": ["vegan"], "extras": ["lounge"], "email": "ada@example.com", "alerts": false})
        } else if asks("confirm") {
            json!({"confirm": true})
        } else {
            // Anything else this app cannot answer: it ends the call rather than decline for anyone.
            self.unknown = Some(format!("book-trip-app has no answer for `{}`", ctx.key));
            return ElicitResult::cancel();
        };
        let Value::Object(content) = answer else { return ElicitResult::cancel() };
        ElicitResult::accept(with_defaults(schema, &content))
    }

    async fn url(&mut self, ctx: AskContext<'_>, message: &str, url: &CheckedUrl) -> ElicitAction {
        eprintln!("{} asks ({}) to open {}: {message}", ctx.server, ctx.key, url.url);
        match &self.browser {
            Some(command) => match tokio::process::Command::new(command).arg(url.url.as_str()).status().await {
                Ok(status) if status.success() => ElicitAction::Accept,
                _ => ElicitAction::Cancel,
            },
            None => {
                eprintln!("open {} to continue", url.url);
                ElicitAction::Accept
            }
        }
    }

    async fn pending(&mut self, _ctx: AskContext<'_>, pending: PendingUrl<'_>) -> PendingAction {
        if pending.since.elapsed() >= PAGE_WAIT {
            return PendingAction::Cancel;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        PendingAction::Retry
    }

    fn unpresented(&mut self) -> Option<String> {
        self.unknown.take()
    }
}

fn option(args: &[String], name: &str) -> Option<String> {
    args.iter().position(|a| a == name).and_then(|at| args.get(at + 1)).cloned()
}

fn protocol(args: &[String]) -> Result<Protocol, String> {
    Ok(match option(args, "--protocol").as_deref() {
        None | Some("auto") => Protocol::Auto,
        Some(revision) => Protocol::Only(Revision::parse(revision).ok_or(USAGE)?),
    })
}

async fn run() -> Result<String, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let url = option(&args, "--url").ok_or(USAGE)?;
    let browser = option(&args, "--browser");
    // The runtime's client: it finds the server's era and puts each round's `_meta` in place.
    let options = ClientOptions::new("book-trip-app", env!("CARGO_PKG_VERSION"))
        .protocol(protocol(&args)?)
        .timeout(Duration::from_secs(90));
    let mut client = Client::connect(&Target::http(url), options).await.map_err(|e| e.to_string())?;
    if let Some(version) = client.session_revision() {
        eprintln!("{} speaks {version}", client.server_name());
    }
    let mut app = App { browser, unknown: None };
    let result = client.call_tool(&mut app, "book_trip", Map::new()).await.map_err(|e| e.to_string());
    client.close().await;
    let result = result?;
    let text: Vec<&str> =
        result["content"].as_array().into_iter().flatten().filter_map(|c| c["text"].as_str()).collect();
    Ok(text.join("\n"))
}

#[tokio::main]
async fn main() {
    match run().await {
        Ok(text) => println!("{text}"),
        Err(error) => {
            eprintln!("book-trip-app: {error}");
            std::process::exit(1);
        }
    }
}
