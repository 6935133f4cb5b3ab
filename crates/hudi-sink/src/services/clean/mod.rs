//! CLEAN: deletes the file slices that no query inside the retention can read, as Spark's cleaner does, and
//! records each clean as Spark-compatible instants (`<t>.clean.requested`, `<t>.clean.inflight`: the Avro
//! `HoodieCleanerPlan`; `<t>.clean`: the Avro `HoodieCleanMetadata`).
//!
//! A file slice is a base file and, on merge-on-read tables, every log file named with its file id and base
//! instant (`.<fileId>_<baseInstant>.log.<version>_<token>`); a slice is deleted whole and the plan lists each
//! of its files, base first, as Spark's cleaner does. Slices are keyed by base instant, so on merge-on-read
//! tables new slices come from compaction commits; the retention counts every completed commit, deltacommit
//! and replacecommit.
//!
//! What it may delete (table-services.md §1.4), per file group, among *committed* slices only:
//! - `KEEP_LATEST_COMMITS` / `KEEP_LATEST_BY_HOURS`: slices older than the earliest commit to retain (ECR),
//!   except the group's latest slice and its newest slice older than the ECR (a query as of the ECR reads
//!   it); every slice of a group replaced by a completed replacecommit older than the ECR.
//! - `KEEP_LATEST_FILE_VERSIONS`: all but the newest `fileversions.retained` slices; replaced groups entirely.
//!
//! What it never deletes: a file of a pending or retired instant (such files are not committed slices; nor
//! are logs appended to a pending compaction's slice), a group's latest committed slice, any slice at or
//! after the ECR, a slice a pending compaction reads or any later one of its group, anything under
//! `.hoodie/`. When a pending compaction's plan cannot be read, nothing is cleaned until it can (or the
//! compaction is completed or rolled back): the cleaner cannot tell which slices it reads. Queries as of an
//! instant older than the ECR may then find files missing: hudi-rs returns partial results for them, so the
//! retention is "the last N commits" (docs/operations.md, "Table services").
//!
//! Cost: a clean scans only the partitions where commits since the previous clean's ECR wrote a new slice of
//! an existing group or replaced groups (Spark's incremental mode, narrowed to superseding writes), one
//! listing each; a full listing only when no earlier clean bounds the work. A crash at any step leaves a
//! pending clean that the next run re-runs from its plan (deletes are idempotent).

pub mod pending_compaction;
pub mod plan;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use bytes::Bytes;

pub use plan::{earliest_commit_to_retain, slices_to_delete, ListedSlice};

use super::commits::CommitCache;
use super::config::CleanerPolicy;
use super::ServiceContext;
use crate::log_file::LogFileName;
use crate::storage::{ObjectMeta, PutOutcome, Storage};
use crate::table::file_name::BaseFileName;
use crate::table::instant::{Action, Instant, InstantTime, State};
use crate::table::partition_metadata::PARTITION_METAFILE;
use crate::table::records::{
    ActionInstant, CleanFileInfo, CleanMetadata, CleanPartitionMetadata, CleanerPlan,
};
use crate::table::timeline::Timeline;
use crate::write::WriteError;

/// `extraMetadata` key of this sink's clean instants: the commits a `KEEP_LATEST_FILE_VERSIONS` clean
/// accounted for (later cleans scan only partitions written after it).
pub const SCANNED_THROUGH_KEY: &str = "hudi.sink.clean.scanned.through";
/// `extraMetadata` key naming the cleaner policy of the clean (Hudi 0.14's clean metadata has no policy field).
pub const POLICY_KEY: &str = "hudi.sink.clean.policy";

/// What a warm coordinator remembers between cleans: the work already done (a completed clean, or a scan
/// that found nothing to record), so that a clean that found nothing to delete (and wrote no instant) is not
/// redone on the next commit. A clean that failed before completing leaves it unchanged.
#[derive(Debug, Clone, Default)]
pub struct CleanMemo {
    inner: Arc<Mutex<Option<(CleanerPolicy, InstantTime)>>>,
    /// The last completed clean read, by instant (clean files never change).
    last: Arc<Mutex<Option<(Instant, CleanMetadata)>>>,
    /// Commit metadata archival reads on merge-on-read tables (which logs compaction has superseded).
    commits: CommitCache,
}

