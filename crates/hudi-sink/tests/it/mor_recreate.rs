//! A merge-on-read batch that deletes keys (Kafka tombstones) and then re-creates them: the log file it
//! appends holds a delete block of those keys ahead of the data block (the batch's other deletes keep their
//! block after it), and the table reads, with the sink's slice merge and with hudi-rs, as two deltacommits
//! [tombstone] then [record] would: the keys' earlier log versions are gone and each re-created record is
//! merged against the base file's version (docs/semantics.md, "Merge-on-read tables").

use std::collections::BTreeMap;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::Array;
use hudi_sink::bootstrap::build_sink;
use hudi_sink::log_file::{
    merge_file_slice, read_log_file, scan_stored_log_files, CommittedInstants, LogBlock, MergeMode,
};
use hudi_sink::storage::local::LocalStorage;
use hudi_sink::storage::Storage;
use hudi_sink::table::properties::TableProperties;
use hudi_sink::table::timeline::{latest_file_slices, Timeline};

use crate::common::python::read_rows;
use crate::exactly_once::process;
use crate::model::{local_props, Msg, Trip, SCHEMA};

fn trip(offset: i64, uuid: &str, ts: i64, rider: &str) -> Msg {
    let value = Trip {
        uuid: uuid.to_string(),
        ts,
        rider: rider.to_string(),
        fare: ts as f64,
        city: "sf".into(),
        deleted: false,
    };
    Msg {
        topic: "trips".into(),
        partition: 0,
        offset,
        key: Some(uuid.to_string()),
        value: Some(value.json()),
    }
}

fn tombstone(offset: i64, uuid: &str) -> Msg {
    Msg {
        topic: "trips".into(),
        partition: 0,
        offset,
        key: Some(uuid.to_string()),
        value: None,
    }
}

/// uuid -> (ts, rider).
type Versions = BTreeMap<String, (i64, String)>;

fn versions(rows: &[(&str, i64, &str)]) -> Versions {
    rows.iter()
        .map(|(k, ts, r)| (k.to_string(), (*ts, r.to_string())))
        .collect()
}

/// The keys of a data block's rows, sorted.
fn data_keys(records: &arrow_array::RecordBatch) -> Vec<String> {
    let keys = records
        .column_by_name("_hoodie_record_key")
        .expect("record key")
        .as_string::<i32>();
    let mut out: Vec<String> = (0..keys.len()).map(|r| keys.value(r).to_string()).collect();
    out.sort();
    out
}

