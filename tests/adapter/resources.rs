//! Resources served by the rmcp adapter, in-process over Streamable HTTP: a resource whose read
//! asks a form first (`resources/read` answers `input_required`, then completes on the retry), a
//! resource template, the errors of unknown URIs and foreign state, and the capabilities the
//! server advertises for what it registered.
//!
//! The shared client covers `server/discover`; `resources/*` go through [`post`] here, because a
//! `resources/read` carries its `Mcp-Name` (the URI) in `params.uri`, not `params.name`.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use elicit_test_support::server;

use std::sync::atomic::{AtomicU64, Ordering};

use elicit_runtime::Elicit;
use elicit_runtime::rmcp::{McpServer, TemplateMatch};
use elicit_runtime::server::{Answer, Engine, Flow, FlowError};
use elicit_runtime::state::KeyRing;
use elicit_test_support::server::serve;
use rmcp::model::{JsonObject, ReadResourceResult, Resource, ResourceContents, ResourceTemplate, Tool};
use serde_json::{Value, json};

use server::http::{Client, Reply, form_and_url, http_client};
use server::schema;

/// Who is reading?
#[derive(Elicit)]
struct Reader {
    /// Your name
    name: String,
}

const GREETING: &str = "test://greeting";
const ITEMS: &str = "test://items/{id}";

/// A greeting addressed to whoever reads it: the read asks for a name first.
async fn greeting(flow: Flow) -> Result<ReadResourceResult, FlowError> {
    let text = match flow.form::<Reader>("reader").await? {
        Answer::Accepted(reader) => format!("Hello, {}!", reader.name),
        Answer::Declined | Answer::Cancelled => "Hello, stranger.".to_owned(),
    };
    Ok(ReadResourceResult::new(vec![ResourceContents::text(text, GREETING)]))
}

/// An item, named by the template's `id`; reading it asks nothing.
async fn item(matched: TemplateMatch, _flow: Flow) -> Result<ReadResourceResult, FlowError> {
    let id = matched.get("id").unwrap_or_default();
    Ok(ReadResourceResult::new(vec![ResourceContents::text(format!("item `{id}`"), matched.uri.clone())]))
}

async fn resource_server() -> String {
    let engine = Engine::builder("resources-test", KeyRing::generate()).build();
    let server = McpServer::builder("resources-test", "0.1.0", engine)
        .resource(Resource::new(GREETING, "greeting").with_mime_type("text/plain"), greeting)
        .resource_template(ResourceTemplate::new(ITEMS, "items"), item)
        .build()
        .unwrap();
    serve(server).await
}

/// Sends one `resources/*` request with the headers and `_meta` of revision 2026-07-28 and
/// checks the reply against the spec's schema.
pub(crate) async fn post(url: &str, method: &str, mut params: Value) -> Reply {
    static NEXT_ID: AtomicU64 = AtomicU64::new(1);
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": form_and_url(),
    });
    let mut request = http_client()
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", method);
    if let Some(uri) = params.get("uri").and_then(Value::as_str) {
        request = request.header("Mcp-Name", uri);
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let response = request.body(body.to_string()).send().await.unwrap();
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    assert_eq!(body.get("id"), Some(&json!(id)), "the reply to {method} carries another id: {body}");
    let definition = match (body.get("error"), method) {
        (Some(_), _) => "JSONRPCErrorResponse",
        (None, "resources/read") => "ReadResourceResultResponse",
        (None, "resources/list") => "ListResourcesResultResponse",
        (None, "resources/templates/list") => "ListResourceTemplatesResultResponse",
        (None, other) => panic!("no schema definition is mapped for replies to `{other}`"),
    };
    let errors: Vec<String> = schema::validator(definition).iter_errors(&body).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "the reply to {method} is not a valid {definition}: {errors:?}\nreply: {body}");
    if body.pointer("/result/resultType") == Some(&json!("input_required")) {
        let result = &body["result"];
        let errors: Vec<String> =
            schema::validator("InputRequiredResult").iter_errors(result).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "not a valid InputRequiredResult: {errors:?}\nreply: {body}");
    }
    Reply { status, body }
}

pub(crate) async fn read(url: &str, uri: &str) -> Reply {
    post(url, "resources/read", json!({"uri": uri})).await
}

async fn read_again(url: &str, uri: &str, responses: Value, state: &str) -> Reply {
    post(url, "resources/read", json!({"uri": uri, "inputResponses": responses, "requestState": state})).await
}