impl CleanMemo {
    /// [`last_completed_clean`], read once per clean instant.
    pub async fn last_completed_clean(
        &self,
        storage: &dyn Storage,
        timeline: &Timeline,
    ) -> Result<Option<(Instant, CleanMetadata)>, WriteError> {
        let latest = timeline
            .instants()
            .iter()
            .rev()
            .find(|i| i.action == Action::Clean && i.is_completed());
        let Some(latest) = latest else {
            return Ok(None);
        };
        if let Some(found) = self
            .last
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .filter(|(i, _)| i == latest)
        {
            return Ok(Some(found.clone()));
        }
        let found = last_completed_clean(storage, timeline).await?;
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = found.clone();
        Ok(found)
    }

    /// The commit metadata cache of archival (bounded by the active timeline: archival prunes it).
    pub fn commits(&self) -> &CommitCache {
        &self.commits
    }

    fn get(&self, policy: CleanerPolicy) -> Option<InstantTime> {
        match &*self.inner.lock().unwrap_or_else(|e| e.into_inner()) {
            Some((p, t)) if *p == policy => Some(t.clone()),
            _ => None,
        }
    }

    fn set(&self, policy: CleanerPolicy, cursor: InstantTime) {
        *self.inner.lock().unwrap_or_else(|e| e.into_inner()) = Some((policy, cursor));
    }
}

/// The outcome of one clean.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CleanOutcome {
    /// The completed clean instant, if one was written.
    pub instant: Option<InstantTime>,
    /// Data files deleted.
    pub files_deleted: u64,
    /// Pending cleans of earlier runs finished from their plans.
    pub resumed: u64,
}

fn service_err(instant: &InstantTime, reason: impl std::fmt::Display) -> WriteError {
    WriteError::Service {
        service: "clean",
        reason: format!("instant {instant}: {reason}"),
    }
}

/// The full path Spark writes into a plan for a path relative to the table.
pub fn full_path(storage: &dyn Storage, relative: &str) -> String {
    format!("{}/{relative}", storage.base_uri().trim_end_matches('/'))
}

/// The path relative to the table of a full path from a plan (this sink's or Spark's: `s3a://` and
/// `file:` spellings included); `None` when it lies outside the table.
pub fn relative_path(storage: &dyn Storage, full: &str) -> Option<String> {
    let base = storage.base_uri().trim_end_matches('/');
    let spellings = |p: &str| -> Vec<String> {
        let mut out = vec![p.to_string()];
        if let Some(rest) = p.strip_prefix("s3a://") {
            out.push(format!("s3://{rest}"));
        }
        if let Some(rest) = p.strip_prefix("s3://") {
            out.push(format!("s3a://{rest}"));
        }
        if let Some(rest) = p.strip_prefix("file://") {
            out.push(rest.to_string());
        }
        if let Some(rest) = p.strip_prefix("file:") {
            out.push(rest.to_string());
        }
        out
    };
    for b in spellings(base) {
        for f in spellings(full) {
            if let Some(rest) = f.strip_prefix(&b) {
                if let Some(rest) = rest.strip_prefix('/') {
                    if !rest.is_empty() && crate::storage::validate_relative_path(rest).is_ok() {
                        return Some(rest.to_string());
                    }
                }
            }
        }
    }
    None
}

/// The latest completed clean and its metadata, if any.
pub async fn last_completed_clean(
    storage: &dyn Storage,
    timeline: &Timeline,
) -> Result<Option<(Instant, CleanMetadata)>, WriteError> {
    let Some(instant) = timeline
        .instants()
        .iter()
        .rev()
        .find(|i| i.action == Action::Clean && i.is_completed())
    else {
        return Ok(None);
    };
    let bytes = storage.get(&instant.path()).await?;
    let meta = CleanMetadata::from_avro_bytes(&bytes)
        .map_err(|e| service_err(&instant.time, format!("clean metadata: {e}")))?;
    Ok(Some((instant.clone(), meta)))
}

/// Where the last clean left off for `policy`: the ECR (commit and hour policies) or the scanned-through
/// commit (file versions), if that is still on the active timeline (else a full scan is needed).
pub fn clean_cursor(
    timeline: &Timeline,
    last: Option<&CleanMetadata>,
    policy: CleanerPolicy,
) -> Option<InstantTime> {
    let last = last?;
    let recorded = match policy {
        CleanerPolicy::KeepLatestCommits | CleanerPolicy::KeepLatestByHours => {
            match last.extra_metadata.get(POLICY_KEY) {
                Some(p) if p == CleanerPolicy::KeepLatestFileVersions.as_str() => return None,
                _ => last.earliest_commit_to_retain.as_str(),
            }
        }
        CleanerPolicy::KeepLatestFileVersions => {
            last.extra_metadata.get(SCANNED_THROUGH_KEY)?.as_str()
        }
    };
    let cursor = InstantTime::parse(recorded).ok()?;
    let first = timeline.first_completed()?;
    (cursor >= first.time).then_some(cursor)
}

