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

/// `v6_trips_8i1u`'s file groups.
const SF: (&str, &str) = (
    "city=san_francisco",
    "d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0",
);
const CHENNAI: (&str, &str) = ("city=chennai", "84e82649-b1ee-4a25-a316-17cc6872616b-0");
const TRIPS_BASE: &str = "20250331030642808";
const TRIPS_LAST: &str = "20250331030645735";

fn trips_schema(table: &Path) -> (String, AvroSchema) {
    let last: Value = serde_json::from_slice(
        &std::fs::read(table.join(format!(".hoodie/{TRIPS_LAST}.deltacommit"))).expect("commit"),
    )
    .expect("json");
    let text = last["extraMetadata"]["schema"]
        .as_str()
        .expect("schema")
        .to_string();
    let schema = AvroSchema::parse(&text).expect("schema");
    (text, schema)
}

/// Appends the next log file of a `v6_trips_8i1u` slice holding `rows` (uuid, ts, fare) and deletes of
/// the keys `deletes` (commit-time deletes, as Spark SQL writes them), written by `t`; returns its
/// table-relative path and size.
fn append_log(
    table: &Path,
    (partition, file_id): (&str, &str),
    t: &str,
    rows: &[(&str, i64, f64)],
    deletes: &[&str],
) -> (String, u64) {
    let (_, schema) = trips_schema(table);
    let block_schema = with_meta_fields(&schema);
    let arrow = Arc::new(avro_to_arrow(&block_schema).expect("arrow"));
    let mut writer = LogFileWriter::new(InstantTime::parse(t).expect("t"), file_id, &schema);
    if !rows.is_empty() {
        let mut decoder = RecordDecoder::try_new(arrow, &block_schema).expect("decoder");
        for (seq, (uuid, ts, fare)) in rows.iter().enumerate() {
            let row = json!({
                "_hoodie_commit_time": t, "_hoodie_commit_seqno": format!("{t}_0_{seq}"),
                "_hoodie_record_key": uuid, "_hoodie_partition_path": partition,
                "_hoodie_file_name": file_id, "ts": ts, "uuid": uuid, "rider": "r", "driver": "d",
                "fare": fare, "city": partition.trim_start_matches("city="),
            });
            decoder.append(row.to_string().as_bytes()).expect("row");
        }
        let batch = decoder.finish().expect("batch");
        writer = writer.with_records(&[batch]).expect("records");
    }
    if !deletes.is_empty() {
        let records: Vec<DeleteRecord> = deletes
            .iter()
            .map(|key| DeleteRecord::new(*key, partition))
            .collect();
        writer = writer.with_deletes(&records).expect("deletes");
    }
    let bytes = writer.finish().expect("finish");
    let dir = table.join(partition);
    let existing: Vec<LogFileName> = std::fs::read_dir(&dir)
        .expect("dir")
        .filter_map(|e| LogFileName::parse(e.expect("entry").file_name().to_str()?).ok())
        .collect();
    let base = InstantTime::parse(TRIPS_BASE).expect("base");
    let name = LogFileName::next_in_slice(&existing, file_id, &base, WriteToken::new(0, 3, 9))
        .expect("name");
    std::fs::write(dir.join(name.file_name()), &bytes).expect("write");
    (
        format!("{partition}/{}", name.file_name()),
        bytes.len() as u64,
    )
}

/// A completed deltacommit `t` naming the log at `path` (as Spark's append stat does).
fn complete_deltacommit(
    table: &Path,
    t: &str,
    (partition, file_id): (&str, &str),
    log: (&str, u64),
) {
    let (schema, _) = trips_schema(table);
    let hoodie = table.join(".hoodie");
    std::fs::write(hoodie.join(format!("{t}.deltacommit.requested")), b"").expect("requested");
    std::fs::write(hoodie.join(format!("{t}.deltacommit.inflight")), b"").expect("inflight");
    let commit = json!({
        "partitionToWriteStats": {partition: [{
            "fileId": file_id, "path": log.0, "prevCommit": TRIPS_BASE, "numWrites": 1,
            "numUpdateWrites": 1, "partitionPath": partition, "fileSizeInBytes": log.1,
            "totalWriteBytes": log.1, "logVersion": 1, "logOffset": 0, "baseFile": "",
        }]},
        "compacted": false,
        "extraMetadata": {"schema": schema}, "operationType": "UPSERT",
    });
    std::fs::write(
        hoodie.join(format!("{t}.deltacommit")),
        serde_json::to_vec(&commit).expect("json"),
    )
    .expect("commit");
}

