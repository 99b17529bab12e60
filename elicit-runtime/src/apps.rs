//! **Experimental, from a draft.** App-rendered forms: a form ask that also names an MCP App (a
//! `ui://` HTML resource of the same server) which a host may show instead of its own form.
//!
//! This follows SEP-3118 ("App-Rendered Elicitations for MCP Apps"), a proposal that is **not
//! accepted** and may change; this module may change with it, in any release. The wire names it
//! uses are spelled once, below.
//!
//! What the draft asks of a server, and where this crate does it:
//!
//! - the server advertises `capabilities.extensions["io.modelcontextprotocol/ui"].elicitation = {}`
//!   ([`server_capability`]; the rmcp adapter's `McpServer` merges it in when its engine has an app
//!   form);
//! - a form ask carries `params._meta.ui.resourceUri` only when the request's effective client
//!   capabilities declare form elicitation, the UI extension with the MIME type
//!   `text/html;profile=mcp-app` in `mimeTypes`, and its `elicitation` member ([`negotiated`]); every
//!   other client sees the identical form without the hint;
//! - the hint names an absolute `ui://` URI with a non-empty authority, checked when the
//!   [`AppForm`] is made, and registered on the engine ([`EngineBuilder::app_form`]), whose server
//!   serves it: `resources/read` of the URI answers [`AppForm::contents`];
//! - the hint never changes `requestedSchema`, its validation or the decoded type: an answer the app
//!   collected is parsed exactly like one from a native form.
//!
//! The App is the crate's own form page ([`crate::form::render_form`]) with a small script, allowed
//! by its hash, that speaks the Apps bridge: `ui/initialize` (declaring `appCapabilities.elicitation`),
//! `ui/notifications/initialized`, then answers the host's `elicitation/create` with an
//! `ElicitResult`.
//!
//! [`EngineBuilder::app_form`]: crate::server::EngineBuilder::app_form
//!
//! ```
//! use elicit_runtime::apps::AppForm;
//! use elicit_runtime::Elicit;
//!
//! /// Who is travelling?
//! #[derive(Elicit)]
//! struct Traveller {
//!     /// Full name
//!     name: String,
//! }
//!
//! let form = AppForm::new::<Traveller>("ui://travel/traveller").unwrap();
//! assert_eq!(form.uri(), "ui://travel/traveller");
//! assert!(form.html().contains("ui/initialize"));
//! assert!(AppForm::new::<Traveller>("ui:///traveller").is_err(), "no authority");
//! assert!(AppForm::new::<Traveller>("https://travel.example/form").is_err(), "not ui://");
//! ```

use std::sync::{Arc, OnceLock};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::Elicit;
use crate::form::{FormValues, FormView, render_form};
use crate::schema::RequestedSchema;
use crate::wire::{Capabilities, META_CLIENT_CAPABILITIES};

/// The MCP Apps extension id, the key under `capabilities.extensions`.
pub const EXTENSION_ID: &str = "io.modelcontextprotocol/ui";
/// The member of the extension's settings that declares app-rendered elicitation (draft).
pub const ELICITATION: &str = "elicitation";
/// The member of the client's extension settings listing the app MIME types it renders.
pub const MIME_TYPES: &str = "mimeTypes";
/// The MIME type of an MCP App's HTML, the only one defined today.
pub const MIME_TYPE: &str = "text/html;profile=mcp-app";
/// The `_meta` member holding UI metadata.
pub const META_UI: &str = "ui";
/// The member of `_meta.ui` naming the App.
pub const RESOURCE_URI: &str = "resourceUri";
/// The scheme of an App resource.
pub const SCHEME: &str = "ui";

/// The longest URI accepted for an App: a hint rides on every ask.
const MAX_URI_LEN: usize = 512;

