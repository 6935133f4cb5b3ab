//! Clustering: rewrites the small base files of insert tables (no bucket index) into fewer, larger file
//! groups, as a Spark-compatible `replacecommit` with operation `CLUSTER`.
//!
//! One clustering instant `t` goes through three steps; only the first and the last hold the table lock:
//!
//! 1. [`schedule`]: picks the latest committed slices below `hoodie.parquet.small.file.limit` that no pending
//!    plan holds, groups them per partition (at least two files and at most
//!    `max.bytes.per.group` input bytes per group, at most `max.num.groups` groups), then writes
//!    `<t>.replacecommit.requested` (the Avro plan), `<t>.replacecommit.inflight` (empty, as Spark does) and
//!    the heartbeat `.hoodie/.heartbeat/<t>`.
//! 2. [`execute`]: per group, reads the input files one at a time and writes new file groups (new file ids,
//!    a `CREATE` marker before each file) of up to the target size, keeping every row's commit time,
//!    sequence number, record key and partition path and rewriting only `_hoodie_file_name`; every file
//!    gets its own bloom filter and key range. The heartbeat is refreshed between files, at most once per
//!    quarter of the heartbeat tolerance ([`HeartbeatPacer`](crate::write::heartbeat::HeartbeatPacer)).
//! 3. [`complete`]: checks every new file and that no input group got a newer committed slice meanwhile,
//!    then writes `<t>.replacecommit` (JSON, create-if-absent) naming the replaced groups, and removes the
//!    markers and the heartbeat.
//!
//! Invariants:
//! - Until `<t>.replacecommit` exists, every reader sees the table exactly as before: the new files carry
//!   the pending time `t`, and the input groups are replaced only by a completed replacecommit. From `t` on
//!   the input groups are hidden and the new ones hold the same rows; time travel before `t` is unchanged.
//! - A plan whose heartbeat expired is rolled back by [`rollback_expired`]: its time is retired first, then
//!   its new files and markers are deleted, then `.inflight`, the heartbeat, and `.requested` last, so that
//!   a crash at any step leaves a pending instant (still invisible data) that the next run rolls back
//!   again, and a finished rollback leaves only the retired mark.
//! - Only plans carrying [`WRITER_KEY`] = [`WRITER_NAME`] are ever rolled back: another engine's pending
//!   clustering is left alone, and its file groups are never planned again.
//! - Bucket-index tables are never clustered: their file groups are fixed per bucket.

mod complete;
mod copy;
mod dictionary;
mod execute;
mod plan;
mod schedule;

use std::collections::BTreeMap;
use std::time::Duration;

pub use complete::{complete, rollback_expired, Completion};
pub use execute::execute;
pub use plan::{group_metrics, plan_groups};
pub use schedule::{pending_clustering, schedule, PendingClustering};

use crate::clock::Clock;
use crate::lock::{Lock, LockGuard};
use crate::storage::Storage;
use crate::table::fs_view::FileSystemView;
use crate::table::instant::InstantTime;
use crate::table::timeline::{latest_file_slices, FileSlice, Timeline};
use crate::write::{TableWriter, WriteError};

use super::{ServiceContext, ServiceReport, ServicesConfig};

pub use crate::table::records::{WRITER_KEY, WRITER_NAME};
/// `operationType` of clustering plans and commits (Spark classifies replacecommits by it).
pub const OPERATION_CLUSTER: &str = "CLUSTER";
/// The execution strategy named in the plan (Spark's default), so that Spark can run or inspect it.
pub const EXECUTION_STRATEGY_CLASS: &str =
    "org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy";
/// Version of the plan records (Hudi's `CLUSTERING_PLAN_VERSION_1`).
pub const PLAN_VERSION: i32 = 1;

/// One clustering group: small files of one partition rewritten together.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedGroup {
    /// The partition all input slices are in.
    pub partition_path: String,
    /// The input slices (latest committed base files), largest first.
    pub slices: Vec<FileSlice>,
    /// Output file groups the plan announces (input bytes / target size, rounded up; the writer may end
    /// with fewer when the rows compress better).
    pub num_output_file_groups: u32,
}

impl PlannedGroup {
    /// Input bytes of the group.
    pub fn input_bytes(&self) -> u64 {
        self.slices.iter().map(|s| s.size).sum()
    }
}

/// A scheduled clustering: what [`execute`] rewrites and [`complete`] commits.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusteringPlanned {
    /// The replacecommit's instant time.
    pub instant: InstantTime,
    /// The groups, partition by partition.
    pub groups: Vec<PlannedGroup>,
    /// Size at which an output file is closed (`hoodie.clustering.plan.strategy.target.file.max.bytes`).
    pub target_file_max_bytes: u64,
    /// Smallest row group copied as encoded (`hudi.sink.clustering.copy.min.row.group.bytes`); a file with
    /// a smaller one is decoded.
    pub copy_min_row_group_bytes: u64,
}

