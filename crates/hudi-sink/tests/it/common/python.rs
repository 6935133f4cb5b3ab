//! Runs the independent Python readers (`tests/python/hudi_read.py`: hudi-rs 0.5.0, daft).

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::Command;

use serde_json::{Map, Value};

/// The interpreter with the pinned readers: `$HUDI_SINK_PYTHON`, else `<workspace>/.venv/bin/python`.
/// Fails (never skips) when it is missing: run `make venv`.
pub fn python() -> PathBuf {
    let path = std::env::var("HUDI_SINK_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|_| super::workspace_root().join(".venv/bin/python"));
    assert!(
        path.exists(),
        "Python with hudi==0.5.0 not found at {} (run `make venv` or set HUDI_SINK_PYTHON)",
        path.display()
    );
    path
}

/// Runs `hudi_read.py` with `args` and parses its JSON output; panics with the reader's stderr on failure.
pub fn hudi_read_json(table: impl AsRef<OsStr>, engine: &str, args: &[&str]) -> Value {
    let table = table.as_ref();
    let script = super::workspace_root().join("tests/python/hudi_read.py");
    let mut cmd = Command::new(python());
    if let Some(endpoint) = super::moto::endpoint_if_started() {
        cmd.env("HUDI_S3_ENDPOINT", endpoint);
    }
    let out = cmd
        .arg(&script)
        .arg("--engine")
        .arg(engine)
        .arg(table)
        .args(args)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "{engine} reader failed on {} {args:?}:\n{}",
        table.to_string_lossy(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("reader prints JSON")
}

/// Rows read by `engine` (`hudi` or `daft`): `args` = `["snapshot"]`, `["as_of", t]`,
/// `["incremental", start, end]`.
pub fn read_rows(table: impl AsRef<OsStr>, engine: &str, args: &[&str]) -> Vec<Map<String, Value>> {
    let v = hudi_read_json(table, engine, args);
    v["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r.as_object().expect("row object").clone())
        .collect()
}
