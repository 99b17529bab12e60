//! The person's flow end to end, against a real authorization server: `oidc-provider` (a
//! certified OpenID provider, pinned in `.tools/peers/oidc` by scripts/install-peers.sh and
//! configured by tests/peers/oidc_provider.mjs for PKCE, dynamic registration, resource-bound JWT
//! access tokens and refresh tokens), protecting a real `travel-server --oidc-issuer`.
//!
//! `elicit` is refused (401), discovers the authorization server from the server's metadata,
//! registers, shows the authorization page on its consent screen, and only after consent hands it
//! to the browser: a headless Chromium, where the test signs in as the provider's test account and
//! allows access; the provider redirects to elicit's loopback listener, the token is kept in an
//! owner-only file, and the call proceeds and answers its forms. A second run uses the stored
//! token (no browser); once the access token has expired (the server refuses it), the next run
//! refreshes it with the refresh token (no browser); `elicit logout` removes it.
//!
//! Without Chromium, Node 22 or oidc-provider installed the test is skipped with a message —
//! except under `CI`, where their absence fails it.

#![cfg(unix)]

use elicit_test_support::chromium::{Chromium, chromium_or_skip};
use elicit_test_support::peers::oidc::{Account, Provider, node_or_skip};
use elicit_test_support::{cli, process, wait};

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard, mpsc};
use std::time::Duration;

use cli::terminal::{ENTER, Terminal};
use cli::{Browser, Run, Sandbox, kept_token, spawn_elicit_in, token_files};
use serde_json::{Value, json};

/// The bound on every wait but the token's expiry.
const LIMIT: Duration = Duration::from_secs(60);
/// The access tokens' lifetime at the provider: long enough for the first two runs, short
/// enough to wait out.
const ACCESS_TOKEN_TTL: u64 = 20;
/// The provider's test account.
const ACCOUNT: Account = Account { login: "ada", password: "an0ther-Passw0rd", sub: "ada-lovelace" };

/// A travel-server accepting the provider's access tokens.
fn protected_server(issuer: &str) -> process::Listening {
    let mut command = Command::new(&cli::bins().travel_server);
    command
        .args(["--listen", "127.0.0.1:0", "--store", "memory", "--oidc-issuer", issuer])
        .env_remove("ELICIT_BEARER_TOKENS")
        .env_remove("ELICIT_STATE_KEYS")
        .env_remove("RUST_LOG");
    process::Listening::start(command)
}

/// A 2026-07-28 `tools/list` to `mcp` with `token` (if any): the status and `WWW-Authenticate`.
fn probe(mcp: &str, token: Option<&str>) -> (u16, String) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let client = reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(20)).build().unwrap();
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}});
        let mut request = client
            .post(mcp)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", "tools/list")
            .body(body.to_string());
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.unwrap();
        let challenge = response
            .headers()
            .get("www-authenticate")
            .map(|v| v.to_str().unwrap_or_default().to_owned())
            .unwrap_or_default();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap_or_default();
        assert!(status != 400, "the probe is malformed: {text}");
        (status, challenge)
    })
}

/// The `rate_trip` answers: a rating and a contact.
fn answers(sandbox: &Sandbox) -> String {
    sandbox.answers(&json!({
        "rating": {"action": "accept", "content": {"stars": 4, "comment": "signed in"}},
        "contact": {"action": "accept", "content": {"email": "ada@example.com"}}
    }))
}

/// What `rate_trip` says for those answers.
const THANKS: &str = "Thanks for 4 star(s) (signed in)";

/// The one stored token file (kept for its owner only), read.
fn stored(config: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(kept_token(config)).unwrap()).unwrap()
}

/// The stored access and refresh tokens.
fn tokens(stored: &Value) -> (String, String) {
    let response = &stored["credentials"]["token_response"];
    (
        response["access_token"].as_str().unwrap_or_else(|| panic!("no access token in {stored}")).to_owned(),
        response["refresh_token"].as_str().unwrap_or_else(|| panic!("no refresh token in {stored}")).to_owned(),
    )
}

