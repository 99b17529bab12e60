//! Bounded waits for a condition: the one way a test waits. Each polls its condition until it
//! holds and fails, naming what it waited for, once the bound has passed; nothing asserts how long
//! the wait took.

use std::future::Future;
use std::time::{Duration, Instant};

/// How often a condition is looked at again.
const POLL: Duration = Duration::from_millis(20);

/// Blocks until `condition` holds; panics with `what` if it does not within `bound`.
pub fn until(bound: Duration, what: &str, condition: impl FnMut() -> bool) {
    until_every(bound, POLL, what, condition);
}

/// As [`until`], looking at `condition` every `every`: for a condition that is costly to look
/// at (a request to a server).
pub fn until_every(bound: Duration, every: Duration, what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + bound;
    while !condition() {
        assert!(Instant::now() < deadline, "waited {bound:?} for {what}, in vain");
        std::thread::sleep(every);
    }
}

/// Waits (without blocking the runtime) until `condition` resolves to true; panics with `what`
/// if it does not within `bound`.
pub async fn until_async<F, Fut>(bound: Duration, what: &str, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + bound;
    while !condition().await {
        assert!(tokio::time::Instant::now() < deadline, "waited {bound:?} for {what}, in vain");
        tokio::time::sleep(POLL).await;
    }
}

/// Awaits `future`; panics with `what` if it has not finished within `bound`.
pub async fn finished<T>(bound: Duration, what: &str, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(bound, future).await {
        Ok(value) => value,
        Err(_) => panic!("waited {bound:?} for {what}, in vain"),
    }
}

/// Polls `future` once, so that whatever it registers on its first look (a waiter's interest, a
/// request sent) is in place before the test goes on; true if it is still pending.
pub async fn first_look<F: Future + Unpin>(future: &mut F) -> bool {
    std::future::poll_fn(|cx| std::task::Poll::Ready(std::pin::Pin::new(&mut *future).poll(cx).is_pending())).await
}
