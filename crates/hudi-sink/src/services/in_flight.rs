//! Writes run a few at a time that are never abandoned half-way.
//!
//! `buffered(n).try_collect()` returns at the first error and drops the writes still running: a local upload's
//! blocking task then finishes (or deletes its temporary file) after the caller has returned, and an S3
//! multipart upload is left incomplete, never aborted. A service that gives up must leave only what its rollback
//! finds, so [`finish_in_order`] lets the writes already started finish (each completes or aborts its own
//! upload) and starts no new one once a write failed.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::stream::StreamExt;

/// Runs `tasks` at most `limit` at a time and returns their outputs in order, or the first error in order once
/// every task that had started has finished; no task starts after one has failed.
pub(crate) async fn finish_in_order<T, E, F>(tasks: Vec<F>, limit: usize) -> Result<Vec<T>, E>
where
    F: Future<Output = Result<T, E>>,
{
    if crate::mutation::is_disabled(crate::mutation::Mutation::FinishInOrder) {
        // Returns at the first error and drops the writes still running.
        use futures_util::stream::TryStreamExt;
        return futures_util::stream::iter(tasks)
            .buffered(limit.max(1))
            .try_collect()
            .await;
    }
    let failed = AtomicBool::new(false);
    let guarded = tasks.into_iter().map(|task| {
        let failed = &failed;
        async move {
            if failed.load(Ordering::SeqCst) {
                return None;
            }
            let result = task.await;
            if result.is_err() {
                failed.store(true, Ordering::SeqCst);
            }
            Some(result)
        }
    });
    let results: Vec<Option<Result<T, E>>> = futures_util::stream::iter(guarded)
        .buffered(limit.max(1))
        .collect()
        .await;
    results.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_failure_lets_the_started_tasks_finish_and_starts_no_other() {
        let log = Mutex::new(Vec::new());
        let task = |i: u32, ms: u64, fail: bool| {
            let log = &log;
            async move {
                log.lock().map(|mut l| l.push(format!("start {i}"))).ok();
                tokio::time::sleep(Duration::from_millis(ms)).await;
                log.lock().map(|mut l| l.push(format!("end {i}"))).ok();
                if fail {
                    Err(format!("task {i} failed"))
                } else {
                    Ok(i)
                }
            }
        };
        let tasks = vec![
            task(0, 10, true),
            task(1, 100, false),
            task(2, 10, false),
            task(3, 10, false),
        ];
        let result = finish_in_order(tasks, 2).await;
        assert_eq!(result, Err("task 0 failed".to_string()));
        let log = log.lock().map(|l| l.clone()).unwrap_or_default();
        // Task 1 was running when task 0 failed: it finished (a write that completes or aborts its upload)
        // before the error was returned. Tasks 2 and 3 started nothing.
        assert_eq!(log, ["start 0", "start 1", "end 0", "end 1"], "{log:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_failure_every_output_comes_in_order() {
        let tasks: Vec<_> = [30u64, 10, 20]
            .into_iter()
            .enumerate()
            .map(|(i, ms)| async move {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok::<_, String>(i)
            })
            .collect();
        assert_eq!(finish_in_order(tasks, 2).await, Ok(vec![0, 1, 2]));
    }
}
