//! Static credentials: `elicit --header NAME:VALUE` and `--bearer-env VAR` reach a real
//! `travel-server` that requires a bearer token, and the secret never shows — not on stderr, not
//! in an error, not in `--json` output — whether the call succeeds, the server refuses the token,
//! or the header is malformed.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::{cli, process};

use std::process::Command;
use std::time::Duration;

use cli::{Run, Sandbox};
use serde_json::json;

/// The bound on every run.
const LIMIT: Duration = Duration::from_secs(60);
/// The token the server knows (and the user it stands for).
const SECRET: &str = "s3cr3t-Tok3n-4f9c2e";
/// A token the server does not know.
const WRONG: &str = "wr0ng-Tok3n-77ab1d";

/// A travel-server that requires `Authorization: Bearer SECRET`.
fn protected_server() -> process::Listening {
    cli::bins();
    let mut command = Command::new(&cli::bins().travel_server);
    command
        .args(["--listen", "127.0.0.1:0", "--store", "memory"])
        .env("ELICIT_BEARER_TOKENS", format!("{SECRET}=ada"))
        .env_remove("ELICIT_STATE_KEYS")
        .env_remove("RUST_LOG");
    process::Listening::start(command)
}

/// Runs `elicit ARGS` with `env` set, no standard input, and a time bound.
fn elicit_with_env(args: &[&str], env: &[(&str, &str)]) -> Run {
    cli::elicit_with_env(args, env, LIMIT)
}

/// Panics if any secret shows anywhere in the run's output.
fn no_secret(run: &Run) {
    for secret in [SECRET, WRONG, "k3y-v4lue"] {
        assert!(!run.stdout.contains(secret) && !run.stderr.contains(secret), "a secret was printed:\n{run}");
    }
}

/// The `rate_trip` answers: a rating and a contact.
fn answers(sandbox: &Sandbox) -> String {
    sandbox.answers(&json!({
        "rating": {"action": "accept", "content": {"stars": 5, "comment": "fine"}},
        "contact": {"action": "accept", "content": {"email": "ada@example.com"}}
    }))
}

#[test]
fn bearer_env_and_header_reach_the_server_and_never_show() {
    let server = protected_server();
    let url = server.mcp_url();
    let sandbox = Sandbox::new();
    let file = answers(&sandbox);
    let call = ["call", "--url", &url, "rate_trip", "--answers", &file, "--json"];

    // Without credentials the server refuses.
    let run = elicit_with_env(&call, &[]).failure();
    let said = run.stderr.to_lowercase();
    assert!(said.contains("requires authorization") || said.contains("auth required"), "{run}");

    // --bearer-env: the token from the environment, the call goes through.
    let mut args = call.to_vec();
    args.extend(["--bearer-env", "MY_TOKEN"]);
    let run = elicit_with_env(&args, &[("MY_TOKEN", SECRET)]).success();
    assert!(run.stdout.contains("\"content\""), "{run}");
    no_secret(&run);

    // --header with the whole Authorization header, plus another one.
    let header = format!("Authorization: Bearer {SECRET}");
    let mut args = call.to_vec();
    args.extend(["--header", &header, "--header", "X-Api-Key:k3y-v4lue"]);
    let run = elicit_with_env(&args, &[]).success();
    no_secret(&run);

    // A token the server does not know: refused, and neither token is printed.
    let mut args = call.to_vec();
    args.extend(["--bearer-env", "MY_TOKEN"]);
    let run = elicit_with_env(&args, &[("MY_TOKEN", WRONG)]).failure();
    no_secret(&run);
}

#[test]
fn malformed_credentials_are_refused_without_showing_them() {
    let server = protected_server();
    let url = server.mcp_url();
    let tools = ["tools", "--url", url.as_str()];

    let bad_value = format!("X-Api-Key:{SECRET}\u{1}");
    let mut args = tools.to_vec();
    args.extend(["--header", &bad_value]);
    let run = elicit_with_env(&args, &[]).failure().stderr_has("--header: header `X-Api-Key`");
    no_secret(&run);

    let no_colon = SECRET;
    let mut args = tools.to_vec();
    args.extend(["--header", no_colon]);
    let run = elicit_with_env(&args, &[]).failure().stderr_has("--header must be NAME:VALUE");
    no_secret(&run);

    let mut args = tools.to_vec();
    args.extend(["--bearer-env", "MY_TOKEN"]);
    let run = elicit_with_env(&args, &[("MY_TOKEN", &format!("{SECRET}\n{SECRET}"))])
        .failure()
        .stderr_has("--bearer-env: the token in MY_TOKEN");
    no_secret(&run);
    elicit_with_env(&args, &[]).failure().stderr_has("--bearer-env: the variable MY_TOKEN is not set");

    // The transport's own headers cannot be replaced.
    let mut args = tools.to_vec();
    args.extend(["--header", "Mcp-Session-Id: x"]);
    elicit_with_env(&args, &[]).failure().stderr_has("the transport sets this header itself");
}
