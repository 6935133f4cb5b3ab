//! Merge-on-read file slices of every Spark-written fixture against hudi-rs 0.5.0 (`tests/python/hudi_slices.py`):
//! per partition and file group the base file, its size and the log files with their sizes, from the listing
//! ([`latest_file_slices`], latest and as of every completed instant) and from a [`FileSystemView`].
//!
//! The reader lists a slice's logs by the base instant in their names and filters blocks when it reads; the
//! library keeps only logs a completed deltacommit ≤ the as-of time wrote (docs/architecture.md, "File-system
//! view"). So the expectation is the reader's slice with its logs restricted to those its own timeline's
//! completed deltacommits (≤ the as-of time) name, and every log the reader lists beyond that is accounted for.

use std::collections::BTreeMap;

use hudi_sink::storage::local::LocalStorage;
use hudi_sink::table::fs_view::{FileSlice, FileSystemView};
use hudi_sink::table::instant::InstantTime;
use hudi_sink::table::timeline::{latest_file_slices, Timeline};
use serde_json::Value;

use crate::common::python::python;
use crate::common::{golden_table_in, mor_testdata_dir, workspace_root};

/// (partition, file id, base instant, base file, base size, [(log file, size)]).
type Slice = (String, String, String, String, u64, Vec<(String, u64)>);

fn ours(slices: &[FileSlice]) -> Vec<Slice> {
    slices
        .iter()
        .map(|s| {
            let logs = s
                .log_files
                .iter()
                .map(|l| (l.name.file_name(), l.size))
                .collect();
            (
                s.partition_path.clone(),
                s.file_id.clone(),
                s.base_instant.to_string(),
                s.file_name.clone(),
                s.size,
                logs,
            )
        })
        .collect()
}

/// The reader's slices; `keep` decides which of a slice's logs (by table-relative path) are expected.
fn theirs(slices: &Value, mut keep: impl FnMut(&str) -> bool) -> Vec<Slice> {
    let mut out = Vec::new();
    for s in slices.as_array().expect("slices") {
        let partition = s["partition_path"].as_str().expect("partition").to_string();
        let names = s["log_files"].as_array().expect("logs");
        let sizes = s["log_sizes"].as_array().expect("sizes");
        assert_eq!(names.len(), sizes.len());
        let mut logs = Vec::new();
        for (name, size) in names.iter().zip(sizes) {
            let name = name.as_str().expect("name");
            let path = if partition.is_empty() {
                name.to_string()
            } else {
                format!("{partition}/{name}")
            };
            if keep(&path) {
                logs.push((name.to_string(), size.as_u64().expect("size")));
            }
        }
        out.push((
            partition,
            s["file_id"].as_str().expect("file id").to_string(),
            s["base_instant"].as_str().expect("instant").to_string(),
            s["base_file"].as_str().expect("base file").to_string(),
            s["base_size"].as_u64().expect("base size"),
            logs,
        ));
    }
    out.sort();
    out
}

fn reader_slices(table: &std::path::Path) -> Value {
    let script = workspace_root().join("tests/python/hudi_slices.py");
    let out = std::process::Command::new(python())
        .arg(&script)
        .arg(table)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "hudi_slices.py failed on {}:\n{}",
        table.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("reader prints JSON")
}

fn fixtures() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(mor_testdata_dir())
        .expect("read dir")
        .filter_map(|e| {
            let name = e.expect("entry").file_name().to_string_lossy().into_owned();
            name.strip_suffix(".zip").map(str::to_string)
        })
        .collect();
    names.sort();
    assert!(names.len() >= 7, "merge-on-read fixtures: {names:?}");
    names
}

