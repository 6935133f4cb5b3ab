//! The Delta Lake mirror (`hudi.sink.delta.mirror=true`, docs/delta.md) end to end: `hudi-sink ingest` of a
//! stream with inserts, updates and deletes into copy-on-write tables, one instant per event file, then the
//! Delta log read with Python `deltalake` (delta-rs) equals the Hudi snapshot read with hudi-rs and the
//! generator's model, row for row, and the log has one version per Hudi instant.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::{Map, Value};

use crate::common::*;

/// Rows of the Delta mirror read by Python `deltalake`, keyed by `uuid`, without Hudi's meta columns.
fn read_delta(table: &Path, version: Option<u64>) -> BTreeMap<String, Map<String, Value>> {
    let mut command = Command::new(python());
    command
        .arg(workspace_root().join("tests/python/hudi_read.py"))
        .args(["--engine", "delta"])
        .arg(table);
    match version {
        Some(v) => command.args(["as_of", &v.to_string()]),
        None => command.arg("snapshot"),
    };
    let out = command.output().expect("run python");
    assert!(
        out.status.success(),
        "delta reader failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_slice(&out.stdout).expect("reader prints JSON");
    let mut rows = BTreeMap::new();
    for row in json["rows"].as_array().expect("rows") {
        let mut row = row.as_object().expect("row").clone();
        row.retain(|k, _| k == "_hoodie_is_deleted" || !k.starts_with("_hoodie_"));
        let key = row["uuid"].as_str().expect("uuid").to_string();
        assert!(
            rows.insert(key.clone(), row).is_none(),
            "key {key} twice in the Delta table"
        );
    }
    rows
}

/// The Delta log's commit files, in version order.
fn delta_commits(table: &Path) -> Vec<Value> {
    let mut names: Vec<String> = std::fs::read_dir(table.join("_delta_log"))
        .expect("_delta_log/ exists")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json") && !n.starts_with('_'))
        .collect();
    names.sort();
    names
        .iter()
        .map(|n| {
            let text = std::fs::read_to_string(table.join("_delta_log").join(n)).expect("read");
            let info = text
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).expect("action JSON"))
                .find(|a| a.get("commitInfo").is_some())
                .expect("commitInfo");
            info["commitInfo"].clone()
        })
        .collect()
}

/// Every row of the table, meta columns included, as sorted canonical JSON lines: `engine` `hudi` (hudi-rs) or
/// `delta` (the mirror read by `deltalake`).
fn full_rows(table: &Path, engine: &str) -> Vec<String> {
    let out = Command::new(python())
        .arg(workspace_root().join("tests/python/hudi_read.py"))
        .args(["--engine", engine])
        .arg(table)
        .arg("snapshot")
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_slice(&out.stdout).expect("reader prints JSON");
    let mut rows: Vec<String> = json["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| serde_json::to_string(r).expect("JSON"))
        .collect();
    rows.sort();
    rows
}

/// Generates a stream, ingests it one instant per file with the mirror on, and compares the reads: the Delta
/// mirror equals hudi-rs's snapshot row for row, meta columns included, and (when the partition field never
/// changes for a key, so that the table holds one row per key) the generator's model.
fn mirror_round_trip(name: &str, sets: &[&str], one_row_per_key: bool) {
    let dir = tempfile::tempdir().expect("tempdir");
    let events = dir.path().join("events");
    let model = dir.path().join("model.jsonl");
    let table = dir.path().join(name);
    let s = |p: &Path| p.display().to_string();
    ok(&[
        "generate",
        "--out",
        &s(&events),
        "--records",
        "240",
        "--partitions",
        "2",
        "--keys",
        "80",
        "--update-ratio",
        "0.4",
        "--delete-ratio",
        "0.15",
        "--records-per-file",
        "60",
        "--seed",
        "28",
        "--model",
        &s(&model),
        "--model-batch-bytes",
        "0",
    ]);
    let mut all_sets = vec!["hudi.sink.delta.mirror=true"];
    all_sets.extend_from_slice(sets);
    ingest_one_instant_per_file(&table, &events, "COPY_ON_WRITE", &all_sets);

    let hudi_full = full_rows(&table, "hudi");
    let delta_full = full_rows(&table, "delta");
    assert!(!hudi_full.is_empty(), "{name}");
    assert_eq!(delta_full.len(), hudi_full.len(), "{name}: Delta row count");
    assert!(
        delta_full == hudi_full,
        "{name}: the Delta mirror differs from hudi-rs's snapshot"
    );
    if one_row_per_key {
        let expected = model_rows(&model);
        let hudi = read_table(&table);
        let delta = read_delta(&table, None);
        assert!(
            hudi == expected,
            "{name}: the Hudi table differs from the model"
        );
        assert!(
            delta == expected,
            "{name}: the Delta mirror differs from the model"
        );
    }

    // One Delta version per completed Hudi instant, in timeline order, each carrying its instant and the
    // mirror's sequence number.
    let instants = completed_commits(&table);
    let commits = delta_commits(&table);
    assert_eq!(
        commits.len(),
        instants.len(),
        "{name}: versions {commits:?}"
    );
    for (commit, instant) in commits.iter().zip(&instants) {
        assert_eq!(commit["hudiInstant"], instant.as_str(), "{name}");
    }
    // Every earlier version reads too (nothing was cleaned in four commits).
    if one_row_per_key {
        assert!(!read_delta(&table, Some(0)).is_empty(), "{name}: version 0");
    }

    // A redelivery commits nothing in Hudi and nothing in Delta.
    ingest_one_instant_per_file(&table, &events, "COPY_ON_WRITE", &all_sets);
    assert_eq!(
        delta_commits(&table).len(),
        instants.len(),
        "{name}: redelivery"
    );
}

#[test]
fn mirror_hive_style_partitions() {
    mirror_round_trip("hive", &[], true);
}

#[test]
fn mirror_url_encoded_partitions_with_nulls() {
    // `rider` is null in about 5 % of the records: `rider=__HIVE_DEFAULT_PARTITION__`, a Delta null. A key whose
    // rider changes lands in a second partition (Hudi's own semantics with a partition-local index), so the
    // table holds more rows than the model: compared with hudi-rs only.
    mirror_round_trip(
        "url_encoded",
        &[
            "hoodie.datasource.write.partitionpath.field=rider",
            "hoodie.datasource.write.partitionpath.urlencode=true",
        ],
        false,
    );
}

#[test]
fn mirror_non_partitioned() {
    mirror_round_trip(
        "flat",
        &[
            "hoodie.datasource.write.partitionpath.field=",
            "hoodie.datasource.write.keygenerator.class=org.apache.hudi.keygen.NonpartitionedKeyGenerator",
        ],
        true,
    );
}
