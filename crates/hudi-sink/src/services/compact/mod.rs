//! Compaction of merge-on-read tables: the committed log files of a file slice are merged with its base
//! file into a new base file, as a Spark-compatible `compaction` instant completed as `<c>.commit`
//! (operation `COMPACT`, `compacted: true`).
//!
//! One compaction instant `c` runs entirely under the table lock the caller holds ([`compact`]):
//!
//! 1. Plan ([`select_file_groups`]): per file group, the latest committed slice that at least
//!    `hoodie.compact.inline.max.delta.commits` completed deltacommits appended committed log files to
//!    (those a completed deltacommit names, see `table::fs_view::LogVisibility`; under the interval commit
//!    one deltacommit appends a log per member), the most first, at most
//!    `hudi.sink.compaction.max.file.groups` groups; groups whose slice is older than the instant archival
//!    would keep (and that have logs) come next, so that no group's logs hold archival back. Nothing is
//!    planned while another engine's compaction is pending. Deltacommits in flight do not block it (Java's
//!    rule would wait for every inflight write, which never ends on a busy table): a write begun before the
//!    compaction that appended to a compacted group conflicts with the compaction commit at its own commit
//!    (`commit/conflict.rs`, the group was written after its base) and is retried on the new slice, so its
//!    data never lands in a superseded slice.
//! 2. Fence, then `<c>.compaction.requested` (Avro `HoodieCompactionPlan`, version 2: file names) and
//!    `<c>.compaction.inflight` (empty), both create-if-absent.
//! 3. [`execute`]: per group, a `MERGE` marker, then `<fileId>_<token>_<c>.parquet`: the base file streamed
//!    row group by row group with ranged reads, merged with the log records (`log_file::BaseRowMerger`)
//!    and uploaded row group by row group (`Storage::put_multipart`), so memory is bounded by the log
//!    records and one row group, not by the file (four groups are merged at a time, and a slice's log files are
//!    read eight at a time); under the table's merge mode, deletes dropped; rows keep `_hoodie_commit_time`
//!    and `_hoodie_commit_seqno`, `_hoodie_file_name` becomes the new file's name. A group whose rows were
//!    all deleted still gets a base file, with no rows (as Spark's merge handle writes one): its slice at
//!    `c` then hides the old slice, whose logs would otherwise be compacted again and again.
//! 4. Every new file is checked (size), then fence, then `<c>.commit` (JSON commit metadata with one write
//!    stat per new base file, `prevCommit` = the old base instant, the log counts, `extraMetadata.schema`),
//!    create-if-absent, then the markers go.
//!
//! Invariants:
//! - Until `<c>.commit` exists every reader sees the table as before: the new base files carry the pending
//!   time `c` (hudi-rs and Spark hide them), and no log file is appended against `c` because no write can
//!   begin while the lock is held. hudi-rs 0.5.0 would hide such logs until `c` completes
//!   (merge-on-read.md §4, §10), which is why compaction never leaves the lock between plan and commit.
//! - From `c` on, each compacted group's latest slice is the new base file holding exactly the rows the
//!   old slice's snapshot held (same meta columns but `_hoodie_file_name`); time travel before `c` reads
//!   the old slice, which the cleaner keeps while a query may need it.
//! - Only log blocks of completed deltacommits are merged (the mutation switch
//!   `CompactionCommittedLogsOnly` turns this off for tests): a failed write's log is never made durable.
//! - A pending compaction found under the lock is a crashed one (only lock holders compact):
//!   [`roll_back_pending_compactions`] retires its time first (so that it is never reused and its files are
//!   never taken for committed data), deletes its new base files (by marker and by listing the plan's
//!   partitions) and markers, then `.compaction.inflight`, and `.compaction.requested` last, so that a crash
//!   at any step leaves a pending compaction the next holder rolls back again. Only plans carrying this
//!   sink's mark ([`WRITER_KEY`] = [`WRITER_NAME`]) are rolled back; another engine's are left alone, and
//!   nothing is compacted while one is pending.

mod execute;
mod plan;

use std::collections::BTreeSet;

use bytes::Bytes;

pub use execute::execute;
pub use plan::{pending_compactions, select_file_groups, PendingCompactions};

