//! The person's side of an OAuth authorization: the authorization server's page is shown with the
//! same consent screen as a URL-mode elicitation (full URL, host emphasised, warnings) and opened
//! only after consent; a loopback listener receives the redirect; without a browser (SSH) the
//! person opens the URL elsewhere and pastes the address they were sent to (or just the code).

use std::io::IsTerminal;
use std::time::Duration;

use elicit_runtime::client::check_url;
use elicit_runtime::rmcp::client::auth::{AuthorizeError, Authorizer, BoxFuture};
use inquire::Select;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::sync::Mutex;

use crate::browser;
use crate::printable::one_line;

/// The path the loopback listener answers on.
const CALLBACK_PATH: &str = "/callback";
/// The longest request head the listener reads.
const MAX_HEAD: usize = 16 * 1024;

/// Authorizes in the terminal, with the person.
pub(crate) struct TerminalAuthorizer {
    browser: Option<String>,
    wait: Duration,
    listener: Mutex<Option<(TcpListener, String)>>,
}

impl TerminalAuthorizer {
    /// Opens pages with `browser` (or the system's opener) after consent, and waits at most `wait`
    /// for the redirect.
    pub(crate) fn new(browser: Option<String>, wait: Duration) -> Self {
        TerminalAuthorizer { browser, wait, listener: Mutex::new(None) }
    }
}

/// What the person chose on the consent screen.
enum Choice {
    Open,
    Myself,
    Cancel,
}

fn consent(url: &elicit_runtime::client::CheckedUrl, ansi: bool) -> Result<Choice, AuthorizeError> {
    eprintln!("\nThe server asks you to sign in and authorize elicit at its authorization server:\n");
    eprintln!("  {}", browser::highlighted(url, ansi));
    eprintln!("  host: {}", url.host);
    for warning in &url.warnings {
        eprintln!("  warning: {}", one_line(&warning.to_string()));
    }
    eprintln!();
    if !std::io::stdin().is_terminal() {
        // Nobody to ask: the page is shown, never opened; the person opens it themselves.
        return Ok(Choice::Myself);
    }
    let options = vec!["Open in browser", "I will open it myself (paste the address I am sent to)", "Cancel"];
    match Select::new("Open this page in your browser?", options).raw_prompt() {
        Ok(choice) if choice.index == 0 => Ok(Choice::Open),
        Ok(choice) if choice.index == 1 => Ok(Choice::Myself),
        Ok(_) => Ok(Choice::Cancel),
        Err(inquire::InquireError::OperationCanceled | inquire::InquireError::OperationInterrupted) => {
            Ok(Choice::Cancel)
        }
        Err(error) => Err(AuthorizeError::Unavailable(error.to_string())),
    }
}

/// The `state` parameter of `url` (empty when it has none).
fn state_of(url: &str) -> String {
    url::Url::parse(url)
        .ok()
        .and_then(|u| u.query_pairs().find(|(k, _)| k == "state").map(|(_, v)| v.into_owned()))
        .unwrap_or_default()
}

