//! Completion and rollback under the table lock.

use std::collections::BTreeSet;
use std::time::Duration;

use bytes::Bytes;

use super::plan::is_this_sinks;
use super::schedule::{read_requested, Requested};
use super::{ClusteringPlanned, PlannedGroup};
use crate::services::ServiceContext;
use crate::storage::PutOutcome;
use crate::table::commit::{OperationType, ReplaceCommitMetadata, WriteStat};
use crate::table::file_name::{heartbeat_path, marker_dir, BaseFileName, Marker};
use crate::table::instant::{Action, Instant, InstantTime, State};
use crate::table::timeline::{Timeline, RETIRED_DIR};
use crate::write::WriteError;

/// How [`complete`] ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Completion {
    /// `<t>.replacecommit` exists: the new file groups replace the input ones.
    Committed,
    /// The plan can never complete and was rolled back (or already had been); nothing changed for readers.
    RolledBack {
        /// Why.
        reason: String,
    },
}

fn instant_path(instant: &InstantTime, state: State) -> String {
    Instant::new(instant.clone(), Action::ReplaceCommit, state).path()
}

/// The input slice a completed commit overtook, if any: an input file group that got a newer committed
/// slice after the plan was made (rewriting the old slice would drop that commit's rows).
async fn overtaken(
    ctx: &ServiceContext<'_>,
    timeline: &Timeline,
    planned: &ClusteringPlanned,
) -> Result<Option<String>, WriteError> {
    let partitions: BTreeSet<&str> = planned
        .groups
        .iter()
        .map(|g| g.partition_path.as_str())
        .collect();
    for partition in partitions {
        let inputs: Vec<_> = planned
            .groups
            .iter()
            .filter(|g| g.partition_path == partition)
            .flat_map(|g: &PlannedGroup| &g.slices)
            .collect();
        for object in ctx.storage.list(&partition_prefix(partition)).await? {
            let name = object.path.rsplit('/').next().unwrap_or(&object.path);
            let Ok(base) = BaseFileName::parse(name) else {
                continue;
            };
            let newer = inputs.iter().find(|s| {
                s.file_id == base.file_id
                    && base.instant_time > s.base_instant
                    && base.instant_time != planned.instant
                    && timeline.is_completed_commit(&base.instant_time)
            });
            if let Some(slice) = newer {
                return Ok(Some(format!(
                    "file group {} in partition {partition:?} got slice {} after the plan took {}",
                    slice.file_id, base.instant_time, slice.file_name
                )));
            }
        }
    }
    Ok(None)
}

/// The listing prefix of a partition's files (`""`: the whole table, for a non-partitioned one).
fn partition_prefix(partition: &str) -> String {
    if partition.is_empty() {
        String::new()
    } else {
        format!("{}/", partition.trim_end_matches('/'))
    }
}

/// Completes a clustering under the table lock: checks that the plan is still pending and not overtaken,
/// that every new file exists with its stated size, then writes `<t>.replacecommit` (create-if-absent;
/// `extraMetadata.schema` = `schema_json`, the table schema) and removes markers and heartbeat. A plan
/// overtaken by a commit to one of its file groups is rolled back instead.
pub async fn complete(
    ctx: &ServiceContext<'_>,
    timeline: &Timeline,
    planned: &ClusteringPlanned,
    stats: Vec<WriteStat>,
    schema_json: &str,
) -> Result<Completion, WriteError> {
    let storage = ctx.storage;
    let t = &planned.instant;
    let pending = match timeline.find(t, Action::ReplaceCommit) {
        None => {
            return Ok(Completion::RolledBack {
                reason: format!("clustering {t} is no longer on the timeline"),
            })
        }
        Some(instant) => !instant.is_completed(),
    };
    if timeline.is_retired(t) {
        return Ok(Completion::RolledBack {
            reason: format!("clustering {t} was rolled back"),
        });
    }
    if pending {
        if let Some(reason) = overtaken(ctx, timeline, planned).await? {
            tracing::warn!(instant = %t, reason, "clustering overtaken: rolling back");
            let partitions = planned
                .groups
                .iter()
                .map(|g| g.partition_path.clone())
                .collect();
            rollback_plan(ctx, t, &partitions).await?;
            return Ok(Completion::RolledBack { reason });
        }
    }
    crate::write::verify::verify_files(storage, t, &stats).await?;
    let mut meta = ReplaceCommitMetadata::default();
    meta.commit.operation_type = OperationType::Cluster;
    for stat in stats {
        meta.commit.add_write_stat(stat);
    }
    meta.commit.set_schema(schema_json);
    meta.commit.extra_metadata.insert(
        super::WRITER_KEY.to_string(),
        super::WRITER_NAME.to_string(),
    );
    meta.partition_to_replace_file_ids = planned.replaced_file_ids();
    let body = Bytes::from(meta.to_json_pretty()?);
    let path = instant_path(t, State::Completed);
    ctx.fence().await?;
    if storage.put_if_absent(&path, body.clone()).await? == PutOutcome::AlreadyExists
        && storage.get(&path).await? != body
    {
        return Err(WriteError::InstantExists {
            instant: t.to_string(),
            file: path,
        });
    }
    let mut done: Vec<String> = storage
        .list(&format!("{}/", marker_dir(t)))
        .await?
        .into_iter()
        .map(|o| o.path)
        .collect();
    done.push(heartbeat_path(t));
    storage.delete_many(&done).await?;
    tracing::info!(instant = %t, files = meta.commit.write_stats().count(), "clustering committed");
    Ok(Completion::Committed)
}

