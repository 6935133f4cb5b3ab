//! A lock kept in the table's own storage, for the local embedded mode: no DynamoDB needed, and it works on any
//! [`Storage`] whose `put_if_absent` is atomic and whose `list` is strongly consistent (the local file system,
//! S3 with conditional writes).
//!
//! # Why a log of records, not one rewritten object
//!
//! The obvious layout, one object `.hoodie/.lock/<name>` created with `put_if_absent` and rewritten by each
//! heartbeat, has a race that plain storage cannot close: storage offers no compare-and-swap, so "rewrite only
//! if it is still ours" is a read followed by a write. Between the two a contender can steal the lock, and the
//! late rewrite then silently overwrites the thief's record: both believe they hold the lock. Stealing by
//! delete + create has the same hole (two thieves delete each other's fresh record).
//!
//! So every change of the record creates a **new** object instead, in a directory:
//! `.hoodie/.lock/<name>/<sequence, 20 digits>.json`. The object with the highest sequence is the current
//! record. Objects are immutable. A compare-and-swap from sequence `k` is:
//!
//! 0. read record `k` and check the condition the DynamoDB backend puts on the item (same owner and version
//!    for a heartbeat or release, same version for a steal, released for a take-over); a record that is gone
//!    was superseded, so the condition fails;
//! 1. `put_if_absent(k + 1)`: of several racers exactly one creates it;
//! 2. list the directory: if an object above `k + 1` exists, the put only re-created an old, already collected
//!    sequence (a writer that slept through several changes), and the swap failed: the stray object is deleted;
//! 3. otherwise the swap won; objects below `k + 1` are deleted (collection, best effort).
//!
//! This is linearizable because the current (highest) object is never deleted and a release appends a released
//! record instead of deleting one: the highest sequence only grows, so step 2 can never be fooled. The JSON
//! carries the DynamoDB attribute names (`key`, `ownerName`, `leaseDuration` as a millisecond string,
//! `recordVersionNumber`, `isReleased` = `"1"`), and the acquire loop, heartbeat and fencing are the ones of
//! every backend (see [the module doc](super)).
//!
//! # Limits
//!
//! - Each heartbeat costs a put, a list and a delete; each waiting poll a list and a get. Fine for a local
//!   table; on S3 use `DynamoDbLock` anyway, because this lock is not the one Hudi's
//!   Java writers use (their `FileSystemBasedLockProvider` has another layout and no heartbeat), so it only
//!   excludes writers of this project. That is why it is meant for the single-host embedded mode.
//! - Like every lease, it relies on the holders' heartbeats and on clock *rates* (not wall clocks) agreeing.
//! - Removing the directory by hand while a lock is held breaks the rule that the highest record survives.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::clock::Clock;
use crate::storage::{validate_relative_path, PutOutcome, Storage, StorageError};

use super::engine::Engine;
use super::{
    default_clock, default_owner_name, Expect, LeaseOptions, LeaseStore, Lock, LockError,
    LockGuard, LockRecord,
};

/// Directory of all file locks of a table, relative to its base path.
pub const LOCK_DIR: &str = ".hoodie/.lock";

/// How often `read` re-lists when the highest record vanished between list and get (it was superseded).
const READ_ATTEMPTS: usize = 16;

/// The JSON of one record, with the DynamoDB item's attribute names.
#[derive(Debug, Serialize, Deserialize)]
struct FileRecord {
    key: String,
    #[serde(rename = "ownerName")]
    owner_name: String,
    /// Milliseconds as a decimal string, as in the DynamoDB item.
    #[serde(rename = "leaseDuration")]
    lease_duration: String,
    #[serde(rename = "recordVersionNumber")]
    record_version_number: String,
    #[serde(
        rename = "isReleased",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    is_released: Option<String>,
}

#[derive(Debug)]
struct FileStore {
    storage: Arc<dyn Storage>,
    /// `.hoodie/.lock/<name>/`.
    dir: String,
    describe: String,
}

impl FileStore {
    fn path(&self, sequence: u64) -> String {
        format!("{}{sequence:020}.json", self.dir)
    }

    fn storage_error(&self, source: StorageError) -> LockError {
        LockError::Storage {
            lock: self.describe.clone(),
            source,
        }
    }

