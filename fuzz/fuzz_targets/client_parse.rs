//! What a client reads from a server: `InputRequest::from_json`, `RequestedSchema::from_json`,
//! `client::check_url`, and the `client::Driver` fed arbitrary results.
//!
//! Input that is not JSON is checked as a URL. JSON input is parsed as an input request, as a
//! schema, as a result's `inputRequests` and, where it holds them, as the requests' own schemas and
//! URLs; whatever parses must survive being written back. Then the driver runs against a server
//! answering with the input (an array: one result per round, then the transport fails), with a
//! trivial responder and a small round limit; the server checks every retry the driver sends.

#![no_main]

use elicit_fuzz::client::{ScriptedServer, TrivialResponder};
use elicit_runtime::client::{Driver, check_url};
use elicit_runtime::schema::RequestedSchema;
use elicit_runtime::wire::{Capabilities, InputRequest};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};

fuzz_target!(|data: &[u8]| {
    let Some(value) = elicit_fuzz::json(data) else {
        url(&String::from_utf8_lossy(data));
        return;
    };
    parse_everything(&value);
    drive(&value);
});

fn url(text: &str) {
    if let Ok(checked) = check_url(text) {
        assert_eq!(&checked.url[checked.host_range.clone()], checked.host, "the highlighted range is the host");
        // Normalising is idempotent: what the user is shown passes the same checks unchanged.
        let again = check_url(&checked.url).expect("a checked URL passes again");
        assert_eq!(again, checked, "checking {text:?} twice gives another answer");
    }
}

fn schema(value: &Value) {
    if let Ok(schema) = RequestedSchema::from_json(value) {
        assert_eq!(
            RequestedSchema::from_json(&schema.to_json()).as_ref(),
            Ok(&schema),
            "a schema does not survive the wire"
        );
    }
}

fn request(value: &Value) {
    if let Ok(request) = InputRequest::from_json(value) {
        assert_eq!(
            InputRequest::from_json(&request.to_json()).as_ref(),
            Ok(&request),
            "a request does not survive the wire"
        );
    }
    let params = value.get("params");
    if let Some(requested) = params.and_then(|p| p.get("requestedSchema")) {
        schema(requested);
    }
    if let Some(text) = params.and_then(|p| p.get("url")).and_then(Value::as_str) {
        url(text);
    }
}

fn parse_everything(value: &Value) {
    request(value);
    schema(value);
    if let Some(text) = value.as_str() {
        url(text);
    }
    let results = value.as_array().map_or(std::slice::from_ref(value), Vec::as_slice);
    for result in results {
        if let Some(requests) = result.get("inputRequests").and_then(Value::as_object) {
            requests.values().for_each(request);
        }
    }
}

fn drive(value: &Value) {
    let results = match value {
        Value::Array(results) => results.iter().take(4).cloned().collect(),
        other => vec![other.clone()],
    };
    let capabilities = Capabilities { form: true, url: true, sampling: true, roots: true };
    let driver = Driver::new(capabilities, json!({"name": "elicit-fuzz", "version": "0"}), "fuzz server")
        .max_rounds(3)
        .max_input_requests(16);
    let mut server = ScriptedServer::new(results);
    let outcome = elicit_fuzz::block_on(driver.call(&mut server, &mut TrivialResponder, "tools/call", Map::new()));
    assert!(server.calls <= 3, "the driver went past its round limit");
    if let Ok(result) = outcome {
        let kind = result.get("resultType");
        assert!(kind.is_none() || kind == Some(&json!("complete")), "returned a non-final result: {result}");
    }
}