/// Whether a `ClientCapabilities` object negotiates app-rendered forms: core form elicitation (the
/// `form` key, or a bare `{}`), the UI extension listing [`MIME_TYPE`], and its [`ELICITATION`] member.
/// Support is never inferred from the UI extension alone.
///
/// ```
/// use elicit_runtime::apps::negotiated;
/// use serde_json::json;
///
/// let ui = json!({"mimeTypes": ["text/html;profile=mcp-app"], "elicitation": {}});
/// let with = json!({"elicitation": {"form": {}}, "extensions": {"io.modelcontextprotocol/ui": ui}});
/// assert!(negotiated(with.as_object()));
/// let apps_only = json!({"elicitation": {"form": {}},
///     "extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}});
/// assert!(!negotiated(apps_only.as_object()));
/// ```
pub fn negotiated(client_capabilities: Option<&Map<String, Value>>) -> bool {
    let Some(caps) = client_capabilities else { return false };
    let Some(ui) = caps
        .get("extensions")
        .and_then(Value::as_object)
        .and_then(|extensions| extensions.get(EXTENSION_ID))
        .and_then(Value::as_object)
    else {
        return false;
    };
    let renders_apps = ui
        .get(MIME_TYPES)
        .and_then(Value::as_array)
        .is_some_and(|types| types.iter().any(|t| t.as_str() == Some(MIME_TYPE)));
    Capabilities::from_client_capabilities(Some(caps)).form
        && renders_apps
        && ui.get(ELICITATION).is_some_and(Value::is_object)
}

/// [`negotiated`] for the capabilities of one request's `_meta` (2026-07-28).
pub fn negotiated_in_meta(meta: Option<&Map<String, Value>>) -> bool {
    negotiated(meta.and_then(|m| m.get(META_CLIENT_CAPABILITIES)).and_then(Value::as_object))
}

/// The server's settings of the UI extension: `{"elicitation": {}}`, to merge into
/// `capabilities.extensions[EXTENSION_ID]`.
pub fn server_capability() -> Map<String, Value> {
    let mut settings = Map::new();
    settings.insert(ELICITATION.to_owned(), json!({}));
    settings
}

/// Why an [`AppForm`]'s URI was refused: the URI and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppFormError {
    uri: String,
    kind: AppFormErrorKind,
}

/// What is wrong with an [`AppForm`]'s URI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AppFormErrorKind {
    /// Longer than 512 bytes.
    TooLong,
    /// Not an absolute URI.
    NotAbsolute,
    /// A scheme other than `ui`.
    Scheme,
    /// A `ui://` URI without an authority, or with an empty one.
    NoAuthority,
}

impl AppFormError {
    /// The URI refused, as given.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// What is wrong with it.
    pub fn kind(&self) -> AppFormErrorKind {
        self.kind
    }
}

impl std::fmt::Display for AppFormError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let why = match self.kind {
            AppFormErrorKind::TooLong => "longer than 512 bytes",
            AppFormErrorKind::NotAbsolute => "not an absolute URI",
            AppFormErrorKind::Scheme => "the scheme must be `ui`",
            AppFormErrorKind::NoAuthority => "a `ui://` URI needs a non-empty authority (`ui://server/form`)",
        };
        write!(f, "app form URI {:?}: {why}", self.uri)
    }
}

impl std::error::Error for AppFormError {}

/// Checks that `uri` is an absolute `ui://` URI with a non-empty authority.
fn check_uri(uri: &str) -> Result<(), AppFormError> {
    let refuse = |kind| Err(AppFormError { uri: uri.to_owned(), kind });
    if uri.len() > MAX_URI_LEN {
        return refuse(AppFormErrorKind::TooLong);
    }
    let Ok(parsed) = fluent_uri::Uri::parse(uri) else { return refuse(AppFormErrorKind::NotAbsolute) };
    if parsed.scheme().as_str() != SCHEME {
        return refuse(AppFormErrorKind::Scheme);
    }
    match parsed.authority() {
        Some(authority) if !authority.host().is_empty() => Ok(()),
        _ => refuse(AppFormErrorKind::NoAuthority),
    }
}

