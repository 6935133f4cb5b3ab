//! Clustering on an in-memory table: planning, the pending instant, rewriting, completion, rollback.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::{Array, ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use bytes::Bytes;

use super::*;
use crate::base_file::reader::{read_base_file, read_footer};
use crate::clock::ManualClock;
use crate::lock::memory::MemoryLock;
use crate::lock::LeaseOptions;
use crate::schema::avro::AvroSchema;
use crate::storage::memory::MemoryStorage;
use crate::table::commit::{CommitMetadata, OperationType, ReplaceCommitMetadata, WriteStat};
use crate::table::file_name::heartbeat_path;
use crate::table::file_name::BaseFileName;
use crate::table::instant::{Action, Instant, State};
use crate::table::records::RequestedReplaceMetadata;
use crate::table::timeline::RETIRED_DIR;
use crate::write::WriteConfig;

const SCHEMA: &str = r#"{"type":"record","name":"trips","namespace":"t","fields":[
 {"name":"uuid","type":"string"},{"name":"ts","type":"long"},
 {"name":"fare","type":["null","double"],"default":null},{"name":"city","type":"string"}]}"#;
const NOW: i64 = 1_767_225_600_000; // 2026-01-01
const TOLERANCE: Duration = Duration::from_secs(60);

struct Table {
    storage: Arc<MemoryStorage>,
    clock: Arc<ManualClock>,
    writer: TableWriter,
    lock: MemoryLock,
}

async fn table(extra: &str) -> Table {
    let storage = Arc::new(MemoryStorage::new("mem://cluster/t"));
    let clock = Arc::new(ManualClock::new(NOW));
    let config = WriteConfig::from_properties_text(&format!(
        "hoodie.table.name=t\nhoodie.base.path=mem://cluster/t\n\
         hoodie.datasource.write.recordkey.field=uuid\n\
         hoodie.datasource.write.partitionpath.field=city\n\
         hoodie.datasource.write.operation=insert\n{extra}"
    ))
    .expect("config");
    let writer = TableWriter::create_or_open(
        storage.clone(),
        clock.clone(),
        config,
        Some(AvroSchema::parse(SCHEMA).expect("schema")),
    )
    .await
    .expect("table");
    Table {
        storage,
        clock,
        writer,
        lock: MemoryLock::new("t", LeaseOptions::hudi(Duration::from_secs(60))),
    }
}

impl Table {
    /// One insert commit of keys `ids`, alternating between the partitions `sf` and `nyc`.
    async fn insert(&self, ids: std::ops::Range<u32>) -> InstantTime {
        self.insert_written(ids).await.0
    }

