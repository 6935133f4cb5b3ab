//! The oracles of the fuzz targets, one function per target.
//!
//! Each function takes the raw fuzz input, drives one parser of `hudi-sink` with it and panics when an
//! invariant breaks (a panic is how libFuzzer learns of a finding). The same file is compiled into the
//! integration tests (`crates/hudi-sink/tests/it/bad_input.rs` includes it by path), which replay every
//! committed corpus and regression file on the stable toolchain, so a fixed crash stays fixed without nightly.
//!
//! Invariants checked, beyond "no panic, no stack overflow, no runaway memory":
//! - events: an accepted batch keeps Kafka's rules (offsets increase per partition, base64 text is the
//!   canonical encoding of the decoded bytes), and the `serde_json::Value` entry point agrees with the byte one;
//! - JSON → Arrow: a refused record leaves nothing behind (the batch equals one built without it), an accepted
//!   record is JSON with an object at the top, and the not-JSON / not-object classification agrees with
//!   `serde_json`;
//! - Avro → Arrow: a datum is read all or nothing and deterministically (accepted twice, the two rows are
//!   equal; refused, nothing stays), and the registry framing parser never reads past its input or inflates
//!   past its limit;
//! - Java properties: whatever is written back reads back identically;
//! - commit metadata: what is parsed writes back and reads back identically, and so do checkpoints.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use hudi_sink::config::java_properties::JavaProperties;
use hudi_sink::record::decode::{RecordDecoder, RecordErrorKind};
use hudi_sink::schema::arrow::avro_to_arrow;
use hudi_sink::schema::avro::AvroSchema;
use hudi_sink::source::event::{KafkaBatch, KafkaRecord};
use hudi_sink::table::commit::{Checkpoint, CommitMetadata, ReplaceCommitMetadata};
use serde_json::Value;

/// The record schema of the JSON → Arrow target: every column kind the decoder has, nested.
pub const FUZZ_SCHEMA: &str = r#"{"type":"record","name":"fuzz_record","namespace":"hoodie.fuzz","fields":[
 {"name":"id","type":"string"},
 {"name":"n","type":"int"},
 {"name":"l","type":["null","long"],"default":null},
 {"name":"f","type":["null","float"],"default":null},
 {"name":"d","type":"double","default":0.5},
 {"name":"b","type":["null","boolean"],"default":null},
 {"name":"raw","type":["null","bytes"],"default":null},
 {"name":"fx","type":["null",{"type":"fixed","name":"Fx4","size":4}],"default":null},
 {"name":"dec","type":["null",{"type":"bytes","logicalType":"decimal","precision":12,"scale":3}],"default":null},
 {"name":"decf","type":["null",{"type":"fixed","name":"Dec38","size":16,"logicalType":"decimal","precision":38,"scale":10}],"default":null},
 {"name":"day","type":["null",{"type":"int","logicalType":"date"}],"default":null},
 {"name":"tm","type":["null",{"type":"int","logicalType":"time-millis"}],"default":null},
 {"name":"tu","type":["null",{"type":"long","logicalType":"time-micros"}],"default":null},
 {"name":"ts","type":["null",{"type":"long","logicalType":"timestamp-millis"}],"default":null},
 {"name":"tsu","type":["null",{"type":"long","logicalType":"timestamp-micros"}],"default":null},
 {"name":"lts","type":["null",{"type":"long","logicalType":"local-timestamp-micros"}],"default":null},
 {"name":"color","type":["null",{"type":"enum","name":"Color","symbols":["RED","GREEN","BLUE"]}],"default":null},
 {"name":"tags","type":["null",{"type":"map","values":"string"}],"default":null},
 {"name":"nums","type":["null",{"type":"array","items":["null","long"]}],"default":null},
 {"name":"inner","type":["null",{"type":"record","name":"Inner","fields":[
   {"name":"x","type":"long","default":7},
   {"name":"y","type":["null","string"],"default":null},
   {"name":"deep","type":["null",{"type":"array","items":{"type":"map","values":["null",
     {"type":"record","name":"Leaf","fields":[{"name":"z","type":"long"},{"name":"w","type":["null","bytes"],"default":null}]}]}}],
    "default":null}]}],
  "default":null},
 {"name":"stops","type":{"type":"array","items":"Inner"},"default":[]}]}"#;

