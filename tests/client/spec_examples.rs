//! The spec's own examples (`tests/fixtures/spec/examples/`) read with the client's parsers: every input
//! request, `InputRequiredResult`, `ElicitResult`, `requestedSchema` and capability declaration
//! in them parses; the answers in them fit the forms they answer; and the driver, fed the spec's
//! server messages, sends exactly the spec's retries. Then what the client must refuse: schemas
//! outside the protocol's subset, and URLs it must never open.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;

use elicit_runtime::client::form::validate;
use elicit_runtime::client::{
    AskContext, CallError, Caller, CheckedUrl, Driver, PendingAction, PendingUrl, Responder, check_url,
};
use elicit_runtime::schema::RequestedSchema;
use elicit_runtime::wire::{Capabilities, ElicitAction, ElicitParams, ElicitResult, InputRequest};
use serde_json::{Map, Value, json};

const CAPS_KEY: &str = "io.modelcontextprotocol/clientCapabilities";

fn examples_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/spec/examples");
    assert!(dir.is_dir(), "the spec examples are missing: expected the vendored folder {}", dir.display());
    dir
}

/// Every example, by file name.
fn examples() -> BTreeMap<String, Value> {
    let mut all = BTreeMap::new();
    for entry in std::fs::read_dir(examples_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        let value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name} is not JSON: {e}"));
        all.insert(name, value);
    }
    assert!(all.len() >= 50, "expected the 53 spec examples, found {}", all.len());
    all
}

fn example(name: &str) -> Value {
    examples().remove(name).unwrap_or_else(|| panic!("no example {name}"))
}

/// What the walk over the examples parsed.
#[derive(Default, Debug)]
struct Tally {
    input_requests: usize,
    forms: usize,
    urls: usize,
    sampling: usize,
    input_required_results: usize,
    elicit_results: usize,
    schemas: usize,
    property_schemas: usize,
    capabilities: Vec<(String, Capabilities)>,
    complete_results: usize,
    sampling_answers: usize,
}

fn parse_input_request(name: &str, value: &Value, tally: &mut Tally) -> InputRequest {
    let request =
        InputRequest::from_json(value).unwrap_or_else(|e| panic!("{name}: input request refused: {e}\n{value}"));
    tally.input_requests += 1;
    match &request {
        InputRequest::Elicit(ElicitParams::Form { requested_schema, .. }) => {
            tally.forms += 1;
            // What the client parsed is what the server sent.
            let sent = &value["params"]["requestedSchema"];
            assert_eq!(&requested_schema.to_json(), sent, "{name}: the schema does not survive parsing");
        }
        InputRequest::Elicit(ElicitParams::Url { url, .. }) => {
            tally.urls += 1;
            let checked = check_url(url).unwrap_or_else(|e| panic!("{name}: the spec's URL {url} is refused: {e}"));
            assert_eq!(&checked.url[checked.host_range.clone()], checked.host, "{name}");
        }
        InputRequest::CreateMessage(_) => tally.sampling += 1,
        InputRequest::ListRoots => {}
    }
    request
}

fn parse_input_required(name: &str, result: &Value, tally: &mut Tally) {
    tally.input_required_results += 1;
    if let Some(state) = result.get("requestState") {
        assert!(state.is_string(), "{name}: requestState is a string");
    }
    let requests = result.get("inputRequests").and_then(Value::as_object);
    assert!(requests.is_some() || result.get("requestState").is_some(), "{name}: neither requests nor state");
    for request in requests.into_iter().flat_map(|r| r.values()) {
        parse_input_request(name, request, tally);
    }
}

fn parse_elicit_result(name: &str, value: &Value, tally: &mut Tally) -> ElicitResult {
    let result =
        ElicitResult::from_json(value).unwrap_or_else(|e| panic!("{name}: ElicitResult refused: {e}\n{value}"));
    tally.elicit_results += 1;
    // What the client would send back is exactly the example.
    assert_eq!(&result.to_json(), value, "{name}: the answer does not survive a round trip");
    result
}