    /// [`Self::insert`], and the bytes of the files it wrote.
    async fn insert_written(&self, ids: std::ops::Range<u32>) -> (InstantTime, u64) {
        self.clock.advance(1000);
        let n = ids.len();
        let columns: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from_iter_values(
                ids.clone().map(|i| format!("trip-{i:05}")),
            )),
            Arc::new(Int64Array::from_iter_values(ids.clone().map(i64::from))),
            Arc::new(Float64Array::from_iter(
                ids.clone()
                    .map(|i| (i % 7 != 0).then_some(f64::from(i) / 4.0)),
            )),
            Arc::new(StringArray::from_iter_values(ids.map(|i| {
                if i % 2 == 0 {
                    "sf"
                } else {
                    "nyc"
                }
            }))),
        ];
        assert_eq!(columns[0].len(), n);
        let batch =
            RecordBatch::try_new(self.writer.schema().data.clone(), columns).expect("batch");
        let result = self.writer.write(&[batch]).await.expect("insert");
        let bytes = result
            .commit
            .partition_to_write_stats
            .values()
            .flatten()
            .map(|s| u64::try_from(s.file_size_in_bytes).expect("size"))
            .sum();
        (result.instant, bytes)
    }

    async fn timeline(&self) -> Timeline {
        Timeline::load(self.storage.as_ref())
            .await
            .expect("timeline")
    }

    async fn slices(&self) -> Vec<FileSlice> {
        latest_file_slices(self.storage.as_ref(), &self.timeline().await, None)
            .await
            .expect("slices")
    }

    /// Every visible row (meta columns but the file name, then the data), sorted; checks on the way that
    /// each row's `_hoodie_file_name` names its file.
    async fn rows(&self) -> Vec<Vec<String>> {
        self.rows_checked(true).await
    }

    async fn rows_checked(&self, check_file_names: bool) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        for slice in self.slices().await {
            let data = self.storage.get(&slice.path()).await.expect("get");
            let (_, batches) = read_base_file(data).expect("read");
            for batch in batches {
                for row in 0..batch.num_rows() {
                    let text = |c: usize| batch.column(c).as_string::<i32>().value(row).to_string();
                    if check_file_names {
                        assert_eq!(text(4), slice.file_name, "_hoodie_file_name");
                    }
                    let fare = batch.column(7).as_primitive::<Float64Type>();
                    out.push(vec![
                        text(0),
                        text(1),
                        text(2),
                        text(3),
                        text(5),
                        batch
                            .column(6)
                            .as_primitive::<arrow_array::types::Int64Type>()
                            .value(row)
                            .to_string(),
                        if fare.is_valid(row) {
                            fare.value(row).to_string()
                        } else {
                            "null".into()
                        },
                        text(8),
                    ]);
                }
            }
        }
        out.sort();
        out
    }

    async fn with_ctx<T>(
        &self,
        config: &ServicesConfig,
        f: impl AsyncFnOnce(&ServiceContext<'_>) -> T,
    ) -> T {
        let guard = self
            .lock
            .acquire(Duration::from_secs(1))
            .await
            .expect("lock");
        let ctx = ServiceContext {
            storage: self.storage.as_ref(),
            guard: &guard,
            clock: self.clock.as_ref(),
            config,
        };
        let out = f(&ctx).await;
        guard.release().await.expect("release");
        out
    }

    async fn schedule(&self, config: &ServicesConfig) -> Option<ClusteringPlanned> {
        let timeline = self.timeline().await;
        let slices = self.slices().await;
        self.with_ctx(config, async |ctx| {
            schedule(ctx, &timeline, &slices).await.expect("schedule")
        })
        .await
    }

    async fn execute(&self, planned: &ClusteringPlanned) -> Vec<WriteStat> {
        execute(
            self.storage.as_ref(),
            self.clock.as_ref(),
            &self.writer,
            planned,
            TOLERANCE,
        )
        .await
        .expect("execute")
    }

    async fn complete(&self, planned: &ClusteringPlanned, stats: Vec<WriteStat>) -> Completion {
        let timeline = self.timeline().await;
        let schema = self.writer.schema().avro_json.clone();
        self.with_ctx(&every_small_file(), async |ctx| {
            complete(ctx, &timeline, planned, stats, &schema)
                .await
                .expect("complete")
        })
        .await
    }

    async fn rollback_expired(&self) -> u64 {
        let timeline = self.timeline().await;
        self.with_ctx(&every_small_file(), async |ctx| {
            rollback_expired(ctx, &timeline, TOLERANCE)
                .await
                .expect("rollback")
        })
        .await
    }

    async fn exists(&self, path: &str) -> bool {
        self.storage.head(path).await.expect("head").is_some()
    }

    /// Every path of the table (for "nothing left behind" checks).
    async fn paths(&self) -> BTreeSet<String> {
        self.storage
            .list("")
            .await
            .expect("list")
            .into_iter()
            .map(|o| o.path)
            .collect()
    }
}

/// Spark's plan, every small file (fan-out 1): these tests of the mechanics cluster a few files of a few rows.
fn every_small_file() -> ServicesConfig {
    ServicesConfig {
        clustering_fan_out: 1,
        // The test tables' files are tiny: copy them all.
        clustering_copy_min_row_group_bytes: 0,
        ..ServicesConfig::default()
    }
}

fn path(t: &InstantTime, state: State) -> String {
    Instant::new(t.clone(), Action::ReplaceCommit, state).path()
}