/// A record every decoder of [`FUZZ_SCHEMA`] accepts.
pub const GOOD_RECORD: &[u8] = br#"{"id":"k1","n":-3,"dec":"12.500","ts":"2024-05-01T12:00:00.123Z","tags":{"a":"b"},"inner":{"x":1,"deep":[{"m":{"z":2}}]},"stops":[{"x":3}]}"#;

struct FuzzSchema {
    avro: AvroSchema,
    arrow: SchemaRef,
}

fn schema() -> &'static FuzzSchema {
    static SCHEMA: OnceLock<FuzzSchema> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let avro = AvroSchema::parse(FUZZ_SCHEMA).unwrap_or_else(|e| panic!("fuzz schema: {e}"));
        let arrow = avro_to_arrow(&avro).unwrap_or_else(|e| panic!("fuzz schema: {e}"));
        FuzzSchema {
            avro,
            arrow: Arc::new(arrow),
        }
    })
}

fn decoder() -> RecordDecoder {
    let s = schema();
    RecordDecoder::try_new(s.arrow.clone(), &s.avro).unwrap_or_else(|e| panic!("decoder: {e}"))
}

/// Event decoding: `KafkaBatch::from_slice` and `KafkaBatch::from_value`.
pub fn check_event(data: &[u8]) {
    let parsed = KafkaBatch::from_slice(data);
    if let Ok(batch) = &parsed {
        check_batch(batch);
        check_texts(data, batch);
    }
    // The `serde_json::Value` entry point (a Lambda handler holding a parsed event) must accept every payload
    // the byte entry point accepts, with the same records. `Value` keeps only the last of duplicate keys, so it
    // may accept more (a payload with a duplicated field); header lists may then differ, so they are left out.
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let via_value = KafkaBatch::from_value(value);
    if let Ok(batch) = &via_value {
        check_batch(batch);
    }
    if let Ok(batch) = parsed {
        let Ok(other) = via_value else {
            panic!("from_slice accepted the payload, from_value refused it: {via_value:?}");
        };
        assert_eq!(batch.source, other.source);
        assert_eq!(
            batch
                .records
                .iter()
                .map(without_headers)
                .collect::<Vec<_>>(),
            other
                .records
                .iter()
                .map(without_headers)
                .collect::<Vec<_>>()
        );
    }
}

fn without_headers(r: &KafkaRecord) -> KafkaRecord {
    KafkaRecord {
        headers: Vec::new(),
        ..r.clone()
    }
}

/// Dead letters carry each record's key and value text exactly as delivered: compared with an independent parse
/// of the payload (a `Value` keeps document order here; `from_slice` refuses duplicated keys, so the two agree
/// on which records there are).
fn check_texts(data: &[u8], batch: &KafkaBatch) {
    // `from_slice` skips unknown fields without checking their UTF-8, which `Value` refuses: nothing to compare.
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let delivered: Vec<(Option<&str>, Option<&str>)> = value["records"]
        .as_object()
        .into_iter()
        .flat_map(|m| m.values())
        .flat_map(|a| a.as_array().into_iter().flatten())
        .map(|r| (r["key"].as_str(), r["value"].as_str()))
        .collect();
    assert_eq!(delivered.len(), batch.records.len());
    for (r, (key, value)) in batch.records.iter().zip(delivered) {
        assert_eq!(r.key_b64().as_deref(), key, "{r:?}");
        assert_eq!(r.value_b64().as_deref(), value, "{r:?}");
        if let Some(k) = &r.key {
            assert_eq!(Some(STANDARD.encode(k).as_str()), key);
        }
    }
}

fn check_batch(batch: &KafkaBatch) {
    let mut last: BTreeMap<(&str, i32), i64> = BTreeMap::new();
    for r in &batch.records {
        assert!(
            !r.topic.is_empty() && r.partition >= 0 && r.offset >= 0,
            "{r:?}"
        );
        if let Some(previous) = last.insert((&*r.topic, r.partition), r.offset) {
            assert!(previous < r.offset, "offsets must increase: {r:?}");
        }
        // The delivered text is kept only when it did not decode.
        for (decoded, text) in [(&r.key, &r.raw_key_b64), (&r.value, &r.raw_value_b64)] {
            match (decoded, text) {
                (Some(_), Some(_)) => panic!("decoded bytes and their text both kept: {r:?}"),
                (None, Some(_)) => assert!(r.base64_error.is_some(), "{r:?}"),
                _ => {}
            }
        }
    }
}

