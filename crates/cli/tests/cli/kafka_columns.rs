//! `hoodie.streamer.source.kafka.append.offsets=true` end to end: every row of the table carries the offset,
//! partition, timestamp and key of the Kafka record its version came from, as HoodieStreamer's columns, on
//! copy-on-write and merge-on-read tables, read back with hudi-rs and compared row for row with the events.

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine as _;
use serde_json::{Map, Value};

use crate::common::*;

/// One record of the event files: its decoded value, offset, partition, timestamp and key.
type EventRecord = (Map<String, Value>, i64, i64, i64, Option<String>);

/// Every record of the generated event files.
fn event_records(dir: &Path) -> Vec<EventRecord> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("events")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let payload: Value =
            serde_json::from_slice(&std::fs::read(&file).expect("read")).expect("json");
        for records in payload["records"].as_object().expect("records").values() {
            for r in records.as_array().expect("array") {
                let Some(value) = r["value"].as_str() else {
                    continue;
                };
                let value: Map<String, Value> =
                    serde_json::from_slice(&b64.decode(value).expect("b64")).expect("value");
                let key = r["key"]
                    .as_str()
                    .map(|k| String::from_utf8(b64.decode(k).expect("b64")).expect("utf-8"));
                out.push((
                    value,
                    r["offset"].as_i64().expect("offset"),
                    r["partition"].as_i64().expect("partition"),
                    r["timestamp"].as_i64().expect("timestamp"),
                    key,
                ));
            }
        }
    }
    out
}

#[test]
fn every_row_carries_the_kafka_metadata_of_its_version() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = |p: &Path| p.display().to_string();
    let events = dir.path().join("events");
    let model = dir.path().join("model.jsonl");
    ok(&[
        "generate",
        "--out",
        &s(&events),
        "--records",
        "1200",
        "--partitions",
        "3",
        "--keys",
        "300",
        "--update-ratio",
        "0.5",
        "--delete-ratio",
        "0",
        "--records-per-file",
        "300",
        "--seed",
        "23",
        "--model-batch-bytes",
        "0",
        "--model",
        &s(&model),
    ]);
    let records = event_records(&events);
    // The expected table: the model's row per key, with the metadata of the last record carrying that version.
    let mut expected: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    for (key, row) in model_rows(&model) {
        let (_, offset, partition, timestamp, kafka_key) = records
            .iter()
            .filter(|(value, ..)| *value == row)
            .max_by_key(|(_, offset, partition, ..)| (*partition, *offset))
            .unwrap_or_else(|| panic!("no record carries the model's row of {key}"));
        let mut row = row.clone();
        row.insert("_hoodie_kafka_source_offset".into(), (*offset).into());
        row.insert("_hoodie_kafka_source_partition".into(), (*partition).into());
        row.insert("_hoodie_kafka_source_timestamp".into(), (*timestamp).into());
        row.insert(
            "_hoodie_kafka_source_key".into(),
            kafka_key.clone().map(Value::from).unwrap_or(Value::Null),
        );
        expected.insert(key, row);
    }
    for table_type in ["COPY_ON_WRITE", "MERGE_ON_READ"] {
        let table = dir.path().join(table_type.to_ascii_lowercase());
        ingest_one_instant_per_file(
            &table,
            &events,
            table_type,
            &["hoodie.streamer.source.kafka.append.offsets=true"],
        );
        let actual = read_table(&table);
        assert_eq!(actual.len(), expected.len(), "{table_type}: row count");
        for (key, want) in &expected {
            assert_eq!(actual.get(key), Some(want), "{table_type}: row {key}");
        }
        // The columns end the table schema as HoodieStreamer declares them (name, type, default).
        let mut commits: Vec<_> = std::fs::read_dir(table.join(".hoodie"))
            .expect("timeline")
            .map(|e| e.expect("entry").path())
            .filter(|p| {
                p.extension()
                    .is_some_and(|e| e == "commit" || e == "deltacommit")
            })
            .collect();
        commits.sort();
        let commit: Value = serde_json::from_slice(
            &std::fs::read(commits.last().expect("a commit")).expect("read"),
        )
        .expect("commit JSON");
        let schema: Value = serde_json::from_str(
            commit["extraMetadata"]["schema"]
                .as_str()
                .expect("extraMetadata.schema"),
        )
        .expect("schema JSON");
        let fields = schema["fields"].as_array().expect("fields");
        let last: Vec<&Value> = fields[fields.len() - 4..].iter().collect();
        assert_eq!(
            serde_json::to_string(&last).expect("json"),
            r#"[{"name":"_hoodie_kafka_source_offset","type":"long","default":0},{"name":"_hoodie_kafka_source_partition","type":"int","default":0},{"name":"_hoodie_kafka_source_timestamp","type":"long","default":0},{"name":"_hoodie_kafka_source_key","type":["null","string"],"default":null}]"#,
            "{table_type}"
        );
    }
}
