//! Planning: which file groups a compaction merges, the plan record, and the pending plans of a table.

use std::collections::{BTreeMap, BTreeSet};

use super::{instant_path, CompactionPlanned, PlannedOperation, WRITER_KEY, WRITER_NAME};
use crate::log_file::LogFileName;
use crate::mutation::{is_disabled, Mutation};
use crate::storage::Storage;
use crate::table::instant::{Action, InstantTime, State};
use crate::table::records::compaction::COMPACTION_PLAN_VERSION;
use crate::table::records::{CompactionOperation, CompactionPlan};
use crate::table::timeline::{FileSlice, Timeline};
use crate::write::WriteError;

/// Metric keys Spark's planner writes (informational).
const TOTAL_LOG_FILES: &str = "TOTAL_LOG_FILES";
const TOTAL_LOG_FILES_SIZE: &str = "TOTAL_LOG_FILES_SIZE";
const TOTAL_IO_READ_MB: &str = "TOTAL_IO_READ_MB";
const TOTAL_IO_WRITE_MB: &str = "TOTAL_IO_WRITE_MB";
const TOTAL_IO_MB: &str = "TOTAL_IO_MB";

/// The slices due for compaction among `slices` (the latest committed slice of every file group): those
/// that at least `min_delta_commits` deltacommits appended to (and at least one), the most first (then the
/// most log bytes, then by partition and file id), at most `max_groups` of them. A slice with logs whose
/// base instant is older than `archive_boundary` is due whatever its count, after the others: its logs
/// may belong to deltacommits archival must pass (see `services::archive`). A slice's log files are its
/// committed ones only (`FileSlice::log_files`), so logs of failed writes never count.
///
/// `deltacommits` (the completed deltacommits of the active timeline, oldest first) bounds the count: under
/// the interval commit one deltacommit appends one log file per member to a group, so its log files alone
/// would count each window several times (`hoodie.compact.inline.max.delta.commits` counts deltacommits). A
/// slice's count is the smaller of its log files and the deltacommits after its base; `None` counts log
/// files only.
pub fn select_file_groups<'s>(
    slices: &'s [FileSlice],
    min_delta_commits: u32,
    max_groups: u32,
    archive_boundary: Option<&InstantTime>,
    deltacommits: Option<&[InstantTime]>,
) -> Vec<&'s FileSlice> {
    let min = usize::try_from(min_delta_commits.max(1)).unwrap_or(usize::MAX);
    let log_bytes = |s: &FileSlice| s.log_files.iter().map(|l| l.size).sum::<u64>();
    let count = |s: &FileSlice| {
        let after_base = deltacommits.map_or(usize::MAX, |d| {
            d.len() - d.partition_point(|t| *t <= s.base_instant)
        });
        s.log_files.len().min(after_base)
    };
    let stale = |s: &FileSlice| {
        !s.log_files.is_empty() && archive_boundary.is_some_and(|b| s.base_instant < *b)
    };
    let mut due: Vec<(usize, &FileSlice)> = slices
        .iter()
        .map(|s| (count(s), s))
        // A count of at least `min` (at least 1) means the slice has log files.
        .filter(|(n, s)| *n >= min || stale(s))
        .collect();
    due.sort_by(|(na, a), (nb, b)| {
        (*nb >= min)
            .cmp(&(*na >= min))
            .then_with(|| nb.cmp(na))
            .then_with(|| log_bytes(b).cmp(&log_bytes(a)))
            .then_with(|| (&a.partition_path, &a.file_id).cmp(&(&b.partition_path, &b.file_id)))
    });
    due.truncate(usize::try_from(max_groups).unwrap_or(usize::MAX));
    let mut due: Vec<&FileSlice> = due.into_iter().map(|(_, s)| s).collect();
    due.sort_by(|a, b| (&a.partition_path, &a.file_id).cmp(&(&b.partition_path, &b.file_id)));
    due
}

/// Every log file of `slice`'s file group and base instant in its partition, committed or not, in reader
/// order, with sizes (what a compaction without the committed-logs rule would merge).
async fn every_log_of(
    storage: &dyn Storage,
    slice: &FileSlice,
) -> Result<Vec<(String, u64)>, WriteError> {
    let prefix = super::partition_prefix(&slice.partition_path);
    let mut logs: Vec<(LogFileName, String, u64)> = Vec::new();
    for object in storage.list(&prefix).await? {
        let (dir, name) = object.path.rsplit_once('/').unwrap_or(("", &object.path));
        if dir != slice.partition_path {
            continue;
        }
        if let Ok(log) = LogFileName::parse(name) {
            if log.file_id == slice.file_id && log.base_instant == slice.base_instant {
                logs.push((log, object.path.clone(), object.size));
            }
        }
    }
    logs.sort();
    Ok(logs.into_iter().map(|(_, p, s)| (p, s)).collect())
}

