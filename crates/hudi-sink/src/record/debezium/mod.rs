//! Debezium change events → the flat rows HoodieStreamer's Debezium sources write, so that a table written
//! here merges the same way under Spark (its payload classes) as one written by HoodieStreamer.
//!
//! ```text
//! value ─┬ {"schema":…,"payload":P}         → P (the JsonConverter's default form); payload null = tombstone
//!        ├ envelope {before,after,source,op} → op c/u/r: after, op d: before, plus the meta columns
//!        ├ ExtractNewRecordState row         → the row, its `__op`/`__deleted`/`__lsn`/`__source_*` fields
//!        │                                      become the meta columns
//!        └ null / JSON null                  → tombstone (Debezium sends it after the delete: skipped)
//! ```
//!
//! The result is a JSON object text: the meta columns first, then the row image's members copied byte for
//! byte (numbers keep their exact text; the base64 strings of Connect decimal columns become their exact
//! decimal text, `connect.rs`), read by the ordinary JSON decoder against the table schema. A
//! value that is none of these forms, an unknown op, or a delete without `before` is a [`DebeziumError`]:
//! the record becomes a dead letter naming the reason.
//!
//! Registry-framed Avro values ([`AvroEnvelope`], `avro.rs`) follow the same rules through their writer
//! schema and stay Avro: the flattened row is a datum of the row schema with the meta columns first.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::Value;
use thiserror::Error;

mod avro;
pub mod connect;
mod schema;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_avro;

pub use avro::AvroEnvelope;
pub use schema::{check_table, table_schema};

/// `hudi.sink.debezium.connector`: which connector's source block and payload the table follows.
pub const CONNECTOR_KEY: &str = "hudi.sink.debezium.connector";

/// `hudi.sink.debezium.replica.identity`: the source tables' Postgres `REPLICA IDENTITY` (`full` or
/// `default`). A delete carries only the replica identity in `before`: a table partitioned by a column
/// outside the record key needs `full` to place its deletes (`crate::bootstrap::debezium_settings`).
pub const REPLICA_IDENTITY_KEY: &str = "hudi.sink.debezium.replica.identity";

/// `_change_operation_type` (string): the event's `op`; `d` makes the row a delete.
pub const OP_COLUMN: &str = "_change_operation_type";
/// `_upstream_event_processed_ts_ms` (long): the envelope's `ts_ms`, when Debezium processed the event.
pub const PROCESSED_TS_COLUMN: &str = "_upstream_event_processed_ts_ms";
/// `db_shard_source_partition` (string): `source.name`, the connector's topic prefix.
pub const SHARD_COLUMN: &str = "db_shard_source_partition";
/// `db_schema_source_partition` (string, Postgres): `source.schema`.
pub const SCHEMA_COLUMN: &str = "db_schema_source_partition";
/// `_event_origin_ts_ms` (long): `source.ts_ms`, the change's time in the database.
pub const ORIGIN_TS_COLUMN: &str = "_event_origin_ts_ms";
/// `_event_tx_id` (long, Postgres): `source.txId`.
pub const TX_ID_COLUMN: &str = "_event_tx_id";
/// `_event_lsn` (long, Postgres): `source.lsn`, the ordering field of `PostgresDebeziumAvroPayload`.
pub const LSN_COLUMN: &str = "_event_lsn";
/// `_event_xmin` (long, Postgres): `source.xmin`.
pub const XMIN_COLUMN: &str = "_event_xmin";
/// `_event_bin_file` (string, MySQL): `source.file`.
pub const BIN_FILE_COLUMN: &str = "_event_bin_file";
/// `_event_pos` (long, MySQL): `source.pos`.
pub const POS_COLUMN: &str = "_event_pos";
/// `_event_row` (int, MySQL): `source.row`.
pub const ROW_COLUMN: &str = "_event_row";
/// `_event_seq` (string, MySQL): `"<binlog file number>.<pos>"`, the ordering field of
/// `MySqlDebeziumAvroPayload`.
pub const SEQ_COLUMN: &str = "_event_seq";

/// The Debezium connector whose events a table holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Connector {
    /// PostgreSQL: ordered by `_event_lsn`, `PostgresDebeziumAvroPayload`.
    Postgres,
    /// MySQL: ordered by `_event_seq`, `MySqlDebeziumAvroPayload`.
    MySql,
}

