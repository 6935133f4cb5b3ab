//! The commands that act on an existing table (`services`, `show`) end to end: they take the table's type,
//! keys and partitioning from its `hoodie.properties`, run on copy-on-write and merge-on-read tables the sink
//! wrote, and leave every row as the model has it.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::*;

/// One `aws:kafka` event: two good trips and one value that is not JSON (base64 as the ESM delivers them).
const STREAMER_EVENT: &str = r#"{
  "eventSource": "aws:kafka",
  "eventSourceArn": "arn:aws:kafka:eu-west-1:111122223333:cluster/trips/00000000-0000-0000-0000-000000000000-1",
  "bootstrapServers": "b-1.trips.kafka.example:9092",
  "records": {
    "trips-0": [
      {"topic": "trips", "partition": 0, "offset": 0, "timestamp": 1764412800000, "timestampType": "CREATE_TIME",
       "key": "dHJpcC0x",
       "value": "eyJ1dWlkIjoidHJpcC0xIiwidHMiOjEwMDAsInJpZGVyIjoicmlkZXItQSIsImZhcmUiOjEwLjUsImNpdHkiOiJzZiJ9",
       "headers": []},
      {"topic": "trips", "partition": 0, "offset": 1, "timestamp": 1764412800001, "timestampType": "CREATE_TIME",
       "key": "dHJpcC0y", "value": "eyJ1dWlkIjoidHJpcC0yIiwidHMiOjEwMDEsImNpdHkiOiJueWMifQ==", "headers": []},
      {"topic": "trips", "partition": 0, "offset": 2, "timestamp": 1764412800002, "timestampType": "CREATE_TIME",
       "key": "dHJpcC0z", "value": "dGhpcyBpcyBub3QgSlNPTg==", "headers": []}
    ]
  }
}"#;

/// The lines of `out` from the one starting with `first` up to (not including) the one starting with `until`.
fn section<'a>(out: &'a str, first: &str, until: &str) -> Vec<&'a str> {
    let lines: Vec<&str> = out.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with(first))
        .unwrap_or_else(|| panic!("{first:?} not in:\n{out}"));
    let end = lines[start..]
        .iter()
        .position(|l| l.starts_with(until))
        .map(|n| start + n)
        .unwrap_or_else(|| panic!("{until:?} not after {first:?} in:\n{out}"));
    lines[start..end].to_vec()
}

