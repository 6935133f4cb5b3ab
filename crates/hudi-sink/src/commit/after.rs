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

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::catalog::{CatalogSync, CatalogSyncReport};
use crate::lock::LockGuard;
use crate::storage::{ObjectMeta, Storage};
use crate::table::instant::InstantTime;
use crate::table::timeline::Timeline;

use super::Coordinator;

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
        // The mirror first, so that a clean never deletes a file the mirror has not yet removed.
        self.mirror(committed).await;
        self.inline_services(guard, committed, listed).await;
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

    /// The mirror step, when configured: never fails (a failure is in its report).
    pub(super) async fn mirror(&self, committed: &Timeline) {
        if let Some(mirror) = &self.mirror {
            mirror.mirror(self.storage.as_ref(), committed).await;
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
}

/// Mirrors completed instants into another table format, after each commit and under the table lock, best
/// effort: it never fails the commit. Implemented above this layer (`crate::delta`) and handed in by the
/// bootstrap, so the coordinator knows only this trait.
#[async_trait::async_trait]
pub trait CommitMirror: Send + Sync + std::fmt::Debug {
    /// Brings the mirror up to `timeline` (the timeline with the commit just made). Logs and records failures.
    async fn mirror(&self, storage: &dyn Storage, timeline: &Timeline);
    /// The report of the last step, once.
    fn take_report(&self) -> Option<MirrorReport>;
}
