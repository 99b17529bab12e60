//! An rmcp server of its own — a `#[tool_router]` and a `ServerHandler` written here, no
//! `McpServer` — whose tools mix a plain one (`ping`) with ones that ask through the engine: by
//! form (`greet`), by a form completing the tool's own arguments (`order`, with a `once`), by
//! URL (`approve`, on an approval page this same process serves), by a typed form on a page
//! the engine renders (`save_card`), and a task of the Tasks extension that is an ordinary call
//! for clients without it (`reserve`). It uses only the public API of
//! `elicit-runtime` and rmcp, as a server of yours would: every setting is explained where it is
//! made.
//!
//! ```text
//! own-server --listen 127.0.0.1:8080            # MCP at http://127.0.0.1:8080/mcp, page at /pay/{id}
//! own-server --stdio [--page-listen ADDR]       # MCP on stdio, the page on ADDR (default: a free port)
//! ```
//! Sealing keys come from `ELICIT_STATE_KEYS` (comma-separated base64 32-byte keys, the first
//! seals); without it, a random key that no other process shares.

use std::net::SocketAddr;
use std::sync::Arc;

use elicit_runtime::rmcp::prelude::*;
use elicit_runtime::rmcp::rmcp::handler::server::router::tool::ToolRouter;
use elicit_runtime::rmcp::rmcp::handler::server::wrapper::Parameters;
use elicit_runtime::rmcp::rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use elicit_runtime::rmcp::rmcp::{ServerHandler, tool, tool_handler, tool_router};
use elicit_runtime::rmcp::{serve_http, serve_io_with, with_tasks_extension};
use elicit_runtime::server::pages::kit::ApprovalPage;
use elicit_runtime::server::task::TaskSupport;
use serde_json::Value;

const USAGE: &str = "usage: own-server (--listen ADDR | --stdio [--page-listen ADDR])";

/// What should we call you?
#[derive(Elicit)]
struct Name {
    /// Your name
    #[elicit(min_length = 1, max_length = 40)]
    name: String,
}

/// What would you like?
#[derive(Elicit)]
struct Order {
    /// What to order
    #[elicit(min_length = 1, max_length = 40)]
    item: String,
    /// How many
    #[elicit(minimum = 1, maximum = 9, default = 1)]
    quantity: u8,
}

/// Your card
#[derive(Elicit)]
struct Card {
    /// As printed on the front
    #[elicit(title = "Card number", min_length = 12, max_length = 19)]
    number: String,
}

/// How many seats should we hold?
#[derive(Elicit)]
struct Seats {
    /// Seats to hold
    #[elicit(minimum = 1, maximum = 9)]
    seats: u8,
}

/// The server: its own state, its own router, and the engine it asks through.
#[derive(Clone)]
struct Desk {
    elicitation: Elicitation,
    /// Where the approval page is reached, for the URLs the `approve` tool sends.
    public_url: Arc<str>,
    tool_router: ToolRouter<Desk>,
}

#[tool_router]
impl Desk {
    /// A plain tool: rmcp runs it as it would in any server.
    #[tool(description = "Answers pong")]
    async fn ping(&self) -> String {
        "pong".to_owned()
    }

    /// Asks by form. The handler returns a `String`; rmcp makes it the tool's text result.
    #[tool(description = "Asks your name, then greets you")]
    async fn greet(&self, call: ToolCall) -> Result<CallToolResponse, ErrorData> {
        call.run(&self.elicitation, |flow| async move {
            Ok(match flow.form::<Name>("name").await? {
                Answer::Accepted(Name { name }) => format!("Hello, {name}!"),
                Answer::Declined => "You declined to give your name.".to_owned(),
                Answer::Cancelled => "Greeting cancelled.".to_owned(),
            })
        })
        .await
    }

    /// Arguments completed by a form: `FormArgs<Order>` inside rmcp's own `Parameters` gives the
    /// tool `Order`'s schema as its `inputSchema` and lets incomplete arguments through (rmcp's
    /// `Parameters<Order>` would refuse them before the handler runs); `complete` asks only for
    /// what is missing or invalid. `ToolCall` comes first: rmcp's `Parameters` takes the
    /// arguments out of the call.
    #[tool(description = "Orders an item; asks for whatever the arguments leave out")]
    async fn order(
        &self,
        call: ToolCall,
        Parameters(order): Parameters<FormArgs<Order>>,
    ) -> Result<CallToolResponse, ErrorData> {
        call.run(&self.elicitation, |flow| order_body(flow, order)).await
    }