/// The claims of a JWT, unverified (the server verifies; the test only reads).
fn claims(jwt: &str) -> Value {
    use base64::Engine as _;
    let payload = jwt.split('.').nth(1).unwrap_or_else(|| panic!("not a JWT: {jwt}"));
    serde_json::from_slice(&base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap()
}

/// Runs `elicit ARGS` with `ELICIT_CONFIG_DIR=config`, no standard input, within [`LIMIT`].
fn elicit_in(config: &Path, args: &[&str]) -> Run {
    cli::elicit_in(config, args, LIMIT)
}

/// Waits until `condition` holds, for at most `limit`, looking every 250 ms: some conditions are
/// requests to the server.
fn wait_until(limit: Duration, what: &str, condition: impl FnMut() -> bool) {
    wait::until_every(limit, Duration::from_millis(250), what, condition);
}

/// One Chromium and one provider at a time: the machine is small.
static ONE_BROWSER: Mutex<()> = Mutex::new(());

/// What each test starts from: the provider, a travel-server it protects (and that server's
/// `/mcp`), a sandbox with elicit's config folder and the `rate_trip` answers, Chromium, and the
/// test's turn at the browser, held until all of them are gone (the last field, dropped last; a
/// test taking the fields apart binds `_one` first, which drops it last).
struct Setup {
    provider: Provider,
    server: process::Listening,
    mcp: String,
    sandbox: Sandbox,
    config: PathBuf,
    file: String,
    chromium: Chromium,
    _one: MutexGuard<'static, ()>,
}

impl Setup {
    /// Everything started; `None` after a SKIPPED line when Chromium, Node 22 or oidc-provider is
    /// missing outside CI.
    fn start(test: &str) -> Option<Setup> {
        let chromium = chromium_or_skip(test)?;
        let node = node_or_skip(test)?;
        cli::bins();
        let one = ONE_BROWSER.lock().unwrap_or_else(|e| e.into_inner());
        let provider = Provider::start(&node, ACCOUNT, &[], &["--access-token-ttl", &ACCESS_TOKEN_TTL.to_string()]);
        let server = protected_server(&provider.issuer);
        let mcp = server.mcp_url();
        let sandbox = Sandbox::new();
        let config = sandbox.path("config");
        let file = answers(&sandbox);
        let chromium = Chromium::start(&chromium);
        Some(Setup { provider, server, mcp, sandbox, config, file, chromium, _one: one })
    }
}

#[test]
fn sign_in_with_chromium_at_oidc_provider_then_stored_refreshed_and_logged_out() {
    const TEST: &str = "sign_in_with_chromium_at_oidc_provider_then_stored_refreshed_and_logged_out";
    let Some(setup) = Setup::start(TEST) else { return };
    let Setup { _one, provider, server, mcp, sandbox, config, file, mut chromium } = setup;
    let browser_command = sandbox.browser(Browser::RecordOnly);

    // The server refuses a request without a token, and points at its metadata, which names the
    // provider.
    let (status, challenge) = probe(&mcp, None);
    assert_eq!(status, 401, "{challenge}");
    assert!(challenge.contains("resource_metadata=") && challenge.contains("scope=\"mcp\""), "{challenge}");

    // First run, in a terminal: the consent screen shows the provider's page; nothing opens
    // before consent.
    let call = ["call", "--url", &mcp, "rate_trip", "--answers", &file, "--json"];
    let mut args = call.to_vec();
    args.extend(["--auth-browser", &browser_command]);
    let mut term = Terminal::start_with_env(&args, &[("ELICIT_CONFIG_DIR", &config.to_string_lossy())]);
    term.expect("asks you to sign in and authorize elicit");
    let shown = term.expect_regex(r"http://127\.0\.0\.1:[0-9]+/auth\?[^\s]+");
    assert!(shown.starts_with(&format!("{}/auth?", provider.issuer)), "{shown}");
    assert!(shown.contains("code_challenge_method=S256"), "{shown}");
    let resource = url::form_urlencoded::byte_serialize(mcp.as_bytes()).collect::<String>();
    assert!(shown.contains(&format!("resource={resource}")), "the page asks for a token for this server: {shown}");
    term.expect("host: 127.0.0.1");
    term.expect("Open this page in your browser?");
    assert!(sandbox.opened().is_empty(), "the page was opened before consent");
    term.send(ENTER);

    // The browser is handed the page shown; the person signs in and allows access in Chromium.
    wait_until(LIMIT, "elicit to hand the page to the browser", || !sandbox.opened().is_empty());
    assert_eq!(sandbox.opened(), vec![shown.clone()], "the page opened is the page shown");
    let tab = chromium.open(&shown);
    chromium.type_into(&tab, "login", ACCOUNT.login, LIMIT);
    chromium.type_into(&tab, "password", ACCOUNT.password, LIMIT);
    chromium.click(&tab, "sign-in", LIMIT);
    let asked = chromium.wait_for(
        &tab,
        "document.getElementById('allow') && document.readyState === 'complete' ? document.getElementById('resources').innerText : null",
        LIMIT,
        "no consent page after signing in",
    );
    assert!(asked.as_str().unwrap_or_default().contains(&mcp), "the consent names this server: {asked}");
    chromium.click(&tab, "allow", LIMIT);
    chromium.wait_for(
        &tab,
        "document.body && document.body.innerText.includes('close this tab') ? location.href : null",
        LIMIT,
        "the provider did not send the browser back to elicit",
    );
    term.expect("Signed in.");
    let (code, transcript) = term.finish();
    assert_eq!(code, 0, "{transcript}\nprovider:\n{}\nserver:\n{}", provider.stderr(), server.stderr());
    // The call proceeded and both forms were answered.
    assert!(transcript.contains(THANKS), "{transcript}");

    // The token is kept in a file only its owner may read, in a folder only its owner may enter.
    let first = stored(&config);
    assert_eq!(first["server"], json!(mcp), "{first}");
    let (access, refresh) = tokens(&first);
    let issued = claims(&access);
    assert_eq!(issued["aud"], json!(mcp), "the access token is bound to this server: {issued}");
    assert_eq!(issued["sub"], json!(ACCOUNT.sub), "{issued}");
    assert_eq!(issued["iss"], json!(provider.issuer), "{issued}");
    // This server accepts it; a token whose signature does not match is refused, and so is this
    // token at another server of the same provider (it is not their audience).
    assert_eq!(probe(&mcp, Some(&access)).0, 200);
    let (status, challenge) = probe(&mcp, Some(&format!("{access}x")));
    assert_eq!(status, 401, "a forged signature is refused");
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    let other = protected_server(&provider.issuer);
    let (status, challenge) = probe(&other.mcp_url(), Some(&access));
    assert_eq!(status, 401, "a token for another server is refused: {challenge}");
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    drop(other);

    // Second run: the stored token is used; nobody is asked, no browser opens.
    let run = elicit_in(&config, &call).success();
    assert!(!run.stderr.contains("sign in"), "{run}");
    assert!(run.stdout.contains(THANKS), "{run}");
    assert_eq!(sandbox.opened().len(), 1, "no browser on the second run");

    // The access token expires: the server refuses it (a bounded wait for the provider's clock).
    let expiry = Duration::from_secs(ACCESS_TOKEN_TTL * 3) + LIMIT;
    wait_until(expiry, "the expired access token to be refused", || probe(&mcp, Some(&access)).0 == 401);
    let (_, challenge) = probe(&mcp, Some(&access));
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");

    // The next run refreshes it with the refresh token, without the person or a browser.
    let run = elicit_in(&config, &call).success();
    assert!(!run.stderr.contains("sign in"), "{run}");
    assert!(run.stdout.contains(THANKS), "{run}");
    assert_eq!(sandbox.opened().len(), 1, "no browser for a refresh");
    let refreshed = stored(&config);
    let (new_access, new_refresh) = tokens(&refreshed);
    assert_ne!(new_access, access, "a new access token");
    // The provider rotates refresh tokens: a new one proves the refresh grant was used.
    assert_ne!(new_refresh, refresh, "the refresh token was used (and rotated)");
    assert_eq!(refreshed["credentials"]["client_id"], first["credentials"]["client_id"], "no new registration");
    assert_eq!(claims(&new_access)["sub"], json!(ACCOUNT.sub));
    assert_eq!(probe(&mcp, Some(&new_access)).0, 200);

    // Logout removes it; the next run is asked to sign in again (no terminal: shown only).
    elicit_in(&config, &["logout", "--url", &mcp]).success().stderr_has("Signed out of");
    assert!(token_files(&config).is_empty(), "{:?}", token_files(&config));
    let run = elicit_in(&config, &["tools", "--url", &mcp, "--timeout", "3"]).failure();
    assert!(run.stderr.contains("sign in and authorize"), "{run}");
}

#[test]
fn access_denied_at_oidc_provider_ends_the_call_and_keeps_nothing() {
    const TEST: &str = "access_denied_at_oidc_provider_ends_the_call_and_keeps_nothing";
    let Some(mut setup) = Setup::start(TEST) else { return };
    let (mcp, config, file) = (&setup.mcp, &setup.config, &setup.file);
    let chromium = &mut setup.chromium;

    // No terminal: the page is shown, never opened; the person opens it in their browser.
    let mut child = spawn_elicit_in(config, &["call", "--url", mcp, "rate_trip", "--answers", file, "--timeout", "50"]);
    let stdin = child.stdin.take();
    let stderr = child.stderr.take().unwrap();
    let (found, shown) = mpsc::channel();
    let said = std::thread::spawn(move || {
        let mut found = Some(found);
        let mut said = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let text = line.trim();
            if text.starts_with("http://")
                && text.contains("/auth?")
                && let Some(found) = found.take()
            {
                let _ = found.send(text.to_owned());
            }
            said.push_str(&line);
            said.push('\n');
        }
        said
    });
    let shown = shown.recv_timeout(LIMIT).unwrap_or_else(|_| panic!("no authorization page was shown"));
    let tab = chromium.open(&shown);
    chromium.type_into(&tab, "login", ACCOUNT.login, LIMIT);
    chromium.type_into(&tab, "password", ACCOUNT.password, LIMIT);
    chromium.click(&tab, "sign-in", LIMIT);
    chromium.click(&tab, "deny", LIMIT);
    chromium.wait_for(
        &tab,
        "document.body && document.body.innerText.includes('Not signed in') ? location.href : null",
        LIMIT,
        "the provider did not send the browser back to elicit with the refusal",
    );
    wait_until(LIMIT, "elicit to end after the denial", || matches!(child.try_wait(), Ok(Some(_))));
    drop(stdin);
    let status = child.wait().unwrap();
    let said = said.join().unwrap();
    assert!(!status.success(), "{said}");
    assert!(said.contains("the authorization was declined"), "the denial is named:\n{said}");
    assert!(!said.contains("Signed in."), "a denial is no sign-in:\n{said}");
    assert!(token_files(config).is_empty(), "{:?}", token_files(config));
}