use crate::base_file::writer::BaseFileOptions;
use crate::log_file::{CommittedInstants, MergeMode};
use crate::mutation::{is_disabled, Mutation};
use crate::schema::avro::AvroSchema;
use crate::storage::{PutOutcome, Storage};
use crate::table::commit::{CommitMetadata, OperationType, WriteStat};
use crate::table::file_name::{heartbeat_path, marker_dir, BaseFileName, Marker};
use crate::table::fs_view::FileSystemView;
use crate::table::instant::{Action, Instant, InstantTime, State};
use crate::table::properties::TableProperties;
use crate::table::timeline::{latest_file_slices, FileSlice, Timeline, RETIRED_DIR};
use crate::write::{TableSchema, WriteError};

use super::ServiceContext;

pub use super::cluster::{WRITER_KEY, WRITER_NAME};

/// Name of this service in errors.
const SERVICE: &str = "compaction";

/// One file group a compaction merges.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedOperation {
    /// The slice: its base file and committed log files.
    pub slice: FileSlice,
    /// Table-relative paths of the log files merged, in reader order (the slice's committed logs, or with
    /// the mutation switch every log file of the slice).
    pub log_paths: Vec<String>,
    /// Their total size in bytes.
    pub log_bytes: u64,
}

/// A scheduled compaction: what [`execute`] merges.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionPlanned {
    /// The compaction's instant time.
    pub instant: InstantTime,
    /// The file groups, by partition and file id.
    pub operations: Vec<PlannedOperation>,
}

/// What one [`compact`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactionReport {
    /// The completed compaction instant (`<c>.commit`).
    pub instant: InstantTime,
    /// File groups compacted.
    pub file_groups: u64,
    /// Log files merged.
    pub log_files: u64,
    /// Crashed compactions rolled back before this one.
    pub rolled_back: u64,
}

impl CompactionReport {
    /// The report as the table-services runner reports it.
    pub fn to_service_report(&self) -> super::ServiceReport {
        super::ServiceReport {
            compaction_instant: Some(self.instant.to_string()),
            file_groups_compacted: self.file_groups,
            resumed: self.rolled_back,
            ..super::ServiceReport::default()
        }
    }
}

fn service_error(reason: impl Into<String>) -> WriteError {
    WriteError::Service {
        service: SERVICE,
        reason: reason.into(),
    }
}

fn instant_path(instant: &InstantTime, state: State) -> String {
    Instant::new(instant.clone(), Action::Compaction, state).path()
}

/// The blocks a compaction may merge: those of completed commit-timeline instants and of instants older
/// than the active timeline; with the mutation switch, every block.
fn committed_instants(timeline: &Timeline) -> Result<CommittedInstants, WriteError> {
    if is_disabled(Mutation::CompactionCommittedLogsOnly) {
        let all =
            InstantTime::parse("99991231235959999").map_err(|e| service_error(e.to_string()))?;
        return Ok(CommittedInstants::new([], Some(all)));
    }
    Ok(CommittedInstants::new(
        timeline
            .completed_commits()
            .into_iter()
            .map(|i| i.time.clone()),
        timeline.instants().first().map(|i| i.time.clone()),
    ))
}

/// The table schema a compaction writes: the latest commit's, else the one the table was created with.
async fn table_schema(
    storage: &dyn Storage,
    timeline: &Timeline,
    props: &TableProperties,
) -> Result<TableSchema, WriteError> {
    let text = match timeline.latest_schema(storage).await? {
        Some(s) => s,
        None => props
            .create_schema
            .clone()
            .ok_or_else(|| service_error("the table has no schema in its commits or properties"))?,
    };
    TableSchema::try_new(AvroSchema::parse(&text)?)
}

/// The latest committed slices: from `view` (brought up to date from the timeline) or a listing.
async fn current_slices(
    storage: &dyn Storage,
    timeline: &Timeline,
    view: Option<&tokio::sync::Mutex<FileSystemView>>,
) -> Result<Vec<FileSlice>, WriteError> {
    match view {
        Some(view) => {
            let mut view = view.lock().await;
            if let Err(e) = view.sync(storage, timeline).await {
                view.invalidate();
                return Err(e.into());
            }
            Ok(view.slices().cloned().collect())
        }
        None => Ok(latest_file_slices(storage, timeline, None).await?),
    }
}

