//! After a commit: the work that follows a durable `<t>.commit`, in one place.
//!
//! ```text
//! … create <t>.commit ─ clean up ─ after_commit (under the lock) ─ unlock ─ after_release ─ Committed
//!                                                        (compaction, clustering, catalog sync)
//! ```
//!
//! Everything here is best effort. The commit is durable and its answer is `committed` whatever happens
//! here: a failure is logged and left to the next commit or the scheduled run, never reported to the
//! writer (which would otherwise retry a batch that is already in the table). Work that needs the table
//! lock goes into [`Coordinator::after_commit`]; work that does not, and would only lengthen every writer's
//! wait for the lock, into [`Coordinator::after_release`].
//!
//! Since nothing here reaches the writer's answer, what happened is kept for the metrics instead: the catalog
//! sync's report and the inline services that failed, taken once by [`Coordinator::take_after_commit_report`]
//! (the coordinator function prints them; a writer committing in process prints them itself).

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::catalog::{CatalogSync, CatalogSyncReport};
use crate::lock::LockGuard;
use crate::storage::ObjectMeta;
use crate::table::instant::InstantTime;
use crate::table::timeline::Timeline;

use super::Coordinator;

/// At most this many failures are kept between two reports; the logs have every one.
pub const MAX_KEPT_FAILURES: usize = 100;

/// What followed a writer's commits since the last report, for the metrics only: the commit's answer says
/// none of it. A writer that commits in process (one table or many routed tables) prints it as the coordinator
/// function prints its own (`metrics::after_commit_emf`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AfterCommitReport {
    /// The last catalog sync that ran (not one skipped while backing off), if the sync is on.
    pub catalog: Option<CatalogSyncReport>,
    /// Failed commit steps (`commit`, `submit`, `close`), their errors: each failed the batch, which is
    /// redelivered.
    pub commit_failures: Vec<String>,
    /// Failed inline table services (clean and archive, compaction, clustering), their errors: the commit
    /// stands, a later run retries.
    pub service_failures: Vec<String>,
}

impl AfterCommitReport {
    /// Whether there is nothing to report.
    pub fn is_empty(&self) -> bool {
        self.catalog.is_none()
            && self.commit_failures.is_empty()
            && self.service_failures.is_empty()
    }
}

impl Coordinator {
    /// Under the commit's lock, once `<t>.commit` exists and the instant's markers and heartbeat are
    /// deleted: the inline clean and archival, when due. `committed` is the timeline with the new commit,
    /// `listed` the `.hoodie/` listing it was read from; it is kept for the compaction's due check.
    pub(super) async fn after_commit(
        &self,
        guard: &LockGuard,
        committed: &Timeline,
        listed: &[ObjectMeta],
    ) {
        self.inline_services(guard, committed, listed).await;
        self.note_committed(committed);
    }

    /// After the commit's lock is released, for a request answered `committed` (a retried commit whose
    /// answer was lost included): inline compaction and clustering, which take the lock themselves for
    /// planning and completion, then the catalog sync with the partitions the commit wrote (`written`), which
    /// needs no lock.
    pub(super) async fn after_release(&self, written: Option<(InstantTime, BTreeSet<String>)>) {
        self.inline_compaction().await;
        self.inline_clustering().await;
        self.sync_catalog(written).await;
    }

    /// Syncs the Glue Data Catalog after every commit and services run (best effort, after the lock is
    /// released: a catalog failure never fails or holds up a commit; see `docs/architecture.md`, Catalog sync).
    pub fn with_catalog(mut self, catalog: Arc<CatalogSync>) -> Self {
        self.catalog = Some(catalog);
        self
    }

    /// The report of the catalog sync the last request ran, once (for its metrics).
    pub fn take_catalog_report(&self) -> Option<CatalogSyncReport> {
        self.catalog.as_ref().and_then(|c| c.take_report())
    }

    /// The catalog sync's report and the failed inline services since the last call, once (for the metrics
    /// of a writer committing in process). A sync skipped while backing off is left out: it did nothing.
    pub fn take_after_commit_report(&self) -> AfterCommitReport {
        AfterCommitReport {
            catalog: self.take_catalog_report().filter(|r| !r.skipped),
            commit_failures: Vec::new(),
            service_failures: self
                .service_failures
                .lock()
                .map(|mut f| std::mem::take(&mut *f))
                .unwrap_or_default(),
        }
    }

    /// Keeps a failed inline service (`service`: what failed) for [`Coordinator::take_after_commit_report`].
    pub(super) fn note_service_failure(&self, service: &str, error: &dyn std::fmt::Display) {
        if let Ok(mut failures) = self.service_failures.lock() {
            // Bounded, for a caller that never takes the report (the command's in-process coordinator).
            if failures.len() < MAX_KEPT_FAILURES {
                failures.push(format!("inline {service}: {error}"));
            }
        }
    }

    /// The catalog sync, when configured; `written` are the partitions of a commit just made, which are then
    /// not read again.
    pub(super) async fn sync_catalog(&self, written: Option<(InstantTime, BTreeSet<String>)>) {
        if let Some(catalog) = &self.catalog {
            let known: Vec<_> = written.into_iter().collect();
            catalog.after_commit(self.storage.as_ref(), &known).await;
        }
    }
}
