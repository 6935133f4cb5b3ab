//! Group selection (threshold, bound, only committed logs count), the plan record, and pending plans.

use std::collections::BTreeMap;

use bytes::Bytes;

use super::plan::{plan_operations, to_plan};
use super::*;
use crate::log_file::LogFileName;
use crate::storage::memory::MemoryStorage;
use crate::storage::Storage;
use crate::table::commit::{CommitMetadata, OperationType, WriteStat};
use crate::table::fs_view::SliceLogFile;
use crate::table::records::compaction::COMPACTION_PLAN_VERSION;

fn t(n: u32) -> InstantTime {
    InstantTime::parse(&format!("202401010000000{n:02}")).expect("time")
}

fn log(file_id: &str, base: u32, version: u32, size: u64) -> SliceLogFile {
    SliceLogFile {
        name: LogFileName::parse(&format!(".{file_id}_{}.log.{version}_0-1-0", t(base)))
            .expect("log name"),
        size,
    }
}

/// A slice of `file_id` in `partition` at base 1 with `logs` log files of `log_size` bytes each.
fn slice(partition: &str, file_id: &str, logs: u32, log_size: u64) -> FileSlice {
    FileSlice {
        partition_path: partition.to_string(),
        file_id: file_id.to_string(),
        base_instant: t(1),
        file_name: format!("{file_id}_0-1-0_{}.parquet", t(1)),
        size: 100,
        log_files: (1..=logs).map(|v| log(file_id, 1, v, log_size)).collect(),
    }
}

fn ids(selected: &[&FileSlice]) -> Vec<String> {
    selected
        .iter()
        .map(|s| format!("{}/{}", s.partition_path, s.file_id))
        .collect()
}

#[test]
fn one_window_of_several_members_counts_as_one_deltacommit() {
    // Base 1; 8 members of one window (deltacommit 2) appended a log each to "a"; "b" got one log from each
    // of deltacommits 2..=6.
    let slices = vec![slice("p", "a", 8, 10), slice("p", "b", 5, 10)];
    let two: Vec<InstantTime> = vec![t(1), t(2)];
    let six: Vec<InstantTime> = (1..=6).map(t).collect();
    // Only one deltacommit after the base: neither is due, however many logs "a" has.
    assert!(select_file_groups(&slices, 5, 8, None, Some(&two)).is_empty());
    // Five deltacommits after the base: both are due ("a" counts 5, not 8; the tie goes by log bytes).
    assert_eq!(
        ids(&select_file_groups(&slices, 5, 8, None, Some(&six))),
        ["p/a", "p/b"]
    );
    assert_eq!(
        ids(&select_file_groups(&slices, 5, 1, None, Some(&six))),
        ["p/a"]
    );
    // Counting log files alone (no timeline) would compact "a" after the first window.
    assert_eq!(
        ids(&select_file_groups(&slices, 5, 8, None, None)),
        ["p/a", "p/b"]
    );
    assert_eq!(
        ids(&select_file_groups(&slices, 6, 8, None, Some(&six))),
        Vec::<String>::new()
    );
}

#[test]
fn slices_with_enough_committed_logs_are_selected() {
    let slices = vec![
        slice("p", "a", 4, 10),
        slice("p", "b", 5, 10),
        slice("q", "c", 6, 10),
        slice("q", "d", 0, 0),
    ];
    assert_eq!(
        ids(&select_file_groups(&slices, 5, 8, None, None)),
        ["p/b", "q/c"]
    );
    assert_eq!(
        ids(&select_file_groups(&slices, 4, 8, None, None)),
        ["p/a", "p/b", "q/c"]
    );
    assert!(select_file_groups(&slices, 7, 8, None, None).is_empty());
    // A threshold of 0 still needs one log file: a slice without logs has nothing to compact.
    assert_eq!(
        ids(&select_file_groups(&slices, 0, 8, None, None)),
        ["p/a", "p/b", "q/c"]
    );
}

#[test]
fn the_bound_keeps_the_slices_with_the_most_log_files_then_bytes() {
    let slices = vec![
        slice("p", "a", 5, 10),
        slice("p", "b", 7, 10),
        slice("p", "c", 5, 30),
        slice("q", "d", 6, 10),
        slice("q", "e", 5, 20),
    ];
    // Most logs first (b 7, d 6), then most log bytes among the fives (c 150, e 100, a 50); the result is
    // in partition and file id order.
    assert_eq!(
        ids(&select_file_groups(&slices, 5, 2, None, None)),
        ["p/b", "q/d"]
    );
    assert_eq!(
        ids(&select_file_groups(&slices, 5, 4, None, None)),
        ["p/b", "p/c", "q/d", "q/e"]
    );
    assert_eq!(select_file_groups(&slices, 5, 0, None, None).len(), 0);
    assert_eq!(select_file_groups(&slices, 5, 100, None, None).len(), 5);
}

