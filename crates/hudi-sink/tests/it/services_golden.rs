//! The table services on a Spark-written table: `v6_simplekeygen_nonhivestyle` (commits C1, C2; file group
//! 97de74b1 in partition 10 has slices at both) takes six insert commits from `TableWriter`, then one
//! scheduled services run (`Coordinator::run_services`, `commits.retained=2`, `keep.min=3`, `keep.max=4`,
//! no clustering). Afterwards:
//! - hudi-rs (the Python `hudi` 0.5.0 package) reads Spark's rows unchanged (every column, file names
//!   included) plus the appended rows, row for row, as a snapshot and as of every active commit; the
//!   library's own view (`latest_file_slices`, then the files) reads the same rows and the same slices;
//! - the clean deleted exactly 97de74b1@C1 (older than the ECR and not its group's newest) and kept
//!   97de74b1@C2 (the newest slice, and the newest before the ECR);
//! - archival removed C1, C2 and the three oldest appended commits (down to `keep.min`), every state file;
//! - beyond the retention, as of the archived C2 hudi-rs still reads Spark's table (no slice of C2 was
//!   deleted), and as of C1 only the rows of the file groups not rewritten since (a partial answer);
//! - the clean's three timeline files decode with fastavro (its writer schema as written in the file), with
//!   the fields Spark's cleaner writes: policy, ECR `{timestamp, "commit", "COMPLETED"}`, version 2, the
//!   deleted file's full path in the plan, its name in the metadata's success lists, the totals.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use arrow_array::{ArrayRef, Int32Array, RecordBatch};
use hudi_sink::clock::ManualClock;
use hudi_sink::coordinator::{Coordinator, CoordinatorConfig};
use hudi_sink::lock::memory::MemoryLock;
use hudi_sink::lock::LeaseOptions;
use hudi_sink::services::ServicesConfig;
use hudi_sink::storage::local::LocalStorage;
use hudi_sink::storage::Storage;
use hudi_sink::table::instant::Action;
use hudi_sink::table::properties::{TableProperties, TimelineTimezone};
use hudi_sink::table::timeline::{latest_file_slices, Timeline};
use hudi_sink::write::TableWriter;
use hudi_sink::write::WriteConfig;
use serde_json::{json, Map, Value};

use crate::common::canon::canon_rows;
use crate::common::gen::{gen_batch, with_column};
use crate::common::python::{hudi_read_json, python, read_rows};
use crate::common::{golden_table, workspace_root};

const TABLE: &str = "v6_simplekeygen_nonhivestyle";
const C1: &str = "20240418172802262";
const C2: &str = "20240418172804498";
const GROUP: &str = "97de74b1-2a8e-4bb7-874c-0a74e1f42a77-0";
const GROUP_AT_C1: &str =
    "10/97de74b1-2a8e-4bb7-874c-0a74e1f42a77-0_1-98-142_20240418172802262.parquet";
const GROUP_AT_C2: &str =
    "10/97de74b1-2a8e-4bb7-874c-0a74e1f42a77-0_0-119-166_20240418172804498.parquet";
const START: i64 = 1_767_225_600_000; // 2026-01-01
const APPENDS: usize = 6;
const ROWS_PER_APPEND: usize = 6;

