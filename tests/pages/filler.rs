//! A plain HTTP client that fills a form page the way a browser without script does: it reads the
//! page's own controls (inputs, checkboxes, selects and their current values) from the HTML, lets
//! the test change them, and posts them with the button the test presses and the cookie the page
//! set. It knows nothing of the schema: what it submits is what the page offers.

use std::collections::HashMap;

/// One control of the page, as the browser would submit it.
#[derive(Debug, Clone)]
struct Control {
    name: String,
    value: String,
    kind: Kind,
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    /// Text, number, date, e-mail, hidden: submitted as it holds.
    Text,
    /// Submitted only when ticked.
    Checkbox { checked: bool },
    /// The chosen option (`value`); the options the page offers.
    Select { options: Vec<String> },
}

/// A form page as loaded, with the controls the test filled in.
#[derive(Debug, Clone)]
pub(crate) struct PageForm {
    pub(crate) status: u16,
    pub(crate) body: String,
    /// The absolute URL the form posts to.
    action: String,
    /// The `name=value` of the cookie the page set.
    cookie: Option<String>,
    controls: Vec<Control>,
    /// Headers every request of this page sends (an `Authorization`).
    headers: Vec<(String, String)>,
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap()
}

/// The origin (`http://host:port`) of `url`.
fn origin(url: &str) -> String {
    let parsed = url::Url::parse(url).unwrap();
    parsed.origin().ascii_serialization()
}

impl PageForm {
    /// Loads the page at `url` (with `cookie`, e.g. a session) and reads its form.
    pub(crate) async fn open(url: &str, cookie: Option<&str>) -> PageForm {
        PageForm::open_with(url, cookie, &[]).await
    }

    /// [`PageForm::open`], every request of the page sending `headers` too.
    pub(crate) async fn open_with(url: &str, cookie: Option<&str>, headers: &[(&str, &str)]) -> PageForm {
        let headers: Vec<(String, String)> = headers.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        let mut request = client().get(url);
        for (name, value) in &headers {
            request = request.header(name, value);
        }
        if let Some(cookie) = cookie {
            request = request.header("cookie", cookie);
        }
        let response = request.send().await.unwrap();
        PageForm::read(&origin(url), response, None, headers).await
    }

    async fn read(
        origin: &str,
        response: reqwest::Response,
        cookie: Option<String>,
        headers: Vec<(String, String)>,
    ) -> PageForm {
        let status = response.status().as_u16();
        let set = response
            .headers()
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .filter_map(|v| v.split(';').next())
            .map(str::to_owned)
            .find(|c| c.starts_with("elicit_form_nonce=") || c.starts_with("elicit_approval_nonce="));
        let body = response.text().await.unwrap();
        let action = tag_attributes(&body, "form")
            .first()
            .and_then(|a| a.get("action").cloned())
            .map(|a| format!("{origin}{a}"))
            .unwrap_or_default();
        PageForm { status, action, cookie: set.or(cookie), controls: controls(&body), body, headers }
    }

    /// Whether the page shows a form.
    pub(crate) fn has_form(&self) -> bool {
        !self.action.is_empty()
    }

    /// Types `value` into the text control `name` (or chooses it in the select `name`).
    pub(crate) fn set(&mut self, name: &str, value: &str) -> &mut Self {
        let control = self.controls.iter_mut().find(|c| c.name == name).unwrap_or_else(|| panic!("no control {name}"));
        if let Kind::Select { options } = &control.kind {
            assert!(options.iter().any(|o| o == value), "{name} offers no {value}: {options:?}");
        }
        assert!(!matches!(control.kind, Kind::Checkbox { .. }), "{name} is a checkbox");
        control.value = value.to_owned();
        self
    }

    /// Ticks (or unticks) the checkbox `name` of value `value`.
    pub(crate) fn tick(&mut self, name: &str, value: &str, on: bool) -> &mut Self {
        let control = self
            .controls
            .iter_mut()
            .find(|c| c.name == name && c.value == value && matches!(c.kind, Kind::Checkbox { .. }))
            .unwrap_or_else(|| panic!("no checkbox {name}={value}"));
        control.kind = Kind::Checkbox { checked: on };
        self
    }

    /// The current value of the text control or select `name`.
    pub(crate) fn value(&self, name: &str) -> Option<&str> {
        self.controls.iter().find(|c| c.name == name).map(|c| c.value.as_str())
    }

