//! The view against the listing: after every step of each scenario the view must equal
//! [`latest_file_slices`] on the same table, and the step must have taken the expected path (applied or listed).

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use async_trait::async_trait;
use bytes::Bytes;

use super::*;
use crate::clock::SystemClock;
use crate::schema::avro::AvroSchema;
use crate::storage::memory::MemoryStorage;
use crate::storage::{ObjectMeta, PutOutcome, StorageResult};
use crate::table::commit::{CommitMetadata, ReplaceCommitMetadata};
use crate::table::timeline::RETIRED_DIR;
use crate::write::TableWriter;
use crate::write::WriteConfig;

fn t(n: u32) -> InstantTime {
    InstantTime::parse(&format!("202401010000000{n:02}")).expect("time")
}

/// `<file id>_0-1-0_<t>.parquet`.
fn base_name(file_id: &str, n: u32) -> String {
    format!("{file_id}_0-1-0_{}.parquet", t(n))
}

/// A hand-made table: every commit's write stats name exactly the files it wrote.
struct Table {
    storage: MemoryStorage,
}

impl Table {
    fn new() -> Self {
        Self {
            storage: MemoryStorage::new("mem://view"),
        }
    }

    async fn put(&self, path: &str, data: &[u8]) {
        self.storage
            .put(path, Bytes::copy_from_slice(data))
            .await
            .expect("put");
    }

    /// Writes base files of instant `n` (content: the path, so that sizes differ) and returns their stats.
    async fn files(&self, n: u32, files: &[(&str, &str)]) -> Vec<WriteStat> {
        let mut stats = Vec::new();
        for (partition, file_id) in files {
            let path = crate::storage::join_path(&[partition, &base_name(file_id, n)]);
            self.put(&path, path.as_bytes()).await;
            let mut stat = WriteStat::new(file_id, partition, &path);
            stat.file_size_in_bytes = path.len() as i64;
            stats.push(stat);
        }
        stats
    }

    async fn commit(&self, n: u32, files: &[(&str, &str)]) {
        let mut meta = CommitMetadata::new("UPSERT".parse().expect("op"));
        for stat in self.files(n, files).await {
            meta.add_write_stat(stat);
        }
        let json = meta.to_json_pretty().expect("json");
        self.put(&format!(".hoodie/{}.commit", t(n)), &json).await;
    }

    async fn replace(&self, n: u32, files: &[(&str, &str)], replaced: &[(&str, &str)]) {
        let mut meta = ReplaceCommitMetadata::default();
        meta.commit.operation_type = "CLUSTER".parse().expect("op");
        for stat in self.files(n, files).await {
            meta.commit.add_write_stat(stat);
        }
        for (partition, file_id) in replaced {
            meta.partition_to_replace_file_ids
                .entry(partition.to_string())
                .or_default()
                .push(file_id.to_string());
        }
        let json = meta.to_json_pretty().expect("json");
        self.put(&format!(".hoodie/{}.replacecommit", t(n)), &json)
            .await;
    }

    /// A write that began and wrote files but never completed.
    async fn pending(&self, n: u32, files: &[(&str, &str)]) {
        self.put(&format!(".hoodie/{}.commit.requested", t(n)), b"")
            .await;
        self.put(&format!(".hoodie/{}.inflight", t(n)), b"").await;
        self.files(n, files).await;
    }

    /// Rolls `n` back as the coordinator does, except that its files stay (a zombie wrote them after).
    async fn retire(&self, n: u32) {
        self.put(&format!("{RETIRED_DIR}{}", t(n)), b"").await;
        self.delete_instant(n).await;
    }

    /// Deletes every timeline file of `n` (archival, or a restore).
    async fn delete_instant(&self, n: u32) {
        let prefix = format!(".hoodie/{}.", t(n));
        for object in self.storage.list(&prefix).await.expect("list") {
            self.storage.delete(&object.path).await.expect("delete");
        }
    }

    async fn delete(&self, partition: &str, file_id: &str, n: u32) {
        let path = crate::storage::join_path(&[partition, &base_name(file_id, n)]);
        self.storage.delete(&path).await.expect("delete");
    }
}

