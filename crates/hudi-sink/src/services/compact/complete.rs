//! Completion, under the table lock: the last carry, then `<c>.commit`.

use bytes::Bytes;

use super::carry::Carried;
use super::execute::MergedGroup;
use super::{
    carry, current_slices, instant_path, Scheduled, ServiceContext, WRITER_KEY, WRITER_NAME,
};
use crate::log_file::LogFileName;
use crate::storage::{PutOutcome, Storage};
use crate::table::carried::{set_carried, CarriedLog};
use crate::table::commit::{CommitMetadata, OperationType, WriteStat};
use crate::table::file_name::{heartbeat_path, marker_dir};
use crate::table::fs_view::FileSystemView;
use crate::table::instant::{InstantTime, State};
use crate::table::timeline::Timeline;
use crate::write::WriteError;

/// What a completed compaction did with its merged groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Completed {
    /// Logs carried into the new slices.
    pub carried: u64,
    /// Groups compacted (named by the commit).
    pub compacted: u64,
    /// Groups left out (`keep.rs`).
    pub left_out: u64,
}

/// Under the lock the caller holds, with `timeline` loaded under it: carries the logs that landed since
/// `carried` was made, deletes the files of the groups left out, then writes `<c>.commit` with the new base
/// files of `merged` (checked by the caller) that it keeps and every carried log (in `extraMetadata` and as a
/// write stat). `None` when the compaction is no longer pending (an expired heartbeat let another holder roll
/// it back).
pub(super) async fn complete(
    ctx: &ServiceContext<'_>,
    timeline: &Timeline,
    scheduled: &Scheduled,
    merged: &[MergedGroup],
    carried: Carried,
    view: Option<&tokio::sync::Mutex<FileSystemView>>,
) -> Result<Option<Completed>, WriteError> {
    let storage = ctx.storage;
    let c = &scheduled.planned.instant;
    let pending = timeline
        .pending()
        .iter()
        .any(|i| i.time == *c && i.action == crate::table::instant::Action::Compaction);
    if !pending || timeline.is_retired(c) {
        tracing::warn!(instant = %c, "compaction rolled back before it completed");
        return Ok(None);
    }
    // Deltacommits that completed since the last carry, each read once (a warm view reads nothing else).
    let slices = current_slices(storage, timeline, view).await?;
    let carried = carry::carry(storage, ctx.clock, scheduled, merged, &slices, carried).await?;
    // The groups left out keep their old slice: their new files go before the commit could make them visible.
    let stats: Vec<&WriteStat> = merged
        .iter()
        .map(|m| &m.stat)
        .filter(|s| {
            !carried
                .left_out
                .contains(&(s.partition_path.clone(), s.file_id.clone()))
        })
        .collect();
    let mut gone: Vec<String> = merged
        .iter()
        .map(|m| &m.stat)
        .filter(|s| {
            carried
                .left_out
                .contains(&(s.partition_path.clone(), s.file_id.clone()))
        })
        .map(|s| s.path.clone())
        .collect();
    gone.extend(carried.discarded.iter().cloned());
    if !gone.is_empty() {
        storage.delete_many(&gone).await?;
    }
    let mut meta = CommitMetadata::new(OperationType::Compact);
    meta.compacted = true;
    for stat in &stats {
        meta.add_write_stat((*stat).clone());
    }
    let carried_logs: &[CarriedLog] = &carried.logs;
    for log in carried_logs {
        meta.add_write_stat(carried_stat(c, log)?);
    }
    meta.set_schema(&scheduled.schema.avro_json);
    meta.extra_metadata
        .insert(WRITER_KEY.to_string(), WRITER_NAME.to_string());
    set_carried(&mut meta, carried_logs)
        .map_err(|e| super::service_error(format!("carried logs of {c}: {e}")))?;
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
    let done = Completed {
        carried: carried_logs.len() as u64,
        compacted: stats.len() as u64,
        left_out: carried.left_out.len() as u64,
    };
    tracing::info!(
        instant = %c,
        groups = done.compacted,
        left_out = done.left_out,
        carried = done.carried,
        "compaction committed"
    );
    Ok(Some(done))
}

/// The write stat that names a carried copy in the compaction commit, beside `extraMetadata`: Hudi's Java
/// merge-on-read incremental query builds its file view only from the files the write stats of the commits in
/// its range name, and would otherwise miss the copies' records (docs/architecture.md, "Compaction").
fn carried_stat(c: &InstantTime, log: &CarriedLog) -> Result<WriteStat, WriteError> {
    let (partition, name) = log.path.rsplit_once('/').unwrap_or(("", &log.path));
    let parsed = LogFileName::parse(name)
        .map_err(|e| super::service_error(format!("carried log {}: {e}", log.path)))?;
    let size = i64::try_from(log.size)
        .map_err(|_| super::service_error(format!("carried log {} size {}", log.path, log.size)))?;
    let mut stat = WriteStat::new(&parsed.file_id, partition, &log.path);
    stat.prev_commit = c.to_string();
    stat.total_write_bytes = size;
    stat.file_size_in_bytes = size;
    Ok(stat)
}

/// After `<c>.commit`: its markers and heartbeat (best effort: the leftovers clean-up removes what a crash
/// leaves).
pub(super) async fn clean_up(storage: &dyn Storage, c: &InstantTime) {
    let result = async {
        let mut done: Vec<String> = storage
            .list(&format!("{}/", marker_dir(c)))
            .await?
            .into_iter()
            .map(|o| o.path)
            .collect();
        done.push(heartbeat_path(c));
        storage.delete_many(&done).await
    }
    .await;
    if let Err(e) = result {
        tracing::warn!(instant = %c, error = %e, "clean-up after the compaction failed; left to the next run");
    }
}
