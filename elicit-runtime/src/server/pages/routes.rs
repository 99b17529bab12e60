//! The form pages' routes: `GET /form/{step}` shows the form, `POST` the same path reads it.

use axum::body::Bytes;
use axum::extract::{Extension, Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use axum::routing::get;
use serde_json::json;

use super::kit::{
    Decision, PageRequest, RefusalKind, Visit, cookie, forwarded_https, notice, plausible_step, query_value,
    record_decision,
};
use super::{DESCRIPTOR_PARAM, Described, FormPages, MAX_POST_BODY, PAGE_PATH};
use crate::form::{FormValues, FormView, PageAction, parse_post, render_form};
use crate::server::store::UrlStatus;

/// The cookie holding the nonce of the browser's latest showing of a form page.
pub(super) const NONCE_COOKIE: &str = "elicit_form_nonce";

pub(super) fn router(pages: FormPages) -> axum::Router {
    axum::Router::new()
        .route(&format!("{PAGE_PATH}{{step}}"), get(show).post(submit))
        // The body limit is this route's own; the page refuses a larger body with its own page.
        .layer(axum::extract::DefaultBodyLimit::max(MAX_POST_BODY + 1))
        .with_state(pages)
}

/// The principal the server's authentication layer put on the request (the rmcp adapter's).
#[cfg(feature = "rmcp")]
pub(super) type Authenticated = Option<Extension<crate::rmcp::Principal>>;
#[cfg(not(feature = "rmcp"))]
pub(super) type Authenticated = Option<Extension<()>>;

#[cfg(feature = "rmcp")]
pub(super) fn authenticated(who: &Authenticated) -> Option<&str> {
    who.as_ref().map(|Extension(crate::rmcp::Principal(who))| who.as_str())
}
#[cfg(not(feature = "rmcp"))]
pub(super) fn authenticated(_who: &Authenticated) -> Option<&str> {
    None
}

/// A page with the security headers every page of the kit sends.
pub(super) fn html(status: StatusCode, body: String) -> Response {
    super::kit::page_response(status, body)
}

fn not_found() -> Response {
    notice(StatusCode::NOT_FOUND, "Unknown form", "unknown", "This form link is not valid.")
}

fn unavailable(error: impl std::fmt::Display) -> Response {
    tracing::error!(target: "elicit_runtime", %error, "a form page could not serve a request");
    notice(
        StatusCode::SERVICE_UNAVAILABLE,
        "Try again later",
        "unavailable",
        "This form is unavailable right now. Nothing was recorded; please try again in a moment.",
    )
}

fn https(headers: &HeaderMap, pages: &FormPages) -> bool {
    pages.inner.public_url.get(..8).is_some_and(|s| s.eq_ignore_ascii_case("https://")) || forwarded_https(headers)
}

/// What every request of a page needs: the step's form and message, the visitor, and the step still open.
enum Opened {
    Page { form: Described, by: Option<String>, descriptor: String },
    Respond(Response),
}

async fn open(pages: &FormPages, step: &str, query: Option<&str>, who: &Authenticated, headers: &HeaderMap) -> Opened {
    if !plausible_step(step) {
        return Opened::Respond(not_found());
    }
    let Some(descriptor) = query.and_then(|q| query_value(q, DESCRIPTOR_PARAM)) else {
        return Opened::Respond(not_found());
    };
    let Some(form) = pages.descriptor(step, &descriptor) else {
        return Opened::Respond(notice(
            StatusCode::GONE,
            "Form expired",
            "expired",
            "This form link has expired or is not valid. Nothing was recorded.",
        ));
    };
    let request = PageRequest { headers, query, authenticated: authenticated(who), https: https(headers, pages) };
    let by = match pages.visitors().visit(step, request).await {
        Visit::Visitor(by) => by,
        Visit::Redirect { set_cookie } => {
            let mut response = notice(StatusCode::SEE_OTHER, "Signed in", "signed-in", "Continue to the form.");
            let location = format!("{PAGE_PATH}{step}?{DESCRIPTOR_PARAM}={descriptor}");
            for (name, value) in [(header::LOCATION, Some(location)), (header::SET_COOKIE, set_cookie)] {
                if let Some(Ok(value)) = value.map(|v| HeaderValue::from_str(&v)) {
                    response.headers_mut().insert(name, value);
                }
            }
            return Opened::Respond(response);
        }
        Visit::SignIn { location, set_cookie } => {
            let mut response = notice(StatusCode::SEE_OTHER, "Sign in", "sign-in", "Sign in to continue to the form.");
            for (name, value) in [(header::LOCATION, Some(location)), (header::SET_COOKIE, set_cookie)] {
                if let Some(Ok(value)) = value.map(|v| HeaderValue::from_str(&v)) {
                    response.headers_mut().insert(name, value);
                }
            }
            return Opened::Respond(response);
        }
        Visit::Refused(refusal) if refusal.kind == RefusalKind::Unavailable => {
            return Opened::Respond(unavailable(refusal.text));
        }
        Visit::Refused(refusal) => {
            return Opened::Respond(notice(StatusCode::FORBIDDEN, "Not signed in", "refused", &refusal.text));
        }
    };
    match pages.store().status(step).await {
        Ok(UrlStatus::Pending) => Opened::Page { form, by, descriptor },
        Ok(UrlStatus::Completed(_)) => Opened::Respond(notice(
            StatusCode::CONFLICT,
            "Already answered",
            "answered",
            "This form was already answered. You can return to your MCP client.",
        )),
        Ok(UrlStatus::Unknown) => Opened::Respond(notice(
            StatusCode::GONE,
            "Form expired",
            "expired",
            "This form has expired. Nothing was recorded; ask your MCP client again.",
        )),
        Err(error) => Opened::Respond(unavailable(error)),
    }
}

/// The form, with a fresh anti-forgery pair: its nonce in a cookie scoped to the page.
fn form_page(pages: &FormPages, step: &str, status: StatusCode, view: FormView<'_>, headers: &HeaderMap) -> Response {
    let Some((nonce, token)) = pages.anti_forgery().issue(step) else { return unavailable("no anti-forgery token") };
    let mut response = html(status, render_form(&view.token(Some(&token))));
    let secure = if https(headers, pages) { "; Secure" } else { "" };
    let cookie = format!("{NONCE_COOKIE}={nonce}; HttpOnly; SameSite=Strict; Path={PAGE_PATH}{step}{secure}");
    if let Ok(cookie) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
}

async fn show(
    State(pages): State<FormPages>,
    Path(step): Path<String>,
    RawQuery(query): RawQuery,
    who: Authenticated,
    headers: HeaderMap,
) -> Response {
    let (form, descriptor) = match open(&pages, &step, query.as_deref(), &who, &headers).await {
        Opened::Page { form, descriptor, .. } => (form, descriptor),
        Opened::Respond(response) => return response,
    };
    crate::server::observe::page_opened("form");
    let schema = form.schema();
    let values = FormValues::defaults(&schema);
    let action = action_of(&step, &descriptor);
    form_page(&pages, &step, StatusCode::OK, FormView::new(&form.message, &schema, &values, &action), &headers)
}

/// Where the form posts: its own page, with its descriptor (and without a sign-in ticket).
fn action_of(step: &str, descriptor: &str) -> String {
    let mut action = format!("{PAGE_PATH}{step}?{DESCRIPTOR_PARAM}=");
    action.extend(form_urlencoded::byte_serialize(descriptor.as_bytes()));
    action
}

async fn submit(
    State(pages): State<FormPages>,
    Path(step): Path<String>,
    RawQuery(query): RawQuery,
    who: Authenticated,
    headers: HeaderMap,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Response {
    let body = match body {
        Ok(body) if body.len() <= MAX_POST_BODY => body,
        _ => {
            return notice(
                StatusCode::PAYLOAD_TOO_LARGE,
                "Too much data",
                "too-large",
                "This submission is larger than the form allows. Nothing was recorded.",
            );
        }
    };
    // A submission from the page's own form carries no sign-in ticket: the query is the descriptor.
    let (form, by, descriptor) = match open(&pages, &step, query.as_deref(), &who, &headers).await {
        Opened::Page { form, by, descriptor } => (form, by, descriptor),
        Opened::Respond(response) => return response,
    };
    let schema = form.schema();
    let posted = parse_post(&schema, &body);
    let nonce = cookie(&headers, NONCE_COOKIE).unwrap_or_default();
    if !posted.token.as_deref().is_some_and(|token| pages.anti_forgery().verify(&step, nonce, token)) {
        return notice(
            StatusCode::FORBIDDEN,
            "Request refused",
            "forged",
            "This submission did not come from the form you opened (its security check failed), so nothing was \
             recorded. Open the link from your MCP client again.",
        );
    }
    let outcome = match posted.action {
        Some(PageAction::Accept) => match form.parse(&posted.content) {
            Ok(content) => json!({"action": "accept", "content": content}),
            Err(errors) => {
                let action = action_of(&step, &descriptor);
                let values = posted.values(&schema);
                let view = FormView::new(&form.message, &schema, &values, &action).errors(Some(&errors));
                return form_page(&pages, &step, StatusCode::UNPROCESSABLE_ENTITY, view, &headers);
            }
        },
        Some(action) => json!({"action": action.as_str()}),
        None => {
            return notice(StatusCode::BAD_REQUEST, "Request refused", "no-action", "This submission names no button.");
        }
    };
    match record_decision(pages.store(), &step, outcome, by.as_deref()).await {
        Ok(Decision::Recorded) => {
            notice(StatusCode::OK, "Thank you", "done", "Recorded. You can return to your MCP client.")
        }
        Ok(Decision::Refused) => notice(
            StatusCode::CONFLICT,
            "Not recorded",
            "not-recorded",
            "This form has expired, was already answered, or belongs to another user. Nothing was recorded.",
        ),
        Err(error) => unavailable(error),
    }
}
