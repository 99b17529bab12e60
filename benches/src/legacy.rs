//! The 2025-era end-to-end benchmark: the same `ask_name` flow as [`crate::e2e`], but on a
//! 2025-11-25 session, where the server *pushes* `elicitation/create` while the call is open.
//!
//! A [`Session`] is opened with `initialize` + `notifications/initialized` and keeps its
//! `Mcp-Session-Id`; a *flow* is one `tools/call` of [`FLOW_TOOL`] whose SSE stream carries the
//! pushed `elicitation/create`, answered with a POST on the session, then the call's result on the
//! same stream. Every message is checked: an ask of another method, a result of another id or a
//! greeting of another name is an error. Plain JSON-RPC over HTTP, so the figures measure the
//! servers, not a client library.
//!
//! [`park`] holds many flows suspended at once (each call's ask received and not yet answered), for
//! the memory a server holds per parked flow, then answers every one and checks every result.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use crate::server::FLOW_TOOL;

/// The protocol revision the sessions negotiate.
pub const LEGACY_VERSION: &str = "2025-11-25";

/// How long any one message may take to arrive: a silent server fails, it does not hang the run.
const MESSAGE_TIMEOUT: Duration = Duration::from_secs(60);

/// An HTTP client for sessions: no overall request timeout (a parked call's stream stays open as
/// long as the run needs), every read bounded by `MESSAGE_TIMEOUT` instead. Loopback only.
pub fn http_client() -> Result<reqwest::Client, String> {
    http_client_from(None)
}

/// [`http_client`] whose connections leave from `source` (a local address) when given.
pub fn http_client_from(source: Option<IpAddr>) -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .no_proxy()
        .connect_timeout(Duration::from_secs(10))
        .local_address(source)
        .build()
        .map_err(|e| format!("HTTP client: {e}"))
}

/// The JSON-RPC messages of one HTTP reply, in order: an SSE stream, or one `application/json` body.
#[derive(Debug)]
pub struct Messages {
    response: Option<reqwest::Response>,
    sse: bool,
    buffer: String,
    progress: usize,
}

impl Messages {
    fn new(response: reqwest::Response) -> Messages {
        let sse = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        Messages { response: Some(response), sse, buffer: String::new(), progress: 0 }
    }

    /// The next JSON-RPC message; an error when the reply ended or went silent first.
    pub async fn next(&mut self) -> Result<Value, String> {
        loop {
            if self.sse {
                while let Some(end) = self.buffer.find("\n\n") {
                    let event: String = self.buffer.drain(..end + 2).collect();
                    let data: Vec<&str> = event
                        .lines()
                        .filter_map(|l| l.strip_prefix("data:"))
                        .map(|d| d.strip_prefix(' ').unwrap_or(d))
                        .collect();
                    let data = data.join("\n");
                    if !data.trim().is_empty() {
                        return serde_json::from_str(&data)
                            .map_err(|e| format!("an SSE event that is not JSON ({e}): {data}"));
                    }
                }
            }
            let Some(response) = self.response.as_mut() else {
                return Err("the reply ended before the expected message".to_owned());
            };
            let chunk = tokio::time::timeout(MESSAGE_TIMEOUT, response.chunk())
                .await
                .map_err(|_| "the server went silent".to_owned())?
                .map_err(|e| format!("reading the reply: {e}"))?;
            match chunk {
                Some(bytes) => self.buffer.push_str(&String::from_utf8_lossy(&bytes)),
                None if self.sse => self.response = None,
                None => {
                    self.response = None;
                    let body = std::mem::take(&mut self.buffer);
                    return serde_json::from_str(&body).map_err(|e| format!("a reply that is not JSON ({e}): {body}"));
                }
            }
        }
    }

    /// The next message that is not a notification (progress, logging, ... are skipped; the
    /// `notifications/progress` among them counted, [`Messages::progress`]).
    pub async fn next_with_id(&mut self) -> Result<Value, String> {
        loop {
            let message = self.next().await?;
            if message.get("id").is_some() {
                return Ok(message);
            }
            if message.get("method").and_then(Value::as_str) == Some("notifications/progress") {
                self.progress += 1;
            }
        }
    }