/// Runs one compaction under the table lock the caller holds (see the module doc): rolls back crashed
/// compactions of this sink, plans over the latest committed slices (from `view` when given, else a
/// listing of the table), writes the plan, merges, and commits `<c>.commit`. `None` when the table is not
/// merge-on-read or nothing is due (or a pending write or another engine's compaction forbids it).
/// `base_file` says how the new base files are encoded (the table's `hoodie.parquet.*` settings).
///
/// Call it with a timeline loaded under the lock, after failed writes were rolled back (a pending
/// deltacommit blocks compaction).
pub async fn compact(
    ctx: &ServiceContext<'_>,
    timeline: &Timeline,
    view: Option<&tokio::sync::Mutex<FileSystemView>>,
    base_file: &BaseFileOptions,
) -> Result<Option<CompactionReport>, WriteError> {
    let storage = ctx.storage;
    let props = TableProperties::load(storage).await?;
    if !props.is_merge_on_read() {
        return Ok(None);
    }
    let pending = pending_compactions(storage, timeline).await?;
    let mut rolled_back = 0;
    let reloaded;
    let timeline = if pending.is_empty() {
        timeline
    } else {
        rolled_back = roll_back_pending_compactions(ctx, timeline).await?;
        reloaded = Timeline::load(storage).await?;
        let left = pending_compactions(storage, &reloaded).await?;
        if !left.is_empty() {
            tracing::warn!(instants = ?left.instants(), "pending compaction of another engine: not compacting");
            return Ok(None);
        }
        &reloaded
    };
    let slices = current_slices(storage, timeline, view).await?;
    // Archival cuts the active timeline down to keep.min.commits once it holds more than keep.max.commits;
    // a slice older than the instant the cut keeps may hold logs of deltacommits the cut would pass.
    let completed = timeline.completed_commits();
    let keep_min = usize::try_from(ctx.config.keep_min_commits).unwrap_or(usize::MAX);
    let keep_max = usize::try_from(ctx.config.keep_max_commits).unwrap_or(usize::MAX);
    let archive_boundary = (completed.len() > keep_max && keep_min > 0)
        .then(|| completed.get(completed.len().saturating_sub(keep_min)))
        .flatten()
        .map(|i| &i.time);
    let deltacommits: Vec<InstantTime> = completed
        .iter()
        .filter(|i| i.action == Action::DeltaCommit)
        .map(|i| i.time.clone())
        .collect();
    let selected = select_file_groups(
        &slices,
        ctx.config.compact_max_delta_commits,
        ctx.config.compaction_max_file_groups,
        archive_boundary,
        Some(&deltacommits),
    );
    if selected.is_empty() {
        return Ok(None);
    }
    let mode = MergeMode::from_table_properties(&props.as_map())
        .map_err(|e| service_error(format!("merge mode: {e}")))?;
    let schema = table_schema(storage, timeline, &props).await?;
    let planned = CompactionPlanned {
        instant: ctx.new_instant_time(timeline),
        operations: plan::plan_operations(storage, &selected).await?,
    };
    let body = plan::to_plan(&planned)
        .to_avro_bytes()
        .map_err(|e| service_error(format!("encoding the plan of {}: {e}", planned.instant)))?;
    ctx.fence().await?;
    for (state, content) in [
        (State::Requested, Bytes::from(body)),
        (State::Inflight, Bytes::new()),
    ] {
        let path = instant_path(&planned.instant, state);
        if storage.put_if_absent(&path, content).await? == PutOutcome::AlreadyExists {
            return Err(WriteError::InstantExists {
                instant: planned.instant.to_string(),
                file: path,
            });
        }
    }
    let committed = committed_instants(timeline)?;
    let stats = execute(storage, &planned, &schema, &mode, &committed, base_file).await?;
    commit(ctx, &planned, stats, &schema.avro_json).await?;
    Ok(Some(CompactionReport {
        instant: planned.instant.clone(),
        file_groups: planned.operations.len() as u64,
        log_files: planned
            .operations
            .iter()
            .map(|o| o.log_paths.len() as u64)
            .sum(),
        rolled_back,
    }))
}