/// A table of four small inserts into two partitions: eight files of a few rows each.
async fn small_files() -> Table {
    let t = table("").await;
    for i in 0..4 {
        t.insert(i * 10..i * 10 + 10).await;
    }
    assert_eq!(t.slices().await.len(), 8);
    t
}

#[tokio::test]
async fn scheduling_writes_the_plan_the_empty_inflight_and_a_heartbeat() {
    let t = small_files().await;
    let before = t.rows().await;
    let planned = t.schedule(&every_small_file()).await.expect("planned");
    assert_eq!(planned.groups.len(), 2);
    assert_eq!(planned.num_input_slices(), 8);
    let mut partitions: Vec<&str> = planned
        .groups
        .iter()
        .map(|g| g.partition_path.as_str())
        .collect();
    partitions.sort();
    assert_eq!(partitions, ["nyc", "sf"]);
    let requested = t
        .storage
        .get(&path(&planned.instant, State::Requested))
        .await
        .expect("requested");
    let meta = RequestedReplaceMetadata::from_avro_bytes(&requested).expect("decode");
    assert_eq!(meta.operation_type, "CLUSTER");
    assert_eq!(
        meta.extra_metadata.get(WRITER_KEY).map(String::as_str),
        Some(WRITER_NAME)
    );
    let plan = meta.clustering_plan.as_ref().expect("plan");
    assert_eq!(
        plan.strategy
            .as_ref()
            .map(|s| s.strategy_class_name.as_str()),
        Some(EXECUTION_STRATEGY_CLASS)
    );
    let planned_paths: BTreeSet<String> = plan
        .input_groups
        .iter()
        .flat_map(|g| &g.slices)
        .map(|s| s.data_file_path.clone())
        .collect();
    let slice_paths: BTreeSet<String> = t
        .slices()
        .await
        .iter()
        .map(|s| format!("mem://cluster/t/{}", s.path()))
        .collect();
    assert_eq!(planned_paths, slice_paths);
    let inflight = t
        .storage
        .get(&path(&planned.instant, State::Inflight))
        .await
        .expect("inflight");
    assert!(inflight.is_empty());
    let beat = t
        .storage
        .get(&heartbeat_path(&planned.instant))
        .await
        .expect("heartbeat");
    assert_eq!(
        std::str::from_utf8(&beat).expect("utf8"),
        NOW.saturating_add(4000).to_string()
    );
    let timeline = t.timeline().await;
    assert!(
        planned.instant
            > *timeline
                .latest_completed()
                .map(|i| &i.time)
                .expect("latest")
    );
    assert_eq!(timeline.pending().len(), 1);
    // Readers see the same table; the planned groups are not planned again.
    assert_eq!(t.rows().await, before);
    let pending = pending_clustering(t.storage.as_ref(), &timeline)
        .await
        .expect("pending");
    assert_eq!(pending.own, vec![planned.instant.clone()]);
    assert_eq!(pending.file_groups.len(), 8);
    assert!(t.schedule(&every_small_file()).await.is_none());
}

#[tokio::test]
async fn nothing_is_scheduled_without_two_small_files_or_when_not_allowed() {
    let t = table("").await;
    t.insert(0..2).await; // one file per partition
    assert!(t.schedule(&every_small_file()).await.is_none());
    t.insert(2..4).await;
    let off = ServicesConfig {
        small_file_limit: 0,
        ..every_small_file()
    };
    assert!(t.schedule(&off).await.is_none());
    let tiny = ServicesConfig {
        small_file_limit: 100, // every file is larger
        ..every_small_file()
    };
    assert!(t.schedule(&tiny).await.is_none());
    // Another engine's pending replacecommit of unknown extent (an insert overwrite): wait for it.
    let foreign = InstantTime::parse("20251231000000000").expect("t");
    t.storage
        .put(&path(&foreign, State::Requested), Bytes::new())
        .await
        .expect("put");
    assert!(t.schedule(&every_small_file()).await.is_none());
    t.storage
        .delete(&path(&foreign, State::Requested))
        .await
        .expect("delete");
    assert!(t.schedule(&every_small_file()).await.is_some());

    // Bucket-index tables are never clustered.
    let b = table("hoodie.index.type=BUCKET\nhoodie.bucket.index.num.buckets=1\n").await;
    assert!(b.schedule(&every_small_file()).await.is_none());
}

