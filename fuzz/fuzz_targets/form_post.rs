//! A form page's submission: arbitrary bytes as the `application/x-www-form-urlencoded` body of the
//! pages of forms using every field kind.
//!
//! Reading never panics, whatever the body; the content it yields is parsed by the type's own
//! parser (which never panics either); and the page shown again with the submitted values and the
//! parser's errors has exactly the controls of the form, whatever the values hold: nothing the
//! visitor sent becomes markup.

#![no_main]

use elicit_fuzz::forms::{Contact, Everything, Optionals};
use elicit_runtime::Elicit;
use elicit_runtime::form::{FormValues, FormView, parse_post, render_form};
use libfuzzer_sys::fuzz_target;

fn check<T: Elicit>(body: &[u8]) {
    let schema = T::requested_schema();
    let posted = parse_post(schema, body);
    let errors = T::from_content(&posted.content).err();
    let token = posted.token.as_deref();
    let html = render_form(
        &FormView::new("m", schema, &posted.values(schema), "/form/x").errors(errors.as_ref()).token(token),
    );
    let clean = render_form(&FormView::new("m", schema, &FormValues::defaults(schema), "/form/x"));
    for tag in ["<input", "<select", "<option", "<form", "<script", "<button"] {
        let (shown, expected) = (html.matches(tag).count(), clean.matches(tag).count());
        if tag == "<option" {
            // A value may pick a select's option or none, adding or dropping its empty choice.
            assert!(shown.abs_diff(expected) <= schema.properties.len(), "{tag}: {shown} vs {expected}");
        } else {
            // The token's hidden input is the one control the clean page lacks.
            let hidden = usize::from(tag == "<input" && token.is_some());
            assert_eq!(shown, expected + hidden, "{tag}");
        }
    }
}

fuzz_target!(|body: &[u8]| {
    check::<Everything>(body);
    check::<Optionals>(body);
    check::<Contact>(body);
});
