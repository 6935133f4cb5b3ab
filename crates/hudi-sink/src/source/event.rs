//! Parsing the ESM invocation payload (`aws:kafka` from Amazon MSK, `SelfManagedKafka` otherwise) into a
//! [`KafkaBatch`].
//!
//! The payload is read with serde straight into private structs that mirror the JSON (no `serde_json::Value`
//! tree of a 6 MB payload), then checked and converted:
//! - `timestamp` is deserialised as an `i64`, so every millisecond survives (a fractional or out-of-range number
//!   is an envelope error, never a rounded value);
//! - headers are arrays of **signed** bytes (Java `byte`); each `-128..=127` value is reinterpreted as the same
//!   bit pattern (`-61` → `0xC3`), so non-ASCII header text such as `"é"` = `[-61, -87]` comes out as its UTF-8
//!   bytes; anything outside that range is an envelope error;
//! - `key` and `value` are decoded with the standard, padded base64 alphabet. The decoder is strict (no
//!   whitespace, canonical padding and trailing bits), so the original text is always the canonical encoding of
//!   the bytes: the text is kept only when it does not decode ([`KafkaRecord::raw_value_b64`]), and
//!   [`KafkaRecord::value_b64`] gives it back exactly for dead letters either way. A string
//!   that does not decode marks the record [`Payload::Undecodable`]; an absent or `null` value is a tombstone.
//!
//! See the [module doc](super) for the envelope/record split and the batch invariants.

use std::borrow::Cow;
use std::sync::Arc;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use bytes::Bytes;
use serde::de::{self, Deserializer};
use serde::Deserialize;
use thiserror::Error;

mod raw;

use raw::{HeaderVisitor, RawEvent};

/// `eventSource` of an Amazon MSK event source mapping.
pub const MSK_EVENT_SOURCE: &str = "aws:kafka";
/// `eventSource` of a self-managed Kafka event source mapping (no `aws:` prefix).
pub const SELF_MANAGED_EVENT_SOURCE: &str = "SelfManagedKafka";

/// Why an invocation payload is not a usable Kafka batch. The invocation fails; nothing of it is written.
#[derive(Debug, Error)]
pub enum EventError {
    /// The payload is not JSON, or a field has the wrong JSON type or is missing inside a record (the message
    /// names the field, the `records` entry and the record index, with line and column).
    #[error("invalid Kafka event payload: {source}")]
    Json {
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },
    /// A required top-level field is absent or `null`.
    #[error(
        "not a Kafka event: required field `{field}` is missing{}",
        context.map(|c| format!(" ({c})")).unwrap_or_default()
    )]
    MissingField {
        /// The JSON field name.
        field: &'static str,
        /// Why it is required here.
        context: Option<&'static str>,
    },
    /// `eventSource` names another service (or the wrong spelling `aws:SelfManagedKafka`).
    #[error(
        "not a Kafka event: eventSource is {found:?}; expected {MSK_EVENT_SOURCE:?} (Amazon MSK) or \
         {SELF_MANAGED_EVENT_SOURCE:?} (self-managed Kafka)"
    )]
    NotKafka {
        /// The `eventSource` found.
        found: String,
    },
    /// A record sits under a `records` key that is not its own `<topic>-<partition>`.
    #[error(
        "records[{key:?}][{index}] is {topic}-{partition} offset {offset}: the key must be \"<topic>-<partition>\" \
         of its records"
    )]
    KeyMismatch {
        /// The `records` key.
        key: String,
        /// Position in that key's array.
        index: usize,
        /// The record's own topic.
        topic: String,
        /// The record's own partition.
        partition: i32,
        /// The record's offset.
        offset: i64,
    },
    /// The same `records` key appears twice (its records would interleave).
    #[error("records key {key:?} appears twice in one event")]
    DuplicateKey {
        /// The repeated key.
        key: String,
    },
    /// Offsets of one topic-partition do not strictly increase in delivery order.
    #[error(
        "{topic}-{partition}: offset {offset} follows offset {previous}; the ESM delivers each partition in \
         increasing offset order"
    )]
    OffsetOrder {
        /// Topic.
        topic: String,
        /// Partition.
        partition: i32,
        /// The offset delivered before.
        previous: i64,
        /// The offset that does not exceed it.
        offset: i64,
    },
    /// A record field holds a value Kafka cannot produce.
    #[error("records[{key:?}][{index}]: field `{field}` = {value} is invalid: {reason}")]
    InvalidRecordField {
        /// The `records` key.
        key: String,
        /// Position in that key's array.
        index: usize,
        /// The JSON field.
        field: &'static str,
        /// The value found.
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A top-level string field is empty.
    #[error("not a Kafka event: field `{field}` is empty")]
    EmptyField {
        /// The JSON field.
        field: &'static str,
    },
}

