//! The held lease: heartbeat task, fencing check and release, shared by every backend.
//!
//! One async mutex (`op`) serialises every conditional write of a guard (heartbeat, `ensure_held`, release):
//! two concurrent rotations of the record version would otherwise make one of them fail its condition and
//! wrongly report the lock as stolen.
//!
//! A write whose outcome is unknown (timeout, dropped connection) may have rotated the version anyway. Its new
//! version is remembered; when a later conditional write fails, the record is read once, and if it carries
//! this owner and one of those versions the guard adopts it instead of declaring the lease lost. Versions are
//! random UUIDs, so a match proves that our own write landed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::clock::Clock;

use super::engine::{lost_error, Engine};
use super::{
    duration_from_millis, millis, new_record_version, LeaseOptions, LeaseStore, LockError,
    LockRecord,
};

/// At most this many versions of unknown outcome are remembered.
const MAX_AMBIGUOUS: usize = 16;

/// A held lock. While it lives a background task renews the lease every `heartbeat_period`; it must be given
/// back with [`LockGuard::release`]. Dropping it only stops the heartbeat (no async work can run in `Drop`): the
/// record then stays until others see it unchanged for a whole lease and take it over.
#[derive(Debug)]
pub struct LockGuard {
    inner: Arc<Inner>,
    heartbeat: Option<JoinHandle<()>>,
}

#[derive(Debug)]
struct Inner {
    store: Arc<dyn LeaseStore>,
    clock: Arc<dyn Clock>,
    options: LeaseOptions,
    owner: String,
    describe: String,
    state: Mutex<State>,
    op: tokio::sync::Mutex<()>,
    stopped: AtomicBool,
    wake: Notify,
}

#[derive(Debug)]
struct State {
    record: LockRecord,
    /// Local time taken just before the last successful write of `record`.
    renewed_at: i64,
    status: Status,
    /// Versions written by requests whose outcome is unknown.
    ambiguous: Vec<String>,
}

#[derive(Debug, Clone)]
enum Status {
    Held,
    Lost { current: Option<LockRecord> },
    Expired { since: i64 },
    Released,
}

impl LockGuard {
    pub(crate) fn start(
        engine: &Engine,
        record: LockRecord,
        renewed_at: i64,
        handle: &tokio::runtime::Handle,
    ) -> Self {
        let inner = Arc::new(Inner {
            store: engine.store.clone(),
            clock: engine.clock.clone(),
            options: engine.options,
            owner: engine.owner.clone(),
            describe: engine.describe().to_string(),
            state: Mutex::new(State {
                record,
                renewed_at,
                status: Status::Held,
                ambiguous: Vec::new(),
            }),
            op: tokio::sync::Mutex::new(()),
            stopped: AtomicBool::new(false),
            wake: Notify::new(),
        });
        let heartbeat = handle.spawn(heartbeat_loop(inner.clone()));
        Self {
            inner,
            heartbeat: Some(heartbeat),
        }
    }

    /// The fencing token: the `recordVersionNumber` this guard holds now. It changes with every heartbeat, so
    /// read it right after [`LockGuard::ensure_held`] to log it with a commit.
    pub fn record_version(&self) -> String {
        self.inner.state().record.record_version.clone()
    }

    /// The record this guard holds now.
    pub fn record(&self) -> LockRecord {
        self.inner.state().record.clone()
    }

    /// This guard's owner name.
    pub fn owner(&self) -> &str {
        &self.inner.owner
    }

    /// The lock, for messages.
    pub fn describe(&self) -> &str {
        &self.inner.describe
    }

    /// The lease duration written to the record.
    pub fn lease_duration(&self) -> Duration {
        self.inner.options.lease_duration
    }

    /// How much of the lease is left by the local clock since the last successful renewal; zero once the lease
    /// is known lost or has expired. Nobody can steal the lock before this has run out.
    pub fn lease_remaining(&self) -> Duration {
        let st = self.inner.state();
        if !matches!(st.status, Status::Held) {
            return Duration::ZERO;
        }
        let age = self.inner.clock.now_millis().saturating_sub(st.renewed_at);
        duration_from_millis(millis(self.inner.options.lease_duration).saturating_sub(age))
    }

