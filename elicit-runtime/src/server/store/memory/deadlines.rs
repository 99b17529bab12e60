//! [`Deadlines`]: when the in-process store's records expire, in one allocation.
//!
//! A finished flow's record lives for minutes, and so does its place in the index of deadlines.
//! In a B-tree, those places are the entries of nodes allocated one by one as records are made,
//! and the nodes end up scattered among every request's short-lived blocks. glibc's allocator then
//! refills its per-thread caches from free chunks strewn across a large, cold heap, and every
//! allocation of every request slows down as the store grows (measured: two-round flows/s 14%
//! lower with the B-tree than with no index at all, a minute of records in the store). A binary
//! heap keeps the whole index in one buffer.
//!
//! The heap is lazy. An entry names its record by key and sequence number, and the record, not
//! the entry, says when it expires: an entry's time is never later than its record's.
//! - Extending a record's life does not touch the heap. When the entry comes due, the record is
//!   found still live and the entry goes back in at the record's new deadline.
//! - Removing a record leaves its entry behind, stale, until it comes due or until stale entries
//!   outnumber the records, when the heap is rebuilt without them ([`compact`], which the task
//!   store's indices use too): the index never holds more than twice as many entries as there
//!   are records, plus [`SLACK`], whatever callers do.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::time::SystemTime;

/// Stale entries tolerated beyond the records' count before the heap is rebuilt, so that a small
/// store is not rebuilt on every removal.
pub(super) const SLACK: usize = 1024;

/// The records' deadlines, earliest first; `K` names a record.
pub(super) struct Deadlines<K> {
    heap: BinaryHeap<Due<K>>,
}

impl<K> Default for Deadlines<K> {
    fn default() -> Self {
        Deadlines { heap: BinaryHeap::new() }
    }
}

/// An entry: the record `key`, made with sequence number `seq`, is due at `at` or later.
struct Due<K> {
    at: SystemTime,
    seq: u64,
    key: K,
}

impl<K> Deadlines<K> {
    /// Puts the record `key` (made with `seq`) in the index at `at`.
    pub(super) fn push(&mut self, at: SystemTime, seq: u64, key: K) {
        self.heap.push(Due { at, seq, key });
    }

    /// Takes out the earliest entry due at `now`, if any: its sequence number and key. The caller
    /// checks it against the record (gone, remade with another number, or extended).
    pub(super) fn pop_due(&mut self, now: SystemTime) -> Option<(u64, K)> {
        if self.heap.peek()?.at > now {
            return None;
        }
        self.heap.pop().map(|due| (due.seq, due.key))
    }

    /// How many entries the index holds, current and stale.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.heap.len()
    }

    /// Rebuilds the index with only the entries `current` says still name their record, when
    /// more than `records` (how many records there are) plus [`SLACK`] entries are stale. Each
    /// record has exactly one current entry, so after a rebuild the heap holds `records` entries
    /// and the next needs that many removals and more: amortised O(1) per removal.
    pub(super) fn compact_if_stale(&mut self, records: usize, mut current: impl FnMut(u64, &K) -> bool) {
        compact(&mut self.heap, records, SLACK, |due| current(due.seq, &due.key));
    }
}

/// Keeps a lazy `index` within twice its `members` and `slack`: past that, the entries `valid`
/// does not keep are dropped, and duplicates with them. Each compaction drops at least as many
/// entries as it keeps, so its cost is amortised over the pushes that made them: an index cannot
/// be grown by writing the same record over and over.
pub(super) fn compact<T: Ord>(index: &mut BinaryHeap<T>, members: usize, slack: usize, valid: impl FnMut(&T) -> bool) {
    if index.len() <= members.saturating_mul(2).saturating_add(slack) {
        return;
    }
    let mut entries = std::mem::take(index).into_vec();
    entries.retain(valid);
    entries.sort_unstable();
    entries.dedup();
    *index = BinaryHeap::from(entries);
}

// Ordered for `BinaryHeap`, a max-heap: the earliest deadline (then the lowest sequence number)
// is the greatest.
impl<K> Ord for Due<K> {
    fn cmp(&self, other: &Self) -> Ordering {
        other.at.cmp(&self.at).then(other.seq.cmp(&self.seq))
    }
}

impl<K> PartialOrd for Due<K> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<K> PartialEq for Due<K> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl<K> Eq for Due<K> {}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::{Deadlines, SLACK};

    fn at(secs: u64) -> std::time::SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn entries_come_due_earliest_first_and_not_before_their_time() {
        let mut deadlines = Deadlines::default();
        deadlines.push(at(30), 1, "c");
        deadlines.push(at(10), 2, "a");
        deadlines.push(at(20), 4, "b2");
        deadlines.push(at(20), 3, "b1");
        assert_eq!(deadlines.pop_due(at(5)), None);
        assert_eq!(deadlines.pop_due(at(25)), Some((2, "a")));
        assert_eq!(deadlines.pop_due(at(25)), Some((3, "b1")));
        assert_eq!(deadlines.pop_due(at(25)), Some((4, "b2")));
        assert_eq!(deadlines.pop_due(at(25)), None);
        assert_eq!(deadlines.pop_due(at(30)), Some((1, "c")));
        assert_eq!(deadlines.len(), 0);
    }

    #[test]
    fn stale_entries_are_dropped_once_they_outnumber_the_records_and_current_ones_kept() {
        let mut deadlines = Deadlines::default();
        // Ten records live (sequence numbers 0..10), and a stream of removed ones.
        for seq in 0..10 {
            deadlines.push(at(100), seq, seq);
        }
        let current = |seq: u64, _: &u64| seq < 10;
        let mut most = 0;
        for seq in 10..100_000 {
            deadlines.compact_if_stale(10, current);
            deadlines.push(at(100), seq, seq);
            most = most.max(deadlines.len());
        }
        assert!(most <= 2 * 10 + SLACK + 1, "the index grew to {most} entries for 10 records");
        deadlines.compact_if_stale(10, current);
        let mut kept = Vec::new();
        while let Some((seq, _)) = deadlines.pop_due(at(100)) {
            if current(seq, &seq) {
                kept.push(seq);
            }
        }
        assert_eq!(kept, (0..10).collect::<Vec<_>>());
    }
}
