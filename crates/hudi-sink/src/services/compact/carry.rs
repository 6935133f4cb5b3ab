//! Carrying: the logs deltacommits appended to the planned slices while the merge ran, copied into the new
//! slices (see `table::carried` for why, and the module doc of [`super`] for when).
//!
//! Which logs: every committed log of a planned slice (the file-system view's rule: a completed deltacommit
//! names it) that the plan does not name. They come after the planned ones in reader order (a deltacommit
//! whose log would come before a completed one's is refused, `commit/conflict.rs`), so the copies keep that
//! order with versions 1, 2, … of the new slice, each with its original write token. A copy holds the same
//! bytes, so its blocks keep the instant of the deltacommit that wrote them. A group whose late logs would
//! change a snapshot once carried is left out instead (`keep.rs`).

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;

use super::execute::MergedGroup;
use super::keep::{self, LateKeys};
use super::{service_error, CompactionPlanned, Scheduled};
use crate::clock::Clock;
use crate::log_file::{scan_stored_log_files, LogFileName};
use crate::mutation::{is_disabled, Mutation};
use crate::storage::{join_path, PutOutcome, Storage};
use crate::table::carried::CarriedLog;
use crate::table::fs_view::SliceLogFile;
use crate::table::timeline::FileSlice;
use crate::write::WriteError;

/// Copies made at once.
const COPIES_IN_FLIGHT: usize = 8;

/// A committed log of a planned slice that the plan does not name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LateLog {
    /// Its partition.
    pub partition: String,
    /// The log.
    pub log: SliceLogFile,
}

impl LateLog {
    fn path(&self) -> String {
        join_path(&[&self.partition, &self.log.name.file_name()])
    }

    /// Its file group: (partition, file id).
    fn group(&self) -> (String, String) {
        (self.partition.clone(), self.log.name.file_id.clone())
    }
}

/// The file group of a carried copy: (partition, file id), from its path.
trait CopyGroup {
    fn group(&self) -> (String, String);
}

impl CopyGroup for CarriedLog {
    fn group(&self) -> (String, String) {
        let (partition, name) = self
            .path
            .rsplit_once('/')
            .unwrap_or(("", self.path.as_str()));
        let file_id = LogFileName::parse(name)
            .map(|l| l.file_id)
            .unwrap_or_default();
        (partition.to_string(), file_id)
    }
}

/// The late logs of `planned` among `slices` (the latest committed slices), in reader order per group. A
/// planned group whose latest committed slice is no longer the planned one was rewritten by someone else
/// meanwhile (another engine's compaction or clustering): an error, the compaction cannot complete.
pub fn late_logs(
    planned: &CompactionPlanned,
    slices: &[FileSlice],
) -> Result<Vec<LateLog>, WriteError> {
    let by_group: BTreeMap<(&str, &str), &FileSlice> = slices
        .iter()
        .map(|s| ((s.partition_path.as_str(), s.file_id.as_str()), s))
        .collect();
    let mut out = Vec::new();
    for op in &planned.operations {
        let key = (op.slice.partition_path.as_str(), op.slice.file_id.as_str());
        let current = by_group
            .get(&key)
            .filter(|s| s.base_instant == op.slice.base_instant)
            .ok_or_else(|| {
                service_error(format!(
                    "file group {} in partition {:?} was rewritten while compaction {} merged it",
                    op.slice.file_id, op.slice.partition_path, planned.instant
                ))
            })?;
        let planned_logs: BTreeSet<&str> = op.log_paths.iter().map(String::as_str).collect();
        // Only the planned slice's own logs: those another engine's writer appended to slice `c` are there already.
        let mut late: Vec<LateLog> = current
            .logs_based_at(&current.base_instant)
            .map(|log| LateLog {
                partition: current.partition_path.clone(),
                log: log.clone(),
            })
            .filter(|late| !planned_logs.contains(late.path().as_str()))
            .collect();
        late.sort_by(|a, b| a.log.name.cmp(&b.log.name));
        out.extend(late);
    }
    Ok(out)
}

/// What the carry has done so far for one compaction.
#[derive(Debug, Clone, Default)]
pub(super) struct Carried {
    /// The copies made for the groups the compaction keeps, in the order made.
    pub logs: Vec<CarriedLog>,
    /// Groups left out, by (partition, file id): carrying their late logs would change a snapshot (`keep.rs`).
    pub left_out: BTreeSet<(String, String)>,
    /// Copies made for groups left out since: deleted before the commit.
    pub discarded: Vec<String>,
    /// Per group, what its late logs hold so far.
    late: BTreeMap<(String, String), LateKeys>,
    /// Per group, the keys its planned logs hold, once read.
    planned_keys: BTreeMap<(String, String), BTreeSet<String>>,
}

