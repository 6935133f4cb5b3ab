//! Scheduling under the table lock: the plan, then the pending instant and its heartbeat.

use std::collections::BTreeSet;

use bytes::Bytes;

use super::plan::{is_this_sinks, plan_file_groups, plan_groups, to_requested};
use super::ClusteringPlanned;
use crate::services::ServiceContext;
use crate::storage::{PutOutcome, Storage};
use crate::table::instant::{Action, Instant, InstantTime, State};
use crate::table::properties::TableProperties;
use crate::table::records::RequestedReplaceMetadata;
use crate::table::timeline::{FileSlice, Timeline};
use crate::write::WriteError;

/// What the pending replacecommits of a table hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PendingClustering {
    /// (partition, file id) of every file group under a pending clustering plan (any engine's): such
    /// groups must not be clustered again, nor get new slices from an ingest.
    pub file_groups: BTreeSet<(String, String)>,
    /// Pending clusterings scheduled by this sink.
    pub own: Vec<InstantTime>,
    /// Pending replacecommits whose plan is missing, empty (insert overwrite) or unreadable: another
    /// engine's write of unknown extent, during which nothing is scheduled.
    pub unknown: Vec<InstantTime>,
}

/// What a `.replacecommit.requested` file holds.
#[derive(Debug)]
pub(super) enum Requested {
    /// No file, or an empty one (Spark's insert overwrite).
    Absent,
    /// A decoded record.
    Record(RequestedReplaceMetadata),
    /// Bytes that do not decode (another engine's format, or damage): never this sink's to touch.
    Undecodable(String),
}

/// Reads the `.replacecommit.requested` file of `instant`. Storage failures are errors (the caller must not
/// take a plan it could not read for another engine's); content that does not decode is not.
pub(super) async fn read_requested(
    storage: &dyn Storage,
    instant: &InstantTime,
) -> Result<Requested, WriteError> {
    let path = Instant::new(instant.clone(), Action::ReplaceCommit, State::Requested).path();
    let bytes = match storage.get(&path).await {
        Ok(bytes) => bytes,
        Err(e) if e.is_not_found() => return Ok(Requested::Absent),
        Err(e) => return Err(e.into()),
    };
    if bytes.is_empty() {
        return Ok(Requested::Absent);
    }
    Ok(match RequestedReplaceMetadata::from_avro_bytes(&bytes) {
        Ok(meta) => Requested::Record(meta),
        Err(e) => Requested::Undecodable(format!("{path}: {e}")),
    })
}

/// Reads the plans of every pending replacecommit of `timeline`.
pub async fn pending_clustering(
    storage: &dyn Storage,
    timeline: &Timeline,
) -> Result<PendingClustering, WriteError> {
    let mut out = PendingClustering::default();
    for pending in timeline.pending() {
        if pending.action != Action::ReplaceCommit {
            continue;
        }
        let meta = match read_requested(storage, &pending.time).await? {
            Requested::Record(meta) if meta.operation_type == super::OPERATION_CLUSTER => meta,
            Requested::Undecodable(reason) => {
                tracing::warn!(instant = %pending.time, reason, "undecodable pending replacecommit");
                out.unknown.push(pending.time.clone());
                continue;
            }
            Requested::Record(_) | Requested::Absent => {
                out.unknown.push(pending.time.clone());
                continue;
            }
        };
        if is_this_sinks(&meta) {
            out.own.push(pending.time.clone());
        }
        out.file_groups.extend(plan_file_groups(&meta));
    }
    Ok(out)
}

/// Whether the table's properties say it uses the bucket index (such tables are never clustered).
async fn is_bucket_table(storage: &dyn Storage) -> Result<bool, WriteError> {
    let props = TableProperties::load(storage).await?;
    Ok(props
        .other()
        .get("hoodie.index.type")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("BUCKET")))
}

/// Schedules a clustering of the small files among `slices` (the latest committed slices of `timeline`),
/// under the table lock. `None` when there is nothing to cluster, small-file handling is off, the table
/// uses the bucket index, or another engine has a pending replacecommit of unknown extent.
pub async fn schedule(
    ctx: &ServiceContext<'_>,
    timeline: &Timeline,
    slices: &[FileSlice],
) -> Result<Option<ClusteringPlanned>, WriteError> {
    let storage = ctx.storage;
    if ctx.config.small_file_limit == 0 || is_bucket_table(storage).await? {
        return Ok(None);
    }
    let pending = pending_clustering(storage, timeline).await?;
    if !pending.unknown.is_empty() {
        tracing::warn!(instants = ?pending.unknown, "pending replacecommit of another engine: not clustering");
        return Ok(None);
    }
    let held =
        if crate::mutation::is_disabled(crate::mutation::Mutation::ClusteringSkipsPlannedGroups) {
            Default::default()
        } else {
            pending.file_groups
        };
    let groups = plan_groups(slices, &held, ctx.config);
    if groups.is_empty() {
        return Ok(None);
    }
    let planned = ClusteringPlanned {
        instant: ctx.new_instant_time(timeline),
        groups,
        target_file_max_bytes: ctx.config.clustering_target_file_max_bytes,
        copy_min_row_group_bytes: ctx.config.clustering_copy_min_row_group_bytes,
    };
    let body = to_requested(&planned, storage.base_uri())
        .to_avro_bytes()
        .map_err(|e| WriteError::Table {
            base_path: storage.base_uri().to_string(),
            reason: format!("encoding the clustering plan of {}: {e}", planned.instant),
        })?;
    ctx.fence().await?;
    for (state, content) in [
        (State::Requested, Bytes::from(body)),
        (State::Inflight, Bytes::new()),
    ] {
        let path = Instant::new(planned.instant.clone(), Action::ReplaceCommit, state).path();
        if storage.put_if_absent(&path, content).await? == PutOutcome::AlreadyExists {
            return Err(WriteError::InstantExists {
                instant: planned.instant.to_string(),
                file: path,
            });
        }
    }
    crate::write::heartbeat::write_heartbeat(storage, ctx.clock, &planned.instant).await?;
    tracing::info!(
        instant = %planned.instant,
        groups = planned.groups.len(),
        files = planned.num_input_slices(),
        "clustering scheduled"
    );
    Ok(Some(planned))
}
