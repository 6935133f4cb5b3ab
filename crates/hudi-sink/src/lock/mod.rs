//! The table lock: mutual exclusion for timeline commits, interoperable with Hudi's
//! `DynamoDBBasedLockProvider` so that this sink and the users' Spark jobs never commit at the same time.
//!
//! # Contract
//!
//! A lock here is a **lease**, not an eternal mutex. [`Lock::acquire`] returns a [`LockGuard`] whose record
//! names an owner, a lease duration and a random record version (`recordVersionNumber`). While the guard lives a
//! heartbeat task rewrites the record with a fresh version every `heartbeat_period` (Hudi: lease / 3). A
//! contender that sees *the same* version for longer than the record's lease, measured on **its own monotonic
//! clock**, concludes that the holder is dead and steals the record with a conditional write that succeeds
//! only if the version is still the one it watched. No timestamp is stored or compared across machines, so
//! wall-clock skew does not matter; only the clocks' *rates* must roughly agree.
//!
//! Guarantees, while leases are honoured (every holder renews within its lease, and no clock runs much slower
//! than another):
//!
//! - **Mutual exclusion.** At most one guard is held at any time. Every change of the record is a conditional
//!   write on the version last seen, so of several racing contenders exactly one wins.
//! - **Liveness.** A holder that stops heartbeating (crash, frozen Lambda, dropped guard) is taken over after
//!   one lease plus at most one `refresh_period`, never earlier.
//!
//! A holder *can* lose the lease without noticing at once: a Lambda frozen for longer than the lease, a network
//! partition, a garbage-collection-like pause. Its guard then still exists, but another writer may hold the
//! lock. That is why a committer must **fence**: call [`LockGuard::ensure_held`] right before it writes the
//! completed-instant file. `ensure_held` proves with a conditional write that the record still carries this
//! guard's version (and renews the lease from that moment), or fails. [`LockGuard::record_version`] is the
//! fencing token to log next to the commit. The window that remains (a pause longer than a full lease between
//! `ensure_held` returning and the commit write landing) cannot be closed without a store that checks the token
//! itself, which S3 cannot do; keep the critical section short against the lease (Hudi default 60 s, a commit
//! takes milliseconds) and check [`LockGuard::lease_remaining`] if in doubt.
//!
//! # Protocol (AWS DynamoDB Lock Client, configured as Hudi does)
//!
//! Record: `key` (lock name), `ownerName`, `leaseDuration` (milliseconds as a decimal string),
//! `recordVersionNumber` (UUID), optional `isReleased` = `"1"`, optional binary `data` (Hudi writes none).
//!
//! - **acquire**: read the record (strongly consistent).
//!   - absent: create it, condition `attribute_not_exists(key)`;
//!   - present and released: overwrite, condition `attribute_exists(key) AND isReleased = "1"`;
//!   - present and held: remember its version and the local time of the first sighting, and extend the wait
//!     budget once by its lease; poll after 25 ms, doubling up to 200 ms; if the version changed, start watching anew; if
//!     it stayed the same for more than its `leaseDuration`, steal with condition
//!     `attribute_exists(key) AND recordVersionNumber = <watched>` (the owner is not checked).
//!   - A failed condition means someone else won; keep polling until `wait` (+ the holder's lease, once) has
//!     passed, then fail with [`LockError::Timeout`] naming the holder.
//!   - The local lease starts at the time taken *before* the winning write (conservative).
//! - **heartbeat**: refused locally once the lease has expired without renewal; otherwise
//!   `SET leaseDuration, recordVersionNumber = <new UUID>` with condition
//!   `attribute_exists(key) AND recordVersionNumber = <ours> AND ownerName = <us>`. A failed condition means the
//!   lock was stolen: the guard is marked lost and the heartbeat stops.
//! - **release**: stop the heartbeat, then delete with the same condition as the heartbeat (Hudi releases with
//!   `deleteLockOnRelease = true`). A failed condition means someone else holds it now; nothing is deleted.
//!
//! # Backends
//!
//! The three backends implement only the conditional primitives ([`LeaseStore`]); the acquire loop and the
//! guard (heartbeat, fencing, release) are shared, so they behave identically:
//!
//! - `DynamoDbLock` (module `dynamodb`, feature `aws`): the Hudi-compatible lock for production.
//! - [`FileLock`]: the embedded local mode, on any [`Storage`](crate::storage::Storage) with an atomic
//!   create-if-absent.
//! - [`MemoryLock`]: in-process, for unit tests and simulations, with an injectable clock.

