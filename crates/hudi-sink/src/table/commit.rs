//! Commit metadata: the JSON body of a completed `<t>.commit` / `<t>.replacecommit` (hudi-format.md §4), and the
//! Kafka checkpoint this writer stores in its `extraMetadata` (docs/architecture.md, "Exactly-once").
//!
//! Invariants:
//! - Field names are Jackson's (`partitionToWriteStats`, `fileId`, `prevCommit`, …) and every field Hudi writes
//!   is written, in Hudi's order, with Hudi's nulls (`cdcStats`, `tempPath`, `minEventTime`, `maxEventTime`);
//!   `prevCommit` of a new file group is the string `"null"`.
//! - Reading is as lenient as Jackson with `FAIL_ON_UNKNOWN_PROPERTIES` off: missing numbers are 0, a missing
//!   `compacted` is `false`, a missing `operationType` is `UNKNOWN`, and unknown keys are kept (and written back)
//!   so a read–write round trip loses nothing. An `operationType` Hudi does not define is an error (Jackson
//!   fails too), as is any value of the wrong JSON type.
//! - The checkpoint is cumulative (next offset to read per topic-partition). [`Checkpoint::write_to`] stores
//!   `hudi.sink.checkpoint` always, and `deltastreamer.checkpoint.key` / `kafka.commit.offsets` when the table is
//!   fed by exactly one topic (their formats cannot name several topics). Reading prefers `hudi.sink.checkpoint`.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use thiserror::Error;

use super::instant::InstantTime;

/// `extraMetadata` key of the table's Avro schema.
pub const SCHEMA_KEY: &str = "schema";
/// `extraMetadata` key of HoodieStreamer's (v1) Kafka checkpoint: `topic,0:123,1:456`.
pub const DELTASTREAMER_CHECKPOINT_KEY: &str = "deltastreamer.checkpoint.key";
/// `extraMetadata` key of the Kafka Connect sink's offsets: `0=123,1=456`.
pub const KAFKA_COMMIT_OFFSETS_KEY: &str = "kafka.commit.offsets";
/// `extraMetadata` key of this sink's multi-topic checkpoint: `{"topic":{"0":123}}`.
pub const SINK_CHECKPOINT_KEY: &str = "hudi.sink.checkpoint";
/// `prevCommit` of a write stat that starts a new file group (`HoodieWriteStat.NULL_COMMIT`).
pub const NULL_COMMIT: &str = "null";

/// Failures reading or writing commit metadata and checkpoints.
#[derive(Debug, Error)]
pub enum CommitError {
    /// The JSON does not match `HoodieCommitMetadata`.
    #[error("invalid commit metadata JSON: {source}")]
    Json {
        /// The parse error (names line, column and the offending field or value).
        #[source]
        source: serde_json::Error,
    },
    /// An `operationType` that is not a `WriteOperationType` name.
    #[error("unknown operationType {value:?}: not a Hudi WriteOperationType name")]
    UnknownOperationType {
        /// The text found.
        value: String,
    },
    /// A checkpoint value that does not parse.
    #[error("invalid checkpoint in extraMetadata[{key}] = {value:?}: {reason}")]
    InvalidCheckpoint {
        /// The extraMetadata key.
        key: &'static str,
        /// The value found.
        value: String,
        /// What is wrong.
        reason: String,
    },
    /// A checkpoint that cannot be rendered (bad topic name, negative partition or offset).
    #[error("checkpoint cannot be stored: {reason}")]
    UnrenderableCheckpoint {
        /// What is wrong.
        reason: String,
    },
    /// Only `kafka.commit.offsets` is present and it names no topic.
    #[error(
        "extraMetadata holds only kafka.commit.offsets ({value:?}), which names no topic; \
         read it with the topic the Kafka Connect sink consumed"
    )]
    TopicUnknown {
        /// The value found.
        value: String,
    },
}

