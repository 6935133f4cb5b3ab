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

/// One hudi-rs process answering many reads (`hudi_read.py`'s reader and rendering), for tests that read
/// hundreds of table states: a read costs milliseconds instead of an interpreter start.
pub struct HudiReader {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    stdout: std::io::BufReader<std::process::ChildStdout>,
}

const READER_LOOP: &str = r#"
import importlib.util, json, sys, traceback
spec = importlib.util.spec_from_file_location('hudi_read', sys.argv[1])
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
for line in sys.stdin:
    q = json.loads(line)
    try:
        out = {'rows': m.canon_table(m.read_hudi_rs(q['table'], q['mode'], q['args']))['rows']}
    except Exception:
        out = {'error': traceback.format_exc()}
    sys.stdout.write(json.dumps(out) + '\n')
    sys.stdout.flush()
"#;

impl HudiReader {
    /// Starts the reader process.
    pub fn start() -> Self {
        let script = super::workspace_root().join("tests/python/hudi_read.py");
        let mut cmd = Command::new(python());
        if let Some(endpoint) = super::moto::endpoint_if_started() {
            cmd.env("HUDI_S3_ENDPOINT", endpoint);
        }
        let mut child = cmd
            .arg("-c")
            .arg(READER_LOOP)
            .arg(&script)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("start python");
        let stdin = child.stdin.take();
        let stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
        Self {
            child,
            stdin,
            stdout,
        }
    }

    /// Rows of `table` as hudi-rs reads them: `args` as for [`read_rows`] (`snapshot`, `as_of T`,
    /// `incremental START END`). Panics with the reader's traceback on failure.
    pub fn rows(&mut self, table: &std::path::Path, args: &[&str]) -> Vec<Map<String, Value>> {
        use std::io::{BufRead, Write};
        let query = serde_json::json!({
            "table": table.display().to_string(),
            "mode": args[0],
            "args": &args[1..],
        });
        let stdin = self.stdin.as_mut().expect("reader running");
        writeln!(stdin, "{query}").expect("write query");
        stdin.flush().expect("flush query");
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("read answer");
        let answer: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("hudi-rs reader answer to {query}: {e}: {line:?}"));
        if let Some(error) = answer["error"].as_str() {
            panic!("hudi-rs failed on {query}:\n{error}");
        }
        answer["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .map(|r| r.as_object().expect("row object").clone())
            .collect()
    }
}

impl Drop for HudiReader {
    fn drop(&mut self) {
        // End of input ends the loop.
        self.stdin.take();
        let _ = self.child.wait();
    }
}