impl ClusteringPlanned {
    /// Partition → ids of the input file groups (what the replacecommit replaces).
    pub fn replaced_file_ids(&self) -> BTreeMap<String, Vec<String>> {
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for group in &self.groups {
            for slice in &group.slices {
                out.entry(slice.partition_path.clone())
                    .or_default()
                    .push(slice.file_id.clone());
            }
        }
        for ids in out.values_mut() {
            ids.sort();
        }
        out
    }

    /// Input slices over all groups.
    pub fn num_input_slices(&self) -> usize {
        self.groups.iter().map(|g| g.slices.len()).sum()
    }
}

/// Releases the lock whatever the locked work returned, then returns that result.
async fn unlock<T>(guard: LockGuard, result: Result<T, WriteError>) -> Result<T, WriteError> {
    if let Err(e) = guard.release().await {
        // Whatever changed is durable; a failed release only delays the next holder until the lease ends.
        tracing::warn!(error = %e, "lock release failed");
    }
    result
}

/// The table-lock part of a run: [`rollback_expired`], then [`schedule`] over the latest committed slices,
/// taken from `view` (brought up to date from the timeline, so a warm view lists nothing) or, without one,
/// from a listing of the table.
async fn roll_back_and_schedule(
    ctx: &ServiceContext<'_>,
    heartbeat_tolerance: Duration,
    view: Option<&tokio::sync::Mutex<FileSystemView>>,
) -> Result<(u64, Option<ClusteringPlanned>), WriteError> {
    let mut timeline = Timeline::load(ctx.storage).await?;
    let rolled_back = rollback_expired(ctx, &timeline, heartbeat_tolerance).await?;
    if rolled_back > 0 {
        timeline = Timeline::load(ctx.storage).await?;
    }
    let slices: Vec<FileSlice> = match view {
        Some(view) => {
            let mut view = view.lock().await;
            if let Err(e) = view.sync(ctx.storage, &timeline).await {
                view.invalidate();
                return Err(e.into());
            }
            view.slices().cloned().collect()
        }
        None => latest_file_slices(ctx.storage, &timeline, None).await?,
    };
    Ok((rolled_back, schedule(ctx, &timeline, &slices).await?))
}

/// One clustering run: under the lock, roll back expired plans and schedule; without it, execute; under the
/// lock again, complete. A failure during execution leaves the plan pending: its heartbeat stops, and a
/// later run rolls it back once `heartbeat_tolerance` has passed.
#[allow(clippy::too_many_arguments)]
pub async fn run(
    storage: &dyn Storage,
    lock: &dyn Lock,
    lock_wait: Duration,
    clock: &dyn Clock,
    config: &ServicesConfig,
    writer: &TableWriter,
    heartbeat_tolerance: Duration,
    view: Option<&tokio::sync::Mutex<FileSystemView>>,
) -> Result<ServiceReport, WriteError> {
    let guard = lock.acquire(lock_wait).await?;
    let ctx = ServiceContext {
        storage,
        guard: &guard,
        clock,
        config,
    };
    let result = roll_back_and_schedule(&ctx, heartbeat_tolerance, view).await;
    let (rolled_back, planned) = unlock(guard, result).await?;
    let mut report = ServiceReport {
        resumed: rolled_back,
        ..ServiceReport::default()
    };
    let Some(planned) = planned else {
        return Ok(report);
    };
    // The clustering writer stays open while warm: it rewrites stored files in the latest committed schema,
    // never an older one (a stored column it lacked would be refused, docs/architecture.md, "Schema evolution").
    writer
        .catch_up_schema(&Timeline::load(storage).await?, None)
        .await?;
    let stats = execute(storage, clock, writer, &planned, heartbeat_tolerance).await?;
    let guard = lock.acquire(lock_wait).await?;
    let ctx = ServiceContext {
        storage,
        guard: &guard,
        clock,
        config,
    };
    let result = async {
        let timeline = Timeline::load(storage).await?;
        complete(&ctx, &timeline, &planned, stats, &writer.schema().avro_json).await
    }
    .await;
    match unlock(guard, result).await? {
        Completion::Committed => {
            report.cluster_instant = Some(planned.instant.to_string());
            report.file_groups_clustered = planned.num_input_slices() as u64;
        }
        Completion::RolledBack { reason } => {
            tracing::info!(instant = %planned.instant, reason, "clustering rolled back at completion");
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests;
