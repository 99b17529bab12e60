//! Resource templates. A template the matcher does not support is a
//! build error the caller can handle, never a panic (so is a name registered twice); and a request URI cannot drive
//! matching into super-linear time (`x:{a}-{b}-{c}` against `x:` + 8,000 dashes answers, over
//! HTTP, with the split the matcher documents).

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use std::sync::Arc;

use elicit_runtime::rmcp::{BuildProblem, McpServer, TemplateMatch};
use elicit_runtime::server::{Engine, Flow, FlowError};
use elicit_runtime::state::KeyRing;
use elicit_test_support::server::serve;
use rmcp::model::{
    GetPromptResult, JsonObject, Prompt, ReadResourceResult, Resource, ResourceContents, ResourceTemplate, Tool,
};
use serde_json::{Value, json};

/// Answers with the variables it matched, as JSON.
async fn echo(matched: TemplateMatch, _flow: Flow) -> Result<ReadResourceResult, FlowError> {
    let text = serde_json::to_string(&matched.variables).unwrap();
    Ok(ReadResourceResult::new(vec![ResourceContents::text(text, matched.uri.clone())]))
}

fn engine() -> Engine {
    Engine::builder("hardening-templates", KeyRing::generate()).build()
}

#[test]
fn unsupported_templates_are_build_errors_not_panics() {
    for bad in ["x:{+path}", "x:{#frag}", "x:{a,b}", "x:{a*}", "x:{a:3}", "x:{}", "x:{a", "x:a}", "x:{a}/{a}"] {
        let built = std::panic::catch_unwind(|| {
            McpServer::builder("t", "1", engine())
                .resource_template(ResourceTemplate::new(bad, "bad-one"), echo)
                .build()
                .map(|_| ())
        });
        let built = built.unwrap_or_else(|_| panic!("registering `{bad}` panicked"));
        let error = built.err().unwrap_or_else(|| panic!("`{bad}` was accepted"));
        let [BuildProblem::Template(template)] = error.problems() else { panic!("{error:?}") };
        assert_eq!(template.name(), "bad-one");
        let message = error.to_string();
        assert!(message.contains("resource template `bad-one`: "), "{message}");
    }
    // A level-1 template builds.
    let server = McpServer::builder("t", "1", engine())
        .resource_template(ResourceTemplate::new("x:{a}/{b}", "ok"), echo)
        .build();
    assert!(server.is_ok());
}

/// Two registrations under one name would leave the second unreachable: `build` refuses them,
/// and reports every problem of the builder at once, bad templates included.
#[test]
fn duplicate_names_are_refused_together() {
    let tool = |name: &'static str| Tool::new(name, "test", Arc::new(JsonObject::new()));
    let done = |_flow: Flow| async { Ok::<_, FlowError>("done".to_owned()) };
    let prompt = |_flow: Flow| async { Ok::<_, FlowError>(GetPromptResult::new(Vec::new())) };
    let resource = |_flow: Flow| async { Ok::<_, FlowError>(ReadResourceResult::new(Vec::new())) };
    let error = McpServer::builder("t", "1", engine())
        .tool(tool("a"), done)
        .tool(tool("b"), done)
        .tool(tool("a"), done)
        .tool(tool("a"), done)
        .prompt(Prompt::new("p", None::<String>, None), prompt)
        .prompt(Prompt::new("p", None::<String>, None), prompt)
        .resource(Resource::new("x:one", "one"), resource)
        .resource(Resource::new("x:one", "again"), resource)
        .resource_template(ResourceTemplate::new("x:{a}", "t1"), echo)
        .resource_template(ResourceTemplate::new("x:{a}", "t2"), echo)
        .resource_template(ResourceTemplate::new("x:{+a}", "bad"), echo)
        .build()
        .err()
        .unwrap();
    let mut problems: Vec<String> = error.problems().iter().map(ToString::to_string).collect();
    problems.sort();
    assert_eq!(
        problems,
        [
            "prompt `p` is registered more than once",
            "resource `x:one` is registered more than once",
            "resource template `bad`: `{+a}` uses the operator `+`, beyond level 1",
            "resource template `x:{a}` is registered more than once",
            "tool `a` is registered more than once",
        ],
        "{error}"
    );
    // Distinct names build.
    assert!(McpServer::builder("t", "1", engine()).tool(tool("a"), done).tool(tool("b"), done).build().is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_thousand_dashes_against_three_variables_answer() {
    let server = McpServer::builder("t", "1", engine())
        .resource_template(ResourceTemplate::new("x:{a}-{b}-{c}", "dashes"), echo)
        .build()
        .unwrap();
    let url = serve(server).await;

    let read = |uri: String| {
        let url = url.clone();
        async move {
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {
                "uri": uri,
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
            }});
            let response = reqwest::Client::builder()
                .no_proxy()
                .build()
                .unwrap()
                .post(&url)
                .header("Content-Type", "application/json")
                .header("Accept", "application/json, text/event-stream")
                .header("MCP-Protocol-Version", "2026-07-28")
                .header("Mcp-Method", "resources/read")
                .header("Mcp-Name", &uri)
                .body(body.to_string())
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 200);
            response.json::<Value>().await.unwrap()
        }
    };
    // Every split of the dashes among three variables is a candidate; backtracking tried them all
    // (cubic). The first variable takes the longest value that lets the rest match.
    let uri = format!("x:{}", "-".repeat(8000));
    let reply = read(uri.clone()).await;
    let text = reply["result"]["contents"][0]["text"].as_str().unwrap_or_else(|| panic!("{reply}"));
    let variables: Value = serde_json::from_str(text).unwrap();
    assert_eq!(variables, json!({"a": "-".repeat(7998), "b": "", "c": ""}));
    // And a URI that matches no split is refused the same way: not found, with the URI.
    let reply = read(format!("y:{}", "-".repeat(8000))).await;
    assert_eq!(reply["error"]["code"], json!(-32602), "{reply}");
    assert_eq!(reply["error"]["message"], json!("Resource not found"), "{reply}");
}
