//! Scripted scenario of a clustering slower than the heartbeat tolerance.
//!
//! **A slow clustering stays alive.** Six one-batch commits give an insert table six small base files in
//! one partition. A clustering plans them all; its executor reads each input file in 3 s (a large file on a
//! slow store), so that rewriting them takes 18 s against a heartbeat tolerance of 10 s. At 13 s, another
//! process runs clustering too, which first rolls back every clustering whose heartbeat is older than the
//! tolerance. Invariant: **a live clustering is never rolled back**: the executor refreshes its heartbeat
//! while it works (paced, not once per file), the second run leaves the plan alone, and the first completes
//! its replacecommit; the table then holds every batch once (mutation `clustering-heartbeat-refreshed`: the
//! executor beats only once, the second run rolls the plan back and the first finds it gone at completion).

use super::clustered::insert_only;
use super::scenarios::trip_msgs;
use super::window_scenarios::{batch_of, Table};
use super::*;
use hudi_sink::services::cluster;
use hudi_sink::services::ServiceReport;

/// Virtual time one input file takes to read.
const READ_MS: u64 = 3_000;
/// The heartbeat tolerance of both clustering runs.
const TOLERANCE_MS: u64 = 10_000;

/// A view of the store whose reads of base files each take [`READ_MS`] of the runtime's virtual time.
#[derive(Debug)]
struct SlowReads {
    inner: Arc<dyn Storage>,
}

#[async_trait]
impl Storage for SlowReads {
    fn base_uri(&self) -> &str {
        self.inner.base_uri()
    }

    async fn get(&self, path: &str) -> StorageResult<Bytes> {
        if path.ends_with(".parquet") {
            tokio::time::sleep(Duration::from_millis(READ_MS)).await;
        }
        self.inner.get(path).await
    }

    async fn get_range(&self, path: &str, range: std::ops::Range<u64>) -> StorageResult<Bytes> {
        self.inner.get_range(path, range).await
    }

    async fn head(&self, path: &str) -> StorageResult<Option<ObjectMeta>> {
        self.inner.head(path).await
    }

    async fn put(&self, path: &str, data: Bytes) -> StorageResult<()> {
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
}

/// Services that plan every small file of a partition into one group and decode it.
fn services() -> ServicesConfig {
    ServicesConfig {
        clustering_fan_out: 2,
        clustering_copy_min_row_group_bytes: u64::MAX,
        ..sim_services()
    }
}

/// One clustering run (`cluster::run`, as the coordinator calls it) on `store` with `clock`.
async fn clustering(
    table: &Table,
    store: Arc<dyn Storage>,
    clock: Arc<SimClock>,
) -> Result<ServiceReport, Failure> {
    let setup = |e: &dyn std::fmt::Display| fail("setup", e.to_string());
    let writer = TableWriter::create_or_open(
        store.clone(),
        clock.clone(),
        table.write_config(),
        Some(table.schema.clone()),
    )
    .await
    .map_err(|e| setup(&e))?;
    cluster::run(
        store.as_ref(),
        &table.lock_with(clock.clone()),
        Duration::from_secs(120),
        clock.as_ref(),
        &services(),
        &writer,
        Duration::from_millis(TOLERANCE_MS),
        None,
    )
    .await
    .map_err(|e| fail("clustering runs", e.to_string()))
}

async fn a_slow_clustering_stays_alive() -> Result<(), Failure> {
    let table = Table::with_props(
        false,
        &[
            ("hoodie.datasource.write.operation", "insert"),
            ("hoodie.index.type", ""),
            ("hoodie.bucket.index.num.buckets", ""),
        ],
    )?;
    let store: Arc<dyn Storage> = table.recorder.clone();
    let mut batches = Vec::new();
    for i in 0..6 {
        let mut msgs: Vec<Msg> = trip_msgs(0, "sf")
            .into_iter()
            .map(|mut m| {
                m.offset += 3 * i;
                m
            })
            .collect();
        insert_only(&mut msgs);
        let w = table
            .sink(store.clone(), table.clocks[1].clone(), &format!("w{i}"))
            .await?;
        w.process(batch_of(&msgs)?)
            .await
            .map_err(|e| fail("batches commit", e.to_string()))?;
        batches.push(msgs);
    }
    let slow: Arc<dyn Storage> = Arc::new(SlowReads {
        inner: store.clone(),
    });
    let first = clustering(&table, slow, table.clocks[4].clone());
    let second = async {
        // During the first run's fifth read: 13 s after it planned, past the tolerance.
        tokio::time::sleep(Duration::from_millis(4 * READ_MS + READ_MS / 3)).await;
        clustering(&table, store.clone(), table.clocks[5].clone()).await
    };
    let (first, second) = tokio::join!(first, second);
    let (first, second) = (first?, second?);
    let invariant = "a live clustering is never rolled back";
    if second.resumed != 0 {
        return Err(fail(
            invariant,
            format!(
                "the second run rolled back {} clustering(s) while the first executed",
                second.resumed
            ),
        ));
    }
    if first.file_groups_clustered != 6 || first.cluster_instant.is_none() {
        return Err(fail(
            invariant,
            format!(
                "the first run clustered {} file groups (instant {:?}), not the six it planned",
                first.file_groups_clustered, first.cluster_instant
            ),
        ));
    }
    let refs: Vec<&[Msg]> = batches.iter().map(Vec::as_slice).collect();
    table.check(&refs).await
}

pub(super) fn a_slow_clustering_stays_alive_boxed(
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Failure>>>> {
    Box::pin(a_slow_clustering_stays_alive())
}
