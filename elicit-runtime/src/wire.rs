//! The protocol revision 2026-07-28 messages this crate speaks: input requests and responses,
//! elicitation parameters and results, per-request client capabilities, and error codes.
//!
//! Serialisation produces exactly the spec's JSON (no `elicitationId`, no `resultType` inside an
//! input response). Parsing is deterministic — it dispatches on discriminating keys, never on the
//! luck of an untagged union — and tolerant of members the spec allows to be present.

pub mod tasks;

use std::borrow::Cow;
use std::fmt;

use serde_json::{Map, Value, json};

use crate::schema::{RequestedSchema, SchemaError};

/// The protocol revision this crate implements first, as a string: [`Revision::LATEST`].
pub const PROTOCOL_VERSION: &str = Revision::LATEST.as_str();
/// `_meta` key of the protocol version on every request.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key of the client's capabilities on every request.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key of the client's self-description.
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key of the server's self-description on results.
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// The method of a form- or URL-mode elicitation input request.
pub const ELICITATION_CREATE: &str = "elicitation/create";
/// The method of a sampling input request.
pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
/// The method of a roots input request.
pub const ROOTS_LIST: &str = "roots/list";

/// The method of a tool call, the request that may come back `input_required`.
pub const TOOLS_CALL: &str = "tools/call";
/// The method of a prompt request, which may come back `input_required` too.
pub const PROMPTS_GET: &str = "prompts/get";
/// The method of a resource read, which may come back `input_required` too.
pub const RESOURCES_READ: &str = "resources/read";
/// The method listing a server's tools.
pub const TOOLS_LIST: &str = "tools/list";
/// The method a 2026-07-28 client discovers a server with.
pub const SERVER_DISCOVER: &str = "server/discover";

/// Request member holding the answers to the previous round's input requests.
pub const INPUT_RESPONSES: &str = "inputResponses";
/// Request and result member holding the opaque state echoed from round to round.
pub const REQUEST_STATE: &str = "requestState";
/// Result member holding the input requests, by key.
pub const INPUT_REQUESTS: &str = "inputRequests";
/// Result member telling a final result from an [`InputRequiredResult`].
pub const RESULT_TYPE: &str = "resultType";
/// Request member of protocol metadata.
pub const META: &str = "_meta";

/// `resultType` of a final result.
pub const RESULT_COMPLETE: &str = "complete";
/// `resultType` of an [`InputRequiredResult`].
pub const RESULT_INPUT_REQUIRED: &str = "input_required";

/// JSON-RPC error codes used on the 2026-07-28 path.
pub mod codes {
    /// Invalid request (on a 2025-era session: an ask in a mode the client did not declare).
    pub const INVALID_REQUEST: i32 = -32600;
    /// Invalid params (also: bad `requestState`, malformed `inputResponses`).
    pub const INVALID_PARAMS: i32 = -32602;
    /// Method not found.
    pub const METHOD_NOT_FOUND: i32 = -32601;
    /// Internal error.
    pub const INTERNAL_ERROR: i32 = -32603;
    /// A header disagrees with the body.
    pub const HEADER_MISMATCH: i32 = -32020;
    /// The request needs a client capability that was not declared.
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i32 = -32021;
    /// The requested protocol version is not supported.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i32 = -32022;
}

/// What a client declared in `_meta["io.modelcontextprotocol/clientCapabilities"]` that matters for
/// input requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Capabilities {
    /// Form-mode elicitation (`elicitation: {}` or `elicitation: {form: {}}`).
    pub form: bool,
    /// URL-mode elicitation (`elicitation: {url: {}}`).
    pub url: bool,
    /// `sampling/createMessage`.
    pub sampling: bool,
    /// `roots/list`.
    pub roots: bool,
}

impl Capabilities {
    /// Form and URL elicitation, nothing else.
    pub const ELICITATION: Capabilities = Capabilities { form: true, url: true, sampling: false, roots: false };