/// The batch of two [`GOOD_RECORD`]s, built once.
fn reference_batch() -> &'static RecordBatch {
    static REFERENCE: OnceLock<RecordBatch> = OnceLock::new();
    REFERENCE.get_or_init(|| {
        let mut d = decoder();
        for _ in 0..2 {
            if let Err(e) = d.append(GOOD_RECORD) {
                panic!("the good record is refused: {e}");
            }
        }
        d.finish().unwrap_or_else(|e| panic!("finish: {e}"))
    })
}

thread_local! {
    /// One decoder per thread, reused: building one per input would dominate the run time, and reuse is
    /// what the writer does within a batch (a refused record must not disturb the next one).
    static DECODER: RefCell<Option<RecordDecoder>> = const { RefCell::new(None) };
}

/// JSON → Arrow: one fuzzed record between two good ones, with the decoder's all-or-nothing rule checked
/// against a batch built without the fuzzed record.
pub fn check_json_to_arrow(data: &[u8]) {
    let (result, batch) = DECODER.with(|cell| {
        let mut slot = cell.borrow_mut();
        let d = slot.get_or_insert_with(decoder);
        assert!(d.is_empty(), "a previous input left rows behind");
        if let Err(e) = d.append(GOOD_RECORD) {
            panic!("the good record is refused: {e}");
        }
        let result = d.append(data);
        assert_eq!(d.len(), if result.is_ok() { 2 } else { 1 }, "{result:?}");
        if let Err(e) = d.append(GOOD_RECORD) {
            panic!("the good record is refused after {result:?}: {e}");
        }
        let batch = d
            .finish()
            .unwrap_or_else(|e| panic!("finish after {result:?}: {e}"));
        assert!(d.is_empty(), "finish leaves the decoder empty");
        (result, batch)
    });
    let reference = reference_batch();
    match &result {
        // A refused record leaves no trace: the batch is the one without it.
        Err(_) => assert_eq!(&batch, reference, "a refused record left data behind"),
        Ok(()) => {
            assert_eq!(batch.num_rows(), 3);
            assert_eq!(batch.slice(0, 1), reference.slice(0, 1));
            assert_eq!(batch.slice(2, 1), reference.slice(1, 1));
        }
    }

    // Classification against an independent JSON parser. Where serde_json is stricter than the JSON grammar
    // (numbers beyond f64, more than 128 levels) its answer says nothing; the decoder's 64-level limit is
    // reported as too deep, never as a syntax error.
    let independent = match serde_json::from_slice::<Value>(data) {
        Ok(value) => Independent::Json(value),
        Err(e) => {
            let text = e.to_string();
            if text.contains("number out of range") || text.contains("recursion limit exceeded") {
                Independent::Unknown
            } else {
                Independent::NotJson
            }
        }
    };
    match (&result, &independent) {
        (_, Independent::Unknown) => {}
        (Ok(()), Independent::Json(v)) => assert!(v.is_object(), "accepted a non-object {v}"),
        (Ok(()), Independent::NotJson) => panic!("accepted a record serde_json cannot read"),
        (Err(e), Independent::Json(v)) => match e.kind() {
            RecordErrorKind::NotJson => {
                panic!("reported as not JSON ({e}) but serde_json reads {v}")
            }
            RecordErrorKind::NotObject => {
                assert!(!v.is_object(), "reported as not an object ({e}): {v}")
            }
            RecordErrorKind::Invalid => {}
            RecordErrorKind::NotAvro | RecordErrorKind::Schema => {
                panic!("the JSON reader reported an Avro refusal ({e})")
            }
        },
        (Err(e), Independent::NotJson) => assert!(
            e.kind() != RecordErrorKind::NotObject,
            "reported as valid JSON that is not an object ({e}), serde_json cannot read it"
        ),
    }
}

/// What `serde_json` makes of a record.
enum Independent {
    Json(Value),
    NotJson,
    /// Beyond serde_json's own limits.
    Unknown,
}

/// Java properties: ISO-8859-1 bytes and decoded text; whatever can be written back reads back the same.
pub fn check_java_properties(data: &[u8]) {
    if let Ok(props) = JavaProperties::parse(data) {
        round_trip_properties(&props);
    }
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(props) = JavaProperties::parse_str(text) {
            round_trip_properties(&props);
        }
    }
}

fn round_trip_properties(props: &JavaProperties) {
    let keys: std::collections::HashSet<&str> = props.iter().map(|(k, _)| k).collect();
    assert_eq!(keys.len(), props.len(), "a key listed twice");
    for (k, v) in props.iter() {
        assert_eq!(props.get(k), Some(v));
    }
    if let Ok(bytes) = props.to_bytes(&["fuzz"]) {
        let again = JavaProperties::parse(&bytes)
            .unwrap_or_else(|e| panic!("re-read of written file: {e}"));
        assert_eq!(&again, props);
    }
}

