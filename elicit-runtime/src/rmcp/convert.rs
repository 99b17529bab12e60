//! Conversions between the engine's values and rmcp's: outcomes to results, errors to errors.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, OnceLock, PoisonError};

use ::rmcp::model::{
    CallToolResult, ContentBlock, ElicitRequest, ElicitRequestParams, ElicitationSchema, ErrorCode, ErrorData,
    InputRequest as RmcpInputRequest, InputRequiredResult as RmcpInputRequired,
};

use crate::schema::RequestedSchema;
use crate::server::EngineError;
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
            InputRequest::Elicit(ElicitParams::Url { message: "Pay".into(), url: "https://pay.example/1".into() }),
            InputRequest::CreateMessage(
                json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Hi"}}], "maxTokens": 5}),
            ),
            InputRequest::ListRoots,
        ];
        for request in &requests {
            let untagged: RmcpInputRequest = serde_json::from_value(request.to_json()).unwrap();
            assert_eq!(typed_input_request(request).unwrap(), untagged, "{request:?}");
        }
    }
}
