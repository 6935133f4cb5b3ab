//! Dead letters: records that cannot be written, kept with everything needed to inspect and replay them.
//!
//! A record-level problem never fails a batch and never vanishes (docs/architecture.md, "Dead letters"): where
//! the record fails, the caller builds a [`DeadLetter`] with the constructor of that stage
//! ([`DeadLetter::base64`], [`DeadLetter::not_json`], [`DeadLetter::not_object`], [`DeadLetter::decode`],
//! [`DeadLetter::keyless_tombstone`], [`DeadLetter::key`], [`DeadLetter::partition`]), counts it, and hands the
//! batch's letters to a [`DeadLetterSink`] before the commit. For every batch: records in = rows written +
//! deletes + deduplicated + dead letters.
//!
//! A letter carries the Kafka coordinates (topic, partition, offset, timestamp), the key and value exactly as
//! delivered (the ESM's base64 text, even when it does not decode), the headers, the stage and a reason naming
//! the field. It is serialised as one JSON object per line:
//!
//! ```text
//! {"topic":"trips","partition":0,"offset":42,"timestamp_ms":1764412800123,"key_b64":"dHJpcC0x",
//!  "stage":"decode","reason":"field `ts`: expected long, found a string","value_b64":"eyJ0cyI6IngifQ=="}
//! ```
//!
//! [`StorageDeadLetterSink`] writes one JSON-lines object per topic-partition per call (one call per invocation)
//! under the dead-letter location, named `<topic>/<partition>/<first-offset>-<last-offset>-<uuid>.jsonl`, with
//! create-if-absent: nothing is ever overwritten. A redelivered batch (the invocation failed after its letters
//! were stored) stores its letters again in new objects; readers deduplicate on (topic, partition, offset,
//! stage), which the object names make cheap.
//!
//! # Where the letters go
//!
//! [`dead_letter_location`] picks, in this order:
//! 1. `hudi.sink.dead.letter.path`, if set;
//! 2. HoodieStreamer's `hoodie.errortable.base.path`, if set (the letters are JSON lines as above, not a Hudi
//!    error table; the other `hoodie.errortable.*` keys are accepted and ignored);
//! 3. the default, beside the table: `<hoodie.base.path>_dead_letters/` ([`default_dead_letter_uri`]; a table
//!    at the root of a bucket gets `<base>/_dead_letters/`).
//!
//! So a HoodieStreamer properties file runs unchanged, and a record is still never dropped: there is no no-op
//! sink, and `hoodie.errortable.enable=false` does not discard anything. The default lies outside the table,
//! so no table service can delete it and no listing the write path makes (`.hoodie/` on every begin and
//! commit, a partition on every clean) grows with the letters stored; inside `.hoodie/` it would. Data-file
//! deletion (rollback, the sweep of retired instants, clean) and the file-slice listing also skip `.hoodie/`
//! altogether, which keeps an explicitly configured location inside the table safe as well (the test
//! `dead_letters_at_the_default_place_survive_every_service` holds this). The IAM policy of a deployment must
//! allow writing there (the SAM and Terraform stacks set `hudi.sink.dead.letter.path` explicitly).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::record::decode::{RecordDecodeError, RecordErrorKind};
use crate::record::keygen::KeyError;
use crate::source::{Base64Error, KafkaRecord};
use crate::storage::{validate_relative_path, PutOutcome, Storage, StorageError};

/// The configuration key of the dead-letter location (a storage URI or directory).
pub const DEAD_LETTER_PATH_KEY: &str = "hudi.sink.dead.letter.path";

/// HoodieStreamer's error-table location, used for dead letters when [`DEAD_LETTER_PATH_KEY`] is not set.
pub const ERROR_TABLE_PATH_KEY: &str = "hoodie.errortable.base.path";

/// The keys this module reads ([`DEAD_LETTER_PATH_KEY`] is the sink configuration's).
pub const KEYS: &[&str] = &[ERROR_TABLE_PATH_KEY];

