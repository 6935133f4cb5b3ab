//! The table services as the coordinator runs them (docs/architecture.md, "Table services"): the scheduled
//! run (`services` request, `hudi-sink services`), and the inline runs after a commit.
//!
//! ```text
//! scheduled: compact ─ lock ─ roll back expired ─ leftovers ─ sweep retired ─ clean ─ archive ─ unlock ─ cluster
//! inline:    (under the commit's lock, after <t>.commit) clean if due ─ archive
//!            │ (after unlock) compact if due ─ cluster
//! ```
//!
//! Compaction (merge-on-read) takes the lock itself, for planning and completion only: its merge runs
//! outside it, after the commit's lock is released, so writers keep committing while it merges
//! (`services::compact`). Its cost per run is bounded by `hudi.sink.compaction.max.file.groups` groups, each
//! merged with memory bounded by its log records.
//!
//! The services themselves live in [`crate::services`]; this file holds what the coordinator keeps for them
//! between runs while warm (commit metadata, the last clean's scan, the clustering writer and its view).
//! Inline runs are best effort: the commit is durable already, so a failure is logged and retried later.

use std::sync::Arc;

use crate::lock::LockGuard;
use crate::services::ServiceReport;
use crate::storage::ObjectMeta;
use crate::table::properties::TableProperties;
use crate::table::timeline::Timeline;
use crate::write::WriteError;

use super::Coordinator;

/// What clustering needs beyond the services' settings.
#[derive(Debug)]
pub(super) struct Clustering {
    config: crate::write::WriteConfig,
    writer: tokio::sync::Mutex<Option<Arc<crate::write::TableWriter>>>,
    /// The latest slices, kept from the timeline between inline runs (no listing of the table per run).
    view: tokio::sync::Mutex<crate::table::fs_view::FileSystemView>,
    /// Commits this coordinator completed since its last inline clustering.
    commits: std::sync::atomic::AtomicU32,
}

/// What inline compaction needs beyond the services' settings.
#[derive(Debug)]
pub(super) struct Compaction {
    base_file: crate::base_file::writer::BaseFileOptions,
    /// The latest slices, kept from the timeline between runs (no listing of the table per run).
    view: tokio::sync::Mutex<crate::table::fs_view::FileSystemView>,
    /// The timeline with the last commit this coordinator made, for the due check after the lock is
    /// released (no listing of its own).
    committed: std::sync::Mutex<Option<Timeline>>,
}

impl Coordinator {
    /// Lets the services compact this merge-on-read table (`config`'s table type), writing base files as
    /// `config` says; a copy-on-write `config` leaves compaction off.
    pub fn with_compaction(mut self, config: &crate::write::WriteConfig) -> Self {
        let mor = config.table_type == crate::table::properties::TableType::MergeOnRead;
        self.compaction = mor.then(|| {
            Arc::new(Compaction {
                base_file: config.base_file.clone(),
                view: tokio::sync::Mutex::new(crate::table::fs_view::FileSystemView::new()),
                committed: std::sync::Mutex::new(None),
            })
        });
        self
    }

    /// One compaction, when this coordinator may compact and one is due: it takes the lock to plan and to
    /// complete, and merges without it (`services::compact::run`).
    async fn compact(&self) -> Result<ServiceReport, WriteError> {
        let Some(compaction) = &self.compaction else {
            return Ok(ServiceReport::default());
        };
        let runner = crate::services::compact::Runner {
            storage: self.storage.as_ref(),
            lock: self.lock.as_ref(),
            lock_wait: self.config.lock_wait,
            clock: self.clock.as_ref(),
            config: &self.config.services,
            heartbeat_tolerance: self.config.heartbeat_tolerance,
        };
        let report = if self.config.services.compaction_merge_locked {
            // The whole compaction under one lock hold (a table shared with another engine's writers).
            let guard = self.lock().await?;
            let result = async {
                let timeline =
                    crate::table::timeline::Timeline::load(self.storage.as_ref()).await?;
                crate::services::compact::compact(
                    &self.service_context(&guard),
                    &timeline,
                    Some(&compaction.view),
                    &compaction.base_file,
                )
                .await
            }
            .await;
            self.unlock(guard, result).await?
        } else {
            crate::services::compact::run(&runner, Some(&compaction.view), &compaction.base_file)
                .await?
        };
        if let Some(r) = &report {
            tracing::info!(
                instant = %r.instant,
                groups = r.file_groups,
                left_out = r.left_out,
                logs = r.log_files,
                carried = r.carried,
                completion_lock_ms = r.completion_lock_ms,
                "compaction"
            );
        }
        Ok(report.map(|r| r.to_service_report()).unwrap_or_default())
    }

    /// Under a commit's lock: keeps the timeline with the new commit for the inline compaction's due check
    /// after the lock is released.
    pub(super) fn note_committed(&self, committed: &Timeline) {
        if let Some(compaction) = &self.compaction {
            if let Ok(mut slot) = compaction.committed.lock() {
                *slot = Some(committed.clone());
            }
        }
    }

