//! A tiny hand-written MCP client: one JSON-RPC request per HTTP POST, with the headers and the
//! per-request `_meta` of revision 2026-07-28. Every reply is checked against the spec's schema
//! and kept, so a test can look at everything the server sent.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::schema;

/// Bound on any single HTTP exchange (the engine's URL wait is 2 s).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

/// One request and what came back.
#[derive(Debug, Clone)]
pub(crate) struct Exchange {
    /// The JSON-RPC method.
    pub(crate) method: String,
    /// The request as sent.
    pub(crate) request: Value,
    /// The HTTP status.
    pub(crate) status: u16,
    /// The JSON-RPC response as received.
    pub(crate) reply: Value,
}

/// A server's reply: HTTP status and JSON-RPC body.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    /// The HTTP status.
    pub(crate) status: u16,
    /// The JSON-RPC response.
    pub(crate) body: Value,
}

/// An `InputRequiredResult`, unpacked.
#[derive(Debug, Clone)]
pub(crate) struct Asked {
    /// `inputRequests`, by key.
    pub(crate) requests: Map<String, Value>,
    /// `requestState`.
    pub(crate) state: Option<String>,
}

impl Asked {
    /// The keys asked, sorted.
    pub(crate) fn keys(&self) -> Vec<&str> {
        let mut keys: Vec<&str> = self.requests.keys().map(String::as_str).collect();
        keys.sort_unstable();
        keys
    }

    /// `params` of the input request under `key`.
    pub(crate) fn params(&self, key: &str) -> &Value {
        self.requests
            .get(key)
            .and_then(|r| r.get("params"))
            .unwrap_or_else(|| panic!("no input request `{key}` with params in {:?}", self.requests))
    }

    /// The state, which every result of the engine carries.
    pub(crate) fn state(&self) -> &str {
        self.state.as_deref().expect("the InputRequiredResult carries a requestState")
    }
}

impl Reply {
    /// The JSON-RPC `result`; panics on an error response.
    pub(crate) fn result(&self) -> &Value {
        self.body.get("result").unwrap_or_else(|| panic!("expected a result, got {}", self.body))
    }

    /// The JSON-RPC `error` (code, message, data); panics on a result.
    pub(crate) fn error(&self) -> (i64, &str, Option<&Value>) {
        let error = self.body.get("error").unwrap_or_else(|| panic!("expected an error, got {}", self.body));
        let code = error.get("code").and_then(Value::as_i64).unwrap_or_else(|| panic!("error without code: {error}"));
        let message = error.get("message").and_then(Value::as_str).unwrap_or_else(|| panic!("error without message: {error}"));
        (code, message, error.get("data"))
    }

    /// The `InputRequiredResult`; panics on anything else.
    pub(crate) fn asked(&self) -> Asked {
        let result = self.result();
        assert_eq!(
            result.get("resultType").and_then(Value::as_str),
            Some("input_required"),
            "expected an InputRequiredResult, got {}",
            self.body
        );
        Asked {
            requests: result.get("inputRequests").and_then(Value::as_object).cloned().unwrap_or_default(),
            state: result.get("requestState").and_then(Value::as_str).map(str::to_owned),
        }
    }

    /// The text of a complete tool result, and whether it is an error result.
    pub(crate) fn complete(&self) -> (String, bool) {
        let result = self.result();
        assert_eq!(
            result.get("resultType").and_then(Value::as_str),
            Some("complete"),
            "expected a complete result, got {}",
            self.body
        );
        let text = result
            .get("content")
            .and_then(Value::as_array)
            .unwrap_or_else(|| panic!("a complete tool result without content: {}", self.body))
            .iter()
            .filter_map(|c| c.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n");
        (text, result.get("isError").and_then(Value::as_bool).unwrap_or(false))
    }

    /// The text of a complete, successful tool result.
    pub(crate) fn text(&self) -> String {
        let (text, is_error) = self.complete();
        assert!(!is_error, "expected a successful result, got isError: {}", self.body);
        text
    }
}

/// Client capabilities declaring form and URL elicitation.
pub(crate) fn form_and_url() -> Value {
    json!({"elicitation": {"form": {}, "url": {}}})
}

/// A JSON-RPC-over-HTTP client for one server.
pub(crate) struct Client {
    http: reqwest::Client,
    url: String,
    capabilities: Value,
    next_id: AtomicU64,
    log: Mutex<Vec<Exchange>>,
}

/// The plain HTTP client the tests use (no proxy: everything is on loopback).
pub(crate) fn http_client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().timeout(REQUEST_TIMEOUT).build().expect("an HTTP client builds")
}

impl Client {
    /// A client of the MCP endpoint `mcp_url` declaring form and URL elicitation.
    pub(crate) fn new(mcp_url: &str) -> Client {
        Client {
            http: http_client(),
            url: mcp_url.to_owned(),
            capabilities: form_and_url(),
            next_id: AtomicU64::new(1),
            log: Mutex::new(Vec::new()),
        }
    }

    /// Declares these `ClientCapabilities` on every request from now on.
    pub(crate) fn with_capabilities(mut self, capabilities: Value) -> Client {
        self.capabilities = capabilities;
        self
    }