/// Copies the late logs of the groups in `merged` among `slices` that `carried` does not hold yet into the new
/// slices, leaving out the groups whose late logs would change a snapshot (`keep.rs`), and returns all that
/// was done (the earlier copies first). With the mutation switch `CompactionCarriesLateLogs`, nothing is copied.
pub(super) async fn carry(
    storage: &dyn Storage,
    clock: &dyn Clock,
    scheduled: &Scheduled,
    merged: &[MergedGroup],
    slices: &[FileSlice],
    mut carried: Carried,
) -> Result<Carried, WriteError> {
    if is_disabled(Mutation::CompactionCarriesLateLogs) {
        return Ok(carried);
    }
    let planned = &scheduled.planned;
    let done: BTreeSet<String> = carried.logs.iter().map(|c| c.from.clone()).collect();
    let late: Vec<LateLog> = late_logs(planned, slices)?
        .into_iter()
        .filter(|l| !done.contains(&l.path()) && !carried.left_out.contains(&l.group()))
        .collect();
    if late.is_empty() {
        return Ok(carried);
    }
    crate::write::heartbeat::write_heartbeat(storage, clock, &planned.instant).await?;
    use futures_util::stream::{StreamExt, TryStreamExt};
    let reads: Vec<_> = late.iter().map(|l| fetch(storage, l)).collect();
    let fetched: Vec<Bytes> = futures_util::stream::iter(reads)
        .buffered(COPIES_IN_FLIGHT)
        .try_collect()
        .await?;
    // Per group, in reader order: what the late logs hold, then whether the group stays.
    let mut by_group: BTreeMap<(String, String), Vec<(LateLog, Bytes)>> = BTreeMap::new();
    for (l, bytes) in late.into_iter().zip(fetched) {
        by_group.entry(l.group()).or_default().push((l, bytes));
    }
    let mut kept = Vec::new();
    for (group, logs) in by_group {
        let (op, merged) = planned
            .operations
            .iter()
            .zip(merged)
            .find(|(op, _)| {
                (op.slice.partition_path.as_str(), op.slice.file_id.as_str())
                    == (group.0.as_str(), group.1.as_str())
            })
            .ok_or_else(|| {
                service_error(format!(
                    "late logs of file group {} {:?}, which compaction {} did not merge",
                    group.1, group.0, planned.instant
                ))
            })?;
        let late_keys = carried.late.entry(group.clone()).or_default();
        for (l, bytes) in &logs {
            late_keys.add(&l.path(), bytes, !merged.deleted.is_empty())?;
        }
        let mode = &scheduled.mode;
        if keep::needs_planned_keys(mode, &merged.deleted, late_keys)
            && !carried.planned_keys.contains_key(&group)
        {
            let records = scan_stored_log_files(storage, &op.log_paths, &scheduled.committed, mode)
                .await
                .map_err(|e| service_error(format!("log files of {}: {e}", op.slice.file_id)))?;
            let keys = records.versions().iter().map(|(k, _)| k.clone()).collect();
            carried.planned_keys.insert(group.clone(), keys);
        }
        let leave = keep::leaves_out(
            mode,
            &merged.deleted,
            late_keys,
            carried.planned_keys.get(&group),
        )
        .unwrap_or(true);
        if leave {
            tracing::info!(instant = %planned.instant, partition = %group.0, file_id = %group.1,
                "compaction leaves out a file group: carrying its late logs would change its snapshot");
            let (gone, stay): (Vec<CarriedLog>, Vec<CarriedLog>) =
                std::mem::take(&mut carried.logs)
                    .into_iter()
                    .partition(|c| c.group() == group);
            carried.logs = stay;
            carried.discarded.extend(gone.into_iter().map(|c| c.path));
            carried.left_out.insert(group);
        } else {
            kept.extend(logs);
        }
    }
    // Versions of the new slices: after the copies already made, in reader order.
    let mut next: BTreeMap<(String, String), u32> = BTreeMap::new();
    for c in &carried.logs {
        let (partition, name) = c.path.rsplit_once('/').unwrap_or(("", c.path.as_str()));
        if let Ok(log) = LogFileName::parse(name) {
            let n = next
                .entry((partition.to_string(), log.file_id))
                .or_insert(0);
            *n = (*n).max(log.version);
        }
    }
    let mut copies = Vec::with_capacity(kept.len());
    for (late, bytes) in kept {
        let n = next
            .entry((late.partition.clone(), late.log.name.file_id.clone()))
            .or_insert(0);
        *n += 1;
        let name = LogFileName {
            version: *n,
            base_instant: planned.instant.clone(),
            ..late.log.name.clone()
        };
        let to = join_path(&[&late.partition, &name.file_name()]);
        copies.push(put_copy(storage, late.path(), to, bytes));
    }
    let made: Vec<CarriedLog> =
        crate::services::in_flight::finish_in_order(copies, COPIES_IN_FLIGHT).await?;
    tracing::info!(instant = %planned.instant, logs = made.len(), "compaction carried late logs");
    carried.logs.extend(made);
    Ok(carried)
}

