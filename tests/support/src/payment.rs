//! The payment page of `travel-server`, used as a browser does: `GET` the page, keep its nonce
//! cookie and read its forms' hidden token, then `POST` the token with the cookie to
//! `{page}/approve` or `{page}/deny`. The page kit's approval page (`own-server`'s) is used the
//! same way, as its one form asks: the token and the pressed button (`_action`) posted to the
//! page itself.

/// The cookie the payment page keeps its per-visit nonce in.
pub const NONCE_COOKIE: &str = "pay_nonce";
/// The name of the forms' hidden token field.
pub const TOKEN_FIELD: &str = "csrf";
/// The cookie the page kit's approval page keeps its per-visit nonce in.
pub const APPROVAL_NONCE_COOKIE: &str = "elicit_approval_nonce";
/// The hidden token field of the page kit's approval page.
pub const APPROVAL_TOKEN_FIELD: &str = "_token";

/// One visit of a payment page, as a browser keeps it.
#[derive(Debug, Clone)]
pub struct PageVisit {
    /// The page's URL.
    pub url: String,
    /// The HTTP status of the `GET`.
    pub status: u16,
    /// The page.
    pub body: String,
    /// Every `Set-Cookie` header, whole.
    pub set_cookies: Vec<String>,
    /// `name=value` of the nonce cookie, as a browser sends it back.
    pub cookie: Option<String>,
    /// The value of the forms' hidden token field.
    pub token: Option<String>,
    /// Whether it is the page kit's approval page (one form, the button's value posted as `_action`).
    pub approval: bool,
}

impl PageVisit {
    /// Clicks the button of form `action` (`approve` or `deny`): posts the visit's token with its
    /// cookie; returns the HTTP status and the page it answered.
    pub async fn submit(&self, http: &reqwest::Client, action: &str) -> Result<(u16, String), String> {
        let Some(token) = &self.token else {
            return Err(format!("no form on {} (HTTP {}): {}", self.url, self.status, self.body));
        };
        if self.approval {
            let page = self.url.split('?').next().unwrap_or(&self.url);
            let body = format!("{APPROVAL_TOKEN_FIELD}={token}&_action={action}");
            return post_form(http, page, self.cookie.as_deref(), &body).await;
        }
        post_form(http, &format!("{}/{action}", self.url), self.cookie.as_deref(), &format!("{TOKEN_FIELD}={token}"))
            .await
    }
}

/// The value of the first hidden token field of a page, unless it is empty (base64url, so it needs
/// no unescaping).
pub fn hidden_token(html: &str) -> Option<String> {
    hidden_field(html, TOKEN_FIELD)
}

/// The value of the first hidden field `name` of a page, unless it is empty (base64url).
fn hidden_field(html: &str, name: &str) -> Option<String> {
    let marker = format!("name=\"{name}\" value=\"");
    let start = html.find(&marker)? + marker.len();
    html[start..].split('"').next().filter(|token| !token.is_empty()).map(str::to_owned)
}

/// `GET`s a page as a browser would, keeping its cookie and form token.
pub async fn visit_page(http: &reqwest::Client, url: &str) -> Result<PageVisit, String> {
    let response = http.get(url).send().await.map_err(|e| format!("GET {url}: {e}"))?;
    let status = response.status().as_u16();
    let set_cookies: Vec<String> = response
        .headers()
        .get_all(reqwest::header::SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(str::to_owned)
        .collect();
    let cookie = set_cookies
        .iter()
        .filter_map(|c| c.split(';').next())
        .find(|pair| {
            pair.starts_with(&format!("{NONCE_COOKIE}=")) || pair.starts_with(&format!("{APPROVAL_NONCE_COOKIE}="))
        })
        .map(str::to_owned);
    let body = response.text().await.map_err(|e| format!("GET {url}: reading the page: {e}"))?;
    let approval = hidden_token(&body).is_none() && hidden_field(&body, APPROVAL_TOKEN_FIELD).is_some();
    let token = if approval { hidden_field(&body, APPROVAL_TOKEN_FIELD) } else { hidden_token(&body) };
    Ok(PageVisit { url: url.to_owned(), status, body, set_cookies, cookie, token, approval })
}

/// Opens the page and clicks the button of form `action`, as a user in a browser does; returns
/// the HTTP status of the submission.
pub async fn submit(http: &reqwest::Client, url: &str, action: &str) -> Result<u16, String> {
    Ok(visit_page(http, url).await?.submit(http, action).await?.0)
}

/// `POST`s a form body with an optional `Cookie` header; returns the HTTP status and the page.
pub async fn post_form(
    http: &reqwest::Client,
    url: &str,
    cookie: Option<&str>,
    body: &str,
) -> Result<(u16, String), String> {
    let mut request = http.post(url).header(reqwest::header::CONTENT_TYPE, "application/x-www-form-urlencoded");
    if let Some(cookie) = cookie {
        request = request.header(reqwest::header::COOKIE, cookie);
    }
    let response = request.body(body.to_owned()).send().await.map_err(|e| format!("POST {url}: {e}"))?;
    let status = response.status().as_u16();
    Ok((status, response.text().await.unwrap_or_default()))
}

/// `GET`s a page; returns the HTTP status and the body.
pub async fn get(http: &reqwest::Client, url: &str) -> Result<(u16, String), String> {
    let response = http.get(url).send().await.map_err(|e| format!("GET {url}: {e}"))?;
    let status = response.status().as_u16();
    Ok((status, response.text().await.unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    use super::hidden_token;

    #[test]
    fn the_hidden_token_is_read_from_the_page() {
        let page = r#"<form><input type="hidden" name="csrf" value="a-b_C"><button id="approve"></button></form>"#;
        assert_eq!(hidden_token(page).as_deref(), Some("a-b_C"));
        assert_eq!(hidden_token("<p>Already answered</p>"), None);
        assert_eq!(hidden_token(r#"name="csrf" value="""#), None);
    }
}
