//! Mistyped Multi Round-Trip parameters answered `-32602`, found from a request's bytes (HTTP and
//! stdio alike).
//!
//! **rmcp behaviour corrected** (rmcp 3.11.0, still so): rmcp decodes request parameters into typed
//! structs, so a `tools/call`, `prompts/get` or `resources/read` whose `inputResponses`,
//! `requestState` or `arguments` is mistyped fails its typed decoding and falls through to rmcp's
//! catch-all custom request, which a server answers "method not found" (`-32601`; on HTTP, 404
//! for some clients). The protocol calls it invalid params (`-32602`, HTTP 200).
//! `inputResponses: null` (and `null` for the other two) is refused too: the members are optional,
//! not nullable, though rmcp's `Option`s read `null` as absent.
//!
//! **Shown by** `tests/adapter/mistyped_params.rs` (HTTP), `tests/adapter/http_edge.rs` (the check
//! comes after rmcp's `Host`, `Origin` and header checks) and `tests/adapter/stdio/era_2026.rs`
//! (stdio), and this module's unit tests (the cheap passes answer as the full check).
//!
//! The check is layered by cost. A byte scan finds every member named `inputResponses`,
//! `requestState` or `arguments` and looks at the first byte of its value; when each is of the
//! right type (the common case) no parse runs at all, where parsing every body once more than rmcp
//! does was this fix's whole cost. Otherwise a light pass reads the body into borrowed structs
//! that keep only the method, whether there is an id, and the JSON type of the three members; when
//! it proves the full check would find nothing, it answers at once; in every other case, including
//! any body it cannot read (duplicate members, invalid UTF-8, anything serde refuses), the full
//! check runs (the whole body as a [`Value`]). So the answer is always the full check's.
//!
//! The HTTP layer marks a request it finds mistyped ([`MalformedParams`] in the request's
//! extensions, its mistyped members dropped so rmcp decodes it) and the round built from it
//! ([`Round`](super::super::round::Round)) answers the mark: each request is checked once.

use std::borrow::Cow;
use std::fmt;

use ::rmcp::RoleServer;
use ::rmcp::model::ErrorData;
use ::rmcp::service::RequestContext;
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::{Needle, contains};
use crate::wire;

/// The methods that carry Multi Round-Trip parameters.
const MRTR_METHODS: &[&str] = &[wire::TOOLS_CALL, wire::PROMPTS_GET, wire::RESOURCES_READ];

