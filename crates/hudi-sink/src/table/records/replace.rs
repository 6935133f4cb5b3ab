//! The clustering plan: `HoodieRequestedReplaceMetadata` and its parts, the body of
//! `<t>.replacecommit.requested` (apache/hudi `hudi-common/src/main/avro/HoodieRequestedReplaceMetadata.avsc`,
//! `HoodieClusteringPlan.avsc`, `HoodieClusteringGroup.avsc`, `HoodieSliceInfo.avsc`,
//! `HoodieClusteringStrategy.avsc`).
//!
//! Invariants:
//! * [`REQUESTED_REPLACE_METADATA_SCHEMA`] is the newest field set: the 0.14 writer schema (as in Spark's
//!   files) plus `HoodieClusteringPlan.missingSchedulePartitions` (1.x), every field with a default, union
//!   branches `["null", T]` as Spark writes them.
//! * Spark treats a replacecommit as clustering only if `operationType` is `"CLUSTER"`. An empty
//!   `operation_type` is written as null (what Spark stores for an insert-overwrite plan) and null reads as
//!   empty. Maps and lists are written as empty collections rather than null (Hudi code iterates them
//!   without null checks); null or absent reads as empty. Strings of a slice are written as they are, `""`
//!   included (Spark writes `bootstrapFilePath` `""`); null reads as `""`.
//! * Decoding takes the Avro default for a field the writer schema lacks or stored as null (`version` 1 —
//!   Spark's insert-overwrite plan stores a null version —, `numOutputFileGroups` 1, `preserveHoodieMetadata`
//!   false) and refuses a file of another record.

use std::collections::BTreeMap;

use super::fields::{read_double, Fields};
use crate::avro::encode_container;
use crate::avro::read::decode_named;
use crate::avro::AvroError;
use crate::avro::AvroValue;

/// Full name of the clustering plan record.
pub const REQUESTED_REPLACE_METADATA: &str =
    "org.apache.hudi.avro.model.HoodieRequestedReplaceMetadata";

/// Writer schema of `<t>.replacecommit.requested` (see the module doc).
pub const REQUESTED_REPLACE_METADATA_SCHEMA: &str = r#"{
  "type": "record", "name": "HoodieRequestedReplaceMetadata", "namespace": "org.apache.hudi.avro.model",
  "fields": [
    {"name": "operationType", "type": ["null", "string"], "default": null},
    {"name": "clusteringPlan", "type": ["null", {
      "type": "record", "name": "HoodieClusteringPlan",
      "fields": [
        {"name": "inputGroups", "type": ["null", {"type": "array", "items": {
          "type": "record", "name": "HoodieClusteringGroup",
          "fields": [
            {"name": "slices", "type": ["null", {"type": "array", "items": {
              "type": "record", "name": "HoodieSliceInfo",
              "fields": [
                {"name": "dataFilePath", "type": ["null", "string"], "default": null},
                {"name": "deltaFilePaths", "type": ["null", {"type": "array", "items": "string"}], "default": null},
                {"name": "fileId", "type": ["null", "string"]},
                {"name": "partitionPath", "type": ["null", "string"], "default": null},
                {"name": "bootstrapFilePath", "type": ["null", "string"], "default": null},
                {"name": "version", "type": ["int", "null"], "default": 1}
              ]}}], "default": null},
            {"name": "metrics", "type": ["null", {"type": "map", "values": "double"}], "default": null},
            {"name": "numOutputFileGroups", "type": ["int", "null"], "default": 1},
            {"name": "extraMetadata", "type": ["null", {"type": "map", "values": "string"}], "default": null},
            {"name": "version", "type": ["int", "null"], "default": 1}
          ]}}], "default": null},
        {"name": "strategy", "type": ["null", {
          "type": "record", "name": "HoodieClusteringStrategy",
          "fields": [
            {"name": "strategyClassName", "type": ["null", "string"], "default": null},
            {"name": "strategyParams", "type": ["null", {"type": "map", "values": "string"}], "default": null},
            {"name": "version", "type": ["int", "null"], "default": 1}
          ]}], "default": null},
        {"name": "extraMetadata", "type": ["null", {"type": "map", "values": "string"}], "default": null},
        {"name": "version", "type": ["int", "null"], "default": 1},
        {"name": "preserveHoodieMetadata", "type": ["null", "boolean"], "default": null},
        {"name": "missingSchedulePartitions", "type": ["null", {"type": "array", "items": "string"}], "default": null}
      ]}], "default": null},
    {"name": "extraMetadata", "type": ["null", {"type": "map", "values": "string"}], "default": null},
    {"name": "version", "type": ["int", "null"], "default": 1}
  ]
}"#;