/// `WriteOperationType`, spelled as the Java enum names Jackson writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OperationType {
    /// `INSERT`.
    Insert,
    /// `INSERT_PREPPED`.
    InsertPrepped,
    /// `UPSERT`.
    Upsert,
    /// `UPSERT_PREPPED`.
    UpsertPrepped,
    /// `BULK_INSERT`.
    BulkInsert,
    /// `BULK_INSERT_PREPPED`.
    BulkInsertPrepped,
    /// `DELETE`.
    Delete,
    /// `DELETE_PREPPED`.
    DeletePrepped,
    /// `BOOTSTRAP`.
    Bootstrap,
    /// `INSERT_OVERWRITE`.
    InsertOverwrite,
    /// `BUCKET_RESCALE`.
    BucketRescale,
    /// `CLUSTER`.
    Cluster,
    /// `DELETE_PARTITION`.
    DeletePartition,
    /// `INSERT_OVERWRITE_TABLE`.
    InsertOverwriteTable,
    /// `COMPACT`.
    Compact,
    /// `INDEX`.
    Index,
    /// `BUILD` (0.x only).
    Build,
    /// `ALTER_SCHEMA`.
    AlterSchema,
    /// `LOG_COMPACT`.
    LogCompact,
    /// `UNKNOWN` (old commits without an operation).
    Unknown,
}

impl OperationType {
    /// Every value.
    pub const ALL: [OperationType; 20] = [
        OperationType::Insert,
        OperationType::InsertPrepped,
        OperationType::Upsert,
        OperationType::UpsertPrepped,
        OperationType::BulkInsert,
        OperationType::BulkInsertPrepped,
        OperationType::Delete,
        OperationType::DeletePrepped,
        OperationType::Bootstrap,
        OperationType::InsertOverwrite,
        OperationType::BucketRescale,
        OperationType::Cluster,
        OperationType::DeletePartition,
        OperationType::InsertOverwriteTable,
        OperationType::Compact,
        OperationType::Index,
        OperationType::Build,
        OperationType::AlterSchema,
        OperationType::LogCompact,
        OperationType::Unknown,
    ];

    /// The Java enum name.
    pub fn as_str(self) -> &'static str {
        match self {
            OperationType::Insert => "INSERT",
            OperationType::InsertPrepped => "INSERT_PREPPED",
            OperationType::Upsert => "UPSERT",
            OperationType::UpsertPrepped => "UPSERT_PREPPED",
            OperationType::BulkInsert => "BULK_INSERT",
            OperationType::BulkInsertPrepped => "BULK_INSERT_PREPPED",
            OperationType::Delete => "DELETE",
            OperationType::DeletePrepped => "DELETE_PREPPED",
            OperationType::Bootstrap => "BOOTSTRAP",
            OperationType::InsertOverwrite => "INSERT_OVERWRITE",
            OperationType::BucketRescale => "BUCKET_RESCALE",
            OperationType::Cluster => "CLUSTER",
            OperationType::DeletePartition => "DELETE_PARTITION",
            OperationType::InsertOverwriteTable => "INSERT_OVERWRITE_TABLE",
            OperationType::Compact => "COMPACT",
            OperationType::Index => "INDEX",
            OperationType::Build => "BUILD",
            OperationType::AlterSchema => "ALTER_SCHEMA",
            OperationType::LogCompact => "LOG_COMPACT",
            OperationType::Unknown => "UNKNOWN",
        }
    }

    /// Whether a commit of this operation may carry a new table schema (`WriteOperationType.canUpdateSchema`):
    /// table services (cluster, compact, log compact, index) only rewrite data under the existing schema.
    pub fn can_update_schema(self) -> bool {
        !matches!(
            self,
            OperationType::Cluster
                | OperationType::Compact
                | OperationType::LogCompact
                | OperationType::Index
        )
    }
}

impl fmt::Display for OperationType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for OperationType {
    type Err = CommitError;
    /// Only the exact Java enum name (Jackson maps enums by name).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        OperationType::ALL
            .into_iter()
            .find(|o| o.as_str() == s)
            .ok_or_else(|| CommitError::UnknownOperationType {
                value: s.to_string(),
            })
    }
}