    /// The `notifications/progress` skipped so far.
    pub fn progress(&self) -> usize {
        self.progress
    }
}

/// One 2025-11-25 session over Streamable HTTP.
#[derive(Debug)]
pub struct Session {
    http: reqwest::Client,
    endpoint: String,
    id: String,
    next_id: AtomicU64,
}

impl Session {
    /// `initialize` (form elicitation declared) and `notifications/initialized`.
    pub async fn open(http: &reqwest::Client, endpoint: &str) -> Result<Session, String> {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": LEGACY_VERSION,
            "capabilities": {"elicitation": {"form": {}}},
            "clientInfo": {"name": "elicit-bench-loadgen", "version": "0.1.0"}}});
        let response = request(http, endpoint, None, &init).send().await.map_err(|e| format!("initialize: {e}"))?;
        let status = response.status();
        let id = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .ok_or_else(|| format!("initialize: HTTP {status}, no Mcp-Session-Id"))?;
        let reply = Messages::new(response).next_with_id().await.map_err(|e| format!("initialize: {e}"))?;
        let version = reply.pointer("/result/protocolVersion").and_then(Value::as_str);
        if version != Some(LEGACY_VERSION) {
            return Err(format!("initialize: not a {LEGACY_VERSION} session: {reply}"));
        }
        let session = Session { http: http.clone(), endpoint: endpoint.to_owned(), id, next_id: AtomicU64::new(1) };
        session.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await?;
        Ok(session)
    }

    /// Posts a notification or a response on the session; an error unless the server accepted it.
    pub async fn send(&self, message: &Value) -> Result<(), String> {
        let response = request(&self.http, &self.endpoint, Some(&self.id), message)
            .send()
            .await
            .map_err(|e| format!("posting {message}: {e}"))?;
        let status = response.status();
        // Drain the (empty) body so the connection goes back to the pool.
        let _ = response.bytes().await;
        if status.is_success() { Ok(()) } else { Err(format!("posting {message}: HTTP {status}")) }
    }

    /// Starts `tools/call tool`; its JSON-RPC id and the call's stream.
    pub async fn call(&self, tool: &str) -> Result<(u64, Messages), String> {
        self.call_with(tool, false).await
    }

    /// [`Session::call`], with a `progressToken` in the call's `_meta` when `progress` is set: the
    /// client asks for progress, so a server that sends heartbeats sends them on this call.
    pub async fn call_with(&self, tool: &str, progress: bool) -> Result<(u64, Messages), String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut params = json!({"name": tool, "arguments": {}});
        if progress {
            params["_meta"] = json!({"progressToken": format!("progress-{id}")});
        }
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
        let response = request(&self.http, &self.endpoint, Some(&self.id), &call)
            .send()
            .await
            .map_err(|e| format!("tools/call {tool}: {e}"))?;
        if !response.status().is_success() {
            let status = response.status();
            let body = response.text().await.unwrap_or_default();
            return Err(format!("tools/call {tool}: HTTP {status}: {body}"));
        }
        Ok((id, Messages::new(response)))
    }

    /// Starts a flow of [`FLOW_TOOL`] and reads it up to its pushed ask; the call parked on the
    /// server, waiting for [`Parked::finish`].
    pub async fn start_flow(&self) -> Result<Parked, String> {
        self.start_flow_with(false).await
    }

    /// [`Session::start_flow`], the call asking for progress when `progress` is set
    /// ([`Session::call_with`]).
    pub async fn start_flow_with(&self, progress: bool) -> Result<Parked, String> {
        let (call_id, mut messages) = self.call_with(FLOW_TOOL, progress).await?;
        let ask = messages.next_with_id().await?;
        if ask.get("method").and_then(Value::as_str) != Some("elicitation/create") {
            return Err(format!("the call's first message is not elicitation/create: {ask}"));
        }
        let ask_id = ask.get("id").cloned().unwrap_or(Value::Null);
        Ok(Parked { call_id, ask_id, messages })
    }

    /// One whole flow, every message checked.
    pub async fn flow(&self, name: &str) -> Result<(), String> {
        self.start_flow().await?.finish(self, name).await.map(|_| ())
    }

    /// `DELETE` of the session (best effort).
    pub async fn close(&self) {
        let request = self
            .http
            .delete(&self.endpoint)
            .header("Mcp-Session-Id", &self.id)
            .header("MCP-Protocol-Version", LEGACY_VERSION);
        if let Ok(response) = request.send().await {
            let _ = response.bytes().await;
        }
    }
}

