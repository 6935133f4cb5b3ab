//! Registry-framed Avro change events (Confluent's or Glue's AvroConverter) → the same rows as the JSON
//! forms, kept in Avro so that every column arrives as its schema says.
//!
//! ```text
//! writer schema ─┬ Envelope {before, after, source, op, ts_ms, …} → flat schema: meta columns + `Value`'s fields
//!                ├ ExtractNewRecordState record (`__op`/`__deleted`) → meta columns + its fields without `__`
//!                └ anything else → every value naming it is refused (a dead letter of stage envelope)
//! datum ─ decoded under the writer schema ─ op c/u/r: `after`, d: `before` (either union branch order)
//!       ─ meta columns from `op`, `ts_ms`, `source` ─ encoded under the flat schema
//! ```
//!
//! The flat datum is read by the ordinary Avro plan of the flat schema against the table's, so a decimal
//! (bytes with logicalType decimal), Debezium's temporal ints and longs and every other type reach the table
//! as registry Avro does, and a new `Value` version with a new nullable column evolves the table through
//! the same rules. The meta columns and the op rules are those of the JSON forms (`super`).

use crate::avro::graph::SchemaGraph;
use crate::avro::read::decode_datum;
use crate::avro::write::encode_datum;
use crate::avro::AvroValue;
use crate::schema::avro::{namespace_of, AvroSchema, Name, NamedTypes, PrimitiveType, RecordField};

use super::schema::column_type;
use super::{event_seq, Connector, DebeziumError, BIN_FILE_COLUMN, POS_COLUMN, SEQ_COLUMN};

/// Which of Debezium's value records a writer schema is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// The change event envelope.
    Envelope,
    /// A row flattened by `ExtractNewRecordState`.
    Extracted,
}

/// One writer schema of Debezium Avro values, compiled once per schema id: the flat schema its rows are
/// written in, and how a datum becomes one.
#[derive(Debug)]
pub struct AvroEnvelope {
    connector: Connector,
    shape: Shape,
    writer: SchemaGraph,
    /// The meta columns the flat schema carries (those the row record lacks), in HoodieStreamer's order.
    meta: Vec<&'static str>,
    flat: AvroSchema,
    flat_graph: SchemaGraph,
}

impl AvroEnvelope {
    /// Compiles `writer` (an Envelope or an `ExtractNewRecordState` record) for `connector`; any other
    /// schema is refused with the reason its values are dead-lettered with.
    pub fn compile(connector: Connector, writer: &AvroSchema) -> Result<Self, DebeziumError> {
        let AvroSchema::Record(record) = writer else {
            return Err(DebeziumError::NotEnvelope(format!(
                "the writer schema is {}, not a Debezium record",
                writer.describe()
            )));
        };
        let top = record.name.fullname(None);
        let has = |f: &str| record.field(f).is_some();
        let (shape, name, row_record) = if has("op")
            && has("source")
            && (has("before") || has("after"))
        {
            let names = NamedTypes::collect(writer);
            let row = ["after", "before"]
                .iter()
                .filter_map(|f| record.field(f))
                .find_map(|f| match f.schema.non_null() {
                    AvroSchema::Record(r) => Some((r.name.fullname(namespace_of(&top)), r)),
                    AvroSchema::Reference(name) => match names.resolve(name, namespace_of(&top)) {
                        Some((full, AvroSchema::Record(r))) => Some((full, r)),
                        _ => None,
                    },
                    _ => None,
                });
            let Some((full, row)) = row else {
                return Err(DebeziumError::NotEnvelope(format!(
                    "the Envelope schema {top} has no row record in `before` or `after`"
                )));
            };
            (Shape::Envelope, full, row)
        } else if has("__op") || has("__deleted") {
            (Shape::Extracted, top.clone(), record)
        } else {
            return Err(DebeziumError::NotEnvelope(format!(
                "the writer schema {top} is neither an Envelope (fields op, source, before/after) nor an \
                 ExtractNewRecordState record (field __op or __deleted)"
            )));
        };
        // The row's own fields: an extracted record's without the `__` ones it adds.
        let fields: Vec<RecordField> = row_record
            .fields
            .iter()
            .filter(|f| shape == Shape::Envelope || !f.name.starts_with("__"))
            .cloned()
            .collect();
        let meta: Vec<&'static str> = connector
            .meta_columns()
            .iter()
            .copied()
            .filter(|m| !fields.iter().any(|f| f.name == *m))
            .collect();
        let mut flat_fields: Vec<RecordField> = meta
            .iter()
            .map(|m| RecordField::nullable(*m, AvroSchema::primitive(column_type(m))))
            .collect();
        flat_fields.extend(fields);
        // The row record (its doc and attributes kept) under its full name, with the meta columns first.
        let mut flat = row_record.clone();
        flat.name = Name::new(name);
        flat.fields = flat_fields;
        let flat = AvroSchema::Record(flat);
        let graph = |schema: &AvroSchema, what: &str| {
            SchemaGraph::parse(&schema.to_json_string()).map_err(|e| {
                DebeziumError::NotEnvelope(format!("the {what} schema of {top} is not usable: {e}"))
            })
        };
        Ok(AvroEnvelope {
            connector,
            shape,
            writer: graph(writer, "writer")?,
            meta,
            flat_graph: graph(&flat, "row")?,
            flat,
        })
    }

