//! The Delta Lake mirror (`hudi.sink.delta.mirror=true`, docs/delta.md) end to end: `hudi-sink ingest` of a
//! stream with inserts, updates and deletes into copy-on-write tables, one instant per event file, then the
//! Delta log read with Python `deltalake` (delta-rs) and Polars equals the Hudi snapshot read with hudi-rs and
//! the generator's model, row for row, and the log has one version per Hudi instant. Also through cleaning,
//! archival, clustering and a schema evolution, and Delta time travel against Hudi's.

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
pub(crate) fn delta_commits(table: &Path) -> Vec<Value> {
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

/// Every action of every Delta commit, in version order.
pub(crate) fn delta_actions(table: &Path) -> Vec<Vec<Value>> {
    let mut names: Vec<String> = std::fs::read_dir(table.join("_delta_log"))
        .expect("_delta_log/ exists")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json") && !n.starts_with('_'))
        .collect();
    names.sort();
    names
        .iter()
        .map(|n| {
            std::fs::read_to_string(table.join("_delta_log").join(n))
                .expect("read")
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).expect("action JSON"))
                .collect()
        })
        .collect()
}

/// Every row of the table, meta columns included, as sorted canonical JSON lines: `engine` `hudi` (hudi-rs),
/// `delta` (the mirror read by `deltalake`) or `polars` (the mirror read by Polars).
pub(crate) fn full_rows(table: &Path, engine: &str) -> Vec<String> {
    full_rows_at(table, engine, None)
}

/// [`full_rows`] as of `at`: a Hudi instant for `hudi`, a Delta version for `delta` and `polars`.
pub(crate) fn full_rows_at(table: &Path, engine: &str, at: Option<&str>) -> Vec<String> {
    match at {
        Some(at) => reader_rows(table, engine, &["as_of", at]),
        None => reader_rows(table, engine, &["snapshot"]),
    }
}

