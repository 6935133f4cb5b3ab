//! The payload's JSON shape: private structs that mirror it, read with serde straight from the payload, and
//! their conversion into a [`KafkaBatch`] (see the [parent module](super) for the rules it checks).

use std::collections::HashSet;
use std::fmt;
use std::ops::Range;

use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};

use super::*;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawEvent<'a> {
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
pub(super) struct RawRecord<'a> {
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
pub(super) struct RawHeader {
    event_source: Option<String>,
    event_source_arn: Option<String>,
    bootstrap_servers: Option<String>,
}

/// A field the event source requires: absent or empty, the payload is refused.
fn non_empty(
    value: Option<String>,
    field: &'static str,
    context: &'static str,
) -> Result<String, EventError> {
    let value = value.ok_or(EventError::MissingField {
        field,
        context: Some(context),
    })?;
    if value.is_empty() {
        return Err(EventError::EmptyField { field });
    }
    Ok(value)
}

/// Reads the top-level fields of a payload into its header, and stops at `records` once they are enough to name
/// the source (the rest of the payload is then not read).
pub(super) struct HeaderVisitor<'a>(pub(super) &'a mut Option<RawHeader>);

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

    pub(super) fn into_source(self) -> Result<EventSource, EventError> {
        let event_source = self.event_source.ok_or(EventError::MissingField {
            field: "eventSource",
            context: None,
        })?;
        Ok(match event_source.as_str() {
            MSK_EVENT_SOURCE => {
                let arn = non_empty(
                    self.event_source_arn,
                    "eventSourceArn",
                    "an aws:kafka event names its MSK cluster",
                )?;
                EventSource::Msk {
                    event_source_arn: arn,
                    bootstrap_servers: self.bootstrap_servers,
                }
            }
            SELF_MANAGED_EVENT_SOURCE => {
                let servers = non_empty(
                    self.bootstrap_servers,
                    "bootstrapServers",
                    "a SelfManagedKafka event names its brokers",
                )?;
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
    pub(super) fn into_batch(self) -> Result<KafkaBatch, EventError> {
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
pub(super) fn decode_base64(
    text: &[u8],
    arena: &mut Vec<u8>,
) -> Result<Range<usize>, base64::DecodeError> {
    let start = arena.len();
    if base64_simd::STANDARD.decode_append(text, arena).is_err() {
        arena.truncate(start);
        let bytes = STANDARD.decode(text)?;
        arena.extend_from_slice(&bytes);
    }
    Ok(start..arena.len())
}

/// Where a record's decoded key and value sit in the batch's buffer, until the buffer is frozen.
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
    let (key, raw_key_b64) = decode_part(raw.key, RecordPart::Key, arena, &mut base64_error);
    let (value, raw_value_b64) =
        decode_part(raw.value, RecordPart::Value, arena, &mut base64_error);
    let spans = Spans { key, value };
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

/// Decodes a key or value text into `arena`: its span there, or the text itself when it does not decode (the
/// first part that fails is the record's `base64_error`).
fn decode_part(
    text: Option<Text<'_>>,
    part: RecordPart,
    arena: &mut Vec<u8>,
    base64_error: &mut Option<Base64Error>,
) -> (Option<Range<usize>>, Option<String>) {
    let Some(Text(text)) = text else {
        return (None, None);
    };
    match decode_base64(text.as_bytes(), arena) {
        Ok(range) => (Some(range), None),
        Err(e) => {
            base64_error.get_or_insert(Base64Error {
                part,
                reason: e.to_string(),
            });
            (None, Some(text.into_owned()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_values_are_borrowed_from_the_payload() {
        let text = r#"{"topic":"t","partition":0,"offset":1,"timestamp":5,"timestampType":"CREATE_TIME",
            "key":"azE=","value":"eyJhIjoxfQ=="}"#;
        let raw: RawRecord<'_> = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(raw.key, Some(Text(Cow::Borrowed("azE=")))));
        assert!(matches!(
            raw.value,
            Some(Text(Cow::Borrowed("eyJhIjoxfQ==")))
        ));
        assert!(matches!(
            raw.timestamp_type,
            Some(Text(Cow::Borrowed("CREATE_TIME")))
        ));
        // A text with an escape cannot be borrowed: it is unescaped into its own string.
        let escaped = text.replace("eyJhIjoxfQ==", r"eyJhIjoxfQ\u003d\u003d");
        let raw: RawRecord<'_> = serde_json::from_str(&escaped).unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(&raw.value, Some(Text(Cow::Owned(v))) if v == "eyJhIjoxfQ=="));
    }
}
