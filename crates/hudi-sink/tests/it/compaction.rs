//! Compaction of Spark-written merge-on-read tables, checked with hudi-rs 0.5.0 and fastavro.
//!
//! For every Spark fixture with log files: the snapshot after compaction equals the one before row for row
//! (every column, the meta columns included, but `_hoodie_file_name`, which names the new base file), the
//! read-optimized view (base files only) then equals the snapshot, time travel to the last instant before
//! the compaction still reads the old snapshot, fastavro reads the plan under Hudi 0.14's schema, and the
//! commit is what Spark writes. A hand-made uncommitted log shows the committed-logs rule matters (with
//! the mutation switch the table is wrong). Crashes at every storage call of a compaction leave the table
//! readable as before; the rollback of pending compactions and a second compaction then finish it.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use hudi_sink::base_file::writer::BaseFileOptions;
use hudi_sink::clock::SystemClock;
use hudi_sink::lock::{LeaseOptions, Lock, MemoryLock};
use hudi_sink::log_file::{DeleteRecord, LogFileName, LogFileWriter};
use hudi_sink::record::decode::RecordDecoder;
use hudi_sink::schema::arrow::avro_to_arrow;
use hudi_sink::schema::avro::AvroSchema;
use hudi_sink::schema::meta::with_meta_fields;
use hudi_sink::services::compact::{compact, roll_back_pending_compactions, CompactionReport};
use hudi_sink::services::{ServiceContext, ServicesConfig};
use hudi_sink::storage::faulty::FaultyStorage;
use hudi_sink::storage::local::LocalStorage;
use hudi_sink::storage::Storage;
use hudi_sink::table::commit::{CommitMetadata, OperationType};
use hudi_sink::table::file_name::{BaseFileName, WriteToken};
use hudi_sink::table::instant::{Action, InstantTime};
use hudi_sink::table::records::compaction::COMPACTION_PLAN_SCHEMA;
use hudi_sink::table::records::CompactionPlan;
use hudi_sink::table::timeline::{latest_file_slices, Timeline};
use hudi_sink::write::WriteError;
use serde_json::{json, Value};

use crate::common::crash::{copy_dir, crash_after};
use crate::common::python::HudiReader;
use crate::common::rows::{keyed, Rows};
use crate::common::{golden_table_in, mor_testdata_dir, workspace_root};

/// The Spark merge-on-read fixtures that have log files.
const TABLES_WITH_LOGS: &[&str] = &[
    "v6_complexkeygen_hivestyle",
    "v6_nonpartitioned",
    "v6_nonpartitioned_rollback",
    "v6_simplekeygen_nonhivestyle",
    "v6_trips_8i1u",
    "v6_trips_8i3d",
];

/// Hudi 0.14's `HoodieCompactionPlan` schema (no `strategy`), as a reader schema for fastavro.
const PLAN_SCHEMA_0_14: &str = r#"{"namespace":"org.apache.hudi.avro.model","type":"record","name":"HoodieCompactionPlan",
 "fields":[{"name":"operations","type":["null",{"type":"array","items":{"name":"HoodieCompactionOperation","type":"record",
   "fields":[{"name":"baseInstantTime","type":["null","string"]},
     {"name":"deltaFilePaths","type":["null",{"type":"array","items":"string"}],"default":null},
     {"name":"dataFilePath","type":["null","string"],"default":null},
     {"name":"fileId","type":["null","string"]},
     {"name":"partitionPath","type":["null","string"],"default":null},
     {"name":"metrics","type":["null",{"type":"map","values":"double"}],"default":null},
     {"name":"bootstrapFilePath","type":["null","string"],"default":null}]}}],"default":null},
  {"name":"extraMetadata","type":["null",{"type":"map","values":"string"}],"default":null},
  {"name":"version","type":["int","null"],"default":1}]}"#;

/// Every slice with a committed log file is due.
fn config() -> ServicesConfig {
    ServicesConfig {
        compact_max_delta_commits: 1,
        ..ServicesConfig::default()
    }
}

fn memory_lock() -> MemoryLock {
    MemoryLock::new("t", LeaseOptions::hudi(Duration::from_secs(30)))
}

