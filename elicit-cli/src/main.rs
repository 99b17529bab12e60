//! `elicit`: a terminal MCP client that renders elicitations, for servers of both eras:
//! 2026-07-28 (Multi Round-Trip Requests) and 2025-11-25/2025-06-18 (requests pushed mid-call).
//!
//! It lists and calls tools on any MCP server (Streamable HTTP or stdio), finds the server's era
//! (probe, then fall back; or `--protocol`), drives every round or answers every pushed request, shows forms and URL consent in the terminal (or answers from a file with
//! `--answers`), and prints the final result.

mod authorize;
mod browser;
mod conformance;
mod keys;
mod printable;
mod scripted;
mod tasks;
mod terminal;

use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use elicit_runtime::client::{CallError, DriveError, Driver, Responder};
use elicit_runtime::rmcp::client::auth::{OAuth, TokenStore};
use elicit_runtime::rmcp::client::{Client, ClientOptions, Protocol, Target};
use elicit_runtime::wire::{self, Capabilities, Revision};
use serde_json::{Map, Value};

use printable::{one_line, printable, printable_json};

/// A terminal MCP client that renders elicitations (forms and URL mode).
#[derive(Parser)]
#[command(name = "elicit", version, args_conflicts_with_subcommands = true)]
struct Cli {
    /// Client mode for the official conformance suite: the server URL (routes on
    /// MCP_CONFORMANCE_SCENARIO).
    #[arg(long, value_name = "URL")]
    conformance: Option<String>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// List the server's tools.
    Tools {
        #[command(flatten)]
        server: ServerArgs,
        #[command(flatten)]
        timeout: TimeoutArgs,
    },
    /// Call a tool, answering every input request, and print the final result.
    Call {
        #[command(flatten)]
        server: ServerArgs,
        /// The tool to call.
        tool: String,
        #[command(flatten)]
        call: CallArgs,
    },
    /// Get a prompt, answering every input request, and print its messages.
    Prompt {
        #[command(flatten)]
        server: ServerArgs,
        /// The prompt to get.
        prompt: String,
        #[command(flatten)]
        call: CallArgs,
    },
    /// Forget the tokens kept for a server (and account).
    Logout {
        /// The server's Streamable HTTP endpoint.
        #[arg(long)]
        url: String,
        /// The account the tokens are kept under.
        #[arg(long, default_value = DEFAULT_ACCOUNT)]
        account: String,
    },
}

/// The account tokens are kept under unless `--account` names another.
const DEFAULT_ACCOUNT: &str = "default";

/// The folder OAuth tokens are kept in: `ELICIT_CONFIG_DIR`, else the user's configuration folder
/// (`$XDG_CONFIG_HOME` or `~/.config` on Unix, `%APPDATA%` on Windows, `~/Library/Application
/// Support` on macOS), plus `elicit/tokens`.
fn token_dir() -> Result<std::path::PathBuf, String> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(std::path::PathBuf::from);
    if let Some(dir) = var("ELICIT_CONFIG_DIR") {
        return Ok(dir.join("tokens"));
    }
    let base = if cfg!(windows) {
        var("APPDATA")
    } else if cfg!(target_os = "macos") {
        var("HOME").map(|home| home.join("Library/Application Support"))
    } else {
        var("XDG_CONFIG_HOME").or_else(|| var("HOME").map(|home| home.join(".config")))
    };
    base.map(|dir| dir.join("elicit").join("tokens"))
        .ok_or_else(|| "cannot find a configuration folder for tokens (set ELICIT_CONFIG_DIR)".to_owned())
}

