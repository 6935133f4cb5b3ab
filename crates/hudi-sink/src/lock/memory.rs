//! An in-process lock for unit tests and deterministic simulations.
//!
//! The record lives behind a tokio mutex and every primitive checks the same conditions as the DynamoDB
//! backend, so a simulation exercises exactly the protocol production runs: contenders sharing one record
//! ([`MemoryLock::contender`]) steal only after seeing a version unchanged for a lease, heartbeats rotate the
//! version, release deletes on condition of owner and version. With a [`ManualClock`](crate::clock::ManualClock)
//! injected through [`MemoryLock::with_clock`], lease expiry happens exactly when the test moves the clock
//! (the tokio sleeps between polls only pace the loops; every decision reads the injected clock).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::Mutex;

use crate::clock::Clock;

use super::engine::Engine;
use super::{
    default_clock, default_owner_name, Expect, LeaseOptions, LeaseStore, Lock, LockError,
    LockGuard, LockRecord,
};

/// The shared record of one in-memory lock.
#[derive(Debug)]
struct MemoryStore {
    describe: String,
    record: Mutex<Option<LockRecord>>,
}

#[async_trait]
impl LeaseStore for MemoryStore {
    fn describe(&self) -> &str {
        &self.describe
    }

    async fn read(&self) -> Result<Option<LockRecord>, LockError> {
        Ok(self.record.lock().await.clone())
    }

    async fn create(
        &self,
        new: &LockRecord,
        expect: Expect<'_>,
    ) -> Result<Option<LockRecord>, LockError> {
        let mut slot = self.record.lock().await;
        let allowed = match (expect, slot.as_ref()) {
            (Expect::Absent, None) => true,
            (Expect::Released(_), Some(cur)) => cur.released,
            (Expect::Stale(seen), Some(cur)) => cur.record_version == seen.record_version,
            _ => false,
        };
        if !allowed {
            return Ok(None);
        }
        *slot = Some(new.clone());
        Ok(Some(new.clone()))
    }

    async fn renew(
        &self,
        held: &LockRecord,
        new_version: &str,
        lease: Duration,
    ) -> Result<Option<LockRecord>, LockError> {
        let mut slot = self.record.lock().await;
        match slot.as_mut() {
            Some(cur) if cur.record_version == held.record_version && cur.owner == held.owner => {
                cur.record_version = new_version.to_string();
                cur.lease_duration = lease;
                Ok(Some(cur.clone()))
            }
            _ => Ok(None),
        }
    }

