//! CLEAN on a merge-on-read table: Spark's `v6_trips_8i1u` (deltacommit D1 wrote three base files, D2 a log
//! file of group d0304c53 in `city=san_francisco`) gets a hand-written compaction C3 of that group (the
//! slice merged by `log_file::merge`, written as a new base file; `.compaction.requested` plan, empty
//! `.compaction.inflight`, `<C3>.commit` with operation `COMPACT`), then a deltacommit D4 appending a log
//! (one update) to the new slice. A clean with `KEEP_LATEST_COMMITS` and one retained commit (ECR = D4):
//! - deletes the old slice whole, the base file of D1 and Spark's log, and nothing else;
//! - records them in the plan (full paths, base file first) and the metadata (names), as fastavro reads
//!   the files, with the ECR `{D4, "deltacommit", "COMPLETED"}`;
//! - leaves the snapshot hudi-rs reads unchanged row for row, and the time travel to D4 (the ECR) and to
//!   C3 (the newest slice before the ECR stays); the compacted table reads as Spark's did, plus the update;
//! - leaves the library's latest slices the same (the compacted base with D4's log).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use arrow_array::{ArrayRef, RecordBatch, StringArray};
use bytes::Bytes;
use hudi_sink::avro::{encode_container, AvroValue};
use hudi_sink::clock::ManualClock;
use hudi_sink::lock::memory::MemoryLock;
use hudi_sink::lock::{LeaseOptions, Lock};
use hudi_sink::log_file::{
    merge_file_slice, scan_log_files, CommittedInstants, LogFileName, LogFileWriter, MergeMode,
};
use hudi_sink::record::decode::RecordDecoder;
use hudi_sink::schema::arrow::avro_to_arrow;
use hudi_sink::schema::avro::AvroSchema;
use hudi_sink::schema::meta::with_meta_fields;
use hudi_sink::services::clean::{self, CleanMemo};
use hudi_sink::services::commits::CommitCache;
use hudi_sink::services::{ServiceContext, ServicesConfig};
use hudi_sink::storage::local::LocalStorage;
use hudi_sink::storage::Storage;
use hudi_sink::table::file_name::WriteToken;
use hudi_sink::table::instant::InstantTime;
use hudi_sink::table::timeline::{latest_file_slices, Timeline};
use serde_json::{json, Value};

use crate::common::gen::with_column;
use crate::common::python::{python, read_rows};
use crate::common::rows::{keyed, Rows};
use crate::common::{golden_table_in, mor_testdata_dir, workspace_root};

const D1: &str = "20250331030642808";
const D2: &str = "20250331030645735";
const C3: &str = "20250401000000000";
const D4: &str = "20250401000001000";
const PARTITION: &str = "city=san_francisco";
const GROUP: &str = "d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0";
const OLD_BASE: &str = "d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0_0-13-60_20250331030642808.parquet";
const OLD_LOG: &str = ".d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0_20250331030642808.log.1_0-26-85";

/// The 0.14 `HoodieCompactionPlan` schema (the operation fields Spark writes).
const COMPACTION_PLAN_SCHEMA: &str = r#"{"type":"record","name":"HoodieCompactionPlan","namespace":"org.apache.hudi.avro.model",
  "fields":[
    {"name":"operations","type":["null",{"type":"array","items":{"type":"record","name":"HoodieCompactionOperation",
      "fields":[
        {"name":"baseInstantTime","type":["null","string"],"default":null},
        {"name":"deltaFilePaths","type":["null",{"type":"array","items":"string"}],"default":null},
        {"name":"dataFilePath","type":["null","string"],"default":null},
        {"name":"fileId","type":["null","string"],"default":null},
        {"name":"partitionPath","type":["null","string"],"default":null},
        {"name":"metrics","type":["null",{"type":"map","values":"double"}],"default":null},
        {"name":"bootstrapFilePath","type":["null","string"],"default":null}]}}],"default":null},
    {"name":"extraMetadata","type":["null",{"type":"map","values":"string"}],"default":null},
    {"name":"version","type":["int","null"],"default":1}]}"#;

