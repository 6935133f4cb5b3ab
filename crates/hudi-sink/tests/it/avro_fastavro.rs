//! The timeline's Avro files as an independent reader sees them: every kind this crate writes (clean plan,
//! clean metadata, clustering plan) is read by fastavro (`tests/python/avro_read.py`) under Hudi's own reader
//! schemas, those of 0.14 and of 1.x (written out below from the `.avsc` files of apache/hudi), and every
//! field value is compared. fastavro resolves as Java Avro does: fields by name, defaults for fields the
//! writer lacks, record full names must match. Files fastavro writes back (codec null and deflate) must
//! decode to the same typed records.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use hudi_sink::table::records::{
    ActionInstant, CleanFileInfo, CleanMetadata, CleanPartitionMetadata, CleanerPlan,
    ClusteringGroup, ClusteringPlan, ClusteringStrategy, RequestedReplaceMetadata, SliceInfo,
};
use serde_json::{json, Value};

use crate::common;

/// `HoodieCleanerPlan` as of Hudi 0.14 (no `extraMetadata`).
const CLEANER_PLAN_0_14: &str = r#"{"namespace": "org.apache.hudi.avro.model", "type": "record",
  "name": "HoodieCleanerPlan", "fields": [
  {"name": "earliestInstantToRetain", "type": ["null", {"type": "record", "name": "HoodieActionInstant",
    "fields": [{"name": "timestamp", "type": "string"}, {"name": "action", "type": "string"},
               {"name": "state", "type": "string"}]}], "default": null},
  {"name": "lastCompletedCommitTimestamp", "type": "string", "default": ""},
  {"name": "policy", "type": "string"},
  {"name": "filesToBeDeletedPerPartition", "type": ["null", {"type": "map", "values": {"type": "array",
    "items": {"name": "filePath", "type": "string"}}}], "default": null},
  {"name": "version", "type": ["int", "null"], "default": 1},
  {"name": "filePathsToBeDeletedPerPartition", "doc": "This field replaces the field filesToBeDeletedPerPartition",
   "type": ["null", {"type": "map", "values": {"type": "array", "items": {"name": "HoodieCleanFileInfo",
     "type": "record", "fields": [{"name": "filePath", "type": ["null", "string"], "default": null},
                                  {"name": "isBootstrapBaseFile", "type": ["null", "boolean"], "default": null}]}}}],
   "default": null},
  {"name": "partitionsToBeDeleted", "doc": "partitions to be deleted",
   "type": ["null", {"type": "array", "items": "string"}], "default": null}
]}"#;

/// `schema` with `from` replaced by `to` (which must occur once).
fn edit(schema: &str, from: &str, to: &str) -> String {
    assert_eq!(schema.matches(from).count(), 1, "{from}");
    schema.replace(from, to)
}

/// `HoodieCleanerPlan` as of Hudi 1.x (adds `extraMetadata`).
fn cleaner_plan_1x() -> String {
    edit(
        CLEANER_PLAN_0_14,
        r#""default": null}
]}"#,
        r#""default": null},
  {"name": "extraMetadata", "type": ["null", {"type": "map", "values": "string", "default": null}],
   "default": null}
]}"#,
    )
}

/// `HoodieCleanPartitionMetadata` (unchanged from 0.14 to 1.x).
const CLEAN_PARTITION_METADATA: &str = r#"{"namespace": "org.apache.hudi.avro.model", "type": "record",
  "name": "HoodieCleanPartitionMetadata", "fields": [
  {"name": "partitionPath", "type": "string"},
  {"name": "policy", "type": "string"},
  {"name": "deletePathPatterns", "type": {"type": "array", "items": "string"}},
  {"name": "successDeleteFiles", "type": {"type": "array", "items": "string"}},
  {"name": "failedDeleteFiles", "type": {"type": "array", "items": "string"}},
  {"name": "isPartitionDeleted", "type": ["null", "boolean"], "default": null}
]}"#;

