//! What the command's end-to-end tests share: running the built binary, the pinned Python reader, the
//! generator's model and the services report.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Map, Value};

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("crate lives in <root>/crates/<name>")
        .to_path_buf()
}

/// Runs `hudi-sink ARGS` from the workspace root (where examples/ resolve) and returns its output.
pub fn hudi_sink(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hudi-sink"))
        .current_dir(workspace_root())
        .args(args)
        .output()
        .expect("run hudi-sink")
}

pub fn ok(args: &[&str]) -> String {
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
pub fn python() -> PathBuf {
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

/// Hudi's meta columns: every `_hoodie_` column but the data columns `_hoodie_is_deleted` and the Kafka ones.
const HUDI_META_COLUMNS: [&str; 6] = [
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
    "_hoodie_operation",
];

/// Rows of the table's snapshot read by Python `hudi`, keyed by `uuid`, without Hudi's meta columns.
pub fn read_table(table: &Path) -> BTreeMap<String, Map<String, Value>> {
    read_table_with(table, &[])
}

/// [`read_table`] with hudi-rs read options (`KEY=VALUE`).
pub fn read_table_with(table: &Path, options: &[&str]) -> BTreeMap<String, Map<String, Value>> {
    let mut command = Command::new(python());
    command.arg(workspace_root().join("tests/python/hudi_read.py"));
    for option in options {
        command.args(["--option", option]);
    }
    let out = command
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
        row.retain(|k, _| !HUDI_META_COLUMNS.contains(&k.as_str()));
        let key = row["uuid"].as_str().expect("uuid").to_string();
        assert!(rows.insert(key.clone(), row).is_none(), "key {key} twice");
    }
    rows
}

pub fn model_rows(model: &Path) -> BTreeMap<String, Map<String, Value>> {
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
pub fn number_after(text: &str, label: &str) -> u64 {
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

/// The services report printed by `hudi-sink services`, with the (variable) run time checked and removed.
pub fn services_report(stdout: &str) -> Value {
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "one JSON line:\n{stdout}");
    let mut report: Value = serde_json::from_str(lines[0]).expect("JSON report");
    let object = report.as_object_mut().expect("object");
    assert!(object.remove("duration_ms").is_some_and(|d| d.is_u64()));
    report
}

pub fn completed_commits(table: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(table.join(".hoodie"))
        .expect("read .hoodie")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter_map(|n| n.strip_suffix(".commit").map(str::to_string))
        .collect();
    names.sort();
    names
}

/// `hudi-sink ingest` of `events` into a `table_type` table at `table` with `examples/local.properties`, one
/// instant per event file, dead letters beside the table, plus the `--set` pairs of `sets`; returns stdout.
pub fn ingest_one_instant_per_file(
    table: &Path,
    events: &Path,
    table_type: &str,
    sets: &[&str],
) -> String {
    let base = format!("hoodie.base.path={}", table.display());
    let dead_letters = format!(
        "hudi.sink.dead.letter.path={}-dead-letters",
        table.display()
    );
    let table_type = format!("hoodie.table.type={table_type}");
    let events = events.display().to_string();
    let mut args = vec![
        "ingest",
        "--config",
        "examples/local.properties",
        "--set",
        &base,
        "--set",
        &dead_letters,
        "--set",
        &table_type,
        "--commit-interval-ms",
        "0",
    ];
    for set in sets {
        args.extend(["--set", set]);
    }
    args.push(&events);
    ok(&args)
}

/// The stage of every dead letter written beside `table` (in `<table>-dead-letters`), sorted.
pub fn dead_letter_stages(table: &Path) -> Vec<String> {
    let mut stages = Vec::new();
    let mut pending = vec![PathBuf::from(format!("{}-dead-letters", table.display()))];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).expect("dead letters").flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            for line in std::fs::read_to_string(&path).unwrap_or_default().lines() {
                if let Ok(v) = serde_json::from_str::<Value>(line) {
                    if let Some(stage) = v["stage"].as_str() {
                        stages.push(stage.to_string());
                    }
                }
            }
        }
    }
    stages.sort();
    stages
}