    /// Reads the capabilities of one request's `_meta` (absent or malformed = nothing declared).
    ///
    /// ```
    /// use elicit_runtime::wire::Capabilities;
    ///
    /// let meta = serde_json::json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
    /// let caps = Capabilities::from_meta(meta.as_object());
    /// assert!(caps.form && !caps.url); // `{}` means form only
    /// ```
    pub fn from_meta(meta: Option<&Map<String, Value>>) -> Self {
        let caps = meta.and_then(|m| m.get(META_CLIENT_CAPABILITIES)).and_then(Value::as_object);
        Self::from_client_capabilities(caps)
    }

    /// Reads a `ClientCapabilities` object.
    pub fn from_client_capabilities(caps: Option<&Map<String, Value>>) -> Self {
        let Some(caps) = caps else { return Capabilities::default() };
        let (form, url) = match caps.get("elicitation").and_then(Value::as_object) {
            None => (false, false),
            // Backwards compatibility: an empty object means form mode.
            Some(e) if !e.contains_key("form") && !e.contains_key("url") => (true, false),
            Some(e) => (e.contains_key("form"), e.contains_key("url")),
        };
        Capabilities {
            form,
            url,
            sampling: caps.get("sampling").is_some_and(Value::is_object),
            roots: caps.get("roots").is_some_and(Value::is_object),
        }
    }

    /// This declaration as a `ClientCapabilities` object.
    pub fn to_json(self) -> Value {
        let mut caps = Map::new();
        if self.form || self.url {
            let mut elicitation = Map::new();
            if self.form {
                elicitation.insert("form".into(), json!({}));
            }
            if self.url {
                elicitation.insert("url".into(), json!({}));
            }
            caps.insert("elicitation".into(), Value::Object(elicitation));
        }
        if self.sampling {
            caps.insert("sampling".into(), json!({}));
        }
        if self.roots {
            caps.insert("roots".into(), json!({}));
        }
        Value::Object(caps)
    }
}

/// The parameters of an `elicitation/create` input request.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitParams {
    /// Form mode: a flat form the client renders.
    Form {
        /// Why the server asks.
        message: String,
        /// What to ask for.
        requested_schema: Cow<'static, RequestedSchema>,
        /// The request's `_meta`, if any (for example the draft app-rendered form hint a server
        /// attaches with feature `apps`). It never changes what is asked or how it is validated.
        meta: Option<Map<String, Value>>,
    },
    /// URL mode: a page the user opens out of band.
    Url {
        /// Why the server asks.
        message: String,
        /// The page to open.
        url: String,
    },
}

/// One entry of `inputRequests`.
#[derive(Debug, Clone, PartialEq)]
pub enum InputRequest {
    /// `elicitation/create`.
    Elicit(ElicitParams),
    /// `sampling/createMessage` with its parameters.
    CreateMessage(Value),
    /// `roots/list`.
    ListRoots,
}

/// The request as it appears in `inputRequests`: `{"method", "params"}`, a form's or a URL's
/// `params` with their `mode`. Written straight to text, a task's stored request costs no tree of
/// JSON values.
impl serde::Serialize for InputRequest {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;

        #[derive(serde::Serialize)]
        struct Form<'a> {
            mode: &'static str,
            message: &'a str,
            #[serde(rename = "requestedSchema")]
            requested_schema: &'a RequestedSchema,
            #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
            meta: Option<&'a Map<String, Value>>,
        }
        #[derive(serde::Serialize)]
        struct Url<'a> {
            mode: &'static str,
            message: &'a str,
            url: &'a str,
        }

        let mut map = serializer.serialize_map(None)?;
        match self {
            InputRequest::Elicit(ElicitParams::Form { message, requested_schema, meta }) => {
                map.serialize_entry("method", ELICITATION_CREATE)?;
                let params = Form { mode: "form", message, requested_schema, meta: meta.as_ref() };
                map.serialize_entry("params", &params)?;
            }
            InputRequest::Elicit(ElicitParams::Url { message, url }) => {
                map.serialize_entry("method", ELICITATION_CREATE)?;
                map.serialize_entry("params", &Url { mode: "url", message, url })?;
            }
            InputRequest::CreateMessage(params) => {
                map.serialize_entry("method", SAMPLING_CREATE_MESSAGE)?;
                map.serialize_entry("params", params)?;
            }
            InputRequest::ListRoots => map.serialize_entry("method", ROOTS_LIST)?,
        }
        map.end()
    }
}