/// A version-2 compaction plan (file names) of one slice.
fn compaction_plan(
    partition: &str,
    file_id: &str,
    base: &str,
    data: &str,
    logs: &[&str],
) -> Vec<u8> {
    let some = |v| AvroValue::Union(1, Box::new(v));
    let null = || AvroValue::Union(0, Box::new(AvroValue::Null));
    let op = AvroValue::record([
        ("baseInstantTime", some(AvroValue::string(base))),
        ("deltaFilePaths", some(AvroValue::string_array(logs))),
        ("dataFilePath", some(AvroValue::string(data))),
        ("fileId", some(AvroValue::string(file_id))),
        ("partitionPath", some(AvroValue::string(partition))),
        ("metrics", null()),
        ("bootstrapFilePath", null()),
    ]);
    let plan = AvroValue::record([
        ("operations", some(AvroValue::Array(vec![op]))),
        ("extraMetadata", null()),
        ("version", AvroValue::Union(0, Box::new(AvroValue::Int(2)))),
    ]);
    encode_container(COMPACTION_PLAN_SCHEMA, &plan).expect("plan")
}

fn properties(table: &Path) -> std::collections::BTreeMap<String, String> {
    let text = std::fs::read_to_string(table.join(".hoodie/hoodie.properties")).expect("props");
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.replace("\\:", ":").replace("\\=", "=")))
        .collect()
}

fn schema_text(table: &Path) -> String {
    let last: Value = serde_json::from_slice(
        &std::fs::read(table.join(format!(".hoodie/{D2}.deltacommit"))).expect("deltacommit"),
    )
    .expect("json");
    last["extraMetadata"]["schema"]
        .as_str()
        .expect("schema")
        .to_string()
}

/// Compaction C3 of the group's slice D1 (base + Spark's log), as Spark completes one.
fn compact(table: &Path) -> String {
    let dir = table.join(PARTITION);
    let committed = CommittedInstants::new(
        [D1, D2].map(|t| InstantTime::parse(t).expect("t")),
        Some(InstantTime::parse(D1).expect("t")),
    );
    let mode = MergeMode::from_table_properties(&properties(table)).expect("mode");
    let log_bytes = std::fs::read(dir.join(OLD_LOG)).expect("log");
    let log = scan_log_files([(OLD_LOG, log_bytes.as_slice())], &committed, &mode).expect("scan");
    let base = Bytes::from(std::fs::read(dir.join(OLD_BASE)).expect("base"));
    let batches: Vec<RecordBatch> = merge_file_slice(Some(base), log)
        .expect("merge")
        .collect::<Result<_, _>>()
        .expect("merged");
    let name = format!("{GROUP}_0-1-0_{C3}.parquet");
    let file = std::fs::File::create(dir.join(&name)).expect("create");
    let schema = batches[0].schema();
    let mut writer = parquet::arrow::ArrowWriter::try_new(file, schema, None).expect("writer");
    let mut rows = 0;
    for batch in &batches {
        let names: ArrayRef = Arc::new(StringArray::from(vec![name.as_str(); batch.num_rows()]));
        writer
            .write(&with_column(batch, "_hoodie_file_name", names))
            .expect("write");
        rows += batch.num_rows();
    }
    writer.close().expect("close");
    let size = std::fs::metadata(dir.join(&name)).expect("size").len();
    let hoodie = table.join(".hoodie");
    std::fs::write(
        hoodie.join(format!("{C3}.compaction.requested")),
        compaction_plan(PARTITION, GROUP, D1, OLD_BASE, &[OLD_LOG]),
    )
    .expect("requested");
    std::fs::write(hoodie.join(format!("{C3}.compaction.inflight")), b"").expect("inflight");
    let commit = json!({
        "partitionToWriteStats": {PARTITION: [{
            "fileId": GROUP, "path": format!("{PARTITION}/{name}"), "prevCommit": D1,
            "numWrites": rows, "numDeletes": 0, "numUpdateWrites": 1, "numInserts": 0,
            "totalWriteBytes": size, "totalWriteErrors": 0, "partitionPath": PARTITION,
            "totalLogRecords": 1, "totalLogFilesCompacted": 1, "totalLogSizeCompacted": log_bytes.len(),
            "totalUpdatedRecordsCompacted": 1, "totalLogBlocks": 1, "totalCorruptLogBlock": 0,
            "totalRollbackBlocks": 0, "fileSizeInBytes": size,
        }]},
        "compacted": true,
        "extraMetadata": {"schema": schema_text(table)},
        "operationType": "COMPACT",
    });
    std::fs::write(
        hoodie.join(format!("{C3}.commit")),
        serde_json::to_vec_pretty(&commit).expect("json"),
    )
    .expect("commit");
    name
}