/// Rolls back the pending clustering `t` of this sink (see the module doc of [`super`] for the order).
/// `false` when it completed meanwhile (the timeline the caller read may be stale).
async fn rollback_plan(
    ctx: &ServiceContext<'_>,
    t: &InstantTime,
    partitions: &BTreeSet<String>,
) -> Result<bool, WriteError> {
    let storage = ctx.storage;
    ctx.fence().await?;
    if storage
        .head(&instant_path(t, State::Completed))
        .await?
        .is_some()
    {
        return Ok(false);
    }
    // Retired first: from here on the time is never reused and its files are never committed data.
    if !crate::mutation::is_disabled(crate::mutation::Mutation::ClusteringRollbackRetiresFirst) {
        storage
            .put(&format!("{RETIRED_DIR}{t}"), Bytes::new())
            .await?;
    }
    let markers: Vec<String> = storage
        .list(&format!("{}/", marker_dir(t)))
        .await?
        .into_iter()
        .map(|o| o.path)
        .collect();
    for marker in &markers {
        if let Ok(parsed) = Marker::parse(marker) {
            storage.delete(&parsed.data_file_path()).await?;
        }
    }
    // Files whose marker was lost (or never written) are found by listing the plan's partitions.
    for partition in partitions {
        for object in storage.list(&partition_prefix(partition)).await? {
            let name = object.path.rsplit('/').next().unwrap_or(&object.path);
            if BaseFileName::parse(name).is_ok_and(|b| b.instant_time == *t) {
                storage.delete(&object.path).await?;
            }
        }
    }
    if !markers.is_empty() {
        storage.delete_many(&markers).await?;
    }
    storage.delete(&instant_path(t, State::Inflight)).await?;
    // The heartbeat before the plan: the plan is what makes the next run finish an interrupted rollback
    // (without a heartbeat it expires by its instant time, which is older still), so deleting it last
    // leaves nothing behind but the retired mark.
    storage.delete(&heartbeat_path(t)).await?;
    storage.delete(&instant_path(t, State::Requested)).await?;
    tracing::info!(instant = %t, "clustering rolled back");
    Ok(true)
}

/// Rolls back every pending clustering of this sink whose heartbeat is older than `heartbeat_tolerance`
/// (without a heartbeat: whose instant time is), under the table lock. Other engines' plans are left
/// alone. Returns how many were rolled back.
pub async fn rollback_expired(
    ctx: &ServiceContext<'_>,
    timeline: &Timeline,
    heartbeat_tolerance: Duration,
) -> Result<u64, WriteError> {
    let storage = ctx.storage;
    let now = ctx.clock.now_millis();
    let tolerance = i64::try_from(heartbeat_tolerance.as_millis()).unwrap_or(i64::MAX);
    let mut rolled_back = 0;
    for pending in timeline.pending() {
        if pending.action != Action::ReplaceCommit {
            continue;
        }
        let meta = match read_requested(storage, &pending.time).await? {
            Requested::Record(meta) if is_this_sinks(&meta) => meta,
            Requested::Undecodable(reason) => {
                tracing::warn!(instant = %pending.time, reason, "undecodable pending replacecommit left alone");
                continue;
            }
            Requested::Record(_) | Requested::Absent => continue,
        };
        let last_beat = crate::write::heartbeat::read_heartbeat(storage, &pending.time).await?;
        let last = last_beat.unwrap_or_else(|| pending.time.to_millis().unwrap_or(0));
        if now.saturating_sub(last) <= tolerance {
            continue;
        }
        let partitions: BTreeSet<String> = super::plan::plan_file_groups(&meta)
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        tracing::info!(instant = %pending.time, last_heartbeat_ms = last, "rolling back expired clustering");
        if rollback_plan(ctx, &pending.time, &partitions).await? {
            rolled_back += 1;
        }
    }
    Ok(rolled_back)
}