/// Syncs the view and checks it against the listing; returns what the sync did.
async fn check(view: &mut FileSystemView, storage: &dyn Storage) -> Refresh {
    let timeline = Timeline::load(storage).await.expect("timeline");
    let refresh = view.sync(storage, &timeline).await.expect("sync");
    let listed = latest_file_slices(storage, &timeline, None)
        .await
        .expect("listing");
    assert_eq!(
        view.slices().cloned().collect::<Vec<_>>(),
        listed,
        "view after {refresh:?}"
    );
    refresh
}

/// The view's slices as `partition/file id@n`.
fn groups(view: &FileSystemView) -> Vec<String> {
    view.slices()
        .map(|s| {
            let n = &s.base_instant.as_str()[15..];
            format!("{}/{}@{n}", s.partition_path, s.file_id)
        })
        .collect()
}

#[tokio::test]
async fn commits_and_replacements_apply_failed_and_retired_writes_never_do() {
    let table = Table::new();
    let mut view = FileSystemView::new();
    assert_eq!(
        check(&mut view, &table.storage).await,
        Refresh::Listed(ListReason::Cold)
    );
    assert!(view.is_warm() && view.is_empty());

    // The view saw an empty timeline: nothing tells it that no instant came and went since, so it lists.
    table
        .commit(10, &[("p", "a"), ("p", "b"), ("q", "c")])
        .await;
    assert_eq!(
        check(&mut view, &table.storage).await,
        Refresh::Listed(ListReason::Unseen)
    );
    table.commit(20, &[("p", "a"), ("q", "d")]).await;
    assert_eq!(check(&mut view, &table.storage).await, Refresh::Applied(1));
    assert_eq!(groups(&view), ["p/a@20", "p/b@10", "q/c@10", "q/d@20"]);

    // A failed write with files, then its rollback leaving a zombie's file, and a retired time older than the
    // first commit with files: none of them is committed data.
    table.pending(25, &[("p", "a"), ("p", "e")]).await;
    assert_eq!(check(&mut view, &table.storage).await, Refresh::Applied(0));
    table.retire(25).await;
    table.put(&format!("{RETIRED_DIR}{}", t(5)), b"").await;
    table.files(5, &[("p", "z")]).await;
    assert_eq!(check(&mut view, &table.storage).await, Refresh::Applied(0));
    assert_eq!(groups(&view), ["p/a@20", "p/b@10", "q/c@10", "q/d@20"]);

    // Clustering replaces b and d with f.
    table
        .replace(30, &[("p", "f")], &[("p", "b"), ("q", "d")])
        .await;
    assert_eq!(check(&mut view, &table.storage).await, Refresh::Applied(1));
    assert_eq!(groups(&view), ["p/a@20", "p/f@30", "q/c@10"]);
    // A replaced group stays hidden even when written again while its replacecommit is on the timeline.
    table.commit(40, &[("p", "b"), ("q", "c")]).await;
    assert_eq!(check(&mut view, &table.storage).await, Refresh::Applied(1));
    assert_eq!(groups(&view), ["p/a@20", "p/f@30", "q/c@40"]);

    // Two commits at once, out of the view's sight in between.
    table.commit(50, &[("p", "a")]).await;
    table.commit(60, &[("p", "g")]).await;
    assert_eq!(check(&mut view, &table.storage).await, Refresh::Applied(2));
    assert_eq!(groups(&view), ["p/a@50", "p/f@30", "p/g@60", "q/c@40"]);
}

