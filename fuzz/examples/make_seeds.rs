//! Writes the seeds that must be made by the code under test: sealed tokens (for direct opening
//! and valid engine states) and their engine rounds. Run from `fuzz/`:
//! `cargo run --example make_seeds`. The other seeds are official examples copied from the spec.

use std::fs;
use std::path::Path;

use std::collections::{BTreeSet, HashSet};

use chrono::{DateTime, NaiveDate};
use elicit_fuzz::engine::{self, Call};
use elicit_fuzz::forms::{Cabin, Colour, Contact, Everything, Extra, Numbers, Optionals};
use elicit_runtime::server::Outcome;
use elicit_runtime::{Elicit, Email};
use serde_json::{Value, json};

fn write(target: &str, name: &str, bytes: &[u8]) {
    let dir = Path::new("corpus").join(target);
    fs::create_dir_all(&dir).expect("corpus directory");
    fs::write(dir.join(name), bytes).expect("seed written");
}

fn main() {
    let sealer = engine::sealer();
    let binding = engine::binding();
    let empty = sealer.seal(&binding, b"", engine::t0()).expect("seals");
    let flow = sealer.seal(&binding, br#"{"a":{"contact":{"action":"decline"}}}"#, engine::t0()).expect("seals");
    write("open_state", "open-valid-empty", format!("0{empty}").as_bytes());
    write("open_state", "open-valid-flow", format!("0{flow}").as_bytes());
    write("open_state", "open-garbage", b"0eyJsb2NhdGlvbiI6Ik5ldyBZb3JrIn0");
    write("open_state", "tamper-none", b"1\x00\x08payload!");
    write("open_state", "tamper-flip", b"1\x10\x04abcd\x00\x40\x01\x04\x80\x07");
    write("open_state", "engine-tamper-none", b"3\n{\"contact\":{\"action\":\"cancel\"}}");
    write("open_state", "engine-tamper-truncate", b"3\x03\xf0\x00\n");

    // Genuine engine states, as sent after the first rounds, with answers to go with them.
    let engine = engine::engine();
    let call = Call::default();
    let first = engine::run(&engine, &call, None, None);
    let state = engine::next_state(&first).expect("the first round asks");
    let accept = json!({
        "contact": {"action": "accept", "content": {"name": "Ada", "email": "ada@example.com", "age": 36, "colour": "red"}},
        "payment": {"action": "accept"},
    });
    let decline = json!({"contact": {"action": "decline"}, "payment": {"action": "cancel"}});
    write("open_state", "engine-round2-accept", format!("2{state}\n{accept}").as_bytes());
    write("open_state", "engine-round2-decline", format!("2{state}\n{decline}").as_bytes());
    write("open_state", "engine-round2-not-json", format!("2{state}\n{{\"contact\":").as_bytes());
    engine::pay(&engine, &first);
    let second = engine::run(&engine, &call, Some(&accept), Some(&state));
    let state = engine::next_state(&second).expect("the second round asks for the summary");
    let sample = json!({"summary": {"role": "assistant", "content": {"type": "text", "text": "Sunny"}, "model": "m", "stopReason": "endTurn"}});
    write("open_state", "engine-round3-summary", format!("2{state}\n{sample}").as_bytes());

    // The honest sequence for input_responses, as an array of rounds.
    let rounds = json!([accept, sample]);
    write("input_responses", "rounds-accept-then-summary", rounds.to_string().as_bytes());
    let invalid = json!([
        {"contact": {"action": "accept", "content": {"name": "", "email": "nope", "age": 3, "colour": "pink"}}, "payment": {"action": "decline"}},
        {"contact": {"action": "accept", "content": {"name": "Ada"}}},
        {"contact": {"action": "accept", "content": {}}},
    ]);
    write("input_responses", "rounds-invalid-answers", invalid.to_string().as_bytes());

    // What a real server sends, for the client's driver: the first round, a state-only round, and
    // the final result.
    let Ok(Outcome::InputRequired(asked)) = &first else { panic!("the first round asks") };
    let state_only = json!({"resultType": "input_required", "requestState": state});
    let done = json!({"resultType": "complete", "content": [{"type": "text", "text": "Booked"}]});
    write("client_parse", "engine-first-round", asked.to_json().to_string().as_bytes());
    let sequence = json!([asked.to_json(), state_only, done]);
    write("client_parse", "engine-sequence", sequence.to_string().as_bytes());

    // Content written by valid values of every form.
    let everything = Everything {
        name: "Ada".into(),
        contact: "ada@example.com".into(),
        home: "https://example.com/ada".into(),
        born: "1815-12-10".into(),
        seen: "2026-07-28T09:30:00.5+02:00".into(),
        work: "ada@work.example".parse::<Email>().expect("an address"),
        day: NaiveDate::from_ymd_opt(2026, 7, 28).expect("a date"),
        at_utc: DateTime::from_timestamp(1_785_000_000, 0).expect("a time"),
        at_offset: DateTime::parse_from_rfc3339("2016-12-31T15:59:60-08:00").expect("a leap second"),
        site: url::Url::parse("https://ada.example/").expect("a URL"),
        flag: true,
        numbers: Numbers {
            a_i8: -128,
            a_u8: 255,
            a_i16: -32768,
            a_u16: 65535,
            a_i32: i32::MIN,
            a_u32: u32::MAX,
            a_i64: i64::MIN,
            a_u64: u64::MAX,
            a_i128: -170_141_183_460_469_231_731_687_303_715_884_105_728,
            a_u128: 12,
            a_isize: -1,
            a_usize: 1,
            a_f32: 3.5,
            a_f64: -0.0,
            narrow_i64: 9_007_199_254_740_993,
            unit: 1.0,
            set: HashSet::from([Colour::Green]),
        },
        ranged: 10,
        ratio: 99.5,
        colour: Colour::Blue,
        cabin: Cabin::PremiumEconomy,
        colours: vec![Colour::Red, Colour::Red],
        extras: BTreeSet::from([Extra::Legroom, Extra::Meal]),
    };
    write("typed_content", "everything", Value::Object(everything.to_content()).to_string().as_bytes());
    let optionals = Optionals {
        short: Some("é".into()),
        email: None,
        link: Some("urn:isbn:0451450523".into()),
        day: None,
        moment: Some(DateTime::from_timestamp(0, 1).expect("a time")),
        site: None,
        flag: Some(false),
        small: Some(0),
        big: None,
        wide: Some(i64::MIN),
        single: Some(f32::MAX),
        double: Some(-1.5),
        colour: None,
        colours: Some(vec![]),
        extras: Some(BTreeSet::from([Extra::Lounge])),
    };
    write("typed_content", "optionals", Value::Object(optionals.to_content()).to_string().as_bytes());
    write("typed_content", "optionals-empty", b"{}");
    let contact = Contact {
        name: "Ada".into(),
        email: "ada@example.com".parse::<Email>().expect("an address"),
        age: Some(18),
        newsletter: false,
        colour: Colour::Green,
    };
    write("typed_content", "contact", Value::Object(contact.to_content()).to_string().as_bytes());
}