/// A flow whose ask arrived and is not answered yet.
#[derive(Debug)]
pub struct Parked {
    call_id: u64,
    ask_id: Value,
    messages: Messages,
}

impl Parked {
    /// Answers the ask with `name` and checks the call's result greets it; the
    /// `notifications/progress` the call carried meanwhile, counted.
    pub async fn finish(mut self, session: &Session, name: &str) -> Result<usize, String> {
        let answer =
            json!({"jsonrpc": "2.0", "id": self.ask_id, "result": {"action": "accept", "content": {"name": name}}});
        session.send(&answer).await?;
        let reply = self.messages.next_with_id().await?;
        if reply.get("id") != Some(&json!(self.call_id)) {
            return Err(format!("the call's stream carries another message: {reply}"));
        }
        let greeting = reply
            .pointer("/result/content/0/text")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("the call did not complete: {reply}"))?;
        if !greeting.contains(name) {
            return Err(format!("the call greets someone else: {greeting}"));
        }
        Ok(self.messages.progress())
    }
}

fn request(http: &reqwest::Client, endpoint: &str, session: Option<&str>, body: &Value) -> reqwest::RequestBuilder {
    let mut request = http
        .post(endpoint)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", LEGACY_VERSION)
        .body(body.to_string());
    if let Some(session) = session {
        request = request.header("Mcp-Session-Id", session);
    }
    request
}

/// What [`park`] measured.
#[derive(Debug, Clone)]
pub struct ParkReport {
    /// Flows held parked at once (every one of them: fewer is an error).
    pub flows: usize,
    /// Sessions they were spread over.
    pub sessions: usize,
    /// The local addresses the connections left from (none: the system's choice).
    pub sources: Vec<IpAddr>,
    /// The server's RSS before any session, in bytes.
    pub rss_before_sessions: u64,
    /// The server's RSS with the sessions open and no flow parked, in bytes.
    pub rss_sessions: u64,
    /// The server's RSS with every flow parked, in bytes (once it has settled).
    pub rss_parked: u64,
    /// The server's open files with every flow parked: at least one connection per parked call.
    pub server_open_files: usize,
    /// How long parking every flow took, from the first call to the last ask received.
    pub parking_seconds: f64,
    /// How long the flows were then held parked ([`ParkPlan::hold`]), and the server's CPU time
    /// (user + system) and RSS over that hold; zero without one.
    pub hold_seconds: f64,
    /// The server's CPU time over the hold, in seconds.
    pub hold_cpu_seconds: f64,
    /// The server's RSS at the end of the hold, in bytes (its RSS with the flows parked without one).
    pub rss_held: u64,
    /// The `notifications/progress` all the calls carried, from their first message to their result.
    pub progress_received: usize,
}

/// Where [`park`] parks its flows and reads the server's figures.
#[derive(Debug, Clone)]
pub struct ParkPlan {
    /// The server's MCP endpoint.
    pub endpoint: String,
    /// The server's process id: its RSS, open files and open-file limit are read from `/proc`.
    pub pid: u32,
    /// Flows to park at once.
    pub flows: usize,
    /// Sessions to spread them over (evenly).
    pub sessions: usize,
    /// Calls being started (and, later, answered) at a time.
    pub opening: usize,
    /// Local addresses to open connections from, one HTTP client each; the sessions take them in
    /// turn. Empty: one client, the system's choice. One source address reaches one server port
    /// from at most the ephemeral port range (about 28,000 ports on Linux), and each parked call
    /// holds a connection, so a large run spreads its connections over several loopback addresses
    /// (`127.0.0.0/8` is all loopback on Linux).
    pub sources: Vec<IpAddr>,
    /// Whether each call carries a `progressToken` (a server's heartbeats then reach it).
    pub progress: bool,
    /// How long to hold every flow parked after the RSS is sampled, the server's CPU time read
    /// around it (zero: no hold).
    pub hold: Duration,
}