impl Serialize for OperationType {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for OperationType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Option::<String>::deserialize(deserializer)?;
        match value {
            // Jackson would leave a null enum null; the only reading that matters is "no known operation".
            None => Ok(OperationType::Unknown),
            Some(s) => s.parse().map_err(de::Error::custom),
        }
    }
}

impl Default for OperationType {
    /// `UNKNOWN`, the value Java's `HoodieCommitMetadata` starts with.
    fn default() -> Self {
        OperationType::Unknown
    }
}

/// Reads a JSON string that may be null (Jackson writes null for unset strings) as `""`.
fn null_as_empty<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(deserializer)?.unwrap_or_default())
}

/// Reads `prevCommit`, where null or absent means a new file group.
fn null_as_null_commit<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(deserializer)?.unwrap_or_else(|| NULL_COMMIT.to_string()))
}

fn default_null_commit() -> String {
    NULL_COMMIT.to_string()
}

/// Reads a Java primitive `long` that may be null as 0.
fn null_as_zero<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
    Ok(Option::<i64>::deserialize(deserializer)?.unwrap_or_default())
}

/// Reads a Java `Boolean` that may be null as false.
fn null_as_false<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    Ok(Option::<bool>::deserialize(deserializer)?.unwrap_or_default())
}

/// Reads a map that may be null as empty.
fn null_as_empty_map<'de, D, T>(deserializer: D) -> Result<BTreeMap<String, T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<BTreeMap<String, T>>::deserialize(deserializer)?.unwrap_or_default())
}

/// `HoodieWriteStat.RuntimeStats`: timings in milliseconds (informational).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeStats {
    /// Time spent reading the old base file.
    #[serde(default, deserialize_with = "null_as_zero")]
    pub total_scan_time: i64,
    /// Time spent merging (updates).
    #[serde(default, deserialize_with = "null_as_zero")]
    pub total_upsert_time: i64,
    /// Time spent writing new files (inserts).
    #[serde(default, deserialize_with = "null_as_zero")]
    pub total_create_time: i64,
}