/// The operations of a compaction of `selected`: each slice with its committed log files (with the
/// mutation switch `CompactionCommittedLogsOnly`, every log file of the slice's base instant).
pub(super) async fn plan_operations(
    storage: &dyn Storage,
    selected: &[&FileSlice],
) -> Result<Vec<PlannedOperation>, WriteError> {
    let mut out = Vec::with_capacity(selected.len());
    for slice in selected {
        let logs: Vec<(String, u64)> = if is_disabled(Mutation::CompactionCommittedLogsOnly) {
            every_log_of(storage, slice).await?
        } else {
            slice
                .log_paths()
                .into_iter()
                .zip(slice.log_files.iter().map(|l| l.size))
                .collect()
        };
        out.push(PlannedOperation {
            slice: (*slice).clone(),
            log_bytes: logs.iter().map(|(_, s)| s).sum(),
            log_paths: logs.into_iter().map(|(p, _)| p).collect(),
        });
    }
    Ok(out)
}

fn file_name(path: &str) -> String {
    path.rsplit('/').next().unwrap_or(path).to_string()
}

/// The plan record of `planned` (version 2: file names; this sink's mark in `extraMetadata`).
pub(super) fn to_plan(planned: &CompactionPlanned) -> CompactionPlan {
    const MB: f64 = 1024.0 * 1024.0;
    let operations = planned
        .operations
        .iter()
        .map(|op| {
            let read_mb = (op.slice.size + op.log_bytes) as f64 / MB;
            let write_mb = op.slice.size as f64 / MB;
            CompactionOperation {
                base_instant_time: op.slice.base_instant.to_string(),
                delta_file_paths: op.log_paths.iter().map(|p| file_name(p)).collect(),
                data_file_path: Some(op.slice.file_name.clone()),
                file_id: op.slice.file_id.clone(),
                partition_path: op.slice.partition_path.clone(),
                metrics: BTreeMap::from([
                    (TOTAL_LOG_FILES.to_string(), op.log_paths.len() as f64),
                    (TOTAL_LOG_FILES_SIZE.to_string(), op.log_bytes as f64),
                    (TOTAL_IO_READ_MB.to_string(), read_mb),
                    (TOTAL_IO_WRITE_MB.to_string(), write_mb),
                    (TOTAL_IO_MB.to_string(), read_mb + write_mb),
                ]),
                bootstrap_file_path: None,
            }
        })
        .collect();
    CompactionPlan {
        operations,
        extra_metadata: BTreeMap::from([(WRITER_KEY.to_string(), WRITER_NAME.to_string())]),
        version: COMPACTION_PLAN_VERSION,
        preserve_hoodie_metadata: true,
    }
}

/// The pending compactions of a table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PendingCompactions {
    /// This sink's, with the partitions their plans name (where their new base files are).
    pub own: Vec<(InstantTime, BTreeSet<String>)>,
    /// Another engine's (or plans that do not decode): never touched; nothing is compacted meanwhile.
    pub others: Vec<InstantTime>,
}

impl PendingCompactions {
    /// Whether no compaction is pending.
    pub fn is_empty(&self) -> bool {
        self.own.is_empty() && self.others.is_empty()
    }

    /// Every pending compaction's time.
    pub fn instants(&self) -> Vec<&InstantTime> {
        self.own
            .iter()
            .map(|(t, _)| t)
            .chain(&self.others)
            .collect()
    }
}

/// Reads the plans of every pending compaction of `timeline`. Storage failures are errors (a plan that
/// could not be read must not be taken for another engine's); content that does not decode is not.
pub async fn pending_compactions(
    storage: &dyn Storage,
    timeline: &Timeline,
) -> Result<PendingCompactions, WriteError> {
    let mut out = PendingCompactions::default();
    for pending in timeline.pending() {
        if pending.action != Action::Compaction {
            continue;
        }
        let path = instant_path(&pending.time, State::Requested);
        let bytes = match storage.get(&path).await {
            Ok(bytes) => bytes,
            Err(e) if e.is_not_found() => {
                // No plan, but the time retired: a rollback of this sink removed the plan while the
                // compaction's holder was paused, and the holder then wrote `.compaction.inflight` (the
                // fence comes before the two timeline files, not between them). Rolled back again; only this
                // sink retires times.
                let retired = format!("{}{}", crate::table::timeline::RETIRED_DIR, pending.time);
                let ours = !crate::mutation::is_disabled(
                    crate::mutation::Mutation::CompactionOrphanRolledBack,
                ) && storage.head(&retired).await?.is_some();
                if ours {
                    out.own.push((pending.time.clone(), Default::default()));
                } else {
                    out.others.push(pending.time.clone());
                }
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        match CompactionPlan::from_avro_bytes(&bytes) {
            Ok(plan)
                if plan.extra_metadata.get(WRITER_KEY).map(String::as_str) == Some(WRITER_NAME) =>
            {
                let partitions = plan
                    .operations
                    .iter()
                    .map(|op| op.partition_path.clone())
                    .collect();
                out.own.push((pending.time.clone(), partitions));
            }
            Ok(_) => out.others.push(pending.time.clone()),
            Err(e) => {
                tracing::warn!(instant = %pending.time, error = %e, "undecodable compaction plan left alone");
                out.others.push(pending.time.clone());
            }
        }
    }
    Ok(out)
}