impl InputRequest {
    /// The request as it appears in `inputRequests` (what its [`Serialize`](serde::Serialize)
    /// writes).
    pub fn to_json(&self) -> Value {
        // Writing into a `Value` fails only for a map key that is not a string, which no member
        // of an input request holds.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// Parses an entry of a server's `inputRequests`, refusing unknown methods and malformed
    /// elicitations clearly.
    pub fn from_json(value: &Value) -> Result<Self, WireError> {
        let object = value.as_object().ok_or_else(|| WireError::new("an input request must be a JSON object"))?;
        let method = object
            .get("method")
            .and_then(Value::as_str)
            .ok_or_else(|| WireError::new("an input request needs a string `method`"))?;
        match method {
            ELICITATION_CREATE => {
                let params = object
                    .get("params")
                    .and_then(Value::as_object)
                    .ok_or_else(|| WireError::new("`elicitation/create` needs `params`"))?;
                let message = params
                    .get("message")
                    .and_then(Value::as_str)
                    .ok_or_else(|| WireError::new("`elicitation/create` needs a string `message`"))?
                    .to_owned();
                match params.get("mode") {
                    None => parse_form(params, message),
                    Some(Value::String(mode)) if mode == "form" => parse_form(params, message),
                    Some(Value::String(mode)) if mode == "url" => {
                        let url = params
                            .get("url")
                            .and_then(Value::as_str)
                            .ok_or_else(|| WireError::new("a URL-mode elicitation needs a string `url`"))?
                            .to_owned();
                        Ok(InputRequest::Elicit(ElicitParams::Url { message, url }))
                    }
                    Some(other) => Err(WireError::new(format!(
                        "unknown elicitation mode {} (expected \"form\" or \"url\")",
                        clip_json(other)
                    ))),
                }
            }
            SAMPLING_CREATE_MESSAGE => {
                let params = object
                    .get("params")
                    .filter(|p| p.is_object())
                    .ok_or_else(|| WireError::new("`sampling/createMessage` needs object `params`"))?;
                Ok(InputRequest::CreateMessage(params.clone()))
            }
            ROOTS_LIST => Ok(InputRequest::ListRoots),
            other => Err(WireError::new(format!("unknown input request method `{}`", clip(other)))),
        }
    }
}

fn parse_form(params: &Map<String, Value>, message: String) -> Result<InputRequest, WireError> {
    let schema = params
        .get("requestedSchema")
        .ok_or_else(|| WireError::new("a form-mode elicitation needs `requestedSchema`"))?;
    let requested_schema = RequestedSchema::from_json(schema).map_err(WireError::from)?;
    let meta = params.get("_meta").and_then(Value::as_object).cloned();
    Ok(InputRequest::Elicit(ElicitParams::Form { message, requested_schema: Cow::Owned(requested_schema), meta }))
}

/// The user's choice on an elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ElicitAction {
    /// Submitted (form) or consented (URL).
    Accept,
    /// Explicitly refused.
    Decline,
    /// Dismissed without a choice.
    Cancel,
}

impl ElicitAction {
    /// The wire spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            ElicitAction::Accept => "accept",
            ElicitAction::Decline => "decline",
            ElicitAction::Cancel => "cancel",
        }
    }
}

/// An `ElicitResult`: the answer to one elicitation, as placed in `inputResponses`.
#[derive(Debug, Clone, PartialEq)]
pub struct ElicitResult {
    /// What the user did.
    pub action: ElicitAction,
    /// The form's content (form mode, `accept` only).
    pub content: Option<Map<String, Value>>,
}