    /// The schema of the flattened rows: the meta columns, then the row's fields as the writer has them.
    pub fn flat_schema(&self) -> &AvroSchema {
        &self.flat
    }

    /// Flattens one datum (the value without its registry framing) into a datum of [`Self::flat_schema`].
    pub fn flatten(&self, datum: &[u8]) -> Result<Vec<u8>, DebeziumError> {
        self.flatten_rows(datum, false).map(|(row, _)| row)
    }

    /// [`Self::flatten`], and with `priors`, for an update whose `before` is a row, that row as a delete (op
    /// `d`, the update's source fields), as [`super::Flattened::Row`]'s `prior`.
    pub fn flatten_rows(
        &self,
        datum: &[u8],
        priors: bool,
    ) -> Result<(Vec<u8>, Option<Vec<u8>>), DebeziumError> {
        let value =
            decode_datum(&self.writer, datum).map_err(|e| DebeziumError::NotAvro(e.to_string()))?;
        let AvroValue::Record(fields) = value else {
            return Err(DebeziumError::NotAvro("the datum is not a record".into()));
        };
        let (mut meta, row, before) = match self.shape {
            Shape::Envelope => envelope(fields)?,
            Shape::Extracted => extracted(fields).map(|(meta, row)| (meta, row, None))?,
        };
        let row = self.encode(&meta, row)?;
        let prior = match before.filter(|_| priors) {
            Some(before) => {
                meta.replace(super::OP_COLUMN, AvroValue::String("d".into()));
                Some(self.encode(&meta, before)?)
            }
            None => None,
        };
        Ok((row, prior))
    }

    /// The flat datum of `row` under the meta columns `meta`.
    fn encode(&self, meta: &Meta, row: Row) -> Result<Vec<u8>, DebeziumError> {
        let mut out: Vec<(String, AvroValue)> = Vec::with_capacity(self.meta.len() + row.len());
        for column in &self.meta {
            let value = match *column {
                SEQ_COLUMN => {
                    let file = meta.get(BIN_FILE_COLUMN).and_then(AvroValue::as_str);
                    let pos = meta.get(POS_COLUMN).and_then(AvroValue::as_long);
                    match (file, pos) {
                        (Some(file), Some(pos)) => {
                            event_seq(file, pos).map_or(AvroValue::Null, AvroValue::String)
                        }
                        _ => AvroValue::Null,
                    }
                }
                other => cell(other, meta.get(other))?,
            };
            out.push(((*column).to_string(), value));
        }
        out.extend(row);
        encode_datum(&self.flat_graph, &AvroValue::Record(out)).map_err(|e| {
            DebeziumError::NotEnvelope(format!(
                "the row does not fit its own schema ({:?}): {e}",
                self.connector
            ))
        })
    }
}

