//! The writer's heartbeat task: while an instant is written, its heartbeat is refreshed every
//! `hudi.sink.heartbeat.interval.ms`, so that the coordinator does not take it for a failed write
//! (docs/architecture.md, "Failures, rollback and retired instants").

use std::sync::Arc;
use std::time::Duration;

use crate::clock::Clock;
use crate::commit::write_heartbeat;
use crate::storage::Storage;
use crate::table::instant::InstantTime;

/// Writes the heartbeat of an instant every interval until dropped.
pub(super) struct Heartbeat {
    task: tokio::task::JoinHandle<()>,
    /// Content of the newest heartbeat known to be stored (epoch ms).
    last: Arc<std::sync::atomic::AtomicI64>,
}

/// `Heartbeat::last` before any heartbeat is known to be stored.
const NO_HEARTBEAT: i64 = i64::MIN;

impl Heartbeat {
    /// The newest heartbeat known to be stored, for the commit request.
    pub(super) fn last_stored_ms(&self) -> Option<i64> {
        Some(self.last.load(std::sync::atomic::Ordering::SeqCst)).filter(|ms| *ms != NO_HEARTBEAT)
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// `first` is the heartbeat the coordinator stored with the instant, if it said.
pub(super) fn heartbeat(
    storage: Arc<dyn Storage>,
    clock: Arc<dyn Clock>,
    instant: InstantTime,
    every: Duration,
    first: Option<i64>,
) -> Heartbeat {
    let last = Arc::new(std::sync::atomic::AtomicI64::new(
        first.unwrap_or(NO_HEARTBEAT),
    ));
    let stored = last.clone();
    let task = tokio::spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            match write_heartbeat(storage.as_ref(), clock.as_ref(), &instant).await {
                Ok(ms) => {
                    stored.fetch_max(ms, std::sync::atomic::Ordering::SeqCst);
                }
                Err(e) => tracing::warn!(%instant, error = %e, "heartbeat failed"),
            }
        }
    });
    Heartbeat { task, last }
}