impl ElicitResult {
    /// `accept` with form content.
    pub fn accept(content: Map<String, Value>) -> Self {
        ElicitResult { action: ElicitAction::Accept, content: Some(content) }
    }

    /// `accept` without content (URL-mode consent).
    pub fn consent() -> Self {
        ElicitResult { action: ElicitAction::Accept, content: None }
    }

    /// `decline`.
    pub fn decline() -> Self {
        ElicitResult { action: ElicitAction::Decline, content: None }
    }

    /// `cancel`.
    pub fn cancel() -> Self {
        ElicitResult { action: ElicitAction::Cancel, content: None }
    }

    /// The answer as sent: never with `resultType` or `_meta`.
    pub fn to_json(&self) -> Value {
        self.clone().into_json()
    }

    /// [`ElicitResult::to_json`], taking the answer rather than copying its content.
    pub(crate) fn into_json(self) -> Value {
        let mut object = Map::new();
        object.insert("action".into(), Value::String(self.action.as_str().into()));
        if let Some(content) = self.content {
            object.insert("content".into(), Value::Object(content));
        }
        Value::Object(object)
    }

    /// Parses an answer, tolerating members the protocol does not define (`resultType`, `_meta`).
    pub fn from_json(value: &Value) -> Result<Self, WireError> {
        let object = value.as_object().ok_or_else(not_an_object)?;
        let action = answer_action(object)?;
        let content = match object.get("content") {
            None | Some(Value::Null) => None,
            Some(Value::Object(content)) => Some(content.clone()),
            Some(_) => return Err(content_not_an_object()),
        };
        Ok(ElicitResult { action, content })
    }

    /// [`ElicitResult::from_json`], taking the answer: its content moves rather than being copied.
    #[cfg(feature = "server")]
    pub(crate) fn from_owned(value: Value) -> Result<Self, WireError> {
        let Value::Object(mut object) = value else { return Err(not_an_object()) };
        let action = answer_action(&object)?;
        let content = match object.swap_remove("content") {
            None | Some(Value::Null) => None,
            Some(Value::Object(content)) => Some(content),
            Some(_) => return Err(content_not_an_object()),
        };
        Ok(ElicitResult { action, content })
    }
}

fn not_an_object() -> WireError {
    WireError::new("an elicitation answer must be a JSON object")
}

fn content_not_an_object() -> WireError {
    WireError::new("an elicitation answer's `content` must be an object")
}

/// An elicitation answer's `action`.
fn answer_action(object: &Map<String, Value>) -> Result<ElicitAction, WireError> {
    match object.get("action").and_then(Value::as_str) {
        Some("accept") => Ok(ElicitAction::Accept),
        Some("decline") => Ok(ElicitAction::Decline),
        Some("cancel") => Ok(ElicitAction::Cancel),
        _ => Err(WireError::new("an elicitation answer needs `action`: \"accept\", \"decline\" or \"cancel\"")),
    }
}

/// An `InputRequiredResult`: what a server answers when it needs input before it can finish.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct InputRequiredResult {
    /// The input requests, in the order they were asked.
    pub input_requests: Vec<(String, InputRequest)>,
    /// The opaque state to echo on the retry.
    pub request_state: Option<String>,
}