/// The one text content of a complete `ReadResourceResult`, with its URI.
fn contents(reply: &Reply) -> (String, String) {
    let result = reply.result();
    assert_eq!(result["resultType"], "complete", "expected a complete result: {}", reply.body);
    let contents = result["contents"].as_array().unwrap();
    assert_eq!(contents.len(), 1, "one content expected: {}", reply.body);
    (contents[0]["uri"].as_str().unwrap().to_owned(), contents[0]["text"].as_str().unwrap().to_owned())
}

#[tokio::test]
async fn a_resource_read_asks_a_form_then_completes() {
    let url = resource_server().await;

    let asked = read(&url, GREETING).await.asked();
    assert_eq!(asked.keys(), ["reader"]);
    let request = &asked.requests["reader"];
    assert_eq!(request["method"], "elicitation/create");
    assert_eq!(asked.params("reader")["requestedSchema"]["required"], json!(["name"]));

    let answer = json!({"reader": {"action": "accept", "content": {"name": "Ada"}}});
    let done = read_again(&url, GREETING, answer, asked.state()).await;
    assert_eq!(done.status, 200);
    assert_eq!(contents(&done), (GREETING.to_owned(), "Hello, Ada!".to_owned()));
    // A complete read is cacheable, so it carries the hints (rmcp's defaults: not reusable).
    assert_eq!(done.result()["ttlMs"], 0);
    assert_eq!(done.result()["cacheScope"], "private");

    // Declining is an answer too (in another read: the first one finished, and keeps its result).
    let asked = read(&url, GREETING).await.asked();
    let declined = read_again(&url, GREETING, json!({"reader": {"action": "decline"}}), asked.state()).await;
    assert_eq!(contents(&declined).1, "Hello, stranger.");
}

#[tokio::test]
async fn the_state_of_a_read_is_bound_to_its_uri() {
    let url = resource_server().await;
    let asked = read(&url, GREETING).await.asked();
    let answer = json!({"reader": {"action": "accept", "content": {"name": "Ada"}}});

    // Replayed on another URI, or altered, the state is refused: -32602, not a result.
    let elsewhere = read_again(&url, "test://items/1", answer.clone(), asked.state()).await;
    assert_eq!(elsewhere.error().0, -32602);
    let tampered = read_again(&url, GREETING, answer, &format!("{}x", asked.state())).await;
    assert_eq!(tampered.error().0, -32602);
}

#[tokio::test]
async fn a_template_read_gets_the_decoded_variables() {
    let url = resource_server().await;
    assert_eq!(contents(&read(&url, "test://items/42").await), ("test://items/42".to_owned(), "item `42`".to_owned()));
    assert_eq!(contents(&read(&url, "test://items/a%2Fb").await).1, "item `a/b`");

    // No expansion of the template has a bare `/` in `{id}`: not found, naming the URI.
    for uri in ["test://items/a/b", "test://nothing-here"] {
        let reply = read(&url, uri).await;
        let (code, message, data) = reply.error();
        assert_eq!((code, message), (-32602, "Resource not found"));
        assert_eq!(data, Some(&json!({"uri": uri})));
    }
}

#[tokio::test]
async fn lists_and_capabilities_follow_what_is_registered() {
    let url = resource_server().await;
    let resources = post(&url, "resources/list", json!({})).await;
    assert_eq!(
        resources.result()["resources"],
        json!([{"uri": GREETING, "name": "greeting", "mimeType": "text/plain"}])
    );
    let templates = post(&url, "resources/templates/list", json!({})).await;
    assert_eq!(templates.result()["resourceTemplates"], json!([{"uriTemplate": ITEMS, "name": "items"}]));

    let discovered = Client::new(&url).request("server/discover", json!({})).await;
    let capabilities = &discovered.result()["capabilities"];
    assert!(capabilities.get("resources").is_some(), "resources are advertised: {capabilities}");
    for absent in ["tools", "prompts", "completions"] {
        assert!(
            capabilities.get(absent).is_none(),
            "`{absent}` is advertised without being registered: {capabilities}"
        );
    }

    // A server without resources neither advertises nor serves them.
    let engine = Engine::builder("no-resources", KeyRing::generate()).build();
    let schema: JsonObject = json!({"type": "object"}).as_object().cloned().unwrap();
    let tools_only = McpServer::builder("no-resources", "0.1.0", engine)
        .tool(Tool::new("noop", "Does nothing", schema), |_flow| async {
            Ok(rmcp::model::CallToolResult::success(vec![]))
        })
        .build()
        .unwrap();
    let url = serve(tools_only).await;
    let discovered = Client::new(&url).request("server/discover", json!({})).await;
    assert!(discovered.result()["capabilities"].get("resources").is_none());
    let listed = post(&url, "resources/list", json!({})).await;
    assert_eq!((listed.status, listed.error().0), (404, -32601));
}