/// Where the batch came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventSource {
    /// Amazon MSK (`eventSource` = `aws:kafka`).
    Msk {
        /// The MSK cluster ARN (`eventSourceArn`).
        event_source_arn: String,
        /// Broker list (`bootstrapServers`), absent from some older payloads.
        bootstrap_servers: Option<String>,
    },
    /// Self-managed Kafka (`eventSource` = `SelfManagedKafka`; there is no ARN).
    SelfManaged {
        /// The configured broker endpoints (`bootstrapServers`).
        bootstrap_servers: String,
    },
}

/// Kafka's `TimestampType` as the ESM spells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TimestampType {
    /// `CREATE_TIME`: set by the producer.
    CreateTime,
    /// `LOG_APPEND_TIME`: set by the broker.
    LogAppendTime,
    /// `NO_TIMESTAMP_TYPE`: pre-0.10 message format.
    NoTimestampType,
    /// A spelling this crate does not know, kept verbatim rather than failing every invocation should AWS add
    /// one.
    Other(String),
}

impl TimestampType {
    fn parse(text: Cow<'_, str>) -> Self {
        match text.as_ref() {
            "CREATE_TIME" => TimestampType::CreateTime,
            "LOG_APPEND_TIME" => TimestampType::LogAppendTime,
            "NO_TIMESTAMP_TYPE" => TimestampType::NoTimestampType,
            _ => TimestampType::Other(text.into_owned()),
        }
    }

    /// The ESM's spelling.
    pub fn as_str(&self) -> &str {
        match self {
            TimestampType::CreateTime => "CREATE_TIME",
            TimestampType::LogAppendTime => "LOG_APPEND_TIME",
            TimestampType::NoTimestampType => "NO_TIMESTAMP_TYPE",
            TimestampType::Other(s) => s,
        }
    }
}

/// Which base64 field of a record failed to decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordPart {
    /// The Kafka key.
    Key,
    /// The Kafka value.
    Value,
}

impl RecordPart {
    /// `"key"` or `"value"`.
    pub fn as_str(self) -> &'static str {
        match self {
            RecordPart::Key => "key",
            RecordPart::Value => "value",
        }
    }
}

/// A record's key or value is not valid base64 (a record-level failure: the record becomes a dead letter).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{} is not valid standard base64: {reason}", part.as_str())]
pub struct Base64Error {
    /// Key or value.
    pub part: RecordPart,
    /// The decoder's message (symbol and position).
    pub reason: String,
}

/// One Kafka record of the batch.
///
/// `key`/`value` hold the decoded bytes; when a base64 string does not decode, the field is `None`,
/// [`KafkaRecord::base64_error`] says why, and [`KafkaRecord::payload`] is [`Payload::Undecodable`]. Use
/// [`KafkaRecord::payload`] rather than `value.is_none()` to tell a tombstone from a broken record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KafkaRecord {
    /// Topic name, shared by the records of one topic-partition (no allocation per record).
    pub topic: Arc<str>,
    /// Partition number (≥ 0).
    pub partition: i32,
    /// Offset in the partition (≥ 0).
    pub offset: i64,
    /// Record timestamp, epoch milliseconds, exactly as delivered.
    pub timestamp_ms: i64,
    /// How the timestamp was set; `None` when the payload omits `timestampType`.
    pub timestamp_type: Option<TimestampType>,
    /// Decoded Kafka key; `None` for a null key (or an undecodable one, see `base64_error`). A slice of the
    /// batch's one buffer of decoded bytes, like `value`.
    pub key: Option<Bytes>,
    /// Decoded Kafka value; `None` for a tombstone (or an undecodable one, see `base64_error`).
    pub value: Option<Bytes>,
    /// Headers in delivery order, duplicates kept, values as unsigned bytes. A `null` header value (Kafka
    /// allows one) is delivered as an empty value.
    pub headers: Vec<(String, Vec<u8>)>,
    /// The key's base64 text as delivered, kept only when it did not decode; see [`KafkaRecord::key_b64`].
    pub raw_key_b64: Option<String>,
    /// The value's base64 text as delivered, kept only when it did not decode; see [`KafkaRecord::value_b64`].
    pub raw_value_b64: Option<String>,
    /// Set when `key` or `value` did not decode (the key is checked first).
    pub base64_error: Option<Base64Error>,
    /// `valueSchemaMetadata`: present when the event source mapping reads values through a schema registry
    /// (its framing is then already removed from `value`).
    pub value_schema: Option<SchemaMetadata>,
}

