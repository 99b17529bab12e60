//! The sealed flow payload: everything a flow carries from round to round inside `requestState`.
//!
//! Its JSON is a format: states sealed by one version of the library are opened by the next one
//! during a rolling deploy. It carries a version (`v`); a payload of another version is refused
//! like any bad state, and the golden test below pins the JSON of this one.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The version this library writes and reads.
pub(super) const PAYLOAD_VERSION: u32 = 1;

fn current() -> u32 {
    // Payloads sealed before the version field existed have exactly this layout.
    PAYLOAD_VERSION
}

/// A URL-mode step minted in an earlier round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct UrlStep {
    pub(super) id: String,
    pub(super) url: String,
    pub(super) message: String,
}

/// What a flow carries between rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Payload {
    #[serde(rename = "v", default = "current")]
    pub(super) version: u32,
    /// The flow's id: 128 random bits minted on its first round, naming its ledger records.
    #[serde(default, rename = "f", skip_serializing_if = "String::is_empty")]
    pub(super) flow: String,
    /// The keys of the input requests the last round sent: the only keys whose answers the next
    /// round takes.
    #[serde(default, rename = "p", skip_serializing_if = "BTreeSet::is_empty")]
    pub(super) pending: BTreeSet<String>,
    /// Answers already consumed by the handler, by input request key.
    #[serde(default, rename = "a", skip_serializing_if = "Map::is_empty")]
    pub(super) answers: Map<String, Value>,
    /// Values computed by `once`, by key (a cache of what the ledger recorded).
    #[serde(default, rename = "o", skip_serializing_if = "Map::is_empty")]
    pub(super) once: Map<String, Value>,
    /// URL-mode steps, by input request key.
    #[serde(default, rename = "u", skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) urls: BTreeMap<String, UrlStep>,
    /// How many invalid answers each form key has had.
    #[serde(default, rename = "n", skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) invalid: BTreeMap<String, u32>,
}

impl Default for Payload {
    fn default() -> Self {
        Payload {
            version: PAYLOAD_VERSION,
            flow: String::new(),
            pending: BTreeSet::new(),
            answers: Map::new(),
            once: Map::new(),
            urls: BTreeMap::new(),
            invalid: BTreeMap::new(),
        }
    }
}

impl Payload {
    /// The payload in `bytes`, or `None` when it is not one this version reads.
    pub(super) fn decode(bytes: &[u8]) -> Option<Payload> {
        serde_json::from_slice::<Payload>(bytes).ok().filter(|p| p.version == PAYLOAD_VERSION)
    }

    /// The payload's JSON.
    pub(super) fn encode(&self) -> Result<Vec<u8>, serde_json::Error> {
        serde_json::to_vec(self)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failing test should stop loudly")]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample() -> Payload {
        let mut payload = Payload { flow: "F".into(), ..Payload::default() };
        payload.pending.insert("confirm".into());
        payload.answers.insert("who".into(), json!({"action": "accept", "content": {"name": "Ada"}}));
        payload.once.insert("reference".into(), json!("REF-1"));
        payload.urls.insert("pay".into(), UrlStep { id: "I".into(), url: "https://p/I".into(), message: "Pay".into() });
        payload.invalid.insert("who".into(), 1);
        payload
    }

    #[test]
    fn the_json_is_pinned() {
        let golden = r#"{"v":1,"f":"F","p":["confirm"],"a":{"who":{"action":"accept","content":{"name":"Ada"}}},"o":{"reference":"REF-1"},"u":{"pay":{"id":"I","url":"https://p/I","message":"Pay"}},"n":{"who":1}}"#;
        assert_eq!(String::from_utf8(sample().encode().unwrap()).unwrap(), golden);
        assert_eq!(Payload::decode(golden.as_bytes()).unwrap(), sample());
        assert_eq!(String::from_utf8(Payload::default().encode().unwrap()).unwrap(), r#"{"v":1}"#);
    }

    #[test]
    fn another_version_is_refused_and_an_unversioned_one_is_read() {
        assert!(Payload::decode(br#"{"v":2,"f":"F"}"#).is_none());
        assert!(Payload::decode(b"5").is_none());
        assert_eq!(Payload::decode(br#"{"f":"F"}"#).unwrap().flow, "F");
    }
}