/// One compaction under a fresh lock, as the services run it.
async fn compact_table(storage: &dyn Storage) -> Result<Option<CompactionReport>, WriteError> {
    let lock = memory_lock();
    let guard = lock.acquire(Duration::from_secs(5)).await?;
    let config = config();
    let ctx = ServiceContext {
        storage,
        guard: &guard,
        clock: &SystemClock,
        config: &config,
    };
    let result = async {
        let timeline = Timeline::load(storage).await?;
        compact(&ctx, &timeline, None, &BaseFileOptions::default()).await
    }
    .await;
    guard.release().await.expect("release");
    result
}

/// `roll_back_pending_compactions` under a fresh lock.
async fn roll_back(storage: &dyn Storage) -> u64 {
    let lock = memory_lock();
    let guard = lock.acquire(Duration::from_secs(5)).await.expect("lock");
    let config = config();
    let ctx = ServiceContext {
        storage,
        guard: &guard,
        clock: &SystemClock,
        config: &config,
    };
    let timeline = Timeline::load(storage).await.expect("timeline");
    let n = roll_back_pending_compactions(&ctx, &timeline)
        .await
        .expect("rollback");
    guard.release().await.expect("release");
    n
}

fn without_file_name(rows: &Rows) -> Rows {
    rows.iter()
        .map(|(k, r)| {
            let mut r = r.clone();
            r.remove("_hoodie_file_name");
            (k.clone(), r)
        })
        .collect()
}

fn assert_rows_eq(ours: &Rows, theirs: &Rows, what: &str) {
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        theirs.keys().collect::<Vec<_>>(),
        "{what}: keys"
    );
    for (key, row) in theirs {
        assert_eq!(&ours[key], row, "{what}: {key:?}");
    }
}