    /// Sees its request: reports progress, and stops when the client cancels.
    #[tool(description = "Counts to three with progress notifications, then waits until you cancel")]
    async fn count(&self, call: ToolCall) -> Result<CallToolResponse, ErrorData> {
        call.run(&self.elicitation, |flow| async move {
            for step in 1..=3 {
                flow.progress(f64::from(step), Some(3.0), Some(&format!("counted {step}"))).await?;
            }
            flow.cancelled().await;
            // The client is gone from this call; the notification tells a test the handler saw it.
            flow.progress(4.0, None, Some("cancelled")).await?;
            Ok("cancelled".to_owned())
        })
        .await
    }

    /// A task of the Tasks extension for a client that declares it, an ordinary call for any other
    /// (`TaskSupport::Optional`): one call, `run_task`; the three `tasks/*` methods below delegate
    /// to the engine, and `get_info` advertises the extension.
    #[tool(description = "Holds seats: a task for clients of the Tasks extension, an ordinary call for others")]
    async fn reserve(&self, call: ToolCall) -> Result<CallToolResponse, ErrorData> {
        call.run_task(&self.elicitation, TaskSupport::Optional, |flow| async move {
            // The long work starts here: from now on a client of the extension polls a task.
            flow.background().await;
            Ok(match flow.form::<Seats>("seats").await? {
                Answer::Accepted(Seats { seats }) => format!("Holding {seats} seat(s)."),
                Answer::Declined => "You declined: no seats held.".to_owned(),
                Answer::Cancelled => "Reservation cancelled.".to_owned(),
            })
        })
        .await
    }

    /// Asks by URL: the approval happens on a page of this server (the page kit's `ApprovalPage`,
    /// mounted in `run`). The engine mints the step's id; the handler builds the page's URL from it.
    #[tool(description = "Sends you to a page to approve a transfer of €42.00")]
    async fn approve(&self, call: ToolCall) -> Result<CallToolResponse, ErrorData> {
        let public_url = self.public_url.clone();
        call.run(&self.elicitation, |flow| async move {
            let answer = flow
                .url("approval", "Approve the transfer of €42.00 on our page.", |id| format!("{public_url}/pay/{id}"))
                .await?;
            let text = match answer {
                UrlAnswer::Completed(outcome) if outcome.get("approved") == Some(&Value::Bool(true)) => {
                    "Transfer approved."
                }
                UrlAnswer::Completed(_) => "Transfer denied on the page.",
                UrlAnswer::Declined => "You declined to open the page.",
                UrlAnswer::Cancelled => "Transfer cancelled.",
            };
            Ok(text.to_owned())
        })
        .await
    }

    /// Asks for a typed form on a page the engine renders (URL mode): the card number is typed
    /// on this server's page and never passes through the client. No page code of our own.
    #[tool(description = "Saves a card: typed on this server's page, never through the client")]
    async fn save_card(&self, call: ToolCall) -> Result<CallToolResponse, ErrorData> {
        call.run(&self.elicitation, |flow| async move {
            Ok(match flow.form_page::<Card>("card", "Enter your card on our page.").await? {
                Answer::Accepted(card) => format!("Card of {} digits saved.", card.number.len()),
                Answer::Declined | Answer::Cancelled => "No card saved.".to_owned(),
            })
        })
        .await
    }
}

/// The body of `order`: a function of the flow and the arguments, unit-testable on an `Engine`
/// with no server (`FormArgs::new()`, the arguments in the engine's `Request`).
async fn order_body(flow: Flow, order: FormArgs<Order>) -> Result<String, FlowError> {
    let Answer::Accepted(order) = order.complete(&flow).await? else {
        return Ok("Nothing ordered.".to_owned());
    };
    // A side effect after an ask runs inside `once`: on 2026-07-28 the handler is replayed
    // from the top every round, and a client may replay any round it was given.
    let number = flow.once("order-number", || async { Ok(order_number()?) }).await?;
    Ok(format!("Order {number}: {} × {}.", order.quantity, order.item))
}

