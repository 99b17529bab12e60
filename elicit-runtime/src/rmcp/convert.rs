//! Conversions between the engine's values and rmcp's: outcomes to results, errors to errors.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, OnceLock, PoisonError};

use ::rmcp::model::{
    CallToolResult, ContentBlock, ElicitRequest, ElicitRequestParams, ElicitationSchema, ErrorCode, ErrorData,
    InputRequest as RmcpInputRequest, InputRequiredResult as RmcpInputRequired,
};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::schema::RequestedSchema;
use crate::server::EngineError;
use crate::server::store::StoredJson;
use crate::wire::{ElicitParams, InputRequest, InputRequiredResult};

/// The JSON-RPC error the engine chose, as rmcp's error: `?` on an engine call in a handler of
/// your own returns it.
impl From<EngineError> for ErrorData {
    fn from(error: EngineError) -> ErrorData {
        ErrorData::new(ErrorCode(error.code), error.message, error.data)
    }
}

/// Converts our input-required result into rmcp's typed one.
pub(super) fn input_required(result: &InputRequiredResult) -> Result<RmcpInputRequired, ErrorData> {
    let mut requests = BTreeMap::new();
    for (key, request) in &result.input_requests {
        let typed = typed_input_request(request).map_err(|error| {
            tracing::error!(target: "elicit_runtime", %error, key, "an input request cannot be encoded for rmcp");
            ErrorData::internal_error("an input request cannot be encoded", None)
        })?;
        requests.insert(key.clone(), typed);
    }
    let requests = if requests.is_empty() { None } else { Some(requests) };
    Ok(RmcpInputRequired::new(requests, result.request_state.clone()))
}

/// One input request as rmcp's type. rmcp's `InputRequest` is an untagged union: decoding into it
/// buffers the request and tries each variant in turn. The method is known here, so the request is
/// decoded straight into its variant, which is what the union would have picked; the form of a
/// derived type takes its schema from [`typed_schema`].
fn typed_input_request(request: &InputRequest) -> Result<RmcpInputRequest, serde_json::Error> {
    if let InputRequest::Elicit(ElicitParams::Form { message, requested_schema: Cow::Borrowed(schema), meta }) = request
    {
        return Ok(RmcpInputRequest::Elicitation(ElicitRequest::new(ElicitRequestParams::FormElicitationParams {
            meta: meta.clone().map(rmcp::model::RequestMetaObject::from),
            message: message.clone(),
            requested_schema: typed_schema(schema)?,
        })));
    }
    let json = request.to_json();
    Ok(match request {
        InputRequest::Elicit(_) => RmcpInputRequest::Elicitation(serde_json::from_value(json)?),
        InputRequest::CreateMessage(_) => RmcpInputRequest::CreateMessage(serde_json::from_value(json)?),
        InputRequest::ListRoots => RmcpInputRequest::ListRoots(serde_json::from_value(json)?),
    })
}

/// A task's stored input request as rmcp's type.
///
/// A form as [`StoredJson::of`] writes it (`method`, and `params` of `mode: "form"`, a
/// `message`, a `requestedSchema` and an optional `_meta` object, nothing else) is read from its
/// text without a tree of values, its schema from [`stored_schema`], as a derived type's from
/// [`typed_schema`]. Any other request goes through [`input_request_of_json`].
pub(super) fn input_request_of_stored(request: &StoredJson) -> Result<RmcpInputRequest, serde_json::Error> {
    if let Some(form) = stored_form(request.get()) {
        return Ok(form);
    }
    input_request_of_json(request.to_json()?)
}

/// An input request as on the wire as rmcp's type. As in [`typed_input_request`], the request's
/// `method` names the variant, and the request is decoded straight into it rather than buffered
/// for each variant of rmcp's untagged union in turn; a request that does not decode so goes
/// through the union, which then fails the same way as ever.
fn input_request_of_json(request: Value) -> Result<RmcpInputRequest, serde_json::Error> {
    let direct = match request.get("method").and_then(Value::as_str) {
        Some("elicitation/create") => Deserialize::deserialize(&request).map(RmcpInputRequest::Elicitation),
        Some("sampling/createMessage") => Deserialize::deserialize(&request).map(RmcpInputRequest::CreateMessage),
        Some("roots/list") => Deserialize::deserialize(&request).map(RmcpInputRequest::ListRoots),
        _ => return serde_json::from_value(request),
    };
    direct.or_else(|_| serde_json::from_value(request))
}

/// A stored form of exactly the shape [`StoredJson::of`] writes, borrowed from its text.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredForm<'a> {
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[serde(borrow)]
    params: StoredFormParams<'a>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredFormParams<'a> {
    #[serde(borrow)]
    mode: Cow<'a, str>,
    message: String,
    #[serde(rename = "requestedSchema", borrow)]
    requested_schema: &'a RawValue,
    #[serde(rename = "_meta")]
    meta: Option<Value>,
}

