//! Compaction of merge-on-read tables: the committed log files of a file slice are merged with its base
//! file into a new base file, as a Spark-compatible `compaction` instant completed as `<c>.commit`
//! (operation `COMPACT`, `compacted: true`).
//!
//! The merge runs outside the table lock ([`run`]); only planning and completion hold it, for a bounded
//! number of requests whatever the size of the file groups:
//!
//! ```text
//! lock ─ schedule: roll back expired ─ select ─ fence ─ <c>.compaction.requested, .inflight, heartbeat ─ unlock
//!      ─ execute: merge each slice into <fileId>_<token>_<c>.parquet (heartbeat per group)
//!      ─ carry: copy the logs deltacommits appended to the planned slices since the plan into slice c
//! lock ─ complete: list ─ carry what landed since ─ fence ─ <c>.commit (with the carried logs) ─ unlock
//! ```
//!
//! 1. Plan ([`select_file_groups`], `schedule.rs`): per file group, the latest committed slice that at
//!    least `hoodie.compact.inline.max.delta.commits` completed deltacommits appended committed log files to
//!    (those a completed deltacommit names, see `table::fs_view::LogVisibility`; under the interval commit
//!    one deltacommit appends a log per member), the most first, at most `hudi.sink.compaction.max.file.groups`
//!    groups; groups whose slice is older than the instant archival would keep (and that have logs) come next,
//!    so that no group's logs hold archival back. Nothing is planned while another compaction is pending.
//! 2. Fence, then `<c>.compaction.requested` (Avro `HoodieCompactionPlan`, version 2: file names),
//!    `<c>.compaction.inflight` (empty), both create-if-absent, and the heartbeat `.hoodie/.heartbeat/<c>`.
//! 3. [`execute`], without the lock: per group, a `MERGE` marker, then `<fileId>_<token>_<c>.parquet`: the
//!    base file streamed row group by row group with ranged reads, merged with the planned log records
//!    (`log_file::BaseRowMerger`) and uploaded row group by row group (`Storage::put_multipart`), so memory
//!    is bounded by the log records and one row group, not by the file (four groups are merged at a time,
//!    and a slice's log files are read eight at a time); under the table's merge mode, deletes dropped; rows
//!    keep `_hoodie_commit_time` and `_hoodie_commit_seqno`, `_hoodie_file_name` becomes the new file's
//!    name. A group whose rows were all deleted still gets a base file, with no rows (as Spark's merge handle
//!    writes one): its slice at `c` then hides the old slice, whose logs would otherwise be compacted again
//!    and again. The heartbeat is written before each group.
//! 4. Carry (`carry.rs`), without the lock, then once more under it: every committed log of a planned slice
//!    that the plan does not name (a deltacommit completed since the plan appended it) is copied byte for
//!    byte into the new slice (`.<fileId>_<c>.log.<n>_<token>`, versions from 1 in reader order) and named
//!    in the commit (`table::carried`), unless the group is left out ([`keep`]): carried behind the new base
//!    file, its late logs would change what a snapshot shows.
//! 5. Complete (`complete.rs`), under the lock: list `.hoodie/`; the compaction must still be pending and its
//!    time not retired; carry what landed since step 4; every new file checked (size) before the lock; the
//!    files of the groups left out deleted; fence; `<c>.commit` (JSON commit metadata with one write stat per new base file, `prevCommit` = the old
//!    base instant, the log counts, `extraMetadata.schema` and the carried logs), create-if-absent; then the
//!    markers and the heartbeat go.
//!
//! Invariants:
//! - Until `<c>.commit` exists every reader sees the table as before: the new base files and the carried
//!   copies carry the pending time `c` (hudi-rs and Spark hide them), and writers keep appending to the old
//!   slices (a writer's view takes only completed slices), which readers show.
//! - From `c` on, each compacted group's latest slice holds exactly the rows the old slice held: the base
//!   file has what the plan's logs held, and the carried copies hold every log appended since, in the same
//!   order (mutation `CompactionCarriesLateLogs`). Time travel before `c` reads the old slice, which the
//!   cleaner keeps while a query may need it. A group left out keeps its old slice, so the snapshot just
//!   after `c` equals the one just before (mutation `CompactionKeepsSnapshot`).
//! - A deltacommit still pending when `c` completes that appended to a compacted slice is refused at its own
//!   commit: a pending compaction holds every writer's base below `c` (`commit/conflict.rs` `writer_base`,
//!   mutation `PendingCompactionHoldsBase`), so `c` is checked as written after that base, and the write is
//!   retried on the new slice.
//! - Only log blocks of completed deltacommits are merged (the mutation switch
//!   `CompactionCommittedLogsOnly` turns this off for tests): a failed write's log is never made durable.
//! - A pending compaction of this sink whose heartbeat expired (its runner died) is rolled back by the next
//!   lock holder ([`roll_back_expired_compactions`]): its time is retired first (so that it is never
//!   reused and its files are never taken for committed data), then its new base files (by marker and by
//!   listing the plan's partitions), its carried copies (logs of slice `c`, by listing) and markers, then
//!   `.compaction.inflight`, and `.compaction.requested` last, so that a crash at any step leaves a pending
//!   compaction the next holder rolls back again. Only plans carrying this sink's mark ([`WRITER_KEY`] =
//!   [`WRITER_NAME`]) are rolled back; another engine's are left alone, and nothing is compacted while one is
//!   pending.

