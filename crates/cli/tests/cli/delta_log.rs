//! The Delta mirror's log over many instants (docs/delta.md): checkpoints every ten versions that Python
//! `deltalake` reads alone (stats and partition values included), the retention derived from Hudi's cleaner
//! settings (a `metaData` action when they change, the log expired below the newest checkpoint older than it,
//! time travel reaching exactly the retained versions), and merge-on-read tables, whose Delta view is the
//! read-optimized view at every version.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::*;
use crate::delta::{full_rows, full_rows_at, generate, reader_rows, split_stream};

/// The file names under `_delta_log/`, sorted.
fn log_names(table: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(table.join("_delta_log"))
        .expect("_delta_log/")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The actions of Delta version `version` (its commit file).
fn version_actions(table: &Path, version: u64) -> Vec<Value> {
    std::fs::read_to_string(table.join("_delta_log").join(format!("{version:020}.json")))
        .expect("commit file")
        .lines()
        .map(|l| serde_json::from_str(l).expect("action"))
        .collect()
}

/// The `commitInfo` of Delta version `version`.
fn commit_info(table: &Path, version: u64) -> Value {
    version_actions(table, version)
        .into_iter()
        .find_map(|a| a.get("commitInfo").cloned())
        .expect("commitInfo")
}

/// Runs Python code with the table path as `sys.argv[1]`; returns its stdout.
fn py(code: &str, table: &Path) -> String {
    let out = Command::new(python())
        .args(["-c", code])
        .arg(table)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The add actions with their stats as `deltalake` reads them (`get_add_actions(flatten=True)`), as JSON.
const ADD_ACTIONS: &str = r#"
import json, sys
import pyarrow as pa
from deltalake import DeltaTable
t = pa.table(DeltaTable(sys.argv[1]).get_add_actions(flatten=True))
rows = sorted(t.drop_columns([c for c in t.column_names if c in ("modification_time", "data_change")]).to_pylist(), key=lambda r: r["path"])
print(json.dumps(rows, default=str, sort_keys=True))
"#;

/// 26 upsert instants with a retention long enough to keep the whole log: checkpoints after versions 9 and 19
/// with `_last_checkpoint` naming 19, and a copy of the table without the commit files the checkpoint covers
/// reads row for row as hudi-rs's snapshot, with the same add actions, stats and partition values.
#[test]
fn checkpoints_every_ten_versions_read_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let table = dir.path().join("checkpointed");
    let events = generate(dir.path(), "events", 26, "291");
    ingest_one_instant_per_file(
        &table,
        &events,
        "COPY_ON_WRITE",
        &[
            "hudi.sink.delta.mirror=true",
            "hoodie.cleaner.policy=KEEP_LATEST_BY_HOURS",
            "hoodie.cleaner.hours.retained=24",
        ],
    );
    let instants = completed_commits(&table);
    assert_eq!(instants.len(), 26, "{instants:?}");
    let names = log_names(&table);
    for checkpoint in [9u64, 19] {
        let name = format!("{checkpoint:020}.checkpoint.parquet");
        assert!(names.contains(&name), "{name}: {names:?}");
    }
    assert!(
        !names.iter().any(|n| n.starts_with("00000000000000000029")),
        "{names:?}"
    );
    let last: Value = serde_json::from_str(
        &std::fs::read_to_string(table.join("_delta_log/_last_checkpoint"))
            .expect("_last_checkpoint"),
    )
    .expect("JSON");
    assert_eq!(last["version"], 19, "{last}");
    // The whole log is kept (24 hours): every version is there.
    for version in 0..26u64 {
        assert!(
            names.contains(&format!("{version:020}.json")),
            "{version}: {names:?}"
        );
    }
    let hudi = full_rows(&table, "hudi");
    assert!(
        full_rows(&table, "delta") == hudi,
        "the mirror differs from hudi-rs"
    );
    let adds = py(ADD_ACTIONS, &table);
    assert!(
        adds.contains("\"min.fare\""),
        "stats in the add actions: {adds}"
    );

    // Only the checkpoint and the versions after it: the same table.
    let copy = dir.path().join("from_checkpoint");
    copy_tree(&table, &copy);
    for version in 0..=19u64 {
        std::fs::remove_file(copy.join("_delta_log").join(format!("{version:020}.json")))
            .expect("remove commit file");
    }
    std::fs::remove_file(
        copy.join("_delta_log")
            .join(format!("{:020}.checkpoint.parquet", 9)),
    )
    .expect("remove older checkpoint");
    assert!(
        full_rows(&copy, "delta") == hudi,
        "the table read from its checkpoint differs from hudi-rs"
    );
    assert!(
        full_rows(&copy, "polars") == hudi,
        "Polars's read from the checkpoint differs from hudi-rs"
    );
    assert_eq!(
        py(ADD_ACTIONS, &copy),
        adds,
        "the checkpoint's add actions (stats, partition values) differ from the log's"
    );
}

/// How many Hudi log files the table holds.
fn hudi_log_files(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry"))
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if e.file_type().expect("type").is_dir()
                && !name.starts_with('.')
                && name != "_delta_log"
            {
                hudi_log_files(&e.path())
            } else {
                usize::from(name.starts_with('.') && name.contains(".log."))
            }
        })
        .sum()
}

