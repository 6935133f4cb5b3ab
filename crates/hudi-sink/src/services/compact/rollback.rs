//! Rolling back a compaction of this sink that will not complete (its runner died, or the caller holds the
//! lock and knows nobody else runs one).

use std::collections::BTreeSet;
use std::time::Duration;

use bytes::Bytes;

use super::{instant_path, partition_prefix, pending_compactions, ServiceContext};
use crate::log_file::LogFileName;
use crate::table::file_name::{heartbeat_path, marker_dir, BaseFileName, Marker};
use crate::table::instant::{InstantTime, State};
use crate::table::timeline::{Timeline, RETIRED_DIR};
use crate::write::WriteError;

/// Rolls back the pending compaction `c` (see the module doc of [`super`] for the order); `false` when it
/// completed meanwhile.
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
    // Files whose marker was lost (or never written) are found by listing the plan's partitions: base files
    // of `c`, and the logs it carried into its slices (named with `c` as their base instant; no writer
    // appends to a slice before its compaction completes).
    for partition in partitions {
        for object in storage.list(&partition_prefix(partition)).await? {
            if object.path.starts_with(".hoodie/") {
                continue;
            }
            let name = object.path.rsplit('/').next().unwrap_or(&object.path);
            let ours = BaseFileName::parse(name).is_ok_and(|b| b.instant_time == *c)
                || LogFileName::parse(name).is_ok_and(|l| l.base_instant == *c);
            if ours && !files.contains(&object.path) {
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

/// Rolls back every pending compaction of this sink on `timeline`, under the table lock the caller holds,
/// whatever its heartbeat: for callers that know no compaction of this sink is running (tests, and
/// [`super::compact`], which merges under the lock). Another engine's pending compactions are left alone.
/// Returns how many were rolled back.
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

/// Rolls back every pending compaction of this sink whose heartbeat is older than `tolerance` (without a
/// heartbeat: whose instant time is), under the table lock the caller holds: its runner died (a live one
/// writes its heartbeat before each group it merges and each carry). Returns how many were rolled back.
pub async fn roll_back_expired_compactions(
    ctx: &ServiceContext<'_>,
    timeline: &Timeline,
    tolerance: Duration,
) -> Result<u64, WriteError> {
    let pending = pending_compactions(ctx.storage, timeline).await?;
    let now = ctx.clock.now_millis();
    let tolerance = i64::try_from(tolerance.as_millis()).unwrap_or(i64::MAX);
    let mut rolled_back = 0;
    for (c, partitions) in &pending.own {
        let last_beat = crate::write::heartbeat::read_heartbeat(ctx.storage, c).await?;
        let last = last_beat.unwrap_or_else(|| c.to_millis().unwrap_or(0));
        if now.saturating_sub(last) <= tolerance {
            continue;
        }
        tracing::info!(instant = %c, last_heartbeat_ms = last, "rolling back expired compaction");
        if roll_back(ctx, c, partitions).await? {
            rolled_back += 1;
        }
    }
    Ok(rolled_back)
}