#[cfg(feature = "aws")]
pub mod dynamodb;
mod engine;
mod error;
pub mod file;
mod guard;
pub mod keys;
pub mod memory;

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;

use crate::clock::{Clock, SystemClock};

#[cfg(feature = "aws")]
pub use dynamodb::{
    create_lock_table_if_missing, DynamoDbLock, DynamoDbLockConfig, LockTableBilling,
};
pub use error::LockError;
pub use file::FileLock;
pub use guard::LockGuard;
pub use keys::KEYS;
pub use memory::MemoryLock;

/// `hoodie.write.lock.wait_time_ms`: Hudi uses it both as the acquire wait and as the lease duration of the
/// DynamoDB lock.
pub const WAIT_TIME_MS_KEY: &str = "hoodie.write.lock.wait_time_ms";
/// Default of [`WAIT_TIME_MS_KEY`] (`DEFAULT_ACQUIRE_LOCK_WAIT_TIMEOUT_MS`).
pub const DEFAULT_WAIT_TIME_MS: u64 = 60_000;
/// The lock client's polling period while waiting (`DEFAULT_BUFFER_MS`; Hudi does not change it).
pub const DEFAULT_REFRESH_PERIOD: Duration = Duration::from_millis(1_000);
/// The first sleep of a waiting contender (then doubling up to the refresh period).
const FIRST_POLL_DELAY: Duration = Duration::from_millis(25);
/// The longest sleep of a waiting contender.
const MAX_POLL_DELAY: Duration = Duration::from_millis(200);

/// One lock record as every backend stores it (the DynamoDB item's attributes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockRecord {
    /// `key`: the lock name (DynamoDB partition key value).
    pub key: String,
    /// `ownerName`: who holds (or last held) the lock.
    pub owner: String,
    /// `recordVersionNumber`: a fresh UUID on every acquire and heartbeat; the fencing token.
    pub record_version: String,
    /// `leaseDuration`: how long others must see this version unchanged before stealing.
    pub lease_duration: Duration,
    /// `isReleased` = `"1"`: released without being deleted (not written by Hudi; honoured when found).
    pub released: bool,
    /// Position in a [`FileLock`]'s record log; `None` for the other backends.
    pub sequence: Option<u64>,
}

/// Lease timing: all three are local durations, never compared with another machine's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseOptions {
    /// Written as `leaseDuration`; Hudi uses `hoodie.write.lock.wait_time_ms`.
    pub lease_duration: Duration,
    /// How often the heartbeat renews the record; Hudi uses lease / 3.
    pub heartbeat_period: Duration,
    /// How often a waiting contender re-reads the record (lock client default 1 s).
    pub refresh_period: Duration,
}

impl Default for LeaseOptions {
    fn default() -> Self {
        Self::hudi(Duration::from_millis(DEFAULT_WAIT_TIME_MS))
    }
}

impl LeaseOptions {
    /// The timing Hudi's provider configures: the given lease, heartbeat every lease / 3, refresh 1 s.
    pub fn hudi(lease_duration: Duration) -> Self {
        Self {
            lease_duration,
            heartbeat_period: lease_duration / 3,
            refresh_period: DEFAULT_REFRESH_PERIOD,
        }
    }

    /// Lease and heartbeat from `hoodie.write.lock.wait_time_ms`, as Hudi derives them.
    pub fn from_props(props: &BTreeMap<String, String>) -> Result<Self, LockError> {
        let options = Self::hudi(Duration::from_millis(wait_time_ms(props)?));
        options.validate()?;
        Ok(options)
    }

    /// How long a waiting contender sleeps before its `poll`-th read (from 1): 25 ms, doubling up to 200 ms
    /// (and never more than the refresh period). A lock held for a few requests (a window's join or commit)
    /// changes hands within tens of milliseconds, so a queue of writers at a slot's start passes it quickly;
    /// five reads a second cost nothing next to a writer's wait.
    pub fn poll_delay(&self, poll: u32) -> Duration {
        FIRST_POLL_DELAY
            .saturating_mul(1u32 << poll.saturating_sub(1).min(16))
            .min(MAX_POLL_DELAY)
            .min(self.refresh_period)
    }

