//! The clean files: `HoodieCleanerPlan`, the body of `<t>.clean.requested` and `<t>.clean.inflight`, and
//! `HoodieCleanMetadata`, the body of `<t>.clean` (apache/hudi `hudi-common/src/main/avro/HoodieCleanerPlan.avsc`,
//! `HoodieCleanMetadata.avsc`, `HoodieCleanPartitionMetadata.avsc`).
//!
//! Invariants:
//! * The writer schemas are the newest field sets: the 0.14 fields plus `extraMetadata` (plan and metadata,
//!   0.15 / 1.x) and the metadata's leading `policy` (Hudi master), each added field with a default, so that
//!   0.14 readers skip them and 1.x readers find them. Plans are written as version 2, metadata as version 2.
//! * Version 2 plans name files by **full path** (`filePathsToBeDeletedPerPartition`); the deprecated
//!   version-1 map `filesToBeDeletedPerPartition` is written empty, as Spark does. Decoding a version-1 plan
//!   (file **names** per partition) converts it to version 2 the way Hudi's `CleanPlanV2MigrationHandler`
//!   does: each name joined to `<base path>/<partition>`, not a bootstrap file. A decoded plan is therefore
//!   always version 2, and the caller must pass the table's base path.
//! * Version 2 metadata lists file **names** per partition. Decoding version-1 metadata (full paths) keeps
//!   only the name after the last `/`, as Hudi's `CleanMetadataV2MigrationHandler` does.
//! * Maps and lists are written as empty collections, never null; null or absent reads as empty.
//!   `bootstrapPartitionMetadata` is written null (this writer never bootstraps) and not read.

use std::collections::BTreeMap;

use super::fields::{read_array, read_strings, Fields};
use crate::avro::encode_container;
use crate::avro::read::decode_named;
use crate::avro::AvroError;
use crate::avro::AvroValue;

/// Full name of the clean plan record.
pub const CLEANER_PLAN: &str = "org.apache.hudi.avro.model.HoodieCleanerPlan";

/// Full name of the clean metadata record.
pub const CLEAN_METADATA: &str = "org.apache.hudi.avro.model.HoodieCleanMetadata";

/// The plan version this module writes (Hudi's `CleanPlanV2MigrationHandler.VERSION`).
pub const CLEANER_PLAN_VERSION: i32 = 2;

/// The metadata version this module writes (Hudi's `CleanerUtils.CLEAN_METADATA_VERSION_2`).
pub const CLEAN_METADATA_VERSION: i32 = 2;

/// Writer schema of `<t>.clean.requested` and `<t>.clean.inflight` (see the module doc).
pub const CLEANER_PLAN_SCHEMA: &str = r#"{
  "type": "record", "name": "HoodieCleanerPlan", "namespace": "org.apache.hudi.avro.model",
  "fields": [
    {"name": "earliestInstantToRetain", "type": ["null", {
      "type": "record", "name": "HoodieActionInstant",
      "fields": [
        {"name": "timestamp", "type": "string"},
        {"name": "action", "type": "string"},
        {"name": "state", "type": "string"}
      ]}], "default": null},
    {"name": "lastCompletedCommitTimestamp", "type": "string", "default": ""},
    {"name": "policy", "type": "string"},
    {"name": "filesToBeDeletedPerPartition",
     "type": ["null", {"type": "map", "values": {"type": "array", "items": "string"}}], "default": null},
    {"name": "version", "type": ["int", "null"], "default": 1},
    {"name": "filePathsToBeDeletedPerPartition", "type": ["null", {"type": "map", "values": {
      "type": "array", "items": {
        "type": "record", "name": "HoodieCleanFileInfo",
        "fields": [
          {"name": "filePath", "type": ["null", "string"], "default": null},
          {"name": "isBootstrapBaseFile", "type": ["null", "boolean"], "default": null}
        ]}}}], "default": null},
    {"name": "partitionsToBeDeleted", "type": ["null", {"type": "array", "items": "string"}], "default": null},
    {"name": "extraMetadata", "type": ["null", {"type": "map", "values": "string"}], "default": null}
  ]
}"#;

