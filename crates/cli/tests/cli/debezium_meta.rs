//! What the Debezium end-to-end tests share: HoodieStreamer's Debezium meta columns per connector (names and
//! Avro types, as `PostgresDebeziumSource` and `MysqlDebeziumSource` add them), the committed schema's fields,
//! a hudi-rs read keyed by any column, and the streams' building blocks (connectors, positions, a generator,
//! the `ExtractNewRecordState` form).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::{Map, Value};

use crate::common::{python, workspace_root};

/// The connector of a test stream.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Db {
    Postgres,
    MySql,
}

/// An event's position: the LSN (Postgres, `None` for an incremental snapshot) or (binlog file, pos).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Position {
    Lsn(Option<i64>),
    Binlog(u32, i64),
}

/// A small deterministic generator (no dependency on a random crate's stream).
pub struct Lcg(pub u64);
impl Lcg {
    pub fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// The city (partition) of key number `key`.
pub fn city(key: usize) -> &'static str {
    ["lisbon", "oslo", "quito"][key % 3]
}

/// An event as `ExtractNewRecordState` writes it (`delete.tombstone.handling.mode=rewrite-with-tombstone`,
/// `add.fields` listed): `flat` (the row image) gains the `__` fields, and `meta` is given the meta columns
/// HoodieStreamer derives from them (the envelope-only ones null).
pub fn extracted(
    db: Db,
    pos: Position,
    op: &str,
    ts: i64,
    mut flat: Map<String, Value>,
    meta: &mut dyn FnMut(&str, Value),
) -> Map<String, Value> {
    flat.insert("__op".into(), op.into());
    flat.insert("__source_ts_ms".into(), (ts - 7).into());
    flat.insert("__deleted".into(), (op == "d").to_string().into());
    meta("_change_operation_type", op.into());
    meta("_upstream_event_processed_ts_ms", Value::Null);
    meta("db_shard_source_partition", Value::Null);
    match (db, pos) {
        (Db::Postgres, Position::Lsn(lsn)) => {
            flat.insert("__lsn".into(), lsn.into());
            meta("db_schema_source_partition", Value::Null);
            meta("_event_origin_ts_ms", (ts - 7).into());
            meta("_event_tx_id", Value::Null);
            meta("_event_lsn", lsn.into());
            meta("_event_xmin", Value::Null);
        }
        (_, Position::Binlog(file, p)) => {
            flat.insert("__file".into(), format!("mysql-bin.{file:06}").into());
            flat.insert("__pos".into(), p.into());
            flat.insert("__row".into(), 0.into());
            meta("_event_origin_ts_ms", (ts - 7).into());
            meta("_event_bin_file", format!("mysql-bin.{file:06}").into());
            meta("_event_pos", p.into());
            meta("_event_row", 0.into());
            meta("_event_seq", format!("{file:06}.{p}").into());
        }
        (Db::MySql, Position::Lsn(_)) => unreachable!("an LSN in a MySQL stream"),
    }
    flat
}

/// HoodieStreamer's Debezium meta columns, in order, with their Avro types: the four both connectors have,
/// then Postgres's (`db_schema_source_partition`, `_event_tx_id`, `_event_lsn`, `_event_xmin`, with the
/// schema column second after the shard) or MySQL's (`_event_bin_file`, `_event_pos`, `_event_row`,
/// `_event_seq`).
pub fn meta_columns(connector: &str) -> Vec<(&'static str, &'static str)> {
    match connector {
        "postgres" => vec![
            ("_change_operation_type", "string"),
            ("_upstream_event_processed_ts_ms", "long"),
            ("db_shard_source_partition", "string"),
            ("db_schema_source_partition", "string"),
            ("_event_origin_ts_ms", "long"),
            ("_event_tx_id", "long"),
            ("_event_lsn", "long"),
            ("_event_xmin", "long"),
        ],
        "mysql" => vec![
            ("_change_operation_type", "string"),
            ("_upstream_event_processed_ts_ms", "long"),
            ("db_shard_source_partition", "string"),
            ("_event_origin_ts_ms", "long"),
            ("_event_bin_file", "string"),
            ("_event_pos", "long"),
            ("_event_row", "int"),
            ("_event_seq", "string"),
        ],
        other => panic!("no meta columns for connector {other}"),
    }
}

/// The fields of the latest completed commit's schema (`extraMetadata.schema`), as `(name, type JSON)`.
pub fn committed_fields(table: &Path) -> Vec<(String, Value)> {
    let mut commits: Vec<_> = std::fs::read_dir(table.join(".hoodie"))
        .expect("timeline")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            p.extension()
                .is_some_and(|e| e == "commit" || e == "deltacommit")
        })
        .collect();
    commits.sort();
    let commit: Value =
        serde_json::from_slice(&std::fs::read(commits.last().expect("a commit")).expect("read"))
            .expect("commit JSON");
    let schema: Value = serde_json::from_str(
        commit["extraMetadata"]["schema"]
            .as_str()
            .expect("extraMetadata.schema"),
    )
    .expect("schema JSON");
    schema["fields"]
        .as_array()
        .expect("fields")
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap_or("").to_string(),
                f["type"].clone(),
            )
        })
        .collect()
}

/// Asserts that the table's committed schema opens with exactly the connector's meta columns, name for name
/// and type for type (each `["null", T]`), and that no other column carries a meta column's name.
pub fn assert_meta_columns(table: &Path, connector: &str, case: &str) {
    let fields = committed_fields(table);
    let meta = meta_columns(connector);
    let expected: Vec<(String, Value)> = meta
        .iter()
        .map(|(n, t)| (n.to_string(), serde_json::json!(["null", t])))
        .collect();
    let head: Vec<(String, Value)> = fields.iter().take(meta.len()).cloned().collect();
    assert_eq!(head, expected, "{case}: the meta columns");
    let all_meta: Vec<&str> = meta_columns("postgres")
        .into_iter()
        .chain(meta_columns("mysql"))
        .map(|(n, _)| n)
        .collect();
    let stray: Vec<&String> = fields[meta.len()..]
        .iter()
        .map(|(n, _)| n)
        .filter(|n| all_meta.contains(&n.as_str()))
        .collect();
    assert!(
        stray.is_empty(),
        "{case}: meta columns among the row's: {stray:?}"
    );
}

/// The table's rows read by hudi-rs (first file group reader: it merges by the ordering field), keyed by the
/// text of column `key`, without Hudi's `_hoodie_` columns.
pub fn read_rows_by(table: &Path, key: &str) -> BTreeMap<String, Map<String, Value>> {
    let out = Command::new(python())
        .arg(workspace_root().join("tests/python/hudi_read.py"))
        .args(["--option", "hoodie.read.file.group.reader.version=1"])
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
        row.retain(|k, _| !k.starts_with("_hoodie_"));
        let id = match &row[key] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        assert!(rows.insert(id.clone(), row).is_none(), "key {id} twice");
    }
    rows
}