/// The body of a `replacecommit.requested`: a clustering plan, or (for insert-overwrite) just the operation.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestedReplaceMetadata {
    /// `"CLUSTER"` for clustering; empty when Spark stored null (insert-overwrite).
    pub operation_type: String,
    /// The plan (present for clustering).
    pub clustering_plan: Option<ClusteringPlan>,
    /// Free-form metadata.
    pub extra_metadata: BTreeMap<String, String>,
    /// Schema revision of the record; Spark writes 1.
    pub version: i32,
}

/// What clustering rewrites, and how.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusteringPlan {
    /// The file groups to rewrite, each into `num_output_file_groups` new ones.
    pub input_groups: Vec<ClusteringGroup>,
    /// The execution strategy (Spark's class name and parameters).
    pub strategy: Option<ClusteringStrategy>,
    /// Free-form metadata.
    pub extra_metadata: BTreeMap<String, String>,
    /// Plan revision; Spark writes 1.
    pub version: i32,
    /// Whether the rewritten records keep their `_hoodie_*` meta fields (Spark: true).
    pub preserve_hoodie_metadata: bool,
    /// Partitions the planner skipped, for incremental planning (1.x); usually empty.
    pub missing_schedule_partitions: Vec<String>,
}

/// One output unit of a clustering plan: slices rewritten together.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusteringGroup {
    /// The file slices read.
    pub slices: Vec<SliceInfo>,
    /// Planner metrics (`TOTAL_IO_MB`, …).
    pub metrics: BTreeMap<String, f64>,
    /// How many file groups the slices are rewritten into.
    pub num_output_file_groups: i32,
    /// Free-form metadata.
    pub extra_metadata: BTreeMap<String, String>,
    /// Record revision; Spark writes 1.
    pub version: i32,
}

/// A file slice a clustering group reads.
#[derive(Debug, Clone, PartialEq)]
pub struct SliceInfo {
    /// Full path of the base file.
    pub data_file_path: String,
    /// Full paths of the log files (empty for copy-on-write).
    pub delta_file_paths: Vec<String>,
    /// The file group.
    pub file_id: String,
    /// Relative partition path (`""` for a non-partitioned table).
    pub partition_path: String,
    /// Bootstrap source file; `""` when none.
    pub bootstrap_file_path: String,
    /// Record revision; Spark writes 1.
    pub version: i32,
}

/// The clustering execution strategy.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusteringStrategy {
    /// The Java class Spark would run.
    pub strategy_class_name: String,
    /// Its parameters.
    pub strategy_params: BTreeMap<String, String>,
    /// Record revision; Spark writes 1.
    pub version: i32,
}

fn string_or_null(s: &str) -> AvroValue {
    if s.is_empty() {
        AvroValue::Null
    } else {
        AvroValue::string(s)
    }
}

impl RequestedReplaceMetadata {
    /// The Avro record (see the module doc for nulls and empties).
    pub fn to_avro(&self) -> AvroValue {
        AvroValue::record([
            ("operationType", string_or_null(&self.operation_type)),
            (
                "clusteringPlan",
                self.clustering_plan
                    .as_ref()
                    .map_or(AvroValue::Null, ClusteringPlan::to_avro),
            ),
            ("extraMetadata", AvroValue::string_map(&self.extra_metadata)),
            ("version", AvroValue::Int(self.version)),
        ])
    }

    /// Reads the record from a decoded value of any revision of the schema.
    pub fn from_avro(value: &AvroValue) -> Result<Self, AvroError> {
        let f = Fields::of(value, "HoodieRequestedReplaceMetadata")?;
        Ok(RequestedReplaceMetadata {
            operation_type: f.string("operationType")?.unwrap_or_default(),
            clustering_plan: f
                .record("clusteringPlan")?
                .map(ClusteringPlan::read)
                .transpose()?,
            extra_metadata: f.string_map("extraMetadata")?,
            version: f.int("version")?.unwrap_or(1),
        })
    }