mod carry;
mod complete;
mod execute;
pub mod keep;
mod plan;
mod rollback;
mod schedule;

use std::time::Duration;

pub use carry::{late_logs, LateLog};
pub use execute::{execute, MergedGroup};
pub use plan::{pending_compactions, select_file_groups, PendingCompactions};
pub use rollback::{roll_back_expired_compactions, roll_back_pending_compactions};
pub use schedule::{is_due, Scheduled};

use crate::base_file::writer::BaseFileOptions;
use crate::clock::Clock;
use crate::lock::{Lock, LockGuard};
use crate::log_file::CommittedInstants;
use crate::mutation::{is_disabled, Mutation};
use crate::schema::avro::AvroSchema;
use crate::table::fs_view::FileSystemView;
use crate::table::instant::{Action, Instant, InstantTime, State};
use crate::table::properties::TableProperties;
use crate::table::timeline::{latest_file_slices, FileSlice, Timeline};
use crate::write::{TableSchema, WriteError};

use super::{ServiceContext, ServicesConfig};

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

/// What one compaction did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactionReport {
    /// The completed compaction instant (`<c>.commit`).
    pub instant: InstantTime,
    /// File groups compacted.
    pub file_groups: u64,
    /// Log files merged.
    pub log_files: u64,
    /// Log files carried into the new slices (appended while the merge ran).
    pub carried: u64,
    /// Planned file groups left out, their old slices kept: carrying their late logs would have changed a
    /// snapshot (`keep.rs`).
    pub left_out: u64,
    /// Crashed compactions rolled back before this one.
    pub rolled_back: u64,
    /// Milliseconds the completion held the table lock.
    pub completion_lock_ms: u64,
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
    storage: &dyn crate::storage::Storage,
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
    storage: &dyn crate::storage::Storage,
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

/// The listing prefix of a partition's files (`""`: the whole table, for a non-partitioned one).
fn partition_prefix(partition: &str) -> String {
    if partition.is_empty() {
        String::new()
    } else {
        format!("{}/", partition.trim_end_matches('/'))
    }
}

/// Runs one compaction whole under the table lock the caller holds: rolls back crashed compactions of this
/// sink (whatever their heartbeat: only a lock holder could be running one, and the caller holds it), plans
/// over the latest committed slices (from `view` when given, else a listing of the table), merges, and
/// commits `<c>.commit`. `None` when the table is not merge-on-read or nothing is due (or another engine's
/// compaction is pending). `base_file` says how the new base files are encoded (the table's
/// `hoodie.parquet.*` settings). For the scheduled and inline runs of the coordinator, which must not hold the
/// lock while merging, see [`run`].
pub async fn compact(
    ctx: &ServiceContext<'_>,
    timeline: &Timeline,
    view: Option<&tokio::sync::Mutex<FileSystemView>>,
    base_file: &BaseFileOptions,
) -> Result<Option<CompactionReport>, WriteError> {
    let Some(scheduled) = schedule::schedule(ctx, timeline, view, None).await? else {
        return Ok(None);
    };
    let merged = execute(ctx.storage, ctx.clock, &scheduled, base_file).await?;
    verify(ctx.storage, &scheduled, &merged).await?;
    let timeline = Timeline::load(ctx.storage).await?;
    let started = std::time::Instant::now();
    let done = complete::complete(
        ctx,
        &timeline,
        &scheduled,
        &merged,
        carry::Carried::default(),
        view,
    )
    .await?;
    if done.is_some() {
        complete::clean_up(ctx.storage, &scheduled.planned.instant).await;
    }
    Ok(done.map(|done| scheduled.report(done, started)))
}