/// The default location of dead letters: beside the table, its base path with this suffix (see the module doc
/// for why not inside it).
pub const DEFAULT_DEAD_LETTER_SUFFIX: &str = "_dead_letters/";

/// The default dead-letter location of a table at `base_path`: `<base_path>_dead_letters/`, or
/// `<base_path>/_dead_letters/` for a table at the root of a bucket (which has no sibling prefix).
pub fn default_dead_letter_uri(base_path: &str) -> String {
    let base = base_path.trim().trim_end_matches('/');
    let bucket_root = base
        .split_once("://")
        .is_some_and(|(_, rest)| !rest.contains('/'));
    if bucket_root {
        format!("{base}/{DEFAULT_DEAD_LETTER_SUFFIX}")
    } else {
        format!("{base}{DEFAULT_DEAD_LETTER_SUFFIX}")
    }
}

/// How many fresh object names [`StorageDeadLetterSink`] tries when a name is taken (a UUID collision, so in
/// practice a misbehaving store).
const NAME_ATTEMPTS: usize = 3;

/// Failures to configure or write dead letters. A failed write fails the invocation: the batch is retried
/// rather than committed without its letters.
#[derive(Debug, Error)]
pub enum DeadLetterError {
    /// The storage refused the object.
    #[error("writing dead letters to {path}: {source}")]
    Storage {
        /// The object path (relative to the dead-letter prefix).
        path: String,
        /// The storage error.
        #[source]
        source: StorageError,
    },
    /// Fresh object names kept colliding.
    #[error("dead-letter object names for {topic}-{partition} kept colliding (last: {path})")]
    NameCollision {
        /// Topic.
        topic: String,
        /// Partition.
        partition: i32,
        /// The last name tried.
        path: String,
    },
    /// A letter could not be serialised.
    #[error("serialising the dead letter of {topic}-{partition} offset {offset}: {source}")]
    Serialize {
        /// Topic.
        topic: String,
        /// Partition.
        partition: i32,
        /// Offset.
        offset: i64,
        /// serde's error.
        #[source]
        source: serde_json::Error,
    },
}

/// Which rule chose the dead-letter location (logged at start-up, so an operator sees where bad records go).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeadLetterSource {
    /// `hudi.sink.dead.letter.path`.
    SinkKey,
    /// `hoodie.errortable.base.path`.
    ErrorTable,
    /// [`default_dead_letter_uri`]: beside the table's base path.
    TableDefault,
}

impl DeadLetterSource {
    /// The key that chose the location, or `"default"`.
    pub fn as_str(self) -> &'static str {
        match self {
            DeadLetterSource::SinkKey => DEAD_LETTER_PATH_KEY,
            DeadLetterSource::ErrorTable => ERROR_TABLE_PATH_KEY,
            DeadLetterSource::TableDefault => "default",
        }
    }
}

/// Where dead letters go, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetterLocation {
    /// A storage URI or directory, as given to [`crate::storage::open_storage`].
    pub uri: String,
    /// The rule that chose it.
    pub source: DeadLetterSource,
}

/// The dead-letter location for a table at `base_path` (see the module doc for the order of the rules). Blank
/// values count as unset.
pub fn dead_letter_location(
    properties: &BTreeMap<String, String>,
    base_path: &str,
) -> DeadLetterLocation {
    let get = |key: &str| {
        properties
            .get(key)
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
    };
    if let Some(uri) = get(DEAD_LETTER_PATH_KEY) {
        return DeadLetterLocation {
            uri: uri.to_string(),
            source: DeadLetterSource::SinkKey,
        };
    }
    if let Some(uri) = get(ERROR_TABLE_PATH_KEY) {
        return DeadLetterLocation {
            uri: uri.to_string(),
            source: DeadLetterSource::ErrorTable,
        };
    }
    DeadLetterLocation {
        uri: default_dead_letter_uri(base_path),
        source: DeadLetterSource::TableDefault,
    }
}

