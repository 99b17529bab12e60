//! The client a round serves, as a metric label: its name and version come from the wire
//! (`initialize`'s `clientInfo` on a 2025-era session, `_meta` `io.modelcontextprotocol/clientInfo`
//! on a 2026-07-28 round), so they are untrusted. Each is cleaned (control and invisible
//! formatting characters dropped, clipped to [`MAX_LABEL_CHARS`], `unknown` when empty) and the
//! labels stay few: the first [`MAX_CLIENTS`] names a process sees are kept, later ones are
//! `other`; likewise the first [`MAX_VERSIONS`] versions of each name.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use serde_json::{Map, Value};

use crate::wire::META_CLIENT_INFO;

/// Characters kept of a client's name or version.
const MAX_LABEL_CHARS: usize = 64;
/// Distinct client names a process labels; later ones are `other`.
const MAX_CLIENTS: usize = 32;
/// Distinct versions labelled per client name; later ones are `other`.
const MAX_VERSIONS: usize = 8;

/// The label of a name or version absent or empty on the wire.
const UNKNOWN: &str = "unknown";
/// The label past the caps.
const OTHER: &str = "other";

/// The names and versions labelled so far, process-wide (a recorder is process-wide too).
static SEEN: Mutex<BTreeMap<String, BTreeSet<String>>> = Mutex::new(BTreeMap::new());

/// A client's name and version, cleaned and capped, ready to be labels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::server) struct ClientName {
    pub(in crate::server) name: String,
    pub(in crate::server) version: String,
}

impl Default for ClientName {
    fn default() -> Self {
        ClientName::new("", "")
    }
}

impl ClientName {
    /// The labels for a client that named itself `name` at `version`.
    pub(in crate::server) fn new(name: &str, version: &str) -> Self {
        let (name, version) = (clean(name), clean(version));
        let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
        if !seen.contains_key(&name) && seen.len() >= MAX_CLIENTS {
            return ClientName { name: OTHER.to_owned(), version: OTHER.to_owned() };
        }
        let versions = seen.entry(name.clone()).or_default();
        let version = if versions.contains(&version) || versions.len() < MAX_VERSIONS {
            versions.insert(version.clone());
            version
        } else {
            OTHER.to_owned()
        };
        ClientName { name, version }
    }

    /// The client a 2026-07-28 request names in its `_meta`.
    pub(in crate::server) fn from_meta(meta: Option<&Map<String, Value>>) -> Self {
        let info = meta.and_then(|meta| meta.get(META_CLIENT_INFO));
        let field = |key| info.and_then(|info| info.get(key)).and_then(Value::as_str).unwrap_or("");
        ClientName::new(field("name"), field("version"))
    }
}

/// `raw` without control or invisible formatting characters, trimmed and clipped.
fn clean(raw: &str) -> String {
    let kept: String = raw.chars().filter(|c| !c.is_control() && !invisible(*c)).take(MAX_LABEL_CHARS).collect();
    match kept.trim() {
        "" => UNKNOWN.to_owned(),
        trimmed => trimmed.to_owned(),
    }
}

/// Zero-width and bidirectional formatting characters: they would make two labels look alike.
fn invisible(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2069}' | '\u{FEFF}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_cleaned() {
        assert_eq!(clean("  host\u{0}\u{1b}[31m\n "), "host[31m");
        assert_eq!(clean("a\u{202E}b\u{200B}c"), "abc");
        assert_eq!(clean("\u{7}\t"), UNKNOWN);
        assert_eq!(clean(&"x".repeat(500)).chars().count(), MAX_LABEL_CHARS);
    }

    #[test]
    fn labels_stay_few() {
        // Unique to this test: the set is process-wide.
        for n in 0..MAX_VERSIONS + 3 {
            let client = ClientName::new("client-unit-test-versions", &format!("0.{n}"));
            let expected = if n < MAX_VERSIONS { format!("0.{n}") } else { OTHER.to_owned() };
            assert_eq!(client.version, expected);
        }
        assert_eq!(ClientName::new("client-unit-test-versions", "0.0").version, "0.0", "a known version stays");
        let names: Vec<ClientName> =
            (0..MAX_CLIENTS + 1).map(|n| ClientName::new(&format!("client-unit-test-{n}"), "1")).collect();
        assert_eq!(names.last().map(|c| c.name.as_str()), Some(OTHER), "past the cap");
        assert!(names.len() > MAX_CLIENTS);
    }

    #[test]
    fn a_2026_round_names_its_client_in_meta() {
        let meta = serde_json::json!({META_CLIENT_INFO: {"name": "meta-host\r\n", "version": 7}});
        let client = ClientName::from_meta(meta.as_object());
        assert_eq!((client.name.as_str(), client.version.as_str()), ("meta-host", UNKNOWN));
        assert_eq!(ClientName::from_meta(None).name, UNKNOWN);
    }
}
