//! An rmcp server of its own — a `#[tool_router]` and a `ServerHandler` written here, no
//! `McpServer` — whose tools mix a plain one (`ping`) with ones that ask through the engine: by
//! form (`greet`) and by URL (`approve`, on the travel showcase's payment page, served by this
//! same process).
//!
//! ```text
//! own-server --listen 127.0.0.1:8080            # MCP at http://127.0.0.1:8080/mcp, page at /pay/{id}
//! own-server --stdio [--page-listen ADDR]       # MCP on stdio, the page on ADDR (default: a free port)
//! ```
//! Sealing keys come from `ELICIT_STATE_KEYS`, as for travel-server.

use std::borrow::Cow;
use std::sync::Arc;

use elicit_examples::travel::{PaymentSummaries, PaymentSummary, payment_page_at};
use elicit_examples::{Transport, exit_usage, keys_from_env, parse_args};
use elicit_runtime::Elicit;
use elicit_runtime::rmcp::{DEFAULT_MAX_REQUEST_BODY, Elicitation, ToolCall, serve_io_with, wire_layer};
use elicit_runtime::server::{Answer, Engine, FlowError, UrlAnswer};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{
    CallToolResponse, CallToolResult, ContentBlock, ErrorData, Implementation, ProtocolVersion, ServerCapabilities,
    ServerConfig,
};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, tool, tool_handler, tool_router};
use serde_json::Value;

const USAGE: &str = "usage: own-server (--listen ADDR | --stdio [--page-listen ADDR])";

/// What should we call you?
#[derive(Elicit)]
struct Name {
    /// Your name
    #[elicit(min_length = 1, max_length = 40)]
    name: String,
}

/// The server: its own state, its own router, and the engine it asks through.
#[derive(Clone)]
struct Desk {
    elicitation: Elicitation,
    public_url: Arc<str>,
    summaries: PaymentSummaries,
    tool_router: ToolRouter<Desk>,
}

fn text(message: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(message.into())])
}

#[tool_router]
impl Desk {
    /// A plain tool: rmcp runs it as it would in any server.
    #[tool(description = "Answers pong")]
    async fn ping(&self) -> String {
        "pong".to_owned()
    }

    /// Asks by form.
    #[tool(description = "Asks your name, then greets you")]
    async fn greet(&self, call: ToolCall) -> Result<CallToolResponse, ErrorData> {
        call.run(&self.elicitation, |flow| async move {
            Ok(match flow.form::<Name>("name").await? {
                Answer::Accepted(Name { name }) => text(format!("Hello, {name}!")),
                Answer::Declined => text("You declined to give your name."),
                Answer::Cancelled => text("Greeting cancelled."),
            })
        })
        .await
    }

    /// Sees its request: reports progress, and stops when the client cancels.
    #[tool(description = "Counts to three with progress notifications, then waits until you cancel")]
    async fn count(&self, call: ToolCall) -> Result<CallToolResponse, ErrorData> {
        call.run(&self.elicitation, |flow| async move {
            for step in 1..=3 {
                flow.progress(f64::from(step), Some(3.0), Some(&format!("counted {step}")))
                    .await
                    .map_err(FlowError::Failed)?;
            }
            flow.cancelled().await;
            // The client is gone from this call; the notification tells a test the handler saw it.
            flow.progress(4.0, None, Some("cancelled")).await.map_err(FlowError::Failed)?;
            Ok(text("cancelled"))
        })
        .await
    }

    /// Asks by URL: the approval happens on a page of this server.
    #[tool(description = "Sends you to a page to approve a transfer of €42.00")]
    async fn approve(&self, call: ToolCall) -> Result<CallToolResponse, ErrorData> {
        let (public_url, summaries) = (self.public_url.clone(), self.summaries.clone());
        call.run(&self.elicitation, |flow| async move {
            let summary = PaymentSummary { amount: "€42.00".into(), trip: "a transfer to the desk".into() };
            let answer = flow
                .url("approval", "Approve the transfer of €42.00 on our page.", |id| {
                    summaries.record(id, summary);
                    format!("{public_url}/pay/{id}")
                })
                .await?;
            Ok(match answer {
                UrlAnswer::Completed(outcome) if outcome.get("approved") == Some(&Value::Bool(true)) => {
                    text("Transfer approved.")
                }
                UrlAnswer::Completed(_) => text("Transfer denied on the page."),
                UrlAnswer::Declined => text("You declined to open the page."),
                UrlAnswer::Cancelled => text("Transfer cancelled."),
            })
        })
        .await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Desk {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("own-server", env!("CARGO_PKG_VERSION")))
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Owned(vec![ProtocolVersion::V_2025_06_18, ProtocolVersion::V_2025_11_25, ProtocolVersion::V_2026_07_28])
    }
}

async fn run() -> std::io::Result<()> {
    elicit_examples::init_log();
    let options = parse_args(std::env::args().skip(1), USAGE, &["page-listen"]).unwrap_or_else(|e| exit_usage(&e));
    let keys = keys_from_env().unwrap_or_else(|e| exit_usage(&e));
    let engine = Engine::builder("own-server", keys.ring).build();
    let http_addr = options.http_addr().unwrap_or_else(|e| exit_usage(&e));
    let listener = tokio::net::TcpListener::bind(http_addr).await?;
    let public_url = format!("http://{}", listener.local_addr()?);
    let store = engine.url_completions().clone();
    let summaries = PaymentSummaries::new(store.clone());
    let page = payment_page_at(store, keys.page_secrets, summaries.clone(), &public_url);
    let desk = Desk {
        elicitation: Elicitation::new(engine),
        public_url: Arc::from(public_url.as_str()),
        summaries,
        tool_router: Desk::tool_router(),
    };
    match options.transport {
        Transport::Http(_) => {
            let config = StreamableHttpServerConfig::default()
                .with_json_response(true)
                .with_sse_keep_alive(None)
                .with_max_request_body_bytes(DEFAULT_MAX_REQUEST_BODY);
            let service = StreamableHttpService::new(
                move || Ok(Desk { elicitation: desk.elicitation.for_connection(), ..desk.clone() }),
                Arc::new(LocalSessionManager::default()),
                config,
            );
            let app =
                wire_layer(axum::Router::new().nest_service("/mcp", service), DEFAULT_MAX_REQUEST_BODY).merge(page);
            eprintln!("listening on http://{}/mcp", listener.local_addr()?);
            axum::serve(listener, app).await
        }
        Transport::Stdio => {
            eprintln!("payment page at {public_url}/pay/{{id}}");
            tokio::spawn(async move { axum::serve(listener, page).await });
            serve_io_with(desk, tokio::io::stdin(), tokio::io::stdout()).await
        }
    }
}

#[tokio::main]
async fn main() {
    if let Err(error) = run().await {
        eprintln!("own-server: {error}");
        std::process::exit(1);
    }
}
