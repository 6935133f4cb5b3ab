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
use std::collections::HashSet;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use bytes::Bytes;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use thiserror::Error;

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

// ---------------------------------------------------------------------------------------------------------------
// The JSON shape.

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawEvent<'a> {
    #[serde(default)]
    event_source: Option<String>,
    #[serde(default)]
    event_source_arn: Option<String>,
    #[serde(default)]
    bootstrap_servers: Option<String>,
    #[serde(default, borrow)]
    records: Option<RawRecords<'a>>,
}

/// One record; the base64 texts are borrowed from the payload where it allows (no escapes), decoded
/// straight from there and kept only if they do not decode.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawRecord<'a> {
    #[serde(borrow)]
    topic: Cow<'a, str>,
    partition: i32,
    offset: i64,
    timestamp: i64,
    #[serde(default, borrow)]
    timestamp_type: Option<Text<'a>>,
    #[serde(default, borrow)]
    key: Option<Text<'a>>,
    #[serde(default, borrow)]
    value: Option<Text<'a>>,
    #[serde(default)]
    headers: Option<Vec<RawHeaderObject>>,
    #[serde(default)]
    value_schema_metadata: Option<RawSchemaMetadata>,
}

/// A string borrowed from the payload when it has no escapes. serde borrows a `Cow<str>` field only when the
/// field's type is the `Cow` itself: inside an `Option` it would copy every key and value.
#[derive(Deserialize)]
#[serde(transparent)]
struct Text<'a>(#[serde(borrow)] Cow<'a, str>);

/// `valueSchemaMetadata` as delivered (`schemaId` is a string in AWS's samples; a number is accepted too).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawSchemaMetadata {
    #[serde(default)]
    data_format: Option<String>,
    #[serde(default)]
    schema_id: Option<serde_json::Value>,
}

/// The `records` object in document order (a map type would lose the delivery order).
struct RawRecords<'de>(Vec<(String, Vec<RawRecord<'de>>)>);

impl<'de: 'a, 'a> Deserialize<'de> for RawRecords<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct RecordsVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for RecordsVisitor<'a> {
            type Value = RawRecords<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of \"<topic>-<partition>\" keys to arrays of records")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawRecords<'a>, A::Error> {
                let mut out = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    let records = map.next_value_seed(PartitionSeed {
                        key: &key,
                        records: std::marker::PhantomData,
                    })?;
                    out.push((key, records));
                }
                Ok(RawRecords(out))
            }
        }
        deserializer.deserialize_map(RecordsVisitor(std::marker::PhantomData))
    }
}

/// Deserialises one `records` entry, naming the key and index of a record that fails.
struct PartitionSeed<'k, 'a> {
    key: &'k str,
    records: std::marker::PhantomData<&'a ()>,
}

impl<'de: 'a, 'a> DeserializeSeed<'de> for PartitionSeed<'_, 'a> {
    type Value = Vec<RawRecord<'a>>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        struct SeqVisitor<'k, 'a> {
            key: &'k str,
            records: std::marker::PhantomData<&'a ()>,
        }
        impl<'de: 'a, 'a> Visitor<'de> for SeqVisitor<'_, 'a> {
            type Value = Vec<RawRecord<'a>>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "an array of records under {:?}", self.key)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                loop {
                    let index = out.len();
                    match seq.next_element::<RawRecord<'a>>() {
                        Ok(Some(r)) => out.push(r),
                        Ok(None) => return Ok(out),
                        Err(e) => {
                            return Err(de::Error::custom(format_args!(
                                "records[{:?}][{index}]: {e}",
                                self.key
                            )))
                        }
                    }
                }
            }
        }
        deserializer.deserialize_seq(SeqVisitor {
            key: self.key,
            records: self.records,
        })
    }
}

/// One `{ "name": [signed bytes] }` header object (normally one entry; several are kept in order).
struct RawHeaderObject(Vec<(String, Vec<u8>)>);

