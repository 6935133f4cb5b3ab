//! The coordinator: the only component that changes a table's timeline, always under the table lock.
//!
//! ```text
//! writer                                coordinator, one request at a time under the table lock
//!   ── begin{writer} ─────────────────▶ begin.rs     roll back expired writes, leftovers; new instant t;
//!                                                    <t>.commit.requested, <t>.inflight, heartbeat
//!   ◀── begun{t, base, checkpoint}
//!   (markers, base files, heartbeat of t: no lock)
//!   ── commit{t, base, stats, offsets} ▶ steps.rs     properties; retried?; roll back expired; retired?
//!                                        conflict.rs  conflicts with commits after `base`
//!                                        checkpoint.rs offsets already committed?
//!                                        steps.rs     whole files; fence; <t>.commit (create-if-absent)
//!                                        after.rs     inline clean and archive; after unlock, clustering
//!   ◀── committed | conflict | already_committed | rolled_back
//!   ── abort{t} ──────────────────────▶ rollback.rs  roll back t now
//!   ── services ──────────────────────▶ services.rs  roll back, leftovers, sweep, clean, archive, cluster
//! ```
//!
//! Exactly-once rests on three rules it enforces (docs/architecture.md, "Exactly-once" and "Failures, rollback
//! and retired instants"):
//! - **One winner per instant and per offset.** A commit is refused with `AlreadyCommitted` when the table's
//!   checkpoint already covers any offset of the request, and `<t>.commit` is created with an atomic
//!   create-if-absent, so a redelivered batch or a retried request can never commit twice.
//! - **Optimistic concurrency.** Writers work without the lock; at commit the coordinator refuses
//!   (`Conflict`) a write whose file groups or buckets were changed by a commit completed after the writer's
//!   base instant ([`conflict`]).
//! - **Nothing of a failed write survives.** Pending instants whose heartbeat expired are rolled back (data
//!   files, markers, instant files) before any new instant starts or commits; a rolled-back instant can never
//!   be committed (`RolledBack`), and a writer whose lock lease was lost is fenced off before the commit file
//!   is written.
//!
//! Work that follows a durable commit (inline services, and whatever else must run after a commit) has one
//! place: `after.rs` ([`Coordinator`]'s `after_commit` under the lock, `after_release` after it).

mod after;
mod begin;
pub mod checkpoint;
pub mod conflict;
mod rollback;
pub(crate) mod schema;
mod services;
mod steps;
pub mod window;

use std::sync::Arc;
use std::time::Duration;

use crate::clock::Clock;
use crate::lock::{Lock, LockGuard};
use crate::mutation::{is_disabled, Mutation};
use crate::protocol::{CoordinatorRequest, CoordinatorResponse};
use crate::storage::Storage;
use crate::table::instant::InstantTime;
use crate::write::WriteError;

pub use crate::write::heartbeat::write_heartbeat;
pub use after::{AfterCommitReport, CommitMirror, MirrorReport, MAX_KEPT_FAILURES};
pub use checkpoint::parse_checkpoint;
pub use conflict::Conflict;

/// Coordinator settings (`hudi.sink.*` keys).
#[derive(Debug, Clone)]
pub struct CoordinatorConfig {
    /// How long to wait for the table lock (`hoodie.write.lock.wait_time_ms`).
    pub lock_wait: Duration,
    /// A pending instant whose heartbeat is older than this is a failed write and gets rolled back.
    pub heartbeat_tolerance: Duration,
    /// Table services (clean, archive, clustering): inline after commits when due, and on schedule.
    pub services: crate::services::ServicesConfig,
}

impl Default for CoordinatorConfig {
    fn default() -> Self {
        Self {
            lock_wait: Duration::from_secs(60),
            heartbeat_tolerance: Duration::from_secs(60),
            services: crate::services::ServicesConfig::default(),
        }
    }
}

