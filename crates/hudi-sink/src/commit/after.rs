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
//! sync's report, the Delta mirror's and the inline services that failed, taken once by
//! [`Coordinator::take_after_commit_report`] (the coordinator function prints them; a writer committing in
//! process prints them itself).

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::catalog::{CatalogSync, CatalogSyncReport};
use crate::lock::LockGuard;
use crate::storage::{ObjectMeta, Storage};
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
    /// The last Delta mirror step, if the mirror is on.
    pub mirror: Option<MirrorReport>,
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
            && self.mirror.is_none()
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
        // The mirror first, so that a clean never deletes a file the mirror has not yet removed; while the
        // mirror is behind (it failed), the clean and archival wait for a commit that catches it up.
        let mirrored = self.mirror(committed).await;
        if mirrored
            || crate::mutation::is_disabled(crate::mutation::Mutation::DeltaCleanWaitsForMirror)
        {
            self.inline_services(guard, committed, listed).await;
        } else {
            tracing::warn!("inline clean and archival skipped: the Delta mirror is behind");
        }
        self.note_committed(committed);
    }

    /// Mirrors the table's commits into another table format after every commit, under the commit's lock
    /// (best effort; see [`CommitMirror`]).
    pub fn with_mirror(mut self, mirror: Arc<dyn CommitMirror>) -> Self {
        self.mirror = Some(mirror);
        self
    }

    /// The report of the mirror step the last request ran, once (for its metrics).
    pub fn take_mirror_report(&self) -> Option<MirrorReport> {
        self.mirror.as_ref().and_then(|m| m.take_report())
    }

    /// The mirror step, when configured, under the table lock: never fails (a failure is in its report).
    /// Whether the mirror holds every completed instant of `committed` (true without a mirror): the cleaner
    /// may delete superseded files only then.
    pub(super) async fn mirror(&self, committed: &Timeline) -> bool {
        match &self.mirror {
            Some(mirror) => mirror.mirror(&self.storage, committed).await,
            None => true,
        }
    }

    /// The mirror step outside a commit (after a clustering completed), under a lock of its own, so that the
    /// rewrite reaches Delta readers without waiting for the next commit. Best effort: a lock or timeline
    /// failure is left to the next commit, which catches the mirror up.
    pub(super) async fn mirror_locked(&self) {
        if self.mirror.is_none() {
            return;
        }
        let guard = match self.lock().await {
            Ok(guard) => guard,
            Err(e) => {
                tracing::warn!(error = %e, "Delta mirror after clustering skipped; the next commit catches up");
                return;
            }
        };
        let result = match Timeline::load(self.storage.as_ref()).await {
            Ok(timeline) => {
                self.mirror(&timeline).await;
                Ok(())
            }
            Err(e) => Err(e.into()),
        };
        if let Err(e) = self.unlock(guard, result).await {
            tracing::warn!(error = %e, "Delta mirror after clustering skipped; the next commit catches up");
        }
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
            mirror: self.take_mirror_report(),
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

/// What a mirror step did: the Delta Lake mirror (`crate::delta`) reports here, the metrics read it.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct MirrorReport {
    /// Versions the step committed to the mirror (0 when it was already up to date).
    pub versions_committed: u64,
    /// The mirror's latest version after the step, when it exists.
    pub version: Option<u64>,
    /// The latest Hudi instant the mirror holds after the step.
    pub instant: Option<String>,
    /// Files added and removed.
    pub files_added: u64,
    /// Files removed.
    pub files_removed: u64,
    /// Wall time, milliseconds.
    pub duration_ms: u64,
    /// Why the step failed (`None` when it succeeded); the next commit catches up.
    pub error: Option<String>,
    /// Failed steps since the last report (a request may run more than one: after its commit and after a
    /// clustering).
    pub failures: u64,
}

impl MirrorReport {
    /// Folds a later step of the same request into this report: counts add up, the latest version and
    /// instant win, the last error is kept.
    pub fn merge(&mut self, later: MirrorReport) {
        self.versions_committed += later.versions_committed;
        self.files_added += later.files_added;
        self.files_removed += later.files_removed;
        self.duration_ms += later.duration_ms;
        self.failures += later.failures;
        if later.version.is_some() {
            self.version = later.version;
            self.instant = later.instant;
        }
        if later.error.is_some() {
            self.error = later.error;
        }
    }
}

/// Mirrors completed instants into another table format, after each commit and under the table lock, best
/// effort: it never fails the commit. Implemented above this layer (`crate::delta`) and handed in by the
/// bootstrap, so the coordinator knows only this trait.
#[async_trait::async_trait]
pub trait CommitMirror: Send + Sync + std::fmt::Debug {
    /// Brings the mirror up to `timeline` (the timeline with the commit just made). Logs and records failures;
    /// returns whether the mirror now holds every completed instant of `timeline`.
    async fn mirror(&self, storage: &Arc<dyn Storage>, timeline: &Timeline) -> bool;
    /// The report of the last step, once.
    fn take_report(&self) -> Option<MirrorReport>;
}