/// `HoodieWriteStat`: what one write did to one file (hudi-format.md §4.3). Fields in Hudi's order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WriteStat {
    /// File group id.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub file_id: String,
    /// File path relative to the table base path (`<partition>/<file>`, or `<file>` when non-partitioned).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub path: String,
    /// CDC files written (always null here).
    #[serde(default)]
    pub cdc_stats: Option<BTreeMap<String, i64>>,
    /// Instant of the slice this file replaces, or `"null"` for a new file group.
    #[serde(
        default = "default_null_commit",
        deserialize_with = "null_as_null_commit"
    )]
    pub prev_commit: String,
    /// Records written into the file (carried-over records included).
    #[serde(default, deserialize_with = "null_as_zero")]
    pub num_writes: i64,
    /// Records removed from the file group.
    #[serde(default, deserialize_with = "null_as_zero")]
    pub num_deletes: i64,
    /// Records of the old slice that were updated.
    #[serde(default, deserialize_with = "null_as_zero")]
    pub num_update_writes: i64,
    /// New keys written.
    #[serde(default, deserialize_with = "null_as_zero")]
    pub num_inserts: i64,
    /// Bytes written.
    #[serde(default, deserialize_with = "null_as_zero")]
    pub total_write_bytes: i64,
    /// Records that failed (always 0: bad records go to the dead-letter output).
    #[serde(default, deserialize_with = "null_as_zero")]
    pub total_write_errors: i64,
    /// Temporary path (always null).
    #[serde(default)]
    pub temp_path: Option<String>,
    /// Partition path (`""` when non-partitioned).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub partition_path: String,
    /// MOR only; 0.
    #[serde(default, deserialize_with = "null_as_zero")]
    pub total_log_records: i64,
    /// MOR only; 0.
    #[serde(default, deserialize_with = "null_as_zero")]
    pub total_log_files_compacted: i64,
    /// MOR only; 0.
    #[serde(default, deserialize_with = "null_as_zero")]
    pub total_log_size_compacted: i64,
    /// MOR only; 0.
    #[serde(default, deserialize_with = "null_as_zero")]
    pub total_updated_records_compacted: i64,
    /// MOR only; 0.
    #[serde(default, deserialize_with = "null_as_zero")]
    pub total_log_blocks: i64,
    /// MOR only; 0.
    #[serde(default, deserialize_with = "null_as_zero")]
    pub total_corrupt_log_block: i64,
    /// MOR only; 0.
    #[serde(default, deserialize_with = "null_as_zero")]
    pub total_rollback_blocks: i64,
    /// Exact byte size of the file (readers build file statuses from it).
    #[serde(default, deserialize_with = "null_as_zero")]
    pub file_size_in_bytes: i64,
    /// Earliest event time (always null).
    #[serde(default)]
    pub min_event_time: Option<i64>,
    /// Latest event time (always null).
    #[serde(default)]
    pub max_event_time: Option<i64>,
    /// Timings (an object in completed commits; null in Spark's inflight workload files).
    #[serde(default)]
    pub runtime_stats: Option<RuntimeStats>,
    /// MOR appends (`HoodieDeltaWriteStat`; docs/architecture.md, "File-system view"): the version of the log
    /// file written. Absent from base file stats, so copy-on-write commits serialise exactly as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_version: Option<i64>,
    /// MOR appends: byte offset the write started at in the log file (0 for a new file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_offset: Option<i64>,
    /// MOR appends: the slice's base file name (`""` for a log-only slice).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_file: Option<String>,
    /// MOR appends: the slice's log file names after the write (Spark lists the existing ones and the new one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_files: Option<Vec<String>>,
    /// MOR appends: column statistics wrapper (`{"val": null}` from Spark), kept verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub records_stats: Option<Value>,
    /// Keys this struct does not know, kept for a lossless round trip.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl WriteStat {
    /// A stat for one written base file with every count zero, `prevCommit` `"null"` and empty runtime stats.
    pub fn new(file_id: &str, partition_path: &str, path: &str) -> Self {
        Self {
            file_id: file_id.to_string(),
            path: path.to_string(),
            cdc_stats: None,
            prev_commit: NULL_COMMIT.to_string(),
            num_writes: 0,
            num_deletes: 0,
            num_update_writes: 0,
            num_inserts: 0,
            total_write_bytes: 0,
            total_write_errors: 0,
            temp_path: None,
            partition_path: partition_path.to_string(),
            total_log_records: 0,
            total_log_files_compacted: 0,
            total_log_size_compacted: 0,
            total_updated_records_compacted: 0,
            total_log_blocks: 0,
            total_corrupt_log_block: 0,
            total_rollback_blocks: 0,
            file_size_in_bytes: 0,
            min_event_time: None,
            max_event_time: None,
            runtime_stats: Some(RuntimeStats::default()),
            log_version: None,
            log_offset: None,
            base_file: None,
            log_files: None,
            records_stats: None,
            other: Map::new(),
        }
    }

    /// The replaced slice's instant, `None` for a new file group (`"null"`) or an unparsable value.
    pub fn prev_commit_instant(&self) -> Option<InstantTime> {
        if self.prev_commit == NULL_COMMIT {
            None
        } else {
            InstantTime::parse(&self.prev_commit).ok()
        }
    }

    /// The file name part of [`WriteStat::path`].
    pub fn file_name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }
}