impl Connector {
    /// Parses `postgres` (or `postgresql`) and `mysql`.
    pub fn parse(value: &str) -> Option<Self> {
        match value.trim().to_ascii_lowercase().as_str() {
            "postgres" | "postgresql" => Some(Connector::Postgres),
            "mysql" => Some(Connector::MySql),
            _ => None,
        }
    }

    /// The ordering (precombine) field the connector's payload compares.
    pub fn ordering_field(self) -> &'static str {
        match self {
            Connector::Postgres => LSN_COLUMN,
            Connector::MySql => SEQ_COLUMN,
        }
    }

    /// The payload class `hoodie.properties` names, so that Spark readers and compaction merge alike.
    pub fn payload_class(self) -> &'static str {
        match self {
            Connector::Postgres => POSTGRES_PAYLOAD,
            Connector::MySql => MYSQL_PAYLOAD,
        }
    }

    /// The meta columns in HoodieStreamer's order.
    pub fn meta_columns(self) -> &'static [&'static str] {
        match self {
            Connector::Postgres => &[
                OP_COLUMN,
                PROCESSED_TS_COLUMN,
                SHARD_COLUMN,
                SCHEMA_COLUMN,
                ORIGIN_TS_COLUMN,
                TX_ID_COLUMN,
                LSN_COLUMN,
                XMIN_COLUMN,
            ],
            Connector::MySql => &[
                OP_COLUMN,
                PROCESSED_TS_COLUMN,
                SHARD_COLUMN,
                ORIGIN_TS_COLUMN,
                BIN_FILE_COLUMN,
                POS_COLUMN,
                ROW_COLUMN,
                SEQ_COLUMN,
            ],
        }
    }
}

/// Hudi's payload for Postgres Debezium tables.
pub const POSTGRES_PAYLOAD: &str =
    "org.apache.hudi.common.model.debezium.PostgresDebeziumAvroPayload";
/// Hudi's payload for MySQL Debezium tables.
pub const MYSQL_PAYLOAD: &str = "org.apache.hudi.common.model.debezium.MySqlDebeziumAvroPayload";

/// The connector whose payload class `payload` is, if it is a Debezium one.
pub fn connector_of_payload(payload: &str) -> Option<Connector> {
    match payload.rsplit('.').next().unwrap_or(payload) {
        "PostgresDebeziumAvroPayload" => Some(Connector::Postgres),
        "MySqlDebeziumAvroPayload" => Some(Connector::MySql),
        _ => None,
    }
}

/// A Debezium value, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Flattened {
    /// A row to decode: the JSON object text with the meta columns first.
    Row {
        /// The object text.
        json: Vec<u8>,
        /// Whether the event deletes its key (`op=d`, or `__deleted="true"`).
        delete: bool,
        /// For an update whose `before` image is a row (MySQL's full row images, Postgres `REPLICA IDENTITY
        /// FULL`), when asked for (`flatten_with`'s `priors`): that image as a delete (`op` `d`, the
        /// update's source fields), which the writer applies only when it names another partition than the
        /// row, so that a row moved to another partition leaves none of its versions behind (docs/cdc.md,
        /// "Rows that change partition").
        prior: Option<Vec<u8>>,
    },
    /// A tombstone (null value, JSON `null`, or a `payload` of null): the delete came before it.
    Tombstone,
}

/// Why a value is not a Debezium change event the sink can apply (the dead letter's reason).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DebeziumError {
    /// Not UTF-8 JSON.
    #[error("not JSON: {0}")]
    NotJson(String),
    /// A registry-framed value whose body is not a datum of its writer schema.
    #[error("not Avro under its writer schema: {0}")]
    NotAvro(String),
    /// JSON, but neither an envelope, nor `{schema,payload}`, nor an `ExtractNewRecordState` row.
    #[error("not a Debezium change event: {0}")]
    NotEnvelope(String),
    /// An op code the sink does not apply (`t` truncate, `m` message, or an unknown one).
    #[error("op {0:?} is not applied (only c, u, r and d are)")]
    UnknownOp(String),
    /// A Connect decimal column whose string is not Debezium's encoding (a dead letter of stage decode).
    #[error("column {column}: {reason}")]
    Decimal {
        /// The column.
        column: String,
        /// The string found (shortened).
        value: String,
        /// Why.
        reason: connect::DecimalError,
    },
    /// The row image the op needs is missing or not an object.
    #[error("op {op:?} needs an object in `{field}`, found {found}")]
    MissingImage {
        /// The op.
        op: String,
        /// `before` or `after`.
        field: &'static str,
        /// What was there.
        found: String,
    },
}

