//! The form page of the representative 12-field `Booking`: rendering it (its values pre-filled, as
//! when a refused answer is shown again) and reading its POST into the typed answer, against
//! reading the same answer as JSON content (what form mode receives).

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use elicit_benches::{Booking, booking_content};
use elicit_runtime::Elicit;
use elicit_runtime::form::{FormValues, FormView, parse_post, render_form};
use serde_json::{Map, Value};

/// The body a browser posts for `content` on the page of `Booking`: one `f.<name>` pair per value,
/// one per choice of a multi-select, nothing for an unticked box.
fn post_body(content: &Map<String, Value>) -> Vec<u8> {
    let mut body = form_urlencoded::Serializer::new(String::new());
    body.append_pair("_token", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
    for property in &Booking::requested_schema().properties {
        let name = format!("f.{}", property.name);
        match content.get(property.name.as_ref()) {
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).for_each(|v| {
                body.append_pair(&name, v);
            }),
            Some(Value::String(text)) => {
                body.append_pair(&name, text);
            }
            Some(Value::Bool(true)) => {
                body.append_pair(&name, "true");
            }
            Some(Value::Number(n)) => {
                body.append_pair(&name, &n.to_string());
            }
            _ => {}
        }
    }
    body.append_pair("_action", "accept");
    body.finish().into_bytes()
}

fn form_page(c: &mut Criterion) {
    let schema = Booking::requested_schema();
    let content = booking_content();
    let json = serde_json::to_vec(&content).expect("content serialises");
    let post = post_body(&content);
    // Both readings must give the same typed answer, or the comparison means nothing.
    let from_post = Booking::from_content(&parse_post(schema, &post).content).expect("the POST parses");
    let from_json = Booking::from_content(&serde_json::from_slice(&json).expect("JSON")).expect("the JSON parses");
    assert_eq!(from_post.to_content(), from_json.to_content());
    let values = FormValues::from_content(schema, &content);
    let token = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";

    let mut group = c.benchmark_group("form_page");
    group.bench_function("render", |b| {
        b.iter(|| {
            let view = FormView::new(Booking::MESSAGE, schema, black_box(&values), "/form/AAAAAAAAAAAAAAAAAAAAAA");
            black_box(render_form(&view.token(Some(token))))
        })
    });
    group.bench_function("post_to_typed", |b| {
        b.iter(|| black_box(Booking::from_content(&parse_post(schema, black_box(&post)).content)))
    });
    group.bench_function("json_to_typed", |b| {
        b.iter(|| {
            let content: Map<String, Value> = serde_json::from_slice(black_box(&json)).expect("JSON");
            black_box(Booking::from_content(&content))
        })
    });
    group.finish();
}

criterion_group!(benches, form_page);
criterion_main!(benches);
