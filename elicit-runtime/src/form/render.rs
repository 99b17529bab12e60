//! Writing the page: a `String` built by hand, every author and user string escaped on the way in.

use std::fmt::Write as _;
use std::sync::OnceLock;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::post::{ACTION_FIELD, FIELD_PREFIX, TOKEN_FIELD};
use crate::content::ContentErrors;
use crate::schema::{EnumOption, PrimitiveSchema, Property, RequestedSchema, StringFormat};

/// The page's only style: readable on a phone, no external resource. Its hash is the one style the
/// `Content-Security-Policy` allows.
const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:36em;margin:1em auto;padding:0 1em;\
line-height:1.4}label,legend{display:block;font-weight:600;margin-top:1em}fieldset{border:0;padding:0;\
margin:1em 0 0}fieldset label{font-weight:400;margin-top:.25em}input[type=text],input[type=email],input[type=url],\
input[type=number],input[type=date],input[type=datetime-local],select{width:100%;box-sizing:border-box;\
font-size:1em;padding:.4em}.hint{color:#444;margin:.2em 0;font-size:.9em}.error{color:#a00;font-weight:600;\
margin:.2em 0}.errors{border:2px solid #a00;padding:.5em 1em}.actions{margin-top:1.5em;display:flex;gap:.5em;\
flex-wrap:wrap}button{font-size:1em;padding:.5em 1em}";

/// The page's `Content-Security-Policy`: nothing loads, no script runs, the one style is allowed
/// by its hash, forms post only to this origin, no other site may frame the page.
pub fn content_security_policy() -> &'static str {
    static POLICY: OnceLock<String> = OnceLock::new();
    POLICY.get_or_init(|| {
        format!("default-src 'none'; {}; form-action 'self'; frame-ancestors 'none'; base-uri 'none'", style_source())
    })
}

/// The policy directive allowing the page's one style, by its hash.
pub(crate) fn style_source() -> String {
    format!("style-src 'sha256-{}'", STANDARD.encode(Sha256::digest(STYLE.as_bytes())))
}

/// What the user typed (or the defaults), as the strings the page's controls hold: one list per
/// property of the schema, in its order (several values for a multi-select, one for the rest).
/// Kept as text so a value the parser refused (`"abc"` for a number) comes back as typed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FormValues {
    pub(super) fields: Vec<Vec<String>>,
}

impl FormValues {
    /// The schema's defaults.
    pub fn defaults(schema: &RequestedSchema) -> Self {
        FormValues::from_content(schema, &Map::new())
    }

    /// The values of `content` (a typed answer's, or a form-mode answer's), the schema's defaults
    /// where a property is absent.
    pub fn from_content(schema: &RequestedSchema, content: &Map<String, Value>) -> Self {
        let fields = schema
            .properties
            .iter()
            .map(|property| {
                let value = content.get(property.name.as_ref()).cloned().or_else(|| property.schema.default_value());
                match value {
                    Some(Value::String(text)) => vec![text],
                    Some(Value::Bool(flag)) => {
                        if flag {
                            vec!["true".to_owned()]
                        } else {
                            Vec::new()
                        }
                    }
                    Some(Value::Number(n)) => vec![n.to_string()],
                    Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
                    _ => Vec::new(),
                }
            })
            .collect();
        FormValues { fields }
    }

    /// The values of the property at `index`.
    fn of(&self, index: usize) -> &[String] {
        self.fields.get(index).map_or(&[], Vec::as_slice)
    }
}

/// Everything one rendering of a form page shows.
#[derive(Debug, Clone, Copy)]
pub struct FormView<'a> {
    /// The ask's message: the page's heading.
    pub message: &'a str,
    /// The form.
    pub schema: &'a RequestedSchema,
    /// What the controls hold.
    pub values: &'a FormValues,
    /// The errors of the last submission, each shown beside its field.
    pub errors: Option<&'a ContentErrors>,
    /// Where the form posts (a path of this origin).
    pub action: &'a str,
    /// The anti-forgery token the form carries, if the page uses one.
    pub token: Option<&'a str>,
}

