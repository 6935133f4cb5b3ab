//! The upload lease of a window member (docs/architecture.md, "Interval commit"): a member of a commit window
//! may upload files named with the window's instant only until its lease ends, after which the window may
//! close without it. The lease is scoped to the task that writes (a task-local, like the lock-wait
//! accumulator of `telemetry`), so the table writer checks it before every marker and data file without
//! carrying it through each call.

use std::future::Future;
use std::sync::Arc;

use crate::clock::Clock;
use crate::mutation::{is_disabled, Mutation};

use super::WriteError;

/// Until when the current task may upload files of `instant`.
#[derive(Debug, Clone)]
pub struct Lease {
    clock: Arc<dyn Clock>,
    instant: String,
    until_ms: i64,
    stage: u64,
}

impl Lease {
    /// A lease of `instant` that ends at `until_ms` on `clock`, for the member named `member`.
    pub fn new(
        clock: Arc<dyn Clock>,
        instant: impl Into<String>,
        until_ms: i64,
        member: &str,
    ) -> Self {
        Self {
            clock,
            instant: instant.into(),
            until_ms,
            stage: member_stage(member),
        }
    }

    /// Fails once the lease is over.
    pub fn check(&self) -> Result<(), WriteError> {
        if self.clock.now_millis() >= self.until_ms && !is_disabled(Mutation::StragglerFencing) {
            return Err(WriteError::LeaseExpired {
                instant: self.instant.clone(),
                lease_ms: self.until_ms,
            });
        }
        Ok(())
    }
}

tokio::task_local! {
    static LEASE: Lease;
}

/// Runs `work` under `lease`: every upload of the table writer on this task checks it first.
pub async fn with_lease<F: Future>(lease: Lease, work: F) -> F::Output {
    LEASE.scope(lease, work).await
}

/// A member's number in its files' write tokens (public: the close tells whose files its markers name) (`<task>-<stage>-<attempt>`): FNV-1a of its name, in 31 bits
/// and never 0 (the stage of writes outside a window).
pub fn member_stage(member: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in member.bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    (hash >> 33).max(1)
}

/// The write-token stage of the current task's files: its window member's number, 0 outside a window.
pub(crate) fn stage() -> u64 {
    LEASE.try_with(|l| l.stage).unwrap_or(0)
}

/// Whether the current task writes as a window member.
pub(crate) fn in_window() -> bool {
    LEASE.try_with(|_| ()).is_ok()
}

/// The instant of the current task's window, if any.
pub(crate) fn instant() -> Option<String> {
    LEASE.try_with(|l| l.instant.clone()).ok()
}

/// Checks the lease of the current task, if it has one (writes outside a window have none).
pub(crate) fn check() -> Result<(), WriteError> {
    LEASE.try_with(Lease::check).unwrap_or(Ok(()))
}

/// After an upload that may have taken long (a pause between the check and the upload's arrival): when the
/// lease ended meanwhile, the file is deleted again, so that it is visible for one request at most (the next
/// window's open deletes it too, by its marker, should this delete not happen).
pub(crate) async fn check_after_upload(
    storage: &dyn crate::storage::Storage,
    path: &str,
) -> Result<(), WriteError> {
    if let Err(expired) = check() {
        if let Err(e) = storage.delete(path).await {
            tracing::warn!(path, error = %e, "could not delete an upload that outlived its lease");
        }
        return Err(expired);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    #[tokio::test]
    async fn uploads_stop_when_the_lease_ends_and_only_inside_its_scope() {
        let clock = Arc::new(ManualClock::new(1_000));
        assert!(check().is_ok(), "no lease: writes outside a window");
        assert_eq!(stage(), 0);
        let lease = Lease::new(clock.clone(), "20261201000000000", 2_000, "w.1");
        with_lease(lease, async {
            assert!(check().is_ok());
            assert!(stage() > 0 && in_window());
            clock.set(1_999);
            assert!(check().is_ok());
            clock.set(2_000);
            let err = check().expect_err("lease over");
            assert!(err.to_string().contains("lease ended at 2000"), "{err}");
        })
        .await;
        assert!(check().is_ok(), "the lease ends with its scope");
    }
}