/// Deltacommit D4: one log on the compacted slice updating `uuid`'s fare; returns the log's name.
fn update(table: &Path, uuid: &str, fare: f64) -> String {
    let text = schema_text(table);
    let schema = AvroSchema::parse(&text).expect("schema");
    let block_schema = with_meta_fields(&schema);
    let arrow = Arc::new(avro_to_arrow(&block_schema).expect("arrow"));
    let mut decoder = RecordDecoder::try_new(arrow, &block_schema).expect("decoder");
    let row = json!({
        "_hoodie_commit_time": D4, "_hoodie_commit_seqno": format!("{D4}_0_0"),
        "_hoodie_record_key": uuid, "_hoodie_partition_path": PARTITION,
        "_hoodie_file_name": GROUP, "ts": 1_700_000_000_000i64, "uuid": uuid, "rider": "r",
        "driver": "d", "fare": fare, "city": "san_francisco",
    });
    decoder.append(row.to_string().as_bytes()).expect("row");
    let batch = decoder.finish().expect("batch");
    let bytes = LogFileWriter::new(InstantTime::parse(D4).expect("t"), GROUP, &schema)
        .with_records(&[batch])
        .expect("records")
        .finish()
        .expect("log");
    let name = LogFileName::first(
        GROUP,
        InstantTime::parse(C3).expect("t"),
        WriteToken::new(0, 3, 9),
    )
    .expect("name")
    .file_name();
    std::fs::write(table.join(PARTITION).join(&name), &bytes).expect("write");
    let hoodie = table.join(".hoodie");
    std::fs::write(hoodie.join(format!("{D4}.deltacommit.requested")), b"").expect("requested");
    std::fs::write(hoodie.join(format!("{D4}.deltacommit.inflight")), b"").expect("inflight");
    let commit = json!({
        "partitionToWriteStats": {PARTITION: [{
            "fileId": GROUP, "path": format!("{PARTITION}/{name}"), "prevCommit": C3,
            "numWrites": 1, "numDeletes": 0, "numUpdateWrites": 1, "numInserts": 0,
            "totalWriteBytes": bytes.len(), "totalWriteErrors": 0, "partitionPath": PARTITION,
            "fileSizeInBytes": bytes.len(), "logVersion": 1, "logOffset": 0,
            "baseFile": format!("{GROUP}_0-1-0_{C3}.parquet"), "logFiles": [name],
        }]},
        "compacted": false,
        "extraMetadata": {"schema": text},
        "operationType": "UPSERT",
    });
    std::fs::write(
        hoodie.join(format!("{D4}.deltacommit")),
        serde_json::to_vec_pretty(&commit).expect("json"),
    )
    .expect("commit");
    name
}

/// What fastavro (`tests/python/avro_read.py`) reads from the one-record container `file`.
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
    let records = out["records"].as_array().expect("records");
    assert_eq!(records.len(), 1, "{}", file.display());
    records[0].clone()
}

/// The latest slices as (partition, file id, base file, [log files]).
async fn slices(storage: &LocalStorage) -> Vec<(String, String, String, Vec<String>)> {
    let timeline = Timeline::load(storage).await.expect("timeline");
    latest_file_slices(storage, &timeline, None)
        .await
        .expect("slices")
        .into_iter()
        .map(|s| {
            let logs = s.log_files.iter().map(|l| l.name.file_name()).collect();
            (s.partition_path, s.file_id, s.file_name, logs)
        })
        .collect()
}