#[derive(Args)]
struct ServerArgs {
    #[command(flatten)]
    endpoint: EndpointArgs,
    /// The protocol revision: `auto` probes for 2026-07-28 and falls back to `initialize`
    /// (2025-11-25, or 2025-06-18 as the server negotiates); a version forces it.
    #[arg(long, value_enum, default_value_t = ProtocolArg::Auto)]
    protocol: ProtocolArg,
    /// Send `NAME: VALUE` with every HTTP request (repeatable), e.g. an API key. The value is a
    /// secret: it is never printed, not even in errors.
    #[arg(long = "header", value_name = "NAME:VALUE")]
    headers: Vec<String>,
    /// Send `Authorization: Bearer TOKEN` with every HTTP request, the token read from the
    /// environment variable VAR (so it stays out of the command line and shell history).
    #[arg(long, value_name = "VAR")]
    bearer_env: Option<String>,
    /// The account OAuth tokens are kept under for this server (several logins to one server).
    #[arg(long, default_value = DEFAULT_ACCOUNT)]
    account: String,
    /// Open the authorization page with `CMD URL` instead of the system browser (after consent).
    #[arg(long = "auth-browser", value_name = "CMD")]
    auth_browser: Option<String>,
}

#[derive(Args)]
#[group(required = true, multiple = false)]
struct EndpointArgs {
    /// The server's Streamable HTTP endpoint, e.g. http://127.0.0.1:8080/mcp.
    #[arg(long)]
    url: Option<String>,
    /// A command line that starts a server speaking stdio.
    #[arg(long, value_name = "CMD")]
    stdio: Option<String>,
}

/// `--protocol`.
#[derive(Clone, Copy, ValueEnum)]
enum ProtocolArg {
    /// Probe, then fall back.
    Auto,
    /// 2026-07-28 only.
    #[value(name = "2026-07-28")]
    V20260728,
    /// `initialize` with 2025-11-25.
    #[value(name = "2025-11-25")]
    V20251125,
    /// `initialize` with 2025-06-18.
    #[value(name = "2025-06-18")]
    V20250618,
}

impl ServerArgs {
    fn target(&self) -> Target {
        match (&self.endpoint.url, &self.endpoint.stdio) {
            (Some(url), _) => Target::http(url.clone()),
            (None, Some(cmd)) => Target::shell(cmd.clone()),
            // clap's group makes one of them required.
            (None, None) => Target::http(String::new()),
        }
    }

    /// How to connect: the era, the capabilities to declare, the time bound and the static
    /// credentials. Errors name a header or variable, never a secret.
    fn options(&self, capabilities: Capabilities, timeout: Duration) -> Result<ClientOptions, String> {
        let mut options = ClientOptions::new("elicit", env!("CARGO_PKG_VERSION"))
            .protocol(self.protocol())
            .capabilities(capabilities)
            .timeout(timeout);
        for header in &self.headers {
            let Some((name, value)) = header.split_once(':') else {
                return Err("--header must be NAME:VALUE".to_owned());
            };
            options = options.header(name, value).map_err(|e| format!("--header: {e}"))?;
        }
        if let Some(var) = &self.bearer_env {
            let token = match std::env::var(var) {
                Ok(token) if !token.trim().is_empty() => token,
                Ok(_) => return Err(format!("--bearer-env: the variable {var} is empty")),
                Err(_) => return Err(format!("--bearer-env: the variable {var} is not set (or not Unicode)")),
            };
            options = options
                .bearer(&token)
                .map_err(|_| format!("--bearer-env: the token in {var} has characters an HTTP header cannot carry"))?;
        }
        // OAuth when the server asks for it, unless the user brought an Authorization header.
        let static_authorization = self.bearer_env.is_some()
            || self
                .headers
                .iter()
                .any(|h| h.split(':').next().is_some_and(|name| name.trim().eq_ignore_ascii_case("authorization")));
        if let (Some(url), false) = (&self.endpoint.url, static_authorization) {
            // Without a configuration folder, tokens last for this run only.
            let store = match token_dir() {
                Ok(dir) => TokenStore::file(&dir, url, &self.account),
                Err(_) => TokenStore::memory(),
            };
            let authorizer = authorize::TerminalAuthorizer::new(self.auth_browser.clone(), timeout);
            options = options.oauth(OAuth::new(authorizer, "elicit").store(store, self.account.clone()));
        }
        Ok(options)
    }