/// Reads the redirect of this authorization from the loopback listener: the request's target on
/// `redirect`'s origin. Any process of the machine can reach the listener; a callback without the
/// `state` this authorization sent (`state`) is answered 400 and the listener goes on waiting.
async fn receive(listener: &TcpListener, redirect: &str, state: &str) -> Result<String, AuthorizeError> {
    loop {
        let (mut stream, _) =
            listener.accept().await.map_err(|e| AuthorizeError::Unavailable(format!("the redirect listener: {e}")))?;
        let mut head = Vec::new();
        let mut reader = BufReader::new(&mut stream).take(MAX_HEAD as u64);
        let mut line = String::new();
        // The request line, then the headers up to the blank line.
        if reader.read_line(&mut line).await.is_err() {
            continue;
        }
        head.extend_from_slice(line.as_bytes());
        loop {
            let mut header = String::new();
            match reader.read_line(&mut header).await {
                Ok(0) | Err(_) => break,
                Ok(_) if header == "\r\n" || header == "\n" => break,
                Ok(_) => {}
            }
        }
        let target = line.split_whitespace().nth(1).unwrap_or_default().to_owned();
        let path = target.split('?').next().unwrap_or_default();
        if !line.starts_with("GET ") || path != CALLBACK_PATH {
            let _ = stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").await;
            continue;
        }
        if state.is_empty() || state_of(&format!("http://127.0.0.1{target}")) != state {
            let body = "<!doctype html><meta charset=utf-8><title>elicit</title><p>This sign-in was not started by elicit here: ignored.</p>";
            let reply = format!(
                "HTTP/1.1 400 Bad Request\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(reply.as_bytes()).await;
            continue;
        }
        let body = if refusal(&format!("http://127.0.0.1{target}")).is_some() {
            "<!doctype html><meta charset=utf-8><title>elicit</title><p>Not signed in: the authorization server refused. You can close this tab and return to the terminal.</p>"
        } else {
            "<!doctype html><meta charset=utf-8><title>elicit</title><p>Done: you can close this tab and return to the terminal.</p>"
        };
        let reply = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = stream.write_all(reply.as_bytes()).await;
        let origin = redirect.strip_suffix(CALLBACK_PATH).unwrap_or(redirect);
        return Ok(format!("{origin}{target}"));
    }
}

/// The most characters of an authorization server's `error_description` shown.
const MAX_DESCRIPTION: usize = 300;

/// The authorization server's refusal carried by a redirect (RFC 6749 §4.1.2.1: `error`, perhaps
/// `error_description`), if it is one: the person denying access is a decline, anything else a
/// failure naming the server's error.
fn refusal(redirected: &str) -> Option<AuthorizeError> {
    let url = url::Url::parse(redirected).ok()?;
    let (mut error, mut description) = (None, None);
    for (key, value) in url.query_pairs() {
        match &*key {
            "error" => error = Some(value.into_owned()),
            "error_description" => description = Some(value.into_owned()),
            _ => {}
        }
    }
    let error = error?;
    if error == "access_denied" {
        return Some(AuthorizeError::Declined);
    }
    let text = match description {
        Some(description) => format!("{error}: {}", description.chars().take(MAX_DESCRIPTION).collect::<String>()),
        None => error,
    };
    Some(AuthorizeError::OAuth(format!("the authorization server refused: {}", one_line(&text))))
}

/// Reads a pasted redirect address (or a bare code) from standard input.
async fn pasted(url: &str, redirect: &str) -> Result<String, AuthorizeError> {
    let mut line = String::new();
    let mut stdin = BufReader::new(tokio::io::stdin());
    loop {
        line.clear();
        match stdin.read_line(&mut line).await {
            Ok(0) | Err(_) => return std::future::pending().await,
            Ok(_) => {}
        }
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        if text.starts_with("http://") || text.starts_with("https://") {
            return Ok(text.to_owned());
        }
        // A bare code: the state is the one this authorization sent.
        let state = state_of(url);
        let mut back = url::Url::parse(redirect).map_err(|e| AuthorizeError::Unavailable(e.to_string()))?;
        back.query_pairs_mut().append_pair("code", text).append_pair("state", &state);
        return Ok(back.to_string());
    }
}

impl Authorizer for TerminalAuthorizer {
    fn redirect_uri(&self) -> BoxFuture<'_, Result<String, AuthorizeError>> {
        Box::pin(async move {
            let listener = TcpListener::bind("127.0.0.1:0")
                .await
                .map_err(|e| AuthorizeError::Unavailable(format!("cannot listen for the redirect: {e}")))?;
            let port = listener.local_addr().map_err(|e| AuthorizeError::Unavailable(e.to_string()))?.port();
            let redirect = format!("http://127.0.0.1:{port}{CALLBACK_PATH}");
            *self.listener.lock().await = Some((listener, redirect.clone()));
            Ok(redirect)
        })
    }

    fn authorize<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<String, AuthorizeError>> {
        Box::pin(async move {
            let checked =
                check_url(url).map_err(|reason| AuthorizeError::OAuth(format!("the authorization URL: {reason}")))?;
            let ansi = std::io::stderr().is_terminal();
            let choice = tokio::task::block_in_place(|| consent(&checked, ansi))?;
            match choice {
                Choice::Cancel => return Err(AuthorizeError::Declined),
                Choice::Open => match browser::open(self.browser.as_deref(), &checked).await {
                    Ok(()) => eprintln!("Opened {} in your browser; waiting for the sign-in to finish.", checked.host),
                    Err(error) => eprintln!("Could not start a browser ({error}). Open the page above yourself."),
                },
                Choice::Myself => {}
            }
            let guard = self.listener.lock().await;
            let Some((listener, redirect)) = guard.as_ref() else {
                return Err(AuthorizeError::Unavailable("no redirect listener".into()));
            };
            eprintln!(
                "Waiting up to {} s for the sign-in. Without a browser here, open the page elsewhere and paste the address it sends you to (or the code):",
                self.wait.as_secs()
            );
            let state = state_of(url);
            let received = tokio::select! {
                received = receive(listener, redirect, &state) => received,
                received = pasted(url, redirect) => received,
                () = tokio::time::sleep(self.wait) => Err(AuthorizeError::Unavailable(format!("no sign-in within {} s", self.wait.as_secs()))),
            };
            let received = received?;
            if let Some(refused) = refusal(&received) {
                return Err(refused);
            }
            eprintln!("Signed in.");
            Ok(received)
        })
    }
}