#[tokio::test]
async fn archival_keeps_the_view_unless_instants_may_have_gone_unseen() {
    let table = Table::new();
    let mut view = FileSystemView::new();
    table.commit(10, &[("p", "a"), ("q", "c")]).await;
    check(&mut view, &table.storage).await;
    table.commit(20, &[("p", "a")]).await;
    table.commit(30, &[("p", "b")]).await;
    assert_eq!(check(&mut view, &table.storage).await, Refresh::Applied(2));

    // Archival of 10: q/c@10 is still visible (older than the first active commit), and the view still has it.
    table.delete_instant(10).await;
    assert_eq!(check(&mut view, &table.storage).await, Refresh::Applied(0));
    assert_eq!(groups(&view), ["p/a@20", "p/b@30", "q/c@10"]);

    // A write pending at the sync completes later, while everything before it is archived: the view saw it
    // pending, so nothing it has not seen can be gone.
    table.pending(35, &[("q", "c")]).await;
    assert_eq!(check(&mut view, &table.storage).await, Refresh::Applied(0));
    let mut meta = CommitMetadata::new("UPSERT".parse().expect("op"));
    let mut stat = WriteStat::new("c", "q", &format!("q/{}", base_name("c", 35)));
    stat.file_size_in_bytes = format!("q/{}", base_name("c", 35)).len() as i64;
    meta.add_write_stat(stat);
    table
        .put(
            &format!(".hoodie/{}.commit", t(35)),
            &meta.to_json_pretty().expect("json"),
        )
        .await;
    table.delete_instant(20).await;
    table.delete_instant(30).await;
    assert_eq!(check(&mut view, &table.storage).await, Refresh::Applied(1));
    assert_eq!(groups(&view), ["p/a@20", "p/b@30", "q/c@35"]);

    // Two commits the view never saw, then archival up to the second: the first may have been missed (here it
    // wrote p/d, which must show up), so the view lists.
    table.commit(40, &[("p", "d")]).await;
    table.commit(50, &[("p", "a")]).await;
    table.commit(60, &[("p", "e")]).await;
    for n in [35, 40, 50] {
        table.delete_instant(n).await;
    }
    assert_eq!(
        check(&mut view, &table.storage).await,
        Refresh::Listed(ListReason::Unseen)
    );
    assert_eq!(
        groups(&view),
        ["p/a@50", "p/b@30", "p/d@40", "p/e@60", "q/c@35"]
    );
    assert_eq!(check(&mut view, &table.storage).await, Refresh::Applied(0));
}

#[tokio::test]
async fn a_vanished_pending_write_or_a_removed_commit_makes_the_view_list() {
    let table = Table::new();
    let mut view = FileSystemView::new();
    table.commit(10, &[("p", "a")]).await;
    table.commit(20, &[("p", "b")]).await;
    // A write older than the latest commit is still pending (another engine's, say).
    table.pending(15, &[("p", "x")]).await;
    check(&mut view, &table.storage).await;
    // It completes and is archived with 10 before the next sync: its file is now older than the first
    // commit, hence visible, and the view must find it.
    table.put(&format!(".hoodie/{}.commit", t(15)), b"").await;
    table.delete_instant(10).await;
    table.delete_instant(15).await;
    assert_eq!(
        check(&mut view, &table.storage).await,
        Refresh::Listed(ListReason::PendingVanished)
    );
    assert_eq!(groups(&view), ["p/a@10", "p/b@20", "p/x@15"]);

    // A restore removes completed commit 30 and its files: the slice before it is the latest again.
    table.commit(30, &[("p", "b")]).await;
    assert_eq!(check(&mut view, &table.storage).await, Refresh::Applied(1));
    table.delete_instant(30).await;
    table.delete("p", "b", 30).await;
    assert_eq!(
        check(&mut view, &table.storage).await,
        Refresh::Listed(ListReason::AppliedRemoved)
    );
    assert_eq!(groups(&view), ["p/a@10", "p/b@20", "p/x@15"]);
}

#[tokio::test]
async fn cleaning_old_slices_leaves_the_view_valid() {
    let table = Table::new();
    let mut view = FileSystemView::new();
    table.commit(10, &[("p", "a"), ("p", "b")]).await;
    table.commit(20, &[("p", "a")]).await;
    table.replace(30, &[("p", "c")], &[("p", "b")]).await;
    table.commit(40, &[("p", "a")]).await;
    check(&mut view, &table.storage).await;
    // The cleaner deletes every slice but the latest of each group, and the replaced group.
    table.delete("p", "a", 10).await;
    table.delete("p", "a", 20).await;
    table.delete("p", "b", 10).await;
    table
        .put(&format!(".hoodie/{}.clean.requested", t(45)), b"")
        .await;
    table.put(&format!(".hoodie/{}.clean", t(45)), b"").await;
    assert_eq!(check(&mut view, &table.storage).await, Refresh::Applied(0));
    assert_eq!(groups(&view), ["p/a@40", "p/c@30"]);
}

