//! Kafka metadata as columns, as HoodieStreamer adds them with `hoodie.streamer.source.kafka.append.offsets=true`
//! (its `KafkaOffsetPostProcessor`): the offset, partition, timestamp and key of the Kafka record each row came
//! from, appended after the source fields with HoodieStreamer's names, types and defaults, so that a table moves
//! between HoodieStreamer and this sink with the same columns, and a user can partition by the Kafka timestamp
//! with the timestamp key generator.
//!
//! ```text
//! table schema  ─ with_kafka_columns: the four fields appended (those already there are kept as they are)
//! batch values  ─ decoded as usual (the columns take their defaults) ─ fill: each row's values from its record
//! ```
//!
//! The values come from the record itself, never from the value, so a value that carries a field of the same
//! name is overruled, as HoodieStreamer does. The key is the record key's bytes read as UTF-8 (invalid bytes
//! replaced), as Kafka's `StringDeserializer` reads it; a record without a key gets null.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Int32Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::DataType;

use crate::schema::avro::{AvroSchema, PrimitiveType, RecordField};
use crate::schema::meta::KAFKA_SOURCE_COLUMNS;
use crate::source::event::KafkaRecord;
use crate::write::WriteError;

/// `hoodie.streamer.source.kafka.append.offsets`: append the Kafka metadata columns.
pub const APPEND_OFFSETS_KEY: &str = "hoodie.streamer.source.kafka.append.offsets";
/// The pre-0.14 spelling of [`APPEND_OFFSETS_KEY`], still accepted.
pub const APPEND_OFFSETS_KEY_OLD: &str = "hoodie.deltastreamer.source.kafka.append.offsets";

/// `_hoodie_kafka_source_offset` (`long`, default 0): the record's offset.
pub const OFFSET_COLUMN: &str = KAFKA_SOURCE_COLUMNS[0];
/// `_hoodie_kafka_source_partition` (`int`, default 0): the record's Kafka partition.
pub const PARTITION_COLUMN: &str = KAFKA_SOURCE_COLUMNS[1];
/// `_hoodie_kafka_source_timestamp` (`long`, epoch milliseconds without a logical type, default 0).
pub const TIMESTAMP_COLUMN: &str = KAFKA_SOURCE_COLUMNS[2];
/// `_hoodie_kafka_source_key` (`["null","string"]`, default null): the record key as text.
pub const KEY_COLUMN: &str = KAFKA_SOURCE_COLUMNS[3];

/// The four columns in HoodieStreamer's order, with their Avro type and default.
fn columns() -> [RecordField; 4] {
    let with_default = |name: &str, primitive: PrimitiveType| RecordField {
        default: Some(serde_json::Value::from(0)),
        ..RecordField::new(name, AvroSchema::primitive(primitive))
    };
    [
        with_default(OFFSET_COLUMN, PrimitiveType::Long),
        with_default(PARTITION_COLUMN, PrimitiveType::Int),
        with_default(TIMESTAMP_COLUMN, PrimitiveType::Long),
        RecordField::nullable(KEY_COLUMN, AvroSchema::primitive(PrimitiveType::String)),
    ]
}

/// `schema` with the Kafka columns appended after its fields; a column already there is left as it is (as
/// HoodieStreamer tolerates since 0.15). `schema` must be a record.
pub fn with_kafka_columns(schema: &AvroSchema) -> Result<AvroSchema, WriteError> {
    let AvroSchema::Record(record) = schema else {
        return Err(WriteError::Config {
            reason: format!(
                "{APPEND_OFFSETS_KEY}=true needs a record schema, not {}",
                schema.describe()
            ),
        });
    };
    let mut record = record.clone();
    for column in columns() {
        if record.field(&column.name).is_none() {
            record.fields.push(column);
        }
    }
    Ok(AvroSchema::Record(record))
}

/// `schema` without the Kafka columns: the schema bare Avro values are written with when the table schema is
/// the source schema with the columns appended.
pub fn without_kafka_columns(schema: &AvroSchema) -> AvroSchema {
    match schema {
        AvroSchema::Record(record) => {
            let mut record = record.clone();
            record.fields.retain(|f| !is_kafka_column(&f.name));
            AvroSchema::Record(record)
        }
        other => other.clone(),
    }
}