    async fn remove(&self, held: &LockRecord) -> Result<bool, LockError> {
        let mut slot = self.record.lock().await;
        match slot.as_ref() {
            Some(cur) if cur.record_version == held.record_version && cur.owner == held.owner => {
                *slot = None;
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

/// A lock held in this process. Clients made with [`MemoryLock::contender`] share the record and compete for
/// it like separate processes would.
#[derive(Debug, Clone)]
pub struct MemoryLock {
    engine: Engine,
}

impl MemoryLock {
    /// A new lock record named `name`, with a generated owner name and the monotonic clock.
    pub fn new(name: impl Into<String>, options: LeaseOptions) -> Self {
        let name = name.into();
        let store = Arc::new(MemoryStore {
            describe: format!("memory lock {name}"),
            record: Mutex::new(None),
        });
        Self {
            engine: Engine {
                store,
                key: name,
                owner: default_owner_name(),
                options,
                clock: default_clock(),
            },
        }
    }

    /// With the clock leases are measured with (a [`ManualClock`](crate::clock::ManualClock) to simulate
    /// expiry). Contenders made afterwards share it.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.engine.clock = clock;
        self
    }

    /// With an explicit owner name.
    pub fn with_owner(mut self, owner: impl Into<String>) -> Self {
        self.engine.owner = owner.into();
        self
    }

    /// Another client of the same record, with a fresh owner name, the same options and clock.
    pub fn contender(&self) -> Self {
        let mut engine = self.engine.clone();
        engine.owner = default_owner_name();
        Self { engine }
    }

    /// Releases `record` (the lock client's `releaseLock(LockItem)`): refused with [`LockError::NotOwner`]
    /// without touching storage when it names another owner, and with [`LockError::Lost`] when the current
    /// record no longer carries its owner and version.
    pub async fn release_record(&self, record: &LockRecord) -> Result<(), LockError> {
        self.engine.release_record(record).await
    }

    /// The lease timing.
    pub fn options(&self) -> &LeaseOptions {
        &self.engine.options
    }
}

#[async_trait]
impl Lock for MemoryLock {
    async fn acquire(&self, wait: Duration) -> Result<LockGuard, LockError> {
        self.engine.acquire(wait).await
    }

    async fn current(&self) -> Result<Option<LockRecord>, LockError> {
        self.engine.store.read().await
    }

    fn owner(&self) -> &str {
        &self.engine.owner
    }

    fn describe(&self) -> &str {
        self.engine.describe()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    use super::*;
    use crate::clock::ManualClock;

    /// Lease 3 s of manual time; heartbeat 1 s; poll every 5 ms of real time.
    fn manual(clock: &Arc<ManualClock>) -> MemoryLock {
        let options = LeaseOptions::hudi(Duration::from_secs(3))
            .with_refresh_period(Duration::from_millis(5));
        MemoryLock::new("t", options).with_clock(clock.clone())
    }

    async fn settle() {
        tokio::time::sleep(Duration::from_millis(60)).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn exactly_one_holder_at_a_time() {
        let options = LeaseOptions::hudi(Duration::from_secs(5))
            .with_refresh_period(Duration::from_millis(1));
        let base = MemoryLock::new("t", options);
        let counter = Arc::new(AtomicU64::new(0));
        let inside = Arc::new(AtomicBool::new(false));
        let mut tasks = Vec::new();
        for _ in 0..4 {
            let lock = base.contender();
            let counter = counter.clone();
            let inside = inside.clone();
            tasks.push(tokio::spawn(async move {
                for _ in 0..25 {
                    let guard = lock
                        .acquire(Duration::from_secs(30))
                        .await
                        .expect("acquire");
                    assert!(!inside.swap(true, Ordering::SeqCst), "two holders at once");
                    // A deliberately non-atomic increment: lost updates show overlapping holders.
                    let v = counter.load(Ordering::SeqCst);
                    tokio::task::yield_now().await;
                    counter.store(v + 1, Ordering::SeqCst);
                    guard.ensure_held().await.expect("still held");
                    inside.store(false, Ordering::SeqCst);
                    guard.release().await.expect("release");
                }
            }));
        }
        for t in tasks {
            t.await.expect("task");
        }
        assert_eq!(counter.load(Ordering::SeqCst), 100);
        assert_eq!(base.current().await.expect("read"), None);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn steal_happens_after_one_lease_of_manual_time_and_never_earlier() {
        // The holder's clock stands still (a frozen process believes its lease is fresh); only the contender's
        // clock moves. Expiry is judged by the contender's clock alone, and fencing by the conditional write.
        let holder_clock = Arc::new(ManualClock::new(5_000_000));
        let clock = Arc::new(ManualClock::new(1_000_000));
        let a = manual(&holder_clock);
        let b = a.contender().with_clock(clock.clone());
        let held = a.acquire(Duration::ZERO).await.expect("a acquires");
        held.stop_heartbeat();
        let version = held.record_version();

        let waiter = tokio::spawn(async move { b.acquire(Duration::from_secs(60)).await });
        settle().await; // b has seen the record and started watching it
        clock.advance(2_999);
        settle().await;
        assert!(!waiter.is_finished(), "stolen before the lease ran out");
        clock.advance(1); // exactly one lease: still not more than the lease
        settle().await;
        assert!(!waiter.is_finished(), "stolen at exactly one lease");
        assert_eq!(
            a.current().await.expect("read").map(|r| r.record_version),
            Some(version.clone())
        );
        clock.advance(1);
        let stolen = tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("steal in time")
            .expect("join")
            .expect("b acquires");
        assert_ne!(stolen.owner(), held.owner());
        assert!(held.is_held(), "the frozen holder does not know yet");

        // Fencing: the old guard can neither prove its lease nor delete the new owner's record.
        let err = held.ensure_held().await.expect_err("old lease");
        assert!(
            matches!(err, LockError::Lost { .. })
                && err.holder().map(|h| h.owner.as_str()) == Some(stolen.owner()),
            "{err}"
        );
        assert!(!held.is_held());
        let err = held.release().await.expect_err("old release");
        assert!(matches!(err, LockError::Lost { .. }), "{err}");
        assert_eq!(
            a.current().await.expect("read").map(|r| r.record_version),
            Some(stolen.record_version())
        );
        stolen.ensure_held().await.expect("new owner holds it");
        stolen.release().await.expect("release");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn heartbeat_keeps_the_lease_across_many_leases_of_manual_time() {
        let clock = Arc::new(ManualClock::new(0));
        let a = manual(&clock);
        let b = a.contender();
        let held = a.acquire(Duration::ZERO).await.expect("a acquires");
        let first = held.record_version();
        let waiter = tokio::spawn(async move { b.acquire(Duration::from_secs(30)).await });
        for _ in 0..30 {
            clock.advance(500); // 15 s in steps of half a heartbeat period
            settle().await;
        }
        assert_ne!(
            held.record_version(),
            first,
            "heartbeat rotates the version"
        );
        assert!(held.is_held());
        assert!(!waiter.is_finished(), "a live holder was stolen from");
        held.ensure_held().await.expect("held");
        held.release().await.expect("release");
        let got = tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("in time")
            .expect("join")
            .expect("b acquires after release");
        got.release().await.expect("release");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn timeout_names_the_holder_and_waits_wait_plus_one_lease() {
        let clock = Arc::new(ManualClock::new(0));
        let a = manual(&clock);
        let b = a.contender();
        let held = a.acquire(Duration::ZERO).await.expect("a acquires");
        let owner = held.owner().to_string();
        let waiter = tokio::spawn(async move { b.acquire(Duration::from_millis(1_000)).await });
        settle().await; // the waiter's clock starts now
                        // Keep the holder alive while manual time passes wait + lease = 4 s, and a little more.
        for _ in 0..9 {
            clock.advance(500);
            settle().await;
        }
        let err = tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("gives up")
            .expect("join")
            .expect_err("times out");
        match &err {
            LockError::Timeout { waited, .. } => {
                assert_eq!(err.holder().map(|h| h.owner.as_str()), Some(owner.as_str()));
                assert!(*waited > Duration::from_millis(4_000), "{waited:?}");
            }
            other => panic!("unexpected {other}"),
        }
        assert!(err.to_string().contains(&owner), "{err}");
        held.release().await.expect("release");
    }

    #[tokio::test]
    async fn holder_whose_lease_expired_locally_cannot_prove_it() {
        let clock = Arc::new(ManualClock::new(0));
        let a = manual(&clock);
        let held = a.acquire(Duration::ZERO).await.expect("acquire");
        held.stop_heartbeat();
        clock.advance(3_001);
        assert!(!held.is_held());
        assert_eq!(held.lease_remaining(), Duration::ZERO);
        let err = held.ensure_held().await.expect_err("expired");
        assert!(matches!(err, LockError::Expired { .. }), "{err}");
        // Nobody stole it, so the owner's conditional delete still succeeds.
        held.release().await.expect("release");
        assert_eq!(a.current().await.expect("read"), None);
    }

    #[tokio::test]
    async fn release_by_non_owner_is_refused() {
        let a = MemoryLock::new("t", LeaseOptions::hudi(Duration::from_secs(30)));
        let b = a.contender();
        let held = a.acquire(Duration::ZERO).await.expect("acquire");
        let record = held.record();
        let err = b.release_record(&record).await.expect_err("not owner");
        assert!(matches!(err, LockError::NotOwner { .. }), "{err}");
        // Same version, other owner: refused by the store's condition.
        let forged = LockRecord {
            owner: b.owner().to_string(),
            ..record.clone()
        };
        let err = b.release_record(&forged).await.expect_err("condition");
        assert!(matches!(err, LockError::Lost { .. }), "{err}");
        assert_eq!(a.current().await.expect("read"), Some(held.record()));
        held.ensure_held().await.expect("still held");
        held.release().await.expect("release");
    }

    #[tokio::test]
    async fn released_records_are_taken_over_at_once() {
        let a = MemoryLock::new("t", LeaseOptions::hudi(Duration::from_secs(30)));
        let b = a.contender();
        let held = a.acquire(Duration::ZERO).await.expect("acquire");
        // A record released without deletion, as lock clients with deleteLockOnRelease=false leave it.
        let mut released = held.record();
        released.released = true;
        let placed = a
            .engine
            .store
            .create(&released, Expect::Stale(&held.record()))
            .await
            .expect("mark released");
        assert!(placed.is_some());
        held.stop_heartbeat();
        let started = std::time::Instant::now();
        let got = b
            .acquire(Duration::ZERO)
            .await
            .expect("takes released record");
        assert!(started.elapsed() < Duration::from_secs(1));
        got.release().await.expect("release");
    }
}
