//! Heartbeats of pending instants: `.hoodie/.heartbeat/<t>`, holding the time of the beat in epoch
//! milliseconds. A pending write whose heartbeat is older than the tolerance has failed and is rolled back
//! (docs/architecture.md, "Failures, rollback and retired instants"). The writer beats while it writes; the
//! coordinator writes the first beat with the instant and reads the stored one before a rollback.

use bytes::Bytes;

use super::WriteError;
use crate::clock::Clock;
use crate::storage::Storage;
use crate::table::file_name::heartbeat_path;
use crate::table::instant::InstantTime;

/// Writes the heartbeat of `instant` and returns its content: the time in epoch milliseconds (Hudi's own
/// services read the object's modification time, which the write refreshes too).
pub async fn write_heartbeat(
    storage: &dyn Storage,
    clock: &dyn Clock,
    instant: &InstantTime,
) -> Result<i64, WriteError> {
    let now = clock.now_millis();
    storage
        .put(&heartbeat_path(instant), Bytes::from(now.to_string()))
        .await?;
    Ok(now)
}

/// The stored heartbeat of `instant` in epoch milliseconds; `None` when there is none or it does not parse.
pub async fn read_heartbeat(
    storage: &dyn Storage,
    instant: &InstantTime,
) -> Result<Option<i64>, WriteError> {
    match storage.get(&heartbeat_path(instant)).await {
        Ok(bytes) => Ok(std::str::from_utf8(&bytes)
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok())),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e.into()),
    }
}