    /// With another polling period for waiting contenders (tests use a short one for fast hand-overs).
    pub fn with_refresh_period(mut self, refresh_period: Duration) -> Self {
        self.refresh_period = refresh_period;
        self
    }

    /// With another heartbeat period (must stay at most half the lease).
    pub fn with_heartbeat_period(mut self, heartbeat_period: Duration) -> Self {
        self.heartbeat_period = heartbeat_period;
        self
    }

    /// Checks the lock client's rule `lease >= 2 x heartbeat` (otherwise a slow heartbeat lets the lease lapse)
    /// and that every period is positive.
    pub fn validate(&self) -> Result<(), LockError> {
        let bad = |reason: &str| LockError::Config {
            key: WAIT_TIME_MS_KEY.to_string(),
            value: self.lease_duration.as_millis().to_string(),
            reason: reason.to_string(),
        };
        if self.lease_duration.as_millis() == 0 {
            return Err(bad("the lease duration must be at least 1 ms"));
        }
        if self.heartbeat_period.is_zero() || self.refresh_period.is_zero() {
            return Err(bad("heartbeat and refresh periods must be positive"));
        }
        if self.lease_duration < self.heartbeat_period * 2 {
            return Err(bad(&format!(
                "the heartbeat period ({:?}) must be at most half the lease",
                self.heartbeat_period
            )));
        }
        Ok(())
    }
}

/// `hoodie.write.lock.wait_time_ms` from a property map, default 60000.
pub fn wait_time_ms(props: &BTreeMap<String, String>) -> Result<u64, LockError> {
    match props.get(WAIT_TIME_MS_KEY) {
        None => Ok(DEFAULT_WAIT_TIME_MS),
        Some(v) => match v.trim().parse::<u64>() {
            Ok(ms) if ms > 0 => Ok(ms),
            _ => Err(LockError::Config {
                key: WAIT_TIME_MS_KEY.to_string(),
                value: v.clone(),
                reason: "expected a positive number of milliseconds".to_string(),
            }),
        },
    }
}

/// A table lock. See the module doc for the contract every implementation keeps.
#[async_trait]
pub trait Lock: Send + Sync + Debug {
    /// Acquires the lock, polling until `wait` has passed (plus, once, the lease of a holder seen, so that a
    /// dead holder can always be detected), then fails with [`LockError::Timeout`] naming the holder. The
    /// returned guard heartbeats until released or dropped.
    async fn acquire(&self, wait: Duration) -> Result<LockGuard, LockError>;

    /// The current record, read consistently, without acquiring anything (for diagnostics and the CLI).
    async fn current(&self) -> Result<Option<LockRecord>, LockError>;

    /// This client's owner name, as written to `ownerName`.
    fn owner(&self) -> &str;

    /// The lock, for messages (`dynamodb table <t> key <k>`, `<base>/.hoodie/.lock/<name>`, ...).
    fn describe(&self) -> &str;
}