/// The bytes of the late log `late`, checked against the size its commit gives.
async fn fetch(storage: &dyn Storage, late: &LateLog) -> Result<Bytes, WriteError> {
    let from = late.path();
    let bytes: Bytes = storage.get(&from).await?;
    if bytes.len() as u64 != late.log.size {
        return Err(service_error(format!(
            "log {from} has {} bytes, its commit says {}",
            bytes.len(),
            late.log.size
        )));
    }
    Ok(bytes)
}

/// Stores `bytes` (the log at `from`) at `to` (create-if-absent; an existing copy of the same size is this
/// compaction's own, from an earlier attempt of the request).
async fn put_copy(
    storage: &dyn Storage,
    from: String,
    to: String,
    bytes: Bytes,
) -> Result<CarriedLog, WriteError> {
    let size = bytes.len() as u64;
    let blocks = crate::log_file::block::read_blocks(&from, &bytes)
        .map_err(|e| service_error(format!("log {from}: {e}")))?;
    let instant = blocks
        .first()
        .and_then(|b| b.header.get(&crate::log_file::HeaderKey::InstantTime))
        .cloned()
        .ok_or_else(|| service_error(format!("log {from} has no block with an instant")))?;
    if storage.put_if_absent(&to, bytes).await? == PutOutcome::AlreadyExists {
        let existing = storage.head(&to).await?.map(|m| m.size);
        if existing != Some(size) {
            return Err(service_error(format!(
                "carried log {to} exists with {existing:?} bytes, expected {size}"
            )));
        }
    }
    Ok(CarriedLog {
        path: to,
        from,
        size,
        instant: instant.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::instant::InstantTime;

    fn t(s: &str) -> InstantTime {
        InstantTime::parse(s).unwrap_or_else(|e| panic!("{e}"))
    }

    fn log(base: &str, version: u32, token: u64) -> SliceLogFile {
        SliceLogFile {
            name: LogFileName {
                file_id: "00000001-aaaa-bbbb-cccc-000000000001-0".into(),
                base_instant: t(base),
                version,
                write_token: crate::table::file_name::WriteToken::new(0, token, 0),
            },
            size: 10,
        }
    }

    const B: &str = "20250101000000000";

    fn slice(logs: Vec<SliceLogFile>) -> FileSlice {
        FileSlice {
            partition_path: "p".into(),
            file_id: "00000001-aaaa-bbbb-cccc-000000000001-0".into(),
            base_instant: t(B),
            file_name: format!("00000001-aaaa-bbbb-cccc-000000000001-0_0-0-0_{B}.parquet"),
            size: 100,
            log_files: logs,
        }
    }

    fn planned_with(logs: &[SliceLogFile]) -> CompactionPlanned {
        let s = slice(logs.to_vec());
        CompactionPlanned {
            instant: t("20250101000005000"),
            operations: vec![super::super::PlannedOperation {
                log_paths: s.log_paths(),
                log_bytes: 0,
                slice: s,
            }],
        }
    }

    #[test]
    fn logs_appended_after_the_plan_are_late_in_reader_order() {
        let planned = planned_with(&[log(B, 1, 1), log(B, 2, 1)]);
        let now = [slice(vec![
            log(B, 1, 1),
            log(B, 2, 1),
            log(B, 3, 7),
            log(B, 3, 2),
            log(B, 4, 1),
        ])];
        let late = late_logs(&planned, &now).unwrap_or_default();
        let names: Vec<(u32, u64)> = late
            .iter()
            .map(|l| (l.log.name.version, l.log.name.write_token.stage_id))
            .collect();
        assert_eq!(names, vec![(3, 2), (3, 7), (4, 1)]);
        // Nothing appended: nothing late.
        let unchanged = [slice(vec![log(B, 1, 1), log(B, 2, 1)])];
        assert_eq!(late_logs(&planned, &unchanged).ok(), Some(Vec::new()));
    }

    #[test]
    fn a_group_rewritten_meanwhile_cannot_be_carried() {
        let planned = planned_with(&[log(B, 1, 1)]);
        let mut rewritten = slice(Vec::new());
        rewritten.base_instant = t("20250101000003000");
        assert!(late_logs(&planned, &[rewritten]).is_err());
        assert!(late_logs(&planned, &[]).is_err());
    }
}
