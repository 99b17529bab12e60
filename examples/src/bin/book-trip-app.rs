//! A Rust application driving `book_trip` on the runtime's rmcp-backed `Caller`: it connects with
//! rmcp's own client, and the runtime's `Driver` runs every round (the trip form, the payment
//! page, the confirmation) with this application's answers.
//!
//! ```text
//! book-trip-app --url http://127.0.0.1:8080/mcp [--browser COMMAND]
//! ```
//! The trip and the confirmation are answered by the application; the payment page is opened
//! with `COMMAND URL` (without `--browser` the URL is printed for you to open), and the app waits
//! for it to be completed.

use std::time::Duration;

use elicit_runtime::client::form::with_defaults;
use elicit_runtime::client::rmcp_caller::RmcpCaller;
use elicit_runtime::client::{AskContext, CheckedUrl, Driver, PendingAction, PendingUrl, Responder};
use elicit_runtime::schema::RequestedSchema;
use elicit_runtime::wire::{self, Capabilities, ElicitAction, ElicitResult};
use rmcp::model::ProtocolVersion;
use rmcp::service::{ClientLifecycleMode, ClientServiceExt as _};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Map, Value, json};

const USAGE: &str = "usage: book-trip-app --url URL [--browser COMMAND]";
/// How long the app waits for the payment page to be completed.
const PAGE_WAIT: Duration = Duration::from_secs(60);

/// The application's answers: a fixed trip, an opened payment page, a ticked confirmation.
struct App {
    browser: Option<String>,
}

impl Responder for App {
    async fn form(&mut self, ctx: AskContext<'_>, message: &str, schema: &RequestedSchema) -> ElicitResult {
        eprintln!("{} asks ({}): {message}", ctx.server, ctx.key);
        let answer = match ctx.key {
            "trip" => json!({"from": "CDG", "to": "JFK", "depart": "2026-09-01", "travellers": 2, "cabin": "business",
                "meals": ["vegan"], "extras": ["lounge"], "email": "ada@example.com", "alerts": false}),
            "confirm" => json!({"confirm": true}),
            // Anything else this app does not know how to answer.
            _ => return ElicitResult::decline(),
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
}

fn option(args: &[String], name: &str) -> Option<String> {
    args.iter().position(|a| a == name).and_then(|at| args.get(at + 1)).cloned()
}

async fn run() -> Result<String, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let url = option(&args, "--url").ok_or(USAGE)?;
    let browser = option(&args, "--browser");
    // rmcp's client, speaking 2026-07-28 (`server/discover`, then stateless requests).
    let mode = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    let client =
        ().serve_with_lifecycle(StreamableHttpClientTransport::from_uri(url.clone()), mode)
            .await
            .map_err(|e| format!("cannot connect to {url}: {e}"))?;
    let server = client
        .peer_info()
        .and_then(|info| info.server_info.as_ref().map(|i| i.name.clone()))
        .unwrap_or_else(|| url.clone());
    // The runtime's caller puts each round's `_meta` (capabilities, client info) in place.
    let mut caller = RmcpCaller::new(client.peer().clone()).timeout(Duration::from_secs(90));
    let info = json!({"name": "book-trip-app", "version": env!("CARGO_PKG_VERSION")});
    let driver = Driver::new(Capabilities::ELICITATION, info, server);
    let mut params = Map::new();
    params.insert("name".into(), json!("book_trip"));
    params.insert("arguments".into(), json!({}));
    let result =
        driver.call(&mut caller, &mut App { browser }, wire::TOOLS_CALL, params).await.map_err(|e| e.to_string());
    let _ = client.cancel().await;
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