#[test]
fn streamer_properties_ingest_then_services_and_show() {
    let dir = tempfile::tempdir().expect("tempdir");
    let table = dir.path().join("trips");
    let event = dir.path().join("event.json");
    std::fs::write(&event, STREAMER_EVENT).expect("event");
    let s = |p: &Path| p.display().to_string();
    let set_base = format!("hoodie.base.path={}", s(&table));
    // HoodieStreamer's file, unchanged: the base path and table name are what HoodieStreamer takes on its
    // command line (--target-base-path, --target-table).
    let out = ok(&[
        "ingest",
        "--config",
        "tests/streamer/kafka-source.properties",
        "--set",
        &set_base,
        "--set",
        "hoodie.table.name=trips",
        &s(&event),
    ]);
    assert_eq!(number_after(&out, "records in "), 3, "{out}");
    assert_eq!(number_after(&out, "dead-lettered "), 1, "{out}");
    let letters = dir.path().join("trips_dead_letters/trips/0");
    let objects: Vec<_> = std::fs::read_dir(&letters)
        .expect("dead letters at the default place")
        .map(|e| e.expect("entry").path())
        .collect();
    assert_eq!(objects.len(), 1, "{objects:?}");
    let letter: Value = serde_json::from_str(
        std::fs::read_to_string(&objects[0])
            .expect("letter")
            .trim_end(),
    )
    .expect("one JSON line");
    assert_eq!(
        (&letter["offset"], &letter["stage"], &letter["value_b64"]),
        (
            &Value::from(2),
            &Value::from("not_json"),
            &Value::from("dGhpcyBpcyBub3QgSlNPTg==")
        )
    );
    let commits = completed_commits(&table);
    assert_eq!(commits.len(), 1, "{commits:?}");
    let commit = &commits[0];

    // A write that failed long ago: pending, with a data file, no heartbeat.
    let stale = "20200101000000000";
    for suffix in ["commit.requested", "inflight"] {
        std::fs::write(table.join(format!(".hoodie/{stale}.{suffix}")), b"").expect("pending");
    }
    let orphan = table.join(format!(
        "city=sf/00000000-0000-0000-0000-000000000009-0_0-0-0_{stale}.parquet"
    ));
    std::fs::write(&orphan, b"orphan").expect("orphan");

    // Small-file handling off: nothing for clustering to do, so the report is known exactly.
    let no_clustering = "hoodie.parquet.small.file.limit=0";
    let out = ok(&[
        "services",
        "--config",
        "tests/streamer/kafka-source.properties",
        "--set",
        &set_base,
        "--set",
        "hoodie.table.name=trips",
        "--set",
        no_clustering,
    ]);
    let idle = serde_json::json!({
        "clean_instant": null, "files_cleaned": 0, "instants_archived": 0, "cluster_instant": null,
        "file_groups_clustered": 0, "compaction_instant": null, "file_groups_compacted": 0, "resumed": 0,
    });
    assert_eq!(services_report(&out), idle, "{out}");
    assert!(!orphan.exists(), "the failed write was rolled back");
    // The same with default settings from the table alone.
    let out = ok(&["services", "--table", &s(&table), "--set", no_clustering]);
    assert_eq!(services_report(&out), idle, "{out}");
    let out = ok(&["show", "--table", &s(&table)]);
    assert_eq!(
        section(&out, "active timeline:", "checkpoint"),
        [
            format!("active timeline: 1 instants, first {commit}, last {commit}").as_str(),
            "archived timeline: .hoodie/archived/ is empty",
            "cleans (0):",
            "replacecommits (0):",
            "pending compactions (0):",
        ],
        "{out}"
    );

    // What the services leave behind, as Hudi writes it: cleans, replacecommits and an archive file.
    let hoodie = table.join(".hoodie");
    let put = |name: &str, body: &[u8]| std::fs::write(hoodie.join(name), body).expect(name);
    for name in [
        "20200101000000001.clean.requested",
        "20200101000000001.clean.inflight",
        "20200101000000001.clean",
        "20200101000000002.clean.requested",
        "20200101000000003.replacecommit.requested",
        "20200101000000003.replacecommit.inflight",
        "20200101000000004.replacecommit.requested",
        "20200101000000004.replacecommit.inflight",
    ] {
        put(name, b"");
    }
    put(
        "20200101000000003.replacecommit",
        br#"{"partitionToWriteStats":{},"partitionToReplaceFileIds":{"city=sf":["00000000-0000-0000-0000-00000000000a-0"]},"compacted":false,"extraMetadata":{},"operationType":"CLUSTER"}"#,
    );
    std::fs::create_dir_all(hoodie.join("archived")).expect("archived dir");
    std::fs::write(
        hoodie.join("archived/.commits_.archive.1_1-0-1"),
        b"0123456789",
    )
    .expect("archive file");
    let out = ok(&["show", "--table", &s(&table)]);
    assert_eq!(
        section(&out, "active timeline:", "checkpoint"),
        [
            format!("active timeline: 5 instants, first 20200101000000001, last {commit}").as_str(),
            "archived timeline: .hoodie/archived/ holds 1 files (10 B)",
            "cleans (2):",
            "  20200101000000001 COMPLETED",
            "  20200101000000002 REQUESTED",
            "replacecommits (2):",
            "  20200101000000003 COMPLETED CLUSTER           replaced 1 file groups, wrote 0 files",
            "  20200101000000004 INFLIGHT",
            "pending compactions (0):",
        ],
        "{out}"
    );
    assert_eq!(number_after(&out, "total: "), 2, "{out}");
}