impl InputRequiredResult {
    /// The result object (`resultType: "input_required"`).
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        object.insert(RESULT_TYPE.into(), Value::String(RESULT_INPUT_REQUIRED.into()));
        if !self.input_requests.is_empty() {
            let requests: Map<String, Value> =
                self.input_requests.iter().map(|(key, request)| (key.clone(), request.to_json())).collect();
            object.insert(INPUT_REQUESTS.into(), Value::Object(requests));
        }
        if let Some(state) = &self.request_state {
            object.insert(REQUEST_STATE.into(), Value::String(state.clone()));
        }
        Value::Object(object)
    }

    /// Reads the result of a `tools/call`, `prompts/get` or `resources/read`: `Ok(None)` when it is
    /// final (`resultType: "complete"`, or no `resultType`, as in earlier revisions), the input
    /// requests and state when it is `input_required`.
    ///
    /// The requests are read in the order `value` holds them; a request that does not parse is an
    /// error naming its key.
    ///
    /// ```
    /// use elicit_runtime::wire::{InputRequiredResult, ResultError};
    /// use serde_json::json;
    ///
    /// let asked = json!({"resultType": "input_required", "requestState": "s1", "inputRequests": {
    ///     "ok": {"method": "elicitation/create", "params": {"message": "Sure?",
    ///         "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}}}});
    /// let result = InputRequiredResult::from_json(&asked).unwrap().unwrap();
    /// assert_eq!(result.input_requests[0].0, "ok");
    /// assert_eq!(InputRequiredResult::from_json(&result.to_json()).unwrap(), Some(result));
    ///
    /// assert_eq!(InputRequiredResult::from_json(&json!({"content": []})).unwrap(), None);
    /// let unknown = InputRequiredResult::from_json(&json!({"resultType": "later"})).unwrap_err();
    /// assert_eq!(unknown, ResultError::UnknownResultType("\"later\"".into()));
    /// ```
    pub fn from_json(value: &Value) -> Result<Option<Self>, ResultError> {
        let object = value.as_object().ok_or(ResultError::NotAnObject)?;
        match object.get(RESULT_TYPE) {
            None => return Ok(None),
            Some(Value::String(kind)) if kind == RESULT_COMPLETE => return Ok(None),
            Some(Value::String(kind)) if kind == RESULT_INPUT_REQUIRED => {}
            Some(other) => return Err(ResultError::UnknownResultType(clip_json(other))),
        }
        let requests = match object.get(INPUT_REQUESTS) {
            None => None,
            Some(Value::Object(requests)) => Some(requests),
            Some(_) => return Err(ResultError::NotAnObjectMember(INPUT_REQUESTS)),
        };
        let request_state = match object.get(REQUEST_STATE) {
            None => None,
            Some(Value::String(token)) => Some(token.clone()),
            Some(_) => return Err(ResultError::NotAString(REQUEST_STATE)),
        };
        let requests = requests.filter(|r| !r.is_empty());
        if requests.is_none() && request_state.is_none() {
            return Err(ResultError::NothingAsked);
        }
        let input_requests = requests
            .into_iter()
            .flatten()
            .map(|(key, raw)| match InputRequest::from_json(raw) {
                Ok(request) => Ok((key.clone(), request)),
                Err(error) => Err(ResultError::Request { key: key.clone(), error }),
            })
            .collect::<Result<_, _>>()?;
        Ok(Some(InputRequiredResult { input_requests, request_state }))
    }
}

/// Why a call's result could not be read (see [`InputRequiredResult::from_json`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResultError {
    /// The result is not a JSON object.
    NotAnObject,
    /// `resultType` is neither `complete` nor `input_required` (the value, as JSON, clipped).
    UnknownResultType(String),
    /// This member is present but not an object.
    NotAnObjectMember(&'static str),
    /// This member is present but not a string.
    NotAString(&'static str),
    /// An `input_required` result with neither input requests nor a state to echo.
    NothingAsked,
    /// The input request under `key` does not follow the protocol.
    Request {
        /// The input request's key.
        key: String,
        /// What is wrong with it.
        error: WireError,
    },
}

impl fmt::Display for ResultError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResultError::NotAnObject => f.write_str("the result is not an object"),
            ResultError::UnknownResultType(kind) => write!(f, "unknown resultType {kind}"),
            ResultError::NotAnObjectMember(member) => write!(f, "`{member}` is not an object"),
            ResultError::NotAString(member) => write!(f, "`{member}` is not a string"),
            ResultError::NothingAsked => {
                f.write_str("an input_required result with neither inputRequests nor requestState")
            }
            ResultError::Request { key, error } => write!(f, "input request `{}`: {error}", clip(key)),
        }
    }
}