/// An order number, from the system's randomness (which may fail: `?` makes it the tool's
/// `isError` result).
fn order_number() -> Result<String, std::io::Error> {
    let mut bytes = [0u8; 4];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(format!("#{:08X}", u32::from_be_bytes(bytes)))
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Desk {
    fn get_info(&self) -> ServerConfig {
        // `reserve` may run as a task: the Tasks extension is advertised.
        let capabilities = with_tasks_extension(ServerCapabilities::builder().enable_tools().build());
        ServerConfig::new(capabilities).with_server_info(Implementation::new("own-server", env!("CARGO_PKG_VERSION")))
    }

    // `supported_protocol_versions` (the revisions the engine speaks: rmcp's default also offers
    // 2025-03-26 and 2024-11-05, which the engine would serve as 2026-07-28), and `get_task`,
    // `update_task`, `cancel_task` delegated to the engine for `reserve`.
    elicit_runtime::elicitation_handler_methods!(elicitation);
}

/// The transport and addresses from the command line.
enum Listen {
    Http(SocketAddr),
    Stdio(SocketAddr),
}

fn parse_args() -> Result<Listen, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let addr = |value: Option<&String>| -> Result<SocketAddr, String> {
        value.ok_or_else(|| USAGE.to_owned())?.parse().map_err(|e| format!("{USAGE}: {e}"))
    };
    match args.first().map(String::as_str) {
        Some("--listen") if args.len() == 2 => Ok(Listen::Http(addr(args.get(1))?)),
        Some("--stdio") if args.len() == 1 => Ok(Listen::Stdio(SocketAddr::from(([127, 0, 0, 1], 0)))),
        Some("--stdio") if args.len() == 3 && args[1] == "--page-listen" => Ok(Listen::Stdio(addr(args.get(2))?)),
        _ => Err(USAGE.to_owned()),
    }
}

async fn run() -> Result<(), String> {
    let listen = parse_args()?;
    // The engine's name is the audience sealed into every `requestState`: a state minted by
    // another server is refused.
    let page_addr = match listen {
        Listen::Http(addr) | Listen::Stdio(addr) => addr,
    };
    let listener = tokio::net::TcpListener::bind(page_addr).await.map_err(|e| e.to_string())?;
    let public_url = format!("http://{}", listener.local_addr().map_err(|e| e.to_string())?);
    // `form_pages`: the engine renders the pages of `flow.form_page` at {public_url}/form/{id}.
    let engine =
        Engine::builder("own-server", KeyRing::from_env_or_generate("ELICIT_STATE_KEYS").map_err(|e| e.to_string())?)
            .form_pages(&public_url)
            .build();
    let elicitation = Elicitation::new(engine);
    // The pages share the engine (its completion store and keys) with the tools: the page kit's
    // approval page for `approve` at /pay/{id} (Approve and Deny, anti-forgery, one decision per
    // step, recorded as `{"approved": true|false}`; anonymous: this server has no users, so its
    // steps have no owner), and the engine's form pages, one line each.
    let approval = ApprovalPage::new(elicitation.engine(), "/pay").title("Approve the transfer of €42.00?");
    let page = approval.router().merge(elicitation.page_router());
    let desk = Desk { elicitation, public_url: Arc::from(public_url.as_str()), tool_router: Desk::tool_router() };
    match listen {
        Listen::Http(_) => {
            // `http_router`: MCP at `/mcp` with rmcp's defaults but for the Origin check (on:
            // only pages of this machine may send an `Origin`, against DNS rebinding), loopback
            // `Host`s only, bodies up to 4 MiB; 2025-era sessions capped overall and per client
            // (by address: `serve_http` passes it) and kept as long as a pushed ask may wait; the
            // wire layer's fixes; and each connection its own `Desk`, with its own cap on
            // outstanding 2025-era asks. Name other hosts with `http_router_with`.
            let mcp = desk.elicitation.clone().http_router(move |elicitation| Desk { elicitation, ..desk.clone() });
            let app = mcp.merge(page);
            eprintln!("listening on {public_url}/mcp");
            serve_http(listener, app).await.map_err(|e| e.to_string())
        }
        Listen::Stdio(_) => {
            eprintln!("payment page at {public_url}/pay/{{id}}");
            tokio::spawn(async move { axum::serve(listener, page).await });
            serve_io_with(desk, tokio::io::stdin(), tokio::io::stdout()).await.map_err(|e| e.to_string())
        }
    }
}

#[tokio::main]
async fn main() {
    if let Err(error) = run().await {
        eprintln!("own-server: {error}");
        std::process::exit(2);
    }
}
