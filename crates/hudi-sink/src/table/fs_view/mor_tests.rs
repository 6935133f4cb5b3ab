//! Merge-on-read slices on a hand-made in-memory table: after every step the view (warm, and one started cold
//! part-way) must equal [`latest_file_slices`], and both must hold exactly the expected base and log files.

use bytes::Bytes;

use super::*;
use crate::storage::memory::MemoryStorage;
use crate::table::commit::{CommitMetadata, OperationType};

fn t(n: u32) -> InstantTime {
    InstantTime::parse(&format!("202401010000000{n:02}")).expect("time")
}

fn base_name(n: u32) -> String {
    format!("a_0-1-0_{}.parquet", t(n))
}

fn log_name(base: u32, version: u32) -> String {
    format!(".a_{}.log.{version}_0-1-0", t(base))
}

struct Table {
    storage: MemoryStorage,
}

impl Table {
    async fn put(&self, path: &str, data: &[u8]) {
        self.storage
            .put(path, Bytes::copy_from_slice(data))
            .await
            .expect("put");
    }

    /// Writes `p/<name>` (content: its path) and returns its stat.
    async fn file(&self, name: &str) -> WriteStat {
        let path = format!("p/{name}");
        self.put(&path, path.as_bytes()).await;
        let mut stat = WriteStat::new("a", "p", &path);
        stat.file_size_in_bytes = path.len() as i64;
        stat
    }

    /// A completed instant `<n>.<action>` whose stats name `names` (written now).
    async fn complete(&self, n: u32, action: &str, op: OperationType, names: &[String]) {
        let mut meta = CommitMetadata::new(op);
        for name in names {
            meta.add_write_stat(self.file(name).await);
        }
        let json = meta.to_json_pretty().expect("json");
        self.put(&format!(".hoodie/{}.{action}", t(n)), &json).await;
    }
}

/// (base file, log files) of every slice, as names.
fn names(slices: &[FileSlice]) -> Vec<(String, Vec<String>)> {
    slices
        .iter()
        .map(|s| {
            let logs = s.log_files.iter().map(|l| l.name.file_name()).collect();
            (s.file_name.clone(), logs)
        })
        .collect()
}

/// Syncs `view`, checks it against the listing and returns the listing's slices as names.
async fn check(view: &mut FileSystemView, storage: &dyn Storage) -> Vec<(String, Vec<String>)> {
    let timeline = Timeline::load(storage).await.expect("timeline");
    view.sync(storage, &timeline).await.expect("sync");
    let listed = latest_file_slices(storage, &timeline, None)
        .await
        .expect("listing");
    assert_eq!(view.slices().cloned().collect::<Vec<_>>(), listed, "view");
    for slice in &listed {
        for log in &slice.log_files {
            let path = format!("p/{}", log.name.file_name());
            assert_eq!(
                log.size,
                path.len() as u64,
                "size from the listing or the stat"
            );
        }
    }
    names(&listed)
}

#[tokio::test]
async fn logs_join_their_slice_failed_ones_do_not_pending_compaction_logs_merge_and_compaction_starts_a_slice(
) {
    let table = Table {
        storage: MemoryStorage::new("mem://mor"),
    };
    let storage: &dyn Storage = &table.storage;
    let mut view = FileSystemView::new();
    let upsert = OperationType::Upsert;

    // 10: the first write to the group is a base file; 20 appends a log to that slice.
    table
        .complete(10, "deltacommit", upsert, &[base_name(10)])
        .await;
    table
        .complete(20, "deltacommit", upsert, &[log_name(10, 1)])
        .await;
    let one_log = vec![(base_name(10), vec![log_name(10, 1)])];
    assert_eq!(check(&mut view, storage).await, one_log);

    // 30 fails after writing log version 2: no completed stat names it, so it is not part of the slice.
    table
        .put(&format!(".hoodie/{}.deltacommit.requested", t(30)), b"")
        .await;
    table
        .put(&format!(".hoodie/{}.deltacommit.inflight", t(30)), b"")
        .await;
    table.file(&log_name(10, 2)).await;
    assert_eq!(check(&mut view, storage).await, one_log);

    // Compaction 40 is scheduled; deltacommit 50 appends to the compaction's slice (base instant 40), as
    // Hudi's writers do: while the compaction is pending, readers merge it after the slice the compaction
    // reads (Spark's merged file slice; hudi-rs 0.5.0 hides it), in the listing and the view.
    table
        .put(&format!(".hoodie/{}.compaction.requested", t(40)), b"plan")
        .await;
    table
        .complete(50, "deltacommit", upsert, &[log_name(40, 1)])
        .await;
    let merged = vec![(base_name(10), vec![log_name(10, 1), log_name(40, 1)])];
    assert_eq!(check(&mut view, storage).await, merged);
    let mut cold = FileSystemView::new();
    assert_eq!(check(&mut cold, storage).await, merged);

    // The compaction commits (a `commit`, operation COMPACT, naming the new base file): a new slice with the
    // new base, and the log appended to it while it was pending.
    table
        .complete(40, "commit", OperationType::Compact, &[base_name(40)])
        .await;
    let compacted = vec![(base_name(40), vec![log_name(40, 1)])];
    assert_eq!(check(&mut view, storage).await, compacted);
    assert_eq!(check(&mut cold, storage).await, compacted);
    assert_eq!(check(&mut FileSystemView::new(), storage).await, compacted);

    // Time travel: as of 10 the slice has no log yet, as of 20 (and 30, failed) one, as of 40 the compacted
    // slice without the log of 50.
    let timeline = Timeline::load(storage).await.expect("timeline");
    for (as_of, expected) in [
        (10, vec![(base_name(10), vec![])]),
        (20, one_log.clone()),
        (30, one_log.clone()),
        (40, vec![(base_name(40), vec![])]),
        (50, compacted.clone()),
    ] {
        let slices = latest_file_slices(storage, &timeline, Some(&t(as_of)))
            .await
            .expect("listing");
        assert_eq!(names(&slices), expected, "as of {as_of}");
    }
}