/// Authorizes without a person, for the conformance suite: its authorization endpoint approves at
/// once, so the page is fetched without following the redirect and the redirect is read from
/// `Location`.
pub(crate) struct Headless {
    http: reqwest::Client,
}

/// The redirect URI the headless client registers (never contacted).
const HEADLESS_REDIRECT: &str = "http://localhost:3000/callback";

impl Headless {
    /// A headless authorizer.
    pub(crate) fn new() -> Result<Self, String> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("cannot build an HTTP client: {e}"))?;
        Ok(Headless { http })
    }
}

impl Authorizer for Headless {
    fn redirect_uri(&self) -> BoxFuture<'_, Result<String, AuthorizeError>> {
        Box::pin(async { Ok(HEADLESS_REDIRECT.to_owned()) })
    }

    fn authorize<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<String, AuthorizeError>> {
        Box::pin(async move {
            let answer = self.http.get(url).send().await.map_err(|e| AuthorizeError::Unavailable(e.to_string()))?;
            answer.headers().get(reqwest::header::LOCATION).and_then(|v| v.to_str().ok()).map(str::to_owned).ok_or_else(
                || {
                    AuthorizeError::Unavailable(format!(
                        "no redirect from the authorization page ({})",
                        answer.status()
                    ))
                },
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redirect_with_an_error_is_a_refusal_and_access_denied_a_decline() {
        let back = "http://127.0.0.1:5/callback";
        assert_eq!(refusal(&format!("{back}?error=access_denied&state=s")), Some(AuthorizeError::Declined));
        assert_eq!(
            refusal(&format!("{back}?error=invalid_scope&error_description=no%0Ascope+here&state=s")),
            Some(AuthorizeError::OAuth("the authorization server refused: invalid_scope: no\\u{a}scope here".into()))
        );
        assert_eq!(refusal(&format!("{back}?code=c&state=s")), None);
        assert_eq!(refusal("not a url"), None);
    }

    /// Sends `GET target` to the listener at `port`; the reply's status line.
    async fn get(port: u16, target: &str) -> String {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.expect("connects");
        let request = format!("GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.expect("sent");
        let mut reply = String::new();
        stream.read_to_string(&mut reply).await.expect("a reply");
        reply.lines().next().unwrap_or_default().to_owned()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_listener_takes_only_the_callback_with_the_state_it_sent_and_keeps_listening() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let port = listener.local_addr().expect("an address").port();
        let redirect = format!("http://127.0.0.1:{port}{CALLBACK_PATH}");
        let waiting = tokio::spawn(async move { receive(&listener, &redirect, "the-state").await });
        // Another process of the machine: another state, none, an error redirect without it.
        for foreign in ["/callback?code=evil&state=other", "/callback?code=evil", "/callback?error=access_denied"] {
            assert!(get(port, foreign).await.contains(" 400 "), "{foreign} was taken");
        }
        assert!(!waiting.is_finished(), "the listener stopped on a callback it did not issue");
        assert!(get(port, "/callback?code=good&state=the-state").await.contains(" 200 "));
        let received = waiting.await.expect("ends").expect("a redirect");
        assert_eq!(received, format!("http://127.0.0.1:{port}/callback?code=good&state=the-state"));
    }
}