    fn corrupt(&self, reason: String) -> LockError {
        LockError::Corrupt {
            lock: self.describe.clone(),
            reason,
        }
    }

    /// Sequences present, ascending.
    async fn sequences(&self) -> Result<Vec<u64>, LockError> {
        let listed = self
            .storage
            .list(&self.dir)
            .await
            .map_err(|e| self.storage_error(e))?;
        let mut out: Vec<u64> = listed
            .iter()
            .filter_map(|o| {
                let name = o.path.strip_prefix(&self.dir)?.strip_suffix(".json")?;
                (name.len() == 20 && name.bytes().all(|b| b.is_ascii_digit()))
                    .then(|| name.parse::<u64>().ok())
                    .flatten()
            })
            .collect();
        out.sort_unstable();
        Ok(out)
    }

    fn parse(&self, sequence: u64, data: &[u8]) -> Result<LockRecord, LockError> {
        let rec: FileRecord = serde_json::from_slice(data)
            .map_err(|e| self.corrupt(format!("{}: {e}", self.path(sequence))))?;
        let lease_ms: u64 = rec.lease_duration.parse().map_err(|_| {
            self.corrupt(format!(
                "{}: leaseDuration {:?} is not a number of milliseconds",
                self.path(sequence),
                rec.lease_duration
            ))
        })?;
        Ok(LockRecord {
            key: rec.key,
            owner: rec.owner_name,
            record_version: rec.record_version_number,
            lease_duration: Duration::from_millis(lease_ms),
            released: rec.is_released.is_some(),
            sequence: Some(sequence),
        })
    }

    /// The compare-and-swap described in the module doc: succeeds only if `next - 1` was the current record.
    async fn swap(&self, next: u64, record: &LockRecord) -> Result<Option<LockRecord>, LockError> {
        let body = FileRecord {
            key: record.key.clone(),
            owner_name: record.owner.clone(),
            lease_duration: record.lease_duration.as_millis().to_string(),
            record_version_number: record.record_version.clone(),
            is_released: record.released.then(|| "1".to_string()),
        };
        let data = serde_json::to_vec(&body)
            .map_err(|e| self.corrupt(format!("cannot encode record: {e}")))?;
        let path = self.path(next);
        match self
            .storage
            .put_if_absent(&path, Bytes::from(data))
            .await
            .map_err(|e| self.storage_error(e))?
        {
            PutOutcome::AlreadyExists => return Ok(None),
            PutOutcome::Created => {}
        }
        let sequences = self.sequences().await?;
        if sequences.last().is_some_and(|&max| max > next) {
            // We re-created a collected sequence: the record moved on without us.
            if let Err(e) = self.storage.delete(&path).await {
                tracing::debug!(lock = %self.describe, error = %e, "could not delete stray lock record");
            }
            return Ok(None);
        }
        for old in sequences.into_iter().filter(|&s| s < next) {
            if let Err(e) = self.storage.delete(&self.path(old)).await {
                tracing::debug!(lock = %self.describe, error = %e, "could not collect old lock record");
            }
        }
        Ok(Some(LockRecord {
            sequence: Some(next),
            ..record.clone()
        }))
    }

    /// Whether record `sequence` still exists and satisfies `condition`. Records are immutable, so together with
    /// a winning swap to `sequence + 1` this is the DynamoDB condition on the current item.
    async fn check(
        &self,
        sequence: u64,
        condition: impl Fn(&LockRecord) -> bool,
    ) -> Result<bool, LockError> {
        match self.storage.get(&self.path(sequence)).await {
            Ok(data) => Ok(condition(&self.parse(sequence, &data)?)),
            // Collected: a later record superseded it.
            Err(e) if e.is_not_found() => Ok(false),
            Err(e) => Err(self.storage_error(e)),
        }
    }

    fn next_after(&self, record: &LockRecord) -> Result<u64, LockError> {
        record
            .sequence
            .and_then(|s| s.checked_add(1))
            .ok_or_else(|| {
                self.corrupt(format!("record {} has no sequence", record.record_version))
            })
    }
}

/// The heartbeat/release condition: same owner and version (`#rvn = :rvn AND #on = :on`).
fn owned_by(current: &LockRecord, held: &LockRecord) -> bool {
    current.owner == held.owner && current.record_version == held.record_version
}