/// Whether an inline clean is due: `hoodie.clean.max.commits` completed commits since the last clean.
pub fn is_due(timeline: &Timeline, ctx: &ServiceContext<'_>) -> bool {
    if !ctx.config.clean_automatic || ctx.config.clean_async {
        return false;
    }
    let last_clean = timeline
        .instants()
        .iter()
        .rev()
        .find(|i| i.action == Action::Clean && i.is_completed())
        .map(|i| i.time.clone());
    let since = timeline
        .completed_commits()
        .into_iter()
        .filter(|c| last_clean.as_ref().is_none_or(|t| c.time > *t))
        .count();
    since >= ctx.config.clean_max_commits as usize
}

/// Slices by partition, then file group, then base instant, as a listing finds them (see [`committed_slices`]).
type SliceFiles = BTreeMap<String, BTreeMap<String, BTreeMap<InstantTime, SliceParts>>>;

/// The files of one slice found by a listing.
#[derive(Default)]
struct SliceParts {
    base: Option<String>,
    /// (name, path), sorted by name: reader order.
    logs: Vec<(LogFileName, String)>,
}

/// What a listed file is to the cleaner.
enum Listed {
    /// A base file: (partition, file id, instant).
    Base(String, String, InstantTime),
    /// A log file of a merge-on-read slice: (partition, name).
    Log(String, LogFileName),
}

/// Classifies a listed path: base files and data log files; everything else (the timeline, the partition
/// metadata, hidden files of other tools, CDC logs, unparsable names) is not a data file.
fn classify(path: &str) -> Option<Listed> {
    if path.starts_with(crate::table::timeline::META_DIR)
        || crate::table::timeline::is_non_data_path(path)
    {
        return None;
    }
    let (partition, name) = path.rsplit_once('/').unwrap_or(("", path));
    if name.starts_with(PARTITION_METAFILE) {
        return None;
    }
    if name.starts_with('.') {
        // Log names start with `.`: `.<fileId>_<baseInstant>.log.<version>_<token>`.
        return LogFileName::parse(name)
            .ok()
            .map(|log| Listed::Log(partition.to_string(), log));
    }
    if !name.ends_with(".parquet") {
        return None;
    }
    let base = BaseFileName::parse(name).ok()?;
    Some(Listed::Base(
        partition.to_string(),
        base.file_id,
        base.instant_time,
    ))
}

/// Committed slices by partition, then file group, from a listing (files directly inside each partition).
///
/// A slice is a base file and every log file named with its file id and base instant, or, for a log-only
/// group (written by other engines), those log files alone. It is committed when its base instant is (the
/// base file rule of [`crate::table::fs_view::SliceVisibility`]): logs appended to a pending compaction's
/// slice, or a failed write's base file and logs, are never candidates. A committed slice is deleted whole,
/// its logs of failed writes and rollback blocks included, as Spark's cleaner deletes it.
fn committed_slices(
    timeline: &Timeline,
    listed: &[ObjectMeta],
    partitions: Option<&BTreeSet<String>>,
) -> BTreeMap<String, BTreeMap<String, Vec<ListedSlice>>> {
    let mut found = SliceFiles::new();
    for object in listed {
        let (partition, file_id, instant, log) = match classify(&object.path) {
            Some(Listed::Base(p, id, t)) => (p, id, t, None),
            Some(Listed::Log(p, log)) => {
                (p, log.file_id.clone(), log.base_instant.clone(), Some(log))
            }
            None => continue,
        };
        if partitions.is_some_and(|set| !set.contains(&partition)) {
            continue;
        }
        let parts = found
            .entry(partition)
            .or_default()
            .entry(file_id)
            .or_default()
            .entry(instant)
            .or_default();
        match log {
            Some(log) => parts.logs.push((log, object.path.clone())),
            None => parts.base = Some(object.path.clone()),
        }
    }
    let rule = crate::table::fs_view::SliceVisibility::new(timeline, None);
    let mut out: BTreeMap<String, BTreeMap<String, Vec<ListedSlice>>> = BTreeMap::new();
    for (partition, groups) in found {
        for (file_id, slices) in groups {
            for (instant, mut parts) in slices {
                if !rule.is_committed(&instant) {
                    continue;
                }
                parts.logs.sort();
                out.entry(partition.clone())
                    .or_default()
                    .entry(file_id.clone())
                    .or_default()
                    .push(ListedSlice {
                        file_id: file_id.clone(),
                        instant,
                        base_path: parts.base,
                        log_paths: parts.logs.into_iter().map(|(_, p)| p).collect(),
                    });
            }
        }
    }
    out
}

