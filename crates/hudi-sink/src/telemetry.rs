//! Logging and per-invocation timings.
//!
//! Logs are structured JSON lines (one object per event, `level`, `fields`, no ANSI) so that CloudWatch Logs
//! Insights can query them; the level comes from `RUST_LOG` (default `info`). The Lambda runtime adds the
//! timestamp and request id to every line it forwards, so the lines carry no time of their own.
//!
//! The table lock is taken by the coordinator, which may run in another Lambda function, yet the writer
//! reports the lock wait of its invocation. A task-local accumulator carries it: [`with_lock_wait`] opens
//! one around a unit of work, the coordinator calls [`record_lock_wait`] after every acquisition (in process:
//! directly into the writer's accumulator; in the coordinator function: into its own, which it returns with
//! the answer, and the Lambda transport records that figure on the writer's side).

use std::cell::Cell;
use std::future::Future;

tokio::task_local! {
    static LOCK_WAIT_MS: Cell<u64>;
}

/// Installs the JSON log subscriber once; later calls do nothing.
pub fn init_json_logs() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .with_current_span(false)
        .with_target(false)
        .with_ansi(false)
        .without_time()
        // stderr: stdout is reserved for the EMF lines (one JSON document each, nothing interleaved).
        .with_writer(std::io::stderr)
        .try_init();
}

/// Runs `work` with a fresh lock-wait accumulator and returns its output with the milliseconds recorded
/// by [`record_lock_wait`] while it ran (on this task).
pub async fn with_lock_wait<F: Future>(work: F) -> (F::Output, u64) {
    LOCK_WAIT_MS
        .scope(Cell::new(0), async move {
            let out = work.await;
            let waited = LOCK_WAIT_MS.try_with(Cell::get).unwrap_or(0);
            (out, waited)
        })
        .await
}

/// Adds `ms` of lock wait to the accumulator of the current [`with_lock_wait`] scope; outside one it does
/// nothing (a coordinator used on its own has nobody to report to).
pub fn record_lock_wait(ms: u64) {
    let _ = LOCK_WAIT_MS.try_with(|total| total.set(total.get().saturating_add(ms)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lock_waits_add_up_within_their_scope_only() {
        record_lock_wait(1_000); // no scope: ignored
        let ((), waited) = with_lock_wait(async {
            record_lock_wait(3);
            tokio::task::yield_now().await;
            record_lock_wait(4);
        })
        .await;
        assert_eq!(waited, 7);
        let (inner, outer) = with_lock_wait(async {
            record_lock_wait(5);
            // A nested scope counts for itself and does not leak into the outer one.
            with_lock_wait(async { record_lock_wait(11) }).await.1
        })
        .await;
        assert_eq!((inner, outer), (11, 5));
        let (_, none) = with_lock_wait(async {}).await;
        assert_eq!(none, 0);
    }
}
