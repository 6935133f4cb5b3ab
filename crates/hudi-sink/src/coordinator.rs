//! The coordinator: the only component that changes a table's timeline, always under the table lock.
//!
//! Exactly-once rests on three rules it enforces (docs/architecture.md, "Exactly-once" and "Failures, rollback
//! and retired instants"):
//! - **One winner per instant and per offset.** A commit is refused with `AlreadyCommitted` when the table's
//!   checkpoint already covers any offset of the request, and `<t>.commit` is created with an atomic
//!   create-if-absent, so a redelivered batch or a retried request can never commit twice.
//! - **Optimistic concurrency.** Writers work without the lock; at commit the coordinator refuses
//!   (`Conflict`) a write whose file groups or buckets were changed by a commit completed after the writer's
//!   base instant.
//! - **Nothing of a failed write survives.** Pending instants whose heartbeat expired are rolled back (data
//!   files, markers, instant files) before any new instant starts or commits; a rolled-back instant can never
//!   be committed (`RolledBack`), and a writer whose lock lease was lost is fenced off before the commit file
//!   is written.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use crate::clock::Clock;
use crate::index::bucket::bucket_id_from_file_id;
use crate::lock::{Lock, LockGuard};
use crate::mutation::{is_disabled, Mutation};
use crate::protocol::{CommitRequest, CoordinatorRequest, CoordinatorResponse};
use crate::storage::{ObjectMeta, PutOutcome, Storage};
use crate::table::commit::{Checkpoint, CommitMetadata, OperationType, WriteStat};
use crate::table::file_name::heartbeat_path;
use crate::table::instant::{Action, Instant, InstantTime, State};
use crate::table::properties::TableProperties;
use crate::table::timeline::Timeline;
use crate::write::{rollback_failed, WriteError};

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
    /// The checkpoint of the last completed commit this coordinator wrote or read. Commit files are created
    /// once and never change, so while that commit is still the latest, its checkpoint needs no read.
    last_checkpoint: Arc<std::sync::Mutex<Option<(InstantTime, Checkpoint)>>>,
    /// Commit metadata the services read, kept while warm (commit files never change).
    commits: crate::services::commits::CommitCache,
    /// What the last clean scanned, so that a clean that found nothing is not redone on the next commit.
    clean_memo: crate::services::clean::CleanMemo,
    /// The write configuration, when the table may be clustered (insert tables): the clustering writer is
    /// opened from it on first use and kept while warm.
    clustering: Option<Arc<Clustering>>,
    /// The Glue Data Catalog sync after commits and services runs, when configured.
    catalog: Option<Arc<crate::catalog::CatalogSync>>,
}

/// What clustering needs beyond the services' settings.
#[derive(Debug)]
struct Clustering {
    config: crate::config::write_config::WriteConfig,
    writer: tokio::sync::Mutex<Option<Arc<crate::write::TableWriter>>>,
    /// The latest slices, kept from the timeline between inline runs (no listing of the table per run).
    view: tokio::sync::Mutex<crate::table::fs_view::FileSystemView>,
    /// Commits this coordinator completed since its last inline clustering.
    commits: std::sync::atomic::AtomicU32,
}

/// Writes the heartbeat of `instant` and returns its content: the time in epoch milliseconds (Hudi's own
/// services read the object's modification time, which the write refreshes too).
pub async fn write_heartbeat(
    storage: &dyn Storage,
    clock: &dyn Clock,
    instant: &InstantTime,
) -> Result<i64, WriteError> {
    let now = clock.now_millis();
    storage
        .put(&heartbeat_path(instant), Bytes::from(now.to_string()))
        .await?;
    Ok(now)
}

