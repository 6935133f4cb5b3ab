//! The compaction plan: `HoodieCompactionPlan` and its `HoodieCompactionOperation`s, the body of
//! `<t>.compaction.requested` (apache/hudi `hudi-common/src/main/avro/HoodieCompactionOperation.avsc`,
//! `HoodieCompactionStrategy.avsc`).
//!
//! Invariants:
//! * [`COMPACTION_PLAN_SCHEMA`] is the field set of the 0.x schema (`operations`, `extraMetadata`, `version`)
//!   plus the log-compaction era's (0.13+) `strategy` (written null: plain compaction) and
//!   `preserveHoodieMetadata` (written true, as Spark's planner does: compacted rows keep their commit time
//!   and sequence number), every added field with a default. Readers resolve by field name, so 0.14 and
//!   1.x Hudi and Trino read it.
//! * Plans are written with `version` 2 ([`COMPACTION_PLAN_VERSION`]): operations name files, not paths
//!   (`dataFilePath` = base file name, `deltaFilePaths` = log file names, `partitionPath` relative).
//! * `dataFilePath` and `bootstrapFilePath` are null when absent (what Spark stores); null reads as `None`.
//!   Maps and lists are written as empty collections rather than null; null or absent reads as empty.
//! * Decoding takes the Avro default for a field the writer schema lacks (`version` 1) and refuses a file of
//!   another record, or an operation without `baseInstantTime` or `fileId` (neither has a default).

use std::collections::BTreeMap;

use super::fields::{read_double, Fields};
use crate::avro::encode_container;
use crate::avro::read::decode_named;
use crate::avro::AvroError;
use crate::avro::AvroValue;

/// Full name of the compaction plan record.
pub const COMPACTION_PLAN: &str = "org.apache.hudi.avro.model.HoodieCompactionPlan";

/// `CompactionUtils.LATEST_COMPACTION_METADATA_VERSION`: operations hold file names.
pub const COMPACTION_PLAN_VERSION: i32 = 2;

/// Writer schema of `<t>.compaction.requested` (see the module doc).
pub const COMPACTION_PLAN_SCHEMA: &str = r#"{
  "type": "record", "name": "HoodieCompactionPlan", "namespace": "org.apache.hudi.avro.model",
  "fields": [
    {"name": "operations", "type": ["null", {"type": "array", "items": {
      "type": "record", "name": "HoodieCompactionOperation",
      "fields": [
        {"name": "baseInstantTime", "type": ["null", "string"]},
        {"name": "deltaFilePaths", "type": ["null", {"type": "array", "items": "string"}], "default": null},
        {"name": "dataFilePath", "type": ["null", "string"], "default": null},
        {"name": "fileId", "type": ["null", "string"]},
        {"name": "partitionPath", "type": ["null", "string"], "default": null},
        {"name": "metrics", "type": ["null", {"type": "map", "values": "double"}], "default": null},
        {"name": "bootstrapFilePath", "type": ["null", "string"], "default": null}
      ]}}], "default": null},
    {"name": "extraMetadata", "type": ["null", {"type": "map", "values": "string"}], "default": null},
    {"name": "version", "type": ["int", "null"], "default": 1},
    {"name": "strategy", "type": ["null", {
      "type": "record", "name": "HoodieCompactionStrategy",
      "fields": [
        {"name": "compactorClassName", "type": ["null", "string"], "default": null},
        {"name": "strategyParams", "type": ["null", {"type": "map", "values": "string"}], "default": null},
        {"name": "version", "type": ["int", "null"], "default": 1}
      ]}], "default": null},
    {"name": "preserveHoodieMetadata", "type": ["boolean", "null"], "default": false}
  ]
}"#;

/// The body of a `compaction.requested`: the file slices to merge into new base files.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionPlan {
    /// One operation per file group.
    pub operations: Vec<CompactionOperation>,
    /// Free-form metadata (this sink marks its own plans here).
    pub extra_metadata: BTreeMap<String, String>,
    /// Plan revision; this sink writes [`COMPACTION_PLAN_VERSION`].
    pub version: i32,
    /// Whether compacted rows keep their `_hoodie_commit_time` and `_hoodie_commit_seqno` (this sink: true).
    pub preserve_hoodie_metadata: bool,
}

