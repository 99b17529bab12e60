//! The flow ledger on the store's connection: one row per flow, its slots a small JSON object.
//!
//! A slot is `{"t": TOKEN, "u": UNTIL}` while claimed (`UNTIL`: the lease's end, ms since the
//! Unix epoch) and `{"v": VALUE}` once recorded; `finished` holds the answers' JSON text as the
//! engine wrote it.

use std::collections::HashMap;
use std::time::Duration;

use rusqlite::params;
use serde_json::{Map, Value, json};

use super::db::{Db, ms_of};
use crate::server::store::{Claim, Finish, FlowOwner, LedgerSnapshot, RecordKind, Slot, StoreError};

/// How much longer than asked an extension keeps a flow's record: the rounds of a flow (or the
/// replays of one) that extend it within this long of each other share one write, and a round
/// that only reads the flow commits nothing.
const EXTEND_SLACK_MS: i64 = 1_000;

/// A flow's row as read.
pub(super) struct FlowRow {
    slots: Map<String, Value>,
    finished: Option<String>,
}

/// What a slot holds.
enum Held<'a> {
    Claimed { token: &'a str, until: i64 },
    Recorded(&'a Value),
}

fn held(slot: &Value) -> Option<Held<'_>> {
    if let Some(value) = slot.get("v") {
        return Some(Held::Recorded(value));
    }
    Some(Held::Claimed { token: slot.get("t")?.as_str()?, until: slot.get("u")?.as_i64()? })
}