/// Plans a clean: the plan and the ECR, or `None` when there is nothing to record.
async fn plan_clean(
    ctx: &ServiceContext<'_>,
    timeline: &Timeline,
    cache: &CommitCache,
    memo: &CleanMemo,
) -> Result<Option<(CleanerPlan, InstantTime)>, WriteError> {
    let storage = ctx.storage;
    let config = ctx.config;
    let policy = config.cleaner_policy;
    let ecr = earliest_commit_to_retain(timeline, config, ctx.clock.now_millis());
    let boundary = match policy {
        CleanerPolicy::KeepLatestFileVersions => plan::file_versions_boundary(timeline),
        _ => ecr.as_ref().map(|i| i.time.clone()),
    };
    let Some(boundary) = boundary else {
        return Ok(None);
    };
    // Slices pending compactions read stay; a plan that cannot be read hides which, so nothing is cleaned.
    let compacting = match pending_compaction::pending_operations(storage, timeline).await? {
        Ok(ops) => ops,
        Err((instant, e)) => {
            tracing::warn!(compaction = %instant, error = %e, "clean skipped: a pending compaction's plan cannot be read");
            return Ok(None);
        }
    };
    let mut pending: BTreeMap<String, BTreeMap<String, InstantTime>> = BTreeMap::new();
    for op in compacting {
        let base = pending
            .entry(op.partition_path)
            .or_default()
            .entry(op.file_id)
            .or_insert_with(|| op.base_instant.clone());
        if op.base_instant < *base {
            *base = op.base_instant;
        }
    }
    let last = memo.last_completed_clean(storage, timeline).await?;
    let durable = clean_cursor(timeline, last.as_ref().map(|(_, m)| m), policy);
    let cursor = match (durable, memo.get(policy)) {
        (Some(d), Some(m)) => Some(d.max(m)),
        (Some(d), None) => Some(d),
        // The memo alone is not enough: it may predate an archival.
        (None, _) => None,
    };
    if cursor.as_ref().is_some_and(|c| *c >= boundary) {
        return Ok(None);
    }
    // Which commits may have made slices obsolete since the cursor.
    let in_range = |t: &InstantTime| match policy {
        CleanerPolicy::KeepLatestFileVersions => {
            cursor.as_ref().is_none_or(|c| t > c) && *t <= boundary
        }
        _ => cursor.as_ref().is_none_or(|c| t >= c) && *t < boundary,
    };
    let mut partitions = BTreeSet::new();
    let mut replaced: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for commit in timeline.completed_commits() {
        let counts_as_replaced = match policy {
            CleanerPolicy::KeepLatestFileVersions => true,
            _ => commit.time < boundary,
        };
        if commit.action == Action::ReplaceCommit && counts_as_replaced {
            let summary = cache.get(storage, commit).await?;
            for (p, id) in summary.metadata.replaced_file_groups() {
                replaced
                    .entry(p.to_string())
                    .or_default()
                    .insert(id.to_string());
            }
        }
        if in_range(&commit.time) && cursor.is_some() {
            let summary = cache.get(storage, commit).await?;
            partitions.extend(summary.superseding_partitions().map(String::from));
        }
    }
    let listed = match &cursor {
        None => storage.list("").await?,
        Some(_) => {
            let mut all = Vec::new();
            for partition in &partitions {
                let prefix = if partition.is_empty() {
                    String::new()
                } else {
                    format!("{partition}/")
                };
                let found = storage.list(&prefix).await?;
                all.extend(found.into_iter().filter(|o| {
                    o.path
                        .strip_prefix(&prefix)
                        .is_some_and(|rest| !rest.contains('/'))
                }));
            }
            all
        }
    };
    let slices = committed_slices(timeline, &listed, cursor.as_ref().map(|_| &partitions));
    let mut per_partition: BTreeMap<String, Vec<CleanFileInfo>> = BTreeMap::new();
    let no_replaced = BTreeSet::new();
    let no_pending = BTreeMap::new();
    for (partition, groups) in &slices {
        let doomed = slices_to_delete(
            config,
            ecr.as_ref().map(|i| &i.time),
            groups,
            replaced.get(partition).unwrap_or(&no_replaced),
            pending.get(partition).unwrap_or(&no_pending),
        );
        if doomed.is_empty() {
            continue;
        }
        let infos = per_partition.entry(partition.clone()).or_default();
        for slice in &doomed {
            infos.extend(slice.paths().map(|path| CleanFileInfo {
                file_path: full_path(storage, path),
                is_bootstrap_base_file: false,
            }));
        }
    }
    let commits_since_clean = timeline
        .completed_commits()
        .into_iter()
        .filter(|c| last.as_ref().is_none_or(|(i, _)| c.time > i.time))
        .count();
    // An instant with nothing to delete is still written when no clean records the cursor durably yet, or
    // the recorded one lags by a retention's worth of commits (a cold coordinator then rescans little).
    let record_anyway =
        last.is_none() || commits_since_clean >= config.commits_retained.max(1) as usize;
    if per_partition.is_empty() && !record_anyway {
        // Nothing to do up to the boundary. A clean that has work remembers it only once it completed: a
        // warm coordinator whose plan failed to be written must plan it again.
        memo.set(policy, boundary);
        return Ok(None);
    }
    let mut extra = BTreeMap::new();
    extra.insert(POLICY_KEY.to_string(), policy.as_str().to_string());
    if policy == CleanerPolicy::KeepLatestFileVersions {
        extra.insert(SCANNED_THROUGH_KEY.to_string(), boundary.to_string());
    }
    let plan = CleanerPlan {
        earliest_instant_to_retain: ecr.as_ref().map(|i| ActionInstant {
            timestamp: i.time.to_string(),
            action: i.action.as_str().to_string(),
            state: "COMPLETED".to_string(),
        }),
        last_completed_commit_timestamp: timeline
            .latest_completed()
            .map(|i| i.time.to_string())
            .unwrap_or_default(),
        policy: policy.as_str().to_string(),
        version: 2,
        file_paths_to_be_deleted_per_partition: per_partition,
        partitions_to_be_deleted: Vec::new(),
        extra_metadata: extra,
    };
    Ok(Some((plan, boundary)))
}

