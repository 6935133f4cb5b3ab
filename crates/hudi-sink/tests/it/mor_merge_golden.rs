//! Merge-on-read file slices read as a snapshot reader reads them: for every Spark-written merge-on-read
//! table, the merged rows of all latest file slices (base file + log files, through `log_file::scan` and
//! `log_file::merge`) equal, row for row with all five meta columns, what hudi-rs 0.5.0 reads as the table's
//! snapshot.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use bytes::Bytes;
use hudi_sink::log_file::{
    merge_file_slice, scan_log_files, CommittedInstants, LogFileName, LogRecords, MergeMode,
};
use hudi_sink::table::file_name::BaseFileName;
use hudi_sink::table::instant::InstantTime;

use crate::common::canon::canon_rows;
use crate::common::python::read_rows;
use crate::common::rows::{keyed, Rows};
use crate::common::{all_files, golden_table_in, mor_testdata_dir};

/// One file slice: a base file and/or log files, sharing file id and base instant.
#[derive(Debug, Default)]
struct Slice {
    base: Option<PathBuf>,
    logs: Vec<(LogFileName, PathBuf)>,
}

/// `hoodie.properties` as a map (`\:` and `\=` unescaped).
fn properties(table: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(table.join(".hoodie/hoodie.properties")).expect("props");
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.replace("\\:", ":").replace("\\=", "=")))
        .collect()
}

/// The completed commit-timeline instants and the first active instant, from the timeline's file names.
fn committed(table: &Path) -> CommittedInstants {
    let mut completed = Vec::new();
    let mut first: Option<InstantTime> = None;
    for entry in std::fs::read_dir(table.join(".hoodie")).expect("timeline") {
        let name = entry
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .to_string();
        let mut parts = name.split('.');
        let (Some(t), Some(action)) = (parts.next(), parts.next()) else {
            continue;
        };
        let Ok(instant) = InstantTime::parse(t) else {
            continue;
        };
        if first.as_ref().is_none_or(|f| &instant < f) {
            first = Some(instant.clone());
        }
        let completed_commit =
            parts.next().is_none() && matches!(action, "commit" | "deltacommit" | "replacecommit");
        if completed_commit {
            completed.push(instant);
        }
    }
    CommittedInstants::new(completed, first)
}