/// The ESM's schema-registry metadata of a value (`valueSchemaMetadata`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaMetadata {
    /// `AVRO`, `PROTOBUF` or `JSON`, as the ESM writes it.
    pub data_format: String,
    /// The registry's id of the writer schema: a Confluent integer or a Glue version UUID, as text.
    pub schema_id: String,
}

/// What a record carries, for the write path to match on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Payload<'a> {
    /// A value to decode (possibly empty bytes, which is not a tombstone).
    Value(&'a [u8]),
    /// A null or absent value: a delete of the record keyed by the Kafka key.
    Tombstone,
    /// The key or value is not valid base64: a dead letter.
    Undecodable(&'a Base64Error),
}

impl KafkaRecord {
    /// The key's base64 text exactly as delivered (`None` for a null key), for dead letters.
    pub fn key_b64(&self) -> Option<String> {
        self.raw_key_b64
            .clone()
            .or_else(|| self.key.as_ref().map(|k| STANDARD.encode(k)))
    }

    /// The value's base64 text exactly as delivered (`None` for a tombstone), for dead letters.
    pub fn value_b64(&self) -> Option<String> {
        self.raw_value_b64
            .clone()
            .or_else(|| self.value.as_ref().map(|v| STANDARD.encode(v)))
    }

    /// The record's payload: value, tombstone, or undecodable.
    pub fn payload(&self) -> Payload<'_> {
        if let Some(err) = &self.base64_error {
            return Payload::Undecodable(err);
        }
        match &self.value {
            Some(v) => Payload::Value(v),
            None => Payload::Tombstone,
        }
    }

    /// `<topic>-<partition>`, the ESM's key for this record's partition.
    pub fn partition_key(&self) -> String {
        format!("{}-{}", self.topic, self.partition)
    }
}

/// One ESM invocation: where it came from and its records in delivery order (see the module invariants).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KafkaBatch {
    /// MSK or self-managed, with the cluster identity.
    pub source: EventSource,
    /// The records, in delivery order.
    pub records: Vec<KafkaRecord>,
}

impl KafkaBatch {
    /// Parses an invocation payload.
    pub fn from_slice(payload: &[u8]) -> Result<Self, EventError> {
        let raw: RawEvent =
            serde_json::from_slice(payload).map_err(|source| EventError::Json { source })?;
        raw.into_batch()
    }

    /// The event source of an invocation payload, without reading its records into memory (the JSON is
    /// still checked whole).
    ///
    /// The fields are read up to the `records` member, which comes last in the ESM's payloads: it is skipped
    /// only when a field of the source may follow it, and a JSON error after the fields is left to
    /// [`KafkaBatch::from_slice`] of the same payload.
    pub fn source_of(payload: &[u8]) -> Result<EventSource, EventError> {
        let mut header = None;
        let mut de = serde_json::Deserializer::from_slice(payload);
        let read = de.deserialize_map(HeaderVisitor(&mut header));
        match (header, read) {
            (Some(header), _) => header.into_source(),
            (None, Err(source)) => Err(EventError::Json { source }),
            (None, Ok(())) => Err(EventError::MissingField {
                field: "eventSource",
                context: None,
            }),
        }
    }

    /// Parses an invocation payload given as text.
    pub fn from_json_str(payload: &str) -> Result<Self, EventError> {
        Self::from_slice(payload.as_bytes())
    }

    /// Parses an already deserialised payload (what a `LambdaEvent<serde_json::Value>` handler holds).
    pub fn from_value(payload: serde_json::Value) -> Result<Self, EventError> {
        let text = serde_json::to_vec(&payload).map_err(|source| EventError::Json { source })?;
        Self::from_slice(&text)
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether the batch has no records.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Bytes of the records' keys and values (decoded, without the payload's JSON and base64): how full the
    /// batch is, whatever its record count.
    pub fn payload_bytes(&self) -> u64 {
        let len = |b: &Option<Bytes>| b.as_ref().map_or(0, |b| b.len() as u64);
        self.records
            .iter()
            .map(|r| len(&r.key) + len(&r.value))
            .sum()
    }
}

/// `KafkaBatch` can be the event type of a Lambda handler directly; the checks of
/// [`KafkaBatch::from_slice`] apply and their message becomes the deserialisation error.
impl<'de> Deserialize<'de> for KafkaBatch {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = RawEvent::deserialize(deserializer)?;
        raw.into_batch().map_err(de::Error::custom)
    }
}

#[cfg(test)]
mod tests;