/// Writer schema of `<t>.clean` (see the module doc).
pub const CLEAN_METADATA_SCHEMA: &str = r#"{
  "type": "record", "name": "HoodieCleanMetadata", "namespace": "org.apache.hudi.avro.model",
  "fields": [
    {"name": "policy", "type": "string", "default": ""},
    {"name": "startCleanTime", "type": "string"},
    {"name": "timeTakenInMillis", "type": "long"},
    {"name": "totalFilesDeleted", "type": "int"},
    {"name": "earliestCommitToRetain", "type": "string"},
    {"name": "lastCompletedCommitTimestamp", "type": "string", "default": ""},
    {"name": "partitionMetadata", "type": {"type": "map", "values": {
      "type": "record", "name": "HoodieCleanPartitionMetadata",
      "fields": [
        {"name": "partitionPath", "type": "string"},
        {"name": "policy", "type": "string"},
        {"name": "deletePathPatterns", "type": {"type": "array", "items": "string"}},
        {"name": "successDeleteFiles", "type": {"type": "array", "items": "string"}},
        {"name": "failedDeleteFiles", "type": {"type": "array", "items": "string"}},
        {"name": "isPartitionDeleted", "type": ["null", "boolean"], "default": null}
      ]}}},
    {"name": "version", "type": ["int", "null"], "default": 1},
    {"name": "bootstrapPartitionMetadata",
     "type": ["null", {"type": "map", "values": "HoodieCleanPartitionMetadata"}], "default": null},
    {"name": "extraMetadata", "type": ["null", {"type": "map", "values": "string"}], "default": null}
  ]
}"#;

/// What a clean will delete: written before any deletion, so that a crashed clean can be finished.
#[derive(Debug, Clone, PartialEq)]
pub struct CleanerPlan {
    /// The earliest commit whose files are kept (`None` when the policy retains by file versions).
    pub earliest_instant_to_retain: Option<ActionInstant>,
    /// The last completed write when the plan was made (incremental cleaning starts there next time).
    pub last_completed_commit_timestamp: String,
    /// The cleaner policy, as Hudi names it (`KEEP_LATEST_COMMITS`, …).
    pub policy: String,
    /// Plan version; decoding always yields 2 (see the module doc).
    pub version: i32,
    /// Per partition path, the files to delete (full paths).
    pub file_paths_to_be_deleted_per_partition: BTreeMap<String, Vec<CleanFileInfo>>,
    /// Partitions deleted whole.
    pub partitions_to_be_deleted: Vec<String>,
    /// Free-form metadata (1.x: the savepoints as of planning).
    pub extra_metadata: BTreeMap<String, String>,
}

/// An instant as the clean plan names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionInstant {
    /// Instant time.
    pub timestamp: String,
    /// Action (`commit`, `replacecommit`).
    pub action: String,
    /// State (`COMPLETED`).
    pub state: String,
}

/// One file of a clean plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CleanFileInfo {
    /// Full path of the file.
    pub file_path: String,
    /// Whether it is a bootstrap source file (never, for this writer).
    pub is_bootstrap_base_file: bool,
}

/// What a clean deleted: the completed `clean` instant.
#[derive(Debug, Clone, PartialEq)]
pub struct CleanMetadata {
    /// The cleaner policy (Hudi master's top-level field; 0.14 readers skip it). Decodes as `""` if absent.
    pub policy: String,
    /// The clean's instant time.
    pub start_clean_time: String,
    /// Wall time of the clean.
    pub time_taken_in_millis: i64,
    /// Files deleted, all partitions.
    pub total_files_deleted: i32,
    /// The plan's earliest retained commit (`""` when none).
    pub earliest_commit_to_retain: String,
    /// The plan's last completed write.
    pub last_completed_commit_timestamp: String,
    /// Per partition path, what was deleted there.
    pub partition_metadata: BTreeMap<String, CleanPartitionMetadata>,
    /// Metadata version; this module writes 2.
    pub version: i32,
    /// Free-form metadata.
    pub extra_metadata: BTreeMap<String, String>,
}

/// What a clean did in one partition (file names, not paths, in version 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CleanPartitionMetadata {
    /// Relative partition path.
    pub partition_path: String,
    /// The cleaner policy.
    pub policy: String,
    /// The files the plan named.
    pub delete_path_patterns: Vec<String>,
    /// The files deleted (or already gone).
    pub success_delete_files: Vec<String>,
    /// The files that could not be deleted.
    pub failed_delete_files: Vec<String>,
    /// Whether the whole partition was deleted.
    pub is_partition_deleted: bool,
}