/// Coordinates the writers of one table.
#[derive(Debug, Clone)]
pub struct Coordinator {
    storage: Arc<dyn Storage>,
    lock: Arc<dyn Lock>,
    clock: Arc<dyn Clock>,
    config: CoordinatorConfig,
    /// The checkpoint and schema of the last completed commit this coordinator wrote or read. Commit files
    /// are created once and never change, so while that commit is still the latest, they need no read.
    last_checkpoint: Arc<std::sync::Mutex<Option<checkpoint::Latest>>>,
    /// Commit metadata the services read, kept while warm (commit files never change).
    commits: crate::services::commits::CommitCache,
    /// What the last clean scanned, so that a clean that found nothing is not redone on the next commit.
    clean_memo: crate::services::clean::CleanMemo,
    /// The write configuration, when the table may be clustered (insert tables): the clustering writer is
    /// opened from it on first use and kept while warm.
    clustering: Option<Arc<services::Clustering>>,
    /// Inline compaction of a merge-on-read table: how new base files are written, and the view it plans
    /// from (kept from the timeline between runs).
    compaction: Option<Arc<services::Compaction>>,
    /// The Glue Data Catalog sync after commits and services runs, when configured.
    catalog: Option<Arc<crate::catalog::CatalogSync>>,
    /// The mirror of every commit into another table format (the Delta Lake log), when configured.
    mirror: Option<Arc<dyn CommitMirror>>,
    /// The action of the table's writes (`commit`, or `deltacommit` on merge-on-read), read once from
    /// `hoodie.properties`: a table's type never changes.
    write_action: Arc<std::sync::OnceLock<crate::table::instant::Action>>,
    /// The plans of the compactions pending at the last deltacommit (each plan is read once).
    planned: Arc<tokio::sync::Mutex<crate::table::planned_groups::PlannedGroups>>,
    /// The inline table services that failed since the last [`Coordinator::take_after_commit_report`], for
    /// the metrics of a writer committing in process.
    service_failures: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Coordinator {
    /// A coordinator of the table at `storage`, serialising timeline changes with `lock`.
    pub fn new(
        storage: Arc<dyn Storage>,
        lock: Arc<dyn Lock>,
        clock: Arc<dyn Clock>,
        config: CoordinatorConfig,
    ) -> Self {
        Self {
            storage,
            lock,
            clock,
            config,
            last_checkpoint: Arc::new(std::sync::Mutex::new(None)),
            commits: crate::services::commits::CommitCache::new(),
            clean_memo: crate::services::clean::CleanMemo::default(),
            clustering: None,
            compaction: None,
            catalog: None,
            mirror: None,
            write_action: Arc::new(std::sync::OnceLock::new()),
            planned: Arc::default(),
            service_failures: Arc::default(),
        }
    }

    /// The action of the table's writes, from `hoodie.properties` on first use.
    async fn write_action(&self) -> Result<crate::table::instant::Action, WriteError> {
        if let Some(action) = self.write_action.get() {
            return Ok(*action);
        }
        match crate::table::properties::TableProperties::load(self.storage.as_ref()).await {
            Ok(props) => Ok(*self.write_action.get_or_init(|| props.write_action())),
            // No table yet (writers create it before they begin; a bare store in tests): a plain commit,
            // not remembered.
            Err(e) if e.is_not_found() => Ok(crate::table::instant::Action::Commit),
            Err(e) => Err(e.into()),
        }
    }

    /// The table storage.
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }

    /// Handles one request.
    pub async fn handle(
        &self,
        request: CoordinatorRequest,
    ) -> Result<CoordinatorResponse, WriteError> {
        match request {
            CoordinatorRequest::Begin { writer } => self.begin(&writer).await,
            CoordinatorRequest::Commit(req) => self.commit(req).await,
            CoordinatorRequest::Abort { instant } => {
                let instant = InstantTime::parse(&instant)?;
                let guard = self.lock().await?;
                let result = self.abort_locked(&guard, &instant).await;
                self.unlock(guard, result).await
            }
            CoordinatorRequest::Services => {
                self.run_services().await?;
                Ok(CoordinatorResponse::Done)
            }
            CoordinatorRequest::Join(req) => self.join(req).await,
            CoordinatorRequest::Submit(req) => {
                let end_ms = req.end_ms;
                self.submit(req, end_ms).await
            }
            CoordinatorRequest::Close { instant, member } => {
                let instant = InstantTime::parse(&instant)?;
                self.close_request(&instant, &member).await
            }
        }
    }

    /// Takes the table lock (waiting up to `lock_wait`).
    async fn lock(&self) -> Result<crate::lock::LockGuard, WriteError> {
        let started = std::time::Instant::now();
        let guard = self.lock.acquire(self.config.lock_wait).await?;
        let waited_ms = started.elapsed().as_millis() as u64;
        crate::telemetry::record_lock_wait(waited_ms);
        tracing::debug!(waited_ms, "lock acquired");
        Ok(guard)
    }

    /// Takes the table lock if it is free now; `None` while another holds it.
    async fn try_lock(&self) -> Result<Option<crate::lock::LockGuard>, WriteError> {
        let started = std::time::Instant::now();
        let acquired = self.lock.acquire(Duration::ZERO).await;
        crate::telemetry::record_lock_wait(started.elapsed().as_millis() as u64);
        match acquired {
            Ok(guard) => Ok(Some(guard)),
            Err(crate::lock::LockError::Timeout { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Releases the lock whatever the locked work returned, then returns that result.
    async fn unlock<T>(
        &self,
        guard: crate::lock::LockGuard,
        result: Result<T, WriteError>,
    ) -> Result<T, WriteError> {
        if let Err(e) = guard.release().await {
            // A timeline change (if any) is already durable; a failed release only delays the next holder
            // until the lease expires.
            tracing::warn!(error = %e, "lock release failed");
        }
        result
    }

    /// Proves the lease right before a destructive timeline change: a coordinator that was paused past its
    /// lease (a zombie) must not act on the timeline it read before the pause.
    async fn fence(&self, guard: &LockGuard) -> Result<(), WriteError> {
        if !is_disabled(Mutation::LockFencing) {
            guard.ensure_held().await?;
        }
        Ok(())
    }
}
