//! A scripted scenario of a compaction that fails while another of its file groups is uploading, with its
//! own invariant: **no upload is left half-way** (every multipart upload a run started is completed or
//! aborted before the run returns).
//!
//! Two batches give the `sf` file groups of a merge-on-read table a base file and a log. A compaction merges
//! them a few groups at a time: the first group's upload fails at its completion while the second group's
//! is under way. The compaction must let that upload finish before it returns its error, then roll back: on S3 an upload dropped half-way keeps its parts (billed, never an object), and a local upload's
//! blocking task lands its file after the caller returned. With the writes dropped at the first error
//! (mutation `finish-in-order`), the second upload is left open.

use super::compaction_scenarios::{base_and_log, spawn_compaction, updates};
use super::scenarios::trip_msgs;
use super::window_scenarios::Table;
use super::*;
use hudi_sink::storage::StorageError;
use tokio::sync::Notify;

/// The table's store as the compaction sees it: the first base file upload fails at its completion once the
/// second one is under way, which goes on a moment longer; uploads are counted open until they complete or
/// abort.
#[derive(Debug)]
struct FailingUploads {
    inner: Arc<dyn Storage>,
    base_files: AtomicU64,
    open: AtomicU64,
    second_started: Notify,
    failed: Notify,
}

#[async_trait]
impl Storage for FailingUploads {
    fn base_uri(&self) -> &str {
        self.inner.base_uri()
    }

    async fn get(&self, path: &str) -> StorageResult<Bytes> {
        self.inner.get(path).await
    }

    async fn get_range(&self, path: &str, range: std::ops::Range<u64>) -> StorageResult<Bytes> {
        self.inner.get_range(path, range).await
    }

    async fn head(&self, path: &str) -> StorageResult<Option<ObjectMeta>> {
        self.inner.head(path).await
    }

    async fn put(&self, path: &str, data: Bytes) -> StorageResult<()> {
        if path.ends_with(".parquet") {
            match self.base_files.fetch_add(1, Ordering::SeqCst) {
                0 => {
                    // Fails once the next group's upload is under way (at most a minute later: with a
                    // single group there is none, and the scenario reports it).
                    let next = tokio::time::timeout(
                        Duration::from_secs(60),
                        self.second_started.notified(),
                    );
                    if next.await.is_ok() {
                        self.failed.notify_one();
                        return Err(StorageError::Injected {
                            operation: "put",
                            path: path.to_string(),
                        });
                    }
                }
                1 => {
                    // Still under way a moment after the first one failed.
                    self.second_started.notify_one();
                    self.failed.notified().await;
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                _ => {}
            }
        }
        self.inner.put(path, data).await
    }

    async fn put_if_absent(&self, path: &str, data: Bytes) -> StorageResult<PutOutcome> {
        self.inner.put_if_absent(path, data).await
    }

    async fn list(&self, prefix: &str) -> StorageResult<Vec<ObjectMeta>> {
        self.inner.list(prefix).await
    }

    async fn delete(&self, path: &str) -> StorageResult<()> {
        self.inner.delete(path).await
    }

    async fn delete_many(&self, paths: &[String]) -> StorageResult<()> {
        self.inner.delete_many(paths).await
    }

    async fn put_multipart<'a>(
        &'a self,
        path: &str,
    ) -> StorageResult<Box<dyn MultipartUpload + 'a>> {
        Ok(CountedUpload::start(self, path, &self.open))
    }
}

async fn a_failed_compaction_lets_its_uploads_finish() -> Result<(), Failure> {
    let table = Table::new(true)?;
    let first = trip_msgs(0, "sf");
    let second = updates(0, "sf", 4);
    base_and_log(&table, &[&first, &second]).await?;
    let before = rows(table.recorder.as_ref()).await?;
    let store = Arc::new(FailingUploads {
        inner: table.recorder.clone(),
        base_files: AtomicU64::new(0),
        open: AtomicU64::new(0),
        second_started: Notify::new(),
        failed: Notify::new(),
    });
    let tolerance_ms = BEAT_MS * BEAT_MISSES as u64;
    let result = spawn_compaction(&table, store.clone(), tolerance_ms)
        .await
        .map_err(|e| fail("no panic", e.to_string()))?;
    if store.base_files.load(Ordering::SeqCst) < 2 {
        return Err(fail(
            "setup",
            "the compaction merged fewer than two file groups".to_string(),
        ));
    }
    if result.is_ok() {
        return Err(fail(
            "setup",
            "the compaction succeeded although an upload failed".to_string(),
        ));
    }
    let open = store.open.load(Ordering::SeqCst);
    if open > 0 {
        return Err(fail(
            "no upload is left half-way",
            format!(
                "the failed compaction returned with {open} uploads neither completed nor aborted"
            ),
        ));
    }
    // The table reads as before; once the failed compaction's heartbeat is old, a later run rolls it back
    // and compacts again, with the same rows.
    let kept = |what: &'static str, rows: Vec<Trip>| {
        if rows == before {
            Ok(())
        } else {
            Err(fail(
                "a failed compaction changes no row",
                format!("{what}: {rows:?}, before: {before:?}"),
            ))
        }
    };
    kept("after the failure", rows(table.recorder.as_ref()).await?)?;
    tokio::time::sleep(Duration::from_millis(tolerance_ms + BEAT_MS)).await;
    let mut compacted = false;
    for _ in 0..3 {
        let task = spawn_compaction(&table, table.recorder.clone(), tolerance_ms);
        match task.await.map_err(|e| fail("no panic", e.to_string()))? {
            Ok(Some(_)) => {
                compacted = true;
                break;
            }
            Ok(None) => {}
            Err(e) => return Err(fail("a later compaction completes", e.to_string())),
        }
    }
    if !compacted {
        return Err(fail(
            "a later compaction completes",
            "three runs compacted nothing".to_string(),
        ));
    }
    kept(
        "after the later compaction",
        rows(table.recorder.as_ref()).await?,
    )?;
    if let Some((invariant, detail)) = table.recorder.violations().into_iter().next() {
        return Err(fail(invariant, detail));
    }
    Ok(())
}

/// The table's rows as a snapshot reader reads them.
async fn rows(store: &dyn Storage) -> Result<Vec<Trip>, Failure> {
    let timeline = Timeline::load(store)
        .await
        .map_err(|e| fail("readable table", e.to_string()))?;
    let mut rows = super::invariants::table_rows(store, &timeline).await?;
    rows.sort_by_key(|r| format!("{r:?}"));
    Ok(rows)
}

pub(super) fn a_failed_compaction_lets_its_uploads_finish_boxed(
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Failure>>>> {
    Box::pin(a_failed_compaction_lets_its_uploads_finish())
}