#[tokio::test]
async fn mor_slices_match_hudi_rs_latest_as_of_every_instant_and_in_the_view() {
    let mut logs_seen = 0;
    let mut extra_reader_logs = BTreeMap::new();
    for name in fixtures() {
        let golden = golden_table_in(&mor_testdata_dir(), &name);
        let storage = LocalStorage::new(&golden.path);
        let timeline = Timeline::load(&storage).await.expect("timeline");
        let reader = reader_slices(&golden.path);
        let writers: BTreeMap<String, InstantTime> = reader["writers"]
            .as_object()
            .expect("writers")
            .iter()
            .map(|(path, t)| {
                let t = InstantTime::parse(t.as_str().expect("time")).expect("instant");
                (path.clone(), t)
            })
            .collect();
        let latest = ours(
            &latest_file_slices(&storage, &timeline, None)
                .await
                .expect("listing"),
        );
        let expected = theirs(&reader["latest"], |p| writers.contains_key(p));
        assert_eq!(latest, expected, "{name} latest");
        logs_seen += latest.iter().map(|s| s.5.len()).sum::<usize>();
        // Logs the reader lists but no completed deltacommit wrote.
        let all = theirs(&reader["latest"], |_| true);
        for (mine, reader) in latest.iter().zip(&all) {
            for log in &reader.5 {
                if !mine.5.contains(log) {
                    extra_reader_logs.insert((name.clone(), log.0.clone()), log.1);
                }
            }
        }

        let mut view = FileSystemView::new();
        view.sync(&storage, &timeline).await.expect("sync");
        let viewed: Vec<FileSlice> = view.slices().cloned().collect();
        assert_eq!(ours(&viewed), latest, "{name} view");

        let instants = reader["instants"].as_array().expect("instants");
        let completed: Vec<String> = timeline
            .completed_commits()
            .iter()
            .map(|i| i.time.to_string())
            .collect();
        assert_eq!(
            instants
                .iter()
                .map(|t| t.as_str().expect("t"))
                .collect::<Vec<_>>(),
            completed,
            "{name} completed instants"
        );
        for t in &completed {
            let as_of = InstantTime::parse(t).expect("instant");
            let mine = ours(
                &latest_file_slices(&storage, &timeline, Some(&as_of))
                    .await
                    .expect("listing"),
            );
            let expected = theirs(&reader["as_of"][t.as_str()], |p| {
                writers.get(p).is_some_and(|w| *w <= as_of)
            });
            assert_eq!(mine, expected, "{name} as of {t}");
        }
    }
    assert!(logs_seen >= 5, "fixtures with log files: {logs_seen}");
    // Only the rolled-back deltacommit's log and the rollback's command block are left out, in one fixture.
    let rollback = "v6_nonpartitioned_rollback";
    let prefix = ".0712b9f9-d2d5-4cae-bcf4-8fd7146af503-0_20250126040823628";
    assert_eq!(
        extra_reader_logs,
        BTreeMap::from([
            (
                (rollback.to_string(), format!("{prefix}.log.1_0-33-43")),
                11828
            ),
            ((rollback.to_string(), format!("{prefix}.log.2_1-0-1")), 105),
        ])
    );
}

/// The rolled-back fixture in detail: the failed deltacommit's log (version 1) and the rollback block (2)
/// are not part of the slice; the log of the next completed deltacommit (3) is, and only from its instant.
#[tokio::test]
async fn a_rolled_back_deltacommit_leaves_only_the_next_write_in_the_slice() {
    let golden = golden_table_in(&mor_testdata_dir(), "v6_nonpartitioned_rollback");
    let storage = LocalStorage::new(&golden.path);
    let timeline = Timeline::load(&storage).await.expect("timeline");
    let prefix = ".0712b9f9-d2d5-4cae-bcf4-8fd7146af503-0_20250126040823628";
    let slices = latest_file_slices(&storage, &timeline, None)
        .await
        .expect("listing");
    assert_eq!(slices.len(), 1);
    assert_eq!(
        slices[0].log_paths(),
        vec![format!("{prefix}.log.3_0-13-9")]
    );
    assert_eq!(slices[0].log_files[0].size, 11835);
    let first = InstantTime::parse("20250126040823628").expect("t");
    let before = latest_file_slices(&storage, &timeline, Some(&first))
        .await
        .expect("listing");
    assert!(before[0].log_files.is_empty(), "{:?}", before[0].log_files);
}