/// An object's members in order, values kept as their raw text; a key given twice is refused.
struct Members<'a>(Vec<(String, &'a RawValue)>);

impl<'de> serde::Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut members: Vec<(String, &'de RawValue)> = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    if members.iter().any(|(k, _)| *k == key) {
                        return Err(serde::de::Error::custom(format!("duplicate key {key:?}")));
                    }
                    let value: &'de RawValue = map.next_value()?;
                    members.push((key, value));
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(V)
    }
}

impl<'a> Members<'a> {
    fn get(&self, key: &str) -> Option<&'a RawValue> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
    }
}

fn is_null(raw: Option<&RawValue>) -> bool {
    raw.is_none_or(|r| r.get().trim() == "null")
}

/// The JSON type of a raw value, for messages.
fn describe(raw: Option<&RawValue>) -> String {
    match raw.map(|r| r.get().trim().as_bytes().first().copied()) {
        None => "nothing".into(),
        Some(Some(b'{')) => "an object".into(),
        Some(Some(b'[')) => "an array".into(),
        Some(Some(b'"')) => "a string".into(),
        Some(Some(b'n')) => "null".into(),
        Some(Some(b't' | b'f')) => "a boolean".into(),
        Some(_) => "a number".into(),
    }
}

/// Reads one value as `connector`'s change event (an update's before row included as its `prior`).
pub fn flatten(connector: Connector, value: &[u8]) -> Result<Flattened, DebeziumError> {
    flatten_with(connector, value, &BTreeMap::new(), true)
}

/// [`flatten`], with the string of each column in `decimals` read as a Connect decimal of that scale
/// (base64 of the unscaled value) and written as its exact decimal text; numbers (`decimal.format=NUMERIC`)
/// are kept as they are. `priors`: whether an update's before row is read (as `prior`) at all; a table where
/// no row can move to another partition has no use for it.
pub fn flatten_with(
    connector: Connector,
    value: &[u8],
    decimals: &BTreeMap<String, u32>,
    priors: bool,
) -> Result<Flattened, DebeziumError> {
    let text = std::str::from_utf8(value).map_err(|e| DebeziumError::NotJson(e.to_string()))?;
    let trimmed = text.trim();
    if trimmed.is_empty() || trimmed == "null" {
        return Ok(Flattened::Tombstone);
    }
    if !trimmed.starts_with('{') {
        // Check it is JSON at all, to tell the two refusals apart.
        return match serde_json::from_str::<&RawValue>(trimmed) {
            Ok(raw) => Err(DebeziumError::NotEnvelope(format!(
                "the value is {}, not an object",
                describe(Some(raw))
            ))),
            Err(e) => Err(DebeziumError::NotJson(e.to_string())),
        };
    }
    let mut members: Members<'_> =
        serde_json::from_str(trimmed).map_err(|e| DebeziumError::NotJson(e.to_string()))?;
    // The JsonConverter's schemas.enable=true form: exactly `schema` and `payload`.
    if members.0.len() == 2 && members.get("schema").is_some() {
        if let Some(payload) = members.get("payload") {
            if is_null(Some(payload)) {
                return Ok(Flattened::Tombstone);
            }
            members = serde_json::from_str(payload.get()).map_err(|e| {
                DebeziumError::NotEnvelope(format!("`payload` is not an object: {e}"))
            })?;
        }
    }
    if members.get("op").is_some() && members.get("source").is_some() {
        envelope(connector, &members, decimals, priors)
    } else if members.get("__op").is_some() || members.get("__deleted").is_some() {
        extracted(connector, &members, decimals)
    } else {
        Err(DebeziumError::NotEnvelope(
            "an object with neither `op` and `source` (an envelope) nor `__op`/`__deleted` \
             (ExtractNewRecordState)"
                .into(),
        ))
    }
}

/// The meta column values of one event, as JSON values.
#[derive(Default)]
struct Meta {
    op: Value,
    processed_ts: Value,
    shard: Value,
    schema: Value,
    origin_ts: Value,
    tx_id: Value,
    lsn: Value,
    xmin: Value,
    file: Value,
    pos: Value,
    row: Value,
}