#[test]
fn slices_older_than_the_archival_boundary_are_due_after_the_others() {
    let mut old = slice("p", "old", 1, 10);
    old.base_instant = t(1);
    let mut young = slice("p", "young", 1, 10);
    young.base_instant = t(9);
    let mut bare = slice("p", "bare", 0, 0);
    bare.base_instant = t(1);
    let full = slice("q", "full", 5, 10);
    let slices = vec![old, young, bare, full];
    // Without a boundary only the full slice is due; with one, the old slice with logs comes after it
    // (a slice without logs never: it holds no deltacommit back).
    assert_eq!(
        ids(&select_file_groups(&slices, 5, 8, None, None)),
        ["q/full"]
    );
    let boundary = t(5);
    assert_eq!(
        ids(&select_file_groups(&slices, 5, 8, Some(&boundary), None)),
        ["p/old", "q/full"]
    );
    assert_eq!(
        ids(&select_file_groups(&slices, 5, 1, Some(&boundary), None)),
        ["q/full"]
    );
}

struct Table {
    storage: MemoryStorage,
}

impl Table {
    fn new() -> Self {
        Self {
            storage: MemoryStorage::new("mem://t"),
        }
    }

    async fn put(&self, path: &str, data: &[u8]) {
        self.storage
            .put(path, Bytes::copy_from_slice(data))
            .await
            .expect("put");
    }

    /// A completed `<n>.<action>` whose stats name `paths`, which are written too.
    async fn complete(&self, n: u32, action: &str, paths: &[String]) {
        let mut meta = CommitMetadata::new(OperationType::Upsert);
        for path in paths {
            self.put(path, path.as_bytes()).await;
            let mut stat = WriteStat::new("a", "p", path);
            stat.file_size_in_bytes = path.len() as i64;
            meta.add_write_stat(stat);
        }
        let json = meta.to_json_pretty().expect("json");
        self.put(&format!(".hoodie/{}.{action}", t(n)), &json).await;
    }
}

fn log_path(version: u32) -> String {
    format!("p/.a_{}.log.{version}_0-1-0", t(1))
}

/// Base file at 1; logs 1 (deltacommit 2), 2 (deltacommit 3, failed: only its inflight and the file),
/// 3 (deltacommit 4), and a log of another file group.
async fn table_with_a_failed_log() -> Table {
    let table = Table::new();
    table
        .complete(1, "deltacommit", &[format!("p/a_0-1-0_{}.parquet", t(1))])
        .await;
    table.complete(2, "deltacommit", &[log_path(1)]).await;
    table
        .put(&format!(".hoodie/{}.deltacommit.inflight", t(3)), b"")
        .await;
    table.put(&log_path(2), b"failed").await;
    table.complete(4, "deltacommit", &[log_path(3)]).await;
    table
        .put(&format!("p/.b_{}.log.1_0-1-0", t(1)), b"other group")
        .await;
    table
}

#[tokio::test]
async fn only_committed_log_files_count_and_are_planned() {
    let table = table_with_a_failed_log().await;
    let storage = &table.storage;
    let timeline = Timeline::load(storage).await.expect("timeline");
    let slices = latest_file_slices(storage, &timeline, None)
        .await
        .expect("slices");
    assert_eq!(slices.len(), 1);
    assert_eq!(slices[0].log_paths(), [log_path(1), log_path(3)]);
    // Three log files exist, two are committed: a threshold of three is not reached.
    assert!(select_file_groups(&slices, 3, 8, None, None).is_empty());
    let selected = select_file_groups(&slices, 2, 8, None, None);
    assert_eq!(selected.len(), 1);
    let ops = plan_operations(storage, &selected).await.expect("plan");
    assert_eq!(ops[0].log_paths, [log_path(1), log_path(3)]);
    assert_eq!(
        ops[0].log_bytes,
        (log_path(1).len() + log_path(3).len()) as u64
    );
}

#[cfg(feature = "mutations")]
#[tokio::test]
async fn without_the_committed_logs_rule_the_failed_log_is_planned_too() {
    let table = table_with_a_failed_log().await;
    let storage = &table.storage;
    let timeline = Timeline::load(storage).await.expect("timeline");
    let slices = latest_file_slices(storage, &timeline, None)
        .await
        .expect("slices");
    let selected = select_file_groups(&slices, 2, 8, None, None);
    crate::mutation::set_active(Some(Mutation::CompactionCommittedLogsOnly));
    let ops = plan_operations(storage, &selected).await;
    let committed = committed_instants(&timeline).expect("committed");
    crate::mutation::set_active(None);
    let ops = ops.expect("plan");
    assert_eq!(ops[0].log_paths, [log_path(1), log_path(2), log_path(3)]);
    assert!(
        committed.is_committed(&t(3)),
        "the failed write's blocks count"
    );
    let strict = committed_instants(&timeline).expect("committed");
    assert!(!strict.is_committed(&t(3)));
    assert!(strict.is_committed(&t(2)) && strict.is_committed(&t(4)));
}

