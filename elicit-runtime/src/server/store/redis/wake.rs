//! Waking the retries that wait in `take`: one subscriber per store on the completions channel,
//! and the local waiters it wakes by step id.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use redis::{Client, RedisError};
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// How often the subscriber pings Redis, so a silently dead connection is noticed.
const SUBSCRIBER_PING: Duration = Duration::from_secs(5);
/// The subscriber's reconnection backoff.
const RESUBSCRIBE_MIN: Duration = Duration::from_millis(50);
const RESUBSCRIBE_MAX: Duration = Duration::from_secs(2);

/// Resolves when the subscriber goes up or down; never, once the subscriber is gone.
pub(super) async fn subscription_changed(live: &mut watch::Receiver<bool>) {
    if live.changed().await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// The retries waiting in `take` in this process, by step id.
#[derive(Default)]
pub(super) struct Waiters {
    by_id: Mutex<HashMap<String, (Arc<Notify>, usize)>>,
}

/// One waiter's registration; removes itself when dropped.
pub(super) struct Waiter<'a> {
    waiters: &'a Waiters,
    id: &'a str,
    pub(super) notify: Arc<Notify>,
}

impl Waiters {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Arc<Notify>, usize)>> {
        // Only plain map updates happen under the lock; a poisoned lock holds a consistent map.
        self.by_id.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn watch<'a>(&'a self, id: &'a str) -> Waiter<'a> {
        let mut map = self.lock();
        let entry = map.entry(id.to_owned()).or_insert_with(|| (Arc::new(Notify::new()), 0));
        entry.1 += 1;
        Waiter { waiters: self, id, notify: entry.0.clone() }
    }

    fn wake(&self, id: &str) {
        if let Some((notify, _)) = self.lock().get(id) {
            notify.notify_waiters();
        }
    }
}

impl Drop for Waiter<'_> {
    fn drop(&mut self) {
        let mut map = self.waiters.lock();
        if let Some(entry) = map.get_mut(self.id) {
            entry.1 -= 1;
            if entry.1 == 0 {
                map.remove(self.id);
            }
        }
    }
}

/// Keeps one subscription to `channel` alive for the life of the store, waking local waiters
/// for every id announced; `live` tells waiters whether they may rely on it.
///
/// On a cluster `clients` are the nodes the store URL names, tried in turn: a `PUBLISH` reaches
/// the subscribers of every node (the cluster bus carries it), so one subscription anywhere
/// hears every completion, and losing its node only moves it to the next one.
pub(super) async fn subscribe_forever(
    clients: Vec<Client>,
    channel: String,
    waiters: Arc<Waiters>,
    live: watch::Sender<bool>,
    timeout: Duration,
) {
    let mut backoff = RESUBSCRIBE_MIN;
    let mut next = 0;
    loop {
        let Some(client) = clients.get(next % clients.len().max(1)) else { return };
        next += 1;
        let subscribed = tokio::time::timeout(timeout, async {
            let mut pubsub = client.get_async_pubsub().await?;
            pubsub.subscribe(&channel).await?;
            Ok::<_, RedisError>(pubsub)
        })
        .await;
        if let Ok(Ok(pubsub)) = subscribed {
            backoff = RESUBSCRIBE_MIN;
            let (mut sink, mut messages) = pubsub.split();
            live.send_replace(true);
            let mut ping = tokio::time::interval_at(Instant::now() + SUBSCRIBER_PING, SUBSCRIBER_PING);
            loop {
                tokio::select! {
                    message = messages.next() => match message {
                        Some(message) => {
                            if let Ok(id) = message.get_payload::<String>() {
                                waiters.wake(&id);
                            }
                        }
                        None => break,
                    },
                    _ = ping.tick() => {
                        let pong = tokio::time::timeout(timeout, sink.ping::<redis::Value>()).await;
                        if !matches!(pong, Ok(Ok(_))) {
                            break;
                        }
                    }
                }
            }
            live.send_replace(false);
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(RESUBSCRIBE_MAX);
    }
}

/// Stops the subscriber when the store goes away.
pub(super) struct AbortOnDrop(pub(super) JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