/// `HoodieCleanMetadata` as of Hudi 0.14 (its partition record inlined where the `.avsc` imports it).
fn clean_metadata_0_14() -> String {
    format!(
        r#"{{"namespace": "org.apache.hudi.avro.model", "type": "record", "name": "HoodieCleanMetadata",
  "fields": [
  {{"name": "startCleanTime", "type": "string"}},
  {{"name": "timeTakenInMillis", "type": "long"}},
  {{"name": "totalFilesDeleted", "type": "int"}},
  {{"name": "earliestCommitToRetain", "type": "string"}},
  {{"name": "lastCompletedCommitTimestamp", "type": "string", "default": ""}},
  {{"name": "partitionMetadata", "type": {{"type": "map", "values": {CLEAN_PARTITION_METADATA}}}}},
  {{"name": "version", "type": ["int", "null"], "default": 1}},
  {{"name": "bootstrapPartitionMetadata", "type": ["null", {{"type": "map",
    "values": "HoodieCleanPartitionMetadata", "default": null}}], "default": null}}
]}}"#
    )
}

/// `HoodieCleanMetadata` as of Hudi 1.x / master (adds `policy` first and `extraMetadata`).
fn clean_metadata_1x() -> String {
    let with_policy = edit(
        &clean_metadata_0_14(),
        r#""fields": [
  {"name": "startCleanTime""#,
        r#""fields": [
  {"name": "policy", "type": "string", "default": ""},
  {"name": "startCleanTime""#,
    );
    edit(
        &with_policy,
        r#""default": null}], "default": null}
]}"#,
        r#""default": null}], "default": null},
  {"name": "extraMetadata", "type": ["null", {"type": "map", "values": "string", "default": null}],
   "default": null}
]}"#,
    )
}

/// `HoodieRequestedReplaceMetadata` and its parts as Hudi 0.14 writes them (Spark's writer schema in the
/// golden insert-overwrite table, without the `avro.java.string` attributes).
const REQUESTED_REPLACE_0_14: &str = r#"{"type": "record", "name": "HoodieRequestedReplaceMetadata",
  "namespace": "org.apache.hudi.avro.model", "fields": [
  {"name": "operationType", "type": ["null", "string"], "default": null},
  {"name": "clusteringPlan", "type": ["null", {"type": "record", "name": "HoodieClusteringPlan", "fields": [
    {"name": "inputGroups", "type": ["null", {"type": "array", "items": {"type": "record",
      "name": "HoodieClusteringGroup", "fields": [
      {"name": "slices", "type": ["null", {"type": "array", "items": {"type": "record", "name": "HoodieSliceInfo",
        "fields": [
        {"name": "dataFilePath", "type": ["null", "string"], "default": null},
        {"name": "deltaFilePaths", "type": ["null", {"type": "array", "items": "string"}], "default": null},
        {"name": "fileId", "type": ["null", "string"]},
        {"name": "partitionPath", "type": ["null", "string"], "default": null},
        {"name": "bootstrapFilePath", "type": ["null", "string"], "default": null},
        {"name": "version", "type": ["int", "null"], "default": 1}]}}], "default": null},
      {"name": "metrics", "type": ["null", {"type": "map", "values": "double"}], "default": null},
      {"name": "numOutputFileGroups", "type": ["int", "null"], "default": 1},
      {"name": "extraMetadata", "type": ["null", {"type": "map", "values": "string"}], "default": null},
      {"name": "version", "type": ["int", "null"], "default": 1}]}}], "default": null},
    {"name": "strategy", "type": ["null", {"type": "record", "name": "HoodieClusteringStrategy", "fields": [
      {"name": "strategyClassName", "type": ["null", "string"], "default": null},
      {"name": "strategyParams", "type": ["null", {"type": "map", "values": "string"}], "default": null},
      {"name": "version", "type": ["int", "null"], "default": 1}]}], "default": null},
    {"name": "extraMetadata", "type": ["null", {"type": "map", "values": "string"}], "default": null},
    {"name": "version", "type": ["int", "null"], "default": 1},
    {"name": "preserveHoodieMetadata", "type": ["null", "boolean"], "default": null}]}], "default": null},
  {"name": "extraMetadata", "type": ["null", {"type": "map", "values": "string"}], "default": null},
  {"name": "version", "type": ["int", "null"], "default": 1}
]}"#;

/// The 1.x clustering plan adds `missingSchedulePartitions`.
fn requested_replace_1x() -> String {
    edit(
        REQUESTED_REPLACE_0_14,
        r#"{"name": "preserveHoodieMetadata", "type": ["null", "boolean"], "default": null}"#,
        r#"{"name": "preserveHoodieMetadata", "type": ["null", "boolean"], "default": null},
    {"name": "missingSchedulePartitions", "type": ["null", {"type": "array", "items": "string"}],
     "default": null}"#,
    )
}

