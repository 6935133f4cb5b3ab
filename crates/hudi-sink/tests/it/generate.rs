//! `hudi_sink::generate` end to end: generated event files ingested through the sink exactly as
//! `hudi-sink ingest` does (properties → `build_sink` → one `process` per file, in order), the table read
//! with the independent Python `hudi` reader, compared row for row with the generator's model; generation
//! is deterministic and never writes a payload over Lambda's 6 MB limit.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hudi_sink::bootstrap::build_sink;
use hudi_sink::generate::{
    generate, GenerateOptions, GenerateReport, SchemaKind, SourceKind, MAX_PAYLOAD_BYTES,
    MAX_RECORDS_PER_FILE,
};
use hudi_sink::sink::SinkReport;
use hudi_sink::source::event::{EventSource, KafkaBatch};
use serde_json::{Map, Value};

use crate::common::python::read_rows;

/// The five `_hoodie_*` meta columns (not `_hoodie_is_deleted`, a data column).
const META_COLUMNS: &[&str] = &[
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
];

fn event_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read events dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
}

/// Properties of a local table for `schema`, as examples/local.properties and examples/bench.properties.
fn props(schema: SchemaKind, dir: &Path) -> BTreeMap<String, String> {
    let schema_file = dir.join("schema.avsc");
    std::fs::write(&schema_file, schema.avro_schema()).expect("schema file");
    let buckets = match schema {
        SchemaKind::Trips => "4",
        SchemaKind::Bench => "16",
    };
    [
        ("hoodie.table.name", schema.name().to_string()),
        ("hoodie.database.name", "default".into()),
        ("hoodie.base.path", dir.join("table").display().to_string()),
        (
            "hoodie.streamer.schemaprovider.source.schema.file",
            schema_file.display().to_string(),
        ),
        (
            "hoodie.datasource.write.recordkey.field",
            schema.record_key_field().into(),
        ),
        (
            "hoodie.datasource.write.partitionpath.field",
            schema.partition_field().into(),
        ),
        (
            "hoodie.datasource.write.precombine.field",
            schema.ordering_field().into(),
        ),
        (
            "hoodie.datasource.write.hive_style_partitioning",
            "true".into(),
        ),
        ("hoodie.datasource.write.operation", "upsert".into()),
        ("hoodie.index.type", "BUCKET".into()),
        ("hoodie.bucket.index.num.buckets", buckets.into()),
        ("hoodie.parquet.compression.codec", "snappy".into()),
        (
            "hudi.sink.dead.letter.path",
            dir.join("dead-letters").display().to_string(),
        ),
        // One window per file, in 50 ms slots.
        ("hudi.sink.commit.interval.ms", "50".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// Ingests every event file of `events` in name order, one batch each; returns the summed
/// accounting and the number of commits.
async fn ingest(props: &BTreeMap<String, String>, events: &Path) -> (SinkReport, u64) {
    let sink = build_sink(props, "generate-test").await.expect("sink");
    let mut total = SinkReport::default();
    let mut commits = 0;
    for file in event_files(events) {
        let bytes = std::fs::read(&file).expect("event file");
        let batch = KafkaBatch::from_slice(&bytes).expect("valid event");
        let report = sink.process(batch).await.expect("process");
        assert!(
            report.balanced(),
            "{}: unbalanced {report:?}",
            file.display()
        );
        commits += u64::from(report.instant.is_some());
        total.records_in += report.records_in;
        total.skipped += report.skipped;
        total.dead_lettered += report.dead_lettered;
        total.counts.inserted += report.counts.inserted;
        total.counts.updated += report.counts.updated;
        total.counts.deleted += report.counts.deleted;
        total.counts.deduped += report.counts.deduped;
        total.counts.ignored_older += report.counts.ignored_older;
        total.counts.delete_misses += report.counts.delete_misses;
    }
    (total, commits)
}

/// A model row in the reader's canonical form: decimals as their unscaled integer text (`"12.50"` → `"1250"`).
fn canonical_model_row(schema: SchemaKind, mut row: Map<String, Value>) -> Map<String, Value> {
    if schema == SchemaKind::Bench {
        let price = row["price"].as_str().expect("price is a decimal string");
        let digits: String = price.chars().filter(|c| *c != '.').collect();
        let trimmed = digits.trim_start_matches('0');
        let unscaled = if trimmed.is_empty() { "0" } else { trimmed };
        row.insert("price".into(), Value::String(unscaled.to_string()));
    }
    row
}

/// Asserts that the table read by Python `hudi` holds exactly the model's rows, keyed by record key.
fn assert_table_equals_model(schema: SchemaKind, table: &Path, model: &Path) -> usize {
    let key_field = schema.record_key_field();
    let text = std::fs::read_to_string(model).expect("model file");
    let mut expected: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    for line in text.lines() {
        let row: Map<String, Value> =
            serde_json::from_str(line).expect("model line is a JSON object");
        let key = row[key_field].as_str().expect("record key").to_string();
        let previous = expected.insert(key.clone(), canonical_model_row(schema, row));
        assert!(previous.is_none(), "model holds key {key} twice");
    }
    let mut actual: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    for mut row in read_rows(table, "hudi", &["snapshot"]) {
        let key = row[key_field].as_str().expect("record key").to_string();
        assert_eq!(row["_hoodie_record_key"].as_str(), Some(key.as_str()));
        for c in META_COLUMNS {
            row.remove(*c);
        }
        let previous = actual.insert(key.clone(), row);
        assert!(previous.is_none(), "table holds key {key} twice");
    }
    let missing: Vec<&String> = expected
        .keys()
        .filter(|k| !actual.contains_key(*k))
        .collect();
    let extra: Vec<&String> = actual
        .keys()
        .filter(|k| !expected.contains_key(*k))
        .collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "key sets differ: {} missing from the table (first {:?}), {} not in the model (first {:?})",
        missing.len(),
        missing.first(),
        extra.len(),
        extra.first()
    );
    for (key, row) in &expected {
        assert_eq!(&actual[key], row, "row {key}");
    }
    expected.len()
}

async fn generate_ingest_compare(opts: GenerateOptions) -> (GenerateReport, SinkReport, u64) {
    // The files are ingested one batch each (as Lambda invocations would): the model folds per file.
    let opts = GenerateOptions {
        model_batch_bytes: 0,
        ..opts
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let schema = opts.schema;
    let events = dir.path().join("events");
    let model = dir.path().join("model.jsonl");
    let records = opts.records;
    let report = generate(opts, &events, Some(&model), &mut |_| {}).expect("generate");
    assert_eq!(report.records, records);
    // The stream exercises every kind of record (else the comparison proves little).
    assert!(
        report.updates > 0 && report.deletes > 0 && report.tombstones > 0 && report.inserts > 0,
        "{report:?}"
    );
    let props = props(schema, dir.path());
    let (total, commits) = ingest(&props, &events).await;
    assert_eq!(
        total.records_in, records,
        "every generated record reached the sink"
    );
    assert_eq!(
        total.dead_lettered, 0,
        "generated values all match the schema"
    );
    assert_eq!(total.skipped, 0);
    assert!(
        total.counts.deleted > 0 && total.counts.ignored_older > 0,
        "{total:?}"
    );
    let rows = assert_table_equals_model(schema, &dir.path().join("table"), &model);
    assert_eq!(rows as u64, report.live_rows);
    (report, total, commits)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_trips_stream_on_msk_ingests_to_exactly_the_model() {
    let opts = GenerateOptions {
        records: 3_000,
        partitions: 4,
        keys: Some(700),
        update_ratio: 0.4,
        delete_ratio: 0.15,
        tombstone_ratio: 0.5,
        late_ratio: 0.2,
        records_per_file: 250,
        schema: SchemaKind::Trips,
        source: SourceKind::Msk,
        seed: 3,
        ..GenerateOptions::default()
    };
    let (report, _, commits) = generate_ingest_compare(opts).await;
    assert_eq!(commits, report.files, "one commit per event file");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_bench_stream_on_self_managed_kafka_ingests_to_exactly_the_model() {
    let opts = GenerateOptions {
        records: 1_500,
        partitions: 16,
        keys: Some(400),
        update_ratio: 0.4,
        delete_ratio: 0.2,
        tombstone_ratio: 0.4,
        late_ratio: 0.2,
        records_per_file: 300,
        schema: SchemaKind::Bench,
        source: SourceKind::SelfManaged,
        seed: 11,
        ..GenerateOptions::default()
    };
    generate_ingest_compare(opts).await;
}

fn file_bytes(dir: &Path) -> Vec<(String, Vec<u8>)> {
    event_files(dir)
        .into_iter()
        .map(|p| {
            let name = p.file_name().expect("name").to_string_lossy().into_owned();
            (name, std::fs::read(&p).expect("read"))
        })
        .collect()
}

#[test]
fn same_seed_gives_identical_files_and_payloads_stay_under_6_mb() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Bench records are large enough that 10,000 of them exceed 6 MB: files are cut by size.
    let opts = GenerateOptions {
        records: 20_000,
        partitions: 16,
        records_per_file: MAX_RECORDS_PER_FILE,
        schema: SchemaKind::Bench,
        source: SourceKind::Msk,
        seed: 5,
        ..GenerateOptions::default()
    };
    let run = |name: &str, opts: GenerateOptions| {
        let out = dir.path().join(name);
        let model = dir.path().join(format!("{name}.jsonl"));
        generate(opts, &out, Some(&model), &mut |_| {}).expect("generate");
        (file_bytes(&out), std::fs::read(&model).expect("model"))
    };
    let (a, model_a) = run("a", opts.clone());
    let (b, model_b) = run("b", opts.clone());
    let (c, _) = run("c", GenerateOptions { seed: 6, ..opts });
    assert!(a == b, "same options, different files");
    assert!(model_a == model_b, "same options, different models");
    assert!(a != c, "another seed gives the same files");

    let mut records = 0usize;
    let mut next: BTreeMap<i32, i64> = BTreeMap::new();
    for (i, (name, bytes)) in a.iter().enumerate() {
        assert_eq!(name, &format!("events-{i:05}.json"));
        assert!(
            bytes.len() <= MAX_PAYLOAD_BYTES,
            "{name}: {} bytes, over Lambda's 6 MB payload limit",
            bytes.len()
        );
        let batch = KafkaBatch::from_slice(bytes).expect("valid event");
        assert!(matches!(batch.source, EventSource::Msk { .. }));
        if i + 1 < a.len() {
            assert!(
                batch.records.len() < MAX_RECORDS_PER_FILE
                    && bytes.len() > MAX_PAYLOAD_BYTES - 10_000,
                "{name}: {} records in {} bytes: a full file is cut by size here",
                batch.records.len(),
                bytes.len()
            );
        }
        for r in &batch.records {
            // Offsets increase per Kafka partition across files.
            let previous = next.insert(r.partition, r.offset);
            assert!(
                previous.is_none_or(|p| r.offset > p),
                "{name}: offset order"
            );
        }
        records += batch.records.len();
    }
    assert_eq!(records, 20_000);
    assert_eq!(next.len(), 16, "every Kafka partition is used");
}

#[test]
fn generate_refuses_a_directory_with_event_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = GenerateOptions {
        records: 10,
        ..GenerateOptions::default()
    };
    generate(opts.clone(), dir.path(), None, &mut |_| {}).expect("first run");
    let err = generate(opts, dir.path(), None, &mut |_| {})
        .expect_err("second run into the same directory");
    assert!(
        err.to_string().contains("already holds event files"),
        "{err}"
    );
}
