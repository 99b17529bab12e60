//! The sealed flow payload: everything a flow carries from round to round inside `requestState`.
//!
//! Its JSON is a format: states sealed by one version of the library are opened by the next one
//! during a rolling deploy. It carries a version (`v`); a payload of another version is refused
//! like any bad state, and the golden test below pins the JSON of this one.
//!
//! Opening a state reads its answers as one piece of raw JSON, parsed only when a round reads or
//! changes one ([`Answers`]): a round that asks nothing of them, and every state sealed without
//! touching them, costs no parsing and one allocation for them all.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::time::SystemTime;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::state::{Binding, StateError, StateSealer};

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

/// What a flow carries between rounds. Not public API: public only so that the benchmarks seal and
/// open exactly what the engine does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Payload {
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
    #[serde(default, rename = "a", skip_serializing_if = "Answers::is_empty")]
    pub(super) answers: Answers,
    /// Values computed by `once`, by key (a cache of what the ledger recorded).
    #[serde(default, rename = "o", skip_serializing_if = "Map::is_empty")]
    pub(super) once: Map<String, Value>,
    /// URL-mode steps, by input request key.
    #[serde(default, rename = "u", skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) urls: BTreeMap<String, UrlStep>,
    /// How many invalid answers each form key has had.
    #[serde(default, rename = "n", skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) invalid: BTreeMap<String, u32>,
    /// The number of the round that sealed this state (the first round is 1): the next round is
    /// one more. What an operator sees counts rounds per flow with it.
    #[serde(default, rename = "r", skip_serializing_if = "is_zero")]
    pub(super) round: u32,
    /// When the round that sealed this state asked (milliseconds since the Unix epoch, by the
    /// engine's clock): the time from ask to answer is measured from it by whichever instance
    /// serves the answer, as the engine keeps nothing between rounds.
    #[serde(default, rename = "t", skip_serializing_if = "is_zero")]
    pub(super) asked_at: u64,
}

fn is_zero<N: Default + PartialEq>(n: &N) -> bool {
    *n == N::default()
}

impl Default for Payload {
    fn default() -> Self {
        Payload {
            version: PAYLOAD_VERSION,
            flow: String::new(),
            pending: BTreeSet::new(),
            answers: Answers::default(),
            once: Map::new(),
            urls: BTreeMap::new(),
            invalid: BTreeMap::new(),
            round: 0,
            asked_at: 0,
        }
    }
}

impl Payload {
    /// Opens the payload sealed in `token` for `binding`: `None` when the token does not open or
    /// holds no payload this version reads.
    pub fn open(sealer: &StateSealer, binding: &Binding<'_>, token: &str, now: SystemTime) -> Option<Payload> {
        sealer.open_json::<Payload>(binding, token, now).ok().filter(|p| p.version == PAYLOAD_VERSION)
    }

    /// Marks the payload as sealed by the round after the one that opened it, asking at `now`.
    pub(super) fn stamp(&mut self, now: SystemTime) {
        self.round = self.round.saturating_add(1);
        let millis = now.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_millis());
        self.asked_at = u64::try_from(millis).unwrap_or(u64::MAX);
    }

    /// Seals the payload for `binding`, its JSON written straight into the token's buffer.
    ///
    /// # Errors
    ///
    /// As [`StateSealer::seal_json`].
    pub fn seal(&self, sealer: &StateSealer, binding: &Binding<'_>, now: SystemTime) -> Result<String, StateError> {
        sealer.seal_json(binding, self, now)
    }

    /// The payload in `bytes`, or `None` when it is not one this version reads.
    #[cfg(test)]
    fn decode(bytes: &[u8]) -> Option<Payload> {
        serde_json::from_slice::<Payload>(bytes).ok().filter(|p| p.version == PAYLOAD_VERSION)
    }

    /// The payload's JSON.
    #[cfg(test)]
    fn encode(&self) -> Result<Vec<u8>, serde_json::Error> {
        serde_json::to_vec(self)
    }
}

/// Answers already consumed by the handler, by input request key: the JSON object they were sealed
/// as, kept raw until a round reads or changes one, then parsed once.
#[derive(Debug, Clone, Default)]
pub(super) struct Answers {
    /// As opened, when nothing has read it yet: a JSON object (checked when opened); `parsed` is
    /// then empty.
    raw: Option<Box<RawValue>>,
    parsed: Map<String, Value>,
}

impl Answers {
    fn map(&mut self) -> &mut Map<String, Value> {
        if let Some(raw) = self.raw.take() {
            self.parsed = parse(&raw);
        }
        &mut self.parsed
    }

    /// The answers, parsed.
    pub(super) fn to_map(&self) -> Cow<'_, Map<String, Value>> {
        match &self.raw {
            Some(raw) => Cow::Owned(parse(raw)),
            None => Cow::Borrowed(&self.parsed),
        }
    }

    /// The answers as one JSON object: the raw text as opened, or the parsed map written out.
    pub(super) fn to_json(&self) -> Result<Box<RawValue>, serde_json::Error> {
        match &self.raw {
            Some(raw) => Ok(raw.clone()),
            None => serde_json::value::to_raw_value(&self.parsed),
        }
    }

    pub(super) fn get(&mut self, key: &str) -> Option<&Value> {
        self.map().get(key)
    }

    pub(super) fn insert(&mut self, key: String, answer: Value) {
        self.map().insert(key, answer);
    }

    pub(super) fn remove(&mut self, key: &str) {
        self.map().remove(key);
    }

    fn is_empty(&self) -> bool {
        self.raw.is_none() && self.parsed.is_empty()
    }
}