/// Files a run of `flows` parked flows needs open, on each side: a connection per parked call,
/// the connections answering (`opening` at a time) and some slack.
pub fn files_needed(flows: usize, opening: usize) -> usize {
    flows + opening + 64
}

/// `count` consecutive IPv4 addresses from `first` (`127.0.0.1`, `127.0.0.2`, ...).
pub fn consecutive_addresses(first: Ipv4Addr, count: usize) -> Vec<IpAddr> {
    (0..count as u32).map(|i| IpAddr::V4(Ipv4Addr::from(u32::from(first).wrapping_add(i)))).collect()
}

/// Checks that the server (process `pid`) and this process may both open `needed` files; an
/// error saying which may not, and how to fix it, otherwise.
pub fn check_open_file_limits(pid: u32, needed: usize) -> Result<(), String> {
    for (who, limit) in [("this process", open_file_limit("self")?), ("the server", open_file_limit(&pid.to_string())?)]
    {
        if limit < needed as u64 {
            return Err(format!(
                "{who} may open {limit} files, fewer than the {needed} this run needs (a connection per parked \
                 flow): raise the limit (`ulimit -n`, up to the hard limit `ulimit -Hn`; beyond it needs \
                 CAP_SYS_RESOURCE) or park fewer flows"
            ));
        }
    }
    Ok(())
}

/// The soft limit on open files of a process (`self` or a pid), from `/proc/PROC/limits`.
fn open_file_limit(process: &str) -> Result<u64, String> {
    let path = format!("/proc/{process}/limits");
    let limits = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    let line = limits.lines().find(|line| line.starts_with("Max open files"));
    let soft = line.and_then(|line| line.trim_start_matches("Max open files").split_whitespace().next());
    match soft {
        Some("unlimited") => Ok(u64::MAX),
        Some(soft) => soft.parse().map_err(|_| format!("{path}: unreadable open-file limit {soft}")),
        None => Err(format!("{path}: no open-file limit")),
    }
}

/// The files process `pid` holds open (`/proc/PID/fd`).
pub fn open_files(pid: u32) -> Result<usize, String> {
    let path = format!("/proc/{pid}/fd");
    Ok(std::fs::read_dir(&path).map_err(|e| format!("{path}: {e}"))?.count())
}

/// The RSS of process `pid` once it has settled: sampled every 250 ms until two samples in a row
/// are within 0.5 % of each other (at most 10 s; then the last sample).
async fn settled_rss(pid: u32) -> Result<u64, String> {
    tokio::time::sleep(Duration::from_millis(250)).await;
    let mut last = rss_of(pid)?;
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let now = rss_of(pid)?;
        if now.abs_diff(last) <= last / 200 {
            return Ok(now);
        }
        last = now;
    }
    Ok(last)
}