#[test]
fn the_plan_names_files_and_carries_the_mark() {
    let planned = CompactionPlanned {
        instant: t(9),
        operations: vec![PlannedOperation {
            slice: slice("p=1", "a", 2, 10),
            log_paths: vec![
                format!("p=1/.a_{}.log.1_0-1-0", t(1)),
                format!("p=1/.a_{}.log.2_0-1-0", t(1)),
            ],
            log_bytes: 20,
        }],
    };
    let plan = to_plan(&planned);
    assert_eq!(plan.version, COMPACTION_PLAN_VERSION);
    assert!(plan.preserve_hoodie_metadata);
    assert_eq!(
        plan.extra_metadata,
        BTreeMap::from([(WRITER_KEY.to_string(), WRITER_NAME.to_string())])
    );
    let op = &plan.operations[0];
    assert_eq!(op.base_instant_time, t(1).to_string());
    assert_eq!(
        op.data_file_path.as_deref(),
        Some(format!("a_0-1-0_{}.parquet", t(1)).as_str())
    );
    assert_eq!(
        op.delta_file_paths,
        [
            format!(".a_{}.log.1_0-1-0", t(1)),
            format!(".a_{}.log.2_0-1-0", t(1))
        ]
    );
    assert_eq!(
        (op.file_id.as_str(), op.partition_path.as_str()),
        ("a", "p=1")
    );
    assert_eq!(op.metrics["TOTAL_LOG_FILES"], 2.0);
    assert_eq!(op.metrics["TOTAL_LOG_FILES_SIZE"], 20.0);
    assert_eq!(op.bootstrap_file_path, None);
}

#[tokio::test]
async fn pending_plans_are_ours_only_with_the_mark() {
    let table = Table::new();
    let mut ours = to_plan(&CompactionPlanned {
        instant: t(5),
        operations: vec![PlannedOperation {
            slice: slice("p", "a", 1, 1),
            log_paths: vec![format!("p/.a_{}.log.1_0-1-0", t(1))],
            log_bytes: 1,
        }],
    });
    let bytes = ours.to_avro_bytes().expect("plan");
    table
        .put(&format!(".hoodie/{}.compaction.requested", t(5)), &bytes)
        .await;
    ours.extra_metadata.clear();
    let theirs = ours.to_avro_bytes().expect("plan");
    table
        .put(&format!(".hoodie/{}.compaction.requested", t(6)), &theirs)
        .await;
    table
        .put(
            &format!(".hoodie/{}.compaction.requested", t(7)),
            b"garbage",
        )
        .await;
    table
        .put(&format!(".hoodie/{}.compaction.inflight", t(8)), b"")
        .await;
    let timeline = Timeline::load(&table.storage).await.expect("timeline");
    let pending = pending_compactions(&table.storage, &timeline)
        .await
        .expect("pending");
    assert_eq!(
        pending.own,
        vec![(t(5), std::collections::BTreeSet::from(["p".to_string()]))]
    );
    assert_eq!(pending.others, vec![t(6), t(7), t(8)]);
    assert!(!pending.is_empty());
}

#[tokio::test]
async fn an_inflight_without_its_plan_is_ours_when_its_time_is_retired() {
    // A holder paused between the plan and `.compaction.inflight`; another holder rolled the compaction
    // back (retiring the time, removing the plan) before the paused one wrote the inflight file.
    let table = Table::new();
    table
        .put(&format!(".hoodie/{}.compaction.inflight", t(8)), b"")
        .await;
    table
        .put(&format!(".hoodie/{}.compaction.inflight", t(9)), b"")
        .await;
    table
        .put(
            &format!("{}{}", crate::table::timeline::RETIRED_DIR, t(9)),
            b"",
        )
        .await;
    let timeline = Timeline::load(&table.storage).await.expect("timeline");
    let pending = pending_compactions(&table.storage, &timeline)
        .await
        .expect("pending");
    assert_eq!(pending.own, vec![(t(9), std::collections::BTreeSet::new())]);
    // Without a retired time it may be another engine's, mid-write: left alone.
    assert_eq!(pending.others, vec![t(8)]);
}