impl<'a> FormView<'a> {
    /// A view with no errors and no token.
    pub fn new(message: &'a str, schema: &'a RequestedSchema, values: &'a FormValues, action: &'a str) -> Self {
        FormView { message, schema, values, errors: None, action, token: None }
    }

    /// Shows these errors.
    pub fn errors(self, errors: Option<&'a ContentErrors>) -> Self {
        FormView { errors, ..self }
    }

    /// Carries this anti-forgery token.
    pub fn token(self, token: Option<&'a str>) -> Self {
        FormView { token, ..self }
    }
}

/// A page with a heading and one paragraph, for what the form page says instead of the form
/// (recorded, refused, expired). `id` names the paragraph for tests and assistive tools.
#[derive(Debug, Clone, Copy)]
pub struct Notice<'a> {
    /// The heading (and the title).
    pub title: &'a str,
    /// The text.
    pub text: &'a str,
    /// The `id` of the paragraph.
    pub id: &'a str,
}

/// The whole HTML document of a notice page.
pub fn render_notice(notice: &Notice<'_>) -> String {
    let mut out = String::with_capacity(1024);
    head(&mut out, notice.title);
    out.push_str("<h1>");
    escape(&mut out, notice.title);
    out.push_str("</h1><p id=\"");
    escape(&mut out, notice.id);
    out.push_str("\">");
    escape(&mut out, notice.text);
    out.push_str("</p></main></body></html>");
    out
}

/// A whole HTML document with the pages' head and style around `body`, markup the caller has
/// escaped already: for the kit's other pages (the approval page), which share the look.
#[cfg(feature = "pages")]
pub(crate) fn render_document(title: &str, body: &str) -> String {
    let mut out = String::with_capacity(1024 + body.len());
    head(&mut out, title);
    out.push_str(body);
    out.push_str("</main></body></html>");
    out
}

/// The whole HTML document of a form page.
pub fn render_form(view: &FormView<'_>) -> String {
    let mut out = String::with_capacity(4096 + 512 * view.schema.properties.len());
    head(&mut out, view.message);
    out.push_str("<h1 id=\"message\">");
    escape(&mut out, view.message);
    out.push_str("</h1>");
    if let Some(errors) = view.errors.filter(|e| !e.is_empty()) {
        out.push_str("<div class=\"errors\" role=\"alert\" id=\"errors\"><p>Please correct:</p><ul>");
        for error in errors {
            out.push_str("<li>");
            let label = view.schema.property(&error.field).map_or(error.field.as_ref(), label_of);
            escape(&mut out, label);
            out.push(' ');
            escape(&mut out, &error.reason);
            out.push_str("</li>");
        }
        out.push_str("</ul></div>");
    }
    out.push_str("<form method=\"post\" action=\"");
    escape(&mut out, view.action);
    out.push_str("\">");
    if let Some(token) = view.token {
        out.push_str("<input type=\"hidden\" name=\"");
        out.push_str(TOKEN_FIELD);
        out.push_str("\" value=\"");
        escape(&mut out, token);
        out.push_str("\">");
    }
    for (index, property) in view.schema.properties.iter().enumerate() {
        let error = view.errors.and_then(|errors| errors.get(&property.name)).map(|e| e.reason.as_str());
        field(&mut out, index, property, view.values.of(index), error);
    }
    // Decline and cancel skip the browser's checks: refusing needs no valid answer.
    let _ = write!(
        out,
        "<div class=\"actions\"><button type=\"submit\" id=\"accept\" name=\"{ACTION_FIELD}\" value=\"accept\">Submit</button>\
         <button type=\"submit\" id=\"decline\" name=\"{ACTION_FIELD}\" value=\"decline\" formnovalidate>Decline</button>\
         <button type=\"submit\" id=\"cancel\" name=\"{ACTION_FIELD}\" value=\"cancel\" formnovalidate>Cancel</button></div>"
    );
    out.push_str("</form></main></body></html>");
    out
}

/// The document up to the start of `<main>`.
fn head(out: &mut String, title: &str) {
    out.push_str(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta name=\"referrer\" content=\"no-referrer\"><title>",
    );
    escape(out, title);
    out.push_str("</title><style>");
    out.push_str(STYLE);
    out.push_str("</style></head><body><main>");
}

