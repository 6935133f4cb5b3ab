//! Scheduling, under the table lock: roll back what crashed, choose the file groups, and write the plan.

use std::time::Duration;

use bytes::Bytes;

use super::{
    committed_instants, current_slices, instant_path, plan, select_file_groups, service_error,
    table_schema, CompactionPlanned, CompactionReport, ServiceContext,
};
use crate::log_file::{CommittedInstants, MergeMode};
use crate::storage::PutOutcome;
use crate::table::fs_view::FileSystemView;
use crate::table::instant::{Action, InstantTime, State};
use crate::table::properties::TableProperties;
use crate::table::timeline::Timeline;
use crate::write::{TableSchema, WriteError};

/// A compaction whose plan is on the timeline: what its merge needs.
#[derive(Debug, Clone)]
pub struct Scheduled {
    /// The plan.
    pub planned: CompactionPlanned,
    /// The table schema the new base files are written in.
    pub schema: TableSchema,
    /// How records merge.
    pub mode: MergeMode,
    /// The log blocks that count (those of instants completed when the plan was made).
    pub committed: CommittedInstants,
    /// Crashed compactions rolled back before this one was planned.
    pub rolled_back: u64,
}

impl Scheduled {
    /// The report of this compaction, completed with `carried` logs, its completion having started at
    /// `started`.
    pub(super) fn report(
        &self,
        done: super::complete::Completed,
        started: std::time::Instant,
    ) -> CompactionReport {
        CompactionReport {
            instant: self.planned.instant.clone(),
            file_groups: done.compacted,
            left_out: done.left_out,
            log_files: self
                .planned
                .operations
                .iter()
                .map(|o| o.log_paths.len() as u64)
                .sum(),
            carried: done.carried,
            rolled_back: self.rolled_back,
            completion_lock_ms: started.elapsed().as_millis() as u64,
        }
    }
}

/// The slices due for compaction among `slices` (the latest committed ones) on `timeline`, under `config`
/// ([`select_file_groups`] with the table's deltacommits and the archival boundary).
fn due_slices<'s>(
    slices: &'s [crate::table::timeline::FileSlice],
    timeline: &Timeline,
    config: &crate::services::ServicesConfig,
) -> Vec<&'s crate::table::timeline::FileSlice> {
    // Archival cuts the active timeline down to keep.min.commits once it holds more than keep.max.commits;
    // a slice older than the instant the cut keeps may hold logs of deltacommits the cut would pass. The
    // compaction being planned is one more commit: counted, so that its own commit does not push the timeline
    // past keep.max.commits with a slice it left behind holding archival back.
    let completed = timeline.completed_commits();
    let keep_min = usize::try_from(config.keep_min_commits).unwrap_or(usize::MAX);
    let keep_max = usize::try_from(config.keep_max_commits).unwrap_or(usize::MAX);
    let after = completed.len().saturating_add(1);
    let archive_boundary = (after > keep_max && keep_min > 0)
        .then(|| completed.get(after.saturating_sub(keep_min)))
        .flatten()
        .map(|i| &i.time);
    let deltacommits: Vec<InstantTime> = completed
        .iter()
        .filter(|i| i.action == Action::DeltaCommit)
        .map(|i| i.time.clone())
        .collect();
    select_file_groups(
        slices,
        config.compact_max_delta_commits,
        config.compaction_max_file_groups,
        archive_boundary,
        Some(&deltacommits),
    )
}

/// Whether a compaction is due on `timeline` (no lock needed: the latest slices come from `view`, brought up
/// to date with one read per commit it has not seen): none is pending and some slice is due. The caller then
/// runs [`super::run`], which decides again under the lock.
pub async fn is_due(
    storage: &dyn crate::storage::Storage,
    timeline: &Timeline,
    view: &tokio::sync::Mutex<FileSystemView>,
    config: &crate::services::ServicesConfig,
) -> Result<bool, WriteError> {
    if timeline
        .pending()
        .iter()
        .any(|i| i.action == Action::Compaction)
    {
        return Ok(false);
    }
    let slices = current_slices(storage, timeline, Some(view)).await?;
    Ok(!due_slices(&slices, timeline, config).is_empty())
}

/// Under the lock the caller holds: rolls back this sink's crashed compactions (with `expiry`, only those
/// whose heartbeat is older; without, every pending one), then plans a compaction over the latest committed
/// slices when one is due and none is pending, writes `<c>.compaction.requested`, `.inflight` and the
/// heartbeat, and returns it.
pub(super) async fn schedule(
    ctx: &ServiceContext<'_>,
    timeline: &Timeline,
    view: Option<&tokio::sync::Mutex<FileSystemView>>,
    expiry: Option<Duration>,
) -> Result<Option<Scheduled>, WriteError> {
    let storage = ctx.storage;
    let props = TableProperties::load(storage).await?;
    if !props.is_merge_on_read() {
        return Ok(None);
    }
    let mut rolled_back = 0;
    let reloaded;
    let timeline = if timeline
        .pending()
        .iter()
        .any(|i| i.action == Action::Compaction)
    {
        rolled_back = match expiry {
            Some(tolerance) => {
                super::roll_back_expired_compactions(ctx, timeline, tolerance).await?
            }
            None => super::roll_back_pending_compactions(ctx, timeline).await?,
        };
        reloaded = Timeline::load(storage).await?;
        if reloaded
            .pending()
            .iter()
            .any(|i| i.action == Action::Compaction)
        {
            tracing::debug!(
                "a compaction is pending (running or another engine's): not compacting"
            );
            return Ok(None);
        }
        &reloaded
    } else {
        timeline
    };
    let slices = current_slices(storage, timeline, view).await?;
    let selected = due_slices(&slices, timeline, ctx.config);
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
    crate::write::heartbeat::write_heartbeat(storage, ctx.clock, &planned.instant).await?;
    let committed = committed_instants(timeline)?;
    Ok(Some(Scheduled {
        planned,
        schema,
        mode,
        committed,
        rolled_back,
    }))
}