fn is_kafka_column(name: &str) -> bool {
    KAFKA_SOURCE_COLUMNS.contains(&name)
}

/// Checks that the table's data schema has the four columns with types that hold the values: the table was
/// created (or evolved) with them.
pub fn check_table(data: &arrow_schema::Schema) -> Result<(), WriteError> {
    for (name, types) in [
        (OFFSET_COLUMN, &[DataType::Int64][..]),
        (PARTITION_COLUMN, &[DataType::Int32, DataType::Int64][..]),
        (TIMESTAMP_COLUMN, &[DataType::Int64][..]),
        (KEY_COLUMN, &[DataType::Utf8, DataType::LargeUtf8][..]),
    ] {
        match data.field_with_name(name) {
            Ok(field) if types.contains(field.data_type()) => {}
            Ok(field) => {
                return Err(WriteError::Config {
                    reason: format!(
                        "{APPEND_OFFSETS_KEY}=true: the table's column {name} is {}, which cannot hold it",
                        field.data_type()
                    ),
                })
            }
            Err(_) => {
                return Err(WriteError::Config {
                    reason: format!(
                        "{APPEND_OFFSETS_KEY}=true but the table has no column {name}: give the source schema \
                         (hoodie.streamer.schemaprovider.source.schema.file or a registry), which the sink \
                         extends with the Kafka columns, or turn the key off for this table"
                    ),
                })
            }
        }
    }
    Ok(())
}

/// What the Kafka columns of one decoded row hold, taken from its record while the record is loaded (its
/// part may be gone by the time the rows are filled).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KafkaRow {
    /// The record's offset.
    pub offset: i64,
    /// The record's partition.
    pub partition: i32,
    /// The record's timestamp, epoch milliseconds.
    pub timestamp_ms: i64,
    /// The record's key as text (lossy UTF-8), `None` for a null key.
    pub key: Option<String>,
}

impl KafkaRow {
    /// The Kafka columns of a row decoded from `record`.
    pub fn of(record: &KafkaRecord) -> Self {
        Self {
            offset: record.offset,
            partition: record.partition,
            timestamp_ms: record.timestamp_ms,
            key: record
                .key
                .as_deref()
                .map(|k| String::from_utf8_lossy(k).into_owned()),
        }
    }
}