    fn protocol(&self) -> Protocol {
        match self.protocol {
            ProtocolArg::Auto => Protocol::Auto,
            ProtocolArg::V20260728 => Protocol::Only(Revision::V2026_07_28),
            ProtocolArg::V20251125 => Protocol::Only(Revision::V2025_11_25),
            ProtocolArg::V20250618 => Protocol::Only(Revision::V2025_06_18),
        }
    }
}

#[derive(Args)]
struct TimeoutArgs {
    /// Give up on any one request the server leaves unanswered this many seconds.
    #[arg(long = "timeout", value_name = "SECONDS", default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..))]
    seconds: u64,
}

impl TimeoutArgs {
    fn duration(&self) -> Duration {
        Duration::from_secs(self.seconds)
    }
}

/// Which elicitation modes to declare.
#[derive(Clone, Copy, ValueEnum)]
enum Modes {
    /// Form and URL mode.
    Both,
    /// Form mode only.
    Form,
    /// URL mode only.
    Url,
    /// No elicitation at all.
    None,
}

#[derive(Args)]
struct CallArgs {
    /// Arguments as a JSON object.
    #[arg(long, value_name = "JSON")]
    args: Option<String>,
    /// Print the final result as JSON.
    #[arg(long)]
    json: bool,
    /// Answer from FILE (a JSON object from input request key to
    /// {"action":"accept","content":{..}} / {"action":"decline"} / {"action":"cancel"}) instead of
    /// asking in the terminal.
    #[arg(long, value_name = "FILE")]
    answers: Option<String>,
    /// Open consented URLs by running `CMD URL` instead of the system browser.
    #[arg(long, value_name = "CMD")]
    browser: Option<String>,
    /// Give up on a pending out-of-band step after this many seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    wait: u64,
    #[command(flatten)]
    timeout: TimeoutArgs,
    /// Elicitation modes to declare.
    #[arg(long, value_enum, default_value_t = Modes::Both)]
    modes: Modes,
    /// Declare the Tasks extension: the server may run the call as a task, which is polled
    /// (status shown; r checks now, c cancels) until it ends.
    #[arg(long)]
    tasks: bool,
    /// With --tasks: cancel a task that has not ended after this many seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 3600, requires = "tasks")]
    task_deadline: u64,
}

impl CallArgs {
    fn capabilities(&self) -> Capabilities {
        let (form, url) = match self.modes {
            Modes::Both => (true, true),
            Modes::Form => (true, false),
            Modes::Url => (false, true),
            Modes::None => (false, false),
        };
        Capabilities { form, url, sampling: false, roots: false }
    }

    fn arguments(&self) -> Result<Option<Map<String, Value>>, String> {
        let Some(text) = &self.args else { return Ok(None) };
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => Ok(Some(map)),
            Ok(_) => Err("--args must be a JSON object".to_owned()),
            Err(e) => Err(format!("--args is not JSON: {e}")),
        }
    }
}

async fn run_call(server: &ServerArgs, method: &str, name: &str, call: &CallArgs) -> Result<Value, String> {
    let arguments = call.arguments()?;
    let answers = call.answers.as_deref().map(scripted::load).transpose()?;
    let options = server.options(call.capabilities(), call.timeout.duration())?;
    let mut client = Client::connect(&server.target(), options).await.map_err(|e| e.to_string())?;
    let endpoint = client.endpoint().to_owned();
    let mut driver = client.driver();
    if call.tasks {
        driver = driver.tasks(tasks::policy(Duration::from_secs(call.task_deadline)));
    }
    let mut params = Map::new();
    params.insert("name".into(), Value::String(name.to_owned()));
    if let Some(arguments) = arguments {
        params.insert("arguments".into(), Value::Object(arguments));
    }
    let wait = Duration::from_secs(call.wait);
    let result = match answers {
        Some(answers) => {
            let mut responder = scripted::Scripted::new(answers, call.browser.clone(), wait, endpoint);
            drive(&mut client, &driver, &mut responder, method, params).await
        }
        None => {
            let mut responder = terminal::Terminal::new(call.browser.clone(), wait, endpoint);
            drive(&mut client, &driver, &mut responder, method, params).await
        }
    };
    client.close().await;
    result
}

