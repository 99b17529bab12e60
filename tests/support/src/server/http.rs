//! The tests' MCP client: the shared JSON-RPC-over-HTTP client of `crate::mcp` with the
//! per-request `_meta` of revision 2026-07-28; every reply is checked against the spec's schema
//! and kept, so a test can look at everything the server sent. The payment page is played through
//! `crate::payment`.

use std::sync::Mutex;
use std::time::Duration;

use crate::mcp::{McpHttp, with_meta};
use crate::payment;
use serde_json::{Map, Value, json};

use super::schema;

pub use crate::mcp::form_and_url;

/// Bound on any single HTTP exchange (the engine's URL wait is 2 s).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

/// One request and what came back.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// The JSON-RPC method.
    pub method: String,
    /// The request as sent.
    pub request: Value,
    /// The HTTP status.
    pub status: u16,
    /// The JSON-RPC response as received.
    pub reply: Value,
}

/// A server's reply: HTTP status and JSON-RPC body.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// The JSON-RPC response.
    pub body: Value,
}

/// An `InputRequiredResult`, unpacked.
#[derive(Debug, Clone)]
pub struct Asked {
    /// `inputRequests`, by key.
    pub requests: Map<String, Value>,
    /// `requestState`.
    pub state: Option<String>,
}

impl Asked {
    /// The keys asked, sorted.
    pub fn keys(&self) -> Vec<&str> {
        let mut keys: Vec<&str> = self.requests.keys().map(String::as_str).collect();
        keys.sort_unstable();
        keys
    }

    /// `params` of the input request under `key`.
    pub fn params(&self, key: &str) -> &Value {
        self.requests
            .get(key)
            .and_then(|r| r.get("params"))
            .unwrap_or_else(|| panic!("no input request `{key}` with params in {:?}", self.requests))
    }

    /// The state, which every result of the engine carries.
    pub fn state(&self) -> &str {
        self.state.as_deref().expect("the InputRequiredResult carries a requestState")
    }
}

impl Reply {
    /// The JSON-RPC `result`; panics on an error response.
    pub fn result(&self) -> &Value {
        self.body.get("result").unwrap_or_else(|| panic!("expected a result, got {}", self.body))
    }

    /// The JSON-RPC `error` (code, message, data); panics on a result.
    pub fn error(&self) -> (i64, &str, Option<&Value>) {
        let error = self.body.get("error").unwrap_or_else(|| panic!("expected an error, got {}", self.body));
        let code = error.get("code").and_then(Value::as_i64).unwrap_or_else(|| panic!("error without code: {error}"));
        let message =
            error.get("message").and_then(Value::as_str).unwrap_or_else(|| panic!("error without message: {error}"));
        (code, message, error.get("data"))
    }

    /// The `InputRequiredResult`; panics on anything else.
    pub fn asked(&self) -> Asked {
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
    pub fn complete(&self) -> (String, bool) {
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
    pub fn text(&self) -> String {
        let (text, is_error) = self.complete();
        assert!(!is_error, "expected a successful result, got isError: {}", self.body);
        text
    }
}

/// A JSON-RPC-over-HTTP client for one server.
pub struct Client {
    mcp: McpHttp,
    url: String,
    capabilities: Value,
    log: Mutex<Vec<Exchange>>,
}

/// The plain HTTP client the tests use (no proxy: everything is on loopback).
pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().timeout(REQUEST_TIMEOUT).build().expect("an HTTP client builds")
}

impl Client {
    /// A client of the MCP endpoint `mcp_url` declaring form and URL elicitation.
    pub fn new(mcp_url: &str) -> Client {
        Client {
            mcp: McpHttp::new(REQUEST_TIMEOUT),
            url: mcp_url.to_owned(),
            capabilities: form_and_url(),
            log: Mutex::new(Vec::new()),
        }
    }

    /// Declares these `ClientCapabilities` on every request from now on.
    pub fn with_capabilities(mut self, capabilities: Value) -> Client {
        self.capabilities = capabilities;
        self
    }

    /// Sends one request; `params._meta` gets the protocol version and the client's capabilities
    /// unless `params` already sets them. The reply is checked against the schema and kept.
    pub async fn request(&self, method: &str, mut params: Value) -> Reply {
        assert!(params.is_object(), "params is an object");
        with_meta(&mut params, &self.capabilities);
        let posted = self.mcp.post(&self.url, method, params).await.unwrap_or_else(|e| panic!("{e}"));
        schema::assert_valid(method, &posted.body);
        self.log.lock().unwrap_or_else(|e| e.into_inner()).push(Exchange {
            method: method.to_owned(),
            request: posted.request,
            status: posted.status,
            reply: posted.body.clone(),
        });
        Reply { status: posted.status, body: posted.body }
    }

    /// `tools/call name` with `arguments`, first round.
    pub async fn call(&self, name: &str, arguments: Value) -> Reply {
        self.request("tools/call", json!({"name": name, "arguments": arguments})).await
    }

    /// `tools/call name` again, with `inputResponses` and the echoed state.
    pub async fn retry(&self, name: &str, arguments: Value, responses: Value, state: Option<&str>) -> Reply {
        let mut params = json!({"name": name, "arguments": arguments, "inputResponses": responses});
        if let Some(state) = state {
            params["requestState"] = json!(state);
        }
        self.request("tools/call", params).await
    }

    /// Everything sent and received so far.
    pub fn exchanges(&self) -> Vec<Exchange> {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// One visit of a payment page (see [`payment::PageVisit`] for its fields).
#[derive(Debug, Clone)]
pub struct PageVisit(payment::PageVisit);

impl std::ops::Deref for PageVisit {
    type Target = payment::PageVisit;

    fn deref(&self) -> &payment::PageVisit {
        &self.0
    }
}

impl PageVisit {
    /// Clicks the button of form `action` (`approve` or `deny`): posts the visit's token with its
    /// cookie; returns the HTTP status.
    pub async fn submit(&self, action: &str) -> u16 {
        self.0.submit(&http_client(), action).await.unwrap_or_else(|e| panic!("{e}")).0
    }
}

/// `GET`s a page as a browser would, keeping its cookie and form token.
pub async fn visit_page(url: &str) -> PageVisit {
    PageVisit(payment::visit_page(&http_client(), url).await.unwrap_or_else(|e| panic!("{e}")))
}

/// Opens the page and clicks the button of form `action`, as a user in a browser does; returns
/// the HTTP status of the submission.
pub async fn browser_submit(url: &str, action: &str) -> u16 {
    payment::submit(&http_client(), url, action).await.unwrap_or_else(|e| panic!("{e}"))
}

/// POSTs a form body with an optional `Cookie` header; returns the HTTP status and the page.
pub async fn post_form(url: &str, cookie: Option<&str>, body: &str) -> (u16, String) {
    payment::post_form(&http_client(), url, cookie, body).await.unwrap_or_else(|e| panic!("{e}"))
}

/// GETs a page; returns the HTTP status and the body.
pub async fn browser_get(url: &str) -> (u16, String) {
    payment::get(&http_client(), url).await.unwrap_or_else(|e| panic!("{e}"))
}
