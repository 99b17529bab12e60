//! A load generator for scaled-out `travel-server`s: many concurrent `book_trip` flows, each
//! answering with its own unique trip, spread over several instances that share the sealing keys
//! and one completion store.
//!
//! A flow is four `tools/call` requests — the first call, the trip form, the payment consent and
//! the confirmation — and each goes to the next instance in turn, so every round is served by a
//! different process than the one before. The payment page is submitted as a browser would (a
//! `GET` of the page, then a `POST` of its approve form with the page's cookie and hidden token)
//! right after the consent retry is sent: the retry waits in the store and is answered as soon as
//! the page is submitted, wherever that happened. A flow counts as lost or crossed unless its
//! final "Booked!" text names its own reference, route, date and e-mail.
//!
//! The client is plain JSON-RPC over HTTP with the headers and `_meta` of revision 2026-07-28, so
//! the figures measure the servers, not a client library.

use std::sync::Arc;
use std::time::{Duration, Instant};

use elicit_runtime::Elicit;
use serde_json::{Map, Value, json};
use tokio::sync::Semaphore;

use elicit_test_support::mcp::{McpHttp, form_and_url, with_meta};
use elicit_test_support::payment;

use crate::travel::{Trip, price};

/// The protocol revision spoken.
pub use elicit_test_support::mcp::PROTOCOL_VERSION;

/// The names of the four requests of a flow, in order, as reported.
pub const STEPS: [&str; 4] = ["call", "trip form", "payment", "confirm"];

/// How often a flow may be asked for the payment again (the page not seen yet) before it fails.
const MAX_PAYMENT_RETRIES: u32 = 5;

/// A plain MCP client over HTTP (the workspace's one, `elicit_test_support::mcp`): one JSON-RPC request
/// per POST, capabilities in every request's `_meta` (form and URL elicitation).
#[derive(Clone, Debug)]
pub struct McpClient {
    mcp: McpHttp,
}

impl Default for McpClient {
    fn default() -> Self {
        McpClient::new(Duration::from_secs(30))
    }
}

/// `/mcp` appended to a server's base URL, unless it is there already.
pub fn mcp_endpoint(server: &str) -> String {
    let server = server.trim_end_matches('/');
    if server.ends_with("/mcp") { server.to_owned() } else { format!("{server}/mcp") }
}

impl McpClient {
    /// A client whose every HTTP exchange is bounded by `timeout`.
    pub fn new(timeout: Duration) -> McpClient {
        McpClient { mcp: McpHttp::new(timeout) }
    }

    /// Sends `method` with `params` to the MCP endpoint `endpoint` and returns the JSON-RPC
    /// response (a result or an error object). `params._meta` gets the protocol version and the
    /// client capabilities.
    pub async fn request(&self, endpoint: &str, method: &str, mut params: Value) -> Result<Value, String> {
        with_meta(&mut params, &form_and_url());
        Ok(self.mcp.post(endpoint, method, params).await?.body)
    }

    /// `tools/call` of `tool`, with the answers and the state of the previous round, if any.
    pub async fn call_tool(
        &self,
        endpoint: &str,
        tool: &str,
        input_responses: Option<Value>,
        request_state: Option<&str>,
    ) -> Result<Value, String> {
        let mut params = json!({"name": tool, "arguments": {}});
        if let Some(responses) = input_responses {
            params["inputResponses"] = responses;
        }
        if let Some(state) = request_state {
            params["requestState"] = json!(state);
        }
        self.request(endpoint, elicit_runtime::wire::TOOLS_CALL, params).await
    }

    /// Submits a payment page the way a browser does when its Approve button is clicked (see
    /// `elicit_test_support::payment`).
    pub async fn approve_payment(&self, page_url: &str) -> Result<(), String> {
        let http = self.mcp.http();
        let visit = payment::visit_page(http, page_url.trim_end_matches('/')).await?;
        if visit.status != 200 || visit.cookie.is_none() || visit.token.is_none() {
            return Err(format!("GET {}: HTTP {}, no form to submit: {}", visit.url, visit.status, visit.body));
        }
        match visit.submit(http, "approve").await? {
            (200, _) => Ok(()),
            (status, text) => Err(format!("POST {}/approve: HTTP {status}: {text}", visit.url)),
        }
    }
}

/// What came back from one round.
#[derive(Debug, Clone, PartialEq)]
pub enum Round {
    /// `input_required`: the requests by key and the state to echo.
    Asked {
        /// `inputRequests`.
        requests: Map<String, Value>,
        /// `requestState`.
        state: Option<String>,
    },
    /// A complete tool result: its text and whether it is an error result.
    Complete {
        /// The text blocks, joined by newlines.
        text: String,
        /// `isError`.
        is_error: bool,
    },
    /// A JSON-RPC error.
    Error {
        /// `error.code`.
        code: i64,
        /// `error.message`.
        message: String,
    },
}