impl<'de> Deserialize<'de> for RawHeaderObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct HeaderVisitor;
        impl<'de> Visitor<'de> for HeaderVisitor {
            type Value = RawHeaderObject;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a header object {\"name\": [signed bytes -128..=127]}")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawHeaderObject, A::Error> {
                let mut out = Vec::with_capacity(1);
                while let Some(name) = map.next_key::<String>()? {
                    let signed: Option<Vec<i8>> = map
                        .next_value()
                        .map_err(|e| de::Error::custom(format_args!("header {name:?}: {e}")))?;
                    // `as u8` keeps the bit pattern: Java's byte -61 is the octet 0xC3.
                    let bytes = signed
                        .unwrap_or_default()
                        .into_iter()
                        .map(|b| b as u8)
                        .collect();
                    out.push((name, bytes));
                }
                Ok(RawHeaderObject(out))
            }
        }
        deserializer.deserialize_map(HeaderVisitor)
    }
}

/// The top-level fields of an invocation payload, without its records.
struct RawHeader {
    event_source: Option<String>,
    event_source_arn: Option<String>,
    bootstrap_servers: Option<String>,
}

/// Reads the top-level fields of a payload into its header, and stops at `records` once they are enough to name
/// the source (the rest of the payload is then not read).
struct HeaderVisitor<'a>(&'a mut Option<RawHeader>);

impl<'de> Visitor<'de> for HeaderVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Kafka event object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut header = RawHeader {
            event_source: None,
            event_source_arn: None,
            bootstrap_servers: None,
        };
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match key.as_ref() {
                "eventSource" => header.event_source = map.next_value()?,
                "eventSourceArn" => header.event_source_arn = map.next_value()?,
                "bootstrapServers" => header.bootstrap_servers = map.next_value()?,
                "records" if header.is_complete() => break,
                _ => {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
        }
        *self.0 = Some(header);
        Ok(())
    }
}

impl RawHeader {
    /// Whether no field that names the source can still come (an MSK event's `bootstrapServers` is optional).
    fn is_complete(&self) -> bool {
        match self.event_source.as_deref() {
            Some(MSK_EVENT_SOURCE) => {
                self.event_source_arn.is_some() && self.bootstrap_servers.is_some()
            }
            Some(SELF_MANAGED_EVENT_SOURCE) => self.bootstrap_servers.is_some(),
            Some(_) => true,
            None => false,
        }
    }

    fn into_source(self) -> Result<EventSource, EventError> {
        let event_source = self.event_source.ok_or(EventError::MissingField {
            field: "eventSource",
            context: None,
        })?;
        Ok(match event_source.as_str() {
            MSK_EVENT_SOURCE => {
                let arn = self.event_source_arn.ok_or(EventError::MissingField {
                    field: "eventSourceArn",
                    context: Some("an aws:kafka event names its MSK cluster"),
                })?;
                if arn.is_empty() {
                    return Err(EventError::EmptyField {
                        field: "eventSourceArn",
                    });
                }
                EventSource::Msk {
                    event_source_arn: arn,
                    bootstrap_servers: self.bootstrap_servers,
                }
            }
            SELF_MANAGED_EVENT_SOURCE => {
                let servers = self.bootstrap_servers.ok_or(EventError::MissingField {
                    field: "bootstrapServers",
                    context: Some("a SelfManagedKafka event names its brokers"),
                })?;
                if servers.is_empty() {
                    return Err(EventError::EmptyField {
                        field: "bootstrapServers",
                    });
                }
                EventSource::SelfManaged {
                    bootstrap_servers: servers,
                }
            }
            _ => {
                return Err(EventError::NotKafka {
                    found: event_source,
                })
            }
        })
    }
}