/// `data` (one row per decoded record) with the Kafka columns set from the records the rows came from:
/// row `i` is `rows[i]`.
pub fn fill(data: RecordBatch, rows: &[KafkaRow]) -> Result<RecordBatch, WriteError> {
    if rows.len() != data.num_rows() {
        return Err(WriteError::Config {
            reason: format!(
                "{} decoded rows for {} records: the Kafka columns cannot be matched",
                data.num_rows(),
                rows.len()
            ),
        });
    }
    let schema = data.schema();
    let mut columns: Vec<ArrayRef> = data.columns().to_vec();
    for (index, field) in schema.fields().iter().enumerate() {
        let values: ArrayRef = match (field.name().as_str(), field.data_type()) {
            (OFFSET_COLUMN, DataType::Int64) => {
                Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.offset)))
            }
            (PARTITION_COLUMN, DataType::Int32) => Arc::new(Int32Array::from_iter_values(
                rows.iter().map(|r| r.partition),
            )),
            (PARTITION_COLUMN, DataType::Int64) => Arc::new(Int64Array::from_iter_values(
                rows.iter().map(|r| i64::from(r.partition)),
            )),
            (TIMESTAMP_COLUMN, DataType::Int64) => Arc::new(Int64Array::from_iter_values(
                rows.iter().map(|r| r.timestamp_ms),
            )),
            (KEY_COLUMN, DataType::Utf8) => Arc::new(StringArray::from_iter(
                rows.iter().map(|r| r.key.as_deref()),
            )),
            (KEY_COLUMN, DataType::LargeUtf8) => Arc::new(
                arrow_array::LargeStringArray::from_iter(rows.iter().map(|r| r.key.as_deref())),
            ),
            _ => continue,
        };
        if !field.is_nullable() && values.null_count() > 0 {
            return Err(WriteError::Config {
                reason: format!(
                    "the table's column {} is not nullable, and a record has no key",
                    field.name()
                ),
            });
        }
        columns[index] = values;
    }
    RecordBatch::try_new(schema, columns).map_err(|e| WriteError::Config {
        reason: format!("the Kafka columns do not fit the batch: {e}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use arrow_schema::{Field, Schema};
    use bytes::Bytes;

    fn record(offset: i64, partition: i32, key: Option<&[u8]>) -> KafkaRecord {
        KafkaRecord {
            topic: Arc::from("trips"),
            partition,
            offset,
            timestamp_ms: 1_700_000_000_000 + offset,
            timestamp_type: None,
            key: key.map(Bytes::copy_from_slice),
            value: Some(Bytes::from_static(b"{}")),
            headers: Vec::new(),
            raw_key_b64: None,
            raw_value_b64: None,
            base64_error: None,
            value_schema: None,
        }
    }

    #[test]
    fn the_schema_gets_the_four_columns_once_in_hoodiestreamers_form() {
        let source = AvroSchema::parse(
            r#"{"type":"record","name":"trips","fields":[{"name":"uuid","type":"string"},
               {"name":"_hoodie_kafka_source_offset","type":"long"}]}"#,
        )
        .expect("schema");
        let with = with_kafka_columns(&source).expect("record");
        assert_eq!(
            with.to_json_string(),
            r#"{"type":"record","name":"trips","fields":[{"name":"uuid","type":"string"},{"name":"_hoodie_kafka_source_offset","type":"long"},{"name":"_hoodie_kafka_source_partition","type":"int","default":0},{"name":"_hoodie_kafka_source_timestamp","type":"long","default":0},{"name":"_hoodie_kafka_source_key","type":["null","string"],"default":null}]}"#
        );
        assert_eq!(with_kafka_columns(&with).expect("again"), with);
        let bare = without_kafka_columns(&with);
        assert_eq!(
            bare.to_json_string(),
            r#"{"type":"record","name":"trips","fields":[{"name":"uuid","type":"string"}]}"#
        );
    }

    #[test]
    fn each_row_gets_its_own_records_metadata() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("uuid", DataType::Utf8, false),
            Field::new(OFFSET_COLUMN, DataType::Int64, false),
            Field::new(PARTITION_COLUMN, DataType::Int32, false),
            Field::new(TIMESTAMP_COLUMN, DataType::Int64, false),
            Field::new(KEY_COLUMN, DataType::Utf8, true),
        ]));
        check_table(&schema).expect("all four");
        let zeros = |n| Arc::new(Int64Array::from(vec![0i64; n])) as ArrayRef;
        let data = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(StringArray::from(vec!["a", "b"])),
                zeros(2),
                Arc::new(Int32Array::from(vec![0, 0])),
                zeros(2),
                Arc::new(StringArray::from(vec![None::<&str>, None])),
            ],
        )
        .expect("batch");
        // Row 0 came from record 2, row 1 from record 0 (record 1 was a dead letter).
        let records = [
            record(7, 1, Some(b"k\xff")),
            record(8, 1, None),
            record(42, 3, None),
        ];
        let rows = [KafkaRow::of(&records[2]), KafkaRow::of(&records[0])];
        let filled = fill(data, &rows).expect("fill");
        let col = |name: &str| filled.column_by_name(name).expect(name).clone();
        assert_eq!(
            col(OFFSET_COLUMN).as_ref(),
            &Int64Array::from(vec![42, 7]) as &dyn Array
        );
        assert_eq!(
            col(PARTITION_COLUMN).as_ref(),
            &Int32Array::from(vec![3, 1]) as &dyn Array
        );
        assert_eq!(
            col(TIMESTAMP_COLUMN).as_ref(),
            &Int64Array::from(vec![1_700_000_000_042, 1_700_000_000_007]) as &dyn Array
        );
        assert_eq!(
            col(KEY_COLUMN).as_ref(),
            &StringArray::from(vec![None, Some("k\u{fffd}")]) as &dyn Array
        );
        assert_eq!(
            col("uuid").as_ref(),
            &StringArray::from(vec!["a", "b"]) as &dyn Array
        );
        // A table without the columns is refused, naming the fix.
        let bare = Schema::new(vec![Field::new("uuid", DataType::Utf8, false)]);
        let err = check_table(&bare).expect_err("missing").to_string();
        assert!(
            err.contains(OFFSET_COLUMN) && err.contains("schema"),
            "{err}"
        );
    }
}