/// Opens `plan.sessions` sessions, parks `plan.flows` flows spread evenly over them (at most
/// `plan.opening` being started, and later finished, at a time), and samples the server's RSS
/// before the sessions, with them open, and with every flow parked; then answers every ask and
/// checks every result.
///
/// A flow counts as parked once its call's `elicitation/create` has arrived: the server's
/// handler is then suspended on the ask, and the call's stream is open. The RSS with the flows
/// parked is sampled only once every flow has counted so, and once the RSS has settled; and the
/// server must then hold at least one open file per parked flow (its connection). Any flow that
/// fails, at any step, or any check that does not hold, is an error: a run never reports on fewer
/// flows than asked.
pub async fn park(plan: &ParkPlan) -> Result<ParkReport, String> {
    let (flows, pid) = (plan.flows.max(1), plan.pid);
    let sessions = plan.sessions.clamp(1, flows);
    let clients = if plan.sources.is_empty() {
        vec![http_client()?]
    } else {
        plan.sources.iter().map(|source| http_client_from(Some(*source))).collect::<Result<Vec<_>, _>>()?
    };
    let rss_before_sessions = rss_of(pid)?;
    let mut open = Vec::with_capacity(sessions);
    for at in 0..sessions {
        let session = Session::open(&clients[at % clients.len()], &plan.endpoint).await;
        open.push(Arc::new(session.map_err(|e| format!("opening session {} of {sessions}: {e}", at + 1))?));
    }
    let rss_sessions = settled_rss(pid).await?;

    let started = tokio::time::Instant::now();
    let gate = Arc::new(tokio::sync::Semaphore::new(plan.opening.max(1)));
    let (parked_tx, mut parked_rx) = tokio::sync::mpsc::unbounded_channel::<Result<(), String>>();
    let (release_tx, release_rx) = tokio::sync::watch::channel(false);
    let mut tasks = tokio::task::JoinSet::new();
    let progress = plan.progress;
    for flow in 0..flows {
        let session = Arc::clone(&open[flow % sessions]);
        let (gate, parked_tx, mut release_rx) = (Arc::clone(&gate), parked_tx.clone(), release_rx.clone());
        tasks.spawn(async move {
            let started = {
                let _permit = gate.acquire().await.map_err(|e| e.to_string())?;
                session.start_flow_with(progress).await
            };
            let parked = match started {
                Ok(parked) => {
                    let _ = parked_tx.send(Ok(()));
                    parked
                }
                Err(error) => {
                    let _ = parked_tx.send(Err(error.clone()));
                    return Err(error);
                }
            };
            release_rx.wait_for(|go| *go).await.map_err(|e| e.to_string())?;
            // Bounded too: each answer is a POST, and every pooled connection is busy with a stream.
            let _permit = gate.acquire().await.map_err(|e| e.to_string())?;
            parked.finish(&session, &format!("Ada-{flow}")).await
        });
    }
    drop((parked_tx, release_rx));
    let mut parked = 0usize;
    while parked < flows {
        match parked_rx.recv().await {
            Some(Ok(())) => parked += 1,
            Some(Err(error)) => return Err(format!("parking flow {} of {flows}: {error}", parked + 1)),
            None => return Err(format!("only {parked} of {flows} flows parked: the parking tasks ended early")),
        }
    }
    let parking_seconds = started.elapsed().as_secs_f64();
    let rss_parked = settled_rss(pid).await?;
    let server_open_files = open_files(pid)?;
    if server_open_files < flows {
        return Err(format!(
            "the server holds {server_open_files} open files with {flows} flows parked: fewer than one connection per \
             parked call, so not every call is held open"
        ));
    }
    let (mut hold_seconds, mut hold_cpu_seconds, mut rss_held) = (0.0, 0.0, rss_parked);
    if !plan.hold.is_zero() {
        let (cpu_before, held) = (cpu_seconds(pid)?, tokio::time::Instant::now());
        tokio::time::sleep(plan.hold).await;
        hold_cpu_seconds = cpu_seconds(pid)? - cpu_before;
        hold_seconds = held.elapsed().as_secs_f64();
        rss_held = rss_of(pid)?;
    }
    let _ = release_tx.send(true);
    let (mut finished, mut progress_received) = (0usize, 0usize);
    while let Some(joined) = tasks.join_next().await {
        progress_received += joined
            .map_err(|e| format!("a flow's task failed: {e}"))?
            .map_err(|e| format!("finishing a parked flow ({finished} of {flows} finished): {e}"))?;
        finished += 1;
    }
    for session in &open {
        session.close().await;
    }
    Ok(ParkReport {
        flows,
        sessions,
        sources: plan.sources.clone(),
        rss_before_sessions,
        rss_sessions,
        rss_parked,
        server_open_files,
        parking_seconds,
        hold_seconds,
        hold_cpu_seconds,
        rss_held,
        progress_received,
    })
}