impl RawEvent<'_> {
    fn into_batch(self) -> Result<KafkaBatch, EventError> {
        let source = RawHeader {
            event_source: self.event_source,
            event_source_arn: self.event_source_arn,
            bootstrap_servers: self.bootstrap_servers,
        }
        .into_source()?;
        let RawRecords(entries) = self.records.ok_or(EventError::MissingField {
            field: "records",
            context: None,
        })?;
        let total = entries.iter().map(|(_, r)| r.len()).sum();
        let mut records = Vec::with_capacity(total);
        let mut spans = Vec::with_capacity(total);
        // One buffer for every decoded key and value (base64 is never shorter than its bytes), sliced by the
        // records once it is full: no allocation per record, and the decoder then reads one contiguous region.
        let text_bytes: usize = entries
            .iter()
            .flat_map(|(_, r)| r.iter())
            .map(|r| {
                r.key.as_ref().map_or(0, |t| t.0.len()) + r.value.as_ref().map_or(0, |t| t.0.len())
            })
            .sum();
        let mut arena =
            Vec::with_capacity(base64_simd::STANDARD.estimated_decoded_length(text_bytes));
        let mut keys: HashSet<&str> = HashSet::with_capacity(entries.len());
        for (key, _) in &entries {
            if !keys.insert(key.as_str()) {
                return Err(EventError::DuplicateKey { key: key.clone() });
            }
        }
        for (key, raw_records) in entries {
            let mut previous: Option<i64> = None;
            let mut topic = None;
            for (index, raw) in raw_records.into_iter().enumerate() {
                let (record, span) = convert_record(&key, index, raw, &mut arena, &mut topic)?;
                if let Some(previous) = previous {
                    if record.offset <= previous {
                        return Err(EventError::OffsetOrder {
                            topic: record.topic.to_string(),
                            partition: record.partition,
                            previous,
                            offset: record.offset,
                        });
                    }
                }
                previous = Some(record.offset);
                records.push(record);
                spans.push(span);
            }
        }
        let arena = Bytes::from(arena);
        for (record, span) in records.iter_mut().zip(spans) {
            record.key = span.key.map(|r| arena.slice(r));
            record.value = span.value.map(|r| arena.slice(r));
        }
        Ok(KafkaBatch { source, records })
    }
}