/// `<base>/<partition>/<name>` (`<base>/<name>` for the non-partitioned `""`), as Hudi joins them.
fn join_path(base_path: &str, partition: &str, name: &str) -> String {
    let base = base_path.trim_end_matches('/');
    if partition.is_empty() {
        format!("{base}/{name}")
    } else {
        format!("{base}/{}/{name}", partition.trim_matches('/'))
    }
}

/// The file name of a path (what follows the last `/`).
fn file_name(path: &str) -> String {
    path.rsplit('/').next().unwrap_or(path).to_string()
}

fn strings_value(items: &[String]) -> AvroValue {
    AvroValue::string_array(items)
}

impl CleanerPlan {
    /// The Avro record (version and deprecated map as the module doc says).
    pub fn to_avro(&self) -> AvroValue {
        AvroValue::record([
            (
                "earliestInstantToRetain",
                self.earliest_instant_to_retain
                    .as_ref()
                    .map_or(AvroValue::Null, ActionInstant::to_avro),
            ),
            (
                "lastCompletedCommitTimestamp",
                AvroValue::string(&self.last_completed_commit_timestamp),
            ),
            ("policy", AvroValue::string(&self.policy)),
            ("filesToBeDeletedPerPartition", AvroValue::Map(Vec::new())),
            ("version", AvroValue::Int(self.version)),
            (
                "filePathsToBeDeletedPerPartition",
                AvroValue::Map(
                    self.file_paths_to_be_deleted_per_partition
                        .iter()
                        .map(|(partition, files)| {
                            let files = files.iter().map(CleanFileInfo::to_avro).collect();
                            (partition.clone(), AvroValue::Array(files))
                        })
                        .collect(),
                ),
            ),
            (
                "partitionsToBeDeleted",
                strings_value(&self.partitions_to_be_deleted),
            ),
            ("extraMetadata", AvroValue::string_map(&self.extra_metadata)),
        ])
    }

    /// Reads a plan of any version from a decoded value; a version-1 plan's file names are joined to
    /// `base_path` (the table's base path, as in `hoodie.base.path`).
    pub fn from_avro(value: &AvroValue, base_path: &str) -> Result<Self, AvroError> {
        let f = Fields::of(value, "HoodieCleanerPlan")?;
        let version = f.int("version")?.unwrap_or(1);
        let file_paths_to_be_deleted_per_partition = if version < 2 {
            f.map("filesToBeDeletedPerPartition", read_strings)?
                .into_iter()
                .map(|(partition, names)| {
                    let files = names
                        .iter()
                        .map(|name| CleanFileInfo {
                            file_path: join_path(base_path, &partition, name),
                            is_bootstrap_base_file: false,
                        })
                        .collect();
                    (partition, files)
                })
                .collect()
        } else {
            f.map("filePathsToBeDeletedPerPartition", |files, path| {
                read_array(files, path, |file, path| {
                    CleanFileInfo::read(Fields::of(file, path)?)
                })
            })?
        };
        Ok(CleanerPlan {
            earliest_instant_to_retain: f
                .record("earliestInstantToRetain")?
                .map(ActionInstant::read)
                .transpose()?,
            last_completed_commit_timestamp: f
                .string("lastCompletedCommitTimestamp")?
                .unwrap_or_default(),
            policy: f.required_string("policy")?,
            version: version.max(CLEANER_PLAN_VERSION),
            file_paths_to_be_deleted_per_partition,
            partitions_to_be_deleted: f.strings("partitionsToBeDeleted")?,
            extra_metadata: f.string_map("extraMetadata")?,
        })
    }

    /// The complete `clean.requested` (and `clean.inflight`) file.
    pub fn to_avro_bytes(&self) -> Result<Vec<u8>, AvroError> {
        encode_container(CLEANER_PLAN_SCHEMA, &self.to_avro())
    }

    /// Reads a `clean.requested` / `clean.inflight` file (see [`CleanerPlan::from_avro`]).
    pub fn from_avro_bytes(bytes: &[u8], base_path: &str) -> Result<Self, AvroError> {
        Self::from_avro(&decode_named(bytes, CLEANER_PLAN)?, base_path)
    }
}

impl ActionInstant {
    /// The Avro record.
    pub fn to_avro(&self) -> AvroValue {
        AvroValue::record([
            ("timestamp", AvroValue::string(&self.timestamp)),
            ("action", AvroValue::string(&self.action)),
            ("state", AvroValue::string(&self.state)),
        ])
    }