/// Timeline file of the clean at `time` in `state`.
fn clean_file(time: &InstantTime, state: State) -> String {
    Instant::new(time.clone(), Action::Clean, state).path()
}

/// Deletes a plan's files and completes the clean at `time`: the files (one request per thousand on S3),
/// then `<t>.clean`. Every step can be repeated.
async fn execute(
    ctx: &ServiceContext<'_>,
    time: &InstantTime,
    plan: &CleanerPlan,
    started: std::time::Instant,
) -> Result<u64, WriteError> {
    let storage = ctx.storage;
    let mut paths = Vec::new();
    let mut partition_metadata = BTreeMap::new();
    for (partition, files) in &plan.file_paths_to_be_deleted_per_partition {
        let mut names = Vec::new();
        for file in files {
            let relative = relative_path(storage, &file.file_path).ok_or_else(|| {
                service_err(
                    time,
                    format!(
                        "planned file {} is not inside the table {}",
                        file.file_path,
                        storage.base_uri()
                    ),
                )
            })?;
            names.push(relative.rsplit('/').next().unwrap_or(&relative).to_string());
            paths.push(relative);
        }
        partition_metadata.insert(
            partition.clone(),
            CleanPartitionMetadata {
                partition_path: partition.clone(),
                policy: plan.policy.clone(),
                delete_path_patterns: names.clone(),
                success_delete_files: names,
                failed_delete_files: Vec::new(),
                is_partition_deleted: false,
            },
        );
    }
    if !paths.is_empty() {
        ctx.fence().await?;
        storage.delete_many(&paths).await?;
    }
    let metadata = CleanMetadata {
        policy: plan.policy.clone(),
        start_clean_time: time.to_string(),
        time_taken_in_millis: started.elapsed().as_millis() as i64,
        total_files_deleted: paths.len() as i32,
        earliest_commit_to_retain: plan
            .earliest_instant_to_retain
            .as_ref()
            .map(|i| i.timestamp.clone())
            .unwrap_or_default(),
        last_completed_commit_timestamp: plan.last_completed_commit_timestamp.clone(),
        partition_metadata,
        version: 2,
        extra_metadata: plan.extra_metadata.clone(),
    };
    let body = metadata
        .to_avro_bytes()
        .map_err(|e| service_err(time, format!("encoding clean metadata: {e}")))?;
    ctx.fence().await?;
    storage
        .put_if_absent(&clean_file(time, State::Completed), Bytes::from(body))
        .await?;
    tracing::info!(instant = %time, files = paths.len(), "clean completed");
    Ok(paths.len() as u64)
}