/// `v6_trips_8i1u` with a committed update in Chennai (two file groups with logs) and, in San Francisco,
/// a log of a write that never reached the timeline (a failed one, or a zombie's late upload).
fn trips_with_failed_log(into: &Path) {
    let golden = golden_table_in(&mor_testdata_dir(), "v6_trips_8i1u");
    copy_dir(&golden.path, into);
    let committed = append_log(
        into,
        CHENNAI,
        "20250401000000001",
        &[("c8abbe79-8d89-47ea-b4ce-4d224bae5bfa", 1695115999911, 77.0)],
        &[],
    );
    complete_deltacommit(
        into,
        "20250401000000001",
        CHENNAI,
        (&committed.0, committed.1),
    );
    append_log(
        into,
        SF,
        "20250401000000002",
        &[("1dced545-862b-4ceb-8b43-d2a568f6616b", 1999999999999, 5.0)],
        &[],
    );
}

#[tokio::test]
async fn only_committed_log_blocks_are_compacted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut reader = HudiReader::start();
    for mutated in [false, true] {
        let path = dir.path().join(format!("trips-{mutated}"));
        trips_with_failed_log(&path);
        let before = without_file_name(&keyed(reader.rows(&path, &["snapshot"]), false, "before"));
        assert_eq!(
            before[&(
                SF.0.to_string(),
                "1dced545-862b-4ceb-8b43-d2a568f6616b".to_string()
            )]["fare"],
            json!(93.5),
            "the failed write is invisible"
        );
        let storage = LocalStorage::new(&path);
        #[cfg(feature = "mutations")]
        hudi_sink::mutation::set_active(
            mutated.then_some(hudi_sink::mutation::Mutation::CompactionCommittedLogsOnly),
        );
        let report = compact_table(&storage).await;
        #[cfg(feature = "mutations")]
        hudi_sink::mutation::set_active(None);
        let report = report.expect("compaction").expect("due");
        assert_eq!(report.file_groups, 2, "Chennai and San Francisco");
        assert_eq!(report.log_files, if mutated { 3 } else { 2 });
        let after = without_file_name(&keyed(reader.rows(&path, &["snapshot"]), false, "after"));
        if mutated {
            let row = &after[&(
                SF.0.to_string(),
                "1dced545-862b-4ceb-8b43-d2a568f6616b".to_string(),
            )];
            assert_eq!(row["fare"], json!(5.0), "the failed write became durable");
            assert_ne!(after, before);
        } else {
            assert_rows_eq(&after, &before, "committed logs only");
        }
    }
}

/// Base files named with `t`, anywhere in the table.
/// Every file under `dir`, as paths.
fn walkdir(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read_dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            out.extend(walkdir(&path));
        } else {
            out.push(path.display().to_string());
        }
    }
    out
}

fn files_of(table: &Path, t: &InstantTime) -> Vec<String> {
    crate::common::parquet_files(table)
        .into_iter()
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.to_string();
            BaseFileName::parse(&name)
                .ok()
                .filter(|b| b.instant_time == *t)
                .map(|_| name)
        })
        .collect()
}