/// Why a Multi Round-Trip request's parameters are mistyped, put in the HTTP request's extensions
/// by [`mark_malformed_params`](super::layer) for the handler to answer.
#[derive(Debug, Clone, Copy)]
pub(super) struct MalformedParams(pub(super) &'static str);

/// The `-32602` for a request [`mark_malformed_params`](super::layer) marked.
pub(crate) fn refuse_marked(ctx: &RequestContext<RoleServer>) -> Result<(), ErrorData> {
    let marked =
        ctx.extensions.get::<axum::http::request::Parts>().and_then(|parts| parts.extensions.get::<MalformedParams>());
    match marked {
        Some(MalformedParams(reason)) => Err(ErrorData::invalid_params(*reason, None)),
        None => Ok(()),
    }
}

/// When a Multi Round-Trip request's parameters are mistyped: the reason, and the request with
/// the mistyped members removed (which rmcp decodes). `None` for everything else, including bodies
/// that are not JSON (rmcp refuses those itself).
pub(crate) fn malformed_params(bytes: &[u8]) -> Option<(&'static str, Vec<u8>)> {
    if members_look_well_typed(bytes) || surely_well_typed(bytes) {
        return None;
    }
    full_check(bytes)
}

/// A `\u` escape, which could spell a member's name out of sight of the byte scan.
static UNICODE_ESCAPE: Needle = Needle::new(|| memchr::memmem::Finder::new(b"\\u"));
static INPUT_RESPONSES: Needle = Needle::new(|| memchr::memmem::Finder::new(b"\"inputResponses\""));
static REQUEST_STATE: Needle = Needle::new(|| memchr::memmem::Finder::new(b"\"requestState\""));
static ARGUMENTS: Needle = Needle::new(|| memchr::memmem::Finder::new(b"\"arguments\""));

/// `true` only when [`full_check`] would answer `None`, found without parsing: every member
/// anywhere in `bytes` named `inputResponses`, `requestState` or `arguments` (a quoted name
/// followed by `:`) has a value whose first byte is of the type the check wants (`{`, `"`, `{`).
///
/// Sound because a member of the params the full check types is one of those occurrences: its
/// name can be spelt differently only with a `\u` escape (no other escape makes a letter), and a
/// body with one is left to the passes below. A quoted name that is no member (a string value, the
/// tail of a longer string) at worst sends the body on to them too.
fn members_look_well_typed(bytes: &[u8]) -> bool {
    fn skip_ws(bytes: &[u8]) -> &[u8] {
        let start = bytes.iter().position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r')).unwrap_or(bytes.len());
        &bytes[start..]
    }
    if contains(bytes, &UNICODE_ESCAPE) {
        return false;
    }
    [(&INPUT_RESPONSES, b'{'), (&REQUEST_STATE, b'"'), (&ARGUMENTS, b'{')].into_iter().all(|(name, first)| {
        name.find_iter(bytes).all(|at| match skip_ws(&bytes[at + name.needle().len()..]).split_first() {
            Some((b':', value)) => skip_ws(value).first() == Some(&first),
            // Not a member's name.
            _ => true,
        })
    })
}

/// A member of a Multi Round-Trip request's params, how it must be typed, and why.
type ParamCheck = (&'static str, fn(&Value) -> bool, &'static str);

/// The full check: the whole body parsed into a [`Value`] (duplicate members: the last one wins).
fn full_check(bytes: &[u8]) -> Option<(&'static str, Vec<u8>)> {
    let mut message: Value = serde_json::from_slice(bytes).ok()?;
    let method = message.get("method")?.as_str()?;
    if !MRTR_METHODS.contains(&method) {
        return None;
    }
    message.get("id")?;
    let params = message.get_mut("params")?.as_object_mut()?;
    let checks: [ParamCheck; 3] = [
        ("inputResponses", Value::is_object, "`inputResponses` must be an object keyed like the input requests"),
        ("requestState", Value::is_string, "`requestState` must be the string the server sent"),
        ("arguments", Value::is_object, "`arguments` must be an object"),
    ];
    let mut reason = None;
    for (member, well_typed, why) in checks {
        if params.get(member).is_some_and(|value| !well_typed(value)) {
            params.remove(member);
            reason.get_or_insert(why);
        }
    }
    Some((reason?, serde_json::to_vec(&message).ok()?))
}

/// `true` only when [`full_check`] would answer `None`; `false` means "run it".
///
/// Sound because the first pass refuses (and so defers) whatever it cannot read exactly as the
/// full parse does: a repeated `method`, `id`, `params` or checked member is an error here
/// (serde's derived structs refuse duplicate fields), where the full parse keeps the last one.
/// When the first pass reads a body the full parse refuses (say, invalid UTF-8 in a skipped
/// string), both answer `None`: the full check needs the parse to succeed to answer anything else.
fn surely_well_typed(bytes: &[u8]) -> bool {
    let Ok(message) = serde_json::from_slice::<Message<'_>>(bytes) else {
        return false;
    };
    // Each `true` below is a place where the full check returns `None`.
    let Some(method) = message.method else { return true };
    if !MRTR_METHODS.contains(&method.as_ref()) || !message.id.0 {
        return true;
    }
    let Some(params) = message.params else { return true };
    matches!(params.input_responses, Kind::Absent | Kind::Object)
        && matches!(params.request_state, Kind::Absent | Kind::String)
        && matches!(params.arguments, Kind::Absent | Kind::Object)
}

/// What the first pass keeps of a JSON-RPC message.
#[derive(Deserialize)]
struct Message<'a> {
    /// `null` reads as `None`, as the full check's `as_str` does.
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    /// Present, whatever its value (`null` included).
    #[serde(default)]
    id: Present,
    /// `null` reads as `None`: not an object either way.
    #[serde(default)]
    params: Option<Params>,
}

/// The three members the full check types.
#[derive(Deserialize)]
struct Params {
    #[serde(rename = "inputResponses", default)]
    input_responses: Kind,
    #[serde(rename = "requestState", default)]
    request_state: Kind,
    #[serde(default)]
    arguments: Kind,
}

/// Whether a member was there at all; its value is skipped.
#[derive(Default)]
struct Present(bool);

impl<'de> Deserialize<'de> for Present {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(deserializer)?;
        Ok(Present(true))
    }
}

/// The JSON type of a member, as far as the checks care; its content is skipped.
#[derive(Default, Debug, PartialEq, Eq)]
enum Kind {
    #[default]
    Absent,
    Object,
    String,
    Other,
}

impl<'de> Deserialize<'de> for Kind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(KindVisitor)
    }
}

struct KindVisitor;