    fn read(f: Fields<'_>) -> Result<Self, AvroError> {
        Ok(ActionInstant {
            timestamp: f.required_string("timestamp")?,
            action: f.required_string("action")?,
            state: f.required_string("state")?,
        })
    }
}

impl CleanFileInfo {
    /// The Avro record.
    pub fn to_avro(&self) -> AvroValue {
        AvroValue::record([
            ("filePath", AvroValue::string(&self.file_path)),
            (
                "isBootstrapBaseFile",
                AvroValue::Boolean(self.is_bootstrap_base_file),
            ),
        ])
    }

    fn read(f: Fields<'_>) -> Result<Self, AvroError> {
        Ok(CleanFileInfo {
            file_path: f.required_string("filePath")?,
            is_bootstrap_base_file: f.boolean("isBootstrapBaseFile")?.unwrap_or(false),
        })
    }
}

impl CleanMetadata {
    /// The Avro record (`bootstrapPartitionMetadata` null).
    pub fn to_avro(&self) -> AvroValue {
        AvroValue::record([
            ("policy", AvroValue::string(&self.policy)),
            ("startCleanTime", AvroValue::string(&self.start_clean_time)),
            (
                "timeTakenInMillis",
                AvroValue::Long(self.time_taken_in_millis),
            ),
            (
                "totalFilesDeleted",
                AvroValue::Int(self.total_files_deleted),
            ),
            (
                "earliestCommitToRetain",
                AvroValue::string(&self.earliest_commit_to_retain),
            ),
            (
                "lastCompletedCommitTimestamp",
                AvroValue::string(&self.last_completed_commit_timestamp),
            ),
            (
                "partitionMetadata",
                AvroValue::Map(
                    self.partition_metadata
                        .iter()
                        .map(|(k, v)| (k.clone(), v.to_avro()))
                        .collect(),
                ),
            ),
            ("version", AvroValue::Int(self.version)),
            ("bootstrapPartitionMetadata", AvroValue::Null),
            ("extraMetadata", AvroValue::string_map(&self.extra_metadata)),
        ])
    }

    /// Reads clean metadata of any version from a decoded value (version 1 paths become file names).
    pub fn from_avro(value: &AvroValue) -> Result<Self, AvroError> {
        let f = Fields::of(value, "HoodieCleanMetadata")?;
        let version = f.int("version")?.unwrap_or(1);
        let partition_metadata = f.map("partitionMetadata", |v, path| {
            let mut partition = CleanPartitionMetadata::read(Fields::of(v, path)?)?;
            if version < 2 {
                for list in [
                    &mut partition.delete_path_patterns,
                    &mut partition.success_delete_files,
                    &mut partition.failed_delete_files,
                ] {
                    *list = list.iter().map(|p| file_name(p)).collect();
                }
            }
            Ok(partition)
        })?;
        Ok(CleanMetadata {
            policy: f.string("policy")?.unwrap_or_default(),
            start_clean_time: f.required_string("startCleanTime")?,
            time_taken_in_millis: f.required_long("timeTakenInMillis")?,
            total_files_deleted: f.required_int("totalFilesDeleted")?,
            earliest_commit_to_retain: f.required_string("earliestCommitToRetain")?,
            last_completed_commit_timestamp: f
                .string("lastCompletedCommitTimestamp")?
                .unwrap_or_default(),
            partition_metadata,
            version: version.max(CLEAN_METADATA_VERSION),
            extra_metadata: f.string_map("extraMetadata")?,
        })
    }

    /// The complete `clean` file.
    pub fn to_avro_bytes(&self) -> Result<Vec<u8>, AvroError> {
        encode_container(CLEAN_METADATA_SCHEMA, &self.to_avro())
    }

    /// Reads a `clean` file.
    pub fn from_avro_bytes(bytes: &[u8]) -> Result<Self, AvroError> {
        Self::from_avro(&decode_named(bytes, CLEAN_METADATA)?)
    }
}

impl CleanPartitionMetadata {
    /// The Avro record.
    pub fn to_avro(&self) -> AvroValue {
        AvroValue::record([
            ("partitionPath", AvroValue::string(&self.partition_path)),
            ("policy", AvroValue::string(&self.policy)),
            (
                "deletePathPatterns",
                strings_value(&self.delete_path_patterns),
            ),
            (
                "successDeleteFiles",
                strings_value(&self.success_delete_files),
            ),
            (
                "failedDeleteFiles",
                strings_value(&self.failed_delete_files),
            ),
            (
                "isPartitionDeleted",
                AvroValue::Boolean(self.is_partition_deleted),
            ),
        ])
    }