/// The label of a property: its title, or its name.
fn label_of(property: &Property) -> &str {
    property.schema.title().unwrap_or(&property.name)
}

/// One property: its label, control, description and error.
fn field(out: &mut String, index: usize, property: &Property, values: &[String], error: Option<&str>) {
    let schema = &property.schema;
    let description = schema.description();
    // What the control is described by: its help text and its error.
    let mut described = String::new();
    if description.is_some() {
        let _ = write!(described, "field-{index}-hint");
    }
    if error.is_some() {
        let _ = write!(described, "{}field-{index}-error", if described.is_empty() { "" } else { " " });
    }
    let hint_and_error = |out: &mut String| {
        if let Some(description) = description {
            let _ = write!(out, "<p class=\"hint\" id=\"field-{index}-hint\">");
            escape(out, description);
            out.push_str("</p>");
        }
        if let Some(error) = error {
            let _ = write!(out, "<p class=\"error\" id=\"field-{index}-error\">");
            escape(out, error);
            out.push_str("</p>");
        }
    };
    let first = values.first().map_or("", String::as_str);
    match schema {
        PrimitiveSchema::MultiSelect(s) => {
            let _ = write!(out, "<fieldset id=\"field-{index}\"");
            describe(out, &described, error.is_some());
            out.push_str("><legend>");
            label_text(out, property);
            out.push_str("</legend>");
            hint_and_error(out);
            for (i, option) in s.options.iter().enumerate() {
                let _ = write!(out, "<label><input type=\"checkbox\" id=\"field-{index}-{i}\" name=\"");
                control_name(out, property);
                out.push_str("\" value=\"");
                escape(out, &option.value);
                out.push('"');
                if values.iter().any(|v| *v == option.value) {
                    out.push_str(" checked");
                }
                out.push_str("> ");
                option_label(out, option);
                out.push_str("</label>");
            }
            out.push_str("</fieldset>");
        }
        PrimitiveSchema::Boolean(_) => {
            let _ =
                write!(out, "<div><label for=\"field-{index}\"><input type=\"checkbox\" id=\"field-{index}\" name=\"");
            control_name(out, property);
            out.push_str("\" value=\"true\"");
            if first == "true" {
                out.push_str(" checked");
            }
            describe(out, &described, error.is_some());
            out.push_str("> ");
            label_text(out, property);
            out.push_str("</label>");
            hint_and_error(out);
            out.push_str("</div>");
        }
        PrimitiveSchema::SingleSelect(s) => {
            let _ = write!(out, "<div><label for=\"field-{index}\">");
            label_text(out, property);
            out.push_str("</label>");
            hint_and_error(out);
            let _ = write!(out, "<select id=\"field-{index}\" name=\"");
            control_name(out, property);
            out.push('"');
            if property.required {
                out.push_str(" required");
            }
            describe(out, &described, error.is_some());
            out.push('>');
            // An empty choice when nothing is chosen yet: no answer is made up for the user.
            if first.is_empty() || !s.options.iter().any(|o| o.value == first) {
                out.push_str("<option value=\"\">Choose…</option>");
            }
            for option in &s.options {
                out.push_str("<option value=\"");
                escape(out, &option.value);
                out.push('"');
                if option.value == first {
                    out.push_str(" selected");
                }
                out.push('>');
                option_label(out, option);
                out.push_str("</option>");
            }
            out.push_str("</select></div>");
        }
        PrimitiveSchema::String(_) | PrimitiveSchema::Number(_) => {
            let _ = write!(out, "<div><label for=\"field-{index}\">");
            label_text(out, property);
            out.push_str("</label>");
            hint_and_error(out);
            let _ = write!(out, "<input id=\"field-{index}\" name=\"");
            control_name(out, property);
            out.push('"');
            constraints(out, schema);
            if property.required {
                out.push_str(" required");
            }
            describe(out, &described, error.is_some());
            out.push_str(" value=\"");
            escape(out, &shown_value(schema, first));
            out.push_str("\"></div>");
        }
    }
}