impl Db {
    /// The live row of `flow`, its life extended to at least `ttl` from now; created (within the
    /// cap and its owner's quota) when missing and `create` names its owner.
    fn flow(&mut self, flow: &str, ttl: Duration, create: Option<&FlowOwner>) -> Result<Option<FlowRow>, StoreError> {
        let now = self.now();
        let expires = now.saturating_add(ms_of(ttl));
        let row = self.row("SELECT slots, finished, expires FROM flows WHERE id = ?1", [flow], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, Option<String>>(1)?, row.get::<_, i64>(2)?))
        })?;
        match row {
            Some((slots, finished, until)) if until > now => {
                if until < expires {
                    let later = expires.saturating_add(EXTEND_SLACK_MS);
                    self.exec("UPDATE flows SET expires = ?2 WHERE id = ?1", params![flow, later])?;
                }
                let slots = match self.json(&slots, "a flow's slots")? {
                    Value::Object(slots) => slots,
                    _ => return Err(self.invalid("a flow's slots are not an object")),
                };
                Ok(Some(FlowRow { slots, finished }))
            }
            expired => {
                if expired.is_some() {
                    self.delete_flow(flow)?;
                }
                let Some(owner) = create else { return Ok(None) };
                self.room(RecordKind::Flow)?;
                let owner = owner.name();
                self.owner_room(&owner)?;
                self.exec(
                    "INSERT INTO flows (id, slots, finished, expires, owner) VALUES (?1, '{}', NULL, ?2, ?3)",
                    params![flow, expires, owner],
                )?;
                self.flow_rows += 1;
                *self.flow_owners.entry(owner).or_default() += 1;
                Ok(Some(FlowRow { slots: Map::new(), finished: None }))
            }
        }
    }

    /// Room for one more flow of `owner` (a [`FlowOwner::name`]) within its quota: at the quota,
    /// every expired record is swept first.
    fn owner_room(&mut self, owner: &str) -> Result<(), StoreError> {
        let cap = self.caps.flows_per_owner;
        let over = |db: &Db| db.flow_owners.get(owner).is_some_and(|held| *held >= cap);
        if over(self) {
            self.sweep(i64::MAX);
        }
        if over(self) {
            return Err(StoreError::Quota { kind: RecordKind::Flow, cap });
        }
        Ok(())
    }

    /// Deletes the row of `flow`, if there is one.
    fn delete_flow(&mut self, flow: &str) -> Result<(), StoreError> {
        // Read, then deleted: a `RETURNING` builds a temporary B-tree (see `Db::delete_expired`).
        if let Some(owner) = self.row("SELECT owner FROM flows WHERE id = ?1", [flow], |row| row.get(0))? {
            self.exec("DELETE FROM flows WHERE id = ?1", [flow])?;
            self.flow_gone(owner);
        }
        Ok(())
    }

    fn invalid(&self, what: &str) -> StoreError {
        StoreError::Invalid { detail: format!("{}: {what}", self.name) }
    }

    fn write_slots(&self, flow: &str, slots: &Map<String, Value>) -> Result<(), StoreError> {
        let text = Value::Object(slots.clone()).to_string();
        self.exec("UPDATE flows SET slots = ?2 WHERE id = ?1", params![flow, text]).map(drop)
    }

    pub(super) fn claim(
        &mut self,
        flow: &str,
        owner: &FlowOwner,
        name: &str,
        token: &str,
        lease: Duration,
        ttl: Duration,
    ) -> Result<Claim, StoreError> {
        let now = self.now();
        let Some(mut row) = self.flow(flow, ttl, Some(owner))? else {
            return Err(self.invalid("a flow record went missing"));
        };
        let claim = json!({"t": token, "u": now.saturating_add(ms_of(lease))});
        match row.slots.get(name).map(held) {
            Some(Some(Held::Recorded(value))) => return Ok(Claim::Done(value.clone())),
            // A finished flow runs nothing more, a slot left claimed (a stale lease, a retried
            // claim) included.
            _ if row.finished.is_some() => return Ok(Claim::Finished),
            Some(Some(Held::Claimed { token: holder, until })) if holder != token && until > now => {
                return Ok(Claim::Busy);
            }
            Some(_) => {}
            None if row.finished.is_some() => return Ok(Claim::Finished),
            None => {}
        }
        row.slots.insert(name.to_owned(), claim);
        self.write_slots(flow, &row.slots)?;
        Ok(Claim::Run)
    }

    pub(super) fn record(
        &mut self,
        flow: &str,
        name: &str,
        token: &str,
        value: Value,
        ttl: Duration,
    ) -> Result<(), StoreError> {
        let mut row = self.flow(flow, ttl, None)?.ok_or(StoreError::ClaimLost)?;
        match row.slots.get(name).and_then(held) {
            Some(Held::Claimed { token: holder, .. }) if holder == token => {}
            Some(Held::Recorded(recorded)) if *recorded == value => return Ok(()),
            _ => return Err(StoreError::ClaimLost),
        }
        row.slots.insert(name.to_owned(), json!({"v": value}));
        self.write_slots(flow, &row.slots)
    }

    pub(super) fn abandon(&mut self, flow: &str, name: &str, token: &str) -> Result<(), StoreError> {
        let now = self.now();
        let row = self.row(
            "SELECT slots, finished IS NOT NULL FROM flows WHERE id = ?1 AND expires > ?2",
            params![flow, now],
            |row| Ok((row.get::<_, String>(0)?, row.get::<_, bool>(1)?)),
        )?;
        let Some((slots, finished)) = row else { return Ok(()) };
        let Value::Object(mut slots) = self.json(&slots, "a flow's slots")? else {
            return Err(self.invalid("a flow's slots are not an object"));
        };
        if !matches!(slots.get(name).and_then(held), Some(Held::Claimed { token: holder, .. }) if holder == token) {
            return Ok(());
        }
        slots.remove(name);
        if slots.is_empty() && !finished {
            return self.delete_flow(flow);
        }
        self.write_slots(flow, &slots)
    }

    pub(super) fn finish(
        &mut self,
        flow: &str,
        owner: &FlowOwner,
        answers: &str,
        seen: &[String],
        ttl: Duration,
    ) -> Result<Finish, StoreError> {
        let now = self.now();
        let Some(row) = self.flow(flow, ttl, Some(owner))? else {
            return Err(self.invalid("a flow record went missing"));
        };
        if let Some(already) = &row.finished {
            return Ok(Finish::Already(self.json(already, "a flow's answers")?));
        }
        let unseen = row.slots.iter().any(|(name, slot)| {
            !seen.contains(name) && !matches!(held(slot), Some(Held::Claimed { until, .. }) if until <= now)
        });
        if unseen {
            return Ok(Finish::Conflict);
        }
        self.exec("UPDATE flows SET finished = ?2 WHERE id = ?1", params![flow, answers])?;
        Ok(Finish::Recorded)
    }

    pub(super) fn finished(&mut self, flow: &str) -> Result<Option<Value>, StoreError> {
        let now = self.now();
        let text =
            self.row("SELECT finished FROM flows WHERE id = ?1 AND expires > ?2", params![flow, now], |row| {
                row.get::<_, Option<String>>(0)
            })?;
        text.flatten().map(|text| self.json(&text, "a flow's answers")).transpose()
    }

    pub(super) fn extend(&mut self, flow: &str, ttl: Duration) -> Result<(), StoreError> {
        self.flow(flow, ttl, None).map(drop)
    }

    pub(super) fn snapshot(&mut self, flow: &str, ttl: Duration) -> Result<LedgerSnapshot, StoreError> {
        let Some(row) = self.flow(flow, ttl, None)? else { return Ok(LedgerSnapshot::default()) };
        let recorded: HashMap<Slot, Value> = row
            .slots
            .iter()
            .filter_map(|(name, slot)| match held(slot)? {
                Held::Recorded(value) => Some((Slot::from_name(name)?, value.clone())),
                Held::Claimed { .. } => None,
            })
            .collect();
        let finished = row.finished.as_deref().map(|text| self.json(text, "a flow's answers")).transpose()?;
        Ok(LedgerSnapshot { finished, recorded })
    }
}