/// Runs `avro_read.py` on `file` under `reader_schema` and returns its single record.
fn fastavro_record(file: &Path, reader_schema: &str) -> Value {
    let dir = tempfile::tempdir().expect("tempdir");
    let schema_file = dir.path().join("reader.avsc");
    std::fs::write(&schema_file, reader_schema).expect("schema");
    let out = std::process::Command::new(crate::common::python::python())
        .arg(workspace_root().join("tests/python/avro_read.py"))
        .arg(file)
        .arg("--reader-schema")
        .arg(&schema_file)
        .output()
        .expect("run avro_read.py");
    assert!(
        out.status.success(),
        "fastavro failed on {}:\n{}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    let records = v["records"].as_array().expect("records");
    assert_eq!(records.len(), 1, "one record");
    records[0].clone()
}

/// The plan as fastavro's JSON renders it (what the 0.14 reader schema keeps).
fn plan_json(plan: &CompactionPlan) -> Value {
    let ops: Vec<Value> = plan
        .operations
        .iter()
        .map(|op| {
            json!({
                "baseInstantTime": op.base_instant_time,
                "deltaFilePaths": op.delta_file_paths,
                "dataFilePath": op.data_file_path,
                "fileId": op.file_id,
                "partitionPath": op.partition_path,
                "metrics": op.metrics,
                "bootstrapFilePath": op.bootstrap_file_path,
            })
        })
        .collect();
    json!({"operations": ops, "extraMetadata": plan.extra_metadata, "version": plan.version})
}

#[tokio::test]
async fn compacted_spark_tables_read_the_same_in_snapshot_read_optimized_and_time_travel() {
    let mut reader = HudiReader::start();
    for table in TABLES_WITH_LOGS {
        let golden = golden_table_in(&mor_testdata_dir(), table);
        let path = &golden.path;
        let storage = LocalStorage::new(path);
        let timeline = Timeline::load(&storage).await.expect("timeline");
        let last = timeline.latest_completed().expect("latest").time.clone();
        let slices = latest_file_slices(&storage, &timeline, None)
            .await
            .expect("slices");
        let due: Vec<_> = slices.iter().filter(|s| !s.log_files.is_empty()).collect();
        assert!(!due.is_empty(), "{table}: a slice with committed logs");
        let before = keyed(reader.rows(path, &["snapshot"]), false, table);

        let report = compact_table(&storage)
            .await
            .expect("compaction")
            .expect("due");
        let c = report.instant.clone();
        assert_eq!(report.file_groups, due.len() as u64, "{table}");

        let after = keyed(reader.rows(path, &["snapshot"]), false, table);
        assert_rows_eq(
            &without_file_name(&after),
            &without_file_name(&before),
            &format!("{table}: snapshot"),
        );
        let read_optimized = keyed(reader.rows(path, &["read_optimized"]), false, table);
        assert_rows_eq(&read_optimized, &after, &format!("{table}: read-optimized"));
        let as_of = keyed(reader.rows(path, &["as_of", last.as_str()]), false, table);
        assert_rows_eq(&as_of, &before, &format!("{table}: as of {last}"));
        // Rows of compacted groups name their new base file, the others their old one.
        for ((partition, key), row) in &after {
            let name = row["_hoodie_file_name"].as_str().expect("file name");
            let base = BaseFileName::parse(name)
                .unwrap_or_else(|e| panic!("{table}: {partition}/{key}: {name}: {e}"));
            let compacted = due
                .iter()
                .any(|s| s.file_id == base.file_id && s.partition_path == *partition);
            assert_eq!(base.instant_time == c, compacted, "{table}: {name}");
        }

        // The plan: fastavro under Hudi 0.14's schema and this crate read the same record.
        let plan_file = path.join(format!(".hoodie/{c}.compaction.requested"));
        let plan = CompactionPlan::from_avro_bytes(&std::fs::read(&plan_file).expect("plan"))
            .expect("plan decodes");
        assert_eq!(plan.version, 2);
        assert!(plan.preserve_hoodie_metadata);
        assert_eq!(
            fastavro_record(&plan_file, PLAN_SCHEMA_0_14),
            plan_json(&plan)
        );
        let mut full = plan_json(&plan);
        full["strategy"] = Value::Null;
        full["preserveHoodieMetadata"] = json!(true);
        assert_eq!(fastavro_record(&plan_file, COMPACTION_PLAN_SCHEMA), full);
        assert_eq!(
            std::fs::read(path.join(format!(".hoodie/{c}.compaction.inflight")))
                .expect("inflight")
                .len(),
            0
        );
        let mut planned: Vec<(String, String, Option<String>, Vec<String>)> = plan
            .operations
            .iter()
            .map(|op| {
                (
                    op.partition_path.clone(),
                    op.base_instant_time.clone(),
                    op.data_file_path.clone(),
                    op.delta_file_paths.clone(),
                )
            })
            .collect();
        planned.sort();
        let mut expected: Vec<_> = due
            .iter()
            .map(|s| {
                (
                    s.partition_path.clone(),
                    s.base_instant.to_string(),
                    Some(s.file_name.clone()),
                    s.log_files.iter().map(|l| l.name.file_name()).collect(),
                )
            })
            .collect();
        expected.sort();
        assert_eq!(planned, expected, "{table}: plan");

        // The commit: Spark's compaction commit shape.
        let commit = CommitMetadata::from_json(
            &std::fs::read(path.join(format!(".hoodie/{c}.commit"))).expect("commit"),
        )
        .expect("commit json");
        assert!(commit.compacted);
        assert_eq!(commit.operation_type, OperationType::Compact);
        assert!(commit.schema().is_some(), "{table}: schema");
        let stats: Vec<_> = commit.write_stats().collect();
        assert_eq!(stats.len(), due.len());
        for stat in stats {
            let slice = due
                .iter()
                .find(|s| s.file_id == stat.file_id)
                .expect("stat of a planned group");
            assert_eq!(stat.prev_commit, slice.base_instant.to_string());
            assert_eq!(stat.total_log_files_compacted, slice.log_files.len() as i64);
            assert_eq!(
                stat.total_log_size_compacted,
                slice.log_files.iter().map(|l| l.size as i64).sum::<i64>()
            );
            assert!(stat.total_log_records > 0, "{table}: {stat:?}");
            let size = std::fs::metadata(path.join(&stat.path))
                .expect("file")
                .len();
            assert_eq!(stat.file_size_in_bytes, size as i64);
        }
        assert!(
            !path.join(format!(".hoodie/.temp/{c}")).exists()
                || std::fs::read_dir(path.join(format!(".hoodie/.temp/{c}")))
                    .map(|mut d| d.next().is_none())
                    .unwrap_or(true),
            "{table}: markers removed"
        );
        // Nothing is due any more.
        assert!(compact_table(&storage).await.expect("again").is_none());
        eprintln!(
            "{table}: compaction {c} merged {} log files into {} file groups; {} rows read back",
            report.log_files,
            report.file_groups,
            after.len()
        );
    }
}

mod appended;