#[tokio::test]
async fn a_crash_at_any_storage_call_leaves_the_table_as_before_and_the_rollback_and_next_compaction_finish(
) {
    let dir = tempfile::tempdir().expect("tempdir");
    let pristine = dir.path().join("pristine");
    trips_with_failed_log(&pristine);
    let mut reader = HudiReader::start();
    let before = without_file_name(&keyed(
        reader.rows(&pristine, &["snapshot"]),
        false,
        "pristine",
    ));
    let mut n = 1u64;
    let mut pending_seen = 0;
    loop {
        let what = format!("crash after call {n}");
        let base = dir.path().join(format!("crash-{n}"));
        copy_dir(&pristine, &base);
        let inner: Arc<dyn Storage> = Arc::new(LocalStorage::new(&base));
        let faulty = FaultyStorage::new(inner.clone());
        crash_after(&faulty, n);
        let outcome = compact_table(&faulty).await;
        let finished = match &outcome {
            Ok(report) => {
                assert!(report.is_some(), "{what}: {report:?}");
                true
            }
            Err(_) => false,
        };
        let read = without_file_name(&keyed(reader.rows(&base, &["snapshot"]), false, &what));
        assert_rows_eq(&read, &before, &format!("{what}: right after"));
        // An upload cut short (its abort failing too) leaves no temporary file.
        let leftovers: Vec<_> = walkdir(&base)
            .into_iter()
            .filter(|p| p.contains(".tmp-hudi-sink-"))
            .collect();
        assert!(leftovers.is_empty(), "{what}: {leftovers:?}");

        // The rollback under the next lock, then the table reads as before and nothing is pending.
        let timeline = Timeline::load(inner.as_ref()).await.expect("timeline");
        let pending: Vec<InstantTime> = timeline.pending().iter().map(|i| i.time.clone()).collect();
        let rolled_back = roll_back(inner.as_ref()).await;
        assert_eq!(rolled_back, pending.len() as u64, "{what}: {pending:?}");
        pending_seen += pending.len();
        for t in &pending {
            assert!(files_of(&base, t).is_empty(), "{what}: files of {t} left");
            assert!(
                base.join(format!(".hoodie/.aux/hudi-sink/rolled-back/{t}"))
                    .exists(),
                "{what}: {t} retired"
            );
        }
        let timeline = Timeline::load(inner.as_ref()).await.expect("timeline");
        assert!(
            timeline.pending().is_empty(),
            "{what}: {:?}",
            timeline.pending()
        );
        let read = without_file_name(&keyed(reader.rows(&base, &["snapshot"]), false, &what));
        assert_rows_eq(&read, &before, &format!("{what}: after the rollback"));

        // A second compaction finishes the work (nothing is due when the first one committed).
        let second = compact_table(inner.as_ref())
            .await
            .unwrap_or_else(|e| panic!("{what}: second compaction: {e}"));
        // The fixture has deltacommits only: a completed commit is the compaction's.
        let committed_first = timeline
            .instants()
            .iter()
            .any(|i| i.is_completed() && i.action == Action::Commit);
        assert_eq!(second.is_some(), !committed_first, "{what}: {second:?}");
        let timeline = Timeline::load(inner.as_ref()).await.expect("timeline");
        assert!(timeline.pending().is_empty(), "{what}");
        let slices = latest_file_slices(inner.as_ref(), &timeline, None)
            .await
            .expect("slices");
        assert!(
            slices.iter().all(|s| s.log_files.is_empty()),
            "{what}: every slice compacted"
        );
        let read = keyed(reader.rows(&base, &["snapshot"]), false, &what);
        assert_rows_eq(
            &without_file_name(&read),
            &before,
            &format!("{what}: after"),
        );
        let ro = keyed(reader.rows(&base, &["read_optimized"]), false, &what);
        assert_rows_eq(&ro, &read, &format!("{what}: read-optimized"));
        std::fs::remove_dir_all(&base).expect("remove copy");
        if finished {
            break;
        }
        n += 1;
    }
    assert!(n > 10, "the compaction took only {n} storage calls");
    assert!(
        pending_seen > 3,
        "{pending_seen} crashes left a pending compaction"
    );
    eprintln!("crashed after each of the {n} storage calls of a compaction");
}

