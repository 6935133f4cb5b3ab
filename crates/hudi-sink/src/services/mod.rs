//! Table services: the work that keeps a table's cost per batch independent of its age.
//!
//! - [`clean`]: deletes file slices no query inside the retention can read (Hudi's cleaner policies),
//!   recorded as Spark-compatible `clean` instants.
//! - [`archive`]: removes the oldest instants from the active timeline, so that every listing of `.hoodie/`
//!   stays bounded (delete-only: nothing is written under `.hoodie/archived/`).
//! - [`cluster`]: rewrites the small files of insert tables into fewer, larger file groups
//!   (`replacecommit`, operation `CLUSTER`).
//! - [`compact`]: merges the log files of merge-on-read file slices into new base files (`compaction`
//!   instants completed as `commit`, operation `COMPACT`), merging outside the table lock.
//! - [`avro`]: the typed Avro records of the timeline files these services write (on [`crate::avro`]).
//!
//! Every service plans and changes the timeline under the table lock and proves the lease (fences) right
//! before each destructive step, so that a coordinator paused past its lease never acts on a stale plan.
//! None may delete what a reader inside the retention, or a running writer, still needs: the invariants of
//! each are in its module doc and in `docs/architecture.md`.

pub mod archive;
pub mod clean;
pub mod cluster;
pub mod commits;
pub mod compact;
pub mod config;
pub(crate) mod in_flight;

pub use config::{CleanerPolicy, ServicesConfig};

use crate::clock::Clock;
use crate::lock::LockGuard;
use crate::mutation::{is_disabled, Mutation};
use crate::storage::Storage;
use crate::table::instant::InstantTime;
use crate::table::timeline::Timeline;
use crate::write::WriteError;

/// What one run of the services did, for logs, metrics (EMF) and `hudi-sink services`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ServiceReport {
    /// The completed clean instant, if a clean ran and found something to delete.
    pub clean_instant: Option<String>,
    /// Data files deleted by the clean.
    pub files_cleaned: u64,
    /// Instants removed from the active timeline by archival.
    pub instants_archived: u64,
    /// The completed clustering instant, if clustering ran.
    pub cluster_instant: Option<String>,
    /// File groups rewritten (replaced) by clustering.
    pub file_groups_clustered: u64,
    /// The completed compaction instant, if a compaction ran.
    pub compaction_instant: Option<String>,
    /// File groups compacted (each got a new base file).
    pub file_groups_compacted: u64,
    /// Pending service instants (cleans, clusterings, compactions) finished or rolled back from an earlier
    /// run.
    pub resumed: u64,
    /// Wall time of the run, milliseconds.
    pub duration_ms: u64,
}

impl ServiceReport {
    /// Adds `other`'s counts to this report (instants: the later one wins).
    pub fn merge(&mut self, other: ServiceReport) {
        if other.clean_instant.is_some() {
            self.clean_instant = other.clean_instant;
        }
        if other.cluster_instant.is_some() {
            self.cluster_instant = other.cluster_instant;
        }
        if other.compaction_instant.is_some() {
            self.compaction_instant = other.compaction_instant;
        }
        self.file_groups_compacted += other.file_groups_compacted;
        self.files_cleaned += other.files_cleaned;
        self.instants_archived += other.instants_archived;
        self.file_groups_clustered += other.file_groups_clustered;
        self.resumed += other.resumed;
        self.duration_ms += other.duration_ms;
    }
}

/// What a service needs while it holds the table lock.
#[derive(Clone, Copy)]
pub struct ServiceContext<'a> {
    /// The table.
    pub storage: &'a dyn Storage,
    /// The held table lock: proven before every destructive step.
    pub guard: &'a LockGuard,
    /// Instant times and retention by hours.
    pub clock: &'a dyn Clock,
    /// The settings.
    pub config: &'a ServicesConfig,
}

impl std::fmt::Debug for ServiceContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceContext")
            .field("table", &self.storage.base_uri())
            .finish_non_exhaustive()
    }
}

impl ServiceContext<'_> {
    /// Proves the lease (see the module doc).
    pub async fn fence(&self) -> Result<(), WriteError> {
        if !is_disabled(Mutation::LockFencing) {
            self.guard.ensure_held().await?;
        }
        Ok(())
    }

    /// A new instant time, strictly greater than every time ever used on `timeline`.
    pub fn new_instant_time(&self, timeline: &Timeline) -> InstantTime {
        InstantTime::next_after(self.clock, timeline.last_used_time())
    }
}
