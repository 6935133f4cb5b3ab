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
    assert!(out.contains(": 5 commits"), "{out}");

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
    assert_eq!(number_after(&out, "timeline ("), 5, "{out}");
    assert_eq!(
        out.matches(".commit ").count(),
        5,
        "five completed commits:\n{out}"
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
fn ingest_writes_one_timing_line_per_event_file() {
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
        &s(&events),
    ]);
    assert!(out.contains(": 7 commits"), "{out}");

    let lines: Vec<Value> = std::fs::read_to_string(&report)
        .expect("report file")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    let named: Vec<&str> = lines
        .iter()
        .map(|l| l["event_file"].as_str().expect("event_file"))
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