/// The keys of a delete block's records, sorted.
fn delete_keys(records: &[hudi_sink::log_file::DeleteRecord]) -> Vec<String> {
    let mut keys: Vec<String> = records
        .iter()
        .map(|r| r.record_key.clone().expect("record key"))
        .collect();
    keys.sort();
    keys
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_recreated_in_their_tombstones_batch_follow_a_delete_block() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = dir.path().join("trips");
    let schema = dir.path().join("trips.avsc");
    std::fs::write(&schema, SCHEMA).expect("schema");
    let mut props = local_props(&base, &schema, &dir.path().join("dead-letters"));
    for (k, v) in [
        ("hoodie.table.type", "MERGE_ON_READ"),
        ("hoodie.compact.inline", "false"),
        ("hoodie.bucket.index.num.buckets", "1"),
        ("hudi.sink.commit.interval.ms", "0"),
    ] {
        props.insert(k.into(), v.into());
    }
    let sink = build_sink(&props, "test-writer").await.expect("sink");
    // V1 (ts 100) in the base file, V2 (ts 300) in a log; `trip-m` only in the base file.
    process(
        &sink,
        &[
            trip(0, "trip-k", 100, "v1"),
            trip(1, "trip-j", 100, "v1"),
            trip(2, "trip-n", 100, "v1"),
            trip(3, "trip-m", 100, "v1"),
        ],
    )
    .await;
    process(
        &sink,
        &[trip(4, "trip-k", 300, "v2"), trip(5, "trip-j", 300, "v2")],
    )
    .await;
    // Re-created below V1 (`trip-k`) and between V1 and V2 (`trip-j`); `trip-n` updated, `trip-m` deleted.
    process(
        &sink,
        &[
            tombstone(6, "trip-k"),
            trip(7, "trip-k", 50, "v3"),
            tombstone(8, "trip-j"),
            trip(9, "trip-j", 200, "v3"),
            trip(10, "trip-n", 150, "v2"),
            tombstone(11, "trip-m"),
        ],
    )
    .await;

    let storage = LocalStorage::new(&base);
    let timeline = Timeline::load(&storage).await.expect("timeline");
    let slices = latest_file_slices(&storage, &timeline, None)
        .await
        .expect("slices");
    assert_eq!(slices.len(), 1, "{slices:?}");
    let slice = &slices[0];
    let logs = slice.log_paths();
    assert_eq!(logs.len(), 2, "{logs:?}");
    let last = &logs[1];
    let bytes = storage.get(last).await.expect("log");
    let blocks = read_log_file(last, &bytes).expect("blocks");
    let shape: Vec<(&str, Vec<String>)> = blocks
        .iter()
        .map(|b| match b {
            LogBlock::Delete { records, .. } => ("delete", delete_keys(records)),
            LogBlock::Data { records, .. } => ("data", data_keys(records)),
            LogBlock::Rollback { .. } => ("rollback", Vec::new()),
        })
        .collect();
    let keys = |ks: &[&str]| ks.iter().map(|k| k.to_string()).collect::<Vec<_>>();
    assert_eq!(
        shape,
        [
            ("delete", keys(&["trip-j", "trip-k"])),
            ("data", keys(&["trip-j", "trip-k", "trip-n"])),
            ("delete", keys(&["trip-m"])),
        ],
        "{last}"
    );
    // The deletes are Spark's natural-order deletes (IntWrapper 0), which win over every earlier version.
    for b in &blocks {
        if let LogBlock::Delete { records, .. } = b {
            for r in records {
                assert_eq!(
                    r.ordering_value,
                    Some(hudi_sink::log_file::OrderingValue::Int(0))
                );
            }
        }
    }

    let want = versions(&[
        ("trip-j", 200, "v3"),
        ("trip-k", 100, "v1"),
        ("trip-n", 150, "v2"),
    ]);
    // The sink's own slice merge (what its compaction writes).
    let table_props = TableProperties::load(&storage).await.expect("properties");
    let mode = MergeMode::from_table_properties(&table_props.as_map()).expect("merge mode");
    let committed = CommittedInstants::new(
        timeline
            .completed_commits()
            .into_iter()
            .map(|i| i.time.clone()),
        timeline.instants().first().map(|i| i.time.clone()),
    );
    let log = scan_stored_log_files(&storage, &logs, &committed, &mode)
        .await
        .expect("scan");
    let data = storage.get(&slice.path()).await.expect("base");
    let mut merged = Versions::new();
    for batch in merge_file_slice(Some(data), log).expect("merge") {
        let batch = batch.expect("batch");
        let uuid = batch
            .column_by_name("uuid")
            .expect("uuid")
            .as_string::<i32>();
        let ts = batch
            .column_by_name("ts")
            .expect("ts")
            .as_primitive::<Int64Type>();
        let rider = batch
            .column_by_name("rider")
            .expect("rider")
            .as_string::<i32>();
        for r in 0..batch.num_rows() {
            merged.insert(
                uuid.value(r).to_string(),
                (ts.value(r), rider.value(r).to_string()),
            );
        }
    }
    assert_eq!(merged, want, "the sink's slice merge");
    // hudi-rs.
    let read: Versions = read_rows(&base, "hudi", &["snapshot"])
        .into_iter()
        .map(|r| {
            (
                r["uuid"].as_str().expect("uuid").to_string(),
                (
                    r["ts"].as_i64().expect("ts"),
                    r["rider"].as_str().expect("rider").to_string(),
                ),
            )
        })
        .collect();
    assert_eq!(read, want, "hudi-rs");
}