/// `HoodieCommitMetadata`: the content of a completed `.commit` (and `.deltacommit`) file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommitMetadata {
    /// Write stats per partition path (`""` for a non-partitioned table).
    #[serde(default, deserialize_with = "null_as_empty_map")]
    pub partition_to_write_stats: BTreeMap<String, Vec<WriteStat>>,
    /// `true` only for compaction commits.
    #[serde(default, deserialize_with = "null_as_false")]
    pub compacted: bool,
    /// String metadata: `schema`, checkpoints.
    #[serde(default, deserialize_with = "null_as_empty_map")]
    pub extra_metadata: BTreeMap<String, String>,
    /// The write operation.
    #[serde(default)]
    pub operation_type: OperationType,
    /// Keys this struct does not know, kept for a lossless round trip.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl CommitMetadata {
    /// Empty metadata for `operation_type`.
    pub fn new(operation_type: OperationType) -> Self {
        Self {
            operation_type,
            ..Self::default()
        }
    }

    /// Parses commit JSON. Empty content reads as empty metadata, as in Java (hudi-rs would fail on it, so this
    /// writer never writes an empty completed file).
    pub fn from_json(bytes: &[u8]) -> Result<Self, CommitError> {
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Self::default());
        }
        serde_json::from_slice(bytes).map_err(|source| CommitError::Json { source })
    }

    /// Jackson-style pretty JSON (what goes into `<t>.commit`).
    pub fn to_json_pretty(&self) -> Result<Vec<u8>, CommitError> {
        serde_json::to_vec_pretty(self).map_err(|source| CommitError::Json { source })
    }

    /// Adds one write stat under its partition.
    pub fn add_write_stat(&mut self, stat: WriteStat) {
        self.partition_to_write_stats
            .entry(stat.partition_path.clone())
            .or_default()
            .push(stat);
    }

    /// Every write stat, partition by partition.
    pub fn write_stats(&self) -> impl Iterator<Item = &WriteStat> {
        self.partition_to_write_stats.values().flatten()
    }

    /// The Avro schema in `extraMetadata.schema`, when present and non-empty.
    pub fn schema(&self) -> Option<&str> {
        self.extra_metadata
            .get(SCHEMA_KEY)
            .map(String::as_str)
            .filter(|s| !s.trim().is_empty())
    }

    /// Sets `extraMetadata.schema`.
    pub fn set_schema(&mut self, schema: &str) {
        self.extra_metadata
            .insert(SCHEMA_KEY.to_string(), schema.to_string());
    }

    /// The checkpoint in `extraMetadata` (see [`Checkpoint::from_extra_metadata`]).
    pub fn checkpoint(&self) -> Result<Option<Checkpoint>, CommitError> {
        Checkpoint::from_extra_metadata(&self.extra_metadata, None)
    }
}

/// `HoodieReplaceCommitMetadata`: commit metadata plus the file groups this instant replaced.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplaceCommitMetadata {
    /// Everything a commit has.
    #[serde(flatten)]
    pub commit: CommitMetadata,
    /// Partition path → ids of the file groups logically deleted by this instant.
    #[serde(default, deserialize_with = "null_as_empty_map")]
    pub partition_to_replace_file_ids: BTreeMap<String, Vec<String>>,
}

impl ReplaceCommitMetadata {
    /// Parses replacecommit JSON (empty content reads as empty metadata, as in Java).
    pub fn from_json(bytes: &[u8]) -> Result<Self, CommitError> {
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Self::default());
        }
        serde_json::from_slice(bytes).map_err(|source| CommitError::Json { source })
    }

    /// Jackson-style pretty JSON (what goes into `<t>.replacecommit`).
    pub fn to_json_pretty(&self) -> Result<Vec<u8>, CommitError> {
        serde_json::to_vec_pretty(self).map_err(|source| CommitError::Json { source })
    }

    /// Every replaced (partition, file id).
    pub fn replaced_file_groups(&self) -> impl Iterator<Item = (&str, &str)> {
        self.partition_to_replace_file_ids
            .iter()
            .flat_map(|(p, ids)| ids.iter().map(move |id| (p.as_str(), id.as_str())))
    }
}

/// Partition → next offset to read, for one topic.
pub type PartitionOffsets = BTreeMap<i32, i64>;

/// The Kafka position a commit has consumed up to: per topic, per partition, the next offset to read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checkpoint {
    topics: BTreeMap<String, PartitionOffsets>,
}

