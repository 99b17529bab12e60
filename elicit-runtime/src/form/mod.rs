//! Forms the server renders: one accessible HTML page for any [`RequestedSchema`](crate::schema::RequestedSchema), and the
//! reading of its `application/x-www-form-urlencoded` submission back into an answer's `content`.
//!
//! A URL-mode page built from the same schema a form-mode client would render: what a server asks
//! for through its own page (card data, credentials, anything the spec keeps out of form mode), or
//! what it asks a host that opens links but draws no forms. The page needs no JavaScript, labels
//! every control, ties descriptions and errors to their control with `aria-describedby`, states the
//! schema's constraints as HTML attributes (the browser checks them first; the type's own parser
//! has the last word), and escapes every string it writes.
//!
//! ```
//! use elicit_runtime::form::{FormValues, FormView, PageAction, parse_post, render_form};
//! use elicit_runtime::schema::{PrimitiveSchema, Property, RequestedSchema, StringSchema};
//!
//! let schema = RequestedSchema::new(vec![Property::required(
//!     "name",
//!     PrimitiveSchema::String(StringSchema { title: Some("Name".into()), ..StringSchema::default() }),
//! )]);
//! let values = FormValues::defaults(&schema);
//! let html = render_form(&FormView::new("Who are you?", &schema, &values, "/form/step"));
//! assert!(html.contains(r#"<label for="field-0">Name"#));
//!
//! // The browser posts the page's controls back.
//! let posted = parse_post(&schema, b"f.name=Ada+%3Cb%3E&_action=accept");
//! assert_eq!(posted.action, Some(PageAction::Accept));
//! assert_eq!(posted.content["name"], "Ada <b>");
//! ```

mod post;
mod render;

pub use post::{ACTION_FIELD, FIELD_PREFIX, PageAction, Posted, TOKEN_FIELD, parse_post};
#[cfg(feature = "pages")]
pub(crate) use render::render_document;
#[cfg(feature = "apps")]
pub(crate) use render::style_source;
pub use render::{FormValues, FormView, Notice, content_security_policy, escape_html, render_form, render_notice};

#[cfg(test)]
mod tests;