impl Meta {
    /// The columns of `connector` in its order, `_event_seq` computed from file and position.
    fn write(&self, connector: Connector, out: &mut String) {
        let seq = match (&self.file, &self.pos) {
            (Value::String(file), Value::Number(pos)) => pos
                .as_i64()
                .and_then(|pos| event_seq(file, pos))
                .map_or(Value::Null, Value::String),
            _ => Value::Null,
        };
        let values: &[(&str, &Value)] = match connector {
            Connector::Postgres => &[
                (OP_COLUMN, &self.op),
                (PROCESSED_TS_COLUMN, &self.processed_ts),
                (SHARD_COLUMN, &self.shard),
                (SCHEMA_COLUMN, &self.schema),
                (ORIGIN_TS_COLUMN, &self.origin_ts),
                (TX_ID_COLUMN, &self.tx_id),
                (LSN_COLUMN, &self.lsn),
                (XMIN_COLUMN, &self.xmin),
            ],
            Connector::MySql => &[
                (OP_COLUMN, &self.op),
                (PROCESSED_TS_COLUMN, &self.processed_ts),
                (SHARD_COLUMN, &self.shard),
                (ORIGIN_TS_COLUMN, &self.origin_ts),
                (BIN_FILE_COLUMN, &self.file),
                (POS_COLUMN, &self.pos),
                (ROW_COLUMN, &self.row),
                (SEQ_COLUMN, &seq),
            ],
        };
        for (i, (name, value)) in values.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push('"');
            out.push_str(name);
            out.push_str("\":");
            out.push_str(&value.to_string());
        }
    }
}

/// `_event_seq` of binlog `file` at `pos`: `"<file number>.<pos>"` (`mysql-bin.000003` at 484 →
/// `000003.484`); none for a negative position or an empty file name.
fn event_seq(file: &str, pos: i64) -> Option<String> {
    if pos < 0 || file.trim().is_empty() {
        return None;
    }
    let number = file.rsplit('.').next().unwrap_or(file);
    Some(format!("{number}.{pos}"))
}

fn value_of(raw: Option<&RawValue>) -> Value {
    raw.and_then(|r| serde_json::from_str(r.get()).ok())
        .unwrap_or(Value::Null)
}

/// The object `{meta…, row members…}`; `row` is an object's raw text; the strings of `decimals` columns are
/// decoded as Connect decimals.
fn assemble(
    connector: Connector,
    meta: &Meta,
    row: &[(&str, &RawValue)],
    decimals: &BTreeMap<String, u32>,
) -> Result<Vec<u8>, DebeziumError> {
    let mut out = String::with_capacity(256);
    out.push('{');
    meta.write(connector, &mut out);
    for (name, value) in row {
        out.push(',');
        out.push_str(&Value::String((*name).to_string()).to_string());
        out.push(':');
        let encoded = match decimals.get(*name) {
            Some(scale) if value.get().trim_start().starts_with('"') => {
                serde_json::from_str::<String>(value.get())
                    .ok()
                    .map(|e| (e, scale))
            }
            _ => None,
        };
        match encoded {
            Some((encoded, scale)) => {
                let text = connect::decode_decimal(&encoded, *scale).map_err(|reason| {
                    DebeziumError::Decimal {
                        column: (*name).to_string(),
                        value: encoded.chars().take(64).collect(),
                        reason,
                    }
                })?;
                out.push('"');
                out.push_str(&text);
                out.push('"');
            }
            None => out.push_str(value.get()),
        }
    }
    out.push('}');
    Ok(out.into_bytes())
}