/// Copies a directory tree.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// The retention and the log's expiry. 22 instants, one per batch (`--commit-interval-ms 0`), with the cleaner
/// keeping 3 commits and archival keeping 5 to 7: both Delta keys read `interval 0 seconds`; crossing the
/// checkpoint after version 19 expires the log below the checkpoint after version 9, whose instant archival has
/// passed, and not one version of an instant still on Hudi's active timeline (the checkpoint after version 9 did
/// not expire anything when it was written: versions below it mirrored active instants). Time travel reads the
/// versions of the retained commits as Hudi's time travel at their instants, and not version 8. Then 8 more
/// instants with `KEEP_LATEST_BY_HOURS` (2 hours): a `metaData` action with `interval 7200 seconds`, and the
/// checkpoint after version 29 expires nothing (the versions are younger than the retention; the unit tests of
/// the expiry take each of its two conditions apart).
#[test]
fn retention_follows_the_cleaner_and_time_travel_reaches_the_retained_versions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let table = dir.path().join("retained");
    let (first, second) = split_stream(dir.path(), "293", (30, 22), "first", "second");
    let small_retention = [
        "hudi.sink.delta.mirror=true",
        "hoodie.cleaner.commits.retained=3",
        "hoodie.keep.min.commits=5",
        "hoodie.keep.max.commits=7",
    ];
    ingest_one_instant_per_file(&table, &first, "COPY_ON_WRITE", &small_retention);
    let config = |version: u64| -> Option<Value> {
        version_actions(&table, version)
            .into_iter()
            .find_map(|a| a.get("metaData").map(|m| m["configuration"].clone()))
    };
    let names = log_names(&table);
    for checkpoint in [9u64, 19] {
        let name = format!("{checkpoint:020}.checkpoint.parquet");
        assert!(names.contains(&name), "{name}: {names:?}");
    }
    // Versions 0 to 8 expired with the checkpoint after version 19; 9 to 21 are kept.
    for version in 0..22u64 {
        assert_eq!(
            names.contains(&format!("{version:020}.json")),
            version >= 9,
            "version {version}: {names:?}"
        );
    }
    // Every instant on Hudi's active timeline has its version.
    let active = completed_commits(&table);
    assert!(active.len() <= 7, "archival kept {active:?}");
    let mirrored: Vec<String> = (9..22u64)
        .map(|v| {
            commit_info(&table, v)["hudiInstant"]
                .as_str()
                .expect("instant")
                .to_string()
        })
        .collect();
    assert!(
        active.iter().all(|i| mirrored.contains(i)),
        "active {active:?}, mirrored {mirrored:?}"
    );
    let checkpoint_config = py(
        r#"
import json, sys
from deltalake import DeltaTable
print(json.dumps(DeltaTable(sys.argv[1]).metadata().configuration, sort_keys=True))
"#,
        &table,
    );
    let checkpoint_config: Value = serde_json::from_str(&checkpoint_config).expect("JSON");
    assert_eq!(
        checkpoint_config["delta.logRetentionDuration"],
        "interval 0 seconds"
    );
    assert_eq!(
        checkpoint_config["delta.deletedFileRetentionDuration"],
        "interval 0 seconds"
    );
    // Time travel: the versions of the 3 commits the cleaner retains read as Hudi at their instants.
    for version in 19..22u64 {
        let instant = commit_info(&table, version)["hudiInstant"]
            .as_str()
            .expect("instant")
            .to_string();
        assert!(
            full_rows_at(&table, "delta", Some(&version.to_string()))
                == full_rows_at(&table, "hudi", Some(&instant)),
            "Delta version {version} differs from Hudi as of {instant}"
        );
    }
    let old = Command::new(python())
        .arg(workspace_root().join("tests/python/hudi_read.py"))
        .args(["--engine", "delta"])
        .arg(&table)
        .args(["as_of", "8"])
        .output()
        .expect("run python");
    assert!(!old.status.success(), "version 8 should have expired");

    // The cleaner's settings change: the next version carries them in a metaData action.
    ingest_one_instant_per_file(
        &table,
        &second,
        "COPY_ON_WRITE",
        &[
            "hudi.sink.delta.mirror=true",
            "hoodie.cleaner.policy=KEEP_LATEST_BY_HOURS",
            "hoodie.cleaner.hours.retained=2",
        ],
    );
    let changed = config(22).expect("a metaData action at version 22");
    assert_eq!(
        changed["delta.logRetentionDuration"],
        "interval 7200 seconds"
    );
    assert_eq!(
        changed["delta.deletedFileRetentionDuration"],
        "interval 7200 seconds"
    );
    assert_eq!(changed["delta.checkpointInterval"], "10");
    assert!(config(23).is_none(), "no metaData when nothing changed");
    let names = log_names(&table);
    assert!(
        names.contains(&format!("{:020}.checkpoint.parquet", 29)),
        "{names:?}"
    );
    for version in 9..30u64 {
        assert!(
            names.contains(&format!("{version:020}.json")),
            "version {version} expired within the retention: {names:?}"
        );
    }
    assert!(
        full_rows(&table, "delta") == full_rows(&table, "hudi"),
        "the mirror differs from hudi-rs"
    );
}