impl<'de> Visitor<'de> for KindVisitor {
    type Value = Kind;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Kind, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Kind::Object)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Kind, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Kind::Other)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Kind, E> {
        Ok(Kind::String)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Kind, E> {
        Ok(Kind::Other)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Kind, E> {
        Ok(Kind::Other)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Kind, E> {
        Ok(Kind::Other)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Kind, E> {
        Ok(Kind::Other)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Kind, E> {
        Ok(Kind::Other)
    }

    fn visit_none<E: de::Error>(self) -> Result<Kind, E> {
        Ok(Kind::Other)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic, reason = "a failing test should stop loudly")]

    use super::*;

    /// Requests the full check answers differently, and edge cases of reading JSON.
    fn cases() -> Vec<Vec<u8>> {
        let mut cases: Vec<Vec<u8>> = [
            // Well typed, every method.
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":[1,{"b":null}]},"inputResponses":{"k":{"action":"accept","content":{"x":"y"}}},"requestState":"AQID"}}"#,
            r#"{"jsonrpc":"2.0","id":"s","method":"prompts/get","params":{"name":"p","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"resources/read","params":{"uri":"x://y","requestState":"s"}}"#,
            // The cases of tests/adapter/mistyped_params.rs.
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rate_trip","arguments":{},"inputResponses":5}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rate_trip","arguments":{},"inputResponses":null}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rate_trip","arguments":{},"inputResponses":["x"]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rate_trip","arguments":{},"requestState":5}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rate_trip","arguments":5}}"#,
            // More mistypings, several at once, each kind of value.
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":"{}","requestState":{"a":1},"inputResponses":true}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"requestState":null}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"requestState":["s"]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":1.5e3}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":-7}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":18446744073709551616}}"#,
            // Not a Multi Round-Trip request: other methods, notifications, no params.
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"arguments":5}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"arguments":5}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[{"a":1},"s",{}]}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[5]}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"x"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":null,"params":{"arguments":5}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":5,"params":{"arguments":5}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"Tools/Call","params":{"arguments":5}}"#,
            r#"{"jsonrpc":"2.0","id":1,"params":{"arguments":5}}"#,
            r#"["tools/call",1,{"arguments":5}]"#,
            r#"["tools/call",1,{"arguments":{}}]"#,
            // Duplicate members: the full parse keeps the last one.
            r#"{"id":1,"method":"tools/call","params":{"arguments":5,"arguments":{}}}"#,
            r#"{"id":1,"method":"tools/call","params":{"arguments":{},"arguments":5}}"#,
            r#"{"id":1,"method":"tools/list","method":"tools/call","params":{"arguments":5}}"#,
            r#"{"id":1,"method":"tools/call","method":"tools/list","params":{"arguments":5}}"#,
            r#"{"id":1,"method":"tools/call","params":{"arguments":5},"params":{}}"#,
            r#"{"id":1,"method":"tools/call","params":{},"params":{"arguments":5}}"#,
            r#"{"id":1,"id":2,"method":"tools/call","params":{"requestState":5}}"#,
            r#"{"id":1,"method":"tools/call","params":{"name":"a","name":"b","requestState":5}}"#,
            // Escapes in keys and the method.
            r#"{"id":1,"method":"tools/call","params":{"\u0061rguments":5}}"#,
            r#"{"id":1,"\u006dethod":"tools\/call","params":{"arguments":5}}"#,
            r#"{"id":1,"method":"tools\u002fcall","params":{"requestState":5}}"#,
            // Bad JSON: syntax, trailing content, lone surrogates, empty.
            r#"{"id":1,"method":"tools/call","params":{"arguments":5}"#,
            r#"{"id":1,"method":"tools/call","params":{"arguments":5}} x"#,
            r#"{"id":1,"method":"tools/call","params":{"arguments":5}} {}"#,
            r#"{"id":1,"method":"tools/call","params":{"arguments":{"s":"\ud800"},"requestState":5}}"#,
            r#"{"id":1,"method":"tools/call","params":{"arguments":{"s":"\ud800"}}}"#,
            r#"{"id":1,"method":"tools/call","params":{"arguments":{"s":"\x"}}}"#,
            "",
            " ",
            "null",
            "5",
            "\"tools/call\"",
            " \t\n{\"id\":1,\"method\":\"tools/call\",\"params\":{\"arguments\":5}}\r\n",
        ]
        .iter()
        .map(|case| case.as_bytes().to_vec())
        .collect();
        // Invalid UTF-8 in a skipped string, in the method, in a key.
        for (at, base) in [
            (r#"{"id":1,"method":"tools/call","params":{"arguments":{"s":"#, r#""},"requestState":5}}"#),
            (r#"{"id":1,"method":"tools/call","params":{"arguments":{"s":"#, r#""}}}"#),
            (r#"{"id":1,"method":"#, r#""tools/call","params":{"arguments":5}}"#),
            (r#"{"id":1,"method":"tools/call","params":{"#, r#""arguments":5}}"#),
        ] {
            for bad in [&b"\xff"[..], b"\xc3", b"\xed\xa0\x80", b"\"\xff\""] {
                let mut case = at.as_bytes().to_vec();
                case.extend_from_slice(bad);
                case.extend_from_slice(base.as_bytes());
                cases.push(case);
            }
        }
        // Nesting past serde_json's recursion limit, inside a member and around it.
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        cases.push(format!(r#"{{"id":1,"method":"tools/call","params":{{"arguments":{{"d":{deep}}}}}}}"#).into_bytes());
        cases.push(
            format!(r#"{{"id":1,"method":"tools/call","params":{{"arguments":{{"d":{deep}}},"requestState":5}}}}"#)
                .into_bytes(),
        );
        cases
    }

    fn show(bytes: &[u8]) -> String {
        String::from_utf8_lossy(bytes).into_owned()
    }

    #[test]
    fn the_light_check_answers_as_the_full_one() {
        let mut refused = 0;
        let mut light = 0;
        let mut scanned = 0;
        for case in cases() {
            let full = full_check(&case);
            assert_eq!(malformed_params(&case), full, "{}", show(&case));
            refused += usize::from(full.is_some());
            if surely_well_typed(&case) {
                assert_eq!(full, None, "the first pass let through {}", show(&case));
                light += 1;
            }
            if members_look_well_typed(&case) {
                assert_eq!(full, None, "the byte scan let through {}", show(&case));
                scanned += 1;
            }
        }
        // Both kinds of answer are exercised, and most accepted requests skip the full parse.
        assert_eq!(refused, 20);
        assert!(light >= 12, "{light}");
        assert!(scanned >= 8, "{scanned}");
    }

    #[test]
    fn known_answers() {
        let refused = |body: &str| malformed_params(body.as_bytes()).map(|(why, repaired)| (why, show(&repaired)));
        assert_eq!(
            refused(r#"{"id":1,"method":"tools/call","params":{"name":"t","arguments":5,"requestState":7}}"#),
            Some((
                "`requestState` must be the string the server sent",
                r#"{"id":1,"method":"tools/call","params":{"name":"t"}}"#.to_owned()
            ))
        );
        assert_eq!(refused(r#"{"id":1,"method":"tools/call","params":{"arguments":5,"arguments":{}}}"#), None);
        assert_eq!(
            refused(r#"{"id":1,"method":"tools/call","params":{"arguments":{},"arguments":[]}}"#),
            Some(("`arguments` must be an object", r#"{"id":1,"method":"tools/call","params":{}}"#.to_owned()))
        );
        assert_eq!(
            refused(r#"{"id":1,"method":"tools/call","params":{"inputResponses":{},"requestState":"s"}}"#),
            None
        );
        // The common request takes the first pass alone.
        assert!(surely_well_typed(br#"{"id":1,"method":"tools/call","params":{"name":"t","arguments":{},"inputResponses":{},"requestState":"s"}}"#));
        assert!(!surely_well_typed(br#"{"id":1,"method":"tools/call","params":{"requestState":5}}"#));
    }

    /// Every one-byte deletion, and replacement by a byte that matters to JSON, of requests near
    /// the boundary: the two checks still agree.
    #[test]
    fn the_checks_agree_on_every_one_byte_edit() {
        let bases = [
            r#"{"id":1,"method":"tools/call","params":{"arguments":{"a":"b"},"requestState":"s","inputResponses":{}}}"#,
            r#"{"id":1,"method":"tools/call","params":{"arguments":5,"requestState":"s","inputResponses":[]}}"#,
            r#"{"id":1,"method":"prompts/get","params":{"arguments":{},"arguments":null}}"#,
        ];
        let replacements = *b"\"{}[],:n05\\ \xffx";
        let mut compared = 0;
        for base in bases {
            let base = base.as_bytes();
            for at in 0..base.len() {
                let mut deleted = base.to_vec();
                deleted.remove(at);
                assert_eq!(malformed_params(&deleted), full_check(&deleted), "{}", show(&deleted));
                for byte in replacements {
                    let mut replaced = base.to_vec();
                    replaced[at] = byte;
                    assert_eq!(malformed_params(&replaced), full_check(&replaced), "{}", show(&replaced));
                    compared += 1;
                }
            }
        }
        assert!(compared > 3000, "{compared}");
    }
}