fn parse_capabilities(name: &str, caps: &Value, tally: &mut Tally) {
    let object = caps.as_object().unwrap_or_else(|| panic!("{name}: capabilities are not an object"));
    tally.capabilities.push((name.to_owned(), Capabilities::from_client_capabilities(Some(object))));
}

fn parse_request_params(name: &str, params: &Map<String, Value>, tally: &mut Tally) {
    if let Some(caps) = params.get("_meta").and_then(|m| m.get(CAPS_KEY)) {
        parse_capabilities(name, caps, tally);
    }
    if let Some(responses) = params.get("inputResponses") {
        parse_input_responses(name, responses, tally);
    }
    if let Some(state) = params.get("requestState") {
        assert!(state.is_string(), "{name}: requestState is a string");
    }
}

fn parse_input_responses(name: &str, responses: &Value, tally: &mut Tally) {
    for answer in responses.as_object().unwrap_or_else(|| panic!("{name}: inputResponses is an object")).values() {
        if answer.get("action").is_some() {
            parse_elicit_result(name, answer, tally);
        } else {
            // A sampling answer (`CreateMessageResult`): not the elicitation client's to parse.
            assert!(answer.get("role").is_some(), "{name}: an input response that is neither elicitation nor sampling");
            tally.sampling_answers += 1;
        }
    }
}

/// Recognises one example by its shape and parses everything elicitation-related in it.
fn walk(name: &str, value: &Value, tally: &mut Tally) {
    let object = value.as_object().unwrap_or_else(|| panic!("{name}: not an object"));
    if object.contains_key("jsonrpc") {
        // A JSON-RPC envelope: a request, a result or an error.
        if let Some(params) = object.get("params").and_then(Value::as_object) {
            parse_request_params(name, params, tally);
        } else if let Some(result) = object.get("result") {
            walk(name, result, tally);
        } else if let Some(data) = object.get("error").and_then(|e| e.get("data")) {
            let caps = data
                .get("requiredCapabilities")
                .unwrap_or_else(|| panic!("{name}: an error without requiredCapabilities"));
            parse_capabilities(name, caps, tally);
        } else {
            panic!("{name}: an envelope of unknown shape");
        }
    } else if let Some(kind) = object.get("resultType") {
        match kind.as_str() {
            Some("input_required") => parse_input_required(name, value, tally),
            Some("complete") => tally.complete_results += 1,
            _ => panic!("{name}: resultType {kind}"),
        }
    } else if object.contains_key("method") {
        parse_input_request(name, value, tally);
    } else if object.contains_key("_meta") {
        let caps = object["_meta"].get(CAPS_KEY).unwrap_or_else(|| panic!("{name}: _meta without capabilities"));
        parse_capabilities(name, caps, tally);
    } else if object.contains_key("elicitation") {
        parse_capabilities(name, value, tally);
    } else if object.contains_key("action") {
        parse_elicit_result(name, value, tally);
    } else if object.contains_key("message") {
        // `ElicitRequestFormParams` / `ElicitRequestURLParams` alone.
        parse_input_request(name, &json!({"method": "elicitation/create", "params": value}), tally);
    } else if object.get("type") == Some(&json!("object")) {
        let schema = RequestedSchema::from_json(value).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(&schema.to_json(), value, "{name}");
        tally.schemas += 1;
    } else if object.contains_key("type") {
        // One `PrimitiveSchemaDefinition`: parsed as the only property of a form.
        let form = json!({"type": "object", "properties": {"field": value}});
        let schema =
            RequestedSchema::from_json(&form).unwrap_or_else(|e| panic!("{name}: property schema refused: {e}"));
        assert_eq!(schema.to_json(), form, "{name}: the property schema does not survive parsing");
        // The example's default fills the form validly.
        if let Some(default) = schema.properties[0].schema.default_value() {
            let content = json!({"field": default});
            validate(&schema, content.as_object().unwrap())
                .unwrap_or_else(|e| panic!("{name}: its own default fails: {e}"));
        }
        tally.property_schemas += 1;
    } else if object.values().all(|v| v.get("method").is_some()) {
        // An `inputRequests` map.
        for request in object.values() {
            parse_input_request(name, request, tally);
        }
    } else if object.values().all(|v| v.get("action").is_some() || v.get("role").is_some()) {
        parse_input_responses(name, value, tally);
    } else {
        panic!("{name}: an example of a shape this test does not know; teach it");
    }
}