/// A merge-on-read table with upserts and deletes in log files: before any compaction, after each one and at
/// every Delta version, the Delta view equals hudi-rs's read-optimized view at the version's instant (base
/// files only), and a compaction's version makes the logged updates visible.
#[test]
fn merge_on_read_mirrors_the_read_optimized_view() {
    let dir = tempfile::tempdir().expect("tempdir");
    let table = dir.path().join("mor");
    let all = generate(dir.path(), "all", 8, "297");
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(&all)
        .expect("events")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    let (first, second) = (dir.path().join("first"), dir.path().join("second"));
    for (i, file) in files.iter().enumerate() {
        let to = if i < 2 { &first } else { &second };
        std::fs::create_dir_all(to).expect("dir");
        std::fs::copy(file, to.join(file.file_name().expect("name"))).expect("copy");
    }
    let sets = [
        "hudi.sink.delta.mirror=true",
        "hoodie.compact.inline.max.delta.commits=3",
        "hoodie.index.type=BUCKET",
        "hoodie.bucket.index.num.buckets=2",
        // A retention that keeps every version's log and files, for the time travel below.
        "hoodie.cleaner.policy=KEEP_LATEST_BY_HOURS",
    ];
    // Two deltacommits: the second's updates and deletes sit in log files, no compaction yet.
    ingest_one_instant_per_file(&table, &first, "MERGE_ON_READ", &sets);
    let hoodie = |suffix: &str| -> usize {
        std::fs::read_dir(table.join(".hoodie"))
            .expect(".hoodie")
            .filter(|e| {
                e.as_ref()
                    .expect("entry")
                    .file_name()
                    .to_string_lossy()
                    .ends_with(suffix)
            })
            .count()
    };
    assert_eq!(hoodie(".commit"), 0, "no compaction yet");
    let logs = hudi_log_files(&table);
    assert!(logs > 0, "updates in log files");
    let ro = reader_rows(&table, "hudi", &["read_optimized"]);
    assert!(
        full_rows(&table, "delta") == ro,
        "before compaction: the Delta view differs from the read-optimized view"
    );
    assert!(
        full_rows(&table, "hudi") != ro,
        "the snapshot differs from the read-optimized view (logs hold updates)"
    );

    ingest_one_instant_per_file(&table, &second, "MERGE_ON_READ", &sets);
    assert!(hoodie(".commit") >= 1, "a compaction ran");
    // A compaction completed after the last commit is mirrored by the next step: compare as of the instant
    // the mirror holds.
    let status = ok(&["show", "--table", &table.display().to_string()]);
    let mirrored = status
        .lines()
        .find_map(|l| l.split_once("mirrors ")?.1.split(',').next())
        .expect("show names the mirrored instant")
        .to_string();
    let ro = reader_rows(&table, "hudi", &["read_optimized", &mirrored]);
    assert!(
        full_rows(&table, "delta") == ro,
        "after compaction: the Delta view differs from the read-optimized view"
    );
    assert!(
        full_rows(&table, "polars") == ro,
        "Polars: the Delta view differs from the read-optimized view"
    );

    // Every version: its instant's read-optimized view.
    let versions = log_names(&table)
        .iter()
        .filter(|n| n.ends_with(".json") && !n.starts_with('_'))
        .count() as u64;
    let mut compactions = 0;
    for version in 0..versions {
        let info = commit_info(&table, version);
        let instant = info["hudiInstant"].as_str().expect("instant");
        compactions += usize::from(info["hudiAction"] == "commit");
        assert!(
            full_rows_at(&table, "delta", Some(&version.to_string()))
                == reader_rows(&table, "hudi", &["read_optimized", instant]),
            "Delta version {version} differs from the read-optimized view as of {instant}"
        );
    }
    assert!(compactions >= 1, "a compaction's version");
}