/// One file slice a compaction merges: its base file and log files.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionOperation {
    /// The slice's base instant (the base file's instant).
    pub base_instant_time: String,
    /// The log files merged (names in a version 2 plan), in reader order.
    pub delta_file_paths: Vec<String>,
    /// The base file (its name in a version 2 plan); `None` for a log-only slice.
    pub data_file_path: Option<String>,
    /// The file group.
    pub file_id: String,
    /// Relative partition path (`""` for a non-partitioned table).
    pub partition_path: String,
    /// Planner metrics (`TOTAL_LOG_FILES`, `TOTAL_IO_MB`, …), informational.
    pub metrics: BTreeMap<String, f64>,
    /// Bootstrap source file, when the slice has one.
    pub bootstrap_file_path: Option<String>,
}

fn optional(s: &Option<String>) -> AvroValue {
    s.as_deref().map_or(AvroValue::Null, AvroValue::string)
}

impl CompactionPlan {
    /// The Avro record (see the module doc for nulls and empties).
    pub fn to_avro(&self) -> AvroValue {
        AvroValue::record([
            (
                "operations",
                AvroValue::Array(
                    self.operations
                        .iter()
                        .map(CompactionOperation::to_avro)
                        .collect(),
                ),
            ),
            ("extraMetadata", AvroValue::string_map(&self.extra_metadata)),
            ("version", AvroValue::Int(self.version)),
            ("strategy", AvroValue::Null),
            (
                "preserveHoodieMetadata",
                AvroValue::Boolean(self.preserve_hoodie_metadata),
            ),
        ])
    }

    /// Reads the record from a decoded value of any revision of the schema.
    pub fn from_avro(value: &AvroValue) -> Result<Self, AvroError> {
        let f = Fields::of(value, "HoodieCompactionPlan")?;
        Ok(CompactionPlan {
            operations: f.array("operations", |v, path| {
                CompactionOperation::read(Fields::of(v, path)?)
            })?,
            extra_metadata: f.string_map("extraMetadata")?,
            version: f.int("version")?.unwrap_or(1),
            preserve_hoodie_metadata: f.boolean("preserveHoodieMetadata")?.unwrap_or(false),
        })
    }

    /// The complete `compaction.requested` file.
    pub fn to_avro_bytes(&self) -> Result<Vec<u8>, AvroError> {
        encode_container(COMPACTION_PLAN_SCHEMA, &self.to_avro())
    }

    /// Reads a `compaction.requested` file (ours or another engine's). An empty file is [`AvroError::Empty`].
    pub fn from_avro_bytes(bytes: &[u8]) -> Result<Self, AvroError> {
        Self::from_avro(&decode_named(bytes, COMPACTION_PLAN)?)
    }
}

impl CompactionOperation {
    /// The Avro record.
    pub fn to_avro(&self) -> AvroValue {
        AvroValue::record([
            (
                "baseInstantTime",
                AvroValue::string(&self.base_instant_time),
            ),
            (
                "deltaFilePaths",
                AvroValue::string_array(&self.delta_file_paths),
            ),
            ("dataFilePath", optional(&self.data_file_path)),
            ("fileId", AvroValue::string(&self.file_id)),
            ("partitionPath", AvroValue::string(&self.partition_path)),
            (
                "metrics",
                AvroValue::Map(
                    self.metrics
                        .iter()
                        .map(|(k, v)| (k.clone(), AvroValue::Double(*v)))
                        .collect(),
                ),
            ),
            ("bootstrapFilePath", optional(&self.bootstrap_file_path)),
        ])
    }