    fn read(f: Fields<'_>) -> Result<Self, AvroError> {
        Ok(CleanPartitionMetadata {
            partition_path: f.required_string("partitionPath")?,
            policy: f.required_string("policy")?,
            delete_path_patterns: f.strings("deletePathPatterns")?,
            success_delete_files: f.strings("successDeleteFiles")?,
            failed_delete_files: f.strings("failedDeleteFiles")?,
            is_partition_deleted: f.boolean("isPartitionDeleted")?.unwrap_or(false),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::avro::decode_container;

    fn sample_plan() -> CleanerPlan {
        CleanerPlan {
            earliest_instant_to_retain: Some(ActionInstant {
                timestamp: "20240101000000000".into(),
                action: "commit".into(),
                state: "COMPLETED".into(),
            }),
            last_completed_commit_timestamp: "20240102000000000".into(),
            policy: "KEEP_LATEST_COMMITS".into(),
            version: CLEANER_PLAN_VERSION,
            file_paths_to_be_deleted_per_partition: BTreeMap::from([
                (
                    "p=1".to_string(),
                    vec![
                        CleanFileInfo {
                            file_path: "/t/p=1/a_0-1-2_20231201000000000.parquet".into(),
                            is_bootstrap_base_file: false,
                        },
                        CleanFileInfo {
                            file_path: "/t/p=1/b_0-1-2_20231201000000000.parquet".into(),
                            is_bootstrap_base_file: false,
                        },
                    ],
                ),
                ("p=2".to_string(), vec![]),
            ]),
            partitions_to_be_deleted: vec!["p=3".into()],
            extra_metadata: BTreeMap::from([("savepoints".to_string(), "".to_string())]),
        }
    }

    fn sample_metadata() -> CleanMetadata {
        CleanMetadata {
            policy: "KEEP_LATEST_COMMITS".into(),
            start_clean_time: "20240103000000000".into(),
            time_taken_in_millis: 1234,
            total_files_deleted: 2,
            earliest_commit_to_retain: "20240101000000000".into(),
            last_completed_commit_timestamp: "20240102000000000".into(),
            partition_metadata: BTreeMap::from([(
                "p=1".to_string(),
                CleanPartitionMetadata {
                    partition_path: "p=1".into(),
                    policy: "KEEP_LATEST_COMMITS".into(),
                    delete_path_patterns: vec!["a.parquet".into(), "b.parquet".into()],
                    success_delete_files: vec!["a.parquet".into()],
                    failed_delete_files: vec!["b.parquet".into()],
                    is_partition_deleted: false,
                },
            )]),
            version: CLEAN_METADATA_VERSION,
            extra_metadata: BTreeMap::new(),
        }
    }

    #[test]
    fn plan_round_trip_and_layout() {
        let plan = sample_plan();
        let bytes = plan.to_avro_bytes().expect("encodes");
        assert_eq!(
            CleanerPlan::from_avro_bytes(&bytes, "/ignored").expect("decodes"),
            plan
        );
        let (_, value) = decode_container(&bytes).expect("container");
        assert_eq!(
            value.field("filesToBeDeletedPerPartition"),
            Some(&AvroValue::Union(1, Box::new(AvroValue::Map(vec![]))))
        );
        assert_eq!(
            value.field("version"),
            Some(&AvroValue::Union(0, Box::new(AvroValue::Int(2))))
        );

        let by_versions = CleanerPlan {
            earliest_instant_to_retain: None,
            policy: "KEEP_LATEST_FILE_VERSIONS".into(),
            ..sample_plan()
        };
        let bytes = by_versions.to_avro_bytes().expect("encodes");
        assert_eq!(
            CleanerPlan::from_avro_bytes(&bytes, "/t").expect("decodes"),
            by_versions
        );
    }

    #[test]
    fn version_1_plan_becomes_version_2_with_full_paths() {
        // The 0.5-era plan schema: file names per partition.
        let v1_schema = r#"{"type":"record","name":"HoodieCleanerPlan","namespace":"org.apache.hudi.avro.model",
          "fields":[{"name":"earliestInstantToRetain","type":["null",{"type":"record","name":"HoodieActionInstant",
              "fields":[{"name":"timestamp","type":"string"},{"name":"action","type":"string"},
                        {"name":"state","type":"string"}]}],"default":null},
            {"name":"policy","type":"string"},
            {"name":"filesToBeDeletedPerPartition","type":["null",{"type":"map","values":{"type":"array",
              "items":"string"}}],"default":null},
            {"name":"version","type":["int","null"],"default":1}]}"#;
        let value = AvroValue::record([
            ("policy", AvroValue::string("KEEP_LATEST_COMMITS")),
            (
                "filesToBeDeletedPerPartition",
                AvroValue::Map(vec![
                    (
                        "2024/01/01".into(),
                        AvroValue::string_array(&["a.parquet", "b.parquet"]),
                    ),
                    ("".into(), AvroValue::string_array(&["c.parquet"])),
                ]),
            ),
        ]);
        let bytes = encode_container(v1_schema, &value).expect("encodes");
        let plan = CleanerPlan::from_avro_bytes(&bytes, "s3://bucket/table/").expect("decodes");
        let info = |p: &str| CleanFileInfo {
            file_path: p.into(),
            is_bootstrap_base_file: false,
        };
        assert_eq!(
            plan,
            CleanerPlan {
                earliest_instant_to_retain: None,
                last_completed_commit_timestamp: String::new(),
                policy: "KEEP_LATEST_COMMITS".into(),
                version: 2,
                file_paths_to_be_deleted_per_partition: BTreeMap::from([
                    ("".to_string(), vec![info("s3://bucket/table/c.parquet")]),
                    (
                        "2024/01/01".to_string(),
                        vec![
                            info("s3://bucket/table/2024/01/01/a.parquet"),
                            info("s3://bucket/table/2024/01/01/b.parquet"),
                        ],
                    ),
                ]),
                partitions_to_be_deleted: vec![],
                extra_metadata: BTreeMap::new(),
            }
        );
    }

    #[test]
    fn metadata_round_trip_and_version_1_paths() {
        let meta = sample_metadata();
        let bytes = meta.to_avro_bytes().expect("encodes");
        assert_eq!(
            CleanMetadata::from_avro_bytes(&bytes).expect("decodes"),
            meta
        );
        let (_, value) = decode_container(&bytes).expect("container");
        assert!(value
            .field("bootstrapPartitionMetadata")
            .is_some_and(AvroValue::is_null));

        let mut v1 = meta.to_avro();
        if let AvroValue::Record(fields) = &mut v1 {
            for (name, value) in fields.iter_mut() {
                if name == "version" {
                    *value = AvroValue::Int(1);
                }
                if let ("partitionMetadata", AvroValue::Map(parts)) = (name.as_str(), value) {
                    parts[0].1 = CleanPartitionMetadata {
                        success_delete_files: vec!["/t/p=1/a.parquet".into()],
                        ..meta.partition_metadata["p=1"].clone()
                    }
                    .to_avro();
                }
            }
        }
        let bytes = encode_container(CLEAN_METADATA_SCHEMA, &v1).expect("encodes");
        let got = CleanMetadata::from_avro_bytes(&bytes).expect("decodes");
        assert_eq!(got.version, 2);
        assert_eq!(
            got.partition_metadata["p=1"].success_delete_files,
            vec!["a.parquet"]
        );
    }

    #[test]
    fn required_fields_and_wrong_records_are_refused() {
        let no_start = r#"{"type":"record","name":"HoodieCleanMetadata","namespace":"org.apache.hudi.avro.model",
          "fields":[{"name":"timeTakenInMillis","type":"long"}]}"#;
        let bytes = encode_container(
            no_start,
            &AvroValue::record([("timeTakenInMillis", AvroValue::Long(1))]),
        )
        .expect("encodes");
        assert!(matches!(
            CleanMetadata::from_avro_bytes(&bytes),
            Err(AvroError::MissingField { path }) if path == "HoodieCleanMetadata.startCleanTime"
        ));
        let plan = sample_plan().to_avro_bytes().expect("encodes");
        assert!(matches!(
            CleanMetadata::from_avro_bytes(&plan),
            Err(AvroError::WrongRecord { .. })
        ));
        assert!(matches!(
            CleanerPlan::from_avro_bytes(&[], "/t"),
            Err(AvroError::Empty)
        ));
    }
}