/// A raw object of answers, parsed. It was read as valid JSON opening with `{`, so this fails only
/// past serde_json's nesting limit, which no answer the engine kept reaches (each was parsed
/// within it, inside the request); an authenticated state has no other source, and would then
/// carry no answers: its asks are asked again.
fn parse(raw: &RawValue) -> Map<String, Value> {
    serde_json::from_str(raw.get()).unwrap_or_default()
}

impl From<Map<String, Value>> for Answers {
    fn from(parsed: Map<String, Value>) -> Self {
        Answers { raw: None, parsed }
    }
}

impl PartialEq for Answers {
    fn eq(&self, other: &Self) -> bool {
        self.to_map() == other.to_map()
    }
}

impl Serialize for Answers {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // Raw answers are written back byte for byte: the JSON this library wrote when it sealed them.
        match &self.raw {
            Some(raw) => raw.serialize(serializer),
            None => self.parsed.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Answers {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        // Valid JSON that opens with `{` is an object, as the parsed map would require.
        if !raw.get().starts_with('{') {
            return Err(serde::de::Error::custom("answers must be a JSON object"));
        }
        Ok(Answers { raw: Some(raw), parsed: Map::new() })
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
        payload.round = 2;
        payload.asked_at = 1_700_000_000_123;
        payload
    }

    #[test]
    fn the_json_is_pinned() {
        let golden = r#"{"v":1,"f":"F","p":["confirm"],"a":{"who":{"action":"accept","content":{"name":"Ada"}}},"o":{"reference":"REF-1"},"u":{"pay":{"id":"I","url":"https://p/I","message":"Pay"}},"n":{"who":1},"r":2,"t":1700000000123}"#;
        assert_eq!(String::from_utf8(sample().encode().unwrap()).unwrap(), golden);
        assert_eq!(Payload::decode(golden.as_bytes()).unwrap(), sample());
        assert_eq!(String::from_utf8(Payload::default().encode().unwrap()).unwrap(), r#"{"v":1}"#);
    }

    #[test]
    fn a_stamp_numbers_the_round_and_keeps_when_it_asked() {
        let mut payload = Payload::default();
        let at = SystemTime::UNIX_EPOCH + std::time::Duration::from_millis(1_700_000_000_123);
        payload.stamp(at);
        assert_eq!((payload.round, payload.asked_at), (1, 1_700_000_000_123));
        payload.stamp(at + std::time::Duration::from_secs(2));
        assert_eq!((payload.round, payload.asked_at), (2, 1_700_000_002_123));
    }

    #[test]
    fn opened_answers_are_written_back_as_they_were_until_changed() {
        let sealed =
            r#"{"v":1,"f":"F","a":{"who":{"action":"accept","content":{"name":"Ada"}},"when":{"action":"decline"}}}"#;
        let mut opened = Payload::decode(sealed.as_bytes()).unwrap();
        assert_eq!(String::from_utf8(opened.encode().unwrap()).unwrap(), sealed);
        assert_eq!(opened.answers.get("when"), Some(&json!({"action": "decline"})));
        assert_eq!(String::from_utf8(opened.encode().unwrap()).unwrap(), sealed);
        opened.answers.remove("when");
        opened.answers.insert("seat".into(), json!({"action": "cancel"}));
        let changed =
            r#"{"v":1,"f":"F","a":{"who":{"action":"accept","content":{"name":"Ada"}},"seat":{"action":"cancel"}}}"#;
        assert_eq!(String::from_utf8(opened.encode().unwrap()).unwrap(), changed);
    }

    #[test]
    fn answers_that_are_not_an_object_are_refused() {
        for answers in ["[]", "1", "\"x\"", "null"] {
            assert!(Payload::decode(format!(r#"{{"v":1,"a":{answers}}}"#).as_bytes()).is_none(), "{answers}");
        }
        assert!(Payload::decode(br#"{"v":1,"a":{"who":{}}}"#).is_some());
    }

    #[test]
    fn a_payload_is_sealed_and_opened_whole() {
        let sealer = StateSealer::new(crate::state::KeyRing::generate());
        let binding = Binding {
            principal: None,
            method: "tools/call",
            name: "t",
            arguments_digest: crate::state::digest_arguments(None),
            audience: "a",
        };
        let now = SystemTime::now();
        let token = sample().seal(&sealer, &binding, now).unwrap();
        assert_eq!(Payload::open(&sealer, &binding, &token, now).unwrap(), sample());
        let other = sealer.seal_json(&binding, &json!({"v": 2}), now).unwrap();
        assert!(Payload::open(&sealer, &binding, &other, now).is_none());
    }

    #[test]
    fn another_version_is_refused_and_an_unversioned_one_is_read() {
        assert!(Payload::decode(br#"{"v":2,"f":"F"}"#).is_none());
        assert!(Payload::decode(b"5").is_none());
        assert_eq!(Payload::decode(br#"{"f":"F"}"#).unwrap().flow, "F");
    }
}