#[tokio::test]
async fn a_failed_sync_leaves_the_view_cold() {
    let table = Table::new();
    let mut view = FileSystemView::new();
    table.commit(10, &[("p", "a")]).await;
    check(&mut view, &table.storage).await;
    table
        .put(
            &format!(".hoodie/{}.commit", t(20)),
            b"{\"operationType\":\"NOPE\"}",
        )
        .await;
    let timeline = Timeline::load(&table.storage).await.expect("timeline");
    assert!(matches!(
        view.sync(&table.storage, &timeline).await,
        Err(TimelineError::Commit { .. })
    ));
    assert!(!view.is_warm());
    table.commit(20, &[("p", "a")]).await;
    assert_eq!(
        check(&mut view, &table.storage).await,
        Refresh::Listed(ListReason::Cold)
    );
}

#[tokio::test]
async fn write_stats_that_name_no_base_file_are_errors_or_ignored() {
    let table = Table::new();
    let mut view = FileSystemView::new();
    table.commit(10, &[("p", "a")]).await;
    check(&mut view, &table.storage).await;
    let commit_with = |path: &str, size: i64| {
        let mut meta = CommitMetadata::new("UPSERT".parse().expect("op"));
        let mut stat = WriteStat::new("a", "p", path);
        stat.file_size_in_bytes = size;
        meta.add_write_stat(stat);
        meta.to_json_pretty().expect("json")
    };
    let file = format!(".hoodie/{}.commit", t(20));
    // Log files (merge-on-read) and other non-base paths are not slices.
    table
        .put(&file, &commit_with("p/.a_x.log.1_0-1-0", 5))
        .await;
    assert_eq!(check(&mut view, &table.storage).await, Refresh::Applied(1));
    table.delete_instant(20).await;
    view.invalidate();
    check(&mut view, &table.storage).await;
    for (path, size) in [
        ("p/stray.parquet", 5),
        ("p/a_0-1-0_20240101000000020.parquet", -1),
    ] {
        table.put(&file, &commit_with(path, size)).await;
        let timeline = Timeline::load(&table.storage).await.expect("timeline");
        let err = view
            .sync(&table.storage, &timeline)
            .await
            .expect_err("bad stat");
        assert!(
            matches!(
                err,
                TimelineError::InvalidBaseFile { .. } | TimelineError::InvalidWriteStat { .. }
            ),
            "{err}"
        );
        table.delete_instant(20).await;
        check(&mut view, &table.storage).await;
    }
}

/// Records every storage call (operation, path or prefix) of the wrapped storage.
#[derive(Debug)]
struct Counting {
    inner: MemoryStorage,
    calls: Mutex<Vec<(&'static str, String)>>,
}

impl Counting {
    fn record(&self, op: &'static str, path: &str) {
        if let Ok(mut calls) = self.calls.lock() {
            calls.push((op, path.to_string()));
        }
    }

    fn take(&self) -> Vec<(&'static str, String)> {
        self.calls
            .lock()
            .map(|mut c| std::mem::take(&mut *c))
            .unwrap_or_default()
    }
}

#[async_trait]
impl Storage for Counting {
    fn base_uri(&self) -> &str {
        self.inner.base_uri()
    }
    async fn get(&self, path: &str) -> StorageResult<Bytes> {
        self.record("get", path);
        self.inner.get(path).await
    }
    async fn get_range(&self, path: &str, range: Range<u64>) -> StorageResult<Bytes> {
        self.record("get_range", path);
        self.inner.get_range(path, range).await
    }
    async fn head(&self, path: &str) -> StorageResult<Option<ObjectMeta>> {
        self.record("head", path);
        self.inner.head(path).await
    }
    async fn put(&self, path: &str, data: Bytes) -> StorageResult<()> {
        self.record("put", path);
        self.inner.put(path, data).await
    }
    async fn put_if_absent(&self, path: &str, data: Bytes) -> StorageResult<PutOutcome> {
        self.record("put_if_absent", path);
        self.inner.put_if_absent(path, data).await
    }
    async fn list(&self, prefix: &str) -> StorageResult<Vec<ObjectMeta>> {
        self.record("list", prefix);
        self.inner.list(prefix).await
    }
    async fn delete(&self, path: &str) -> StorageResult<()> {
        self.record("delete", path);
        self.inner.delete(path).await
    }
}

const SCHEMA: &str = r#"{"type":"record","name":"r","fields":[
    {"name":"id","type":"string"},{"name":"ts","type":"long"},{"name":"city","type":"string"}]}"#;

