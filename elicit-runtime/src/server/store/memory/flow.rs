//! What the in-process store keeps of a flow: its record, the key it is found by, its slots.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::Value;

use super::pages::{Pages, Text};
use crate::server::store::{FlowOwner, StoreError};

/// A slot of a flow: held under a claim until its lease ends, or recorded for good.
pub(super) enum Held {
    Claimed { token: String, until: SystemTime },
    Recorded(Value),
}

#[derive(Default)]
pub(super) struct FlowRecord {
    pub(super) slots: Slots,
    /// The answers the flow finished with, as JSON text in the store's pages: every flow leaves
    /// one, kept as long as its longest-lived state, so under load they are most of what the
    /// store holds, and they take no allocation of their own (pages.rs says why).
    pub(super) finished: Option<Text>,
    /// Whom the record counts against (`None`: a record of no one's, which no owner's count holds).
    pub(super) owner: Option<Arc<FlowOwner>>,
}

/// A flow record's id. The ids the engine mints (128 random bits, base64url without padding) are
/// held inline, so that a record holds no allocation for its id; any other id as its text.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(super) enum FlowKey {
    Minted([u8; 16]),
    Named(Arc<str>),
}

impl FlowKey {
    pub(super) fn of(id: &str) -> FlowKey {
        // Room for what 22 characters could decode to; the decoder refuses non-zero trailing
        // bits, so no two ids decode to the same bytes.
        let mut bytes = [0u8; 18];
        match URL_SAFE_NO_PAD.decode_slice(id, &mut bytes) {
            Ok(16) if id.len() == 22 => {
                let mut minted = [0u8; 16];
                minted.copy_from_slice(&bytes[..16]);
                FlowKey::Minted(minted)
            }
            _ => FlowKey::Named(Arc::from(id)),
        }
    }
}

/// The flow records each owner holds (live ones, and expired ones not swept yet). Records share
/// their owner's one allocation, kept here.
#[derive(Default)]
pub(super) struct FlowOwners(HashMap<Arc<FlowOwner>, usize>);

impl FlowOwners {
    pub(super) fn holds(&self, owner: &FlowOwner) -> usize {
        self.0.get(owner).copied().unwrap_or(0)
    }

    /// Counts one more record of `owner`: the owner, as its records share it.
    pub(super) fn add(&mut self, owner: &FlowOwner) -> Arc<FlowOwner> {
        let shared = match self.0.get_key_value(owner) {
            Some((shared, _)) => Arc::clone(shared),
            None => Arc::new(owner.clone()),
        };
        *self.0.entry(Arc::clone(&shared)).or_default() += 1;
        shared
    }

    /// Counts one record of `owner` less.
    pub(super) fn remove(&mut self, owner: &FlowOwner) {
        if let Some(count) = self.0.get_mut(owner) {
            *count -= 1;
            if *count == 0 {
                self.0.remove(owner);
            }
        }
    }
}

/// A flow's slots by name. A flow has a few (its `once` steps and URL steps), most flows none:
/// a list searched in order is smaller than a map, and boxed only once it holds one, a record
/// without slots spends one word on them (every live flow's record sits in the store's table).
#[derive(Default)]
#[allow(
    clippy::box_collection,
    reason = "one word in the record, against a `Vec`'s three, for the flows that hold no slot"
)]
pub(super) struct Slots(Option<Box<Vec<(String, Held)>>>);

impl Slots {
    fn list(&self) -> &[(String, Held)] {
        self.0.as_deref().map_or(&[], Vec::as_slice)
    }

    pub(super) fn get(&self, name: &str) -> Option<&Held> {
        self.list().iter().find(|(n, _)| n == name).map(|(_, held)| held)
    }

    pub(super) fn insert(&mut self, name: String, held: Held) {
        let list = self.0.get_or_insert_with(Box::default);
        match list.iter_mut().find(|(n, _)| *n == name) {
            Some((_, slot)) => *slot = held,
            None => list.push((name, held)),
        }
    }

    pub(super) fn remove(&mut self, name: &str) {
        if let Some(list) = &mut self.0 {
            list.retain(|(n, _)| n != name);
            if list.is_empty() {
                self.0 = None;
            }
        }
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (&String, &Held)> {
        self.list().iter().map(|(name, held)| (name, held))
    }

    pub(super) fn is_empty(&self) -> bool {
        self.0.is_none()
    }
}

/// A finished flow's answers, read back from their text.
pub(super) fn read_answers(pages: &Pages, finished: &Text) -> Result<Value, StoreError> {
    serde_json::from_str(pages.get(finished))
        .map_err(|e| StoreError::Invalid { detail: format!("a flow's recorded answers do not read back: {e}") })
}
