//! The draft app-rendered forms (SEP-3118) on the wire of a server of one's own, over Streamable
//! HTTP with a real HTTP client: the server advertises the UI extension's `elicitation` setting,
//! a client declaring the extension gets `_meta.ui.resourceUri` on a form ask, `resources/read` of
//! that `ui://` URI answers the App's HTML as `text/html;profile=mcp-app`, and a client without
//! the extension gets the same form with no `_meta`. (The 2025-era push: `streamable_http::era_2025`.)

use std::sync::Arc;

use elicit_runtime::Elicit;
use elicit_runtime::apps::AppForm;
use elicit_runtime::rmcp::{BuildProblem, McpServer};
use elicit_runtime::server::{Answer, Engine, Flow, FlowError};
use elicit_runtime::state::KeyRing;
use elicit_test_support::server;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, ReadResourceResult, Resource, ResourceContents, Tool};
use serde_json::{Value, json};

use server::http::Client;
use server::serve;

use crate::resources::read;

/// Where are you going?
#[derive(Elicit)]
struct Trip {
    /// The city you fly to
    #[elicit(min_length = 2)]
    destination: String,
    /// How many travel
    #[elicit(minimum = 1, maximum = 9)]
    travellers: u8,
}

const TRIP_APP: &str = "ui://own-server/trip";

async fn plan(flow: Flow) -> Result<CallToolResult, FlowError> {
    let text = match flow.form::<Trip>("trip").await? {
        Answer::Accepted(trip) => format!("{} to {}", trip.travellers, trip.destination),
        Answer::Declined | Answer::Cancelled => "no trip".to_owned(),
    };
    Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
}

fn builder() -> elicit_runtime::rmcp::McpServerBuilder {
    let engine =
        Engine::builder("app-forms", KeyRing::generate()).app_form(AppForm::new::<Trip>(TRIP_APP).unwrap()).build();
    McpServer::builder("app-forms", "1.0.0", engine)
        .tool(Tool::new("plan", "plan a trip", Arc::new(JsonObject::new())), plan)
}

fn with_apps() -> Value {
    json!({"elicitation": {"form": {}}, "extensions": {"io.modelcontextprotocol/ui": {
        "mimeTypes": ["text/html;profile=mcp-app"], "elicitation": {}}}})
}

#[tokio::test]
async fn a_client_declaring_the_extension_gets_the_hint_and_can_read_the_app() {
    let url = serve(builder().build().unwrap()).await;

    let discovered = Client::new(&url).request("server/discover", json!({})).await;
    let capabilities = &discovered.result()["capabilities"];
    assert_eq!(capabilities["extensions"]["io.modelcontextprotocol/ui"], json!({"elicitation": {}}), "{capabilities}");
    assert!(capabilities.get("resources").is_some(), "the App is a resource: {capabilities}");

    let client = Client::new(&url).with_capabilities(with_apps());
    let asked = client.call("plan", json!({})).await.asked();
    let params = asked.params("trip");
    assert_eq!(params["_meta"], json!({"ui": {"resourceUri": TRIP_APP}}), "{params}");
    assert_eq!(params["mode"], "form");
    assert_eq!(params["requestedSchema"], Trip::requested_schema().to_json(), "the schema is unchanged");

    // The host reads the App from the same server.
    let reply = read(&url, TRIP_APP).await;
    let contents = reply.result()["contents"].as_array().unwrap().clone();
    assert_eq!(contents.len(), 1, "{}", reply.body);
    assert_eq!(contents[0]["uri"], TRIP_APP);
    assert_eq!(contents[0]["mimeType"], "text/html;profile=mcp-app");
    let html = contents[0]["text"].as_str().unwrap();
    assert!(html.starts_with("<!doctype html>"), "an HTML5 document");
    assert!(html.contains("name=\"f.destination\"") && html.contains("name=\"f.travellers\""), "the form's controls");
    assert!(html.contains("\"ui/initialize\"") && html.contains("elicitation:{}"), "the bridge, declaring elicitation");
    assert!(html.contains("script-src 'sha256-") && !html.contains("unsafe-inline"), "the script allowed by its hash");
    assert_eq!(contents[0]["_meta"]["ui"]["csp"], json!({}), "nothing to load");

    // What the App collected is an ordinary answer, checked by the server as any other.
    let wrong = json!({"trip": {"action": "accept", "content": {"destination": "Oslo", "travellers": 12}}});
    let again = client.retry("plan", json!({}), wrong, Some(asked.state())).await.asked();
    assert_eq!(again.params("trip")["_meta"]["ui"]["resourceUri"], TRIP_APP);
    let right = json!({"trip": {"action": "accept", "content": {"destination": "Oslo", "travellers": 2}}});
    let done = client.retry("plan", json!({}), right, Some(again.state())).await;
    assert_eq!(done.text(), "2 to Oslo");
}

#[tokio::test]
async fn a_client_without_the_extension_gets_the_plain_form() {
    let url = serve(builder().build().unwrap()).await;
    let apps_alone = json!({"elicitation": {"form": {}}, "extensions": {"io.modelcontextprotocol/ui": {
        "mimeTypes": ["text/html;profile=mcp-app"]}}});
    for declared in [json!({"elicitation": {"form": {}}}), apps_alone] {
        let asked = Client::new(&url).with_capabilities(declared.clone()).call("plan", json!({})).await.asked();
        let params = asked.params("trip");
        assert!(params.get("_meta").is_none(), "{declared}: {params}");
        assert_eq!(params["requestedSchema"], Trip::requested_schema().to_json());
    }
}

#[tokio::test]
async fn an_app_uri_another_resource_claims_fails_the_build() {
    async fn other(_flow: Flow) -> Result<ReadResourceResult, FlowError> {
        Ok(ReadResourceResult::new(vec![ResourceContents::text("x", TRIP_APP)]))
    }
    let error = builder().resource(Resource::new(TRIP_APP, "other"), other).build().err().expect("a duplicate URI");
    assert_eq!(error.problems(), &[BuildProblem::DuplicateResource(TRIP_APP.to_owned())]);
}
