//! The acquire loop of the DynamoDB lock client, shared by every backend: read, then create / take over a
//! released record / steal a record whose version stayed unchanged for a whole lease, else poll again.

use std::sync::Arc;
use std::time::Duration;

use crate::clock::Clock;

use super::{
    duration_from_millis, millis, new_record_version, Expect, LeaseOptions, LeaseStore, LockError,
    LockGuard, LockRecord,
};

/// One client of one lock: the backend, who we are, the timing and the clock leases are measured with.
#[derive(Debug, Clone)]
pub(crate) struct Engine {
    pub(crate) store: Arc<dyn LeaseStore>,
    pub(crate) key: String,
    pub(crate) owner: String,
    pub(crate) options: LeaseOptions,
    pub(crate) clock: Arc<dyn Clock>,
}

/// A held record seen while waiting, with the local time it was first seen at that version.
struct Watched {
    record: LockRecord,
    since: i64,
}

impl Engine {
    pub(crate) fn describe(&self) -> &str {
        self.store.describe()
    }

    /// See [`super::Lock::acquire`].
    pub(crate) async fn acquire(&self, wait: Duration) -> Result<LockGuard, LockError> {
        let handle = tokio::runtime::Handle::try_current().map_err(|_| LockError::NoRuntime {
            lock: self.describe().to_string(),
        })?;
        let start = self.clock.now_millis();
        let mut budget = millis(wait);
        let mut extended = false;
        let mut watched: Option<Watched> = None;
        let mut last_seen: Option<LockRecord> = None;
        let mut last_error: Option<LockError> = None;
        let mut polls = 0u32;
        // Released locks are deleted, so the common case is no record at all: try the conditional create
        // first and read only when it fails (one request instead of two per uncontended acquisition).
        match self.create_if_absent().await {
            Ok(Some((record, renewed_at))) => return Ok(self.won(record, renewed_at, &handle)),
            Ok(None) => {}
            Err(e) if e.is_retryable() => last_error = Some(e),
            Err(e) => return Err(e),
        }
        loop {
            match self
                .attempt(&mut watched, &mut last_seen, &mut budget, &mut extended)
                .await
            {
                Ok(Some((record, renewed_at))) => return Ok(self.won(record, renewed_at, &handle)),
                Ok(None) => {}
                Err(e) if e.is_retryable() => {
                    tracing::warn!(lock = self.describe(), error = %e, "lock acquire attempt failed; retrying");
                    last_error = Some(e);
                }
                Err(e) => return Err(e),
            }
            let elapsed = self.clock.now_millis().saturating_sub(start);
            if elapsed > budget {
                let holder = last_seen.filter(|r| !r.released);
                return Err(LockError::Timeout {
                    lock: self.describe().to_string(),
                    owner: self.owner.clone(),
                    waited: duration_from_millis(elapsed),
                    holder: holder.map(Box::new),
                    last_error: last_error.map(|e| e.to_string()),
                });
            }
            polls += 1;
            tokio::time::sleep(self.options.poll_delay(polls)).await;
        }
    }

    /// The guard of a record this client just wrote.
    fn won(
        &self,
        record: LockRecord,
        renewed_at: i64,
        handle: &tokio::runtime::Handle,
    ) -> LockGuard {
        tracing::info!(
            lock = self.describe(),
            owner = %self.owner,
            version = %record.record_version,
            "lock acquired"
        );
        LockGuard::start(self, record, renewed_at, handle)
    }

    /// A new record written only if there is none. `Ok(Some((record, lease_start)))` when won.
    async fn create_if_absent(&self) -> Result<Option<(LockRecord, i64)>, LockError> {
        let new = self.new_record();
        // Taken before the write: the holder errs on the side of its lease expiring early.
        let lease_start = self.clock.now_millis();
        Ok(self
            .store
            .create(&new, Expect::Absent)
            .await?
            .map(|r| (r, lease_start)))
    }

    fn new_record(&self) -> LockRecord {
        LockRecord {
            key: self.key.clone(),
            owner: self.owner.clone(),
            record_version: new_record_version(),
            lease_duration: self.options.lease_duration,
            released: false,
            sequence: None,
        }
    }

    /// One read and, if the record allows, one conditional write. `Ok(Some((record, lease_start)))` when won.
    async fn attempt(
        &self,
        watched: &mut Option<Watched>,
        last_seen: &mut Option<LockRecord>,
        budget: &mut i64,
        extended: &mut bool,
    ) -> Result<Option<(LockRecord, i64)>, LockError> {
        let current = self.store.read().await?;
        // Stamped after the read returned: a contender errs on the side of the lock not having expired.
        let now = self.clock.now_millis();
        last_seen.clone_from(&current);
        let expect = match &current {
            None => Expect::Absent,
            Some(r) if r.released => Expect::Released(r),
            Some(r) => match watched {
                Some(w)
                    if w.record.record_version == r.record_version
                        && w.record.sequence == r.sequence =>
                {
                    if now.saturating_sub(w.since) > millis(w.record.lease_duration) {
                        tracing::info!(
                            lock = self.describe(),
                            holder = %r.owner,
                            version = %r.record_version,
                            "record version unchanged for a whole lease; stealing the lock"
                        );
                        Expect::Stale(r)
                    } else {
                        return Ok(None);
                    }
                }
                _ => {
                    if !*extended {
                        // Wait at least one lease of the holder, so that a dead holder is always detected.
                        *extended = true;
                        *budget = budget.saturating_add(millis(r.lease_duration));
                    }
                    *watched = Some(Watched {
                        record: r.clone(),
                        since: now,
                    });
                    return Ok(None);
                }
            },
        };
        let new = self.new_record();
        // Taken before the write: the holder errs on the side of its lease expiring early.
        let lease_start = self.clock.now_millis();
        Ok(self
            .store
            .create(&new, expect)
            .await?
            .map(|r| (r, lease_start)))
    }

    /// Releases a record this client owns (the lock client's `releaseLock(LockItem)`): refused without a
    /// request when the record names another owner, and refused by the backend unless the record still
    /// carries this version and owner.
    pub(crate) async fn release_record(&self, record: &LockRecord) -> Result<(), LockError> {
        if record.owner != self.owner {
            return Err(LockError::NotOwner {
                lock: self.describe().to_string(),
                owner: self.owner.clone(),
                holder: record.owner.clone(),
                version: record.record_version.clone(),
            });
        }
        if self.store.remove(record).await? {
            return Ok(());
        }
        let current = self.store.read().await.ok().flatten();
        Err(lost_error(
            self.describe(),
            &self.owner,
            &record.record_version,
            current.as_ref(),
        ))
    }
}

/// [`LockError::Lost`] describing the record found now.
pub(crate) fn lost_error(
    lock: &str,
    owner: &str,
    version: &str,
    current: Option<&LockRecord>,
) -> LockError {
    let current = current.filter(|r| !r.released);
    LockError::Lost {
        lock: lock.to_string(),
        owner: owner.to_string(),
        version: version.to_string(),
        holder: current.cloned().map(Box::new),
    }
}