#[tokio::test]
async fn a_group_whose_rows_were_all_deleted_gets_an_empty_base_file_that_hides_the_old_slice() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("trips");
    let golden = golden_table_in(&mor_testdata_dir(), "v6_trips_8i1u");
    copy_dir(&golden.path, &path);
    let t = "20250401000000001";
    let log = append_log(
        &path,
        CHENNAI,
        t,
        &[],
        &[
            "3eeb61f7-c2b0-4636-99bd-5d7a5a1d2c04",
            "c8abbe79-8d89-47ea-b4ce-4d224bae5bfa",
        ],
    );
    complete_deltacommit(&path, t, CHENNAI, (&log.0, log.1));
    let mut reader = HudiReader::start();
    let before = keyed(reader.rows(&path, &["snapshot"]), false, "before");
    assert_eq!(before.len(), 6, "both Chennai rows deleted");
    assert!(before.keys().all(|(p, _)| p != CHENNAI.0));

    let report = compact_table(&LocalStorage::new(&path))
        .await
        .expect("compaction")
        .expect("due");
    assert_eq!(report.file_groups, 2, "Chennai and San Francisco");
    let empty = files_of(&path, &report.instant)
        .into_iter()
        .find(|name| name.starts_with(CHENNAI.1))
        .expect("Chennai's new base file");
    let commit = CommitMetadata::from_json(
        &std::fs::read(path.join(format!(".hoodie/{}.commit", report.instant))).expect("commit"),
    )
    .expect("json");
    let stat = commit
        .write_stats()
        .find(|s| s.file_id == CHENNAI.1)
        .expect("stat");
    assert_eq!((stat.num_writes, stat.num_deletes), (0, 2), "{empty}");
    let after = keyed(reader.rows(&path, &["snapshot"]), false, "after");
    assert_rows_eq(
        &without_file_name(&after),
        &without_file_name(&before),
        "snapshot",
    );
    // Read-optimized reads base files only: the empty one hides the two deleted rows.
    let read_optimized = keyed(reader.rows(&path, &["read_optimized"]), false, "ro");
    assert_rows_eq(&read_optimized, &after, "read-optimized");
}

/// Another engine's pending compaction blocks compaction; a deltacommit in flight does not (its append to a
/// compacted group conflicts at its own commit, `commit/conflict.rs`), and is left pending.
#[tokio::test]
async fn another_engines_compaction_blocks_compaction_and_a_write_in_flight_does_not() {
    let dir = tempfile::tempdir().expect("tempdir");
    for case in ["deltacommit", "foreign compaction"] {
        let path = dir.path().join(case.replace(' ', "-"));
        let golden = golden_table_in(&mor_testdata_dir(), "v6_trips_8i1u");
        copy_dir(&golden.path, &path);
        let hoodie = path.join(".hoodie");
        let pending = "20250401000000009";
        match case {
            "deltacommit" => {
                std::fs::write(hoodie.join(format!("{pending}.deltacommit.requested")), b"")
                    .expect("requested");
            }
            _ => {
                // A plan without this sink's mark: another engine's, never rolled back.
                let plan = CompactionPlan {
                    operations: Vec::new(),
                    extra_metadata: Default::default(),
                    version: 2,
                    preserve_hoodie_metadata: true,
                };
                std::fs::write(
                    hoodie.join(format!("{pending}.compaction.requested")),
                    plan.to_avro_bytes().expect("plan"),
                )
                .expect("plan");
            }
        }
        let storage = LocalStorage::new(&path);
        let compacted = compact_table(&storage).await.expect("compaction");
        assert_eq!(compacted.is_some(), case == "deltacommit", "{case}");
        let timeline = Timeline::load(&storage).await.expect("timeline");
        assert_eq!(
            timeline
                .pending()
                .iter()
                .map(|i| i.time.to_string())
                .collect::<Vec<_>>(),
            [pending],
            "{case}: left alone"
        );
        assert_eq!(roll_back(&storage).await, 0, "{case}");
    }
}