    /// The values of the ticked checkboxes `name`.
    pub(crate) fn ticked(&self, name: &str) -> Vec<&str> {
        self.controls
            .iter()
            .filter(|c| c.name == name && c.kind == Kind::Checkbox { checked: true })
            .map(|c| c.value.as_str())
            .collect()
    }

    /// The body the browser sends for the button `action`.
    pub(crate) fn encoded(&self, action: &str) -> String {
        let mut body = url::form_urlencoded::Serializer::new(String::new());
        for control in &self.controls {
            if control.kind != (Kind::Checkbox { checked: false }) {
                body.append_pair(&control.name, &control.value);
            }
        }
        body.append_pair("_action", action);
        body.finish()
    }

    /// Presses the button `action` (`accept`, `decline`, `cancel`): the page that answers.
    pub(crate) async fn press(&self, action: &str) -> PageForm {
        self.post(&self.encoded(action), self.cookie.as_deref()).await
    }

    /// Posts `body` to the form's action with `cookie`.
    pub(crate) async fn post(&self, body: &str, cookie: Option<&str>) -> PageForm {
        let mut request = client()
            .post(&self.action)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body.to_owned());
        for (name, value) in &self.headers {
            request = request.header(name, value);
        }
        if let Some(cookie) = cookie {
            request = request.header("cookie", cookie);
        }
        let response = request.send().await.unwrap();
        PageForm::read(&origin(&self.action), response, self.cookie.clone(), self.headers.clone()).await
    }

    /// The cookie the page set.
    pub(crate) fn cookie(&self) -> Option<&str> {
        self.cookie.as_deref()
    }
}

/// The controls of a page, in document order.
fn controls(html: &str) -> Vec<Control> {
    let mut found = Vec::new();
    let mut rest = html;
    while let Some(at) = rest.find('<') {
        rest = &rest[at..];
        if let Some(tag) = rest.strip_prefix("<input ") {
            let attrs = attributes(tag);
            let (Some(name), kind) = (attrs.get("name"), attrs.get("type").map(String::as_str)) else {
                rest = &rest[1..];
                continue;
            };
            let value = attrs.get("value").cloned().unwrap_or_default();
            let kind = match kind {
                Some("checkbox") => Kind::Checkbox { checked: attrs.contains_key("checked") },
                _ => Kind::Text,
            };
            found.push(Control { name: name.clone(), value, kind });
        } else if let Some(tag) = rest.strip_prefix("<select ") {
            let attrs = attributes(tag);
            let end = rest.find("</select>").unwrap_or(rest.len());
            let options: Vec<_> = tag_attributes(&rest[..end], "option");
            let chosen = options
                .iter()
                .find(|o| o.contains_key("selected"))
                .or(options.first())
                .and_then(|o| o.get("value").cloned())
                .unwrap_or_default();
            let values = options.iter().filter_map(|o| o.get("value").cloned()).collect();
            found.push(Control {
                name: attrs.get("name").cloned().unwrap_or_default(),
                value: chosen,
                kind: Kind::Select { options: values },
            });
        }
        rest = &rest[1..];
    }
    found
}

/// The attributes of every `<name ...>` tag of `html`.
fn tag_attributes(html: &str, name: &str) -> Vec<HashMap<String, String>> {
    html.split(&format!("<{name} ")).skip(1).map(attributes).collect()
}

/// The attributes of a tag, from just after its name to its `>`; values unescaped.
fn attributes(tag: &str) -> HashMap<String, String> {
    let mut attrs = HashMap::new();
    let mut rest = tag;
    loop {
        rest = rest.trim_start();
        if rest.is_empty() || rest.starts_with('>') {
            return attrs;
        }
        let end = rest.find(['=', ' ', '>']).unwrap_or(rest.len());
        let key = rest[..end].to_owned();
        rest = &rest[end..];
        if let Some(after) = rest.strip_prefix("=\"") {
            let close = after.find('"').unwrap();
            attrs.insert(key, unescape(&after[..close]));
            rest = &after[close + 1..];
        } else {
            attrs.insert(key, String::new());
        }
    }
}

fn unescape(text: &str) -> String {
    text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&#39;", "'").replace("&amp;", "&")
}