/// An envelope: the image the op names, the meta columns from `source`, `op` and `ts_ms`.
fn envelope(
    connector: Connector,
    members: &Members<'_>,
    decimals: &BTreeMap<String, u32>,
    priors: bool,
) -> Result<Flattened, DebeziumError> {
    let op = match value_of(members.get("op")) {
        Value::String(op) => op,
        other => {
            return Err(DebeziumError::NotEnvelope(format!(
                "`op` is {other}, not a string"
            )))
        }
    };
    let (field, delete) = match op.as_str() {
        "c" | "u" | "r" => ("after", false),
        "d" => ("before", true),
        _ => return Err(DebeziumError::UnknownOp(op)),
    };
    let image = members.get(field);
    let row: Members<'_> = match image {
        Some(raw) if raw.get().trim_start().starts_with('{') => serde_json::from_str(raw.get())
            .map_err(|e| DebeziumError::NotEnvelope(format!("`{field}`: {e}")))?,
        other => {
            return Err(DebeziumError::MissingImage {
                op,
                field,
                found: describe(other),
            })
        }
    };
    let source = match members.get("source") {
        Some(raw) if raw.get().trim_start().starts_with('{') => {
            serde_json::from_str::<serde_json::Map<String, Value>>(raw.get())
                .map_err(|e| DebeziumError::NotEnvelope(format!("`source`: {e}")))?
        }
        other => {
            return Err(DebeziumError::NotEnvelope(format!(
                "`source` is {}, not an object",
                describe(other)
            )))
        }
    };
    let src = |k: &str| source.get(k).cloned().unwrap_or(Value::Null);
    let meta = Meta {
        op: Value::String(op.clone()),
        processed_ts: value_of(members.get("ts_ms")),
        shard: src("name"),
        schema: src("schema"),
        origin_ts: src("ts_ms"),
        tx_id: src("txId"),
        lsn: src("lsn"),
        xmin: src("xmin"),
        file: src("file"),
        pos: src("pos"),
        row: src("row"),
    };
    let fields: Vec<(&str, &RawValue)> = row.0.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    let json = assemble(connector, &meta, &fields, decimals)?;
    let prior = match members.get("before") {
        Some(raw) if priors && op == "u" && raw.get().trim_start().starts_with('{') => {
            let before: Members<'_> = serde_json::from_str(raw.get())
                .map_err(|e| DebeziumError::NotEnvelope(format!("`before`: {e}")))?;
            let fields: Vec<(&str, &RawValue)> =
                before.0.iter().map(|(k, v)| (k.as_str(), *v)).collect();
            let meta = Meta {
                op: Value::String("d".into()),
                ..meta
            };
            Some(assemble(connector, &meta, &fields, decimals)?)
        }
        _ => None,
    };
    Ok(Flattened::Row {
        json,
        delete,
        prior,
    })
}

/// A row flattened by `ExtractNewRecordState`: `__`-prefixed fields added with `add.fields` become the
/// meta columns (`__op`, `__ts_ms`, and source fields as `__<field>` or `__source_<field>`); `__deleted`
/// `"true"` (rewrite mode) makes it a delete.
fn extracted(
    connector: Connector,
    members: &Members<'_>,
    decimals: &BTreeMap<String, u32>,
) -> Result<Flattened, DebeziumError> {
    let get = |name: &str| -> Value {
        members
            .get(&format!("__{name}"))
            .or_else(|| members.get(&format!("__source_{name}")))
            .map(|r| value_of(Some(r)))
            .unwrap_or(Value::Null)
    };
    let deleted = match value_of(members.get("__deleted")) {
        Value::String(s) => s.eq_ignore_ascii_case("true"),
        Value::Bool(b) => b,
        _ => false,
    };
    let op = match value_of(members.get("__op")) {
        Value::String(op) => Some(op),
        Value::Null => None,
        other => {
            return Err(DebeziumError::NotEnvelope(format!(
                "`__op` is {other}, not a string"
            )))
        }
    };
    let op = match op.as_deref() {
        Some("c" | "u" | "r" | "d") | None => op,
        Some(_) => return Err(DebeziumError::UnknownOp(op.unwrap_or_default())),
    };
    let delete = deleted || op.as_deref() == Some("d");
    let op = match (op, delete) {
        (_, true) => Value::String("d".into()),
        (Some(op), false) => Value::String(op),
        (None, false) => Value::Null,
    };
    let meta = Meta {
        op,
        processed_ts: members
            .get("__ts_ms")
            .map(|r| value_of(Some(r)))
            .unwrap_or(Value::Null),
        shard: get("name"),
        schema: get("schema"),
        origin_ts: members
            .get("__source_ts_ms")
            .map(|r| value_of(Some(r)))
            .unwrap_or(Value::Null),
        tx_id: get("txId"),
        lsn: get("lsn"),
        xmin: get("xmin"),
        file: get("file"),
        pos: get("pos"),
        row: get("row"),
    };
    let fields: Vec<(&str, &RawValue)> = members
        .0
        .iter()
        .filter(|(k, _)| !k.starts_with("__"))
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    Ok(Flattened::Row {
        json: assemble(connector, &meta, &fields, decimals)?,
        delete,
        prior: None,
    })
}