/// Where in the write path a record failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeadLetterStage {
    /// The key or value is not valid base64.
    Base64,
    /// The value is not UTF-8 JSON.
    NotJson,
    /// The value is JSON but not an object.
    NotObject,
    /// The object does not fit the table schema.
    Decode,
    /// The value is not an Avro datum of its writer schema.
    NotAvro,
    /// The value's writer schema is unknown or does not resolve to the table schema (framing, registry id).
    Schema,
    /// A tombstone (null value) without a Kafka key: there is nothing to delete by.
    KeylessTombstone,
    /// No record key can be made (null or empty key field, unreadable key value).
    Key,
    /// No partition path can be made (unsafe value, unparsable timestamp).
    Partition,
    /// JSON that is not a Debezium change event the sink applies (not an envelope, an op other than c, u,
    /// r, d, a delete without `before`).
    Envelope,
    /// The record's topic has no route to a table (a writer of many tables).
    Route,
}

impl DeadLetterStage {
    /// The stage as written in the JSON line.
    pub fn as_str(self) -> &'static str {
        match self {
            DeadLetterStage::Base64 => "base64",
            DeadLetterStage::NotJson => "not_json",
            DeadLetterStage::NotObject => "not_object",
            DeadLetterStage::Decode => "decode",
            DeadLetterStage::NotAvro => "not_avro",
            DeadLetterStage::Schema => "schema",
            DeadLetterStage::KeylessTombstone => "keyless_tombstone",
            DeadLetterStage::Key => "key",
            DeadLetterStage::Partition => "partition",
            DeadLetterStage::Envelope => "envelope",
            DeadLetterStage::Route => "route",
        }
    }
}

impl fmt::Display for DeadLetterStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One Kafka header of a dead-lettered record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeadLetterHeader {
    /// Header name.
    pub name: String,
    /// Header value, standard base64 (header values are arbitrary bytes).
    pub value_b64: String,
}

/// A record that cannot be written, with its raw content and the reason. Build it with the constructor of the
/// stage that failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeadLetter {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// Offset.
    pub offset: i64,
    /// Kafka timestamp, epoch milliseconds.
    pub timestamp_ms: i64,
    /// The key's base64 text as delivered (`None`: null key).
    pub key_b64: Option<String>,
    /// Where it failed.
    pub stage: DeadLetterStage,
    /// Why, naming the field where there is one.
    pub reason: String,
    /// The value's base64 text as delivered (`None`: tombstone).
    pub value_b64: Option<String>,
    /// Headers in delivery order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<DeadLetterHeader>,
}

impl DeadLetter {
    fn from_record(record: &KafkaRecord, stage: DeadLetterStage, reason: String) -> Self {
        DeadLetter {
            topic: record.topic.to_string(),
            partition: record.partition,
            offset: record.offset,
            timestamp_ms: record.timestamp_ms,
            key_b64: record.key_b64(),
            stage,
            reason,
            value_b64: record.value_b64(),
            headers: record
                .headers
                .iter()
                .map(|(name, value)| DeadLetterHeader {
                    name: name.clone(),
                    value_b64: STANDARD.encode(value),
                })
                .collect(),
        }
    }

    /// The key or value is not valid base64 (the raw text is kept as delivered).
    pub fn base64(record: &KafkaRecord, error: &Base64Error) -> Self {
        Self::from_record(record, DeadLetterStage::Base64, error.to_string())
    }

    /// The value is not UTF-8 JSON.
    pub fn not_json(record: &KafkaRecord, error: &RecordDecodeError) -> Self {
        Self::from_record(record, DeadLetterStage::NotJson, error.to_string())
    }

    /// The value is JSON but not an object.
    pub fn not_object(record: &KafkaRecord, error: &RecordDecodeError) -> Self {
        Self::from_record(record, DeadLetterStage::NotObject, error.to_string())
    }

    /// The object does not fit the table schema.
    pub fn decode(record: &KafkaRecord, error: &RecordDecodeError) -> Self {
        Self::from_record(record, DeadLetterStage::Decode, error.to_string())
    }