impl Round {
    /// Reads a JSON-RPC response.
    pub fn from_reply(reply: &Value) -> Result<Round, String> {
        if let Some(error) = reply.get("error") {
            return Ok(Round::Error {
                code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                message: error.get("message").and_then(Value::as_str).unwrap_or_default().to_owned(),
            });
        }
        let result = reply.get("result").ok_or_else(|| format!("neither result nor error: {reply}"))?;
        match result.get("resultType").and_then(Value::as_str) {
            Some("input_required") => Ok(Round::Asked {
                requests: result.get("inputRequests").and_then(Value::as_object).cloned().unwrap_or_default(),
                state: result.get("requestState").and_then(Value::as_str).map(str::to_owned),
            }),
            Some("complete") | None => {
                let text = result
                    .get("content")
                    .and_then(Value::as_array)
                    .map(|blocks| {
                        blocks
                            .iter()
                            .filter_map(|b| b.get("text").and_then(Value::as_str))
                            .collect::<Vec<_>>()
                            .join("\n")
                    })
                    .unwrap_or_default();
                Ok(Round::Complete { text, is_error: result.get("isError").and_then(Value::as_bool).unwrap_or(false) })
            }
            Some(other) => Err(format!("unknown resultType `{other}`: {reply}")),
        }
    }

    /// The state of an `input_required` round that asks for `key`, or why this round is not that.
    pub fn expect_asked(self, key: &str) -> Result<(Map<String, Value>, Option<String>), String> {
        match self {
            Round::Asked { requests, state } if requests.contains_key(key) => Ok((requests, state)),
            other => Err(format!("expected to be asked for `{key}`, got {other:?}")),
        }
    }
}

/// The URL of the URL-mode request under `key`.
pub fn requested_url(requests: &Map<String, Value>, key: &str) -> Option<String> {
    requests.get(key)?.get("params")?.get("url")?.as_str().map(str::to_owned)
}

/// What one load run is asked to do.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    /// Base URLs (or `/mcp` URLs) of the instances; request `i` of flow `n` goes to
    /// `servers[(n + i) % len]`.
    pub servers: Vec<String>,
    /// How many flows in all.
    pub flows: usize,
    /// How many flows run at once.
    pub concurrency: usize,
    /// How long after sending the consent retry the page is submitted.
    pub approve_delay: Duration,
    /// Bound on each HTTP exchange.
    pub request_timeout: Duration,
    /// Distinguishes the e-mails of this run from another's (unique answers across runs too).
    pub run_tag: String,
}

impl LoadConfig {
    /// `flows` flows, `concurrency` at a time, over `servers`, with the defaults for the rest.
    pub fn new(servers: Vec<String>, flows: usize, concurrency: usize) -> LoadConfig {
        let run_tag = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() % 1_000_000)
            .to_string();
        LoadConfig {
            servers,
            flows,
            concurrency,
            approve_delay: Duration::from_millis(20),
            request_timeout: Duration::from_secs(30),
            run_tag,
        }
    }
}

/// Latency figures of one step over all flows that reached it.
#[derive(Debug, Clone, PartialEq)]
pub struct StepLatency {
    /// The step's name (see [`STEPS`]).
    pub step: &'static str,
    /// How many samples.
    pub count: usize,
    /// Median.
    pub p50: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// Slowest.
    pub max: Duration,
}

/// The outcome of a load run.
#[derive(Debug, Clone)]
pub struct LoadReport {
    /// Flows started.
    pub flows: usize,
    /// Flows that ended with their own "Booked!" text.
    pub booked: usize,
    /// Flows that failed for any reason (transport, protocol, store, lost or crossed answers).
    pub errors: usize,
    /// Of those, flows that completed with a text not matching their own answers.
    pub lost_or_crossed: usize,
    /// Times a consent retry came back asking for the payment again (page not yet seen).
    pub payment_reasked: u64,
    /// Wall time of the whole run.
    pub elapsed: Duration,
    /// Per-step latency (the step's request alone, including the store wait for `payment`).
    pub steps: Vec<StepLatency>,
    /// Up to ten error messages, for diagnosis.
    pub sample_errors: Vec<String>,
}

impl LoadReport {
    /// Completed flows per second of wall time.
    pub fn flows_per_second(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 { self.booked as f64 / secs } else { 0.0 }
    }
}