#[async_trait]
impl LeaseStore for FileStore {
    fn describe(&self) -> &str {
        &self.describe
    }

    async fn read(&self) -> Result<Option<LockRecord>, LockError> {
        for _ in 0..READ_ATTEMPTS {
            let Some(&max) = self.sequences().await?.last() else {
                return Ok(None);
            };
            match self.storage.get(&self.path(max)).await {
                Ok(data) => return self.parse(max, &data).map(Some),
                // Superseded and collected between list and get: list again.
                Err(e) if e.is_not_found() => continue,
                Err(e) => return Err(self.storage_error(e)),
            }
        }
        Err(LockError::Backend {
            lock: self.describe.clone(),
            operation: "read",
            message: format!("the record changed {READ_ATTEMPTS} times while being read"),
            retryable: true,
        })
    }

    async fn create(
        &self,
        new: &LockRecord,
        expect: Expect<'_>,
    ) -> Result<Option<LockRecord>, LockError> {
        let next = match expect {
            Expect::Absent => 1,
            Expect::Released(seen) => {
                let next = self.next_after(seen)?;
                if !self.check(next - 1, |cur| cur.released).await? {
                    return Ok(None);
                }
                next
            }
            Expect::Stale(seen) => {
                let next = self.next_after(seen)?;
                if !self
                    .check(next - 1, |cur| cur.record_version == seen.record_version)
                    .await?
                {
                    return Ok(None);
                }
                next
            }
        };
        self.swap(next, new).await
    }

    async fn renew(
        &self,
        held: &LockRecord,
        new_version: &str,
        lease: Duration,
    ) -> Result<Option<LockRecord>, LockError> {
        let next = self.next_after(held)?;
        if !self.check(next - 1, |cur| owned_by(cur, held)).await? {
            return Ok(None);
        }
        let renewed = LockRecord {
            record_version: new_version.to_string(),
            lease_duration: lease,
            released: false,
            ..held.clone()
        };
        self.swap(next, &renewed).await
    }

    async fn remove(&self, held: &LockRecord) -> Result<bool, LockError> {
        let next = self.next_after(held)?;
        if !self.check(next - 1, |cur| owned_by(cur, held)).await? {
            return Ok(false);
        }
        let released = LockRecord {
            released: true,
            ..held.clone()
        };
        Ok(self.swap(next, &released).await?.is_some())
    }
}

/// A lock stored under `.hoodie/.lock/<name>/` of a table's storage. See the module doc for the layout and
/// its limits.
#[derive(Debug, Clone)]
pub struct FileLock {
    engine: Engine,
}

impl FileLock {
    /// The lock `name` (one path segment, e.g. the table name) in `storage`, with a generated owner name and
    /// the monotonic clock.
    pub fn new(
        storage: Arc<dyn Storage>,
        name: &str,
        options: LeaseOptions,
    ) -> Result<Self, LockError> {
        options.validate()?;
        let dir = format!("{LOCK_DIR}/{name}/");
        let bad_name = |reason: String| LockError::Config {
            key: "lock name".to_string(),
            value: name.to_string(),
            reason,
        };
        if name.contains('/') {
            return Err(bad_name("must be a single path segment".to_string()));
        }
        validate_relative_path(&format!("{LOCK_DIR}/{name}"))
            .map_err(|e| bad_name(e.to_string()))?;
        let describe = format!(
            "file lock {}/{}",
            storage.base_uri().trim_end_matches('/'),
            dir.trim_end_matches('/')
        );
        let store = Arc::new(FileStore {
            storage,
            dir,
            describe,
        });
        Ok(Self {
            engine: Engine {
                store,
                key: name.to_string(),
                owner: default_owner_name(),
                options,
                clock: default_clock(),
            },
        })
    }

