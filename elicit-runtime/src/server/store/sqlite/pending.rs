//! The calls waiting for the store's connection while another holds it, and how whoever holds
//! it runs them before letting it go.

use std::sync::{Mutex, MutexGuard, PoisonError};

use super::db::{Db, Job, MAX_BATCH, try_lock};

/// Calls made while another held the connection: whoever holds it runs them, together, before
/// letting it go ([`run_pending`]). First come, first run.
#[derive(Default)]
pub(super) struct Pending(Mutex<Vec<Job>>);

impl Pending {
    fn jobs(&self) -> MutexGuard<'_, Vec<Job>> {
        // Only pushes and takes happen under the lock: a poisoned one still guards a whole list.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn push(&self, job: Job) {
        self.jobs().push(job);
    }

    pub(super) fn is_empty(&self) -> bool {
        self.jobs().is_empty()
    }

    fn take(&self) -> Vec<Job> {
        let mut jobs = self.jobs();
        let at = jobs.len().min(MAX_BATCH);
        let rest = jobs.split_off(at);
        std::mem::replace(&mut *jobs, rest)
    }
}

/// Runs the `pending` calls, a batch at a time (each batch one transaction, each call answered
/// once it is committed), with the connection `held`, then lets the connection go. A call that
/// came after the last look found the connection held, and waits for whoever holds it: so once
/// it is let go, the list is looked at again, and taken up here unless someone else holds the
/// connection by then (they run it). Whether a checkpoint is due (`due`: already due before),
/// for the store's thread.
pub(super) fn run_pending<'a>(
    db: &'a Mutex<Db>,
    mut held: MutexGuard<'a, Db>,
    pending: &Pending,
    mut due: bool,
) -> bool {
    loop {
        let mut answered = Vec::new();
        loop {
            let batch = pending.take();
            if batch.is_empty() {
                break;
            }
            let (deliveries, committed) = held.run_batch(batch);
            due |= held.checkpoint_to_ask();
            answered.push((deliveries, committed));
        }
        drop(held);
        for (deliveries, committed) in answered {
            for deliver in deliveries {
                deliver(committed.clone());
            }
        }
        if pending.is_empty() {
            return due;
        }
        held = match try_lock(db) {
            Some(held) => held,
            None => return due,
        };
    }
}
