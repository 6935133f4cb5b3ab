//! Wall-clock time behind a trait, so that instant generation and lease expiry can be tested with skew.

use std::sync::atomic::{AtomicI64, Ordering};

/// Milliseconds since the Unix epoch, UTC.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Current time in epoch milliseconds.
    fn now_millis(&self) -> i64;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_millis(&self) -> i64 {
        chrono::Utc::now().timestamp_millis()
    }
}

/// A clock that only moves when told to; for tests and simulations.
#[derive(Debug, Default)]
pub struct ManualClock {
    millis: AtomicI64,
}

impl ManualClock {
    /// A clock standing at `millis`.
    pub fn new(millis: i64) -> Self {
        Self {
            millis: AtomicI64::new(millis),
        }
    }

    /// Moves the clock by `delta` milliseconds (may be negative to model skew).
    pub fn advance(&self, delta: i64) {
        self.millis.fetch_add(delta, Ordering::SeqCst);
    }

    /// Sets the clock to `millis`.
    pub fn set(&self, millis: i64) {
        self.millis.store(millis, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_millis(&self) -> i64 {
        self.millis.load(Ordering::SeqCst)
    }
}