fn cleaner_plan() -> CleanerPlan {
    let file = |path: &str| CleanFileInfo {
        file_path: path.to_string(),
        is_bootstrap_base_file: false,
    };
    CleanerPlan {
        earliest_instant_to_retain: Some(ActionInstant {
            timestamp: "20240418172804498".into(),
            action: "commit".into(),
            state: "COMPLETED".into(),
        }),
        last_completed_commit_timestamp: "20240418173000000".into(),
        policy: "KEEP_LATEST_COMMITS".into(),
        version: 2,
        file_paths_to_be_deleted_per_partition: BTreeMap::from([
            (
                "10".to_string(),
                vec![
                    file("/t/10/97de74b1-0_0-8-14_20240418172802262.parquet"),
                    file("/t/10/aaaa0000-0_0-8-14_20240418172802262.parquet"),
                ],
            ),
            (
                "".to_string(),
                vec![file("/t/76e0556b-0_1-8-15_20240418172802262.parquet")],
            ),
        ]),
        partitions_to_be_deleted: vec!["40".into()],
        extra_metadata: BTreeMap::from([("savepoints".to_string(), "".to_string())]),
    }
}

fn cleaner_plan_json() -> Value {
    json!({
        "earliestInstantToRetain": {
            "timestamp": "20240418172804498", "action": "commit", "state": "COMPLETED"
        },
        "lastCompletedCommitTimestamp": "20240418173000000",
        "policy": "KEEP_LATEST_COMMITS",
        "filesToBeDeletedPerPartition": {},
        "version": 2,
        "filePathsToBeDeletedPerPartition": {
            "10": [
                {"filePath": "/t/10/97de74b1-0_0-8-14_20240418172802262.parquet", "isBootstrapBaseFile": false},
                {"filePath": "/t/10/aaaa0000-0_0-8-14_20240418172802262.parquet", "isBootstrapBaseFile": false}
            ],
            "": [
                {"filePath": "/t/76e0556b-0_1-8-15_20240418172802262.parquet", "isBootstrapBaseFile": false}
            ]
        },
        "partitionsToBeDeleted": ["40"],
        "extraMetadata": {"savepoints": ""}
    })
}

fn clean_metadata() -> CleanMetadata {
    CleanMetadata {
        policy: "KEEP_LATEST_COMMITS".into(),
        start_clean_time: "20240418173100000".into(),
        time_taken_in_millis: 5_000_000_000,
        total_files_deleted: 3,
        earliest_commit_to_retain: "20240418172804498".into(),
        last_completed_commit_timestamp: "20240418173000000".into(),
        partition_metadata: BTreeMap::from([(
            "10".to_string(),
            CleanPartitionMetadata {
                partition_path: "10".into(),
                policy: "KEEP_LATEST_COMMITS".into(),
                delete_path_patterns: vec!["a.parquet".into(), "b.parquet".into()],
                success_delete_files: vec!["a.parquet".into()],
                failed_delete_files: vec!["b.parquet".into()],
                is_partition_deleted: true,
            },
        )]),
        version: 2,
        extra_metadata: BTreeMap::from([("k".to_string(), "v".to_string())]),
    }
}

fn clean_metadata_json() -> Value {
    json!({
        "policy": "KEEP_LATEST_COMMITS",
        "startCleanTime": "20240418173100000",
        "timeTakenInMillis": 5_000_000_000_i64,
        "totalFilesDeleted": 3,
        "earliestCommitToRetain": "20240418172804498",
        "lastCompletedCommitTimestamp": "20240418173000000",
        "partitionMetadata": {
            "10": {
                "partitionPath": "10",
                "policy": "KEEP_LATEST_COMMITS",
                "deletePathPatterns": ["a.parquet", "b.parquet"],
                "successDeleteFiles": ["a.parquet"],
                "failedDeleteFiles": ["b.parquet"],
                "isPartitionDeleted": true
            }
        },
        "version": 2,
        "bootstrapPartitionMetadata": null,
        "extraMetadata": {"k": "v"}
    })
}

