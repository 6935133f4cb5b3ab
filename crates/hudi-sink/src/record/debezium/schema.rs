//! The table schema of a Debezium table: the row schema with HoodieStreamer's meta columns before it.

use arrow_schema::DataType;

use crate::schema::avro::{AvroSchema, PrimitiveType, RecordField};

use super::*;

/// The Avro type of a meta column (HoodieStreamer makes every column nullable).
pub(super) fn column_type(name: &str) -> PrimitiveType {
    match name {
        OP_COLUMN | SHARD_COLUMN | SCHEMA_COLUMN | BIN_FILE_COLUMN | SEQ_COLUMN => {
            PrimitiveType::String
        }
        ROW_COLUMN => PrimitiveType::Int,
        _ => PrimitiveType::Long,
    }
}

/// The table schema for `connector` from the schema a user gives: the row schema (the `Value` record), or
/// a whole Debezium `Envelope` schema, whose `before`/`after` record is taken. The meta columns the schema
/// lacks are put first, in HoodieStreamer's order, as `["null", T]` with default null; those it has are
/// kept as they are (and checked by [`check_table`]).
pub fn table_schema(connector: Connector, given: &AvroSchema) -> Result<AvroSchema, String> {
    let AvroSchema::Record(record) = given else {
        return Err(format!(
            "a Debezium table needs a record schema, not {}",
            given.describe()
        ));
    };
    let is_envelope = ["before", "after", "op", "source"]
        .iter()
        .all(|f| record.field(f).is_some());
    let row = if is_envelope {
        let image = ["before", "after"]
            .iter()
            .filter_map(|f| record.field(f))
            .find_map(|f| match f.schema.nullable_inner().unwrap_or(&f.schema) {
                AvroSchema::Record(r) => Some(r.clone()),
                _ => None,
            });
        image.ok_or_else(|| {
            "the Debezium Envelope schema defines no row record in `before` or `after`".to_string()
        })?
    } else {
        record.clone()
    };
    let mut fields: Vec<RecordField> = connector
        .meta_columns()
        .iter()
        .filter(|name| row.field(name).is_none())
        .map(|name| RecordField::nullable(*name, AvroSchema::primitive(column_type(name))))
        .collect();
    fields.extend(row.fields.iter().cloned());
    let mut out = row;
    out.fields = fields;
    Ok(AvroSchema::Record(out))
}

/// Checks that the table's data schema has `connector`'s meta columns with types that hold their values.
pub fn check_table(connector: Connector, data: &arrow_schema::Schema) -> Result<(), String> {
    for name in connector.meta_columns() {
        let ok: &[DataType] = match column_type(name) {
            PrimitiveType::String => &[DataType::Utf8, DataType::LargeUtf8],
            PrimitiveType::Int => &[DataType::Int32, DataType::Int64],
            _ => &[DataType::Int64],
        };
        match data.field_with_name(name) {
            Ok(field) if ok.contains(field.data_type()) => {}
            Ok(field) => {
                return Err(format!(
                    "the table's column {name} is {}, which cannot hold Debezium's {name}",
                    field.data_type()
                ))
            }
            Err(_) => {
                return Err(format!(
                "the table has no column {name}: a Debezium table carries HoodieStreamer's meta \
                     columns ({})",
                connector.meta_columns().join(", ")
            ))
            }
        }
    }
    Ok(())
}