#[test]
fn every_spec_example_parses_with_the_client_parsers() {
    let mut tally = Tally::default();
    for (name, value) in examples() {
        walk(&name, &value, &mut tally);
    }
    // Floors, so that an example silently skipped shows up.
    assert!(tally.input_requests >= 19, "{tally:?}");
    assert!(tally.forms >= 13 && tally.urls >= 2 && tally.sampling >= 4, "{tally:?}");
    assert!(tally.input_required_results >= 7, "{tally:?}");
    assert!(tally.elicit_results >= 13, "{tally:?}");
    assert!(tally.property_schemas >= 14, "{tally:?}");
    assert!(tally.complete_results >= 3 && tally.sampling_answers >= 2, "{tally:?}");

    let caps: BTreeMap<&str, Capabilities> = tally.capabilities.iter().map(|(n, c)| (n.as_str(), *c)).collect();
    let form_only = Capabilities { form: true, ..Default::default() };
    let expected = [
        ("page-elicitation-01-capability-form-and-url.json", Capabilities::ELICITATION),
        ("page-elicitation-02-capability-empty-equals-form.json", form_only),
        ("schema-ClientCapabilities--elicitation-form-and-url-mode-support.json", Capabilities::ELICITATION),
        ("schema-ClientCapabilities--elicitation-form-only-implicit.json", form_only),
        ("schema-CallToolRequest--call-tool-request.json", Capabilities::default()),
        ("schema-MissingRequiredClientCapabilityError--missing-elicitation-capability.json", form_only),
    ];
    for (name, want) in expected {
        assert_eq!(caps.get(name), Some(&want), "{name}");
    }
    assert_eq!(caps.len(), expected.len(), "capability examples: {caps:?}");
}

#[test]
fn the_url_examples_are_shown_with_their_host() {
    for name in
        ["page-elicitation-14-url-input-request.json", "schema-ElicitRequestURLParams--elicit-sensitive-data.json"]
    {
        let mut value = example(name);
        if value.get("method").is_none() {
            value = json!({"method": "elicitation/create", "params": value});
        }
        let InputRequest::Elicit(ElicitParams::Url { url, message }) = InputRequest::from_json(&value).unwrap() else {
            panic!("{name} is not URL mode");
        };
        assert_eq!(message, "Please provide your API key to continue.");
        let checked = check_url(&url).unwrap();
        assert_eq!(checked.url, "https://mcp.example.com/ui/set_api_key");
        assert_eq!(checked.host, "mcp.example.com");
        assert!(checked.warnings.is_empty(), "{:?}", checked.warnings);
    }
    // URL-mode consent carries no content.
    let consent = ElicitResult::from_json(&example("schema-ElicitResult--accept-url-mode-no-content.json")).unwrap();
    assert_eq!(consent, ElicitResult::consent());
}

/// The spec's answers fit the forms they answer.
#[test]
fn the_spec_answers_fit_their_forms() {
    let pairs = [
        ("page-elicitation-10-form-simple-input-request.json", "page-elicitation-11-form-simple-elicit-result.json"),
        (
            "page-elicitation-12-form-structured-input-request.json",
            "page-elicitation-13-form-structured-elicit-result.json",
        ),
        ("schema-ElicitRequest--elicitation-request.json", "schema-ElicitResult--input-single-field.json"),
        (
            "schema-ElicitRequestFormParams--elicit-multiple-fields.json",
            "schema-ElicitResult--input-multiple-fields.json",
        ),
        ("schema-ElicitRequestFormParams--elicit-single-field.json", "schema-ElicitResult--input-single-field.json"),
    ];
    for (request_name, answer_name) in pairs {
        let mut request = example(request_name);
        if request.get("method").is_none() {
            request = json!({"method": "elicitation/create", "params": request});
        }
        let InputRequest::Elicit(ElicitParams::Form { requested_schema, .. }) =
            InputRequest::from_json(&request).unwrap()
        else {
            panic!("{request_name} is not a form");
        };
        let answer = ElicitResult::from_json(&example(answer_name)).unwrap();
        assert_eq!(answer.action, ElicitAction::Accept);
        validate(&requested_schema, answer.content.as_ref().unwrap())
            .unwrap_or_else(|e| panic!("{answer_name} does not fit {request_name}: {e}"));
    }
}