    /// With the clock leases are measured with.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.engine.clock = clock;
        self
    }

    /// With an explicit owner name.
    pub fn with_owner(mut self, owner: impl Into<String>) -> Self {
        self.engine.owner = owner.into();
        self
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
impl Lock for FileLock {
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
    use super::*;
    use crate::storage::local::LocalStorage;
    use crate::storage::memory::MemoryStorage;

    fn options() -> LeaseOptions {
        LeaseOptions::hudi(Duration::from_secs(30)).with_refresh_period(Duration::from_millis(5))
    }

    #[tokio::test]
    async fn records_carry_the_dynamodb_attribute_names() {
        let dir = tempfile::tempdir().expect("tempdir");
        let storage: Arc<dyn Storage> = Arc::new(LocalStorage::new(dir.path()));
        let lock = FileLock::new(storage.clone(), "trips", options()).expect("lock");
        let held = lock.acquire(Duration::ZERO).await.expect("acquire");
        let listed = storage.list(".hoodie/.lock/").await.expect("list");
        assert_eq!(listed.len(), 1, "{listed:?}");
        assert_eq!(
            listed[0].path,
            ".hoodie/.lock/trips/00000000000000000001.json"
        );
        let json: serde_json::Value =
            serde_json::from_slice(&storage.get(&listed[0].path).await.expect("get"))
                .expect("json");
        let obj = json.as_object().expect("object");
        let keys: Vec<&str> = obj.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            ["key", "ownerName", "leaseDuration", "recordVersionNumber"]
        );
        assert_eq!(obj["key"], "trips");
        assert_eq!(obj["ownerName"], lock.owner());
        assert_eq!(obj["leaseDuration"], "30000");
        assert_eq!(obj["recordVersionNumber"], held.record_version().as_str());

        held.ensure_held().await.expect("renew");
        held.release().await.expect("release");
        // The released record is kept (the highest record is never deleted); older ones are collected.
        let listed = storage.list(".hoodie/.lock/").await.expect("list");
        assert_eq!(listed.len(), 1, "{listed:?}");
        assert_eq!(
            listed[0].path,
            ".hoodie/.lock/trips/00000000000000000003.json"
        );
        let json: serde_json::Value =
            serde_json::from_slice(&storage.get(&listed[0].path).await.expect("get"))
                .expect("json");
        assert_eq!(json["isReleased"], "1");
        assert!(lock
            .current()
            .await
            .expect("read")
            .is_some_and(|r| r.released));
    }

    /// A writer that slept through several changes re-creates a collected sequence: its swap must fail.
    #[tokio::test]
    async fn late_swap_onto_a_collected_sequence_fails() {
        let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new("mem://t"));
        let lock = FileLock::new(storage.clone(), "t", options()).expect("lock");
        let held = lock.acquire(Duration::ZERO).await.expect("acquire");
        held.stop_heartbeat();
        let stale = held.record(); // sequence 1
        held.ensure_held().await.expect("renew to 2");
        held.ensure_held().await.expect("renew to 3");
        assert!(storage
            .head(".hoodie/.lock/t/00000000000000000002.json")
            .await
            .expect("head")
            .is_none());
        // A thief that read sequence 1 long ago swaps now: put_if_absent(2) succeeds, but 3 exists.
        let thief = LockRecord {
            owner: "thief".into(),
            record_version: "x".into(),
            ..stale.clone()
        };
        let store = lock.engine.store.clone();
        assert_eq!(
            store
                .create(&thief, Expect::Stale(&stale))
                .await
                .expect("swap"),
            None
        );
        assert!(
            storage
                .head(".hoodie/.lock/t/00000000000000000002.json")
                .await
                .expect("head")
                .is_none(),
            "stray left"
        );
        // The same race one step later: the thief checked record 1 before it was collected and only now
        // puts record 2. The put succeeds on plain storage; the listing afterwards must reject it.
        let raw = FileStore {
            storage: storage.clone(),
            dir: ".hoodie/.lock/t/".to_string(),
            describe: "test".to_string(),
        };
        assert_eq!(raw.swap(2, &thief).await.expect("swap"), None);
        assert_eq!(raw.sequences().await.expect("list"), vec![3]);
        held.ensure_held().await.expect("still ours");
        held.release().await.expect("release");
    }

    #[test]
    fn hostile_names_are_refused() {
        let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new("mem://t"));
        for name in ["", "a/b", "..", ".", "a\\b"] {
            assert!(
                FileLock::new(storage.clone(), name, options()).is_err(),
                "{name:?}"
            );
        }
    }
}