/// The write configuration the table's `hoodie.properties` implies, for inserts.
async fn write_config(storage: &LocalStorage, base: &Path) -> WriteConfig {
    let p = TableProperties::load(storage).await.expect("properties");
    assert_eq!(p.name, TABLE);
    let props: BTreeMap<String, String> = [
        ("hoodie.table.name", p.name.clone()),
        (
            "hoodie.database.name",
            p.database.clone().expect("database"),
        ),
        (
            "hoodie.datasource.write.recordkey.field",
            p.record_key_fields.join(","),
        ),
        (
            "hoodie.datasource.write.partitionpath.field",
            p.partition_fields.join(","),
        ),
        (
            "hoodie.datasource.write.precombine.field",
            p.precombine_field.clone().expect("precombine"),
        ),
        (
            "hoodie.datasource.write.hive_style_partitioning",
            p.hive_style_partitioning_or_default().to_string(),
        ),
        (
            "hoodie.datasource.write.keygenerator.class",
            p.key_generator_class.clone().expect("key generator"),
        ),
        ("hoodie.datasource.write.operation", "insert".to_string()),
        ("hoodie.base.path", base.display().to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(props["hoodie.datasource.write.recordkey.field"], "id");
    assert_eq!(
        props["hoodie.datasource.write.partitionpath.field"],
        "byteField"
    );
    assert_eq!(
        props["hoodie.datasource.write.precombine.field"],
        "longField"
    );
    assert_eq!(
        props["hoodie.datasource.write.hive_style_partitioning"],
        "false"
    );
    assert_eq!(props["hoodie.database.name"], "default");
    WriteConfig::from_properties(props).expect("config")
}

/// Rows by record key, without the columns named in `drop`; no duplicate keys.
fn keyed(
    rows: Vec<Map<String, Value>>,
    drop: &[&str],
    what: &str,
) -> BTreeMap<String, Map<String, Value>> {
    let mut out = BTreeMap::new();
    for mut row in rows {
        let key = row["_hoodie_record_key"]
            .as_str()
            .expect("record key")
            .to_string();
        for column in drop {
            row.remove(*column);
        }
        assert!(
            out.insert(key.clone(), row).is_none(),
            "{what}: duplicate {key}"
        );
    }
    out
}

/// The visible rows as the library reads them: its latest slices, then their files.
async fn library_rows(storage: &dyn Storage, as_of: Option<&str>) -> Vec<Map<String, Value>> {
    let timeline = Timeline::load(storage).await.expect("timeline");
    let as_of = as_of.map(|t| hudi_sink::table::instant::InstantTime::parse(t).expect("t"));
    let mut rows = Vec::new();
    for slice in latest_file_slices(storage, &timeline, as_of.as_ref())
        .await
        .expect("slices")
    {
        let data = storage.get(&slice.path()).await.expect("get");
        let (_, batches) = hudi_sink::base_file::reader::read_base_file(data).expect("read");
        rows.extend(canon_rows(&batches));
    }
    rows
}

/// What fastavro (`tests/python/avro_read.py`, under the file's own writer schema) reads from `file`.
fn fastavro(file: &Path) -> Value {
    let out = std::process::Command::new(python())
        .arg(workspace_root().join("tests/python/avro_read.py"))
        .arg(file)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "fastavro failed on {}:\n{}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let out: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(out["codec"], "null", "{}", file.display());
    let records = out["records"].as_array().expect("records");
    assert_eq!(records.len(), 1, "{}", file.display());
    records[0].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn services_on_a_spark_table_keep_its_rows_and_write_spark_clean_instants() {
    let golden = golden_table(TABLE);
    let base = golden.path.clone();
    let storage = LocalStorage::new(&base);
    let spark = read_rows(&base, "hudi", &["snapshot"]);
    assert_eq!(spark.len(), 4, "Spark's rows");
    let spark = keyed(spark, &[], "Spark's snapshot");

    // Spark wrote no hoodie.table.timeline.timezone (LOCAL to Java), which the writer refuses: the copy
    // declares UTC first. Six insert commits of new rows into partitions 10, 20 and 30 follow.
    let clock = Arc::new(ManualClock::new(START));
    let mut properties = TableProperties::load(&storage).await.expect("properties");
    properties.timeline_timezone = Some(TimelineTimezone::Utc);
    properties
        .store(&storage, clock.as_ref())
        .await
        .expect("store");
    let writer = TableWriter::create_or_open(
        Arc::new(LocalStorage::new(&base)),
        clock.clone(),
        write_config(&storage, &base).await,
        None,
    )
    .await
    .expect("open Spark's table");
    let schema = writer.schema().data.clone();
    let mut appended: Vec<(String, Vec<Map<String, Value>>)> = Vec::new();
    for c in 0..APPENDS {
        clock.advance(1_000);
        let n = ROWS_PER_APPEND;
        let ids: ArrayRef = Arc::new(Int32Array::from_iter_values(
            (0..n).map(|r| 1_000 + (c * n + r) as i32),
        ));
        let partitions: ArrayRef = Arc::new(Int32Array::from_iter_values(
            (0..n).map(|r| [10, 20, 30][(c + r) % 3]),
        ));
        let batch: RecordBatch = with_column(
            &with_column(&gen_batch(&schema, n, 77 + c as u64), "id", ids),
            "byteField",
            partitions,
        );
        let result = writer
            .write(std::slice::from_ref(&batch))
            .await
            .expect("insert");
        assert_eq!(result.counts.records_in, n as u64);
        appended.push((result.instant.to_string(), canon_rows(&[batch])));
    }
    let appended_times: Vec<&str> = appended.iter().map(|(t, _)| t.as_str()).collect();

    // The scheduled services run.
    let services = ServicesConfig {
        commits_retained: 2,
        keep_min_commits: 3,
        keep_max_commits: 4,
        small_file_limit: 0,
        ..ServicesConfig::default()
    };
    let coordinator = Coordinator::new(
        Arc::new(LocalStorage::new(&base)),
        Arc::new(MemoryLock::new(
            TABLE,
            LeaseOptions::hudi(Duration::from_secs(30)),
        )),
        clock.clone(),
        CoordinatorConfig {
            services,
            ..CoordinatorConfig::default()
        },
    );
    clock.advance(1_000);
    let report = coordinator.run_services().await.expect("services");
    let clean = report.clean_instant.clone().expect("a clean");
    assert_eq!(report.files_cleaned, 1, "{report:?}");
    // C1, C2 and the oldest appended commits, down to keep.min = 3.
    assert_eq!(report.instants_archived, 5, "{report:?}");
    assert_eq!(report.cluster_instant, None);
    let ecr = appended_times[APPENDS - 2];
    let latest = appended_times[APPENDS - 1];

    // The clean deleted 97de74b1@C1 only; archival removed every state file of the archived commits.
    assert!(!base.join(GROUP_AT_C1).exists(), "97de74b1@C1 deleted");
    assert!(base.join(GROUP_AT_C2).exists(), "97de74b1@C2 kept");
    let files_before = 3 + 1 + APPENDS * 3; // Spark's, 97de74b1@C1, one file per partition per append
    assert_eq!(crate::common::parquet_files(&base).len(), files_before - 1);
    let timeline = Timeline::load(&storage).await.expect("timeline");
    let active: Vec<String> = timeline
        .completed_commits()
        .iter()
        .map(|i| i.time.to_string())
        .collect();
    assert_eq!(
        active,
        appended_times[APPENDS - 3..].to_vec(),
        "active commits"
    );
    let mut timeline_files: Vec<String> = std::fs::read_dir(base.join(".hoodie"))
        .expect(".hoodie")
        .map(|e| e.expect("entry"))
        .filter(|e| e.file_type().expect("type").is_file())
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    timeline_files.sort();
    let mut expected_files = vec!["hoodie.properties".to_string()];
    for t in &active {
        for suffix in ["commit", "commit.requested", "inflight"] {
            expected_files.push(format!("{t}.{suffix}"));
        }
    }
    for suffix in ["clean", "clean.inflight", "clean.requested"] {
        expected_files.push(format!("{clean}.{suffix}"));
    }
    expected_files.sort();
    assert_eq!(
        timeline_files, expected_files,
        "C1 and C2 left the timeline"
    );
    assert!(!timeline_files
        .iter()
        .any(|f| f.starts_with(C1) || f.starts_with(C2)));

    // hudi-rs: Spark's rows unchanged (all columns), plus the appended rows (all data columns, keys,
    // partitions and commit times).
    let meta_free = ["_hoodie_commit_seqno", "_hoodie_file_name"];
    let check = |read: Vec<Map<String, Value>>, upto: &str, what: &str| {
        let full = keyed(read.clone(), &[], what);
        for (key, row) in &spark {
            assert_eq!(full.get(key), Some(row), "{what}: Spark's row {key}");
        }
        let mut expected = BTreeMap::new();
        for (t, rows) in appended.iter().filter(|(t, _)| t.as_str() <= upto) {
            for row in rows {
                let id = row["id"].as_i64().expect("id");
                let mut row = row.clone();
                row.insert("_hoodie_commit_time".into(), json!(t));
                row.insert("_hoodie_record_key".into(), json!(id.to_string()));
                row.insert(
                    "_hoodie_partition_path".into(),
                    json!(row["byteField"].as_i64().expect("byteField").to_string()),
                );
                expected.insert(id.to_string(), row);
            }
        }
        let mut actual = keyed(read, &meta_free, what);
        actual.retain(|k, _| !spark.contains_key(k));
        assert_eq!(actual.len(), expected.len(), "{what}: appended keys");
        for (key, row) in &expected {
            assert_eq!(actual.get(key), Some(row), "{what}: appended row {key}");
        }
        for (key, row) in &full {
            if let Some(t) = row["_hoodie_commit_time"].as_str().filter(|t| t > &C2) {
                let name = row["_hoodie_file_name"].as_str().expect("file name");
                assert!(
                    name.ends_with(&format!("_{t}.parquet")),
                    "{what}: {key} in {name}"
                );
            }
        }
        full
    };
    let snapshot = check(read_rows(&base, "hudi", &["snapshot"]), latest, "snapshot");
    assert_eq!(snapshot.len(), 4 + APPENDS * ROWS_PER_APPEND);
    for t in &active {
        check(
            read_rows(&base, "hudi", &["as_of", t]),
            t,
            &format!("as of {t}"),
        );
    }
    // Beyond the retention: C2's slices all survive (each is its group's newest before the ECR), so as of
    // C2 hudi-rs still reads Spark's table; as of C1 only partition 20's file is left (97de74b1@C1 is gone),
    // a silently partial answer.
    assert_eq!(
        keyed(read_rows(&base, "hudi", &["as_of", C2]), &[], "as of C2"),
        spark,
        "as of C2"
    );
    let only_20: BTreeMap<String, Map<String, Value>> = spark
        .iter()
        .filter(|(_, r)| r["_hoodie_partition_path"] == "20")
        .map(|(k, r)| (k.clone(), r.clone()))
        .collect();
    assert_eq!(only_20.len(), 1);
    assert_eq!(
        keyed(read_rows(&base, "hudi", &["as_of", C1]), &[], "as of C1"),
        only_20,
        "as of C1"
    );
    // The library's own view: the same slices and the same rows.
    let library = keyed(library_rows(&storage, None).await, &[], "library");
    assert_eq!(library, snapshot, "the library reads what hudi-rs reads");
    let slices: Vec<(String, String, String)> = latest_file_slices(&storage, &timeline, None)
        .await
        .expect("slices")
        .into_iter()
        .map(|s| (s.partition_path, s.file_id, s.file_name))
        .collect();
    let hudi_slices: Vec<(String, String, String)> =
        hudi_read_json(&base, "hudi", &["file_slices"])["file_slices"]
            .as_array()
            .expect("slices")
            .iter()
            .map(|s| {
                let text = |f: &str| s[f].as_str().expect("field").to_string();
                (text("partition_path"), text("file_id"), text("file_name"))
            })
            .collect();
    assert_eq!(slices, hudi_slices, "file slices");
    assert_eq!(slices.len(), 3 + APPENDS * 3);
    assert!(slices
        .iter()
        .any(|(p, id, name)| p == "10" && id == GROUP && GROUP_AT_C2.ends_with(name)));

    // The clean's timeline files, as fastavro reads them.
    let hoodie = base.join(".hoodie");
    let requested =
        std::fs::read(hoodie.join(format!("{clean}.clean.requested"))).expect("requested");
    let inflight = std::fs::read(hoodie.join(format!("{clean}.clean.inflight"))).expect("inflight");
    assert_eq!(requested, inflight, "the inflight file repeats the plan");
    let deleted_full = format!("{}/{GROUP_AT_C1}", storage.base_uri().trim_end_matches('/'));
    let policy = "KEEP_LATEST_COMMITS";
    let plan = fastavro(&hoodie.join(format!("{clean}.clean.requested")));
    assert_eq!(
        fastavro(&hoodie.join(format!("{clean}.clean.inflight"))),
        plan
    );
    let expected_plan = json!({
        "earliestInstantToRetain": {"timestamp": ecr, "action": "commit", "state": "COMPLETED"},
        "lastCompletedCommitTimestamp": latest,
        "policy": policy,
        // The deprecated version-1 field stays empty, as Spark leaves it.
        "filesToBeDeletedPerPartition": {},
        "version": 2,
        "filePathsToBeDeletedPerPartition": {
            "10": [{"filePath": deleted_full, "isBootstrapBaseFile": false}]
        },
        "partitionsToBeDeleted": [],
        "extraMetadata": {hudi_sink::services::clean::POLICY_KEY: policy},
    });
    assert_eq!(plan, expected_plan, "clean plan");
    let metadata = fastavro(&hoodie.join(format!("{clean}.clean")));
    let name = GROUP_AT_C1.rsplit('/').next().expect("name");
    let taken = metadata["timeTakenInMillis"].as_i64().expect("time taken");
    assert!(taken >= 0);
    let expected_metadata = json!({
        "policy": policy,
        "startCleanTime": clean,
        "timeTakenInMillis": taken,
        "totalFilesDeleted": 1,
        "earliestCommitToRetain": ecr,
        "lastCompletedCommitTimestamp": latest,
        "partitionMetadata": {"10": {
            "partitionPath": "10",
            "policy": policy,
            "deletePathPatterns": [name],
            "successDeleteFiles": [name],
            "failedDeleteFiles": [],
            "isPartitionDeleted": false,
        }},
        "version": 2,
        "bootstrapPartitionMetadata": metadata["bootstrapPartitionMetadata"],
        "extraMetadata": {hudi_sink::services::clean::POLICY_KEY: policy},
    });
    assert_eq!(metadata, expected_metadata, "clean metadata");
    assert!(
        metadata["bootstrapPartitionMetadata"].is_null()
            || metadata["bootstrapPartitionMetadata"] == json!({}),
        "{metadata}"
    );
    assert!(
        timeline
            .instants()
            .iter()
            .any(|i| i.action == Action::Clean && i.time.as_str() == clean && i.is_completed()),
        "{clean}"
    );

    // A second run has nothing to do.
    clock.advance(1_000);
    let again = coordinator.run_services().await.expect("services again");
    assert_eq!(
        (
            again.clean_instant,
            again.files_cleaned,
            again.instants_archived
        ),
        (None, 0, 0),
        "second run"
    );
    assert_eq!(
        check(
            read_rows(&base, "hudi", &["snapshot"]),
            latest,
            "snapshot after the second run"
        ),
        snapshot
    );
}
