//! The time the engine and the in-process store go by, injectable so that expiry (of states, of
//! ledger records, of claims' leases) is tested by moving a clock, never by sleeping.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// A source of the current time.
pub trait Clock: Send + Sync + fmt::Debug {
    /// Now.
    fn now(&self) -> SystemTime;
}

/// The system's clock: the default everywhere.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// A clock that stands still until it is moved: for tests of expiry.
///
/// ```
/// use std::time::Duration;
/// use elicit_runtime::server::{Clock, ManualClock};
///
/// let clock = ManualClock::new();
/// let before = clock.now();
/// clock.advance(Duration::from_secs(60));
/// assert_eq!(clock.now().duration_since(before).unwrap(), Duration::from_secs(60));
/// ```
#[derive(Debug, Clone)]
pub struct ManualClock(Arc<Mutex<SystemTime>>);

impl ManualClock {
    /// A clock showing the system's time now, standing still. Clones share the time.
    pub fn new() -> Self {
        ManualClock(Arc::new(Mutex::new(SystemTime::now())))
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let mut now = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *now += by;
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        ManualClock::new()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}