/// Commit metadata and the checkpoints inside it: parse, write, parse again.
pub fn check_commit_metadata(data: &[u8]) {
    if let Ok(meta) = CommitMetadata::from_json(data) {
        let json = meta
            .to_json_pretty()
            .unwrap_or_else(|e| panic!("write back: {e}"));
        let again = CommitMetadata::from_json(&json)
            .unwrap_or_else(|e| panic!("re-read of written metadata: {e}"));
        assert_eq!(again, meta);
        if let Ok(Some(checkpoint)) = meta.checkpoint() {
            round_trip_checkpoint(&checkpoint);
        }
    }
    if let Ok(meta) = ReplaceCommitMetadata::from_json(data) {
        let json = meta
            .to_json_pretty()
            .unwrap_or_else(|e| panic!("write back: {e}"));
        let again = ReplaceCommitMetadata::from_json(&json)
            .unwrap_or_else(|e| panic!("re-read of written metadata: {e}"));
        assert_eq!(again, meta);
    }
    // The checkpoint formats on their own (the value strings of `extraMetadata`).
    let text = String::from_utf8_lossy(data);
    for parsed in [
        Checkpoint::parse_sink_json(&text),
        Checkpoint::parse_deltastreamer(&text),
        Checkpoint::parse_kafka_connect("fuzz.topic", &text),
    ]
    .into_iter()
    .flatten()
    {
        round_trip_checkpoint(&parsed);
    }
}

fn round_trip_checkpoint(checkpoint: &Checkpoint) {
    let mut extra = BTreeMap::new();
    if checkpoint.write_to(&mut extra).is_err() {
        return;
    }
    let again = Checkpoint::from_extra_metadata(&extra, None)
        .unwrap_or_else(|e| panic!("re-read of written checkpoint {extra:?}: {e}"));
    assert_eq!(again.as_ref(), Some(checkpoint), "{extra:?}");
    // The single-topic formats carry the same offsets.
    if let Some(ds) = extra.get("deltastreamer.checkpoint.key") {
        let via_ds = Checkpoint::parse_deltastreamer(ds)
            .unwrap_or_else(|e| panic!("re-read of {ds:?}: {e}"));
        assert_eq!(&via_ds, checkpoint);
    }
}

thread_local! {
    /// The Avro target's decoder and its plan (the fuzz schema as the writer schema).
    static AVRO: RefCell<Option<(RecordDecoder, hudi_sink::record::decode::AvroPlan)>> =
        const { RefCell::new(None) };
}

/// Avro → Arrow: the input as a datum of the fuzz schema, twice, and as a registry-framed value.
pub fn check_avro_to_arrow(data: &[u8]) {
    AVRO.with(|cell| {
        let mut slot = cell.borrow_mut();
        let (d, plan) = slot.get_or_insert_with(|| {
            let d = decoder();
            let plan = d
                .compile_avro(&schema().avro)
                .unwrap_or_else(|e| panic!("the fuzz schema does not read itself: {e}"));
            (d, plan)
        });
        assert!(d.is_empty(), "a previous input left rows behind");
        let first = d.append_avro(plan, data);
        assert_eq!(d.len(), usize::from(first.is_ok()), "{first:?}");
        let second = d.append_avro(plan, data);
        assert_eq!(first.is_ok(), second.is_ok(), "{first:?} then {second:?}");
        if let (Err(a), Err(b)) = (&first, &second) {
            assert_eq!(
                a.to_string(),
                b.to_string(),
                "the same datum refused two ways"
            );
        }
        let batch = d
            .finish()
            .unwrap_or_else(|e| panic!("finish after {first:?}: {e}"));
        if first.is_ok() {
            assert_eq!(batch.num_rows(), 2);
            assert_eq!(
                batch.slice(0, 1),
                batch.slice(1, 1),
                "one datum read two ways"
            );
        } else {
            assert_eq!(batch.num_rows(), 0, "a refused datum left data behind");
        }
    });
    match hudi_sink::registry::unframe(data) {
        Ok(framed) => assert!(
            framed.body.len()
                <= data
                    .len()
                    .max(hudi_sink::registry::framing::MAX_INFLATED_BYTES),
            "the body outgrew its limit"
        ),
        Err(e) => assert!(!e.to_string().is_empty()),
    }
}