/// One form a server offers as an MCP App: its `ui://` URI, the schema it renders, and the App's HTML.
#[derive(Debug, Clone)]
pub struct AppForm {
    uri: Arc<str>,
    schema: &'static RequestedSchema,
    html: Arc<str>,
}

impl AppForm {
    /// The App for `T`'s form at `uri`, an absolute `ui://` URI with a non-empty authority.
    pub fn new<T: Elicit>(uri: &str) -> Result<AppForm, AppFormError> {
        check_uri(uri)?;
        let schema = T::requested_schema();
        Ok(AppForm { uri: Arc::from(uri), schema, html: Arc::from(app_html(T::MESSAGE, schema)) })
    }

    /// The App's `ui://` URI.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The schema the App renders: a form ask with this schema carries the hint.
    pub fn schema(&self) -> &'static RequestedSchema {
        self.schema
    }

    /// The App's HTML document.
    pub fn html(&self) -> &str {
        &self.html
    }

    /// The one content item `resources/read` of [`AppForm::uri`] answers: `uri`, `mimeType`
    /// ([`MIME_TYPE`]), the HTML as `text`, and `_meta.ui` with an empty `csp` (nothing to load).
    pub fn contents(&self) -> Value {
        json!({
            "uri": &*self.uri,
            "mimeType": MIME_TYPE,
            "text": &*self.html,
            "_meta": {META_UI: {"csp": {}, "prefersBorder": true}},
        })
    }

    /// The `_meta` of a form ask this App renders: `{"ui": {"resourceUri": uri}}`.
    pub fn hint(&self) -> Map<String, Value> {
        let mut meta = Map::new();
        meta.insert(META_UI.to_owned(), json!({ RESOURCE_URI: &*self.uri }));
        meta
    }
}

/// The app forms an engine offers. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub(crate) struct AppForms(Arc<[AppForm]>);

impl AppForms {
    pub(crate) fn with(&self, form: AppForm) -> AppForms {
        AppForms(self.0.iter().cloned().chain([form]).collect())
    }

    pub(crate) fn all(&self) -> &[AppForm] {
        &self.0
    }

    /// The hint for a form ask of `schema`: the App registered for it (the same `'static`
    /// schema, or an equal one), if any.
    pub(crate) fn hint_for(&self, schema: &RequestedSchema) -> Option<Map<String, Value>> {
        self.0
            .iter()
            .find(|form| std::ptr::eq(form.schema, schema))
            .or_else(|| self.0.iter().find(|form| form.schema == schema))
            .map(AppForm::hint)
    }
}