#[test]
fn services_refuses_a_table_whose_lock_it_cannot_know() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join(".hoodie")).expect("mkdir");
    std::fs::write(
        dir.path().join(".hoodie/hoodie.properties"),
        "hoodie.table.name=trips\nhoodie.table.recordkey.fields=uuid\n",
    )
    .expect("properties");
    let out = hudi_sink(&["services", "--table", &dir.path().display().to_string()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no file lock was ever taken in this table (.hoodie/.lock/trips/)")
            && err.contains("--config"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    // Nothing was written: no lock, no instant.
    let mut left: Vec<String> = std::fs::read_dir(dir.path().join(".hoodie"))
        .expect("read")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["hoodie.properties"]);
    // A base path that is not a table is refused before anything is written there.
    let elsewhere = dir.path().join("not-a-table");
    let out = hudi_sink(&[
        "services",
        "--config",
        "tests/streamer/kafka-source.properties",
        "--table",
        &elsewhere.display().to_string(),
        "--set",
        "hoodie.table.name=trips",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is not a Hudi table"), "{err}");
    assert!(!elsewhere.exists());
    // Neither --config nor --table: a usage error.
    let out = hudi_sink(&["services"]);
    assert_eq!(out.status.code(), Some(2));
}

/// Unzips the Spark-written merge-on-read fixture `name` (`testdata/hudi-rs-tables-mor/`) into
/// `into`; returns the table directory.
fn unzip_mor_fixture(name: &str, into: &Path) -> PathBuf {
    let zip_path = workspace_root()
        .join("testdata/hudi-rs-tables-mor")
        .join(format!("{name}.zip"));
    let file = std::fs::File::open(&zip_path)
        .unwrap_or_else(|e| panic!("open {}: {e}", zip_path.display()));
    let mut archive = zip::ZipArchive::new(file).expect("valid zip");
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).expect("zip entry");
        let Some(rel) = entry.enclosed_name() else {
            continue;
        };
        if rel.to_string_lossy().starts_with("__MACOSX") {
            continue;
        }
        let out = into.join(&rel);
        if entry.is_dir() {
            std::fs::create_dir_all(&out).expect("mkdir");
        } else {
            std::fs::create_dir_all(out.parent().expect("parent")).expect("mkdir");
            let mut f = std::fs::File::create(&out).expect("create");
            std::io::copy(&mut entry, &mut f).expect("unzip");
        }
    }
    into.join(name)
}

/// A version-2 `HoodieCompactionPlan` of one slice, as Spark writes it (the 0.14 operation fields).
fn compaction_plan(
    partition: &str,
    file_id: &str,
    base: &str,
    data: &str,
    logs: &[&str],
) -> Vec<u8> {
    use hudi_sink::avro::{encode_container, AvroValue};
    const SCHEMA: &str = r#"{"type":"record","name":"HoodieCompactionPlan","namespace":"org.apache.hudi.avro.model",
      "fields":[
        {"name":"operations","type":["null",{"type":"array","items":{"type":"record","name":"HoodieCompactionOperation",
          "fields":[
            {"name":"baseInstantTime","type":["null","string"],"default":null},
            {"name":"deltaFilePaths","type":["null",{"type":"array","items":"string"}],"default":null},
            {"name":"dataFilePath","type":["null","string"],"default":null},
            {"name":"fileId","type":["null","string"],"default":null},
            {"name":"partitionPath","type":["null","string"],"default":null}]}}],"default":null},
        {"name":"version","type":["int","null"],"default":1}]}"#;
    let some = |v| AvroValue::Union(1, Box::new(v));
    let op = AvroValue::record([
        ("baseInstantTime", some(AvroValue::string(base))),
        ("deltaFilePaths", some(AvroValue::string_array(logs))),
        ("dataFilePath", some(AvroValue::string(data))),
        ("fileId", some(AvroValue::string(file_id))),
        ("partitionPath", some(AvroValue::string(partition))),
    ]);
    let plan = AvroValue::record([
        ("operations", some(AvroValue::Array(vec![op]))),
        ("version", AvroValue::Union(0, Box::new(AvroValue::Int(2)))),
    ]);
    encode_container(SCHEMA, &plan).expect("plan")
}