/// The latest slice of every file group under `table`, keyed by (partition dir, file id); files whose name
/// instant is not committed are not part of any slice.
fn latest_slices(
    table: &Path,
    committed: &CommittedInstants,
) -> BTreeMap<(PathBuf, String), Slice> {
    let mut slices: BTreeMap<(PathBuf, String, InstantTime), Slice> = BTreeMap::new();
    for path in all_files(table) {
        if path.components().any(|c| c.as_os_str() == ".hoodie") {
            continue;
        }
        let name = path.file_name().and_then(|n| n.to_str()).expect("name");
        let dir = path.parent().expect("dir").to_path_buf();
        if name.ends_with(".parquet") {
            let base = BaseFileName::parse(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            let key = (dir, base.file_id.clone(), base.instant_time.clone());
            if committed.is_committed(&base.instant_time) {
                slices.entry(key).or_default().base = Some(path);
            }
        } else if name.starts_with('.') && name.contains(".log.") {
            let log = LogFileName::parse(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            let key = (dir, log.file_id.clone(), log.base_instant.clone());
            if committed.is_committed(&log.base_instant) {
                slices.entry(key).or_default().logs.push((log, path));
            }
        }
    }
    let mut latest = BTreeMap::new();
    // Ascending base instant: the last slice of a group replaces the earlier ones.
    for ((dir, file_id, _), mut slice) in slices {
        slice.logs.sort_by(|a, b| a.0.cmp(&b.0));
        latest.insert((dir, file_id), slice);
    }
    latest
}

/// The rows of `slice` merged by this crate, and the scan's record of what it did.
fn merged_rows(
    slice: &Slice,
    committed: &CommittedInstants,
    mode: &MergeMode,
) -> (Rows, LogRecords) {
    let bytes: Vec<(String, Vec<u8>)> = slice
        .logs
        .iter()
        .map(|(name, path)| (name.file_name(), std::fs::read(path).expect("log")))
        .collect();
    let log = scan_log_files(
        bytes.iter().map(|(n, b)| (n.as_str(), b.as_slice())),
        committed,
        mode,
    )
    .expect("scan");
    let base = slice
        .base
        .as_ref()
        .map(|p| Bytes::from(std::fs::read(p).expect("base")));
    let batches = merge_file_slice(base, log.clone())
        .expect("merge")
        .collect::<Result<Vec<_>, _>>()
        .expect("merged batches");
    (keyed(canon_rows(&batches), false, "ours"), log)
}

const TABLES: &[&str] = &[
    "v6_complexkeygen_hivestyle",
    "v6_empty",
    "v6_nonpartitioned",
    "v6_nonpartitioned_rollback",
    "v6_simplekeygen_nonhivestyle",
    "v6_trips_8i1u",
    "v6_trips_8i3d",
];

#[test]
fn merged_latest_slices_equal_the_hudi_rs_snapshot_of_every_spark_mor_table() {
    let mut slices_with_logs = 0;
    let mut rolled_back = 0;
    let mut seen_updates = BTreeSet::new();
    for table in TABLES {
        let golden = golden_table_in(&mor_testdata_dir(), table);
        let committed = committed(&golden.path);
        let mode = MergeMode::from_table_properties(&properties(&golden.path)).expect("mode");
        let mut ours = Rows::new();
        for ((dir, file_id), slice) in latest_slices(&golden.path, &committed) {
            if !slice.logs.is_empty() {
                slices_with_logs += 1;
            }
            let (rows, log) = merged_rows(&slice, &committed, &mode);
            rolled_back += log.stats().blocks_rolled_back;
            for (key, row) in rows {
                // A row from a log block names the file id, a base row its file.
                let file_name = row["_hoodie_file_name"].as_str().expect("file name");
                assert!(
                    file_name.starts_with(&file_id),
                    "{table}: {dir:?} {file_name}"
                );
                if !file_name.ends_with(".parquet") {
                    seen_updates.insert(table.to_string());
                }
                assert!(
                    ours.insert(key.clone(), row).is_none(),
                    "{table}: {key:?} twice"
                );
            }
        }
        let theirs = keyed(
            read_rows(&golden.path, "hudi", &["snapshot"]),
            false,
            "hudi-rs",
        );
        assert_eq!(
            ours.keys().collect::<Vec<_>>(),
            theirs.keys().collect::<Vec<_>>(),
            "{table}: keys"
        );
        for (key, row) in &theirs {
            assert_eq!(&ours[key], row, "{table}: {key:?}");
        }
        match *table {
            "v6_trips_8i1u" => assert_eq!(ours.len(), 8),
            "v6_trips_8i3d" => assert_eq!(ours.len(), 5, "three keys deleted"),
            "v6_nonpartitioned_rollback" => assert_eq!(ours.len(), 3),
            _ => {}
        }
    }
    assert_eq!(slices_with_logs, 6, "slices with log files compared");
    assert!(rolled_back >= 1, "the rollback fixture's rolled-back block");
    assert!(seen_updates.contains("v6_trips_8i1u") && seen_updates.contains("v6_nonpartitioned"));
}

#[test]
fn sparks_rollback_block_removes_the_failed_write_even_if_its_instant_counted_as_committed() {
    let golden = golden_table_in(&mor_testdata_dir(), "v6_nonpartitioned_rollback");
    let table = &golden.path;
    let mode = MergeMode::from_table_properties(&properties(table)).expect("mode");
    assert_eq!(
        mode,
        MergeMode::CommitTime,
        "OverwriteWithLatestAvroPayload"
    );
    let timeline = committed(table);
    let failed = InstantTime::parse("20250126040826878").expect("instant");
    assert!(!timeline.is_committed(&failed));
    // Only the rollback block can hide the failed write now.
    let completed = ["20250126040823628", "20250126060846931", failed.as_str()]
        .map(|t| InstantTime::parse(t).expect("instant"));
    let lenient = CommittedInstants::new(completed, None);
    let slices = latest_slices(table, &timeline);
    let [slice] = slices.values().collect::<Vec<_>>()[..] else {
        panic!("one file group expected")
    };
    assert_eq!(slice.logs.len(), 3);
    let (strict_rows, strict) = merged_rows(slice, &timeline, &mode);
    let (lenient_rows, lenient_log) = merged_rows(slice, &lenient, &mode);
    assert_eq!(strict.stats().blocks_rolled_back, 1);
    assert_eq!(lenient_log.stats().blocks_rolled_back, 1);
    assert_eq!(lenient_log.stats().rollback_blocks, 1);
    assert_eq!(lenient_log.stats().blocks_merged, 1, "the later write only");
    assert_eq!(lenient_rows, strict_rows);
    let theirs = keyed(read_rows(table, "hudi", &["snapshot"]), false, "hudi-rs");
    assert_eq!(lenient_rows, theirs);
}