async fn bucketed_writer(storage: Arc<Counting>) -> TableWriter {
    let config = WriteConfig::from_properties_text(
        "hoodie.table.name=t\nhoodie.base.path=mem://view\n\
         hoodie.datasource.write.recordkey.field=id\n\
         hoodie.datasource.write.partitionpath.field=city\n\
         hoodie.datasource.write.precombine.field=ts\n\
         hoodie.datasource.write.operation=upsert\n\
         hoodie.index.type=BUCKET\nhoodie.bucket.index.num.buckets=2\n",
    )
    .expect("config");
    TableWriter::create_or_open(
        storage,
        Arc::new(SystemClock),
        config,
        Some(AvroSchema::parse(SCHEMA).expect("schema")),
    )
    .await
    .expect("writer")
}

fn rows(writer: &TableWriter, rows: &[(&str, i64, &str)]) -> RecordBatch {
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.0))),
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1))),
        Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.2))),
    ];
    RecordBatch::try_new(writer.schema().data.clone(), columns).expect("batch")
}

/// Paths of the listings in `calls`.
fn listings<'a>(calls: &'a [(&'static str, String)]) -> Vec<&'a str> {
    calls
        .iter()
        .filter(|(op, _)| *op == "list")
        .map(|(_, p)| p.as_str())
        .collect()
}

#[tokio::test]
async fn a_warm_writer_lists_no_partition_and_merges_into_what_a_listing_finds() {
    let storage = Arc::new(Counting {
        inner: MemoryStorage::new("mem://view"),
        calls: Mutex::new(Vec::new()),
    });
    let writer = bucketed_writer(storage.clone()).await;
    let batches: [&[(&str, i64, &str)]; 5] = [
        &[
            ("k1", 1, "sf"),
            ("k2", 1, "sf"),
            ("k3", 1, "la"),
            ("k4", 1, "ny"),
        ],
        &[("k1", 2, "sf"), ("k5", 2, "la")],
        &[("k2", 3, "sf"), ("k3", 3, "la"), ("k6", 3, "sf")],
        &[("k4", 4, "ny"), ("k7", 4, "ny")],
        &[("k1", 5, "sf"), ("k3", 5, "la"), ("k8", 5, "la")],
    ];
    let mut per_batch = Vec::new();
    for (i, batch) in batches.iter().enumerate() {
        if i == 3 {
            // Another engine replaced a file group of ny (insert_overwrite of its bucket): the next write to
            // that bucket must start a new group, as it would after a listing.
            let timeline = Timeline::load(storage.as_ref()).await.expect("timeline");
            let slices = latest_file_slices(storage.as_ref(), &timeline, None)
                .await
                .expect("slices");
            let ny = slices
                .iter()
                .find(|s| s.partition_path == "ny")
                .expect("ny group");
            let mut meta = ReplaceCommitMetadata::default();
            meta.commit.operation_type = "INSERT_OVERWRITE".parse().expect("op");
            meta.partition_to_replace_file_ids
                .insert(ny.partition_path.clone(), vec![ny.file_id.clone()]);
            let time = InstantTime::next_after(&SystemClock, timeline.last_used_time());
            storage
                .put(
                    &format!(".hoodie/{time}.replacecommit"),
                    Bytes::from(meta.to_json_pretty().expect("json")),
                )
                .await
                .expect("replace");
        }
        let before = Timeline::load(storage.as_ref()).await.expect("timeline");
        storage.take();
        writer.write(&[rows(&writer, batch)]).await.expect("write");
        let calls = storage.take();
        // The view the batch merged into is what a listing of the table shows on the timeline it began on.
        let expected = latest_file_slices(storage.as_ref(), &before, None)
            .await
            .expect("slices");
        assert_eq!(
            writer.cached_file_slices().await.expect("warm"),
            expected,
            "batch {i}"
        );
        storage.take();
        per_batch.push(calls);
    }
    let last = Timeline::load(storage.as_ref()).await.expect("timeline");
    let groups = latest_file_slices(storage.as_ref(), &last, None)
        .await
        .expect("slices");
    // Every key's partition holds its bucket's group; ny's replaced group came back as a new one.
    assert_eq!(
        groups
            .iter()
            .map(|s| s.partition_path.as_str())
            .collect::<BTreeSet<_>>(),
        ["la", "ny", "sf"].into_iter().collect()
    );
    for (i, calls) in per_batch.iter().enumerate() {
        let lists = listings(calls);
        eprintln!("batch {i}: {} calls, listings {lists:?}", calls.len());
        // Only `.hoodie/` (the timeline: begin and write) and the instant's markers are listed.
        assert!(
            lists.iter().all(|p| p.starts_with(".hoodie/")),
            "batch {i} listed a partition or the table: {lists:?}"
        );
        let commit_reads = calls
            .iter()
            .filter(|(op, p)| *op == "get" && p.starts_with(".hoodie/") && p.contains("commit"))
            .count();
        // Batch 0 found no commit; later ones read the one commit completed since (batch 3 also the
        // replacecommit).
        let expected_reads = match i {
            0 => 0,
            3 => 2,
            _ => 1,
        };
        assert_eq!(commit_reads, expected_reads, "batch {i}: {calls:#?}");
    }

    // A cold writer (a new process) lists the table once, as every batch did before the view.
    let cold = bucketed_writer(storage.clone()).await;
    storage.take();
    cold.write(&[rows(&cold, &[("k9", 6, "sf")])])
        .await
        .expect("write");
    let calls = storage.take();
    eprintln!(
        "cold batch: {} calls, listings {:?}",
        calls.len(),
        listings(&calls)
    );
    assert_eq!(
        listings(&calls).iter().filter(|p| p.is_empty()).count(),
        1,
        "{calls:#?}"
    );
}

/// The listing itself, as it was before the view (moved from the timeline module with it).
mod listing {
    use super::*;

    async fn put(storage: &MemoryStorage, path: &str, data: &[u8]) {
        storage
            .put(path, Bytes::copy_from_slice(data))
            .await
            .expect("put");
    }

    fn t(s: &str) -> InstantTime {
        InstantTime::parse(s).expect("t")
    }

    fn commit_json(schema: Option<&str>, op: &str, extra: &[(&str, &str)]) -> Vec<u8> {
        let mut meta = CommitMetadata::new(op.parse().expect("op"));
        if let Some(s) = schema {
            meta.set_schema(s);
        }
        let extra: BTreeMap<String, String> = extra
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        meta.extra_metadata.extend(extra);
        meta.to_json_pretty().expect("json")
    }

    #[tokio::test]
    async fn before_the_first_commit_only_archived_times_count_as_committed() {
        // A young table: its first instant was rolled back (a frozen writer's), the second is still pending,
        // the third is the first completed commit. Files of the first two are older than that commit, yet
        // neither is committed data: one time is retired, the other on the timeline. A time that is neither
        // (archived) still counts, as in Hudi.
        let storage = MemoryStorage::new("mem://young");
        put(&storage, &format!("{RETIRED_DIR}20240101000000001"), b"").await;
        put(&storage, ".hoodie/20240101000000002.inflight", b"").await;
        put(
            &storage,
            ".hoodie/20240101000000003.commit",
            &commit_json(Some("s"), "INSERT", &[]),
        )
        .await;
        for f in [
            "p/00000001-a-0_0-1-0_20240101000000000.parquet",
            "p/00000001-b-0_0-1-0_20240101000000001.parquet",
            "p/00000001-c-0_0-1-0_20240101000000002.parquet",
            "p/00000002-d-0_0-1-0_20240101000000003.parquet",
        ] {
            put(&storage, f, b"x").await;
        }
        let timeline = Timeline::load(&storage).await.expect("load");
        let slices: Vec<String> = latest_file_slices(&storage, &timeline, None)
            .await
            .expect("latest")
            .into_iter()
            .map(|s| s.path())
            .collect();
        assert_eq!(
            slices,
            vec![
                "p/00000001-a-0_0-1-0_20240101000000000.parquet",
                "p/00000002-d-0_0-1-0_20240101000000003.parquet"
            ]
        );
    }

    #[tokio::test]
    async fn slices_follow_the_committed_rule() {
        let storage = MemoryStorage::new("mem://t");
        // Archived instant 0 (before the first active commit), commits 1 and 3, failed 2, pending 4.
        put(
            &storage,
            ".hoodie/20240101000000001.commit",
            &commit_json(Some("s"), "INSERT", &[]),
        )
        .await;
        put(&storage, ".hoodie/20240101000000002.inflight", b"").await;
        put(
            &storage,
            ".hoodie/20240101000000003.commit",
            &commit_json(Some("s"), "UPSERT", &[]),
        )
        .await;
        put(&storage, ".hoodie/20240101000000004.commit.requested", b"").await;
        let files = [
            "p/a-0_0-1-0_20240101000000000.parquet",
            "p/a-0_0-1-0_20240101000000001.parquet",
            "p/a-0_0-1-0_20240101000000002.parquet",
            "p/b-0_0-1-0_20240101000000003.parquet",
            "p/b-0_0-1-0_20240101000000004.parquet",
            "p/c-0_0-1-0_20240101000000002.parquet",
            "p/.hoodie_partition_metadata",
            "p/notes.txt",
            "_delta_log/00000000000000000000.checkpoint.parquet",
        ];
        for f in files {
            put(&storage, f, b"x").await;
        }
        let timeline = Timeline::load(&storage).await.expect("load");
        let names =
            |slices: Vec<FileSlice>| slices.into_iter().map(|s| s.path()).collect::<Vec<_>>();
        assert_eq!(
            names(
                latest_file_slices(&storage, &timeline, None)
                    .await
                    .expect("latest")
            ),
            vec![
                "p/a-0_0-1-0_20240101000000001.parquet",
                "p/b-0_0-1-0_20240101000000003.parquet"
            ]
        );
        assert_eq!(
            names(
                latest_file_slices(&storage, &timeline, Some(&t("20240101000000001")))
                    .await
                    .expect("as of 1")
            ),
            vec!["p/a-0_0-1-0_20240101000000001.parquet"]
        );
        assert_eq!(
            names(
                latest_file_slices(&storage, &timeline, Some(&t("20240101000000000")))
                    .await
                    .expect("as of 0")
            ),
            vec!["p/a-0_0-1-0_20240101000000000.parquet"]
        );
        // Beyond the latest completed commit: capped there.
        assert_eq!(
            names(
                latest_file_slices(&storage, &timeline, Some(&t("20991231000000000")))
                    .await
                    .expect("future")
            ),
            names(
                latest_file_slices(&storage, &timeline, None)
                    .await
                    .expect("latest")
            )
        );

        // A replacecommit drops the file group from its time on.
        let mut replace = ReplaceCommitMetadata::default();
        replace.commit.operation_type = "INSERT_OVERWRITE".parse().expect("op");
        replace
            .partition_to_replace_file_ids
            .insert("p".into(), vec!["a-0".into()]);
        put(
            &storage,
            ".hoodie/20240101000000005.replacecommit",
            &replace.to_json_pretty().expect("json"),
        )
        .await;
        let timeline = Timeline::load(&storage).await.expect("load");
        // b-0's slice of the still-pending instant 4 stays invisible.
        assert_eq!(
            names(
                latest_file_slices(&storage, &timeline, None)
                    .await
                    .expect("latest")
            ),
            vec!["p/b-0_0-1-0_20240101000000003.parquet"]
        );
        assert_eq!(
            names(
                latest_file_slices(&storage, &timeline, Some(&t("20240101000000003")))
                    .await
                    .expect("as of 3")
            ),
            vec![
                "p/a-0_0-1-0_20240101000000001.parquet",
                "p/b-0_0-1-0_20240101000000003.parquet"
            ]
        );

        // Hostile data files.
        put(&storage, "p/a-0_9-9-9_20240101000000001.parquet", b"dup").await;
        assert!(matches!(
            latest_file_slices(&storage, &timeline, Some(&t("20240101000000003"))).await,
            Err(TimelineError::DuplicateSlice { .. })
        ));
        storage
            .delete("p/a-0_9-9-9_20240101000000001.parquet")
            .await
            .expect("delete");
        put(&storage, "p/stray.parquet", b"?").await;
        assert!(matches!(
            latest_file_slices(&storage, &timeline, None).await,
            Err(TimelineError::InvalidBaseFile { .. })
        ));
    }

    #[tokio::test]
    async fn no_completed_commit_means_no_slices() {
        let storage = MemoryStorage::new("mem://t");
        put(&storage, ".hoodie/20240101000000001.inflight", b"").await;
        put(&storage, "a-0_0-1-0_20240101000000001.parquet", b"x").await;
        let timeline = Timeline::load(&storage).await.expect("load");
        assert!(latest_file_slices(&storage, &timeline, None)
            .await
            .expect("slices")
            .is_empty());
    }
}