async fn drive<R: Responder>(
    client: &mut Client,
    driver: &Driver,
    responder: &mut R,
    method: &str,
    params: Map<String, Value>,
) -> Result<Value, String> {
    client.call_with(driver, responder, method, params).await.map_err(|error| match error {
        // The server's whole message (the library's `Display` clips it for logs), bounded; it is
        // neutralised where it is printed.
        DriveError::Call(CallError::Rpc { code, message, .. }) => {
            let end = message.char_indices().nth(MAX_SERVER_MESSAGE).map_or(message.len(), |(at, _)| at);
            let more = if end < message.len() { "…" } else { "" };
            format!("server error {code}: {}{more}", &message[..end])
        }
        other => other.to_string(),
    })
}

/// The most characters of a server's error message shown.
const MAX_SERVER_MESSAGE: usize = 2000;

fn print_result(result: &Value, json: bool) {
    if json {
        println!("{}", printable_json(result, true));
        return;
    }
    if result.get("isError") == Some(&Value::Bool(true)) {
        println!("The tool reported an error:");
    }
    let blocks = result.get("content").or_else(|| result.get("messages")).and_then(Value::as_array);
    for block in blocks.into_iter().flatten() {
        let text = block.get("text").or_else(|| block.pointer("/content/text")).and_then(Value::as_str);
        match text {
            Some(text) => println!("{}", printable(text)),
            None => println!("{}", printable_json(block, false)),
        }
    }
}

async fn run(cli: Cli) -> Result<(), String> {
    if let Some(url) = cli.conformance {
        return conformance::run(&url).await;
    }
    match cli.command {
        None => Err("give a command (tools, call, prompt) or --conformance URL; see --help".to_owned()),
        Some(Command::Tools { server, timeout }) => {
            let options = server.options(Capabilities::ELICITATION, timeout.duration())?;
            let client = Client::connect(&server.target(), options).await.map_err(|e| e.to_string())?;
            let tools = client.list_all_tools().await;
            client.close().await;
            for tool in tools.map_err(|e| e.to_string())? {
                println!("{}\t{}", one_line(&tool.name), one_line(tool.description.as_deref().unwrap_or("")));
            }
            Ok(())
        }
        Some(Command::Call { server, tool, call }) => {
            let result = run_call(&server, wire::TOOLS_CALL, &tool, &call).await?;
            print_result(&result, call.json);
            Ok(())
        }
        Some(Command::Prompt { server, prompt, call }) => {
            let result = run_call(&server, wire::PROMPTS_GET, &prompt, &call).await?;
            print_result(&result, call.json);
            Ok(())
        }
        Some(Command::Logout { url, account }) => {
            let store = TokenStore::file(&token_dir()?, &url, &account);
            match store.remove() {
                Ok(true) => eprintln!("Signed out of {} ({}).", one_line(&url), one_line(&account)),
                Ok(false) => eprintln!("No tokens were kept for {} ({}).", one_line(&url), one_line(&account)),
                Err(e) => return Err(format!("cannot remove the tokens: {e}")),
            }
            Ok(())
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("elicit: cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(run(cli));
    // Everything the run started has ended or is moot; what may still be blocked is a read of
    // standard input (the sign-in also accepts a pasted address, and that read cannot be
    // cancelled). Waiting for it would keep `elicit` open after its result until Enter is pressed.
    runtime.shutdown_background();
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("elicit: {}", one_line(&message));
            ExitCode::FAILURE
        }
    }
}
