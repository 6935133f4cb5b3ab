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

/// The stored heartbeat of `instant` in epoch milliseconds: its content, or for a heartbeat without a time in
/// it (Hudi's Java writers write empty ones and beat by rewriting them) its modification time where the store
/// keeps one; `None` when there is no heartbeat or no time for it.
pub async fn read_heartbeat(
    storage: &dyn Storage,
    instant: &InstantTime,
) -> Result<Option<i64>, WriteError> {
    let path = heartbeat_path(instant);
    match storage.get(&path).await {
        Ok(bytes) => match std::str::from_utf8(&bytes)
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok())
        {
            Some(ms) => Ok(Some(ms)),
            None => Ok(storage.modified_ms(&path).await?),
        },
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::local::LocalStorage;
    use crate::storage::memory::MemoryStorage;

    fn instant() -> InstantTime {
        InstantTime::parse("20250101000000000").unwrap_or_else(|e| panic!("{e}"))
    }

    #[tokio::test]
    async fn an_empty_heartbeat_beats_at_its_modification_time() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let storage = LocalStorage::new(dir.path());
        let path = heartbeat_path(&instant());
        // Hudi's Java writers: an empty file, rewritten at every beat.
        storage
            .put(&path, Bytes::new())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let now = chrono::Utc::now().timestamp_millis();
        let beat = read_heartbeat(&storage, &instant())
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("no beat"));
        assert!((now - beat).abs() < 60_000, "{beat} against {now}");
        // The sink's own: the time in it.
        storage
            .put(&path, Bytes::from("1234"))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            read_heartbeat(&storage, &instant()).await.ok(),
            Some(Some(1234))
        );
        // A store that keeps no modification time, and no heartbeat at all.
        let memory = MemoryStorage::new("memory://t");
        memory
            .put(&path, Bytes::new())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read_heartbeat(&memory, &instant()).await.ok(), Some(None));
        storage
            .delete_many(&[path])
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read_heartbeat(&storage, &instant()).await.ok(), Some(None));
    }
}