// ---- the driver replays the spec's flows ----

/// Plays the server's side from a list of results and records what the driver sent.
struct Replay {
    results: VecDeque<Value>,
    sent: Vec<Map<String, Value>>,
}

impl Caller for Replay {
    async fn call(&mut self, method: &str, params: Map<String, Value>) -> Result<Value, CallError> {
        assert_eq!(method, "tools/call");
        self.sent.push(params);
        Ok(self.results.pop_front().expect("the driver sent a request the flow does not have"))
    }
}

/// Answers each form with the spec's own answer for that key, and sampling with the spec's answer.
struct SpecUser {
    forms: Map<String, Value>,
    sampling: Value,
}

impl Responder for SpecUser {
    async fn form(&mut self, ctx: AskContext<'_>, _message: &str, _schema: &RequestedSchema) -> ElicitResult {
        ElicitResult::from_json(self.forms.get(ctx.key).unwrap_or_else(|| panic!("no spec answer for {}", ctx.key)))
            .unwrap()
    }

    async fn url(&mut self, _ctx: AskContext<'_>, _message: &str, _url: &CheckedUrl) -> ElicitAction {
        panic!("no URL in these flows")
    }

    async fn pending(&mut self, _ctx: AskContext<'_>, _pending: PendingUrl<'_>) -> PendingAction {
        panic!("no URL in these flows")
    }

    async fn sampling(&mut self, _ctx: AskContext<'_>, _params: &Value) -> Option<Value> {
        Some(self.sampling.clone())
    }
}

fn result_of(name: &str) -> Value {
    example(name)["result"].clone()
}

fn params_of(name: &str) -> Map<String, Value> {
    example(name)["params"].as_object().unwrap().clone()
}

/// The retry as the spec prints it: the spec's page examples leave out `_meta` for brevity.
fn without_meta(mut params: Map<String, Value>) -> Map<String, Value> {
    assert!(params.contains_key("_meta"), "the driver must send _meta");
    params.remove("_meta");
    params
}

#[tokio::test]
async fn the_driver_sends_the_spec_retries_of_the_two_round_sep_flow() {
    let mut server = Replay {
        results: [
            "sep2322-02-ado-round1-input-required.json",
            "sep2322-04-ado-round2-input-required-with-state.json",
            "sep2322-06-ado-final-complete.json",
        ]
        .map(result_of)
        .into(),
        sent: Vec::new(),
    };
    let mut forms = Map::new();
    forms.insert(
        "resolution".into(),
        params_of("sep2322-03-ado-round1-retry.json")["inputResponses"]["resolution"].clone(),
    );
    forms.insert(
        "duplicate_of".into(),
        params_of("sep2322-05-ado-round2-retry.json")["inputResponses"]["duplicate_of"].clone(),
    );
    let mut user = SpecUser { forms, sampling: Value::Null };
    let driver = Driver::new(Capabilities::ELICITATION, json!({"name": "t", "version": "0"}), "ado");
    let result =
        driver.call(&mut server, &mut user, "tools/call", params_of("sep2322-01-ado-round1-call.json")).await.unwrap();
    assert_eq!(result, result_of("sep2322-06-ado-final-complete.json"));
    assert_eq!(server.sent.len(), 3);
    assert_eq!(without_meta(server.sent[0].clone()), params_of("sep2322-01-ado-round1-call.json"));
    assert_eq!(without_meta(server.sent[1].clone()), params_of("sep2322-03-ado-round1-retry.json"));
    assert_eq!(without_meta(server.sent[2].clone()), params_of("sep2322-05-ado-round2-retry.json"));
}