    /// The letter for any decoder refusal, with the stage its [`RecordErrorKind`] names.
    pub fn from_decode_error(record: &KafkaRecord, error: &RecordDecodeError) -> Self {
        match error.kind() {
            RecordErrorKind::NotJson => Self::not_json(record, error),
            RecordErrorKind::NotObject => Self::not_object(record, error),
            RecordErrorKind::Invalid => Self::decode(record, error),
            RecordErrorKind::NotAvro => {
                Self::from_record(record, DeadLetterStage::NotAvro, error.to_string())
            }
            RecordErrorKind::Schema => {
                Self::from_record(record, DeadLetterStage::Schema, error.to_string())
            }
        }
    }

    /// A value that is not a Debezium change event the sink applies; `not_json` when it is not JSON at all.
    pub fn envelope(record: &KafkaRecord, not_json: bool, reason: String) -> Self {
        let stage = match not_json {
            true => DeadLetterStage::NotJson,
            false => DeadLetterStage::Envelope,
        };
        Self::from_record(record, stage, reason)
    }

    /// A record whose topic no route sends to a table; `reason` names the topic.
    pub fn unrouted(record: &KafkaRecord, reason: String) -> Self {
        Self::from_record(record, DeadLetterStage::Route, reason)
    }

    /// A tombstone without a Kafka key.
    pub fn keyless_tombstone(record: &KafkaRecord) -> Self {
        Self::from_record(
            record,
            DeadLetterStage::KeylessTombstone,
            "tombstone (null value) without a Kafka key: no record to delete".to_string(),
        )
    }

    /// No record key can be made.
    pub fn key(record: &KafkaRecord, error: &KeyError) -> Self {
        Self::from_record(record, DeadLetterStage::Key, error.to_string())
    }

    /// No partition path can be made.
    pub fn partition(record: &KafkaRecord, error: &KeyError) -> Self {
        Self::from_record(record, DeadLetterStage::Partition, error.to_string())
    }

    /// The letter for any key generator refusal: partition-path errors ([`KeyError::Partition`],
    /// [`KeyError::Timestamp`]) as [`DeadLetterStage::Partition`], the rest as [`DeadLetterStage::Key`]. Callers
    /// that know which field failed use [`DeadLetter::key`] or [`DeadLetter::partition`] directly.
    pub fn from_key_error(record: &KafkaRecord, error: &KeyError) -> Self {
        match error {
            KeyError::Partition(_) | KeyError::Timestamp { .. } => Self::partition(record, error),
            _ => Self::key(record, error),
        }
    }

    /// The letter as one line of JSON (no newline).
    pub fn to_json_line(&self) -> Result<String, DeadLetterError> {
        serde_json::to_string(self).map_err(|source| DeadLetterError::Serialize {
            topic: self.topic.clone(),
            partition: self.partition,
            offset: self.offset,
            source,
        })
    }
}

/// What one [`DeadLetterSink::write`] stored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeadLetterReceipt {
    /// Object paths written (relative to the sink's root).
    pub objects: Vec<String>,
    /// Letters written.
    pub letters: usize,
    /// Letters per stage.
    pub by_stage: BTreeMap<DeadLetterStage, usize>,
}

/// Durable storage for dead letters.
///
/// Contract: when `write` returns `Ok`, every letter is durably stored and no earlier letter was overwritten;
/// when it returns `Err`, the caller fails the invocation (the batch is redelivered, and its letters written
/// again). Writing no letters stores nothing.
#[async_trait]
pub trait DeadLetterSink: Send + Sync + fmt::Debug {
    /// Stores the letters of one invocation.
    async fn write(&self, letters: &[DeadLetter]) -> Result<DeadLetterReceipt, DeadLetterError>;
}

/// Writes dead letters as JSON-lines objects into a [`Storage`] rooted at the dead-letter prefix (see the module
/// doc for names and guarantees).
#[derive(Debug)]
pub struct StorageDeadLetterSink {
    storage: Arc<dyn Storage>,
    letters_written: AtomicU64,
    objects_written: AtomicU64,
}