/// The object at `path`, `None` when there is none; any other storage failure is an error.
async fn get_if_exists(storage: &dyn Storage, path: &str) -> Result<Option<Bytes>, WriteError> {
    match storage.get(path).await {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Finishes cleans that an earlier run left pending, from their plans (Spark's `runPendingClean`): an empty
/// pending file carries no plan and is removed, as Spark 0.14 does.
pub async fn finish_pending(
    ctx: &ServiceContext<'_>,
    timeline: &Timeline,
) -> Result<CleanOutcome, WriteError> {
    let storage = ctx.storage;
    let mut outcome = CleanOutcome::default();
    for pending in timeline
        .pending()
        .into_iter()
        .filter(|i| i.action == Action::Clean)
    {
        let time = &pending.time;
        // A failed read is an error, not a missing plan: the plan-less branch deletes the instant.
        let requested = get_if_exists(storage, &clean_file(time, State::Requested)).await?;
        let inflight = get_if_exists(storage, &clean_file(time, State::Inflight)).await?;
        let bytes = match (&inflight, &requested) {
            (Some(b), _) if !b.is_empty() => b.clone(),
            (_, Some(b)) if !b.is_empty() => b.clone(),
            _ => {
                ctx.fence().await?;
                storage
                    .delete_many(&[
                        clean_file(time, State::Inflight),
                        clean_file(time, State::Requested),
                    ])
                    .await?;
                tracing::warn!(instant = %time, "removed a pending clean without a plan");
                continue;
            }
        };
        let plan = CleanerPlan::from_avro_bytes(&bytes, storage.base_uri())
            .map_err(|e| service_err(time, format!("clean plan: {e}")))?;
        if inflight.as_ref().is_none_or(|b| b.is_empty()) {
            ctx.fence().await?;
            storage
                .put(&clean_file(time, State::Inflight), bytes.clone())
                .await?;
        }
        outcome.files_deleted += execute(ctx, time, &plan, std::time::Instant::now()).await?;
        outcome.instant = Some(time.clone());
        outcome.resumed += 1;
    }
    Ok(outcome)
}

/// Runs one clean: finishes pending ones, plans, writes the plan (`.clean.requested`, then the same bytes as
/// `.clean.inflight`), deletes, completes.
pub async fn run(
    ctx: &ServiceContext<'_>,
    timeline: &Timeline,
    cache: &CommitCache,
    memo: &CleanMemo,
) -> Result<CleanOutcome, WriteError> {
    let started = std::time::Instant::now();
    let mut outcome = finish_pending(ctx, timeline).await?;
    let timeline = if outcome.resumed > 0 {
        Timeline::load(ctx.storage).await?
    } else {
        timeline.clone()
    };
    let Some((plan, boundary)) = plan_clean(ctx, &timeline, cache, memo).await? else {
        return Ok(outcome);
    };
    let time = ctx.new_instant_time(&timeline);
    let body = Bytes::from(
        plan.to_avro_bytes()
            .map_err(|e| service_err(&time, format!("encoding clean plan: {e}")))?,
    );
    ctx.fence().await?;
    if ctx
        .storage
        .put_if_absent(&clean_file(&time, State::Requested), body.clone())
        .await?
        == PutOutcome::AlreadyExists
    {
        return Err(WriteError::InstantExists {
            instant: time.to_string(),
            file: clean_file(&time, State::Requested),
        });
    }
    ctx.storage
        .put(&clean_file(&time, State::Inflight), body)
        .await?;
    outcome.files_deleted += execute(ctx, &time, &plan, started).await?;
    memo.set(ctx.config.cleaner_policy, boundary);
    outcome.instant = Some(time);
    Ok(outcome)
}

#[cfg(test)]
mod tests;