    /// The complete `replacecommit.requested` file.
    pub fn to_avro_bytes(&self) -> Result<Vec<u8>, AvroError> {
        encode_container(REQUESTED_REPLACE_METADATA_SCHEMA, &self.to_avro())
    }

    /// Reads a `replacecommit.requested` file (ours or Spark's). An empty file is [`AvroError::Empty`]: the
    /// caller decides what that means (Spark: not clustering).
    pub fn from_avro_bytes(bytes: &[u8]) -> Result<Self, AvroError> {
        Self::from_avro(&decode_named(bytes, REQUESTED_REPLACE_METADATA)?)
    }
}

impl ClusteringPlan {
    /// The Avro record.
    pub fn to_avro(&self) -> AvroValue {
        AvroValue::record([
            (
                "inputGroups",
                AvroValue::Array(
                    self.input_groups
                        .iter()
                        .map(ClusteringGroup::to_avro)
                        .collect(),
                ),
            ),
            (
                "strategy",
                self.strategy
                    .as_ref()
                    .map_or(AvroValue::Null, ClusteringStrategy::to_avro),
            ),
            ("extraMetadata", AvroValue::string_map(&self.extra_metadata)),
            ("version", AvroValue::Int(self.version)),
            (
                "preserveHoodieMetadata",
                AvroValue::Boolean(self.preserve_hoodie_metadata),
            ),
            (
                "missingSchedulePartitions",
                AvroValue::string_array(&self.missing_schedule_partitions),
            ),
        ])
    }

    fn read(f: Fields<'_>) -> Result<Self, AvroError> {
        Ok(ClusteringPlan {
            input_groups: f.array("inputGroups", |v, path| {
                ClusteringGroup::read(Fields::of(v, path)?)
            })?,
            strategy: f
                .record("strategy")?
                .map(ClusteringStrategy::read)
                .transpose()?,
            extra_metadata: f.string_map("extraMetadata")?,
            version: f.int("version")?.unwrap_or(1),
            preserve_hoodie_metadata: f.boolean("preserveHoodieMetadata")?.unwrap_or(false),
            missing_schedule_partitions: f.strings("missingSchedulePartitions")?,
        })
    }
}

impl ClusteringGroup {
    /// The Avro record.
    pub fn to_avro(&self) -> AvroValue {
        AvroValue::record([
            (
                "slices",
                AvroValue::Array(self.slices.iter().map(SliceInfo::to_avro).collect()),
            ),
            (
                "metrics",
                AvroValue::Map(
                    self.metrics
                        .iter()
                        .map(|(k, v)| (k.clone(), AvroValue::Double(*v)))
                        .collect(),
                ),
            ),
            (
                "numOutputFileGroups",
                AvroValue::Int(self.num_output_file_groups),
            ),
            ("extraMetadata", AvroValue::string_map(&self.extra_metadata)),
            ("version", AvroValue::Int(self.version)),
        ])
    }

    fn read(f: Fields<'_>) -> Result<Self, AvroError> {
        Ok(ClusteringGroup {
            slices: f.array("slices", |v, path| SliceInfo::read(Fields::of(v, path)?))?,
            metrics: f.map("metrics", read_double)?,
            num_output_file_groups: f.int("numOutputFileGroups")?.unwrap_or(1),
            extra_metadata: f.string_map("extraMetadata")?,
            version: f.int("version")?.unwrap_or(1),
        })
    }
}

impl SliceInfo {
    /// The Avro record.
    pub fn to_avro(&self) -> AvroValue {
        AvroValue::record([
            ("dataFilePath", AvroValue::string(&self.data_file_path)),
            (
                "deltaFilePaths",
                AvroValue::string_array(&self.delta_file_paths),
            ),
            ("fileId", AvroValue::string(&self.file_id)),
            ("partitionPath", AvroValue::string(&self.partition_path)),
            (
                "bootstrapFilePath",
                AvroValue::string(&self.bootstrap_file_path),
            ),
            ("version", AvroValue::Int(self.version)),
        ])
    }