impl StorageDeadLetterSink {
    /// A sink writing under `storage`'s root (the `hudi.sink.dead.letter.path` prefix).
    pub fn new(storage: Arc<dyn Storage>) -> Self {
        StorageDeadLetterSink {
            storage,
            letters_written: AtomicU64::new(0),
            objects_written: AtomicU64::new(0),
        }
    }

    /// Letters written by this sink since it was built.
    pub fn letters_written(&self) -> u64 {
        self.letters_written.load(Ordering::Relaxed)
    }

    /// Objects written by this sink since it was built.
    pub fn objects_written(&self) -> u64 {
        self.objects_written.load(Ordering::Relaxed)
    }

    /// Where the letters go (for messages).
    pub fn base_uri(&self) -> &str {
        self.storage.base_uri()
    }

    async fn write_group(
        &self,
        topic: &str,
        partition: i32,
        letters: &[&DeadLetter],
    ) -> Result<String, DeadLetterError> {
        let first = letters.iter().map(|l| l.offset).min().unwrap_or_default();
        let last = letters.iter().map(|l| l.offset).max().unwrap_or_default();
        let mut body = String::new();
        for letter in letters {
            body.push_str(&letter.to_json_line()?);
            body.push('\n');
        }
        let body = Bytes::from(body);
        let mut path = String::new();
        for _ in 0..NAME_ATTEMPTS {
            path = format!(
                "{topic}/{partition}/{first}-{last}-{}.jsonl",
                uuid::Uuid::new_v4().simple()
            );
            validate_relative_path(&path).map_err(|source| DeadLetterError::Storage {
                path: path.clone(),
                source,
            })?;
            let outcome = self
                .storage
                .put_if_absent(&path, body.clone())
                .await
                .map_err(|source| DeadLetterError::Storage {
                    path: path.clone(),
                    source,
                })?;
            if outcome == PutOutcome::Created {
                return Ok(path);
            }
        }
        Err(DeadLetterError::NameCollision {
            topic: topic.to_string(),
            partition,
            path,
        })
    }
}