/// Kafka's rule for topic names (`Topic.validate`): 1–249 characters of `[A-Za-z0-9._-]`, not `.` or `..`.
fn is_kafka_topic_name(topic: &str) -> bool {
    (1..=249).contains(&topic.len())
        && topic != "."
        && topic != ".."
        && topic
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Whether `key` is exactly `<topic>-<partition>`, without allocating.
fn key_matches(key: &str, topic: &str, partition: i32) -> bool {
    let Some(rest) = key.strip_prefix(topic) else {
        return false;
    };
    let Some(number) = rest.strip_prefix('-') else {
        return false;
    };
    // Only the canonical decimal form: digits only (no sign), no leading zeros.
    !number.is_empty()
        && number.bytes().all(|b| b.is_ascii_digit())
        && (number == "0" || !number.starts_with('0'))
        && number.parse::<i32>().ok() == Some(partition)
}

/// Strict standard base64 (canonical padding, no trailing bits), SIMD where the CPU has it: values are most
/// of a payload's bytes. The bytes are appended to `arena` (the batch's one buffer) and their range returned;
/// on an error `arena` is left as it was. Text the fast decoder refuses goes through the `base64` crate, whose
/// decision and message are the reference (a unit test compares the two decoders).
fn decode_base64(text: &[u8], arena: &mut Vec<u8>) -> Result<Range<usize>, base64::DecodeError> {
    let start = arena.len();
    if base64_simd::STANDARD.decode_append(text, arena).is_err() {
        arena.truncate(start);
        let bytes = STANDARD.decode(text)?;
        arena.extend_from_slice(&bytes);
    }
    Ok(start..arena.len())
}

/// Where a record's decoded key and value sit in the batch's buffer, until the buffer is frozen.
#[derive(Default)]
struct Spans {
    key: Option<Range<usize>>,
    value: Option<Range<usize>>,
}

fn convert_record(
    key: &str,
    index: usize,
    raw: RawRecord<'_>,
    arena: &mut Vec<u8>,
    topic: &mut Option<Arc<str>>,
) -> Result<(KafkaRecord, Spans), EventError> {
    let invalid =
        |field: &'static str, value: String, reason: &'static str| EventError::InvalidRecordField {
            key: key.to_string(),
            index,
            field,
            value,
            reason,
        };
    if raw.topic.is_empty() {
        return Err(invalid(
            "topic",
            "\"\"".into(),
            "a topic name is never empty",
        ));
    }
    if !is_kafka_topic_name(&raw.topic) {
        // Kafka refuses such names, and the topic becomes part of dead-letter object paths: a `..` or a `/`
        // there must never reach storage.
        return Err(invalid(
            "topic",
            format!("{:?}", raw.topic.chars().take(300).collect::<String>()),
            "not a Kafka topic name (1 to 249 of A-Z a-z 0-9 . _ -, and not . or ..)",
        ));
    }
    if raw.partition < 0 {
        return Err(invalid(
            "partition",
            raw.partition.to_string(),
            "partitions are numbered from 0",
        ));
    }
    if raw.offset < 0 {
        return Err(invalid(
            "offset",
            raw.offset.to_string(),
            "offsets are never negative",
        ));
    }
    if !key_matches(key, &raw.topic, raw.partition) {
        return Err(EventError::KeyMismatch {
            key: key.to_string(),
            index,
            topic: raw.topic.into_owned(),
            partition: raw.partition,
            offset: raw.offset,
        });
    }
    // The text is kept only when it does not decode: STANDARD decoding is strict (canonical padding, no
    // trailing bits), so decoded bytes re-encode to exactly the delivered text.
    let mut base64_error = None;
    let mut spans = Spans::default();
    let raw_key_b64 = match raw.key {
        None => None,
        Some(Text(text)) => match decode_base64(text.as_bytes(), arena) {
            Ok(range) => {
                spans.key = Some(range);
                None
            }
            Err(e) => {
                base64_error = Some(Base64Error {
                    part: RecordPart::Key,
                    reason: e.to_string(),
                });
                Some(text.into_owned())
            }
        },
    };
    let raw_value_b64 = match raw.value {
        None => None,
        Some(Text(text)) => match decode_base64(text.as_bytes(), arena) {
            Ok(range) => {
                spans.value = Some(range);
                None
            }
            Err(e) => {
                base64_error.get_or_insert(Base64Error {
                    part: RecordPart::Value,
                    reason: e.to_string(),
                });
                Some(text.into_owned())
            }
        },
    };
    let headers = raw
        .headers
        .unwrap_or_default()
        .into_iter()
        .flat_map(|h| h.0)
        .collect();
    // Every record of a key has the key's topic (checked above): one shared name per key.
    let topic = match topic {
        Some(t) if **t == *raw.topic => t.clone(),
        _ => topic.insert(Arc::from(raw.topic.as_ref())).clone(),
    };
    let record = KafkaRecord {
        topic,
        partition: raw.partition,
        offset: raw.offset,
        timestamp_ms: raw.timestamp,
        timestamp_type: raw.timestamp_type.map(|t| TimestampType::parse(t.0)),
        key: None,
        value: None,
        headers,
        raw_key_b64,
        raw_value_b64,
        base64_error,
        value_schema: raw.value_schema_metadata.map(|m| SchemaMetadata {
            data_format: m.data_format.unwrap_or_default(),
            schema_id: match m.schema_id {
                Some(serde_json::Value::String(s)) => s,
                Some(other) => other.to_string(),
                None => String::new(),
            },
        }),
    };
    Ok((record, spans))
}

#[cfg(test)]
mod tests;