impl std::error::Error for ResultError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ResultError::Request { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// Checks that `inputResponses`, when present, is an object and returns it.
///
/// `null` is refused like any other non-object: the field is optional, not nullable.
pub fn parse_input_responses(value: Option<&Value>) -> Result<Option<&Map<String, Value>>, WireError> {
    match value {
        None => Ok(None),
        Some(Value::Object(map)) => Ok(Some(map)),
        Some(_) => Err(WireError::new("`inputResponses` must be an object keyed like the input requests")),
    }
}

/// A message that does not follow the protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError {
    message: String,
}

impl WireError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        WireError { message: message.into() }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for WireError {}

impl From<SchemaError> for WireError {
    fn from(error: SchemaError) -> Self {
        WireError::new(error.to_string())
    }
}

pub(crate) use crate::content::clip;

fn clip_json(value: &Value) -> String {
    clip(&value.to_string())
}

// ---- The 2025-era wire (sessions opened with `initialize`) ----

/// The notification a server sends on a 2025-11-25 session when a URL-mode step finished.
pub const ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";

/// A protocol revision this crate speaks. The two 2025-era ones are negotiated with `initialize`
/// and open a session (`Mcp-Session-Id`), in which the server pushes `elicitation/create`,
/// `sampling/createMessage` and `roots/list` requests to the client; 2026-07-28 is sessionless
/// (Multi Round-Trip Requests).
///
/// ```
/// use elicit_runtime::wire::Revision;
///
/// assert_eq!(Revision::parse("2025-11-25"), Some(Revision::V2025_11_25));
/// assert!(Revision::V2025_06_18.has_sessions());
/// assert!(!Revision::LATEST.has_sessions());
/// assert_eq!(Revision::LATEST.as_str(), elicit_runtime::wire::PROTOCOL_VERSION);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Revision {
    /// 2025-06-18: sessions; form-mode elicitation only, and no `mode` member.
    V2025_06_18,
    /// 2025-11-25: sessions; form and URL mode (`mode`, `elicitationId`).
    V2025_11_25,
    /// 2026-07-28: sessionless; every request carries its capabilities, input goes through
    /// `InputRequiredResult` and retries.
    V2026_07_28,
}

impl std::fmt::Display for Revision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Revision {
    /// Every revision served, oldest first.
    pub const ALL: [Revision; 3] = [Revision::V2025_06_18, Revision::V2025_11_25, Revision::V2026_07_28];

    /// The revisions with sessions (the 2025-era ones), oldest first.
    pub const SESSION: [Revision; 2] = [Revision::V2025_06_18, Revision::V2025_11_25];

    /// The revision this crate implements first: 2026-07-28.
    pub const LATEST: Revision = Revision::V2026_07_28;