/// Checks the new base files of `merged` (size) before the lock is taken to complete.
async fn verify(
    storage: &dyn crate::storage::Storage,
    scheduled: &Scheduled,
    merged: &[MergedGroup],
) -> Result<(), WriteError> {
    let stats: Vec<crate::table::commit::WriteStat> =
        merged.iter().map(|m| m.stat.clone()).collect();
    crate::write::verify::verify_files(storage, &scheduled.planned.instant, &stats).await
}

/// Releases the lock whatever the locked work returned, then returns that result.
async fn unlock<T>(guard: LockGuard, result: Result<T, WriteError>) -> Result<T, WriteError> {
    if let Err(e) = guard.release().await {
        // Whatever changed is durable; a failed release only delays the next holder until the lease ends.
        tracing::warn!(error = %e, "lock release failed");
    }
    result
}

/// What [`run`] needs to take the lock and keep a compaction alive.
#[derive(Debug, Clone, Copy)]
pub struct Runner<'a> {
    /// The table.
    pub storage: &'a dyn crate::storage::Storage,
    /// The table lock, taken for planning and completion only.
    pub lock: &'a dyn Lock,
    /// How long to wait for it.
    pub lock_wait: Duration,
    /// Instant times and heartbeats.
    pub clock: &'a dyn Clock,
    /// The services' settings.
    pub config: &'a ServicesConfig,
    /// A pending compaction of this sink whose heartbeat is older than this is rolled back.
    pub heartbeat_tolerance: Duration,
}

impl Runner<'_> {
    /// The services' context under `guard`.
    fn context<'g>(&'g self, guard: &'g LockGuard) -> ServiceContext<'g> {
        ServiceContext {
            storage: self.storage,
            guard,
            clock: self.clock,
            config: self.config,
        }
    }
}

/// One compaction with the merge outside the table lock (see the module doc): under the lock, roll back
/// expired compactions and schedule; without it, merge and carry; under the lock again, complete. `None` when
/// nothing is due, another compaction is pending, or the compaction was rolled back meanwhile. A failure
/// during the merge leaves the compaction pending: its heartbeat stops, and a later lock holder rolls it back
/// once `heartbeat_tolerance` has passed.
pub async fn run(
    runner: &Runner<'_>,
    view: Option<&tokio::sync::Mutex<FileSystemView>>,
    base_file: &BaseFileOptions,
) -> Result<Option<CompactionReport>, WriteError> {
    let storage = runner.storage;
    let guard = runner.lock.acquire(runner.lock_wait).await?;
    let ctx = runner.context(&guard);
    let result = async {
        let timeline = Timeline::load(storage).await?;
        schedule::schedule(&ctx, &timeline, view, Some(runner.heartbeat_tolerance)).await
    }
    .await;
    let Some(scheduled) = unlock(guard, result).await? else {
        return Ok(None);
    };
    let merged = execute(storage, runner.clock, &scheduled, base_file).await?;
    verify(storage, &scheduled, &merged).await?;
    // Most logs that landed during the merge are carried now, without the lock.
    let timeline = Timeline::load(storage).await?;
    let slices = current_slices(storage, &timeline, view).await?;
    let carried = carry::carry(
        storage,
        runner.clock,
        &scheduled,
        &merged,
        &slices,
        carry::Carried::default(),
    )
    .await?;
    let guard = runner.lock.acquire(runner.lock_wait).await?;
    let started = std::time::Instant::now();
    let ctx = runner.context(&guard);
    let result = async {
        let timeline = Timeline::load(storage).await?;
        complete::complete(&ctx, &timeline, &scheduled, &merged, carried, view).await
    }
    .await;
    let held = started.elapsed();
    let completed = unlock(guard, result).await?;
    if completed.is_some() {
        complete::clean_up(storage, &scheduled.planned.instant).await;
    }
    Ok(completed.map(|done| {
        let mut report = scheduled.report(done, started);
        report.completion_lock_ms = held.as_millis() as u64;
        report
    }))
}

#[cfg(test)]
mod tests;