/// A Spark-written merge-on-read table, appended to by the sink (new trips: inserts into new file groups under
/// a deltacommit; Spark's table has no bucket index, so upserts are not possible there), then compacted (Spark's
/// logs merged): hudi-rs reads Spark's rows plus the new ones, row for row, before and after the compaction,
/// and the read-optimized view equals the snapshot once every log is compacted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spark_table_appended_to_by_the_sink_then_compacted_reads_row_exact() {
    use hudi_sink::write::TableWriter;
    use hudi_sink::write::WriteConfig;

    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("trips");
    let golden = golden_table_in(&mor_testdata_dir(), "v6_trips_8i1u");
    copy_dir(&golden.path, &path);
    // Spark left the timeline timezone unset (Hudi then assumes the JVM's zone); this writer makes UTC
    // instants and refuses a table that does not say UTC, as a user whose Spark runs in UTC would set it.
    let props_path = path.join(".hoodie/hoodie.properties");
    let mut text = std::fs::read_to_string(&props_path).expect("properties");
    text.push_str("hoodie.table.timeline.timezone=UTC\n");
    std::fs::write(&props_path, text).expect("properties");
    let mut reader = HudiReader::start();
    let before = keyed(reader.rows(&path, &["snapshot"]), true, "spark snapshot");
    assert!(!before.is_empty());

    // The table's own settings (its payload merges by commit time: no precombine field for the writer).
    let props: std::collections::BTreeMap<String, String> = [
        ("hoodie.table.name", "v6_trips_8i1u"),
        ("hoodie.database.name", "default"),
        ("hoodie.table.type", "MERGE_ON_READ"),
        ("hoodie.datasource.write.operation", "insert"),
        ("hoodie.datasource.write.recordkey.field", "uuid"),
        ("hoodie.datasource.write.partitionpath.field", "city"),
        ("hoodie.datasource.write.hive_style_partitioning", "true"),
        (
            "hoodie.datasource.write.keygenerator.class",
            "org.apache.hudi.keygen.SimpleKeyGenerator",
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .chain([("hoodie.base.path".to_string(), path.display().to_string())])
    .collect();
    let storage: Arc<dyn Storage> = Arc::new(LocalStorage::new(&path));
    let writer = TableWriter::create_or_open(
        storage.clone(),
        Arc::new(SystemClock),
        WriteConfig::from_properties(props).expect("config"),
        None,
    )
    .await
    .expect("open the Spark table");
    let new_trips = [
        json!({"ts": 1_700_000_000_001_i64, "uuid": "sink-1", "rider": "rider-S1", "driver": "driver-S1", "fare": 11.5, "city": "san_francisco"}),
        json!({"ts": 1_700_000_000_002_i64, "uuid": "sink-2", "rider": "rider-S2", "driver": "driver-S2", "fare": 22.25, "city": "chennai"}),
        json!({"ts": 1_700_000_000_003_i64, "uuid": "sink-3", "rider": "rider-S3", "driver": "driver-S3", "fare": 33.0, "city": "new_city"}),
    ];
    let schema = writer.schema();
    let mut decoder = RecordDecoder::try_new(schema.data.clone(), &schema.avro).expect("decoder");
    for trip in &new_trips {
        decoder.append(trip.to_string().as_bytes()).expect("row");
    }
    let batch = decoder.finish().expect("batch");
    let written = writer.write(&[batch]).await.expect("append");
    assert!(
        path.join(format!(".hoodie/{}.deltacommit", written.instant))
            .exists(),
        "the sink's write is a deltacommit"
    );

    let appended = keyed(reader.rows(&path, &["snapshot"]), true, "appended");
    let mut expected = before.clone();
    for trip in &new_trips {
        let city = trip["city"].as_str().expect("city");
        let uuid = trip["uuid"].as_str().expect("uuid");
        let row = appended
            .get(&(format!("city={city}"), uuid.to_string()))
            .unwrap_or_else(|| panic!("{uuid} missing after the append"));
        for field in ["ts", "uuid", "rider", "driver", "fare", "city"] {
            assert_eq!(row[field], trip[field], "{uuid}.{field}");
        }
        assert_eq!(
            row["_hoodie_commit_time"],
            json!(written.instant.to_string())
        );
        expected.insert((format!("city={city}"), uuid.to_string()), row.clone());
    }
    assert_rows_eq(
        &appended,
        &expected,
        "Spark's rows and the sink's after the append",
    );

    let report = compact_table(storage.as_ref())
        .await
        .expect("compaction")
        .expect("Spark's logs are due");
    assert!(report.file_groups > 0);
    let compacted = keyed(reader.rows(&path, &["snapshot"]), true, "compacted");
    assert_rows_eq(&compacted, &appended, "snapshot after the compaction");
    let read_optimized = keyed(reader.rows(&path, &["read_optimized"]), true, "ro");
    assert_rows_eq(
        &read_optimized,
        &compacted,
        "read-optimized after the compaction",
    );
    // Time travel to the append still reads the table as it was then.
    let as_of = keyed(
        reader.rows(&path, &["as_of", written.instant.as_str()]),
        true,
        "as of the append",
    );
    assert_rows_eq(&as_of, &appended, "as of the append");
}