    fn read(f: Fields<'_>) -> Result<Self, AvroError> {
        Ok(SliceInfo {
            data_file_path: f.string("dataFilePath")?.unwrap_or_default(),
            delta_file_paths: f.strings("deltaFilePaths")?,
            file_id: f.required_string("fileId")?,
            partition_path: f.string("partitionPath")?.unwrap_or_default(),
            bootstrap_file_path: f.string("bootstrapFilePath")?.unwrap_or_default(),
            version: f.int("version")?.unwrap_or(1),
        })
    }
}

impl ClusteringStrategy {
    /// The Avro record.
    pub fn to_avro(&self) -> AvroValue {
        AvroValue::record([
            (
                "strategyClassName",
                AvroValue::string(&self.strategy_class_name),
            ),
            (
                "strategyParams",
                AvroValue::string_map(&self.strategy_params),
            ),
            ("version", AvroValue::Int(self.version)),
        ])
    }

    fn read(f: Fields<'_>) -> Result<Self, AvroError> {
        Ok(ClusteringStrategy {
            strategy_class_name: f.string("strategyClassName")?.unwrap_or_default(),
            strategy_params: f.string_map("strategyParams")?,
            version: f.int("version")?.unwrap_or(1),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::avro::decode_container;
    use crate::avro::write::{container, encode_datum};
    use crate::avro::SchemaGraph;

    fn sample() -> RequestedReplaceMetadata {
        let slice = |id: &str, part: &str| SliceInfo {
            data_file_path: format!("/t/{part}/{id}_0-1-2_20240101000000000.parquet"),
            delta_file_paths: vec![],
            file_id: id.to_string(),
            partition_path: part.to_string(),
            bootstrap_file_path: String::new(),
            version: 1,
        };
        RequestedReplaceMetadata {
            operation_type: "CLUSTER".into(),
            clustering_plan: Some(ClusteringPlan {
                input_groups: vec![
                    ClusteringGroup {
                        slices: vec![slice("a-0", "p=1"), slice("b-0", "p=1")],
                        metrics: BTreeMap::from([("TOTAL_IO_MB".to_string(), 2.5)]),
                        num_output_file_groups: 1,
                        extra_metadata: BTreeMap::new(),
                        version: 1,
                    },
                    ClusteringGroup {
                        slices: vec![slice("c-0", "")],
                        metrics: BTreeMap::new(),
                        num_output_file_groups: 2,
                        extra_metadata: BTreeMap::from([("k".to_string(), "v".to_string())]),
                        version: 1,
                    },
                ],
                strategy: Some(ClusteringStrategy {
                    strategy_class_name:
                        "org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy"
                            .into(),
                    strategy_params: BTreeMap::from([("sort".to_string(), "x".to_string())]),
                    version: 1,
                }),
                extra_metadata: BTreeMap::new(),
                version: 1,
                preserve_hoodie_metadata: true,
                missing_schedule_partitions: vec!["p=2".into()],
            }),
            extra_metadata: BTreeMap::from([("by".to_string(), "hudi-sink".to_string())]),
            version: 1,
        }
    }

    #[test]
    fn round_trip() {
        let plan = sample();
        let bytes = plan.to_avro_bytes().expect("encodes");
        assert_eq!(
            RequestedReplaceMetadata::from_avro_bytes(&bytes).expect("decodes"),
            plan
        );
        let (schema, _) = decode_container(&bytes).expect("container");
        assert_eq!(
            SchemaGraph::parse(&schema).expect("schema").full_name(),
            Some(REQUESTED_REPLACE_METADATA)
        );

        let overwrite = RequestedReplaceMetadata {
            operation_type: String::new(),
            clustering_plan: None,
            extra_metadata: BTreeMap::new(),
            version: 1,
        };
        let bytes = overwrite.to_avro_bytes().expect("encodes");
        let (_, value) = decode_container(&bytes).expect("container");
        assert!(value.field("operationType").is_some_and(AvroValue::is_null));
        assert_eq!(
            RequestedReplaceMetadata::from_avro_bytes(&bytes).expect("decodes"),
            overwrite
        );
    }

    #[test]
    fn older_writer_schema_takes_defaults() {
        // A 0.x writer schema without preserveHoodieMetadata, missingSchedulePartitions, group extraMetadata,
        // numOutputFileGroups and the versions.
        let old = r#"{"type":"record","name":"HoodieRequestedReplaceMetadata","namespace":"org.apache.hudi.avro.model",
          "fields":[{"name":"operationType","type":["null","string"],"default":null},
            {"name":"clusteringPlan","type":["null",{"type":"record","name":"HoodieClusteringPlan","fields":[
              {"name":"inputGroups","type":["null",{"type":"array","items":{"type":"record","name":"HoodieClusteringGroup",
                "fields":[{"name":"slices","type":["null",{"type":"array","items":{"type":"record","name":"HoodieSliceInfo",
                  "fields":[{"name":"dataFilePath","type":["null","string"],"default":null},
                            {"name":"fileId","type":["null","string"]}]}}],"default":null}]}}],"default":null}]}],
             "default":null}]}"#;
        let value = AvroValue::record([
            ("operationType", AvroValue::string("CLUSTER")),
            (
                "clusteringPlan",
                AvroValue::record([(
                    "inputGroups",
                    AvroValue::Array(vec![AvroValue::record([(
                        "slices",
                        AvroValue::Array(vec![AvroValue::record([
                            ("dataFilePath", AvroValue::string("/t/f.parquet")),
                            ("fileId", AvroValue::string("f")),
                        ])]),
                    )])]),
                )]),
            ),
        ]);
        let bytes = encode_container(old, &value).expect("encodes");
        let got = RequestedReplaceMetadata::from_avro_bytes(&bytes).expect("decodes");
        let plan = got.clustering_plan.expect("plan");
        assert_eq!(got.version, 1);
        assert_eq!(plan.version, 1);
        assert!(!plan.preserve_hoodie_metadata);
        assert!(plan.strategy.is_none());
        let group = &plan.input_groups[0];
        assert_eq!(group.num_output_file_groups, 1);
        assert_eq!(
            group.slices,
            vec![SliceInfo {
                data_file_path: "/t/f.parquet".into(),
                delta_file_paths: vec![],
                file_id: "f".into(),
                partition_path: String::new(),
                bootstrap_file_path: String::new(),
                version: 1,
            }]
        );
    }

    #[test]
    fn wrong_record_and_bad_fields_are_refused() {
        let other = encode_container(
            r#"{"type":"record","name":"HoodieCleanerPlan","namespace":"org.apache.hudi.avro.model","fields":[]}"#,
            &AvroValue::record(Vec::<(String, _)>::new()),
        )
        .expect("encodes");
        assert!(matches!(
            RequestedReplaceMetadata::from_avro_bytes(&other),
            Err(AvroError::WrongRecord { found, .. }) if found.ends_with("HoodieCleanerPlan")
        ));

        // A slice without its file id.
        let schema = SchemaGraph::parse(REQUESTED_REPLACE_METADATA_SCHEMA).expect("schema");
        let mut value = sample().to_avro();
        null_first_file_id_of_group_1(&mut value);
        let datum = encode_datum(&schema, &value).expect("encodes");
        let file = container(REQUESTED_REPLACE_METADATA_SCHEMA, &datum, [1; 16]);
        assert!(matches!(
            RequestedReplaceMetadata::from_avro_bytes(&file),
            Err(AvroError::MissingField { path })
                if path == "HoodieRequestedReplaceMetadata.clusteringPlan.inputGroups[1].slices[0].fileId"
        ));
    }

    fn null_first_file_id_of_group_1(value: &mut AvroValue) {
        let AvroValue::Record(fields) = value else {
            return;
        };
        for (name, v) in fields.iter_mut() {
            match (name.as_str(), v) {
                ("clusteringPlan", v) => null_first_file_id_of_group_1(v),
                ("inputGroups", AvroValue::Array(groups)) => {
                    null_first_file_id_of_group_1(&mut groups[1])
                }
                ("slices", AvroValue::Array(slices)) => {
                    null_first_file_id_of_group_1(&mut slices[0])
                }
                ("fileId", v) => *v = AvroValue::Null,
                _ => {}
            }
        }
    }
}