impl std::fmt::Display for LoadReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "flows: {}  booked: {}  errors: {} (lost or crossed answers: {})  payment re-asked: {}",
            self.flows, self.booked, self.errors, self.lost_or_crossed, self.payment_reasked
        )?;
        writeln!(
            f,
            "elapsed: {:.2} s  throughput: {:.1} flows/s",
            self.elapsed.as_secs_f64(),
            self.flows_per_second()
        )?;
        writeln!(f, "{:<10} {:>7} {:>10} {:>10} {:>10}", "round", "count", "p50 ms", "p99 ms", "max ms")?;
        for step in &self.steps {
            writeln!(
                f,
                "{:<10} {:>7} {:>10.1} {:>10.1} {:>10.1}",
                step.step,
                step.count,
                step.p50.as_secs_f64() * 1000.0,
                step.p99.as_secs_f64() * 1000.0,
                step.max.as_secs_f64() * 1000.0
            )?;
        }
        for error in &self.sample_errors {
            writeln!(f, "error: {error}")?;
        }
        Ok(())
    }
}

/// Why a flow failed.
#[derive(Debug)]
enum FlowFailure {
    /// Transport, protocol or server error.
    Broken(String),
    /// The flow completed, but not with its own answers.
    Crossed(String),
}

/// What one flow measured.
struct FlowRun {
    latencies: [Option<Duration>; 4],
    payment_reasked: u64,
    result: Result<(), FlowFailure>,
}

/// Three letters, unique for `n < 26³`.
fn airport(n: usize) -> String {
    let n = n % (26 * 26 * 26);
    [n / 676, (n / 26) % 26, n % 26].iter().map(|&i| char::from(b'A' + i as u8)).collect()
}