    /// Whether the lease is held as far as this process knows (no failed condition, not expired locally). Not
    /// a proof: use [`LockGuard::ensure_held`] before acting on the lock.
    pub fn is_held(&self) -> bool {
        let st = self.inner.state();
        matches!(st.status, Status::Held)
            && self.inner.clock.now_millis().saturating_sub(st.renewed_at)
                <= millis(self.inner.options.lease_duration)
    }

    /// Proves that the lease is still ours, right now, by renewing it with a conditional write (new record
    /// version, condition: our owner and our last version). On success nobody can take the lock over for a full
    /// lease from the start of this call. Fails with [`LockError::Lost`] when the record was stolen, released
    /// or deleted, with [`LockError::Expired`] when no renewal succeeded within a lease (someone may be
    /// stealing it), or with a backend error (the lease is then unproven: do not commit).
    ///
    /// Call it immediately before writing a commit file, so that a writer whose lease lapsed cannot commit.
    pub async fn ensure_held(&self) -> Result<(), LockError> {
        let _op = self.inner.op.lock().await;
        self.inner.renew().await
    }

    /// Stops the heartbeat without releasing: the lease then lapses after one lease duration unless
    /// [`LockGuard::ensure_held`] renews it. Models a frozen holder in tests; also for callers that renew
    /// explicitly.
    pub fn stop_heartbeat(&self) {
        self.inner.stop();
    }

    /// Releases the lock: stops the heartbeat, then removes the record on condition that it still carries our
    /// owner and version. Fails with [`LockError::Lost`] when someone else holds it now (nothing of theirs is
    /// touched), or with a backend error (the record then stays until it is taken over after one lease).
    pub async fn release(mut self) -> Result<(), LockError> {
        let inner = self.inner.clone();
        let _op = inner.op.lock().await;
        inner.stop();
        if let Some(task) = self.heartbeat.take() {
            // The task is not inside a request: that needs `op`, which we hold.
            task.abort();
        }
        let record = inner.state().record.clone();
        let mut result = inner.store.remove(&record).await;
        if let Ok(false) = result {
            if let Some(adopted) = inner.reconcile(&record).await {
                result = inner.store.remove(&adopted).await;
            }
        }
        match result {
            Ok(true) => {
                inner.state().status = Status::Released;
                tracing::info!(lock = %inner.describe, owner = %inner.owner, "lock released");
                Ok(())
            }
            Ok(false) => {
                let current = inner.store.read().await.ok().flatten();
                let err = lost_error(
                    &inner.describe,
                    &inner.owner,
                    &record.record_version,
                    current.as_ref(),
                );
                inner.state().status = Status::Lost { current };
                tracing::warn!(error = %err, "lock release refused: the lock has already been stolen");
                Err(err)
            }
            Err(e) => Err(e),
        }
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        // Best effort and synchronous: the task sees the flag before its next write and exits. It is not
        // aborted, so that a renewal in flight completes instead of leaving an unknown version behind.
        self.inner.stop();
        self.heartbeat.take();
    }
}