#[tokio::test]
async fn clean_deletes_a_compacted_slice_with_its_logs_and_keeps_every_read() {
    let golden = golden_table_in(&mor_testdata_dir(), "v6_trips_8i1u");
    let table = golden.path.clone();
    let spark = keyed(read_rows(&table, "hudi", &["snapshot"]), false, "Spark");
    assert_eq!(spark.len(), 8);

    let compacted = compact(&table);
    let as_of_c3 = keyed(read_rows(&table, "hudi", &["as_of", C3]), false, "as of C3");
    // The compaction changed only the file names of the group's rows.
    let without_names = |rows: &Rows| -> Rows {
        rows.iter()
            .map(|(k, r)| {
                let mut r = r.clone();
                r.remove("_hoodie_file_name");
                (k.clone(), r)
            })
            .collect()
    };
    assert_eq!(without_names(&as_of_c3), without_names(&spark), "compacted");
    assert_ne!(
        as_of_c3, spark,
        "the group's rows name the compacted base file"
    );

    let (key, row) = as_of_c3
        .iter()
        .find(|((p, _), _)| p == PARTITION)
        .expect("a row of the group");
    let uuid = key.1.clone();
    let new_log = update(&table, &uuid, 123.5);
    let before = keyed(read_rows(&table, "hudi", &["snapshot"]), false, "before");
    let updated = &before[key];
    assert_eq!(updated["fare"], json!(123.5));
    assert_eq!(updated["_hoodie_commit_time"], json!(D4));
    assert_ne!(updated, row);
    let as_of_d4 = keyed(read_rows(&table, "hudi", &["as_of", D4]), false, "as of D4");
    assert_eq!(as_of_d4, before);

    let storage = LocalStorage::new(&table);
    let slices_before = slices(&storage).await;
    assert!(slices_before.contains(&(
        PARTITION.to_string(),
        GROUP.to_string(),
        compacted.clone(),
        vec![new_log.clone()]
    )));

    // The clean, as the coordinator runs it.
    let lock = MemoryLock::new("trips", LeaseOptions::hudi(Duration::from_secs(30)));
    let guard = lock.acquire(Duration::from_secs(1)).await.expect("lock");
    let clock = ManualClock::new(1_775_000_000_000);
    let config = ServicesConfig {
        commits_retained: 1,
        ..ServicesConfig::default()
    };
    let ctx = ServiceContext {
        storage: &storage,
        guard: &guard,
        clock: &clock,
        config: &config,
    };
    let timeline = Timeline::load(&storage).await.expect("timeline");
    let outcome = clean::run(&ctx, &timeline, &CommitCache::new(), &CleanMemo::default())
        .await
        .expect("clean");
    guard.release().await.expect("release");
    assert_eq!(outcome.files_deleted, 2, "{outcome:?}");
    let instant = outcome.instant.expect("a clean instant").to_string();
    let dir = table.join(PARTITION);
    assert!(!dir.join(OLD_BASE).exists() && !dir.join(OLD_LOG).exists());
    assert!(dir.join(&compacted).exists() && dir.join(&new_log).exists());
    assert!(dir.join(".hoodie_partition_metadata").exists());
    // Nothing else changed: the other partitions' base files stay.
    assert_eq!(crate::common::parquet_files(&table).len(), 3);

    // Every read inside the retention is unchanged, row for row.
    let after = keyed(read_rows(&table, "hudi", &["snapshot"]), false, "after");
    assert_eq!(after, before, "snapshot");
    assert_eq!(
        keyed(
            read_rows(&table, "hudi", &["as_of", D4]),
            false,
            "as of D4 after"
        ),
        as_of_d4,
        "as of the ECR"
    );
    assert_eq!(
        keyed(
            read_rows(&table, "hudi", &["as_of", C3]),
            false,
            "as of C3 after"
        ),
        as_of_c3,
        "as of the newest slice before the ECR"
    );
    assert_eq!(
        slices(&storage).await,
        slices_before,
        "the library's slices"
    );

    // The clean's files as fastavro reads them.
    let hoodie = table.join(".hoodie");
    let plan = fastavro(&hoodie.join(format!("{instant}.clean.requested")));
    assert_eq!(
        fastavro(&hoodie.join(format!("{instant}.clean.inflight"))),
        plan
    );
    let base_uri = storage.base_uri().trim_end_matches('/').to_string();
    let policy = "KEEP_LATEST_COMMITS";
    assert_eq!(
        plan,
        json!({
            "earliestInstantToRetain": {"timestamp": D4, "action": "deltacommit", "state": "COMPLETED"},
            "lastCompletedCommitTimestamp": D4,
            "policy": policy,
            "filesToBeDeletedPerPartition": {},
            "version": 2,
            "filePathsToBeDeletedPerPartition": {PARTITION: [
                {"filePath": format!("{base_uri}/{PARTITION}/{OLD_BASE}"), "isBootstrapBaseFile": false},
                {"filePath": format!("{base_uri}/{PARTITION}/{OLD_LOG}"), "isBootstrapBaseFile": false},
            ]},
            "partitionsToBeDeleted": [],
            "extraMetadata": {clean::POLICY_KEY: policy},
        }),
        "clean plan"
    );
    let metadata = fastavro(&hoodie.join(format!("{instant}.clean")));
    assert_eq!(metadata["totalFilesDeleted"], json!(2));
    assert_eq!(metadata["earliestCommitToRetain"], json!(D4));
    assert_eq!(
        metadata["partitionMetadata"],
        json!({PARTITION: {
            "partitionPath": PARTITION,
            "policy": policy,
            "deletePathPatterns": [OLD_BASE, OLD_LOG],
            "successDeleteFiles": [OLD_BASE, OLD_LOG],
            "failedDeleteFiles": [],
            "isPartitionDeleted": false,
        }}),
        "clean metadata"
    );
}