    /// The revision's date string.
    pub const fn as_str(self) -> &'static str {
        match self {
            Revision::V2025_06_18 => "2025-06-18",
            Revision::V2025_11_25 => "2025-11-25",
            Revision::V2026_07_28 => "2026-07-28",
        }
    }

    /// Parses a revision's date string; revisions this crate does not speak are `None`.
    pub fn parse(version: &str) -> Option<Self> {
        Revision::ALL.into_iter().find(|v| v.as_str() == version)
    }

    /// Whether this revision opens a session with `initialize` (the 2025-era ones), in which the
    /// server pushes its requests to the client.
    pub const fn has_sessions(self) -> bool {
        matches!(self, Revision::V2025_06_18 | Revision::V2025_11_25)
    }

    /// The capabilities a client declared in `initialize`, as this revision reads them: on
    /// 2025-06-18 `elicitation` has no modes, so any `elicitation` object means form only.
    pub fn capabilities(self, declared: Option<&Map<String, Value>>) -> Capabilities {
        let caps = Capabilities::from_client_capabilities(declared);
        match self {
            Revision::V2025_06_18 => {
                let elicitation = declared.and_then(|c| c.get("elicitation")).is_some_and(Value::is_object);
                Capabilities { form: elicitation, url: false, ..caps }
            }
            Revision::V2025_11_25 | Revision::V2026_07_28 => caps,
        }
    }

    /// The `{method, params}` of the request this revision pushes for `request`. URL mode needs
    /// the step's `elicitationId`; 2025-06-18 has no URL mode and no `mode` member; 2026-07-28
    /// pushes nothing (an error).
    pub fn request(
        self,
        request: &InputRequest,
        elicitation_id: Option<&str>,
    ) -> Result<(&'static str, Option<Value>), WireError> {
        if !self.has_sessions() {
            return Err(WireError::new("2026-07-28 pushes no requests: input goes through InputRequiredResult"));
        }
        Ok(match request {
            InputRequest::Elicit(ElicitParams::Form { message, requested_schema, meta }) => {
                let mut params = json!({"message": message, "requestedSchema": requested_schema.to_json()});
                if self == Revision::V2025_11_25 {
                    params["mode"] = json!("form");
                }
                if let Some(meta) = meta {
                    params["_meta"] = Value::Object(meta.clone());
                }
                (ELICITATION_CREATE, Some(params))
            }
            InputRequest::Elicit(ElicitParams::Url { message, url }) => {
                if self == Revision::V2025_06_18 {
                    return Err(WireError::new("URL-mode elicitation does not exist on 2025-06-18"));
                }
                let id =
                    elicitation_id.ok_or_else(|| WireError::new("a URL-mode elicitation needs an elicitationId"))?;
                (ELICITATION_CREATE, Some(json!({"mode": "url", "message": message, "url": url, "elicitationId": id})))
            }
            InputRequest::CreateMessage(params) => (SAMPLING_CREATE_MESSAGE, Some(params.clone())),
            InputRequest::ListRoots => (ROOTS_LIST, None),
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failing test should stop loudly")]
mod tests {
    use super::*;

    #[test]
    fn capabilities_follow_the_interpretation_table() {
        let read = |v: Value| Capabilities::from_client_capabilities(v.as_object());
        assert_eq!(read(json!({})), Capabilities::default());
        assert_eq!(read(json!({"elicitation": {}})), Capabilities { form: true, ..Default::default() });
        assert_eq!(read(json!({"elicitation": {"url": {}}})), Capabilities { url: true, ..Default::default() });
        assert_eq!(read(json!({"elicitation": {"form": {}, "url": {}}})), Capabilities::ELICITATION);
        assert!(read(json!({"sampling": {}, "roots": {"listChanged": true}})).roots);
        assert_eq!(read(Capabilities::ELICITATION.to_json()), Capabilities::ELICITATION);
    }

    #[test]
    fn url_request_has_no_elicitation_id() {
        let request = InputRequest::Elicit(ElicitParams::Url { message: "m".into(), url: "https://x.test/a".into() });
        assert_eq!(
            request.to_json(),
            json!({"method": "elicitation/create", "params": {"mode": "url", "message": "m", "url": "https://x.test/a"}})
        );
        assert_eq!(InputRequest::from_json(&request.to_json()), Ok(request));
    }

    #[test]
    fn missing_mode_is_form() {
        let value = json!({"method": "elicitation/create", "params": {"message": "m",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}});
        assert!(matches!(InputRequest::from_json(&value), Ok(InputRequest::Elicit(ElicitParams::Form { .. }))));
    }

    #[test]
    fn refuses_unknown_methods_and_modes() {
        assert!(InputRequest::from_json(&json!({"method": "tools/call", "params": {}})).is_err());
        let value = json!({"method": "elicitation/create", "params": {"message": "m", "mode": "telepathy"}});
        assert!(InputRequest::from_json(&value).is_err());
        assert!(InputRequest::from_json(&json!("x")).is_err());
    }

    #[test]
    fn elicit_result_tolerates_extra_members_and_never_emits_them() {
        let parsed =
            ElicitResult::from_json(&json!({"action": "decline", "resultType": "complete", "_meta": {}})).unwrap();
        assert_eq!(parsed, ElicitResult::decline());
        assert_eq!(parsed.to_json(), json!({"action": "decline"}));
        assert!(ElicitResult::from_json(&json!({"action": "maybe"})).is_err());
        assert!(ElicitResult::from_json(&json!(12345)).is_err());
    }

    #[test]
    fn input_responses_must_be_an_object() {
        assert!(parse_input_responses(None).unwrap().is_none());
        assert!(parse_input_responses(Some(&json!(null))).is_err());
        assert!(parse_input_responses(Some(&json!([]))).is_err());
        assert!(parse_input_responses(Some(&json!({"a": {"action": "cancel"}}))).unwrap().is_some());
    }

    #[test]
    fn a_form_request_keeps_its_meta_both_ways() {
        let meta = json!({"ui": {"resourceUri": "ui://s/form"}});
        let form = InputRequest::Elicit(ElicitParams::Form {
            message: "m".into(),
            requested_schema: Cow::Owned(RequestedSchema::new(vec![])),
            meta: meta.as_object().cloned(),
        });
        let sent = form.to_json();
        assert_eq!(sent["params"]["_meta"], meta);
        assert_eq!(InputRequest::from_json(&sent).unwrap(), form);
        let (_, pushed) = Revision::V2025_06_18.request(&form, None).unwrap();
        assert_eq!(pushed.unwrap()["_meta"], meta);
        let mut bare = sent;
        bare["params"].as_object_mut().unwrap().remove("_meta");
        let read = InputRequest::from_json(&bare).unwrap();
        assert!(matches!(read, InputRequest::Elicit(ElicitParams::Form { meta: None, .. })), "{read:?}");
    }

    #[test]
    fn legacy_requests_follow_their_revision() {
        let form = InputRequest::Elicit(ElicitParams::Form {
            message: "m".into(),
            requested_schema: Cow::Owned(RequestedSchema::new(vec![])),
            meta: None,
        });
        let (method, params) = Revision::V2025_06_18.request(&form, None).unwrap();
        assert_eq!(method, ELICITATION_CREATE);
        assert!(params.unwrap().get("mode").is_none(), "2025-06-18 has no `mode`");
        let (_, params) = Revision::V2025_11_25.request(&form, None).unwrap();
        assert_eq!(params.unwrap()["mode"], "form");
        let url = InputRequest::Elicit(ElicitParams::Url { message: "m".into(), url: "https://x.example/1".into() });
        assert!(Revision::V2025_06_18.request(&url, Some("id")).is_err());
        assert!(Revision::V2025_11_25.request(&url, None).is_err());
        let (_, params) = Revision::V2025_11_25.request(&url, Some("id")).unwrap();
        assert_eq!(params.unwrap()["elicitationId"], "id");
        let caps = json!({"elicitation": {}, "roots": {}});
        assert_eq!(
            Revision::V2025_06_18.capabilities(caps.as_object()),
            Capabilities { form: true, url: false, sampling: false, roots: true }
        );
        let caps = json!({"elicitation": {"url": {}}});
        assert!(Revision::V2025_06_18.capabilities(caps.as_object()).form);
        assert_eq!(
            Revision::V2025_11_25.capabilities(caps.as_object()),
            Capabilities { form: false, url: true, sampling: false, roots: false }
        );
        assert_eq!(Revision::parse("2025-11-25"), Some(Revision::V2025_11_25));
        assert_eq!(Revision::parse("2026-07-28"), Some(Revision::V2026_07_28));
        assert_eq!(Revision::parse("2024-11-05"), None);
        assert!(Revision::V2026_07_28.request(&form, None).is_err());
        assert_eq!(
            Revision::SESSION.to_vec(),
            Revision::ALL.into_iter().filter(|r| r.has_sessions()).collect::<Vec<_>>()
        );
    }
}