/// What a conditional create expects to find.
#[derive(Debug, Clone, Copy)]
pub enum Expect<'a> {
    /// No record at all (`attribute_not_exists(key)`).
    Absent,
    /// This released record (`attribute_exists(key) AND isReleased = "1"`).
    Released(&'a LockRecord),
    /// This held record, unchanged (`attribute_exists(key) AND recordVersionNumber = <its version>`).
    Stale(&'a LockRecord),
}

/// The conditional primitives a lock backend provides; [`Lock`] implementations drive them through the shared
/// acquire loop and [`LockGuard`]. Each call is one atomic compare-and-set on the record, or a read.
#[async_trait]
pub trait LeaseStore: Send + Sync + Debug {
    /// The lock, for messages.
    fn describe(&self) -> &str;

    /// The current record (strongly consistent), or `None` if there is none.
    async fn read(&self) -> Result<Option<LockRecord>, LockError>;

    /// Writes `new` if the record is as `expect` says; `Ok(None)` when the condition failed.
    async fn create(
        &self,
        new: &LockRecord,
        expect: Expect<'_>,
    ) -> Result<Option<LockRecord>, LockError>;

    /// Rotates the version of `held` to `new_version` and writes `lease` if the record still carries the
    /// version and owner of `held`; `Ok(None)` when it does not.
    async fn renew(
        &self,
        held: &LockRecord,
        new_version: &str,
        lease: Duration,
    ) -> Result<Option<LockRecord>, LockError>;

    /// Releases `held` if the record still carries its version and owner; `Ok(false)` when it does not.
    async fn remove(&self, held: &LockRecord) -> Result<bool, LockError>;
}

/// Local monotonic time expressed as epoch milliseconds: the wall clock read once at construction, advanced by
/// [`Instant`]. Leases are measured with it, as the lock client measures them with `System.nanoTime`, so that a
/// wall-clock step (NTP, VM resume) can neither shorten nor stretch a lease.
#[derive(Debug, Clone, Copy)]
pub struct MonotonicClock {
    origin: Instant,
    origin_millis: i64,
}

impl MonotonicClock {
    /// A clock starting at the current wall-clock time.
    pub fn new() -> Self {
        Self {
            origin: Instant::now(),
            origin_millis: SystemClock.now_millis(),
        }
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for MonotonicClock {
    fn now_millis(&self) -> i64 {
        self.origin_millis
            .saturating_add(i64::try_from(self.origin.elapsed().as_millis()).unwrap_or(i64::MAX))
    }
}

/// The default clock for locks.
pub(crate) fn default_clock() -> Arc<dyn Clock> {
    Arc::new(MonotonicClock::new())
}

/// An owner name as the lock client makes one: the host name followed directly by a random UUID, unique per
/// client instance so that two clients on one host never share a lease.
pub fn default_owner_name() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.trim().is_empty())
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_string())
                .filter(|h| !h.is_empty())
        })
        .unwrap_or_else(|| "localhost".to_string());
    format!("{}{}", host.trim(), uuid::Uuid::new_v4())
}

/// A fresh `recordVersionNumber`.
pub(crate) fn new_record_version() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Milliseconds of a duration as `i64`, saturating.
pub(crate) fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// A non-negative millisecond difference as a duration.
pub(crate) fn duration_from_millis(ms: i64) -> Duration {
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_waiting_contender_polls_soon_then_backs_off_to_the_refresh_period() {
        let d = LeaseOptions::default();
        let delays: Vec<u128> = (1..=8).map(|n| d.poll_delay(n).as_millis()).collect();
        assert_eq!(delays, vec![25, 50, 100, 200, 200, 200, 200, 200]);
        assert_eq!(d.poll_delay(u32::MAX), Duration::from_millis(200));
        let short = d.with_refresh_period(Duration::from_millis(60));
        assert_eq!(short.poll_delay(3), Duration::from_millis(60));
    }

    #[test]
    fn hudi_timing_from_wait_time() {
        let mut props = BTreeMap::new();
        assert_eq!(
            LeaseOptions::from_props(&props).ok(),
            Some(LeaseOptions::default())
        );
        let d = LeaseOptions::default();
        assert_eq!(d.lease_duration, Duration::from_secs(60));
        assert_eq!(d.heartbeat_period, Duration::from_secs(20));
        assert_eq!(d.refresh_period, Duration::from_secs(1));
        props.insert(WAIT_TIME_MS_KEY.to_string(), "1500".to_string());
        let o = LeaseOptions::from_props(&props).expect("valid");
        assert_eq!(o.lease_duration, Duration::from_millis(1500));
        assert_eq!(o.heartbeat_period, Duration::from_millis(500));
        for bad in ["0", "-1", "abc", ""] {
            props.insert(WAIT_TIME_MS_KEY.to_string(), bad.to_string());
            let err = LeaseOptions::from_props(&props).expect_err(bad);
            assert!(err.to_string().contains(WAIT_TIME_MS_KEY), "{err}");
        }
    }

    #[test]
    fn heartbeat_must_be_at_most_half_the_lease() {
        let o = LeaseOptions::hudi(Duration::from_secs(1))
            .with_heartbeat_period(Duration::from_millis(501));
        assert!(o.validate().is_err());
        let o = o.with_heartbeat_period(Duration::from_millis(500));
        assert!(o.validate().is_ok());
    }

    #[test]
    fn owner_names_are_unique_and_start_with_the_host() {
        let a = default_owner_name();
        let b = default_owner_name();
        assert_ne!(a, b);
        assert!(a.len() > 36, "{a}");
    }

    #[test]
    fn monotonic_clock_never_goes_back() {
        let c = MonotonicClock::new();
        let mut last = c.now_millis();
        for _ in 0..1000 {
            let now = c.now_millis();
            assert!(now >= last);
            last = now;
        }
    }
}