    /// Compaction after a deltacommit (`hoodie.compact.inline`), once the commit's lock is released, when
    /// one is due on the timeline of the last commit (best effort, like the other inline services).
    pub(super) async fn inline_compaction(&self) {
        let Some(compaction) = &self.compaction else {
            return;
        };
        if !self.config.services.compact_inline {
            return;
        }
        let committed = compaction.committed.lock().ok().and_then(|mut s| s.take());
        let Some(timeline) = committed else {
            return;
        };
        let due = crate::services::compact::is_due(
            self.storage.as_ref(),
            &timeline,
            &compaction.view,
            &self.config.services,
        )
        .await;
        match due {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => {
                tracing::warn!(error = %e, "inline compaction skipped; a later run retries");
                self.note_service_failure("compaction", &e);
                return;
            }
        }
        match self.compact().await {
            Ok(report) if report.compaction_instant.is_some() => {
                tracing::info!(?report, "inline compaction");
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "inline compaction failed; a later run retries");
                self.note_service_failure("compaction", &e);
            }
        }
    }

    /// Lets the services cluster the small files of this table, writing base files as `config` says. Only
    /// insert tables are clustered: bucket-indexed file groups are fixed per bucket, so a bucket-indexed
    /// `config` (or `hoodie.parquet.small.file.limit=0`) leaves clustering off.
    pub fn with_clustering(mut self, config: crate::write::WriteConfig) -> Self {
        let clusterable = matches!(config.index, crate::write::IndexConfig::None)
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
    pub(super) async fn cluster(&self) -> Result<ServiceReport, WriteError> {
        let Some(clustering) = &self.clustering else {
            return Ok(ServiceReport::default());
        };
        let writer = {
            let mut slot = clustering.writer.lock().await;
            match slot.as_ref() {
                Some(w) => w.clone(),
                None => {
                    match TableProperties::load(self.storage.as_ref()).await {
                        Ok(_) => {}
                        // No table yet: nothing to cluster.
                        Err(e) if e.is_not_found() => return Ok(ServiceReport::default()),
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
    pub(super) async fn inline_clustering(&self) {
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
                self.mirror_locked().await;
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "inline clustering failed; a later run retries");
                self.note_service_failure("clustering", &e);
            }
        }
    }

    pub(super) fn service_context<'a>(
        &'a self,
        guard: &'a LockGuard,
    ) -> crate::services::ServiceContext<'a> {
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
    ) -> Result<ServiceReport, WriteError> {
        let mut report = ServiceReport::default();
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
    /// Returns whether the timeline may have changed (a service wrote or removed instants, or failed).
    pub(super) async fn inline_services(
        &self,
        guard: &LockGuard,
        timeline: &Timeline,
        listed: &[ObjectMeta],
    ) -> bool {
        let ctx = self.service_context(guard);
        let services = &self.config.services;
        let clean = crate::services::clean::is_due(timeline, &ctx);
        let archive = services.archive_automatic && !services.archive_async;
        match self
            .clean_and_archive(&ctx, timeline, listed, clean, archive)
            .await
        {
            Ok(report) if report != ServiceReport::default() => {
                tracing::info!(?report, "inline table services");
                true
            }
            Ok(_) => false,
            Err(e) => {
                tracing::warn!(error = %e, "inline table services failed; the next run retries");
                self.note_service_failure("clean and archive", &e);
                true
            }
        }
    }

    /// The scheduled table-services run: rolls back failed writes, removes leftovers, then cleans, archives
    /// and clusters as the settings say, and reports what it did.
    pub async fn run_services(&self) -> Result<ServiceReport, WriteError> {
        let started = std::time::Instant::now();
        // Compaction first (it takes the lock itself, and merges without it): archival may pass deltacommits
        // (and compactions that carried logs) only once their logs are compacted.
        let compacted = self.compact().await?;
        let guard = self.lock().await?;
        let result = async {
            let storage = self.storage.as_ref();
            let timeline = Timeline::load(storage).await?;
            self.rollback_expired(&guard, &timeline, None).await?;
            self.clean_completed_leftovers(&guard, &timeline).await?;
            self.sweep_retired(&guard).await?;
            let ctx = self.service_context(&guard);
            let mut report = compacted;
            let listed = storage.list(crate::table::timeline::META_DIR).await?;
            let timeline = Timeline::from_listing(&listed)?;
            let services = &self.config.services;
            // The Delta mirror catches up first (compaction may have completed an instant); a mirror that is
            // behind keeps the cleaner and archival waiting.
            let mirrored = self.mirror(&timeline).await
                || crate::mutation::is_disabled(
                    crate::mutation::Mutation::DeltaCleanWaitsForMirror,
                );
            report.merge(
                self.clean_and_archive(
                    &ctx,
                    &timeline,
                    &listed,
                    services.clean_automatic && mirrored,
                    services.archive_automatic && mirrored,
                )
                .await?,
            );
            Ok(report)
        }
        .await;
        let mut report = self.unlock(guard, result).await?;
        let clustered = self.cluster().await?;
        if clustered.cluster_instant.is_some() {
            self.mirror_locked().await;
        }
        report.merge(clustered);
        self.sync_catalog(None).await;
        report.duration_ms = started.elapsed().as_millis() as u64;
        Ok(report)
    }
}