#[tokio::test]
async fn the_driver_sends_the_spec_retry_of_the_tools_page() {
    let mut server = Replay {
        results: ["page-tools-01-input-required-response.json", "page-tools-03-complete-result-response.json"]
            .map(result_of)
            .into(),
        sent: Vec::new(),
    };
    let retry = params_of("page-tools-02-retry-with-input-responses.json");
    let mut user = SpecUser { forms: retry["inputResponses"].as_object().unwrap().clone(), sampling: Value::Null };
    let mut first = retry.clone();
    first.remove("inputResponses");
    first.remove("requestState");
    let driver =
        Driver::new(Capabilities { form: true, ..Default::default() }, json!({"name": "t", "version": "0"}), "w");
    driver.call(&mut server, &mut user, "tools/call", first.clone()).await.unwrap();
    assert_eq!(without_meta(server.sent[0].clone()), first);
    assert_eq!(without_meta(server.sent[1].clone()), retry);
}

#[tokio::test]
async fn the_driver_answers_the_spec_mixed_round_with_exactly_its_keys() {
    // Elicitation and sampling in one round, with state (the schema's example), answered with the
    // schema's `InputResponses` example.
    let responses = example("schema-InputResponses--elicitation-and-sampling-input-responses.json");
    let mut server = Replay {
        results: [
            example("schema-InputRequiredResult--input-required-result-with-elicitation-and-sampling-and-request-state.json"),
            result_of("page-tools-03-complete-result-response.json"),
        ]
        .into(),
        sent: Vec::new(),
    };
    let mut user =
        SpecUser { forms: responses.as_object().unwrap().clone(), sampling: responses["capital_of_france"].clone() };
    let caps = Capabilities { sampling: true, ..Capabilities::ELICITATION };
    let driver = Driver::new(caps, json!({"name": "t", "version": "0"}), "w");
    let mut params = Map::new();
    params.insert("name".into(), json!("get_weather"));
    driver.call(&mut server, &mut user, "tools/call", params).await.unwrap();
    let retry = &server.sent[1];
    assert_eq!(retry["inputResponses"], responses);
    let state = example(
        "schema-InputRequiredResult--input-required-result-with-elicitation-and-sampling-and-request-state.json",
    )["requestState"]
        .clone();
    assert_eq!(retry["requestState"], state);
}

// ---- what the client refuses ----