    /// Sends one request; `params._meta` gets the protocol version and the client's capabilities
    /// unless `params` already sets them. The reply is checked against the schema and kept.
    pub(crate) async fn request(&self, method: &str, mut params: Value) -> Reply {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let object = params.as_object_mut().expect("params is an object");
        let meta = object.entry("_meta").or_insert_with(|| json!({}));
        let meta = meta.as_object_mut().expect("_meta is an object");
        meta.entry("io.modelcontextprotocol/protocolVersion").or_insert_with(|| json!("2026-07-28"));
        meta.entry("io.modelcontextprotocol/clientCapabilities").or_insert_with(|| self.capabilities.clone());
        let name = object.get("name").and_then(Value::as_str).map(str::to_owned);
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});

        let mut builder = self
            .http
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", method);
        if let Some(name) = &name {
            builder = builder.header("Mcp-Name", name);
        }
        let response = builder
            .body(request.to_string())
            .send()
            .await
            .unwrap_or_else(|e| panic!("{method} to {} failed: {e}", self.url));
        let status = response.status().as_u16();
        let bytes = response.bytes().await.unwrap_or_else(|e| panic!("reading the reply to {method} failed: {e}"));
        let body: Value = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            panic!("the reply to {method} (HTTP {status}) is not JSON ({e}): {}", String::from_utf8_lossy(&bytes))
        });
        assert_eq!(body.get("id"), Some(&json!(id)), "the reply to {method} carries another id: {body}");
        schema::assert_valid(method, &body);
        self.log.lock().unwrap_or_else(|e| e.into_inner()).push(Exchange {
            method: method.to_owned(),
            request,
            status,
            reply: body.clone(),
        });
        Reply { status, body }
    }

    /// `tools/call name` with `arguments`, first round.
    pub(crate) async fn call(&self, name: &str, arguments: Value) -> Reply {
        self.request("tools/call", json!({"name": name, "arguments": arguments})).await
    }

    /// `tools/call name` again, with `inputResponses` and the echoed state.
    pub(crate) async fn retry(&self, name: &str, arguments: Value, responses: Value, state: Option<&str>) -> Reply {
        let mut params = json!({"name": name, "arguments": arguments, "inputResponses": responses});
        if let Some(state) = state {
            params["requestState"] = json!(state);
        }
        self.request("tools/call", params).await
    }

    /// Everything sent and received so far.
    pub(crate) fn exchanges(&self) -> Vec<Exchange> {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// The cookie the payment page keeps its per-visit nonce in.
pub(crate) const NONCE_COOKIE: &str = "pay_nonce";

/// One visit of a payment page, as a browser keeps it: what the page showed, the cookie it set
/// and the hidden token of its forms.
#[derive(Debug, Clone)]
pub(crate) struct PageVisit {
    /// The page's URL.
    pub(crate) url: String,
    /// The HTTP status of the `GET`.
    pub(crate) status: u16,
    /// The page.
    pub(crate) body: String,
    /// Every `Set-Cookie` header, whole.
    pub(crate) set_cookies: Vec<String>,
    /// `name=value` of the nonce cookie, as a browser sends it back.
    pub(crate) cookie: Option<String>,
    /// The value of the forms' hidden `csrf` field.
    pub(crate) token: Option<String>,
}

impl PageVisit {
    /// Clicks the button of form `action` (`approve` or `deny`): posts the visit's token with its
    /// cookie; returns the HTTP status.
    pub(crate) async fn submit(&self, action: &str) -> u16 {
        let token = self.token.as_deref().unwrap_or_else(|| panic!("no form on {} (HTTP {}): {}", self.url, self.status, self.body));
        post_form(&format!("{}/{action}", self.url), self.cookie.as_deref(), &format!("csrf={token}")).await.0
    }
}

/// The value of the first hidden `csrf` field of a page.
pub(crate) fn hidden_token(html: &str) -> Option<String> {
    let marker = "name=\"csrf\" value=\"";
    let start = html.find(marker)? + marker.len();
    html[start..].split('"').next().map(str::to_owned)
}

/// GETs a page as a browser would, keeping its cookie and form token.
pub(crate) async fn visit_page(url: &str) -> PageVisit {
    let response = http_client().get(url).send().await.unwrap_or_else(|e| panic!("GET {url} failed: {e}"));
    let status = response.status().as_u16();
    let set_cookies: Vec<String> = response
        .headers()
        .get_all(reqwest::header::SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(str::to_owned)
        .collect();
    let cookie = set_cookies
        .iter()
        .filter_map(|c| c.split(';').next())
        .find(|pair| pair.starts_with(&format!("{NONCE_COOKIE}=")))
        .map(str::to_owned);
    let body = response.text().await.unwrap_or_default();
    let token = hidden_token(&body);
    PageVisit { url: url.to_owned(), status, body, set_cookies, cookie, token }
}

/// Opens the page and clicks the button of form `action`, as a user in a browser does; returns
/// the HTTP status of the submission.
pub(crate) async fn browser_submit(url: &str, action: &str) -> u16 {
    visit_page(url).await.submit(action).await
}

/// POSTs a form body with an optional `Cookie` header; returns the HTTP status and the page.
pub(crate) async fn post_form(url: &str, cookie: Option<&str>, body: &str) -> (u16, String) {
    let mut request = http_client().post(url).header("Content-Type", "application/x-www-form-urlencoded");
    if let Some(cookie) = cookie {
        request = request.header("Cookie", cookie);
    }
    let response = request.body(body.to_owned()).send().await.unwrap_or_else(|e| panic!("POST {url} failed: {e}"));
    let status = response.status().as_u16();
    (status, response.text().await.unwrap_or_default())
}

/// GETs a page; returns the HTTP status and the body.
pub(crate) async fn browser_get(url: &str) -> (u16, String) {
    let response = http_client().get(url).send().await.unwrap_or_else(|e| panic!("GET {url} failed: {e}"));
    let status = response.status().as_u16();
    (status, response.text().await.unwrap_or_default())
}