/// The trip form answer of flow `n`: every field that can differ from flow to flow does.
pub fn trip_answer(run_tag: &str, n: usize) -> Map<String, Value> {
    let cabins = ["economy", "premium_economy", "business"];
    let extras: Vec<&str> = ["checked_bag", "lounge", "insurance"]
        .iter()
        .enumerate()
        .filter(|(i, _)| (n >> i) & 1 == 1)
        .map(|(_, e)| *e)
        .collect();
    let content = json!({
        "from": airport(n),
        // A different code for every flow, never the same as its own departure.
        "to": airport(n + 8_788),
        "depart": format!("2027-{:02}-{:02}", 1 + n % 12, 1 + n % 28),
        "travellers": 1 + n % 9,
        "cabin": cabins[n % 3],
        "meals": [],
        "extras": extras,
        "email": format!("flow{n}.run{run_tag}@loadgen.example"),
        "alerts": n.is_multiple_of(2),
    });
    match content {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// What flow `n`'s "Booked!" text must contain: the reference and total of its own quote, its
/// route, its date and its e-mail.
fn expected_fragments(content: &Map<String, Value>) -> Result<Vec<String>, String> {
    let trip = Trip::from_content(content).map_err(|e| format!("the generated trip does not parse: {e}"))?;
    let total = price(&trip);
    Ok(vec![
        "Booked! Reference BK-".to_owned(),
        format!("€{}.{:02} paid", total / 100, total % 100),
        format!("{} → {} on {}", trip.route.from, trip.route.to, trip.schedule.depart),
        format!("{} traveller(s)", trip.schedule.travellers),
        format!("goes to {}.", trip.email),
    ])
}

async fn one_flow(client: &McpClient, endpoints: &[String], config: &LoadConfig, n: usize) -> FlowRun {
    let mut run = FlowRun { latencies: [None; 4], payment_reasked: 0, result: Ok(()) };
    run.result = drive_flow(client, endpoints, config, n, &mut run.latencies, &mut run.payment_reasked).await;
    run
}

async fn timed(
    latencies: &mut [Option<Duration>; 4],
    step: usize,
    call: impl Future<Output = Result<Value, String>>,
) -> Result<Round, FlowFailure> {
    let started = Instant::now();
    let reply = call.await.map_err(FlowFailure::Broken)?;
    latencies[step] = Some(started.elapsed());
    Round::from_reply(&reply).map_err(FlowFailure::Broken)
}

async fn drive_flow(
    client: &McpClient,
    endpoints: &[String],
    config: &LoadConfig,
    n: usize,
    latencies: &mut [Option<Duration>; 4],
    payment_reasked: &mut u64,
) -> Result<(), FlowFailure> {
    let at = |step: usize| endpoints[(n + step) % endpoints.len()].as_str();
    let broken = FlowFailure::Broken;
    let content = trip_answer(&config.run_tag, n);
    let expected = expected_fragments(&content).map_err(broken)?;

    let (_, state) = timed(latencies, 0, client.call_tool(at(0), "book_trip", None, None))
        .await?
        .expect_asked("trip")
        .map_err(broken)?;

    let answers = json!({"trip": {"action": "accept", "content": content}});
    let (requests, mut state) =
        timed(latencies, 1, client.call_tool(at(1), "book_trip", Some(answers), state.as_deref()))
            .await?
            .expect_asked("payment")
            .map_err(broken)?;
    let page = requested_url(&requests, "payment").ok_or_else(|| broken(format!("no payment URL in {requests:?}")))?;

    // The consent retry goes first and waits in the store; the page is submitted meanwhile.
    let consent = json!({"payment": {"action": "accept"}});
    let retry = timed(latencies, 2, client.call_tool(at(2), "book_trip", Some(consent.clone()), state.as_deref()));
    let submit = async {
        tokio::time::sleep(config.approve_delay).await;
        client.approve_payment(&page).await
    };
    let (mut round, submitted) = tokio::join!(retry, submit);
    submitted.map_err(broken)?;
    let mut retries = 0;
    let confirm_state = loop {
        match round? {
            Round::Asked { requests, state: next } if requests.contains_key("confirm") => break next,
            Round::Asked { requests, state: next }
                if requests.contains_key("payment") && retries < MAX_PAYMENT_RETRIES =>
            {
                retries += 1;
                *payment_reasked += 1;
                state = next;
                round =
                    timed(latencies, 2, client.call_tool(at(2), "book_trip", Some(consent.clone()), state.as_deref()))
                        .await;
            }
            other => return Err(broken(format!("after the payment: {other:?}"))),
        }
    };

    let confirm = json!({"confirm": {"action": "accept", "content": {"confirm": true}}});
    match timed(latencies, 3, client.call_tool(at(3), "book_trip", Some(confirm), confirm_state.as_deref())).await? {
        Round::Complete { text, is_error: false } => {
            let missing: Vec<&String> = expected.iter().filter(|f| !text.contains(f.as_str())).collect();
            if missing.is_empty() {
                Ok(())
            } else {
                Err(FlowFailure::Crossed(format!("flow {n}: the result lacks {missing:?}: {text}")))
            }
        }
        other => Err(broken(format!("at the confirmation: {other:?}"))),
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    // Nearest rank.
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Runs `config.flows` flows, `config.concurrency` at a time, and reports.
pub async fn run(config: &LoadConfig) -> LoadReport {
    let endpoints: Arc<Vec<String>> = Arc::new(config.servers.iter().map(|s| mcp_endpoint(s)).collect());
    let client = McpClient::new(config.request_timeout);
    let permits = Arc::new(Semaphore::new(config.concurrency.max(1)));
    let config = Arc::new(config.clone());
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..config.flows {
        let (client, endpoints, permits, config) = (client.clone(), endpoints.clone(), permits.clone(), config.clone());
        tasks.spawn(async move {
            // The semaphore is never closed, so acquiring only waits.
            let _permit = permits.acquire_owned().await.ok();
            one_flow(&client, &endpoints, &config, n).await
        });
    }
    let mut samples: [Vec<Duration>; 4] = Default::default();
    let mut report = LoadReport {
        flows: config.flows,
        booked: 0,
        errors: 0,
        lost_or_crossed: 0,
        payment_reasked: 0,
        elapsed: Duration::ZERO,
        steps: Vec::new(),
        sample_errors: Vec::new(),
    };
    while let Some(joined) = tasks.join_next().await {
        let run = match joined {
            Ok(run) => run,
            Err(e) => FlowRun {
                latencies: [None; 4],
                payment_reasked: 0,
                result: Err(FlowFailure::Broken(format!("flow task: {e}"))),
            },
        };
        for (step, latency) in run.latencies.iter().enumerate() {
            samples[step].extend(*latency);
        }
        report.payment_reasked += run.payment_reasked;
        match run.result {
            Ok(()) => report.booked += 1,
            Err(failure) => {
                report.errors += 1;
                let message = match failure {
                    FlowFailure::Crossed(message) => {
                        report.lost_or_crossed += 1;
                        message
                    }
                    FlowFailure::Broken(message) => message,
                };
                if report.sample_errors.len() < 10 {
                    report.sample_errors.push(message);
                }
            }
        }
    }
    report.elapsed = started.elapsed();
    report.steps = STEPS
        .iter()
        .zip(samples.iter_mut())
        .map(|(step, samples)| {
            samples.sort_unstable();
            StepLatency {
                step,
                count: samples.len(),
                p50: percentile(samples, 50.0),
                p99: percentile(samples, 99.0),
                max: samples.last().copied().unwrap_or_default(),
            }
        })
        .collect();
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_flow_answers_differently_and_its_answer_parses() {
        let mut seen = std::collections::HashSet::new();
        for n in 0..2_000 {
            let content = trip_answer("t", n);
            assert!(expected_fragments(&content).is_ok(), "flow {n}: {content:?}");
            let key = (content["from"].clone(), content["to"].clone(), content["email"].clone());
            assert!(seen.insert(key), "flow {n} repeats an answer");
            assert_ne!(content["from"], content["to"]);
        }
    }

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let samples: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(percentile(&samples, 50.0), Duration::from_millis(50));
        assert_eq!(percentile(&samples, 99.0), Duration::from_millis(99));
        assert_eq!(percentile(&[], 99.0), Duration::ZERO);
    }
}