#[test]
fn show_lists_log_files_per_slice_and_pending_compactions_of_a_spark_mor_table() {
    let dir = tempfile::tempdir().expect("tempdir");
    let table = unzip_mor_fixture("v6_trips_8i1u", dir.path());
    let s = |p: &Path| p.display().to_string();
    let group = "d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0";
    let base = "20250331030642808";
    let log = format!(".{group}_{base}.log.1_0-26-85");
    let out = ok(&["show", "--table", &s(&table)]);
    assert!(out.contains("hoodie.table.type=MERGE_ON_READ"), "{out}");
    let groups = section(&out, "file groups", "rows per partition");
    assert_eq!(groups.len(), 5, "{out}");
    let at = groups
        .iter()
        .position(|l| l.contains(group))
        .unwrap_or_else(|| panic!("{group} not in:\n{out}"));
    assert!(groups[at].contains("city=san_francisco"), "{out}");
    assert_eq!(
        groups[at + 1],
        format!("      log {log} 1148 bytes (1.1 kB)"),
        "{out}"
    );
    assert_eq!(
        groups
            .iter()
            .filter(|l| l.trim_start().starts_with("log "))
            .count(),
        1,
        "only the updated group has a log:\n{out}"
    );
    assert_eq!(
        section(&out, "pending compactions", "checkpoint"),
        ["pending compactions (0):"],
        "{out}"
    );

    // Two compactions pending: one with a plan, one whose plan is not readable (an empty file).
    let hoodie = table.join(".hoodie");
    std::fs::write(
        hoodie.join("20250401000000000.compaction.requested"),
        compaction_plan(
            "city=san_francisco",
            group,
            base,
            &format!("{group}_0-13-60_{base}.parquet"),
            &[&log],
        ),
    )
    .expect("plan");
    std::fs::write(hoodie.join("20250401000000000.compaction.inflight"), b"").expect("inflight");
    std::fs::write(hoodie.join("20250402000000000.compaction.requested"), b"").expect("empty plan");
    let out = ok(&["show", "--table", &s(&table)]);
    let pending = section(&out, "pending compactions", "checkpoint");
    assert_eq!(pending.len(), 4, "{out}");
    assert_eq!(pending[0], "pending compactions (2):");
    assert_eq!(pending[1], "  20250401000000000 INFLIGHT 1 file groups");
    assert_eq!(
        pending[2],
        format!(
            "    {:<28} {group:<44} base {base} logs 1",
            "city=san_francisco"
        )
    );
    assert!(
        pending[3].starts_with("  20250402000000000 REQUESTED plan not readable: "),
        "{out}"
    );
}

/// `services --table` alone (no `--config`) on the tables the README's demo makes, copy-on-write and
/// merge-on-read, partitioned hive-style: the table's type, keys and partitioning come from its
/// `hoodie.properties`, the run succeeds, and every row stays as the model has it. The ingest also carries the
/// documented services key `hudi.sink.services.retired.grace.ms`.
#[test]
fn services_with_only_the_table_runs_on_copy_on_write_and_merge_on_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = |p: &Path| p.display().to_string();
    let events = dir.path().join("events");
    let model = dir.path().join("model.jsonl");
    ok(&[
        "generate",
        "--out",
        &s(&events),
        "--records",
        "1500",
        "--partitions",
        "3",
        "--keys",
        "400",
        "--update-ratio",
        "0.4",
        // No deletes: a merge-on-read key deleted and re-created below the delete's ordering value keeps the
        // delete until compacted, as Hudi's log merge does (docs/semantics.md), which the generator's model
        // does not follow; this test is about the services, not the merge rules.
        "--delete-ratio",
        "0",
        // One instant per file below, so the model folds one batch per file.
        "--model-batch-bytes",
        "0",
        "--records-per-file",
        "250",
        "--seed",
        "17",
        "--model",
        &s(&model),
    ]);
    let expected = model_rows(&model);
    for table_type in ["COPY_ON_WRITE", "MERGE_ON_READ"] {
        let table = dir.path().join(table_type.to_ascii_lowercase());
        ingest_one_instant_per_file(
            &table,
            &events,
            table_type,
            &["hudi.sink.services.retired.grace.ms=1000"],
        );
        assert!(read_table(&table) == expected, "{table_type}: ingest");
        let out = ok(&["services", "--table", &s(&table)]);
        let report = services_report(&out);
        assert!(report.is_object(), "{table_type}: {report}");
        assert!(
            read_table(&table) == expected,
            "{table_type}: the services changed a row"
        );
        // A second run, with the grace key given on the command line too.
        let out = ok(&[
            "services",
            "--table",
            &s(&table),
            "--set",
            "hudi.sink.services.retired.grace.ms=0",
        ]);
        services_report(&out);
        assert!(read_table(&table) == expected, "{table_type}: second run");
        let shown = ok(&["show", "--table", &s(&table)]);
        assert!(
            shown.contains(&format!("hoodie.table.type={table_type}")),
            "{shown}"
        );
    }
}