#[test]
fn malformed_schemas_are_refused() {
    let cases = [
        ("not an object", json!("form")),
        ("root not an object type", json!({"type": "array", "properties": {}})),
        ("no properties", json!({"type": "object"})),
        ("properties not an object", json!({"type": "object", "properties": []})),
        ("nested object", json!({"type": "object", "properties": {"o": {"type": "object", "properties": {}}}})),
        (
            "array of objects",
            json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "object"}}}}),
        ),
        (
            "array of free strings",
            json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}}}}),
        ),
        ("unknown type", json!({"type": "object", "properties": {"x": {"type": "null"}}})),
        ("missing type", json!({"type": "object", "properties": {"x": {"title": "X"}}})),
        ("unknown format", json!({"type": "object", "properties": {"s": {"type": "string", "format": "password"}}})),
        (
            "min above max",
            json!({"type": "object", "properties": {"s": {"type": "string", "minLength": 5, "maxLength": 1}}}),
        ),
        ("negative length", json!({"type": "object", "properties": {"s": {"type": "string", "minLength": -1}}})),
        ("empty enum", json!({"type": "object", "properties": {"e": {"type": "string", "enum": []}}})),
        ("duplicate option", json!({"type": "object", "properties": {"e": {"type": "string", "enum": ["a", "a"]}}})),
        (
            "default outside enum",
            json!({"type": "object", "properties": {"e": {"type": "string", "enum": ["a"], "default": "b"}}}),
        ),
        (
            "oneOf without title",
            json!({"type": "object", "properties": {"e": {"type": "string", "oneOf": [{"const": "a"}]}}}),
        ),
        ("required a stranger", json!({"type": "object", "properties": {"s": {"type": "string"}}, "required": ["t"]})),
        ("required not a list", json!({"type": "object", "properties": {"s": {"type": "string"}}, "required": "s"})),
        (
            "boolean default a string",
            json!({"type": "object", "properties": {"b": {"type": "boolean", "default": "yes"}}}),
        ),
        ("number bound a string", json!({"type": "object", "properties": {"n": {"type": "number", "minimum": "0"}}})),
    ];
    for (what, schema) in cases {
        let error = RequestedSchema::from_json(&schema).err().unwrap_or_else(|| panic!("{what}: accepted {schema}"));
        assert!(error.to_string().starts_with("requestedSchema"), "{what}: {error}");
        // Through the input request parser too: the whole request is refused.
        let request = json!({"method": "elicitation/create", "params": {"message": "m", "requestedSchema": schema}});
        assert!(InputRequest::from_json(&request).is_err(), "{what}: the input request was accepted");
    }
    // A form without a schema, a URL request without a URL, an unknown mode.
    for bad in [
        json!({"method": "elicitation/create", "params": {"message": "m"}}),
        json!({"method": "elicitation/create", "params": {"mode": "url", "message": "m"}}),
        json!({"method": "elicitation/create", "params": {"mode": "telepathy", "message": "m"}}),
        json!({"method": "elicitation/create", "params": {"requestedSchema": {"type": "object", "properties": {}}}}),
    ] {
        assert!(InputRequest::from_json(&bad).is_err(), "accepted {bad}");
    }
}

#[test]
fn urls_with_other_schemes_are_refused() {
    for url in [
        "javascript:alert(document.cookie)",
        "JavaScript:alert(1)",
        "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
        "file:///etc/passwd",
        "ftp://files.example.com/pay",
        "vbscript:msgbox(1)",
        "about:blank",
        "mailto:pay@example.com",
        "//example.com/no-scheme",
        "https://",
    ] {
        let error = check_url(url).err().unwrap_or_else(|| panic!("{url} was accepted"));
        assert!(!error.to_string().is_empty(), "{url}");
        // The request still parses (a URL is a string), but the driver's check refuses it.
        let request = json!({"method": "elicitation/create", "params": {"mode": "url", "message": "m", "url": url}});
        assert!(
            matches!(InputRequest::from_json(&request), Ok(InputRequest::Elicit(ElicitParams::Url { .. }))),
            "{url}"
        );
    }
    for url in ["https://pay.example.com/x", "http://127.0.0.1:8080/pay/abc", "HTTPS://EXAMPLE.COM/"] {
        assert!(check_url(url).is_ok(), "{url} was refused");
    }
}

#[test]
fn the_highlighted_host_is_the_real_host() {
    for (url, host) in [
        ("https://pay.example.com/x", "pay.example.com"),
        // A userinfo repeating the host name must not take the highlight.
        ("https://pay.example.com.evil@pay.example.com/x", "pay.example.com"),
        ("https://bank.example@evil.test/login", "evil.test"),
        ("http://[::1]:8080/pay", "[::1]"),
        ("http://127.0.0.1:8080/pay/abc", "127.0.0.1"),
    ] {
        let checked = check_url(url).unwrap();
        assert_eq!(checked.host, host, "{url}");
        assert_eq!(&checked.url[checked.host_range.clone()], host, "{url}");
        // The highlight is the authority's host: nothing after it but a port or the path.
        let after = &checked.url[checked.host_range.end..];
        assert!(
            after.is_empty() || after.starts_with(':') || after.starts_with('/'),
            "{url}: highlight ends before {after:?}"
        );
        let before = &checked.url[..checked.host_range.start];
        assert!(before.ends_with("://") || before.ends_with('@'), "{url}: highlight starts after {before:?}");
    }
}