/// The stored heartbeat of `instant` in epoch milliseconds; `None` when there is none or it does not parse.
pub(crate) async fn read_heartbeat(
    storage: &dyn Storage,
    instant: &InstantTime,
) -> Result<Option<i64>, WriteError> {
    match storage.get(&heartbeat_path(instant)).await {
        Ok(bytes) => Ok(std::str::from_utf8(&bytes)
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok())),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Checks that every file of `stats` exists with exactly its stated size.
pub(crate) async fn verify_files(
    storage: &dyn Storage,
    instant: &InstantTime,
    stats: &[WriteStat],
) -> Result<(), WriteError> {
    for stat in stats {
        match storage.head(&stat.path).await? {
            Some(ObjectMeta { size, .. }) if size as i64 == stat.file_size_in_bytes => {}
            found => {
                return Err(WriteError::Table {
                    base_path: storage.base_uri().to_string(),
                    reason: format!(
                        "file {} of instant {instant} has size {:?}, expected {}",
                        stat.path,
                        found.map(|m| m.size),
                        stat.file_size_in_bytes
                    ),
                })
            }
        }
    }
    Ok(())
}

fn parse_instant(text: &str) -> Result<InstantTime, WriteError> {
    Ok(InstantTime::parse(text)?)
}

/// (partition, file group) and (partition, bucket) keys of write stats.
type Touched = (BTreeSet<(String, String)>, BTreeSet<(String, u32)>);

/// What a set of write stats touched, for conflict detection.
fn touched(stats: &[WriteStat]) -> Touched {
    let mut groups = BTreeSet::new();
    let mut buckets = BTreeSet::new();
    for s in stats {
        groups.insert((s.partition_path.clone(), s.file_id.clone()));
        if let Some(b) = bucket_id_from_file_id(&s.file_id) {
            buckets.insert((s.partition_path.clone(), b));
        }
    }
    (groups, buckets)
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
            catalog: None,
        }
    }

    /// Syncs the Glue Data Catalog after every commit and services run (best effort, after the lock is
    /// released: a catalog failure never fails or holds up a commit).
    pub fn with_catalog(mut self, catalog: Arc<crate::catalog::CatalogSync>) -> Self {
        self.catalog = Some(catalog);
        self
    }

    /// The report of the catalog sync the last request ran, once (for its metrics).
    pub fn take_catalog_report(&self) -> Option<crate::catalog::CatalogSyncReport> {
        self.catalog.as_ref().and_then(|c| c.take_report())
    }

    /// The catalog sync after a commit of `known` partitions at `instant` (or a services run: `None`).
    async fn sync_catalog(&self, known: Option<(InstantTime, std::collections::BTreeSet<String>)>) {
        if let Some(catalog) = &self.catalog {
            let known: Vec<_> = known.into_iter().collect();
            catalog
                .after_commit(self.storage.as_ref(), None, &known)
                .await;
        }
    }

    /// Lets the services cluster the small files of this table, writing base files as `config` says. Only
    /// insert tables are clustered: bucket-indexed file groups are fixed per bucket, so a bucket-indexed
    /// `config` (or `hoodie.parquet.small.file.limit=0`) leaves clustering off.
    pub fn with_clustering(mut self, config: crate::config::write_config::WriteConfig) -> Self {
        let clusterable = matches!(config.index, crate::config::write_config::IndexConfig::None)
            && self.config.services.small_file_limit > 0;
        self.clustering = clusterable.then(|| {
            Arc::new(Clustering {
                config,
                writer: tokio::sync::Mutex::new(None),
                view: tokio::sync::Mutex::new(crate::table::fs_view::FileSystemView::new()),
                commits: std::sync::atomic::AtomicU32::new(0),
            })
        });
        self
    }

    /// One clustering run (it takes the lock for planning and completion only), when this coordinator may
    /// cluster and the table exists.
    async fn cluster(&self) -> Result<crate::services::ServiceReport, WriteError> {
        let Some(clustering) = &self.clustering else {
            return Ok(crate::services::ServiceReport::default());
        };
        let writer = {
            let mut slot = clustering.writer.lock().await;
            match slot.as_ref() {
                Some(w) => w.clone(),
                None => {
                    match TableProperties::load(self.storage.as_ref()).await {
                        Ok(_) => {}
                        // No table yet: nothing to cluster.
                        Err(e) if e.is_not_found() => {
                            return Ok(crate::services::ServiceReport::default())
                        }
                        Err(e) => return Err(e.into()),
                    }
                    let w = Arc::new(
                        crate::write::TableWriter::create_or_open(
                            self.storage.clone(),
                            self.clock.clone(),
                            clustering.config.clone(),
                            None,
                        )
                        .await?,
                    );
                    *slot = Some(w.clone());
                    w
                }
            }
        };
        crate::services::cluster::run(
            self.storage.as_ref(),
            self.lock.as_ref(),
            self.config.lock_wait,
            self.clock.as_ref(),
            &self.config.services,
            &writer,
            self.config.heartbeat_tolerance,
            Some(&clustering.view),
        )
        .await
    }

    /// Clustering after a commit, every `hoodie.clustering.inline.max.commits` commits of this coordinator
    /// (best effort, like the other inline services; it runs after the commit's lock is released).
    async fn inline_clustering(&self) {
        let Some(clustering) = &self.clustering else {
            return;
        };
        let services = &self.config.services;
        if !services.clustering_inline {
            return;
        }
        let n = clustering
            .commits
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            + 1;
        if n < services.clustering_max_commits {
            return;
        }
        clustering
            .commits
            .store(0, std::sync::atomic::Ordering::SeqCst);
        match self.cluster().await {
            Ok(report) if report.cluster_instant.is_some() => {
                tracing::info!(?report, "inline clustering");
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "inline clustering failed; a later run retries"),
        }
    }

    fn service_context<'a>(&'a self, guard: &'a LockGuard) -> crate::services::ServiceContext<'a> {
        crate::services::ServiceContext {
            storage: self.storage.as_ref(),
            guard,
            clock: self.clock.as_ref(),
            config: &self.config.services,
        }
    }

    /// Clean (when `clean`), then archive (when `archive`) `timeline`, read from the `.hoodie/` listing
    /// `listed`: the part of the table services that the scheduled run and the inline run after a commit
    /// share. The timeline is listed again only when the clean wrote an instant.
    async fn clean_and_archive(
        &self,
        ctx: &crate::services::ServiceContext<'_>,
        timeline: &Timeline,
        listed: &[ObjectMeta],
        clean: bool,
        archive: bool,
    ) -> Result<crate::services::ServiceReport, WriteError> {
        let mut report = crate::services::ServiceReport::default();
        let mut relisted = None;
        if clean {
            let outcome =
                crate::services::clean::run(ctx, timeline, &self.commits, &self.clean_memo).await?;
            if outcome.instant.is_some() {
                relisted = Some(ctx.storage.list(crate::table::timeline::META_DIR).await?);
            }
            report.files_cleaned += outcome.files_deleted;
            report.resumed += outcome.resumed;
            report.clean_instant = outcome.instant.map(|t| t.to_string());
        }
        if archive {
            let (timeline, listed) = match &relisted {
                Some(l) => (
                    std::borrow::Cow::Owned(Timeline::from_listing(l)?),
                    l.as_slice(),
                ),
                None => (std::borrow::Cow::Borrowed(timeline), listed),
            };
            let archived =
                crate::services::archive::run(ctx, &timeline, listed, &self.clean_memo).await?;
            self.commits.retain_active_except(&timeline, &archived);
            report.instants_archived += archived.len() as u64;
        }
        Ok(report)
    }

    /// Clean and archive after a commit, when due. Best effort: the commit is already durable, so a failure
    /// here is logged and retried by the next commit or the scheduled run, never reported to the writer.
    async fn inline_services(&self, guard: &LockGuard, timeline: &Timeline, listed: &[ObjectMeta]) {
        let ctx = self.service_context(guard);
        let services = &self.config.services;
        let clean = crate::services::clean::is_due(timeline, &ctx);
        let archive = services.archive_automatic && !services.archive_async;
        match self
            .clean_and_archive(&ctx, timeline, listed, clean, archive)
            .await
        {
            Ok(report) if report != crate::services::ServiceReport::default() => {
                tracing::info!(?report, "inline table services");
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "inline table services failed; the next run retries")
            }
        }
    }

    /// The checkpoint of the latest completed commit that has one (empty for none), read only when it is not
    /// the one remembered.
    async fn latest_checkpoint(&self, timeline: &Timeline) -> Result<Checkpoint, WriteError> {
        let latest = timeline.completed_commits().last().map(|i| i.time.clone());
        if let Some(latest) = &latest {
            if let Some((time, checkpoint)) = self.remembered_checkpoint() {
                if time == *latest {
                    return Ok(checkpoint);
                }
            }
        }
        let found = timeline.latest_checkpoint(self.storage.as_ref()).await?;
        match found {
            Some((instant, checkpoint)) => {
                if latest.as_ref() == Some(&instant.time) {
                    self.remember_checkpoint(instant.time, checkpoint.clone());
                }
                Ok(checkpoint)
            }
            None => Ok(Checkpoint::default()),
        }
    }

    fn remembered_checkpoint(&self) -> Option<(InstantTime, Checkpoint)> {
        self.last_checkpoint
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn remember_checkpoint(&self, instant: InstantTime, checkpoint: Checkpoint) {
        *self
            .last_checkpoint
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some((instant, checkpoint));
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
                let instant = parse_instant(&instant)?;
                let guard = self.lock().await?;
                let result = self.abort_locked(&guard, &instant).await;
                self.unlock(guard, result).await
            }
            CoordinatorRequest::Services => {
                self.run_services().await?;
                Ok(CoordinatorResponse::Done)
            }
        }
    }

    /// The scheduled table-services run: rolls back failed writes, removes leftovers, then cleans, archives
    /// and clusters as the settings say, and reports what it did.
    pub async fn run_services(&self) -> Result<crate::services::ServiceReport, WriteError> {
        let started = std::time::Instant::now();
        let guard = self.lock().await?;
        let result = async {
            let storage = self.storage.as_ref();
            let timeline = Timeline::load(storage).await?;
            self.rollback_expired(&guard, &timeline, None).await?;
            self.clean_completed_leftovers(&guard, &timeline).await?;
            self.sweep_retired(&guard).await?;
            let ctx = self.service_context(&guard);
            let listed = storage.list(crate::table::timeline::META_DIR).await?;
            let timeline = Timeline::from_listing(&listed)?;
            let services = &self.config.services;
            self.clean_and_archive(
                &ctx,
                &timeline,
                &listed,
                services.clean_automatic,
                services.archive_automatic,
            )
            .await
        }
        .await;
        let mut report = self.unlock(guard, result).await?;
        report.merge(self.cluster().await?);
        self.sync_catalog(None).await;
        report.duration_ms = started.elapsed().as_millis() as u64;
        Ok(report)
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

    /// Rolls back `instant` unless it completed meanwhile: `timeline` may be stale if this coordinator was
    /// paused, and the rollback of a completed instant would delete committed data.
    async fn rollback_fenced(
        &self,
        guard: &LockGuard,
        instant: &InstantTime,
    ) -> Result<bool, WriteError> {
        self.fence(guard).await?;
        let commit_file = format!(
            ".hoodie/{}",
            Instant::new(instant.clone(), Action::Commit, State::Completed).file_name()
        );
        if self.storage.head(&commit_file).await?.is_some() {
            return Ok(false);
        }
        rollback_failed(self.storage.as_ref(), instant).await?;
        Ok(true)
    }

    /// Rolls back every pending commit whose heartbeat is older than the tolerance. Pending instants of
    /// other actions (another engine's clean or clustering) are left alone. `reported` is the committing
    /// instant with the newest heartbeat its writer knows was stored: the stored one can only be newer, so
    /// when the reported one is within the tolerance the instant is alive without reading it back (a read
    /// saved per commit), and the decision is the one the read would give.
    async fn rollback_expired(
        &self,
        guard: &LockGuard,
        timeline: &Timeline,
        reported: Option<(&InstantTime, i64)>,
    ) -> Result<Vec<InstantTime>, WriteError> {
        let storage = self.storage.as_ref();
        let now = self.clock.now_millis();
        let tolerance = self.config.heartbeat_tolerance.as_millis() as i64;
        let mut rolled_back = Vec::new();
        for pending in timeline.pending() {
            if pending.action != Action::Commit {
                continue;
            }
            // A reported heartbeat that is fresh settles it: the stored one is at least as new. A stale
            // one does not (the writer kept beating while its request waited, e.g. for the lock): read.
            if reported.is_some_and(|(instant, ms)| {
                *instant == pending.time && now.saturating_sub(ms) <= tolerance
            }) {
                continue;
            }
            let last_beat = read_heartbeat(storage, &pending.time).await?;
            // Without a readable heartbeat, the instant's own time is its last sign of life.
            let last = match last_beat {
                Some(ms) => ms,
                None => pending.time.to_millis().unwrap_or(0),
            };
            if now - last > tolerance {
                tracing::info!(instant = %pending.time, last_heartbeat_ms = last, "rolling back failed write");
                if self.rollback_fenced(guard, &pending.time).await? {
                    rolled_back.push(pending.time.clone());
                }
            }
        }
        Ok(rolled_back)
    }

    async fn abort_locked(
        &self,
        guard: &LockGuard,
        instant: &InstantTime,
    ) -> Result<CoordinatorResponse, WriteError> {
        self.rollback_fenced(guard, instant).await?;
        Ok(CoordinatorResponse::Done)
    }

    async fn begin(&self, writer: &str) -> Result<CoordinatorResponse, WriteError> {
        let guard = self.lock().await?;
        let result = self.begin_locked(&guard, writer).await;
        self.unlock(guard, result).await
    }

    /// Deletes markers and heartbeats left by completed instants (a coordinator that failed right after
    /// creating `<t>.commit` never got to its clean-up) and by instants that were rolled back.
    async fn clean_completed_leftovers(
        &self,
        guard: &LockGuard,
        timeline: &Timeline,
    ) -> Result<(), WriteError> {
        let storage = self.storage.as_ref();
        let mut listed = storage.list(".hoodie/.temp/").await?;
        listed.extend(storage.list(".hoodie/.heartbeat/").await?);
        self.clean_leftovers_listed(guard, timeline, &listed).await
    }

    /// [`Coordinator::clean_completed_leftovers`] over objects already listed (with the timeline, in the same
    /// listing or after it).
    async fn clean_leftovers_listed(
        &self,
        guard: &LockGuard,
        timeline: &Timeline,
        listed: &[ObjectMeta],
    ) -> Result<(), WriteError> {
        let storage = self.storage.as_ref();
        let mut zombies = std::collections::BTreeSet::new();
        let mut done = Vec::new();
        for prefix in [".hoodie/.temp/", ".hoodie/.heartbeat/"] {
            for obj in listed.iter().filter(|o| o.path.starts_with(prefix)) {
                let rest = &obj.path[prefix.len()..];
                let instant = rest.split('/').next().unwrap_or_default();
                let Ok(instant) = InstantTime::parse(instant) else {
                    continue;
                };
                let archived = !timeline.is_retired(&instant)
                    && timeline
                        .instants()
                        .first()
                        .is_some_and(|first| instant < first.time);
                if timeline.is_completed_commit(&instant) || archived {
                    // Completed, or archived (older than the active timeline and not rolled back).
                    done.push(obj.path.clone());
                } else if !timeline.contains(&instant) {
                    // Rolled back, yet written to since: a zombie writer (paused past its heartbeat, then
                    // resumed) kept writing. Instants are created under the lock before their heartbeat and
                    // markers, so a live write is never absent from the timeline.
                    zombies.insert(instant);
                }
            }
        }
        if !done.is_empty() {
            storage.delete_many(&done).await?;
        }
        for instant in zombies {
            self.rollback_fenced(guard, &instant).await?;
        }
        Ok(())
    }

    /// Table service: deletes base files of rolled-back instants that a zombie writer (paused past its
    /// heartbeat, then resumed) wrote after the rollback, when no marker or heartbeat is left to find them by.
    /// Readers already ignore such files (their instant is not on the timeline); this keeps them from piling up
    /// and from being taken for archived commits later. Once a retired time is older than the grace
    /// (`hudi.sink.services.retired.grace.ms`), no zombie of it can upload any more: after this sweep its
    /// record goes, and archival may pass it. One listing of the whole table, so it runs with the scheduled
    /// services (and only while some time is retired), never with every commit.
    async fn sweep_retired(&self, guard: &LockGuard) -> Result<(), WriteError> {
        let storage = self.storage.as_ref();
        let retired: std::collections::BTreeSet<InstantTime> = storage
            .list(crate::table::timeline::RETIRED_DIR)
            .await?
            .iter()
            .filter_map(|o| {
                o.path
                    .strip_prefix(crate::table::timeline::RETIRED_DIR)
                    .and_then(|t| InstantTime::parse(t).ok())
            })
            .collect();
        if retired.is_empty() {
            return Ok(());
        }
        self.fence(guard).await?;
        crate::write::delete_base_files(storage, |t| retired.contains(t)).await?;
        let now = self.clock.now_millis();
        let grace = self.config.services.retired_grace.as_millis() as i64;
        let mut done = Vec::new();
        for time in &retired {
            let expired = time
                .to_millis()
                .is_some_and(|ms| now.saturating_sub(ms) > grace);
            if expired {
                for marker in storage
                    .list(&format!("{}/", crate::table::file_name::marker_dir(time)))
                    .await?
                {
                    done.push(marker.path);
                }
                done.push(heartbeat_path(time));
                done.push(format!("{}{time}", crate::table::timeline::RETIRED_DIR));
            }
        }
        if !done.is_empty() {
            self.fence(guard).await?;
            storage.delete_many(&done).await?;
        }
        Ok(())
    }

    async fn begin_locked(
        &self,
        guard: &LockGuard,
        writer: &str,
    ) -> Result<CoordinatorResponse, WriteError> {
        {
            let storage = self.storage.as_ref();
            // One listing of `.hoodie/` serves the timeline and the leftovers. The table properties are not
            // read here: the writer checked them when it opened the table, and the commit checks them again.
            let listed = storage.list(crate::table::timeline::META_DIR).await?;
            let timeline = Timeline::from_listing(&listed)?;
            if !is_disabled(Mutation::RollbackBeforeCommit) {
                self.rollback_expired(guard, &timeline, None).await?;
            }
            self.clean_leftovers_listed(guard, &timeline, &listed)
                .await?;
            let instant = InstantTime::next_after(self.clock.as_ref(), timeline.last_used_time());
            crate::write::create_pending_instant(storage, &instant).await?;
            let heartbeat_ms = write_heartbeat(storage, self.clock.as_ref(), &instant).await?;
            let checkpoint = self.latest_checkpoint(&timeline).await?;
            tracing::info!(%instant, writer, "instant begun");
            Ok(CoordinatorResponse::Begun {
                instant: instant.to_string(),
                base_instant: timeline.latest_completed().map(|i| i.time.to_string()),
                checkpoint: checkpoint.to_sink_json(),
                heartbeat_ms: Some(heartbeat_ms),
            })
        }
    }

    async fn commit(&self, req: CommitRequest) -> Result<CoordinatorResponse, WriteError> {
        let written: std::collections::BTreeSet<String> = req
            .write_stats
            .iter()
            .map(|s| s.partition_path.clone())
            .collect();
        let guard = self.lock().await?;
        let result = self.commit_locked(&guard, req).await;
        let response = self.unlock(guard, result).await?;
        if let CoordinatorResponse::Committed { instant } = &response {
            self.inline_clustering().await;
            let known = InstantTime::parse(instant).ok().map(|t| (t, written));
            self.sync_catalog(known).await;
        }
        Ok(response)
    }

    async fn commit_locked(
        &self,
        guard: &crate::lock::LockGuard,
        req: CommitRequest,
    ) -> Result<CoordinatorResponse, WriteError> {
        let instant = parse_instant(&req.instant)?;
        let base = req.base_instant.as_deref().map(parse_instant).transpose()?;
        let operation: OperationType = req.operation.parse()?;
        {
            let storage = self.storage.as_ref();
            TableProperties::load(storage).await?.validate_writable()?;
            // One listing of `.hoodie/`: the timeline, and this instant's markers to delete once committed
            // (its writer has written them all before asking for the commit).
            let listed = storage.list(crate::table::timeline::META_DIR).await?;
            let timeline = Timeline::from_listing(&listed)?;
            let commit_file = format!(
                ".hoodie/{}",
                Instant::new(instant.clone(), Action::Commit, State::Completed).file_name()
            );
            if timeline.is_completed_commit(&instant) {
                // A retry of a commit whose answer was lost: success only if it is the same commit.
                let stored = CommitMetadata::from_json(&storage.get(&commit_file).await?)?;
                let same = stored.write_stats().cloned().collect::<Vec<_>>();
                let mut asked = req.write_stats.clone();
                asked.sort_by(|a, b| {
                    (&a.partition_path, &a.path).cmp(&(&b.partition_path, &b.path))
                });
                let mut same_sorted = same;
                same_sorted.sort_by(|a, b| {
                    (&a.partition_path, &a.path).cmp(&(&b.partition_path, &b.path))
                });
                if same_sorted == asked {
                    return Ok(CoordinatorResponse::Committed {
                        instant: instant.to_string(),
                    });
                }
                return Err(WriteError::InstantExists {
                    instant: instant.to_string(),
                    file: commit_file,
                });
            }
            let rolled_back = if is_disabled(Mutation::RollbackBeforeCommit) {
                Vec::new()
            } else {
                let reported = req.last_heartbeat_ms.map(|ms| (&instant, ms));
                self.rollback_expired(guard, &timeline, reported).await?
            };
            // Read again only if that changed it (we hold the lock: nobody else changes the timeline).
            let timeline = if rolled_back.is_empty() {
                timeline
            } else {
                Timeline::load(storage).await?
            };
            // A rollback retires the time before it deletes anything: a retired instant never completes, even
            // when a rollback that lost its lease half-way has not removed its timeline files yet.
            let retired = format!("{}{instant}", crate::table::timeline::RETIRED_DIR);
            if !timeline.contains(&instant) || listed.iter().any(|o| o.path == retired) {
                return Ok(CoordinatorResponse::RolledBack {
                    instant: instant.to_string(),
                });
            }
            // Optimistic concurrency: commits completed after the writer's base must not share its file
            // groups or buckets.
            let (groups, buckets) = touched(&req.write_stats);
            let occ = !is_disabled(Mutation::OccCheck);
            // Completion must follow instant order: readers (and HoodieStreamer) take the checkpoint of the
            // latest instant, so an older instant completing after a newer one would hide its offsets. A
            // replacecommit (clustering) carries no checkpoint and is skipped by checkpoint readers.
            if let Some(newer) = timeline
                .completed_commits()
                .into_iter()
                .find(|done| occ && done.time > instant && done.action != Action::ReplaceCommit)
            {
                return Ok(CoordinatorResponse::Conflict {
                    reason: format!(
                        "instant {instant} is older than commit {} completed meanwhile",
                        newer.time
                    ),
                });
            }
            for done in timeline.completed_commits().into_iter().filter(|_| occ) {
                if base.as_ref().is_some_and(|b| done.time <= *b) {
                    continue;
                }
                let stats: Vec<WriteStat> = if done.action == Action::ReplaceCommit {
                    let meta = timeline.replace_commit_metadata(storage, done).await?;
                    let mut s: Vec<WriteStat> = meta.commit.write_stats().cloned().collect();
                    for (p, f) in meta.replaced_file_groups() {
                        s.push(WriteStat::new(f, p, ""));
                    }
                    s
                } else {
                    timeline
                        .commit_metadata(storage, done)
                        .await?
                        .write_stats()
                        .cloned()
                        .collect()
                };
                let (their_groups, their_buckets) = touched(&stats);
                if let Some((p, f)) = groups.intersection(&their_groups).next() {
                    return Ok(CoordinatorResponse::Conflict {
                        reason: format!(
                            "file group {f} in partition {p:?} was changed by commit {}",
                            done.time
                        ),
                    });
                }
                if let Some((p, b)) = buckets.intersection(&their_buckets).next() {
                    return Ok(CoordinatorResponse::Conflict {
                        reason: format!(
                            "bucket {b} in partition {p:?} was changed by commit {}",
                            done.time
                        ),
                    });
                }
            }
            // Exactly once: no offset may be committed twice.
            let mut checkpoint = self.latest_checkpoint(&timeline).await?;
            if crate::protocol::checkpoint_covers(&checkpoint, &req.offsets)
                && !is_disabled(Mutation::CheckpointFilter)
            {
                return Ok(CoordinatorResponse::AlreadyCommitted {
                    checkpoint: checkpoint.to_sink_json(),
                });
            }
            verify_files(storage, &instant, &req.write_stats).await?;
            for topic in &req.offsets {
                for r in &topic.ranges {
                    checkpoint.set(&topic.topic, r.partition, r.last + 1);
                }
            }
            let mut commit = CommitMetadata::new(operation);
            for stat in req.write_stats.iter().cloned() {
                commit.add_write_stat(stat);
            }
            commit.set_schema(&req.schema);
            if !checkpoint.is_empty() {
                checkpoint.write_to(&mut commit.extra_metadata)?;
            }
            let body = Bytes::from(commit.to_json_pretty()?);
            // Fencing: a coordinator whose lease was lost (e.g. paused past its lease) must not commit.
            self.fence(guard).await?;
            let outcome = if is_disabled(Mutation::AtomicCommitCreate) {
                storage.put(&commit_file, body).await?;
                PutOutcome::Created
            } else {
                storage.put_if_absent(&commit_file, body).await?
            };
            match outcome {
                PutOutcome::Created => self.remember_checkpoint(instant.clone(), checkpoint),
                PutOutcome::AlreadyExists => {
                    return Err(WriteError::InstantExists {
                        instant: instant.to_string(),
                        file: commit_file,
                    })
                }
            }
            // Markers and heartbeat in one request (S3): a leftover would only be cleaned later.
            let marker_dir = format!(".hoodie/.temp/{instant}/");
            let mut done: Vec<String> = listed
                .iter()
                .filter(|o| o.path.starts_with(&marker_dir))
                .map(|o| o.path.clone())
                .collect();
            done.push(heartbeat_path(&instant));
            storage.delete_many(&done).await?;
            tracing::info!(%instant, files = req.write_stats.len(), "instant committed");
            let committed = timeline.with_instant(Instant::new(
                instant.clone(),
                Action::Commit,
                State::Completed,
            ));
            self.inline_services(guard, &committed, &listed).await;
            Ok(CoordinatorResponse::Committed {
                instant: instant.to_string(),
            })
        }
    }
}

/// Parses the checkpoint a coordinator returns.
pub fn parse_checkpoint(json: &str) -> Result<Checkpoint, WriteError> {
    if json.trim() == "{}" || json.trim().is_empty() {
        return Ok(Checkpoint::default());
    }
    Ok(Checkpoint::parse_sink_json(json)?)
}