/// Row groups of the base file at `path`.
async fn row_groups_of(t: &Table, path: &str) -> usize {
    let data = t.storage.get(path).await.expect("new file");
    parquet::file::metadata::ParquetMetaDataReader::new()
        .parse_and_finish(&data)
        .expect("footer")
        .num_row_groups()
}

#[tokio::test]
async fn row_groups_below_the_copy_minimum_are_decoded_into_one() {
    // Four files of a few rows per partition: copied, each output keeps the four input row groups; with
    // the default minimum (1 MiB) they are decoded and re-encoded as one row group.
    for (minimum, expected) in [(0u64, 4usize), (1024 * 1024, 1)] {
        let t = small_files().await;
        let before = t.rows().await;
        let config = ServicesConfig {
            clustering_copy_min_row_group_bytes: minimum,
            ..every_small_file()
        };
        let planned = t.schedule(&config).await.expect("planned");
        assert_eq!(planned.copy_min_row_group_bytes, minimum);
        let stats = t.execute(&planned).await;
        assert_eq!(stats.len(), 2, "one output file per group");
        for stat in &stats {
            assert_eq!(
                row_groups_of(&t, &stat.path).await,
                expected,
                "minimum {minimum}"
            );
        }
        assert_eq!(t.complete(&planned, stats).await, Completion::Committed);
        assert_eq!(t.rows().await, before, "minimum {minimum}");
    }
}