/// User + system CPU time of process `pid` (all its threads), in seconds, from `/proc/PID/stat`.
pub fn cpu_seconds(pid: u32) -> Result<f64, String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).map_err(|e| format!("/proc/{pid}/stat: {e}"))?;
    // Fields after the command name (which may hold spaces), from field 3 (`state`) on.
    let rest = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or_default();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |at: usize| fields.get(at).and_then(|v| v.parse::<u64>().ok());
    // utime and stime are fields 14 and 15.
    let (Some(user), Some(system)) = (ticks(11), ticks(12)) else {
        return Err(format!("/proc/{pid}/stat: unreadable: {stat}"));
    };
    Ok((user + system) as f64 / clock_ticks())
}

/// Clock ticks per second of `/proc` times (`getconf CLK_TCK`; 100 on Linux).
fn clock_ticks() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|out| String::from_utf8(out.stdout).ok())
            .and_then(|text| text.trim().parse().ok())
            .filter(|ticks: &f64| *ticks > 0.0)
            .unwrap_or(100.0)
    })
}

/// The resident set size of process `pid`, in bytes (Linux `/proc/PID/status`, `VmRSS`).
pub fn rss_of(pid: u32) -> Result<u64, String> {
    let status =
        std::fs::read_to_string(format!("/proc/{pid}/status")).map_err(|e| format!("/proc/{pid}/status: {e}"))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().strip_suffix("kB"))
        .and_then(|kb| kb.trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .ok_or_else(|| format!("/proc/{pid}/status has no VmRSS"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failing test should stop loudly")]
mod tests {
    use super::*;
    use crate::server::bench_server;

    async fn serve() -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = bench_server().http_router(&[]);
        tokio::spawn(async move { axum::serve(listener, app).await });
        format!("http://{addr}/mcp")
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_legacy_flow_against_the_bench_server() {
        let url = serve().await;
        let session = Session::open(&http_client().unwrap(), &url).await.unwrap();
        session.flow("Grace").await.unwrap();
        session.flow("Ada").await.unwrap();
        // The checks bite: answering with one name and expecting another is an error.
        let parked = session.start_flow().await.unwrap();
        let answer = json!({"jsonrpc": "2.0", "id": parked.ask_id, "result": {"action": "decline"}});
        let Parked { call_id, mut messages, .. } = parked;
        session.send(&answer).await.unwrap();
        let reply = messages.next_with_id().await.unwrap();
        assert_eq!(reply["id"], json!(call_id));
        assert_eq!(reply["result"]["content"][0]["text"], "Hello, stranger!");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn parks_flows_over_sessions_then_finishes_them() {
        // This process is the server too: its RSS and open files are what is read.
        let url = serve().await;
        let plan = ParkPlan {
            endpoint: url,
            pid: std::process::id(),
            flows: 40,
            sessions: 4,
            opening: 8,
            sources: consecutive_addresses(Ipv4Addr::new(127, 0, 0, 1), 2),
            progress: false,
            hold: Duration::ZERO,
        };
        let report = park(&plan).await.unwrap();
        assert_eq!((report.flows, report.sessions), (40, 4));
        assert!(report.rss_before_sessions > 0 && report.rss_parked > 0);
        // Both ends of 40 parked calls' connections are in this process.
        assert!(report.server_open_files >= 80, "{report:?}");
        assert!(rss_of(std::process::id()).unwrap() > 0);
    }

    #[test]
    fn addresses_limits_and_files() {
        assert_eq!(
            consecutive_addresses(Ipv4Addr::new(127, 0, 0, 255), 2),
            [IpAddr::V4(Ipv4Addr::new(127, 0, 0, 255)), IpAddr::V4(Ipv4Addr::new(127, 0, 1, 0))]
        );
        assert!(open_file_limit("self").unwrap() > 0);
        assert!(open_files(std::process::id()).unwrap() > 0);
        let error = check_open_file_limits(std::process::id(), usize::MAX).unwrap_err();
        assert!(error.contains("this process may open"), "{error}");
    }
}
