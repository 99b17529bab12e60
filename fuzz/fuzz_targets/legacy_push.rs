//! What a client reads from a 2025-era server: pushed requests (`client::session::parse_request`),
//! notifications (`parse_notification`), a `-32042` error's `data` (`parse_url_required`), and
//! `Driver::call_in_session` with a server that pushes the input's messages during a call.
//!
//! JSON input is parsed every way; then, when it is an array of `{"method", "params", "id"?}`
//! messages, a scripted server pushes each one through the real channel (a request when it has
//! an `id`, a notification otherwise) and ends the call with the last element as its result, or
//! as a `-32042` error's data when that element says `"error": -32042`. The driver must end,
//! within its bounds, without panicking; a refused push must carry a JSON-RPC error code.

#![no_main]

use elicit_fuzz::client::TrivialResponder;
use elicit_runtime::client::session::{
    self, SessionCaller, SessionNotice, SessionSender, parse_notification, parse_request, parse_url_required,
};
use elicit_runtime::client::{CallError, Caller, Driver};
use elicit_runtime::wire::Capabilities;
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};

fuzz_target!(|data: &[u8]| {
    let Some(value) = elicit_fuzz::json(data) else { return };
    parse_everything(&value);
    if let Value::Array(messages) = &value {
        drive(messages);
    }
});

fn parse_everything(value: &Value) {
    let method = value.get("method").and_then(Value::as_str).unwrap_or("elicitation/create");
    let params = value.get("params");
    for (method, params) in [(method, params), ("elicitation/create", Some(value)), ("ping", params)] {
        if let Err(refusal) = parse_request(method, params) {
            assert!(matches!(refusal.code, -32602 | -32601), "unexpected code {}", refusal.code);
        }
    }
    if let SessionNotice::ElicitationComplete(id) = parse_notification(session::ELICITATION_COMPLETE, Some(value)) {
        assert!(!id.is_empty() && id.len() <= session::MAX_ELICITATION_ID_LEN);
    }
    if let Ok(urls) = parse_url_required(Some(value)) {
        assert!(!urls.is_empty() && urls.len() <= 16);
    }
}

struct PushingServer {
    sender: SessionSender,
    messages: Vec<Value>,
    calls: usize,
}

impl Caller for PushingServer {
    async fn call(&mut self, _method: &str, params: Map<String, Value>) -> Result<Value, CallError> {
        assert!(!params.contains_key("_meta"), "a legacy call carries no per-request _meta");
        self.calls += 1;
        let Some((last, pushed)) = self.messages.split_last() else { return Ok(json!({})) };
        for message in pushed {
            let method = message.get("method").and_then(Value::as_str).unwrap_or("").to_owned();
            let params = message.get("params").cloned();
            if message.get("id").is_some() {
                if let Err(refusal) = self.sender.request(&method, params).await {
                    assert!(refusal.code < 0, "a refusal is a JSON-RPC error code");
                }
            } else {
                self.sender.notify(&method, params);
            }
        }
        if last.get("error") == Some(&json!(-32042)) && self.calls < 3 {
            return Err(CallError::Rpc { code: -32042, message: "needed".into(), data: last.get("data").cloned() });
        }
        Ok(last.clone())
    }
}

impl SessionCaller for PushingServer {
    async fn cancel_call(&mut self, _reason: &str) {}
}

fn drive(messages: &[Value]) {
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().expect("a runtime");
    runtime.block_on(async {
        let (sender, mut receiver) = session::channel();
        let mut server = PushingServer { sender, messages: messages.to_vec(), calls: 0 };
        let driver = Driver::new(Capabilities::ELICITATION, json!({"name": "fuzz", "version": "0"}), "fuzz")
            .max_rounds(4)
            .max_input_requests(8);
        let _ =
            driver.call_in_session(&mut server, &mut receiver, &mut TrivialResponder, "tools/call", Map::new()).await;
        assert!(server.calls <= 4, "the driver called {} times with max_rounds 4", server.calls);
    });
}