/// The stored form `text` as rmcp's type, built as [`typed_input_request`] builds it; `None` for
/// any other shape, or a schema rmcp does not decode, which then take the general path.
fn stored_form(text: &str) -> Option<RmcpInputRequest> {
    let form: StoredForm<'_> = serde_json::from_str(text).ok()?;
    if form.method != "elicitation/create" || form.params.mode != "form" {
        return None;
    }
    let meta = match form.params.meta {
        None => None,
        Some(Value::Object(meta)) => Some(rmcp::model::RequestMetaObject::from(meta)),
        Some(_) => return None,
    };
    let requested_schema = stored_schema(form.params.requested_schema.get())?;
    Some(RmcpInputRequest::Elicitation(ElicitRequest::new(ElicitRequestParams::FormElicitationParams {
        meta,
        message: form.params.message,
        requested_schema,
    })))
}

/// rmcp's `ElicitationSchema` of a stored `requestedSchema` (a task's input request, read back
/// on every poll), decoded once per process per schema: the same schema comes back from every
/// task of a tool, as the same text (the order of its properties, the form's, included). `None`
/// when rmcp does not decode it.
fn stored_schema(schema: &str) -> Option<ElicitationSchema> {
    // Schemas built at run time could be many: past this many, decode without keeping.
    const MAX_CACHED: usize = 1024;
    static CACHE: OnceLock<Mutex<HashMap<Box<str>, ElicitationSchema>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Mutex::default);
    // Nothing panics while the lock is held; a poisoned map is still a valid cache.
    let lock = || cache.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(kept) = lock().get(schema) {
        return Some(kept.clone());
    }
    let typed: ElicitationSchema = serde_json::from_str(schema).ok()?;
    let mut cached = lock();
    if cached.len() < MAX_CACHED {
        cached.insert(schema.into(), typed.clone());
    }
    Some(typed)
}

/// rmcp's `ElicitationSchema` of a `'static` (derived) schema, decoded once per process. rmcp
/// decodes every property through an untagged union; for a form of a dozen fields that costs more
/// than the rest of the round. A `'static` schema keeps its address for the life of the process,
/// so the address is the key.
fn typed_schema(schema: &'static RequestedSchema) -> Result<ElicitationSchema, serde_json::Error> {
    // Schemas leaked at run time could be many: past this many, decode without keeping.
    const MAX_CACHED: usize = 1024;
    static CACHE: OnceLock<Mutex<HashMap<usize, ElicitationSchema>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Mutex::default);
    // Nothing panics while the lock is held; a poisoned map is still a valid cache.
    let lock = || cache.lock().unwrap_or_else(PoisonError::into_inner);
    let key = std::ptr::from_ref(schema).addr();
    if let Some(typed) = lock().get(&key) {
        return Ok(typed.clone());
    }
    let typed: ElicitationSchema = serde_json::from_value(schema.to_json())?;
    let mut cached = lock();
    if cached.len() < MAX_CACHED {
        cached.insert(key, typed.clone());
    }
    Ok(typed)
}