/// The meta column values of one event by column, before their conversion to the column types.
#[derive(Default)]
struct Meta(Vec<(&'static str, AvroValue)>);

impl Meta {
    fn get(&self, column: &str) -> Option<&AvroValue> {
        self.0.iter().find(|(c, _)| *c == column).map(|(_, v)| v)
    }

    fn set(&mut self, column: &'static str, value: Option<AvroValue>) {
        if let Some(value) = value {
            self.0.push((column, value));
        }
    }

    fn replace(&mut self, column: &'static str, value: AvroValue) {
        self.0.retain(|(c, _)| *c != column);
        self.0.push((column, value));
    }
}

/// `value` as the type of meta column `column` (ints widen to longs); a value of another type refuses the
/// event, as the JSON forms' decoder refuses it.
fn cell(column: &str, value: Option<&AvroValue>) -> Result<AvroValue, DebeziumError> {
    let value = value
        .map(AvroValue::unwrap_union)
        .unwrap_or(&AvroValue::Null);
    let wrong = || {
        DebeziumError::NotEnvelope(format!(
            "{column} holds a {}, the event has a {}",
            column_type(column).name(),
            value.kind()
        ))
    };
    Ok(match (column_type(column), value) {
        (_, AvroValue::Null) => AvroValue::Null,
        (PrimitiveType::String, AvroValue::String(s)) => AvroValue::String(s.clone()),
        (PrimitiveType::Long, AvroValue::Long(_) | AvroValue::Int(_)) => {
            AvroValue::Long(value.as_long().ok_or_else(wrong)?)
        }
        (PrimitiveType::Int, AvroValue::Int(i)) => AvroValue::Int(*i),
        (PrimitiveType::Int, AvroValue::Long(l)) => {
            AvroValue::Int(i32::try_from(*l).map_err(|_| wrong())?)
        }
        _ => return Err(wrong()),
    })
}

/// Takes field `name` out of a record's fields.
fn take(fields: &mut Vec<(String, AvroValue)>, name: &str) -> Option<AvroValue> {
    let i = fields.iter().position(|(k, _)| k == name)?;
    Some(fields.swap_remove(i).1)
}

/// The value inside any union layers, by value.
fn into_inner(mut value: AvroValue) -> AvroValue {
    while let AvroValue::Union(_, inner) = value {
        value = *inner;
    }
    value
}

/// The name of a value's type for messages (`null` for a null, through unions).
fn describe(value: Option<&AvroValue>) -> String {
    match value.map(AvroValue::unwrap_union) {
        None => "nothing".into(),
        Some(AvroValue::Null) => "null".into(),
        Some(v) => format!("a {}", v.kind()),
    }
}

/// A row's fields.
type Row = Vec<(String, AvroValue)>;

type Flat = (Meta, Row);

/// An envelope: the image the op names, the meta columns from `source`, `op` and `ts_ms`, and an update's
/// `before` when it is a row.
fn envelope(mut fields: Row) -> Result<(Meta, Row, Option<Row>), DebeziumError> {
    let op = match take(&mut fields, "op").map(into_inner) {
        Some(AvroValue::String(op)) => op,
        other => {
            return Err(DebeziumError::NotEnvelope(format!(
                "`op` is {}, not a string",
                describe(other.as_ref())
            )))
        }
    };
    let field = match op.as_str() {
        "c" | "u" | "r" => "after",
        "d" => "before",
        _ => return Err(DebeziumError::UnknownOp(op)),
    };
    let row = match take(&mut fields, field).map(into_inner) {
        Some(AvroValue::Record(row)) => row,
        other => {
            return Err(DebeziumError::MissingImage {
                op,
                field,
                found: describe(other.as_ref()),
            })
        }
    };
    let before = match take(&mut fields, "before").map(into_inner) {
        Some(AvroValue::Record(before)) if op == "u" => Some(before),
        _ => None,
    };
    let mut source = match take(&mut fields, "source").map(into_inner) {
        Some(AvroValue::Record(source)) => source,
        other => {
            return Err(DebeziumError::NotEnvelope(format!(
                "`source` is {}, not a record",
                describe(other.as_ref())
            )))
        }
    };
    let mut meta = Meta::default();
    meta.set(super::OP_COLUMN, Some(AvroValue::String(op)));
    meta.set(super::PROCESSED_TS_COLUMN, take(&mut fields, "ts_ms"));
    for (column, name) in [
        (super::SHARD_COLUMN, "name"),
        (super::SCHEMA_COLUMN, "schema"),
        (super::ORIGIN_TS_COLUMN, "ts_ms"),
        (super::TX_ID_COLUMN, "txId"),
        (super::LSN_COLUMN, "lsn"),
        (super::XMIN_COLUMN, "xmin"),
        (BIN_FILE_COLUMN, "file"),
        (POS_COLUMN, "pos"),
        (super::ROW_COLUMN, "row"),
    ] {
        meta.set(column, take(&mut source, name));
    }
    Ok((meta, row, before))
}

/// A row flattened by `ExtractNewRecordState`: `__` fields become the meta columns (`__op`, `__ts_ms`,
/// source fields as `__<field>` or `__source_<field>`); `__deleted` `"true"` makes it a delete.
fn extracted(fields: Vec<(String, AvroValue)>) -> Result<Flat, DebeziumError> {
    let (extra, row): (Vec<_>, Vec<_>) = fields.into_iter().partition(|(k, _)| k.starts_with("__"));
    let find = |name: &str| {
        extra
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.unwrap_union().clone())
    };
    let get = |name: &str| find(&format!("__{name}")).or_else(|| find(&format!("__source_{name}")));
    let deleted = match find("__deleted") {
        Some(AvroValue::String(s)) => s.eq_ignore_ascii_case("true"),
        Some(AvroValue::Boolean(b)) => b,
        _ => false,
    };
    let op = match find("__op") {
        Some(AvroValue::String(op)) => Some(op),
        None | Some(AvroValue::Null) => None,
        Some(other) => {
            return Err(DebeziumError::NotEnvelope(format!(
                "`__op` is a {}, not a string",
                other.kind()
            )))
        }
    };
    if let Some(op) = &op {
        if !matches!(op.as_str(), "c" | "u" | "r" | "d") {
            return Err(DebeziumError::UnknownOp(op.clone()));
        }
    }
    let delete = deleted || op.as_deref() == Some("d");
    let op = match (op, delete) {
        (_, true) => Some(AvroValue::String("d".into())),
        (op, false) => op.map(AvroValue::String),
    };
    let mut meta = Meta::default();
    meta.set(super::OP_COLUMN, op);
    meta.set(super::PROCESSED_TS_COLUMN, find("__ts_ms"));
    meta.set(super::ORIGIN_TS_COLUMN, find("__source_ts_ms"));
    for (column, name) in [
        (super::SHARD_COLUMN, "name"),
        (super::SCHEMA_COLUMN, "schema"),
        (super::TX_ID_COLUMN, "txId"),
        (super::LSN_COLUMN, "lsn"),
        (super::XMIN_COLUMN, "xmin"),
        (BIN_FILE_COLUMN, "file"),
        (POS_COLUMN, "pos"),
        (super::ROW_COLUMN, "row"),
    ] {
        meta.set(column, get(name));
    }
    Ok((meta, row))
}
