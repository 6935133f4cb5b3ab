//! Lock failures. Every variant names the lock (`lock`: backend, table and key) and, where one is known, the
//! owner asking, the holder found and the record version involved, so that an operator can tell from one log
//! line who held what.

use std::time::Duration;

use thiserror::Error;

use super::LockRecord;
use crate::storage::StorageError;

/// A lock operation failed.
#[derive(Debug, Error)]
pub enum LockError {
    /// A configuration key is missing or has a value that cannot be used.
    #[error("lock configuration {key} = {value:?} is invalid: {reason}")]
    Config {
        /// The Hudi key (`hoodie.write.lock.dynamodb.table`, ...).
        key: String,
        /// The value found (empty when missing).
        value: String,
        /// Why it was refused.
        reason: String,
    },
    /// The lock was not granted within the wait budget.
    #[error(
        "timed out after {waited:?} waiting for {lock} as {owner}: {}{}",
        describe_holder(holder.as_deref(), true),
        last_error.as_deref().map(|e| format!("; last error: {e}")).unwrap_or_default()
    )]
    Timeout {
        /// The lock.
        lock: String,
        /// This client's owner name.
        owner: String,
        /// How long acquisition tried.
        waited: Duration,
        /// The record seen last, if the lock was held: its `ownerName`, `recordVersionNumber` and
        /// `leaseDuration`.
        holder: Option<Box<LockRecord>>,
        /// The last retryable backend error, if any occurred.
        last_error: Option<String>,
    },
    /// The lease is no longer ours: the record was stolen, released or deleted by someone else. A conditional
    /// write (heartbeat, [`ensure_held`](super::LockGuard::ensure_held), release) found another version.
    #[error(
        "{lock}: lease of {owner} (recordVersionNumber {version}) is lost; now {}",
        describe_holder(holder.as_deref(), false)
    )]
    Lost {
        /// The lock.
        lock: String,
        /// This guard's owner name.
        owner: String,
        /// The record version this guard last held.
        version: String,
        /// The current record, if there is one and it is not released.
        holder: Option<Box<LockRecord>>,
    },
    /// No heartbeat succeeded for a whole lease, so another client may already have stolen the lock: the guard
    /// gives it up without asking the backend, as the DynamoDB lock client does.
    #[error(
        "{lock}: lease of {owner} (recordVersionNumber {version}) expired locally: last renewed {since:?} ago, lease {lease:?}"
    )]
    Expired {
        /// The lock.
        lock: String,
        /// This guard's owner name.
        owner: String,
        /// The record version last held.
        version: String,
        /// Time since the last successful renewal started.
        since: Duration,
        /// The lease duration.
        lease: Duration,
    },
    /// A release was asked for a record this client does not own.
    #[error(
        "{lock}: {owner} may not release the lock held by {holder} (recordVersionNumber {version})"
    )]
    NotOwner {
        /// The lock.
        lock: String,
        /// This client's owner name.
        owner: String,
        /// `ownerName` of the record.
        holder: String,
        /// `recordVersionNumber` of the record.
        version: String,
    },
    /// A backend request failed; `retryable` tells whether trying again may help (throttling, 5xx, network).
    #[error("{lock}: {operation} failed: {message}")]
    Backend {
        /// The lock.
        lock: String,
        /// The request (`GetItem`, `PutItem`, ...).
        operation: &'static str,
        /// The error with its context.
        message: String,
        /// Whether the caller may retry.
        retryable: bool,
    },
    /// The storage holding a [`FileLock`](super::FileLock) failed.
    #[error("{lock}: storage failed: {source}")]
    Storage {
        /// The lock.
        lock: String,
        /// The storage error.
        #[source]
        source: StorageError,
    },
    /// A lock record exists but cannot be read as one (missing attribute, bad number, bad JSON).
    #[error("{lock}: malformed lock record: {reason}")]
    Corrupt {
        /// The lock.
        lock: String,
        /// What is wrong.
        reason: String,
    },
    /// `acquire` was polled outside a tokio runtime, so no heartbeat task can run.
    #[error("{lock}: acquire needs a tokio runtime for the heartbeat task")]
    NoRuntime {
        /// The lock.
        lock: String,
    },
}

impl LockError {
    /// Whether the failed call may succeed when repeated (a transient backend or storage error). Conflicts
    /// ([`LockError::Lost`], [`LockError::Timeout`]) are not retryable by repetition of the same call: the caller
    /// must acquire again.
    pub fn is_retryable(&self) -> bool {
        match self {
            LockError::Backend { retryable, .. } => *retryable,
            LockError::Storage { source, .. } => match source {
                StorageError::Remote { retryable, .. } => *retryable,
                StorageError::Injected { .. } => true,
                _ => false,
            },
            _ => false,
        }
    }

    /// The holder's record named by a [`LockError::Timeout`] or [`LockError::Lost`].
    pub fn holder(&self) -> Option<&LockRecord> {
        match self {
            LockError::Timeout { holder, .. } | LockError::Lost { holder, .. } => holder.as_deref(),
            _ => None,
        }
    }

    /// Whether this error means the lease is gone (lost to another owner or expired locally).
    pub fn is_lease_lost(&self) -> bool {
        matches!(self, LockError::Lost { .. } | LockError::Expired { .. })
    }
}

fn describe_holder(holder: Option<&LockRecord>, with_lease: bool) -> String {
    match holder {
        Some(h) if with_lease => format!(
            "held by {} (recordVersionNumber {}, leaseDuration {} ms)",
            h.owner,
            h.record_version,
            h.lease_duration.as_millis()
        ),
        Some(h) => format!(
            "held by {} (recordVersionNumber {})",
            h.owner, h.record_version
        ),
        None => "no holder seen (free, released or contended)".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeout_message_names_holder_version_and_lease() {
        let e = LockError::Timeout {
            lock: "dynamodb table locks, key t".into(),
            owner: "me".into(),
            waited: Duration::from_millis(1500),
            holder: Some(Box::new(LockRecord {
                key: "t".into(),
                owner: "host-1abc".into(),
                record_version: "v-1".into(),
                lease_duration: Duration::from_millis(60_000),
                released: false,
                sequence: None,
            })),
            last_error: None,
        };
        let msg = e.to_string();
        assert!(msg.contains("held by host-1abc"), "{msg}");
        assert!(msg.contains("recordVersionNumber v-1"), "{msg}");
        assert!(msg.contains("leaseDuration 60000 ms"), "{msg}");
        assert!(!e.is_retryable());
        assert_eq!(e.holder().map(|h| h.owner.as_str()), Some("host-1abc"));
    }
}