/// `travel-server --oidc-issuer … --oidc-client-id …`: the pages sign their visitor in through
/// the provider (its callback route refuses a forged sign-in) and the server does not announce
/// ticket links; without the client id it says that its links carry a credential.
#[test]
fn travel_server_with_a_client_id_signs_page_visitors_in_through_the_provider() {
    const TEST: &str = "travel_server_with_a_client_id_signs_page_visitors_in_through_the_provider";
    let Some(node) = node_or_skip(TEST) else { return };
    cli::bins();
    let provider = Provider::start(&node, ACCOUNT, &[], &["--access-token-ttl", &ACCESS_TOKEN_TTL.to_string()]);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let http = reqwest::Client::builder().no_proxy().timeout(LIMIT).build().unwrap();
    let registered: Value = runtime.block_on(async {
        let answer = http
            .post(format!("{}/reg", provider.issuer))
            .json(&json!({
                "application_type": "native",
                "redirect_uris": ["http://127.0.0.1/sign-in/callback"],
                "grant_types": ["authorization_code"],
                "response_types": ["code"],
            }))
            .send()
            .await
            .unwrap();
        answer.json().await.unwrap()
    });
    let client_id = registered["client_id"].as_str().unwrap_or_else(|| panic!("{registered}"));
    let secret = registered["client_secret"].as_str().unwrap_or_else(|| panic!("{registered}"));
    let mut command = Command::new(&cli::bins().travel_server);
    command
        .args(["--listen", "127.0.0.1:0", "--store", "memory", "--oidc-issuer", &provider.issuer])
        .args(["--oidc-client-id", client_id])
        .env("ELICIT_OIDC_CLIENT_SECRET", secret)
        .env_remove("ELICIT_BEARER_TOKENS")
        .env_remove("ELICIT_STATE_KEYS")
        .env_remove("RUST_LOG");
    let server = process::Listening::start(command);
    let (status, body) = runtime.block_on(async {
        let answer =
            http.get(format!("{}/sign-in/callback?code=x&state=forged", server.base_url())).send().await.unwrap();
        (answer.status().as_u16(), answer.text().await.unwrap())
    });
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("id=\"sign-in-invalid\""), "{body}");
    assert!(!server.stderr().contains("credential in the URL"), "{}", server.stderr());

    let tickets = protected_server(&provider.issuer);
    assert!(tickets.stderr().contains("credential in the URL"), "{}", tickets.stderr());
}