impl Inner {
    fn state(&self) -> MutexGuard<'_, State> {
        // No code panics while holding it; recover the data rather than propagate a poison.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        self.wake.notify_one();
    }

    fn stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }

    fn lease_ms(&self) -> i64 {
        millis(self.options.lease_duration)
    }

    /// The error for a guard that is no longer held, if it is not.
    fn status_error(&self, st: &State) -> Option<LockError> {
        let version = st.record.record_version.clone();
        match &st.status {
            Status::Held => None,
            Status::Lost { current } => Some(lost_error(
                &self.describe,
                &self.owner,
                &version,
                current.as_ref(),
            )),
            Status::Released => Some(lost_error(&self.describe, &self.owner, &version, None)),
            Status::Expired { since } => Some(LockError::Expired {
                lock: self.describe.clone(),
                owner: self.owner.clone(),
                version,
                since: duration_from_millis(*since),
                lease: self.options.lease_duration,
            }),
        }
    }

    /// One renewal; the caller holds `op`.
    async fn renew(&self) -> Result<(), LockError> {
        // Two rounds at most: the second after adopting a version written by an earlier ambiguous request.
        for _ in 0..2 {
            let record = {
                let mut st = self.state();
                if let Some(e) = self.status_error(&st) {
                    return Err(e);
                }
                let age = self.clock.now_millis().saturating_sub(st.renewed_at);
                if age > self.lease_ms() {
                    st.status = Status::Expired { since: age };
                    return Err(self.expired(&st, age));
                }
                st.record.clone()
            };
            let new_version = new_record_version();
            let started = self.clock.now_millis();
            match self
                .store
                .renew(&record, &new_version, self.options.lease_duration)
                .await
            {
                Ok(Some(renewed)) => {
                    let mut st = self.state();
                    st.record = renewed;
                    st.renewed_at = started;
                    st.ambiguous.clear();
                    let took = self.clock.now_millis().saturating_sub(started);
                    if took > self.lease_ms() {
                        st.status = Status::Expired { since: took };
                        return Err(self.expired(&st, took));
                    }
                    tracing::debug!(lock = %self.describe, version = %st.record.record_version, "lease renewed");
                    return Ok(());
                }
                Ok(None) => match self.reconcile(&record).await {
                    Some(adopted) => {
                        let mut st = self.state();
                        st.record = adopted;
                        // `renewed_at` stays: the adopted write happened at some unknown time after it.
                        continue;
                    }
                    None => {
                        let current = self.store.read().await.ok().flatten();
                        let err = lost_error(
                            &self.describe,
                            &self.owner,
                            &record.record_version,
                            current.as_ref(),
                        );
                        self.state().status = Status::Lost { current };
                        tracing::warn!(error = %err, "lock lost: someone else acquired it");
                        return Err(err);
                    }
                },
                Err(e) => {
                    let mut st = self.state();
                    st.ambiguous.push(new_version);
                    if st.ambiguous.len() > MAX_AMBIGUOUS {
                        st.ambiguous.remove(0);
                    }
                    return Err(e);
                }
            }
        }
        let st = self.state();
        Err(lost_error(
            &self.describe,
            &self.owner,
            &st.record.record_version,
            None,
        ))
    }

    fn expired(&self, st: &State, age: i64) -> LockError {
        LockError::Expired {
            lock: self.describe.clone(),
            owner: self.owner.clone(),
            version: st.record.record_version.clone(),
            since: duration_from_millis(age),
            lease: self.options.lease_duration,
        }
    }

    /// After a failed condition: the current record if it is ours under a version of unknown outcome.
    async fn reconcile(&self, expected: &LockRecord) -> Option<LockRecord> {
        let candidates = self.state().ambiguous.clone();
        if candidates.is_empty() {
            return None;
        }
        let current = self.store.read().await.ok().flatten()?;
        let ours = !current.released
            && current.owner == self.owner
            && current.record_version != expected.record_version
            && candidates.contains(&current.record_version);
        if ours {
            tracing::info!(lock = %self.describe, version = %current.record_version, "adopting own renewal of unknown outcome");
            self.state().ambiguous.clear();
            Some(current)
        } else {
            None
        }
    }
}

/// Renews the lease every `heartbeat_period` (measured with the guard's clock) until stopped, lost or expired.
/// Wakes at least every `refresh_period` so that an injected clock that jumps is noticed promptly.
async fn heartbeat_loop(inner: Arc<Inner>) {
    let period = millis(inner.options.heartbeat_period);
    let poll = inner
        .options
        .refresh_period
        .min(inner.options.heartbeat_period);
    let mut retry_at = i64::MIN;
    loop {
        if inner.stopped() {
            return;
        }
        let due = {
            let st = inner.state();
            if !matches!(st.status, Status::Held) {
                return;
            }
            st.renewed_at.saturating_add(period).max(retry_at)
        };
        let now = inner.clock.now_millis();
        if now < due {
            let nap = duration_from_millis(due - now).min(poll);
            tokio::select! {
                _ = inner.wake.notified() => {}
                _ = tokio::time::sleep(nap) => {}
            }
            continue;
        }
        let _op = inner.op.lock().await;
        if inner.stopped() {
            return;
        }
        // `ensure_held` may have renewed while we waited for `op`.
        if inner.clock.now_millis() < inner.state().renewed_at.saturating_add(period) {
            continue;
        }
        match inner.renew().await {
            Ok(()) => retry_at = i64::MIN,
            Err(e) if e.is_lease_lost() => {
                tracing::warn!(error = %e, "heartbeat stopped");
                return;
            }
            Err(e) => {
                tracing::warn!(error = %e, "heartbeat failed; retrying");
                retry_at = inner.clock.now_millis().saturating_add((period / 4).max(1));
            }
        }
    }
}