fn clustering_plan() -> RequestedReplaceMetadata {
    RequestedReplaceMetadata {
        operation_type: "CLUSTER".into(),
        clustering_plan: Some(ClusteringPlan {
            input_groups: vec![ClusteringGroup {
                slices: vec![SliceInfo {
                    data_file_path: "/t/10/97de74b1-0_0-8-14_20240418172802262.parquet".into(),
                    delta_file_paths: vec![],
                    file_id: "97de74b1-0".into(),
                    partition_path: "10".into(),
                    bootstrap_file_path: String::new(),
                    version: 1,
                }],
                metrics: BTreeMap::from([
                    ("TOTAL_IO_MB".to_string(), 0.5),
                    ("TOTAL_IO_READ_MB".to_string(), 0.25),
                ]),
                num_output_file_groups: 1,
                extra_metadata: BTreeMap::new(),
                version: 1,
            }],
            strategy: Some(ClusteringStrategy {
                strategy_class_name:
                    "org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy"
                        .into(),
                strategy_params: BTreeMap::from([(
                    "hoodie.clustering.plan.strategy.sort.columns".to_string(),
                    "id".to_string(),
                )]),
                version: 1,
            }),
            extra_metadata: BTreeMap::from([("a".to_string(), "b".to_string())]),
            version: 1,
            preserve_hoodie_metadata: true,
            missing_schedule_partitions: vec!["20".into()],
        }),
        extra_metadata: BTreeMap::new(),
        version: 1,
    }
}

fn clustering_plan_json() -> Value {
    json!({
        "operationType": "CLUSTER",
        "clusteringPlan": {
            "inputGroups": [{
                "slices": [{
                    "dataFilePath": "/t/10/97de74b1-0_0-8-14_20240418172802262.parquet",
                    "deltaFilePaths": [],
                    "fileId": "97de74b1-0",
                    "partitionPath": "10",
                    "bootstrapFilePath": "",
                    "version": 1
                }],
                "metrics": {"TOTAL_IO_MB": 0.5, "TOTAL_IO_READ_MB": 0.25},
                "numOutputFileGroups": 1,
                "extraMetadata": {},
                "version": 1
            }],
            "strategy": {
                "strategyClassName":
                    "org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy",
                "strategyParams": {"hoodie.clustering.plan.strategy.sort.columns": "id"},
                "version": 1
            },
            "extraMetadata": {"a": "b"},
            "version": 1,
            "preserveHoodieMetadata": true,
            "missingSchedulePartitions": ["20"]
        },
        "extraMetadata": {},
        "version": 1
    })
}

/// `value` without the fields at the dotted `paths` (what a reader schema without them yields).
fn without(mut value: Value, paths: &[&str]) -> Value {
    for path in paths {
        let mut at = &mut value;
        let mut parts = path.split('.').peekable();
        while let Some(part) = parts.next() {
            let object = at.as_object_mut().expect("object on the path");
            if parts.peek().is_none() {
                assert!(object.shift_remove(part).is_some(), "no field {path}");
                break;
            }
            at = object.get_mut(part).expect("field on the path");
        }
    }
    value
}