#[tokio::test]
async fn execute_and_complete_replace_small_files_with_the_same_rows() {
    let t = small_files().await;
    let before = t.rows().await;
    let inputs = t.slices().await;
    let planned = t.schedule(&every_small_file()).await.expect("planned");
    let stats = t.execute(&planned).await;
    assert_eq!(stats.len(), 2, "one output file per group");
    // Not complete yet: readers see the old files only.
    assert_eq!(t.rows().await, before);
    assert_eq!(t.slices().await, inputs);
    assert_eq!(
        t.complete(&planned, stats.clone()).await,
        Completion::Committed
    );

    let after = t.slices().await;
    assert_eq!(after.len(), 2);
    assert!(after.iter().all(|s| s.base_instant == planned.instant));
    assert_eq!(
        t.rows().await,
        before,
        "same rows, commit times and sequence numbers"
    );
    for stat in &stats {
        assert_eq!(stat.prev_commit, "null");
        assert_eq!(stat.num_inserts, stat.num_writes);
        let data = t.storage.get(&stat.path).await.expect("new file");
        assert_eq!(data.len() as i64, stat.file_size_in_bytes);
        let footer = read_footer(&data).expect("footer");
        let (_, batches) = read_base_file(data).expect("rows");
        let mut keys: Vec<String> = batches
            .iter()
            .flat_map(|b| {
                b.column(2)
                    .as_string::<i32>()
                    .iter()
                    .flatten()
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(keys.len() as i64, stat.num_writes);
        let bloom = footer.bloom_filter().expect("bloom").expect("a filter");
        assert!(keys.iter().all(|k| bloom.might_contain(k.as_bytes())));
        keys.sort();
        assert_eq!(footer.min_record_key(), keys.first().map(String::as_str));
        assert_eq!(footer.max_record_key(), keys.last().map(String::as_str));
    }
    let completed = t
        .storage
        .get(&path(&planned.instant, State::Completed))
        .await
        .expect("commit");
    let meta = ReplaceCommitMetadata::from_json(&completed).expect("json");
    assert_eq!(meta.commit.operation_type, OperationType::Cluster);
    assert_eq!(
        meta.partition_to_replace_file_ids,
        planned.replaced_file_ids()
    );
    assert_eq!(
        meta.commit.schema(),
        Some(t.writer.schema().avro_json.as_str())
    );
    let replaced: usize = meta
        .partition_to_replace_file_ids
        .values()
        .map(Vec::len)
        .sum();
    assert_eq!(replaced, 8);
    // Markers and heartbeat are gone; a retried completion is the same commit.
    let left: Vec<String> = t
        .paths()
        .await
        .into_iter()
        .filter(|p| p.starts_with(".hoodie/.temp/") || p.starts_with(".hoodie/.heartbeat/"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(t.complete(&planned, stats).await, Completion::Committed);
    // The schema of the table is still the ingest's (clustering may not change it) and the next write
    // goes on after the replacecommit.
    let timeline = t.timeline().await;
    assert!(timeline
        .latest_schema(t.storage.as_ref())
        .await
        .expect("schema")
        .is_some());
    let next = t.insert(200..202).await;
    assert!(next > planned.instant);
    assert_eq!(t.slices().await.len(), 4);
}

#[tokio::test]
async fn a_group_mixing_copied_and_decoded_files_keeps_every_row_and_key() {
    let mut t = table("").await;
    t.insert(0..10).await;
    t.insert(10..20).await;
    // Files of another codec are decoded and re-encoded; the table's own are copied.
    let config = WriteConfig::from_properties_text(
        "hoodie.table.name=t\nhoodie.base.path=mem://cluster/t\n\
         hoodie.datasource.write.recordkey.field=uuid\n\
         hoodie.datasource.write.partitionpath.field=city\n\
         hoodie.datasource.write.operation=insert\nhoodie.parquet.compression.codec=snappy\n",
    )
    .expect("config");
    let snappy = TableWriter::create_or_open(t.storage.clone(), t.clock.clone(), config, None)
        .await
        .expect("snappy writer");
    let gzip = std::mem::replace(&mut t.writer, snappy);
    t.insert(20..30).await;
    t.insert(30..40).await;
    t.writer = gzip;
    let before = t.rows().await;
    assert_eq!(before.len(), 40);
    let planned = t.schedule(&every_small_file()).await.expect("planned");
    let stats = t.execute(&planned).await;
    // Both paths ran: a switch between them closes the open output, so a group gives more than one file.
    assert!(stats.len() > 2, "{} files", stats.len());
    assert_eq!(
        t.complete(&planned, stats.clone()).await,
        Completion::Committed
    );
    assert_eq!(t.rows().await, before, "every row, its file name rewritten");
    for stat in &stats {
        let data = t.storage.get(&stat.path).await.expect("new file");
        assert_eq!(data.len() as i64, stat.file_size_in_bytes);
        let footer = read_footer(&data).expect("footer");
        let (_, batches) = read_base_file(data).expect("rows");
        let keys: Vec<String> = batches
            .iter()
            .flat_map(|b| {
                b.column(2)
                    .as_string::<i32>()
                    .iter()
                    .flatten()
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(keys.len() as i64, stat.num_writes);
        let bloom = footer.bloom_filter().expect("bloom").expect("a filter");
        assert!(keys.iter().all(|k| bloom.might_contain(k.as_bytes())));
        assert_eq!(
            footer.min_record_key(),
            keys.iter().min().map(String::as_str)
        );
        assert_eq!(
            footer.max_record_key(),
            keys.iter().max().map(String::as_str)
        );
    }
}

#[tokio::test]
async fn outputs_are_split_at_the_target_size() {
    let t = table("").await;
    for i in 0..6 {
        t.insert(i * 400..i * 400 + 400).await;
    }
    let before = t.rows().await;
    let input_bytes: u64 = t.slices().await.iter().map(|s| s.size).sum();
    let config = ServicesConfig {
        clustering_target_file_max_bytes: input_bytes / 8,
        ..every_small_file()
    };
    let planned = t.schedule(&config).await.expect("planned");
    let stats = t.execute(&planned).await;
    assert!(stats.len() >= 4, "{} files", stats.len());
    let ids: BTreeSet<&str> = stats.iter().map(|s| s.file_id.as_str()).collect();
    assert_eq!(
        ids.len(),
        stats.len(),
        "every output file is a new file group"
    );
    assert_eq!(t.complete(&planned, stats).await, Completion::Committed);
    assert_eq!(t.rows().await, before);
}

#[tokio::test]
async fn only_this_sinks_expired_plans_are_rolled_back_in_full() {
    let t = small_files().await;
    let before = t.rows().await;
    let before_paths = t.paths().await;
    // Another engine's clustering plan: never rolled back, its groups never planned.
    let foreign_time = InstantTime::parse("20251231000000000").expect("t");
    let mut foreign = super::plan::to_requested(
        &ClusteringPlanned {
            instant: foreign_time.clone(),
            groups: Vec::new(),
            target_file_max_bytes: 1,
            copy_min_row_group_bytes: 0,
        },
        "mem://cluster/t",
    );
    foreign.extra_metadata.clear();
    let foreign_path = path(&foreign_time, State::Requested);
    t.storage
        .put(
            &foreign_path,
            Bytes::from(foreign.to_avro_bytes().expect("encode")),
        )
        .await
        .expect("put");

    let planned = t.schedule(&every_small_file()).await.expect("planned");
    let stats = t.execute(&planned).await;
    assert_eq!(t.rollback_expired().await, 0, "heartbeat is fresh");
    t.clock.advance(TOLERANCE.as_millis() as i64 + 1);
    assert_eq!(t.rollback_expired().await, 1);
    assert_eq!(t.rows().await, before);
    for stat in &stats {
        assert!(!t.exists(&stat.path).await, "{} left", stat.path);
    }
    let mut expected = before_paths.clone();
    expected.insert(foreign_path.clone());
    expected.insert(format!("{RETIRED_DIR}{}", planned.instant));
    assert_eq!(t.paths().await, expected, "only the retired mark is left");
    let timeline = t.timeline().await;
    assert!(timeline.is_retired(&planned.instant));
    assert_eq!(t.rollback_expired().await, 0, "the foreign plan stays");
    // A completion after the rollback commits nothing.
    assert!(matches!(
        t.complete(&planned, stats).await,
        Completion::RolledBack { .. }
    ));
    assert!(!t.exists(&path(&planned.instant, State::Completed)).await);
    // The next plan takes a new time.
    let again = t
        .schedule(&every_small_file())
        .await
        .expect("planned again");
    assert!(again.instant > planned.instant);
}

#[tokio::test]
async fn a_plan_without_heartbeat_expires_by_its_instant_time() {
    let t = small_files().await;
    let planned = t.schedule(&every_small_file()).await.expect("planned");
    t.storage
        .delete(&heartbeat_path(&planned.instant))
        .await
        .expect("delete");
    t.storage
        .delete(&path(&planned.instant, State::Inflight))
        .await
        .expect("delete");
    assert_eq!(t.rollback_expired().await, 0);
    // The instant time is the last sign of life (it may be a little ahead of the clock).
    let born = planned.instant.to_millis().expect("millis");
    t.clock.set(born + TOLERANCE.as_millis() as i64);
    assert_eq!(t.rollback_expired().await, 0);
    t.clock.advance(1);
    assert_eq!(t.rollback_expired().await, 1);
    assert!(t.timeline().await.pending().is_empty());
}

#[tokio::test]
async fn a_plan_overtaken_by_a_commit_to_its_groups_is_rolled_back_at_completion() {
    let t = small_files().await;
    let before = t.rows().await;
    let planned = t.schedule(&every_small_file()).await.expect("planned");
    let stats = t.execute(&planned).await;
    // Another writer commits a new slice of one input group (a merge) after the plan was made.
    let victim = &planned.groups[0].slices[0];
    let newer = InstantTime::parse("20991231000000000").expect("t");
    let file = BaseFileName::parse(&victim.file_name).expect("name");
    let copy = BaseFileName {
        instant_time: newer.clone(),
        ..file
    }
    .path_in(&victim.partition_path);
    let data = t.storage.get(&victim.path()).await.expect("get");
    t.storage.put(&copy, data).await.expect("put");
    let mut commit = CommitMetadata::new(OperationType::Upsert);
    commit.set_schema(&t.writer.schema().avro_json);
    t.storage
        .put(
            &Instant::new(newer, Action::Commit, State::Completed).path(),
            Bytes::from(commit.to_json_pretty().expect("json")),
        )
        .await
        .expect("commit");
    let visible = t.rows_checked(false).await;
    assert!(matches!(
        t.complete(&planned, stats.clone()).await,
        Completion::RolledBack { .. }
    ));
    assert!(!t.exists(&path(&planned.instant, State::Completed)).await);
    assert!(!t.exists(&path(&planned.instant, State::Requested)).await);
    for stat in &stats {
        assert!(!t.exists(&stat.path).await);
    }
    assert_eq!(t.rows_checked(false).await, visible);
    assert_eq!(before, visible, "the copied slice holds the same rows");
}

/// Inline clustering over a long run of small commits at the default fan-out: 1,000 commits of 40 rows (20 per
/// partition), a run after every 4th, with a limit of 64 KiB and a target of 1 MiB so that files reach the
/// limit within the run.
/// The bytes clustering reads stay under 3 times the bytes the commits wrote, the small files per partition
/// under 48 (15 waiting per factor 16 of size, from the batch file to the target, and the commits between
/// runs), and the table holds every row once, with its commit time, at the end.
#[tokio::test]
async fn a_long_run_rewrites_under_three_times_the_bytes_written() {
    const COMMITS: u32 = 1_000;
    const ROWS: u32 = 40;
    const LIMIT: u64 = 64 * 1024;
    let t = table("").await;
    let config = ServicesConfig {
        small_file_limit: LIMIT,
        clustering_target_file_max_bytes: 16 * LIMIT,
        ..ServicesConfig::default()
    };
    let (mut written, mut rewritten, mut most_small, mut runs) = (0u64, 0u64, 0usize, 0u32);
    let mut expected = Vec::new();
    for commit in 0..COMMITS {
        let ids = commit * ROWS..(commit + 1) * ROWS;
        let (instant, bytes) = t.insert_written(ids.clone()).await;
        written += bytes;
        for i in ids {
            let city = if i % 2 == 0 { "sf" } else { "nyc" };
            let fare = (i % 7 != 0).then(|| (f64::from(i) / 4.0).to_string());
            expected.push(vec![
                instant.to_string(),
                format!("trip-{i:05}"),
                city.to_string(),
                format!("trip-{i:05}"),
                i.to_string(),
                fare.unwrap_or_else(|| "null".into()),
                city.to_string(),
            ]);
        }
        if commit % 4 != 3 {
            continue;
        }
        let Some(planned) = t.schedule(&config).await else {
            continue;
        };
        rewritten += planned
            .groups
            .iter()
            .map(PlannedGroup::input_bytes)
            .sum::<u64>();
        let stats = t.execute(&planned).await;
        assert_eq!(t.complete(&planned, stats).await, Completion::Committed);
        runs += 1;
        let mut small: BTreeMap<String, usize> = BTreeMap::new();
        for slice in t.slices().await {
            if slice.size < LIMIT {
                *small.entry(slice.partition_path).or_default() += 1;
            }
        }
        most_small = most_small.max(small.values().copied().max().unwrap_or(0));
    }
    eprintln!(
        "{COMMITS} commits: {written} bytes written, {rewritten} rewritten ({:.2}x) in {runs} runs, \
         at most {most_small} small files per partition",
        rewritten as f64 / written as f64
    );
    assert!(runs >= 10, "{runs} clustering runs");
    assert!(
        rewritten <= 3 * written,
        "{rewritten} bytes rewritten for {written} written"
    );
    assert!(most_small < 48, "{most_small} small files in a partition");
    // Row-exact: every row once, with its commit time; sequence numbers of its commit, all distinct.
    let rows = t.rows().await;
    let seqnos: BTreeSet<&str> = rows.iter().map(|r| r[1].as_str()).collect();
    assert_eq!(seqnos.len(), rows.len());
    assert!(
        rows.iter().all(|r| r[1].starts_with(&r[0])),
        "sequence numbers"
    );
    let mut got: Vec<Vec<String>> = rows
        .into_iter()
        .map(|mut r| {
            r.remove(1);
            r
        })
        .collect();
    got.sort();
    expected.sort();
    assert_eq!(got.len(), (COMMITS * ROWS) as usize);
    assert!(got == expected, "the rows differ from the rows written");
}