/// The App's script: the Apps bridge over `postMessage` (JSON-RPC 2.0). It initializes declaring
/// `appCapabilities.elicitation`, shows the message and defaults of the host's `elicitation/create`,
/// and answers it with an `ElicitResult` read from the page's controls, typed by the request's own
/// `requestedSchema` (the host validates it; the server parses it as any other answer).
const SCRIPT: &str = r#"(function(){"use strict";
var form=document.querySelector("form"),title=document.getElementById("message"),asked=null,init=1;
function post(m){m.jsonrpc="2.0";window.parent.postMessage(m,"*");}
function controls(n){return Array.prototype.slice.call(form.querySelectorAll("[name]")).filter(function(c){return c.name==="f."+n;});}
function props(p){return(p&&p.requestedSchema&&p.requestedSchema.properties)||{};}
function show(p){title.textContent=String(p.message||"");document.title=title.textContent;var ps=props(p);
Object.keys(ps).forEach(function(n){var d=ps[n]["default"];if(d===undefined)return;controls(n).forEach(function(c){
if(c.type==="checkbox"){c.checked=Array.isArray(d)?d.indexOf(c.value)>=0:d===true;}else{c.value=String(d);}});});}
function content(p){var ps=props(p),out={};Object.keys(ps).forEach(function(n){var s=ps[n],cs=controls(n);if(!cs.length)return;
if(s.type==="array"){out[n]=cs.filter(function(c){return c.checked;}).map(function(c){return c.value;});return;}
if(s.type==="boolean"){out[n]=cs[0].checked;return;}
var v=cs[0].value;if(v==="")return;
if(s.type==="number"||s.type==="integer"){var x=Number(v);out[n]=isNaN(x)?v:x;return;}
if(s.format==="date-time"){if(v.length===16)v+=":00Z";else if(v.length===19)v+="Z";}
out[n]=v;});return out;}
form.addEventListener("submit",function(e){e.preventDefault();if(!asked)return;
var a=e.submitter?e.submitter.value:"accept",r={action:a};
if(a==="accept"){if(!form.reportValidity())return;r.content=content(asked.params);}
post({id:asked.id,result:r});asked=null;});
window.addEventListener("message",function(e){if(e.source!==window.parent)return;var m=e.data;
if(!m||m.jsonrpc!=="2.0")return;
if(m.id===init&&m.method===undefined){init=null;if(m.result)post({method:"ui/notifications/initialized"});return;}
if(m.id===undefined||m.id===null||typeof m.method!=="string")return;
if(m.method==="elicitation/create"&&m.params&&(m.params.mode===undefined||m.params.mode==="form")){asked={id:m.id,params:m.params};show(m.params);return;}
if(m.method==="ui/resource-teardown"||m.method==="ping"){post({id:m.id,result:{}});return;}
post({id:m.id,error:{code:-32601,message:"method not found"}});});
post({id:init,method:"ui/initialize",params:{protocolVersion:"2026-01-26",appInfo:{name:"elicit-form",version:"1"},appCapabilities:{elicitation:{}}}});
})();"#;

/// The App's own policy, on top of the host's: the page's one style and this script by their
/// hashes, nothing loaded, the form never submitted (the script answers over the bridge).
fn app_policy() -> &'static str {
    static POLICY: OnceLock<String> = OnceLock::new();
    POLICY.get_or_init(|| {
        let script = STANDARD.encode(Sha256::digest(SCRIPT.as_bytes()));
        format!(
            "default-src 'none'; {}; script-src 'sha256-{script}'; form-action 'none'; base-uri 'none'",
            crate::form::style_source()
        )
    })
}

/// The App's HTML: the form page of `schema`, its policy as a `<meta>` and the bridge script.
fn app_html(message: &str, schema: &RequestedSchema) -> String {
    let page = render_form(&FormView::new(message, schema, &FormValues::defaults(schema), "#"));
    let policy =
        format!("<meta charset=\"utf-8\"><meta http-equiv=\"Content-Security-Policy\" content=\"{}\">", app_policy());
    let page = page.replacen("<meta charset=\"utf-8\">", &policy, 1);
    let script = format!("<script>{SCRIPT}</script></body></html>");
    match page.strip_suffix("</body></html>") {
        Some(body) => format!("{body}{script}"),
        None => format!("{page}{script}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_are_absolute_ui_with_an_authority() {
        assert!(check_uri("ui://travel/booking").is_ok());
        assert!(check_uri("ui://travel").is_ok());
        for bad in ["ui:///booking", "ui:booking", "/booking", "https://travel.example/x", "UI://", "ui://a b", ""] {
            assert!(check_uri(bad).is_err(), "{bad:?}");
        }
        assert!(check_uri(&format!("ui://x/{}", "a".repeat(600))).is_err());
    }

    #[test]
    fn the_script_is_allowed_by_its_hash_and_nothing_else_runs() {
        let policy = app_policy();
        assert!(policy.contains("script-src 'sha256-"), "{policy}");
        assert!(!policy.contains("unsafe-inline"), "{policy}");
        assert!(!SCRIPT.contains("</"), "the script cannot close its own element");
    }
}