/// Kafka's legal topic names: 1–249 of `[A-Za-z0-9._-]`.
fn is_topic_name(topic: &str) -> bool {
    (1..=249).contains(&topic.len())
        && topic
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

impl Checkpoint {
    /// An empty checkpoint.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the next offset of one topic-partition.
    pub fn set(&mut self, topic: &str, partition: i32, next_offset: i64) {
        self.topics
            .entry(topic.to_string())
            .or_default()
            .insert(partition, next_offset);
    }

    /// The next offset of one topic-partition.
    pub fn get(&self, topic: &str, partition: i32) -> Option<i64> {
        self.topics.get(topic)?.get(&partition).copied()
    }

    /// Topic → partition offsets.
    pub fn topics(&self) -> &BTreeMap<String, PartitionOffsets> {
        &self.topics
    }

    /// Whether no topic is recorded.
    pub fn is_empty(&self) -> bool {
        self.topics.is_empty()
    }

    fn check(&self) -> Result<(), CommitError> {
        for (topic, offsets) in &self.topics {
            if !is_topic_name(topic) {
                return Err(CommitError::UnrenderableCheckpoint {
                    reason: format!("{topic:?} is not a Kafka topic name"),
                });
            }
            if let Some((p, o)) = offsets.iter().find(|(p, o)| **p < 0 || **o < 0) {
                return Err(CommitError::UnrenderableCheckpoint {
                    reason: format!(
                        "{topic} partition {p} offset {o}: partitions and offsets must be >= 0"
                    ),
                });
            }
        }
        Ok(())
    }

    /// The single topic and its offsets, when there is exactly one topic.
    fn single_topic(&self) -> Option<(&String, &PartitionOffsets)> {
        if self.topics.len() == 1 {
            self.topics.iter().next()
        } else {
            None
        }
    }

    /// `deltastreamer.checkpoint.key` format, `topic,0:123,1:456` (only for exactly one topic).
    pub fn to_deltastreamer(&self) -> Option<String> {
        let (topic, offsets) = self.single_topic()?;
        let mut out = topic.clone();
        for (p, o) in offsets {
            out.push_str(&format!(",{p}:{o}"));
        }
        Some(out)
    }

    /// `kafka.commit.offsets` format, `0=123,1=456` (only for exactly one topic).
    pub fn to_kafka_connect(&self) -> Option<String> {
        let (_, offsets) = self.single_topic()?;
        Some(
            offsets
                .iter()
                .map(|(p, o)| format!("{p}={o}"))
                .collect::<Vec<_>>()
                .join(","),
        )
    }

    /// `hudi.sink.checkpoint` format, `{"topic":{"0":123}}`.
    pub fn to_sink_json(&self) -> String {
        let mut root = Map::new();
        for (topic, offsets) in &self.topics {
            let inner: Map<String, Value> = offsets
                .iter()
                .map(|(p, o)| (p.to_string(), Value::from(*o)))
                .collect();
            root.insert(topic.clone(), Value::Object(inner));
        }
        Value::Object(root).to_string()
    }

    /// Writes all formats into `extra` (the single-topic ones only for one topic; stale ones are removed).
    pub fn write_to(&self, extra: &mut BTreeMap<String, String>) -> Result<(), CommitError> {
        self.check()?;
        extra.insert(SINK_CHECKPOINT_KEY.to_string(), self.to_sink_json());
        match (self.to_deltastreamer(), self.to_kafka_connect()) {
            (Some(ds), Some(kc)) => {
                extra.insert(DELTASTREAMER_CHECKPOINT_KEY.to_string(), ds);
                extra.insert(KAFKA_COMMIT_OFFSETS_KEY.to_string(), kc);
            }
            _ => {
                extra.remove(DELTASTREAMER_CHECKPOINT_KEY);
                extra.remove(KAFKA_COMMIT_OFFSETS_KEY);
            }
        }
        Ok(())
    }

    /// Reads the checkpoint from `extraMetadata`: `hudi.sink.checkpoint` if present, else
    /// `deltastreamer.checkpoint.key`, else `kafka.commit.offsets` attributed to `connect_topic` (an error when no
    /// topic is given, rather than a silent skip to an older checkpoint). `None` when no key is present.
    pub fn from_extra_metadata(
        extra: &BTreeMap<String, String>,
        connect_topic: Option<&str>,
    ) -> Result<Option<Self>, CommitError> {
        if let Some(v) = extra.get(SINK_CHECKPOINT_KEY) {
            return Self::parse_sink_json(v).map(Some);
        }
        if let Some(v) = extra.get(DELTASTREAMER_CHECKPOINT_KEY) {
            return Self::parse_deltastreamer(v).map(Some);
        }
        if let Some(v) = extra.get(KAFKA_COMMIT_OFFSETS_KEY) {
            return match connect_topic {
                Some(topic) => Self::parse_kafka_connect(topic, v).map(Some),
                None => Err(CommitError::TopicUnknown { value: v.clone() }),
            };
        }
        Ok(None)
    }

    /// Whether `extra` carries any checkpoint key.
    pub fn is_present_in(extra: &BTreeMap<String, String>) -> bool {
        [
            SINK_CHECKPOINT_KEY,
            DELTASTREAMER_CHECKPOINT_KEY,
            KAFKA_COMMIT_OFFSETS_KEY,
        ]
        .iter()
        .any(|k| extra.contains_key(*k))
    }

    /// Parses `{"topic":{"0":123}}`.
    pub fn parse_sink_json(value: &str) -> Result<Self, CommitError> {
        let bad = |reason: String| CommitError::InvalidCheckpoint {
            key: SINK_CHECKPOINT_KEY,
            value: value.to_string(),
            reason,
        };
        let parsed: BTreeMap<String, BTreeMap<String, i64>> =
            serde_json::from_str(value).map_err(|e| bad(e.to_string()))?;
        let mut cp = Checkpoint::new();
        for (topic, offsets) in parsed {
            cp.topics.entry(topic.clone()).or_default();
            for (p, o) in offsets {
                let partition = parse_partition(&p)
                    .ok_or_else(|| bad(format!("partition {p:?} of {topic}")))?;
                if o < 0 {
                    return Err(bad(format!("negative offset {o} for {topic}/{p}")));
                }
                cp.set(&topic, partition, o);
            }
        }
        Ok(cp)
    }

    /// Parses `topic,0:123,1:456` (HoodieStreamer's `KafkaOffsetGen.CheckpointUtils.strToOffsets`).
    pub fn parse_deltastreamer(value: &str) -> Result<Self, CommitError> {
        let bad = |reason: String| CommitError::InvalidCheckpoint {
            key: DELTASTREAMER_CHECKPOINT_KEY,
            value: value.to_string(),
            reason,
        };
        let mut parts = value.split(',');
        let topic = parts.next().unwrap_or_default();
        if topic.is_empty() {
            return Err(bad("no topic".to_string()));
        }
        let mut cp = Checkpoint::new();
        cp.topics.entry(topic.to_string()).or_default();
        for part in parts {
            let (p, o) = part
                .split_once(':')
                .ok_or_else(|| bad(format!("{part:?} is not partition:offset")))?;
            let partition = parse_partition(p).ok_or_else(|| bad(format!("partition {p:?}")))?;
            let offset = parse_offset(o).ok_or_else(|| bad(format!("offset {o:?}")))?;
            cp.set(topic, partition, offset);
        }
        Ok(cp)
    }

    /// Parses `0=123,1=456` as the offsets of `topic` (the Kafka Connect sink's format names no topic).
    pub fn parse_kafka_connect(topic: &str, value: &str) -> Result<Self, CommitError> {
        let bad = |reason: String| CommitError::InvalidCheckpoint {
            key: KAFKA_COMMIT_OFFSETS_KEY,
            value: value.to_string(),
            reason,
        };
        let mut cp = Checkpoint::new();
        cp.topics.entry(topic.to_string()).or_default();
        for part in value.split(',').filter(|s| !s.is_empty()) {
            let (p, o) = part
                .split_once('=')
                .ok_or_else(|| bad(format!("{part:?} is not partition=offset")))?;
            let partition = parse_partition(p).ok_or_else(|| bad(format!("partition {p:?}")))?;
            let offset = parse_offset(o).ok_or_else(|| bad(format!("offset {o:?}")))?;
            cp.set(topic, partition, offset);
        }
        Ok(cp)
    }
}

fn parse_partition(s: &str) -> Option<i32> {
    let s = s.trim();
    (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

fn parse_offset(s: &str) -> Option<i64> {
    let s = s.trim();
    (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

#[cfg(test)]
mod tests;
