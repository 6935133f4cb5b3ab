//! Heartbeats of pending instants: `.hoodie/.heartbeat/<t>`, holding the time of the beat in epoch
//! milliseconds. A pending write whose heartbeat is older than the tolerance has failed and is rolled back
//! (docs/architecture.md, "Failures, rollback and retired instants"). The writer beats while it writes; the
//! coordinator writes the first beat with the instant and reads the stored one before a rollback.

use std::time::Duration;

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

/// A service's heartbeat while it works outside the lock (a clustering rewriting its input files): written
/// when first asked and then at most once per quarter of the tolerance after which other processes roll the
/// service back, so that a run over hundreds of files costs a few writes (on S3, a few PUTs) instead of one
/// per file, and still beats three times within any tolerance.
#[derive(Debug)]
pub struct HeartbeatPacer {
    period_ms: i64,
    last_ms: Option<i64>,
}

impl HeartbeatPacer {
    /// A pacer for a service that others roll back once its heartbeat is `tolerance` old.
    pub fn new(tolerance: Duration) -> Self {
        let quarter = tolerance / 4;
        Self {
            period_ms: i64::try_from(quarter.as_millis()).unwrap_or(i64::MAX),
            last_ms: None,
        }
    }

    /// Writes the heartbeat of `instant` if none was written yet or the last one is a period old.
    pub async fn beat(
        &mut self,
        storage: &dyn Storage,
        clock: &dyn Clock,
        instant: &InstantTime,
    ) -> Result<(), WriteError> {
        if let Some(last) = self.last_ms {
            let refresh = !crate::mutation::is_disabled(
                crate::mutation::Mutation::ClusteringHeartbeatRefreshed,
            );
            if !refresh || clock.now_millis().saturating_sub(last) < self.period_ms {
                return Ok(());
            }
        }
        self.last_ms = Some(write_heartbeat(storage, clock, instant).await?);
        Ok(())
    }
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

    #[tokio::test]
    async fn the_pacer_beats_first_and_then_once_a_quarter_of_the_tolerance() {
        let storage = MemoryStorage::new("memory://t");
        let clock = crate::clock::ManualClock::new(1_000);
        let mut pacer = HeartbeatPacer::new(Duration::from_millis(10_000));
        let mut beats = Vec::new();
        // One call every second of the clock for 12 seconds, a period of 2.5 s: beats at 1, 4, 7 and 10 s.
        for _ in 0..12 {
            pacer
                .beat(&storage, &clock, &instant())
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            let stored = read_heartbeat(&storage, &instant())
                .await
                .unwrap_or_else(|e| panic!("{e}"))
                .unwrap_or_else(|| panic!("no beat"));
            if beats.last() != Some(&stored) {
                beats.push(stored);
            }
            clock.advance(1_000);
        }
        assert_eq!(beats, vec![1_000, 4_000, 7_000, 10_000]);
    }
}