    fn read(f: Fields<'_>) -> Result<Self, AvroError> {
        Ok(CompactionOperation {
            base_instant_time: f.required_string("baseInstantTime")?,
            delta_file_paths: f.strings("deltaFilePaths")?,
            data_file_path: f.string("dataFilePath")?,
            file_id: f.required_string("fileId")?,
            partition_path: f.string("partitionPath")?.unwrap_or_default(),
            metrics: f.map("metrics", read_double)?,
            bootstrap_file_path: f.string("bootstrapFilePath")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::avro::decode_container;
    use crate::avro::SchemaGraph;

    pub(crate) fn sample() -> CompactionPlan {
        CompactionPlan {
            operations: vec![
                CompactionOperation {
                    base_instant_time: "20250101000000001".into(),
                    delta_file_paths: vec![
                        ".a-0_20250101000000001.log.1_0-1-0".into(),
                        ".a-0_20250101000000001.log.2_0-2-0".into(),
                    ],
                    data_file_path: Some("a-0_0-1-0_20250101000000001.parquet".into()),
                    file_id: "a-0".into(),
                    partition_path: "city=x".into(),
                    metrics: BTreeMap::from([
                        ("TOTAL_LOG_FILES".to_string(), 2.0),
                        ("TOTAL_IO_MB".to_string(), 0.5),
                    ]),
                    bootstrap_file_path: None,
                },
                CompactionOperation {
                    base_instant_time: "20250101000000002".into(),
                    delta_file_paths: vec![],
                    data_file_path: None,
                    file_id: "b-0".into(),
                    partition_path: String::new(),
                    metrics: BTreeMap::new(),
                    bootstrap_file_path: Some("s3://src/b.parquet".into()),
                },
            ],
            extra_metadata: BTreeMap::from([("hudi.sink.writer".into(), "msk-hudi-sink".into())]),
            version: COMPACTION_PLAN_VERSION,
            preserve_hoodie_metadata: true,
        }
    }

    #[test]
    fn round_trip() {
        let plan = sample();
        let bytes = plan.to_avro_bytes().expect("encodes");
        assert_eq!(
            CompactionPlan::from_avro_bytes(&bytes).expect("decodes"),
            plan
        );
        let (schema, value) = decode_container(&bytes).expect("container");
        assert_eq!(
            SchemaGraph::parse(&schema).expect("schema").full_name(),
            Some(COMPACTION_PLAN)
        );
        assert!(value.field("strategy").is_some_and(AvroValue::is_null));
        let ops = value
            .field("operations")
            .map(AvroValue::unwrap_union)
            .and_then(AvroValue::as_array)
            .expect("operations");
        assert!(ops[0]
            .field("bootstrapFilePath")
            .is_some_and(AvroValue::is_null));
        assert!(ops[1].field("dataFilePath").is_some_and(AvroValue::is_null));
    }

    #[test]
    fn older_writer_schema_takes_defaults() {
        // The 0.x schema without strategy, with `version` absent and an operation with only the required fields.
        let old = r#"{"type":"record","name":"HoodieCompactionPlan","namespace":"org.apache.hudi.avro.model",
          "fields":[{"name":"operations","type":["null",{"type":"array","items":{"type":"record",
            "name":"HoodieCompactionOperation","fields":[
              {"name":"baseInstantTime","type":["null","string"]},
              {"name":"fileId","type":["null","string"]}]}}],"default":null}]}"#;
        let value = AvroValue::record([(
            "operations",
            AvroValue::Array(vec![AvroValue::record([
                ("baseInstantTime", AvroValue::string("20250101000000001")),
                ("fileId", AvroValue::string("f-0")),
            ])]),
        )]);
        let bytes = encode_container(old, &value).expect("encodes");
        let plan = CompactionPlan::from_avro_bytes(&bytes).expect("decodes");
        assert_eq!(plan.version, 1);
        assert!(!plan.preserve_hoodie_metadata);
        assert_eq!(
            plan.operations,
            vec![CompactionOperation {
                base_instant_time: "20250101000000001".into(),
                delta_file_paths: vec![],
                data_file_path: None,
                file_id: "f-0".into(),
                partition_path: String::new(),
                metrics: BTreeMap::new(),
                bootstrap_file_path: None,
            }]
        );
    }

    #[test]
    fn wrong_record_and_missing_required_fields_are_refused() {
        let other = encode_container(
            r#"{"type":"record","name":"HoodieCleanerPlan","namespace":"org.apache.hudi.avro.model","fields":[]}"#,
            &AvroValue::record(Vec::<(String, _)>::new()),
        )
        .expect("encodes");
        assert!(matches!(
            CompactionPlan::from_avro_bytes(&other),
            Err(AvroError::WrongRecord { found, .. }) if found.ends_with("HoodieCleanerPlan")
        ));
        let mut plan = sample();
        plan.operations[1].file_id = String::new();
        let mut value = plan.to_avro();
        if let AvroValue::Record(fields) = &mut value {
            if let Some((_, AvroValue::Array(ops))) = fields.first_mut() {
                if let AvroValue::Record(op) = &mut ops[1] {
                    for (name, v) in op.iter_mut() {
                        if name == "fileId" {
                            *v = AvroValue::Null;
                        }
                    }
                }
            }
        }
        let bytes = encode_container(COMPACTION_PLAN_SCHEMA, &value).expect("encodes");
        assert!(matches!(
            CompactionPlan::from_avro_bytes(&bytes),
            Err(AvroError::MissingField { path }) if path == "HoodieCompactionPlan.operations[1].fileId"
        ));
        assert!(matches!(
            CompactionPlan::from_avro_bytes(&[]),
            Err(AvroError::Empty)
        ));
    }
}