#[async_trait]
impl DeadLetterSink for StorageDeadLetterSink {
    async fn write(&self, letters: &[DeadLetter]) -> Result<DeadLetterReceipt, DeadLetterError> {
        // Group by topic-partition, in order of first appearance.
        let mut groups: Vec<(&str, i32, Vec<&DeadLetter>)> = Vec::new();
        let mut index: HashMap<(&str, i32), usize> = HashMap::new();
        let mut receipt = DeadLetterReceipt::default();
        for letter in letters {
            let key = (letter.topic.as_str(), letter.partition);
            let i = *index.entry(key).or_insert_with(|| {
                groups.push((key.0, key.1, Vec::new()));
                groups.len() - 1
            });
            if let Some(group) = groups.get_mut(i) {
                group.2.push(letter);
            }
            *receipt.by_stage.entry(letter.stage).or_default() += 1;
        }
        for (topic, partition, group) in &groups {
            let path = self.write_group(topic, *partition, group).await?;
            tracing::warn!(
                topic,
                partition,
                letters = group.len(),
                object = %path,
                root = self.storage.base_uri(),
                "records written to the dead-letter output"
            );
            self.objects_written.fetch_add(1, Ordering::Relaxed);
            self.letters_written
                .fetch_add(group.len() as u64, Ordering::Relaxed);
            receipt.objects.push(path);
            receipt.letters += group.len();
        }
        Ok(receipt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::decode::RecordDecoder;
    use crate::record::partition::{PartitionValueError, UnsafeReason};
    use crate::schema::arrow::avro_to_arrow;
    use crate::schema::avro::AvroSchema;
    use crate::source::KafkaBatch;
    use crate::storage::memory::MemoryStorage;

    fn record(offset: i64, key: Option<&str>, value: Option<&str>) -> KafkaRecord {
        let text = format!(
            r#"{{"eventSource":"SelfManagedKafka","bootstrapServers":"h","records":{{"trips-3":[{{
                "topic":"trips","partition":3,"offset":{offset},"timestamp":1764412800123,
                "key":{},"value":{},"headers":[{{"origin":[99,97,102,-61,-87]}}]}}]}}}}"#,
            key.map(|k| format!("{k:?}")).unwrap_or("null".into()),
            value.map(|v| format!("{v:?}")).unwrap_or("null".into()),
        );
        match KafkaBatch::from_json_str(&text) {
            Ok(mut b) => b.records.remove(0),
            Err(e) => panic!("{e}"),
        }
    }

    fn decode_error(json: &str) -> RecordDecodeError {
        let avro = AvroSchema::parse(
            r#"{"type":"record","name":"r","fields":[{"name":"ts","type":"long"}]}"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let arrow = avro_to_arrow(&avro).unwrap_or_else(|e| panic!("{e}"));
        let mut d =
            RecordDecoder::try_new(Arc::new(arrow), &avro).unwrap_or_else(|e| panic!("{e}"));
        match d.append(json.as_bytes()) {
            Ok(()) => panic!("{json} accepted"),
            Err(e) => e,
        }
    }

    #[test]
    fn one_constructor_per_stage() {
        let r = record(42, Some("dHJpcC0x"), Some("eyJ0cyI6IngifQ=="));
        let letter = DeadLetter::decode(&r, &decode_error(r#"{"ts":"x"}"#));
        assert_eq!(
            letter.to_json_line().unwrap_or_else(|e| panic!("{e}")),
            r#"{"topic":"trips","partition":3,"offset":42,"timestamp_ms":1764412800123,"key_b64":"dHJpcC0x","stage":"decode","reason":"field `ts`: expected long, found a string","value_b64":"eyJ0cyI6IngifQ==","headers":[{"name":"origin","value_b64":"Y2Fmw6k="}]}"#
        );
        let cases = [
            (
                DeadLetter::from_decode_error(&r, &decode_error("{")),
                DeadLetterStage::NotJson,
            ),
            (
                DeadLetter::from_decode_error(&r, &decode_error("[]")),
                DeadLetterStage::NotObject,
            ),
            (
                DeadLetter::from_decode_error(&r, &decode_error("{}")),
                DeadLetterStage::Decode,
            ),
            (
                DeadLetter::keyless_tombstone(&record(1, None, None)),
                DeadLetterStage::KeylessTombstone,
            ),
            (
                DeadLetter::from_key_error(
                    &r,
                    &KeyError::NullRecordKey {
                        field: "uuid".into(),
                    },
                ),
                DeadLetterStage::Key,
            ),
            (
                DeadLetter::from_key_error(
                    &r,
                    &KeyError::Partition(PartitionValueError::Unsafe {
                        field: "city".into(),
                        value: "../x".into(),
                        reason: UnsafeReason::DotSegment,
                    }),
                ),
                DeadLetterStage::Partition,
            ),
        ];
        for (letter, stage) in cases {
            assert_eq!(letter.stage, stage, "{letter:?}");
            assert!(!letter.reason.is_empty());
            assert_eq!((letter.topic.as_str(), letter.partition), ("trips", 3));
        }
        // Undecodable base64 keeps the text exactly as delivered.
        let bad = record(7, Some("a2V5"), Some("not base64!"));
        let crate::source::Payload::Undecodable(e) = bad.payload() else {
            panic!("{bad:?}");
        };
        let letter = DeadLetter::base64(&bad, e);
        assert_eq!(letter.stage, DeadLetterStage::Base64);
        assert_eq!(letter.value_b64.as_deref(), Some("not base64!"));
        assert!(
            letter
                .reason
                .starts_with("value is not valid standard base64"),
            "{}",
            letter.reason
        );
        // A round trip through the JSON line loses nothing.
        let line = letter.to_json_line().unwrap_or_else(|e| panic!("{e}"));
        let back: DeadLetter = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, letter);
    }

    #[tokio::test]
    async fn storage_sink_writes_one_object_per_partition_and_never_overwrites() {
        let storage = Arc::new(MemoryStorage::new("mem://dead"));
        let sink = StorageDeadLetterSink::new(storage.clone());
        let r = |topic: &str, partition: i32, offset: i64| {
            let mut rec = record(offset, None, Some("e30="));
            rec.topic = topic.into();
            rec.partition = partition;
            DeadLetter::decode(&rec, &decode_error("{}"))
        };
        let letters = vec![r("trips", 3, 10), r("trips", 0, 5), r("trips", 3, 12)];
        let first = sink.write(&letters).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(first.letters, 3);
        assert_eq!(first.by_stage.get(&DeadLetterStage::Decode), Some(&3));
        assert_eq!(first.objects.len(), 2);
        assert!(
            first.objects[0].starts_with("trips/3/10-12-"),
            "{:?}",
            first.objects
        );
        assert!(first.objects[0].ends_with(".jsonl"));
        assert!(first.objects[1].starts_with("trips/0/5-5-"));
        let body = storage
            .get(&first.objects[0])
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let lines: Vec<DeadLetter> = std::str::from_utf8(&body)
            .unwrap_or_else(|e| panic!("{e}"))
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}")))
            .collect();
        assert_eq!(lines, vec![letters[0].clone(), letters[2].clone()]);
        assert!(body.ends_with(b"\n"));
        // The same letters again (a redelivery): new objects, the old ones untouched.
        let second = sink.write(&letters).await.unwrap_or_else(|e| panic!("{e}"));
        assert!(second.objects.iter().all(|o| !first.objects.contains(o)));
        let listed = storage.list("").await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(listed.len(), 4);
        assert_eq!((sink.letters_written(), sink.objects_written()), (6, 4));
        // Nothing to write, nothing written.
        let empty = sink.write(&[]).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(empty, DeadLetterReceipt::default());
        assert_eq!(storage.list("").await.map(|l| l.len()).ok(), Some(4));
    }

    #[tokio::test]
    async fn hostile_topic_names_cannot_escape_the_prefix() {
        let storage = Arc::new(MemoryStorage::new("mem://dead"));
        let sink = StorageDeadLetterSink::new(storage.clone());
        let mut letter = DeadLetter::keyless_tombstone(&record(1, None, None));
        letter.topic = "..".into();
        assert!(matches!(
            sink.write(&[letter]).await,
            Err(DeadLetterError::Storage { .. })
        ));
        assert_eq!(storage.list("").await.map(|l| l.len()).ok(), Some(0));
    }

    #[test]
    fn location_is_the_sink_key_then_the_error_table_then_the_table_default() {
        let props = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let at = |pairs: &[(&str, &str)], base: &str| {
            let l = dead_letter_location(&props(pairs), base);
            (l.uri, l.source)
        };
        use DeadLetterSource::*;
        assert_eq!(
            at(&[], "s3://b/tables/trips"),
            ("s3://b/tables/trips_dead_letters/".into(), TableDefault)
        );
        assert_eq!(
            at(&[], "/data/trips/"),
            ("/data/trips_dead_letters/".into(), TableDefault)
        );
        // Blank values count as unset.
        assert_eq!(
            at(
                &[(DEAD_LETTER_PATH_KEY, " "), (ERROR_TABLE_PATH_KEY, "")],
                "t"
            ),
            ("t_dead_letters/".into(), TableDefault)
        );
        assert_eq!(
            at(&[], "s3://bucket/"),
            ("s3://bucket/_dead_letters/".into(), TableDefault)
        );
        assert_eq!(
            at(&[(ERROR_TABLE_PATH_KEY, " s3://b/errors/ ")], "t"),
            ("s3://b/errors/".into(), ErrorTable)
        );
        assert_eq!(
            at(
                &[
                    (ERROR_TABLE_PATH_KEY, "s3://b/errors/"),
                    (DEAD_LETTER_PATH_KEY, "s3://b/dead/")
                ],
                "t"
            ),
            ("s3://b/dead/".into(), SinkKey)
        );
        assert_eq!(SinkKey.as_str(), "hudi.sink.dead.letter.path");
        assert_eq!(ErrorTable.as_str(), "hoodie.errortable.base.path");
    }
}
