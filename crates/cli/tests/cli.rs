//! The built `hudi-sink` binary end to end on a temporary directory: `generate` → `ingest` (twice: the
//! second delivery must skip everything) → `show`, and the table read with the independent Python `hudi`
//! reader equals the generator's model row for row.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Map, Value};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("crate lives in <root>/crates/<name>")
        .to_path_buf()
}

/// Runs `hudi-sink ARGS` from the workspace root (where examples/ resolve) and returns its output.
fn hudi_sink(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hudi-sink"))
        .current_dir(workspace_root())
        .args(args)
        .output()
        .expect("run hudi-sink")
}

fn ok(args: &[&str]) -> String {
    let out = hudi_sink(args);
    assert!(
        out.status.success(),
        "hudi-sink {args:?} failed:\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The pinned reader's interpreter: `$HUDI_SINK_PYTHON`, else `<workspace>/.venv/bin/python` (`make venv`).
fn python() -> PathBuf {
    let path = std::env::var("HUDI_SINK_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|_| workspace_root().join(".venv/bin/python"));
    assert!(
        path.exists(),
        "Python with hudi==0.5.0 not found at {} (run `make venv` or set HUDI_SINK_PYTHON)",
        path.display()
    );
    path
}

/// Rows of the table's snapshot read by Python `hudi`, keyed by `uuid`, without the five meta columns.
fn read_table(table: &Path) -> BTreeMap<String, Map<String, Value>> {
    let out = Command::new(python())
        .arg(workspace_root().join("tests/python/hudi_read.py"))
        .arg(table)
        .arg("snapshot")
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "reader failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_slice(&out.stdout).expect("reader prints JSON");
    let mut rows = BTreeMap::new();
    for row in json["rows"].as_array().expect("rows") {
        let mut row = row.as_object().expect("row").clone();
        row.retain(|k, _| !k.starts_with("_hoodie_") || k == "_hoodie_is_deleted");
        let key = row["uuid"].as_str().expect("uuid").to_string();
        assert!(rows.insert(key.clone(), row).is_none(), "key {key} twice");
    }
    rows
}

fn model_rows(model: &Path) -> BTreeMap<String, Map<String, Value>> {
    std::fs::read_to_string(model)
        .expect("model")
        .lines()
        .map(|l| {
            let row: Map<String, Value> = serde_json::from_str(l).expect("model line");
            (row["uuid"].as_str().expect("uuid").to_string(), row)
        })
        .collect()
}

/// The number in `text` right after `label` (e.g. `"records in "` → 2000).
fn number_after(text: &str, label: &str) -> u64 {
    let start = text
        .find(label)
        .unwrap_or_else(|| panic!("{label:?} not in:\n{text}"))
        + label.len();
    text[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap_or_else(|_| panic!("no number after {label:?} in:\n{text}"))
}

#[test]
fn generate_ingest_show_round_trip() {
    let dir = tempfile::tempdir().expect("tempdir");
    let events = dir.path().join("events");
    let model = dir.path().join("model.jsonl");
    let table = dir.path().join("trips");
    let dead_letters = dir.path().join("dead-letters");
    let s = |p: &Path| p.display().to_string();

    let out = ok(&[
        "generate",
        "--out",
        &s(&events),
        "--records",
        "2000",
        "--partitions",
        "3",
        "--keys",
        "500",
        "--update-ratio",
        "0.4",
        "--delete-ratio",
        "0.15",
        "--tombstone-ratio",
        "0.5",
        "--records-per-file",
        "400",
        "--seed",
        "9",
        "--model",
        &s(&model),
    ]);
    assert!(out.contains("wrote 5 event files"), "{out}");
    let expected = model_rows(&model);
    assert!(!expected.is_empty());

    // Run it twice on the same directory: generate refuses to mix two streams.
    let again = hudi_sink(&["generate", "--out", &s(&events), "--records", "10"]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already holds event files"));

    let set_base = format!("hoodie.base.path={}", s(&table));
    let set_dl = format!("hudi.sink.dead.letter.path={}", s(&dead_letters));
    let ingest_args = [
        "ingest",
        "--config",
        "examples/local.properties",
        "--set",
        &set_base,
        "--set",
        &set_dl,
        &s(&events),
    ];
    let out = ok(&ingest_args);
    assert_eq!(number_after(&out, "records in "), 2000, "{out}");
    assert_eq!(number_after(&out, "dead-lettered "), 0, "{out}");
    assert_eq!(number_after(&out, "already committed "), 0, "{out}");
    assert_eq!(number_after(&out, "ingested "), 5, "{out}");
    // The interval commit (5 s by default): the five files are one batch, one instant.
    assert!(out.contains(": 1 commits"), "{out}");

    let actual = read_table(&table);
    assert_eq!(actual.len(), expected.len(), "row count");
    assert!(actual == expected, "table differs from the model");

    // A second delivery of every file commits nothing and changes nothing.
    let out = ok(&ingest_args);
    assert_eq!(number_after(&out, "already committed "), 2000, "{out}");
    assert!(out.contains(": 0 commits"), "{out}");
    assert!(
        read_table(&table) == expected,
        "redelivery changed the table"
    );

    let out = ok(&["show", "--table", &s(&table)]);
    assert!(out.contains("hoodie.table.name=trips"), "{out}");
    assert_eq!(number_after(&out, "timeline ("), 1, "{out}");
    assert_eq!(
        out.matches(".commit ").count(),
        1,
        "one completed commit:\n{out}"
    );
    assert!(
        out.contains("checkpoint (next offset per Kafka partition"),
        "{out}"
    );
    assert!(out.contains("\n  trips 0:"), "{out}");
    assert_eq!(
        number_after(&out, "total: "),
        expected.len() as u64,
        "show counts the model's rows:\n{out}"
    );
}

#[test]
fn ingest_fails_clearly_on_a_file_that_is_not_an_event() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("not-an-event.json");
    std::fs::write(&bad, br#"{"eventSource":"aws:sqs","records":{}}"#).expect("write");
    let out = hudi_sink(&[
        "ingest",
        "--config",
        "examples/local.properties",
        "--set",
        &format!("hoodie.base.path={}", dir.path().join("t").display()),
        "--set",
        &format!(
            "hudi.sink.dead.letter.path={}",
            dir.path().join("dl").display()
        ),
        &bad.display().to_string(),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not-an-event.json") && err.contains("aws:sqs"),
        "{err}"
    );
}

#[test]
fn ingest_writes_one_timing_line_per_batch() {
    let dir = tempfile::tempdir().expect("tempdir");
    let events = dir.path().join("events");
    let report = dir.path().join("report.jsonl");
    let s = |p: &Path| p.display().to_string();
    ok(&[
        "generate",
        "--out",
        &s(&events),
        "--records",
        "140",
        "--keys",
        "50",
        "--records-per-file",
        "20",
        "--seed",
        "3",
    ]);
    let mut files: Vec<String> = std::fs::read_dir(&events)
        .expect("events dir")
        .map(|e| s(&e.expect("entry").path()))
        .collect();
    files.sort();
    assert_eq!(files.len(), 7);

    let out = ok(&[
        "ingest",
        "--config",
        "examples/local.properties",
        "--set",
        &format!("hoodie.base.path={}", s(&dir.path().join("trips"))),
        "--set",
        &format!("hudi.sink.dead.letter.path={}", s(&dir.path().join("dl"))),
        "--report-jsonl",
        &s(&report),
        "--commit-interval-ms",
        "0",
        &s(&events),
    ]);
    // One instant per batch: every file on its own.
    assert!(out.contains(": 7 commits"), "{out}");

    let lines: Vec<Value> = std::fs::read_to_string(&report)
        .expect("report file")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    let named: Vec<&str> = lines
        .iter()
        .map(|l| {
            let files = l["event_files"].as_array().expect("event_files");
            assert_eq!(files.len(), 1, "{l}");
            files[0].as_str().expect("event file")
        })
        .collect();
    assert_eq!(named, files, "one line per event file, in order");
    let mut instants = std::collections::BTreeSet::new();
    for line in &lines {
        let ms = line["ms"].as_f64().expect("ms is a number");
        assert!(ms > 0.0 && ms < 60_000.0, "{line}");
        assert_eq!(line["report"]["records_in"], 20, "{line}");
        let instant = line["report"]["instant"].as_str().expect("committed");
        assert!(instants.insert(instant.to_string()), "{line}");
    }
}

/// Under the interval commit, consecutive event files are one batch per window, up to `--max-batch-bytes`;
/// each window is one instant, whose checkpoint covers every file of it.
#[test]
fn ingest_commits_once_per_interval_with_several_files_per_instant() {
    let dir = tempfile::tempdir().expect("tempdir");
    let events = dir.path().join("events");
    let report = dir.path().join("report.jsonl");
    let s = |p: &Path| p.display().to_string();
    ok(&[
        "generate",
        "--out",
        &s(&events),
        "--records",
        "120",
        "--keys",
        "50",
        "--records-per-file",
        "20",
        "--seed",
        "4",
    ]);
    let mut sizes: Vec<u64> = std::fs::read_dir(&events)
        .expect("events dir")
        .map(|e| e.expect("entry").metadata().expect("size").len())
        .collect();
    sizes.sort();
    assert_eq!(sizes.len(), 6);
    // Room for two files (the largest two) per batch: three batches of two.
    let cap = sizes[4] + sizes[5];
    let table = dir.path().join("trips");
    let out = ok(&[
        "ingest",
        "--config",
        "examples/local.properties",
        "--set",
        &format!("hoodie.base.path={}", s(&table)),
        "--set",
        &format!("hudi.sink.dead.letter.path={}", s(&dir.path().join("dl"))),
        "--report-jsonl",
        &s(&report),
        "--commit-interval-ms",
        "300",
        "--max-batch-bytes",
        &cap.to_string(),
        &s(&events),
    ]);
    assert!(out.contains(": 3 commits"), "{out}");
    let lines: Vec<Value> = std::fs::read_to_string(&report)
        .expect("report file")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    let mut windows = std::collections::BTreeSet::new();
    for line in &lines {
        assert_eq!(
            line["event_files"].as_array().map(Vec::len),
            Some(2),
            "{line}"
        );
        assert_eq!(line["report"]["records_in"], 40, "{line}");
        assert_eq!(line["report"]["contributions_per_instant"], 1, "{line}");
        let instant = line["report"]["instant"]
            .as_str()
            .expect("committed")
            .to_string();
        // One instant per 300 ms slot.
        let part = |r: std::ops::Range<usize>| -> u64 { instant[r].parse().expect("time") };
        let ms =
            part(8..10) * 3_600_000 + part(10..12) * 60_000 + part(12..14) * 1_000 + part(14..17);
        assert!(
            windows.insert(ms / 300),
            "two instants in one slot: {lines:?}"
        );
    }
    // The three instants are the table's whole timeline, and the table holds every record.
    let commits = completed_commits(&table);
    assert_eq!(commits.len(), 3, "{commits:?}");
}

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

/// The services report printed by `hudi-sink services`, with the (variable) run time checked and removed.
fn services_report(stdout: &str) -> Value {
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "one JSON line:\n{stdout}");
    let mut report: Value = serde_json::from_str(lines[0]).expect("JSON report");
    let object = report.as_object_mut().expect("object");
    assert!(object.remove("duration_ms").is_some_and(|d| d.is_u64()));
    report
}

fn completed_commits(table: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(table.join(".hoodie"))
        .expect("read .hoodie")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter_map(|n| n.strip_suffix(".commit").map(str::to_string))
        .collect();
    names.sort();
    names
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

/// A moto server (Glue among its services) on 127.0.0.1 for one test; stopped when dropped.
struct Moto {
    child: std::process::Child,
    endpoint: String,
}

impl Moto {
    fn start() -> Self {
        use std::io::BufRead as _;
        let mut child = Command::new(python())
            .arg(workspace_root().join("tests/python/moto_server.py"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start moto");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("moto port");
        let port: u16 = line.trim().parse().expect("moto port number");
        Self {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
        }
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn ingest_with_the_glue_example_registers_the_table_and_sync_catalog_finds_nothing_new() {
    let moto = Moto::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let events = dir.path().join("events");
    let table = dir.path().join("trips");
    let s = |p: &Path| p.display().to_string();
    ok(&[
        "generate",
        "--out",
        &s(&events),
        "--records",
        "600",
        "--partitions",
        "2",
        "--keys",
        "200",
        "--records-per-file",
        "300",
        "--seed",
        "3",
    ]);
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_hudi-sink"))
            .current_dir(workspace_root())
            .args(args)
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "testtesttest")
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ENDPOINT_URL_GLUE", &moto.endpoint)
            .env_remove("AWS_PROFILE")
            .output()
            .expect("run hudi-sink");
        assert!(
            out.status.success(),
            "hudi-sink {args:?} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let base = format!("hoodie.base.path={}", s(&table));
    let dead = format!("hudi.sink.dead.letter.path={}", s(&dir.path().join("dead")));
    run(&[
        "ingest",
        "--config",
        "examples/glue.properties",
        "--set",
        &base,
        "--set",
        &dead,
        &s(&events),
    ]);
    let report: Value = serde_json::from_str(
        run(&[
            "sync-catalog",
            "--config",
            "examples/glue.properties",
            "--set",
            &base,
        ])
        .trim(),
    )
    .expect("report JSON");
    // Every commit was synced by ingest already: nothing is created, the only call is the read.
    assert_eq!(report["tables_created"], 0, "{report}");
    assert_eq!(report["partitions_created"], 0, "{report}");
    assert_eq!(
        report["calls"],
        serde_json::json!({"GetTable": 1}),
        "{report}"
    );
    let dump = Command::new(python())
        .arg(workspace_root().join("tests/python/glue_dump.py"))
        .args([moto.endpoint.as_str(), "lake", "trips"])
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "testtesttest")
        .output()
        .expect("glue_dump");
    let dump: Value = serde_json::from_slice(&dump.stdout).expect("dump JSON");
    let mut got: Vec<String> = dump["partitions"]
        .as_array()
        .expect("partitions")
        .iter()
        .map(|p| p["Location"].as_str().expect("location").to_string())
        .collect();
    got.sort();
    let mut want: Vec<String> = std::fs::read_dir(&table)
        .expect("table dir")
        .flatten()
        .filter(|e| e.path().join(".hoodie_partition_metadata").exists())
        .map(|e| e.path().display().to_string())
        .collect();
    want.sort();
    assert!(!want.is_empty());
    assert_eq!(got, want);
    // The sync is refused with the fix when the configuration does not turn it on.
    let out = hudi_sink(&[
        "sync-catalog",
        "--config",
        "examples/local.properties",
        "--set",
        &base,
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("AwsGlueCatalogSyncTool"));
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