/// Checks the new files and writes `<c>.commit`, then removes the markers.
async fn commit(
    ctx: &ServiceContext<'_>,
    planned: &CompactionPlanned,
    stats: Vec<WriteStat>,
    schema_json: &str,
) -> Result<(), WriteError> {
    let storage = ctx.storage;
    let c = &planned.instant;
    crate::commit::verify_files(storage, c, &stats).await?;
    let mut meta = CommitMetadata::new(OperationType::Compact);
    meta.compacted = true;
    for stat in stats {
        meta.add_write_stat(stat);
    }
    meta.set_schema(schema_json);
    meta.extra_metadata
        .insert(WRITER_KEY.to_string(), WRITER_NAME.to_string());
    let body = Bytes::from(meta.to_json_pretty()?);
    let path = instant_path(c, State::Completed);
    ctx.fence().await?;
    if storage.put_if_absent(&path, body.clone()).await? == PutOutcome::AlreadyExists
        && storage.get(&path).await? != body
    {
        return Err(WriteError::InstantExists {
            instant: c.to_string(),
            file: path,
        });
    }
    let markers: Vec<String> = storage
        .list(&format!("{}/", marker_dir(c)))
        .await?
        .into_iter()
        .map(|o| o.path)
        .collect();
    if !markers.is_empty() {
        storage.delete_many(&markers).await?;
    }
    tracing::info!(instant = %c, groups = planned.operations.len(), "compaction committed");
    Ok(())
}

/// The listing prefix of a partition's files (`""`: the whole table, for a non-partitioned one).
fn partition_prefix(partition: &str) -> String {
    if partition.is_empty() {
        String::new()
    } else {
        format!("{}/", partition.trim_end_matches('/'))
    }
}

/// Rolls back the pending compaction `c` (see the module doc for the order); `false` when it completed
/// meanwhile (then only its leftover markers go).
async fn roll_back(
    ctx: &ServiceContext<'_>,
    c: &InstantTime,
    partitions: &BTreeSet<String>,
) -> Result<bool, WriteError> {
    let storage = ctx.storage;
    ctx.fence().await?;
    if storage
        .head(&instant_path(c, State::Completed))
        .await?
        .is_some()
    {
        return Ok(false);
    }
    storage
        .put(&format!("{RETIRED_DIR}{c}"), Bytes::new())
        .await?;
    let markers: Vec<String> = storage
        .list(&format!("{}/", marker_dir(c)))
        .await?
        .into_iter()
        .map(|o| o.path)
        .collect();
    let mut files = Vec::new();
    for marker in &markers {
        if let Ok(parsed) = Marker::parse(marker) {
            let ours = BaseFileName::parse(&parsed.data_file_name)
                .is_ok_and(|name| name.instant_time == *c);
            if ours {
                files.push(parsed.data_file_path());
            }
        }
    }
    // Files whose marker was lost (or never written) are found by listing the plan's partitions.
    for partition in partitions {
        for object in storage.list(&partition_prefix(partition)).await? {
            if object.path.starts_with(".hoodie/") {
                continue;
            }
            let name = object.path.rsplit('/').next().unwrap_or(&object.path);
            if BaseFileName::parse(name).is_ok_and(|b| b.instant_time == *c)
                && !files.contains(&object.path)
            {
                files.push(object.path);
            }
        }
    }
    if !files.is_empty() {
        storage.delete_many(&files).await?;
    }
    let mut rest = markers;
    rest.push(heartbeat_path(c));
    rest.push(instant_path(c, State::Inflight));
    storage.delete_many(&rest).await?;
    storage.delete(&instant_path(c, State::Requested)).await?;
    tracing::info!(instant = %c, files = files.len(), "compaction rolled back");
    Ok(true)
}

/// Rolls back every pending compaction of this sink on `timeline` (a crashed one: see the module doc),
/// under the table lock the caller holds. Another engine's pending compactions are left alone. Returns
/// how many were rolled back.
pub async fn roll_back_pending_compactions(
    ctx: &ServiceContext<'_>,
    timeline: &Timeline,
) -> Result<u64, WriteError> {
    let pending = pending_compactions(ctx.storage, timeline).await?;
    let mut rolled_back = 0;
    for (c, partitions) in &pending.own {
        tracing::info!(instant = %c, "rolling back crashed compaction");
        if roll_back(ctx, c, partitions).await? {
            rolled_back += 1;
        }
    }
    Ok(rolled_back)
}

#[cfg(test)]
mod tests;