/// A handler's own error as a tool result the model reads: `isError`, the error and its causes.
pub(super) fn handler_error_result(error: &(dyn std::error::Error + 'static)) -> CallToolResult {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(error) = cause {
        text.push_str(": ");
        text.push_str(&error.to_string());
        cause = error.source();
    }
    CallToolResult::error(vec![ContentBlock::text(text)])
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failing test should stop loudly")]
mod tests {
    use std::borrow::Cow;

    use serde_json::json;

    use super::*;
    use crate::schema::{
        BooleanSchema, EnumOption, MultiSelectSchema, NumberSchema, PrimitiveSchema, Property, RequestedSchema,
        SingleSelectSchema, StringFormat, StringSchema,
    };
    use crate::wire::ElicitParams;

    /// Decoding straight into the variant gives what rmcp's untagged union gives, for every kind
    /// of input request and every kind of property.
    #[test]
    fn typed_input_requests_match_the_untagged_decoding() {
        let option = |value: &'static str, title: Option<&'static str>| EnumOption {
            value: value.into(),
            title: title.map(Into::into),
        };
        let schema = RequestedSchema::new(vec![
            Property::required(
                "s",
                PrimitiveSchema::String(StringSchema {
                    min_length: Some(1),
                    format: Some(StringFormat::Date),
                    ..Default::default()
                }),
            ),
            Property::optional(
                "n",
                PrimitiveSchema::Number(NumberSchema { integer: true, maximum: Some(9.into()), ..Default::default() }),
            ),
            Property::optional(
                "b",
                PrimitiveSchema::Boolean(BooleanSchema { default: Some(true), ..Default::default() }),
            ),
            Property::required(
                "e",
                PrimitiveSchema::SingleSelect(SingleSelectSchema {
                    options: vec![option("a", None), option("b", None)],
                    ..Default::default()
                }),
            ),
            Property::required(
                "t",
                PrimitiveSchema::SingleSelect(SingleSelectSchema {
                    options: vec![option("a", Some("A"))],
                    titled: true,
                    ..Default::default()
                }),
            ),
            Property::optional(
                "m",
                PrimitiveSchema::MultiSelect(MultiSelectSchema {
                    options: vec![option("x", Some("X")), option("y", Some("Y"))],
                    titled: true,
                    max_items: Some(1),
                    ..Default::default()
                }),
            ),
        ]);
        // A `'static` schema, as a derived type's: the cached path, twice (decoded, then kept).
        static STATIC_SCHEMA: OnceLock<RequestedSchema> = OnceLock::new();
        let static_schema = STATIC_SCHEMA.get_or_init(|| schema.clone());
        let requests = [
            InputRequest::Elicit(ElicitParams::Form {
                message: "Fill in".into(),
                requested_schema: Cow::Owned(schema),
                meta: None,
            }),
            InputRequest::Elicit(ElicitParams::Form {
                message: "Kept".into(),
                requested_schema: Cow::Borrowed(static_schema),
                meta: None,
            }),
            InputRequest::Elicit(ElicitParams::Form {
                message: "Kept".into(),
                requested_schema: Cow::Borrowed(static_schema),
                meta: None,
            }),
            InputRequest::Elicit(ElicitParams::Form {
                message: "With its _meta".into(),
                requested_schema: Cow::Borrowed(static_schema),
                meta: Some(json!({"io.example/hint": {"k": 1}}).as_object().unwrap().clone()),
            }),
            InputRequest::Elicit(ElicitParams::Url { message: "Pay".into(), url: "https://pay.example/1".into() }),
            InputRequest::CreateMessage(
                json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Hi"}}], "maxTokens": 5}),
            ),
            InputRequest::ListRoots,
        ];
        for request in &requests {
            let untagged: RmcpInputRequest = serde_json::from_value(request.to_json()).unwrap();
            assert_eq!(typed_input_request(request).unwrap(), untagged, "{request:?}");
            assert_eq!(input_request_of_json(request.to_json()).unwrap(), untagged, "{request:?}");
            assert_eq!(input_request_of_stored(&StoredJson::of(request).unwrap()).unwrap(), untagged, "{request:?}");
        }
    }

    /// Stored forms whose schemas differ only in the order of their properties each keep their
    /// own order (the cache tells them apart), read back twice (decoded, then kept); a form of
    /// another shape takes the general path to the same result.
    #[test]
    fn stored_forms_keep_their_own_schema() {
        let form = |properties: Value| {
            json!({"method": "elicitation/create", "params": {"mode": "form", "message": "Order",
                "requestedSchema": {"type": "object", "properties": properties}}})
        };
        let a = form(json!({"first": {"type": "string"}, "second": {"type": "number", "minimum": 1}}));
        let b = form(json!({"second": {"type": "number", "minimum": 1}, "first": {"type": "string"}}));
        let mut odd = a.clone();
        odd["params"]["extra"] = json!(true);
        for request in [&a, &b, &a, &b, &odd] {
            let untagged: RmcpInputRequest = serde_json::from_value(request.clone()).unwrap();
            let stored = input_request_of_stored(&StoredJson::from_json(request)).unwrap();
            assert_eq!(serde_json::to_string(&stored).unwrap(), serde_json::to_string(&untagged).unwrap(), "{request}");
        }
    }

    /// A stored request that does not decode into the variant its method names fails as rmcp's
    /// union fails it, with the same error.
    #[test]
    fn malformed_stored_input_requests_fail_as_the_untagged_decoding() {
        for request in [
            json!({"method": "elicitation/create"}),
            json!({"method": "elicitation/create", "params": {"mode": "form", "message": 5}}),
            json!({"method": "sampling/createMessage", "params": {}}),
            json!({"method": "roots/list", "params": 7}),
            json!({"method": "ping"}),
            json!([]),
        ] {
            let untagged = serde_json::from_value::<RmcpInputRequest>(request.clone()).map_err(|e| e.to_string());
            let direct = input_request_of_json(request.clone()).map_err(|e| e.to_string());
            assert_eq!(direct, untagged, "{request}");
            let stored = input_request_of_stored(&StoredJson::from_json(&request)).map_err(|e| e.to_string());
            assert_eq!(stored, untagged, "{request}");
        }
    }
}