/// The label's text: the title, and whether the field is required.
fn label_text(out: &mut String, property: &Property) {
    escape(out, label_of(property));
    if let PrimitiveSchema::String(s) = &property.schema
        && s.format == Some(StringFormat::DateTime)
    {
        out.push_str(" (UTC)");
    }
    // A box left unticked and an empty group are answers: only a group that needs a choice is required.
    let needed = match &property.schema {
        PrimitiveSchema::Boolean(_) => false,
        PrimitiveSchema::MultiSelect(s) => s.min_items.is_some_and(|n| n > 0),
        _ => property.required,
    };
    if needed {
        out.push_str(" <span class=\"hint\">(required)</span>");
    }
}

fn option_label(out: &mut String, option: &EnumOption) {
    escape(out, option.title.as_deref().unwrap_or(&option.value));
}

/// `name="f.<property>"`'s value.
fn control_name(out: &mut String, property: &Property) {
    out.push_str(FIELD_PREFIX);
    escape(out, &property.name);
}

/// `aria-describedby` and `aria-invalid`.
fn describe(out: &mut String, described: &str, invalid: bool) {
    if !described.is_empty() {
        let _ = write!(out, " aria-describedby=\"{described}\"");
    }
    if invalid {
        out.push_str(" aria-invalid=\"true\"");
    }
}

/// The input's type and the schema's bounds as HTML attributes.
fn constraints(out: &mut String, schema: &PrimitiveSchema) {
    match schema {
        PrimitiveSchema::String(s) => {
            let kind = match s.format {
                None => "text",
                Some(StringFormat::Email) => "email",
                Some(StringFormat::Uri) => "url",
                Some(StringFormat::Date) => "date",
                Some(StringFormat::DateTime) => "datetime-local",
            };
            let _ = write!(out, " type=\"{kind}\"");
            if let Some(min) = s.min_length {
                let _ = write!(out, " minlength=\"{min}\"");
            }
            if let Some(max) = s.max_length {
                let _ = write!(out, " maxlength=\"{max}\"");
            }
            if s.format == Some(StringFormat::DateTime) {
                out.push_str(" step=\"1\"");
            }
        }
        PrimitiveSchema::Number(s) => {
            let _ = write!(out, " type=\"number\" step=\"{}\"", if s.integer { "1" } else { "any" });
            if let Some(min) = &s.minimum {
                let _ = write!(out, " min=\"{min}\"");
            }
            if let Some(max) = &s.maximum {
                let _ = write!(out, " max=\"{max}\"");
            }
        }
        _ => {}
    }
}

/// A value as its control shows it: a `date-time` as `datetime-local` takes it (in UTC, no offset).
fn shown_value(schema: &PrimitiveSchema, value: &str) -> String {
    match schema {
        PrimitiveSchema::String(s) if s.format == Some(StringFormat::DateTime) => super::post::local_of(value),
        _ => value.to_owned(),
    }
}

/// `text` with `&`, `<`, `>`, `"` and `'` escaped: safe in element content and in quoted
/// attribute values. The one HTML escaper of the crate (the form pages use it), for the pages of
/// your own too: also [`server::pages::kit::escape_html`](crate::server::pages::kit::escape_html).
///
/// ```
/// assert_eq!(elicit_runtime::form::escape_html("<a href=\"x\">Tom & 'Jerry'</a>"),
///            "&lt;a href=&quot;x&quot;&gt;Tom &amp; &#39;Jerry&#39;&lt;/a&gt;");
/// ```
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    escape(&mut out, text);
    out
}

/// Writes `text` escaped as [`escape_html`] does, onto `out`.
pub(super) fn escape(out: &mut String, text: &str) {
    let mut rest = text;
    while let Some(at) = rest.find(['&', '<', '>', '"', '\'']) {
        out.push_str(&rest[..at]);
        out.push_str(match rest.as_bytes()[at] {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'"' => "&quot;",
            _ => "&#39;",
        });
        rest = &rest[at + 1..];
    }
    out.push_str(rest);
}
