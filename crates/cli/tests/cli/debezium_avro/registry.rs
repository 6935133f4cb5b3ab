//! The stub Confluent registry and fastavro's encoding of the stream's values
//! (`tests/python/avro_registry.py`).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{json, Map, Value};

use crate::common::{python, workspace_root};

use super::{Event, V1};

/// A stub Confluent registry (`avro_registry.py serve`), stopped when dropped.
pub(super) struct StubRegistry {
    child: Child,
    pub(super) port: u16,
    dir: PathBuf,
}

impl StubRegistry {
    pub(super) fn start(dir: &Path) -> Self {
        std::fs::create_dir_all(dir.join("subjects")).expect("registry dir");
        let mut child = Command::new(python())
            .arg(workspace_root().join("tests/python/avro_registry.py"))
            .arg("serve")
            .arg(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the stub registry");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("port");
        let port = line.trim().parse().expect("port number");
        StubRegistry {
            child,
            port,
            dir: dir.to_path_buf(),
        }
    }

    pub(super) fn put(&self, id: i32, schema: &Value) {
        std::fs::write(self.dir.join(format!("{id}.avsc")), schema.to_string()).expect("schema");
    }

    pub(super) fn set_latest(&self, subject: &str, id: i32) {
        std::fs::write(self.dir.join("subjects").join(subject), id.to_string()).expect("latest");
    }
}

impl Drop for StubRegistry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The Confluent-framed values of `events` as fastavro writes them (`avro_registry.py encode`), base64,
/// `None` for tombstones.
pub(super) fn encode(
    dir: &Path,
    schemas: &BTreeMap<i32, Value>,
    events: &[Event],
) -> Vec<Option<String>> {
    let records: Vec<Value> = events
        .iter()
        .filter_map(|e| e.value.as_ref())
        .map(|(id, datum)| {
            json!({"key":"k","schema":id.to_string(),"framing":format!("confluent:{id}"),
                "datum":datum,"expect":false})
        })
        .collect();
    let spec = json!({"table":schemas[&V1],
        "schemas":schemas.iter().map(|(id, s)| (id.to_string(), s.clone())).collect::<Map<_, _>>(),
        "records":records});
    let spec_path = dir.join("spec.json");
    let out_path = dir.join("encoded.json");
    std::fs::write(&spec_path, spec.to_string()).expect("spec");
    let out = Command::new(python())
        .arg(workspace_root().join("tests/python/avro_registry.py"))
        .arg("encode")
        .arg(&spec_path)
        .arg(&out_path)
        .output()
        .expect("run encode");
    assert!(
        out.status.success(),
        "encode: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let encoded: Value =
        serde_json::from_str(&std::fs::read_to_string(&out_path).expect("encoded")).expect("json");
    let mut values = encoded["values"]
        .as_array()
        .expect("values")
        .iter()
        .map(|v| v["value_b64"].as_str().expect("b64").to_string());
    events
        .iter()
        .map(|e| e.value.as_ref().and_then(|_| values.next()))
        .collect()
}
