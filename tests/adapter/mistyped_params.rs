//! Mistyped Multi Round-Trip parameters over HTTP are invalid params (-32602), answered before
//! rmcp's typed decoding would turn them into "method not found".

use elicit_test_support::server;

use serde_json::json;
use server::http::Client;
use server::process::ServerProcess;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mistyped_input_responses_state_and_arguments_are_minus_32602() {
    let server = ServerProcess::travel(&server::key_b64());
    let client = Client::new(&server.mcp_url());
    let cases = [
        (json!({"name": "rate_trip", "arguments": {}, "inputResponses": 5}), "`inputResponses` must be an object"),
        (json!({"name": "rate_trip", "arguments": {}, "inputResponses": null}), "`inputResponses` must be an object"),
        (json!({"name": "rate_trip", "arguments": {}, "inputResponses": ["x"]}), "`inputResponses` must be an object"),
        (json!({"name": "rate_trip", "arguments": {}, "requestState": 5}), "`requestState` must be the string"),
        (json!({"name": "rate_trip", "arguments": 5}), "`arguments` must be an object"),
    ];
    for (params, expected) in cases {
        let reply = client.request("tools/call", params.clone()).await;
        assert_eq!(reply.status, 200, "{params}");
        let (code, message, _) = reply.error();
        assert_eq!(code, -32602, "{params}");
        assert!(message.starts_with(expected), "{params}: {message}");
    }
    // Well-typed requests still pass through untouched.
    let asked = client.call("rate_trip", json!({})).await.asked();
    assert_eq!(asked.keys(), ["contact", "rating"]);
}