/// Every row read by `tests/python/hudi_read.py --engine <engine> TABLE <args>`, as sorted canonical JSON.
pub(crate) fn reader_rows(table: &Path, engine: &str, args: &[&str]) -> Vec<String> {
    let out = Command::new(python())
        .arg(workspace_root().join("tests/python/hudi_read.py"))
        .args(["--engine", engine])
        .arg(table)
        .args(args)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "{engine} {args:?}: {}",
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
/// changes for a key, so that the table holds one row per key) the generator's model. Returns the directory
/// holding the table, and the table.
fn mirror_round_trip(
    name: &str,
    sets: &[&str],
    one_row_per_key: bool,
) -> (tempfile::TempDir, std::path::PathBuf) {
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
    assert!(
        full_rows(&table, "polars") == hudi_full,
        "{name}: Polars's read of the Delta mirror differs from hudi-rs's snapshot"
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
    // Time travel: every version reads what Hudi reads as of its instant (nothing was cleaned in four commits).
    for (version, instant) in instants.iter().enumerate() {
        assert!(
            full_rows_at(&table, "delta", Some(&version.to_string()))
                == full_rows_at(&table, "hudi", Some(instant)),
            "{name}: Delta version {version} differs from Hudi as of {instant}"
        );
    }

    // `show` reports the mirror up to date.
    let shown = ok(&["show", "--table", &s(&table)]);
    let expected = format!(
        "delta mirror: version {} (sequence {}), mirrors {}, 0 completed instants behind",
        instants.len() - 1,
        instants.len() - 1,
        instants[instants.len() - 1]
    );
    assert!(shown.contains(&expected), "{name}: {shown}");

    // A redelivery commits nothing in Hudi and nothing in Delta.
    ingest_one_instant_per_file(&table, &events, "COPY_ON_WRITE", &all_sets);
    assert_eq!(
        delta_commits(&table).len(),
        instants.len(),
        "{name}: redelivery"
    );
    (dir, table)
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

/// A timestamp-based key generator's partition path (`yyyy/MM/dd` of `ts`) is not a value of the `ts` column:
/// the mirror is an unpartitioned Delta table over the same files, whose rows hold the stored `ts` as hudi-rs
/// reads it, and whose files stay in their partition directories.
#[test]
fn mirror_timestamp_keyed_partitions_as_an_unpartitioned_table() {
    let (_dir, table) = mirror_round_trip(
        "timestamp_keyed",
        &[
            "hoodie.datasource.write.partitionpath.field=ts",
            "hoodie.datasource.write.keygenerator.class=org.apache.hudi.keygen.TimestampBasedKeyGenerator",
            "hoodie.keygen.timebased.timestamp.type=EPOCHMILLISECONDS",
            "hoodie.keygen.timebased.output.dateformat=yyyy/MM/dd",
            "hoodie.keygen.timebased.timezone=UTC",
        ],
        false,
    );
    let first = std::fs::read_to_string(table.join("_delta_log/00000000000000000000.json"))
        .expect("version 0");
    let actions: Vec<Value> = first
        .lines()
        .map(|l| serde_json::from_str(l).expect("action JSON"))
        .collect();
    let metadata = actions
        .iter()
        .find_map(|a| a.get("metaData"))
        .expect("metaData");
    assert_eq!(
        metadata["partitionColumns"],
        serde_json::json!([]),
        "{metadata}"
    );
    let adds: Vec<&Value> = actions.iter().filter_map(|a| a.get("add")).collect();
    assert!(!adds.is_empty());
    for add in adds {
        let path = add["path"].as_str().expect("path");
        let dirs: Vec<&str> = path.split('/').collect();
        // Hive-style (`examples/local.properties`): the first segment is `ts=yyyy`.
        assert_eq!(dirs.len(), 4, "{path}: ts=yyyy/MM/dd/<file>");
        let year = dirs[0].strip_prefix("ts=").unwrap_or(dirs[0]);
        assert!(
            [year, dirs[1], dirs[2]]
                .iter()
                .all(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit())),
            "{path}"
        );
        assert_eq!(add["partitionValues"], serde_json::json!({}), "{add}");
        assert!(
            add["stats"].as_str().expect("stats").contains("\"ts\""),
            "the column's statistics: {add}"
        );
    }
}

/// Copies the event files of `from` into `to` with a `tip` (a new nullable double) in every record's value,
/// for the schema evolution.
fn with_tip(from: &Path, to: &Path) {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    std::fs::create_dir_all(to).expect("events dir");
    for entry in std::fs::read_dir(from).expect("events") {
        let path = entry.expect("entry").path();
        let mut event: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("event");
        for records in event["records"]
            .as_object_mut()
            .expect("records")
            .values_mut()
        {
            for record in records.as_array_mut().expect("partition records") {
                let Some(text) = record["value"].as_str() else {
                    continue;
                };
                let mut value: Value =
                    serde_json::from_slice(&b64.decode(text).expect("base64")).expect("JSON value");
                let ts = value["ts"].as_i64().expect("ts");
                value["tip"] = Value::from((ts % 1000) as f64 / 8.0);
                record["value"] = Value::from(b64.encode(value.to_string()));
            }
        }
        std::fs::write(to.join(path.file_name().expect("name")), event.to_string()).expect("write");
    }
}

/// One stream of `files` event files (one offset range) generated with `seed`, split into `dir/<head>` (the
/// first `head_files`) and `dir/<tail>` (the rest).
pub(crate) fn split_stream(
    dir: &Path,
    seed: &str,
    (files, head_files): (u32, usize),
    head: &str,
    tail: &str,
) -> (std::path::PathBuf, std::path::PathBuf) {
    let all = generate(dir, "all", files, seed);
    let mut names: Vec<std::path::PathBuf> = std::fs::read_dir(&all)
        .expect("events")
        .map(|e| e.expect("entry").path())
        .collect();
    names.sort();
    assert_eq!(names.len(), files as usize, "{names:?}");
    let (first, second) = (dir.join(head), dir.join(tail));
    for (i, file) in names.iter().enumerate() {
        let to = if i < head_files { &first } else { &second };
        std::fs::create_dir_all(to).expect("dir");
        std::fs::copy(file, to.join(file.file_name().expect("name"))).expect("copy");
    }
    (first, second)
}

/// Generates `files` event files of 60 records into `dir/name`.
pub(crate) fn generate(dir: &Path, name: &str, files: u32, seed: &str) -> std::path::PathBuf {
    let events = dir.join(name);
    let records = (files * 60).to_string();
    ok(&[
        "generate",
        "--out",
        &events.display().to_string(),
        "--records",
        &records,
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
        seed,
    ]);
    events
}

/// Upserts and deletes into a table whose cleaner keeps one commit and whose archival keeps two to three, with a
/// schema evolution (a new nullable column `tip`, with values) halfway: the mirror's latest version reads as
/// hudi-rs's snapshot (with deltalake and Polars), the evolution is one `metaData` action with the new column,
/// cleans and archival add no version, and every version back to the last clean's retained instant reads as
/// Hudi's time travel does at its instant.
#[test]
fn mirror_through_cleaning_archival_and_schema_evolution() {
    let dir = tempfile::tempdir().expect("tempdir");
    let table = dir.path().join("evolving");
    // One stream of six files (one offset range): the first three as they are, the last three with `tip`.
    let (first, plain) = split_stream(dir.path(), "281", (6, 3), "first", "plain");
    let second = with_tip_dir(dir.path(), &plain);
    let evolved = dir.path().join("trips_tip.avsc");
    let schema = std::fs::read_to_string(workspace_root().join("events/schema/trips.avsc"))
        .expect("schema")
        .replace(
            r#"{"name": "_hoodie_is_deleted""#,
            r#"{"name": "tip", "type": ["null", "double"], "default": null},
    {"name": "_hoodie_is_deleted""#,
        );
    std::fs::write(&evolved, schema).expect("write schema");
    let sets = [
        "hudi.sink.delta.mirror=true",
        "hoodie.cleaner.commits.retained=1",
        "hoodie.keep.min.commits=2",
        "hoodie.keep.max.commits=3",
    ];
    ingest_one_instant_per_file(&table, &first, "COPY_ON_WRITE", &sets);
    let schema_set = format!(
        "hoodie.streamer.schemaprovider.source.schema.file={}",
        evolved.display()
    );
    let mut evolved_sets = sets.to_vec();
    evolved_sets.push(&schema_set);
    ingest_one_instant_per_file(&table, &second, "COPY_ON_WRITE", &evolved_sets);

    let names: Vec<String> = std::fs::read_dir(table.join(".hoodie"))
        .expect(".hoodie")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().any(|n| n.ends_with(".clean")),
        "the cleaner ran: {names:?}"
    );
    let hudi_full = full_rows(&table, "hudi");
    assert!(hudi_full
        .iter()
        .any(|r| r.contains(r#""tip":"#) && !r.contains(r#""tip":null"#)));
    assert!(
        full_rows(&table, "delta") == hudi_full,
        "the Delta mirror differs from hudi-rs's snapshot"
    );
    assert!(
        full_rows(&table, "polars") == hudi_full,
        "Polars's read of the Delta mirror differs from hudi-rs's snapshot"
    );

    // Six commits, six versions: cleans and archival add none, and the fourth carries the new schema.
    let actions = delta_actions(&table);
    assert_eq!(
        actions.len(),
        6,
        "one version per commit: {:?} {names:?}",
        delta_commits(&table)
    );
    let metadata: Vec<usize> = actions
        .iter()
        .enumerate()
        .filter(|(_, a)| a.iter().any(|a| a.get("metaData").is_some()))
        .map(|(v, _)| v)
        .collect();
    assert_eq!(
        metadata,
        [0, 3],
        "metaData at creation and at the evolution"
    );
    let schema_string = actions[3]
        .iter()
        .find_map(|a| a["metaData"]["schemaString"].as_str())
        .expect("schemaString");
    assert!(schema_string.contains(r#""name":"tip""#), "{schema_string}");

    // Time travel inside the cleaner's retention: the last two versions read as Hudi as of their instants.
    let commits = delta_commits(&table);
    for version in [4usize, 5] {
        let instant = commits[version]["hudiInstant"].as_str().expect("instant");
        assert!(
            full_rows_at(&table, "delta", Some(&version.to_string()))
                == full_rows_at(&table, "hudi", Some(instant)),
            "Delta version {version} differs from Hudi as of {instant}"
        );
    }
}

/// [`with_tip`] into a sibling directory; returns it.
fn with_tip_dir(dir: &Path, from: &Path) -> std::path::PathBuf {
    let to = dir.join("with_tip");
    with_tip(from, &to);
    to
}

/// An insert table (no index) clustered every two commits: each clustering's replacecommit is one Delta
/// version whose adds and removes all say `dataChange: false`, and the latest version reads as hudi-rs's
/// snapshot.
#[test]
fn mirror_clustering_as_a_rewrite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let table = dir.path().join("clustered");
    let events = generate(dir.path(), "events", 5, "283");
    ingest_one_instant_per_file(
        &table,
        &events,
        "COPY_ON_WRITE",
        &[
            "hudi.sink.delta.mirror=true",
            "hoodie.datasource.write.operation=insert",
            "hoodie.index.type=",
            "hoodie.clustering.inline.max.commits=2",
            "hudi.sink.clustering.fan.out=1",
        ],
    );
    let replaces: Vec<String> = std::fs::read_dir(table.join(".hoodie"))
        .expect(".hoodie")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter_map(|n| n.strip_suffix(".replacecommit").map(str::to_string))
        .collect();
    assert!(!replaces.is_empty(), "clustering ran");
    let hudi_full = full_rows(&table, "hudi");
    assert!(
        full_rows(&table, "delta") == hudi_full,
        "the Delta mirror differs from hudi-rs's snapshot"
    );
    let commits = delta_commits(&table);
    let actions = delta_actions(&table);
    let mut rewrites = 0;
    for (version, commit) in commits.iter().enumerate() {
        let files: Vec<&Value> = actions[version]
            .iter()
            .filter_map(|a| a.get("add").or_else(|| a.get("remove")))
            .collect();
        let clustering = commit["hudiAction"] == "replacecommit";
        rewrites += usize::from(clustering);
        for file in files {
            assert_eq!(
                file["dataChange"],
                Value::Bool(!clustering),
                "version {version} ({commit}): {file}"
            );
        }
    }
    // The clusterings mirrored by later commits (the last one's may wait for the next commit).
    assert!(rewrites >= 1, "a clustering version: {commits:?}");
}

/// The key turned on for a table that already has commits: the first mirror step writes version 0 from the
/// full snapshot as of the latest instant (the earlier instants are not replayed), and the next instants follow
/// one version each, every version reading what Hudi reads as of its instant.
#[test]
fn mirror_turned_on_for_an_existing_table_starts_from_its_snapshot() {
    let dir = tempfile::tempdir().expect("tempdir");
    let table = dir.path().join("existing");
    let (before, after) = split_stream(dir.path(), "283", (6, 3), "before", "after");
    ingest_one_instant_per_file(&table, &before, "COPY_ON_WRITE", &[]);
    assert!(
        !table.join("_delta_log").exists(),
        "no mirror before the key"
    );
    let earlier = completed_commits(&table);
    assert_eq!(earlier.len(), 3, "{earlier:?}");

    ingest_one_instant_per_file(
        &table,
        &after,
        "COPY_ON_WRITE",
        &["hudi.sink.delta.mirror=true"],
    );
    let instants = completed_commits(&table);
    assert_eq!(instants.len(), 6, "{instants:?}");
    let commits = delta_commits(&table);
    let mirrored: Vec<&str> = commits
        .iter()
        .map(|c| c["hudiInstant"].as_str().expect("hudiInstant"))
        .collect();
    let expected: Vec<&str> = instants[3..].iter().map(String::as_str).collect();
    assert_eq!(
        mirrored, expected,
        "one version per instant from the key on"
    );
    // Version 0 holds every file of the snapshot, the earlier instants' included.
    assert!(
        full_rows_at(&table, "delta", Some("0"))
            == full_rows_at(&table, "hudi", Some(&instants[3])),
        "version 0 differs from Hudi as of {}",
        instants[3]
    );
    for (version, instant) in instants[3..].iter().enumerate() {
        assert!(
            full_rows_at(&table, "delta", Some(&version.to_string()))
                == full_rows_at(&table, "hudi", Some(instant)),
            "Delta version {version} differs from Hudi as of {instant}"
        );
    }
    let latest = full_rows(&table, "hudi");
    assert!(!latest.is_empty());
    assert!(full_rows(&table, "delta") == latest, "latest version");
    assert!(full_rows(&table, "polars") == latest, "Polars");
}