/// Runs `avro_read.py` on `file` (with `reader_schema` if given) and returns its JSON output.
fn fastavro(file: &Path, reader_schema: Option<&str>, rewrite: Option<(&Path, &str)>) -> Value {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = Command::new(common::python::python());
    cmd.arg(common::workspace_root().join("tests/python/avro_read.py"))
        .arg(file);
    if let Some(schema) = reader_schema {
        let path = dir.path().join("reader.avsc");
        std::fs::write(&path, schema).expect("write reader schema");
        cmd.arg("--reader-schema").arg(path);
    }
    if let Some((out, codec)) = rewrite {
        cmd.arg("--rewrite").arg(out).arg("--codec").arg(codec);
    }
    let out = cmd.output().expect("run python");
    assert!(
        out.status.success(),
        "fastavro failed on {}:\n{}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("avro_read.py prints JSON")
}

/// The single record fastavro read, after checking the header is Java's (codec null, only `avro.schema`).
fn single_record(out: &Value) -> Value {
    assert_eq!(out["codec"], "null");
    assert_eq!(out["metadata_keys"], json!(["avro.schema"]));
    let records = out["records"].as_array().expect("records");
    assert_eq!(records.len(), 1, "{out}");
    records[0].clone()
}

struct Case {
    name: &'static str,
    bytes: Vec<u8>,
    full: Value,
    /// (reader name, reader schema, fields the reader does not have)
    readers: Vec<(&'static str, String, Vec<&'static str>)>,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "clean.requested",
            bytes: cleaner_plan().to_avro_bytes().expect("encode plan"),
            full: cleaner_plan_json(),
            readers: vec![
                ("0.14", CLEANER_PLAN_0_14.to_string(), vec!["extraMetadata"]),
                ("1.x", cleaner_plan_1x(), vec![]),
            ],
        },
        Case {
            name: "clean",
            bytes: clean_metadata().to_avro_bytes().expect("encode metadata"),
            full: clean_metadata_json(),
            readers: vec![
                (
                    "0.14",
                    clean_metadata_0_14(),
                    vec!["policy", "extraMetadata"],
                ),
                ("1.x", clean_metadata_1x(), vec![]),
            ],
        },
        Case {
            name: "replacecommit.requested",
            bytes: clustering_plan()
                .to_avro_bytes()
                .expect("encode clustering plan"),
            full: clustering_plan_json(),
            readers: vec![
                (
                    "0.14",
                    REQUESTED_REPLACE_0_14.to_string(),
                    vec!["clusteringPlan.missingSchedulePartitions"],
                ),
                ("1.x", requested_replace_1x(), vec![]),
            ],
        },
    ]
}

#[test]
fn fastavro_reads_every_field_under_hudi_reader_schemas() {
    let dir = tempfile::tempdir().expect("tempdir");
    for case in cases() {
        let file = dir.path().join(case.name);
        std::fs::write(&file, &case.bytes).expect("write");
        assert_eq!(
            single_record(&fastavro(&file, None, None)),
            case.full,
            "{}: writer schema",
            case.name
        );
        for (reader, schema, missing) in &case.readers {
            assert_eq!(
                single_record(&fastavro(&file, Some(schema), None)),
                without(case.full.clone(), missing),
                "{}: Hudi {reader} reader schema",
                case.name
            );
        }
    }
}

#[test]
fn files_fastavro_writes_decode_to_the_same_records() {
    let dir = tempfile::tempdir().expect("tempdir");
    for codec in ["null", "deflate"] {
        let plan_file = dir.path().join("plan");
        std::fs::write(&plan_file, cleaner_plan().to_avro_bytes().expect("encode")).expect("write");
        let plan_out = dir.path().join(format!("plan.{codec}"));
        fastavro(&plan_file, None, Some((&plan_out, codec)));
        let bytes = std::fs::read(&plan_out).expect("read");
        assert_eq!(
            CleanerPlan::from_avro_bytes(&bytes, "/t").expect("decode"),
            cleaner_plan(),
            "{codec}"
        );

        let meta_file = dir.path().join("meta");
        std::fs::write(
            &meta_file,
            clean_metadata().to_avro_bytes().expect("encode"),
        )
        .expect("write");
        let meta_out = dir.path().join(format!("meta.{codec}"));
        fastavro(&meta_file, None, Some((&meta_out, codec)));
        let bytes = std::fs::read(&meta_out).expect("read");
        assert_eq!(
            CleanMetadata::from_avro_bytes(&bytes).expect("decode"),
            clean_metadata(),
            "{codec}"
        );

        let replace_file = dir.path().join("replace");
        std::fs::write(
            &replace_file,
            clustering_plan().to_avro_bytes().expect("encode"),
        )
        .expect("write");
        let replace_out = dir.path().join(format!("replace.{codec}"));
        // Rewritten under the 0.14 schema: an older writer, so decoding must take the 1.x field's default.
        fastavro(
            &replace_file,
            Some(REQUESTED_REPLACE_0_14),
            Some((&replace_out, codec)),
        );
        let bytes = std::fs::read(&replace_out).expect("read");
        let mut want = clustering_plan();
        if let Some(plan) = want.clustering_plan.as_mut() {
            plan.missing_schedule_partitions.clear();
        }
        assert_eq!(
            RequestedReplaceMetadata::from_avro_bytes(&bytes).expect("decode"),
            want,
            "{codec}"
        );
    }
}
