//! Canonical JSON rows, rendered the same way as `tests/python/hudi_read.py` renders what an independent
//! reader returns, so that full row sets can be compared exactly.

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, TimeUnit};
use serde_json::{Map, Value};

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The canonical JSON of `array[row]`.
pub fn canon_value(array: &ArrayRef, row: usize) -> Value {
    if array.is_null(row) {
        return Value::Null;
    }
    match array.data_type() {
        DataType::Boolean => Value::Bool(array.as_boolean().value(row)),
        DataType::Int8 => array.as_primitive::<Int8Type>().value(row).into(),
        DataType::Int16 => array.as_primitive::<Int16Type>().value(row).into(),
        DataType::Int32 => array.as_primitive::<Int32Type>().value(row).into(),
        DataType::Int64 => array.as_primitive::<Int64Type>().value(row).into(),
        DataType::Float32 => f64::from(array.as_primitive::<Float32Type>().value(row)).into(),
        DataType::Float64 => array.as_primitive::<Float64Type>().value(row).into(),
        DataType::Utf8 => array.as_string::<i32>().value(row).into(),
        DataType::LargeUtf8 => array.as_string::<i64>().value(row).into(),
        DataType::Binary => hex(array.as_binary::<i32>().value(row)).into(),
        DataType::LargeBinary => hex(array.as_binary::<i64>().value(row)).into(),
        DataType::FixedSizeBinary(_) => hex(array.as_fixed_size_binary().value(row)).into(),
        DataType::Decimal128(_, _) => array
            .as_primitive::<Decimal128Type>()
            .value(row)
            .to_string()
            .into(),
        DataType::Date32 => array.as_primitive::<Date32Type>().value(row).into(),
        DataType::Time32(TimeUnit::Millisecond) => array
            .as_primitive::<Time32MillisecondType>()
            .value(row)
            .into(),
        DataType::Time64(TimeUnit::Microsecond) => array
            .as_primitive::<Time64MicrosecondType>()
            .value(row)
            .into(),
        DataType::Timestamp(TimeUnit::Millisecond, _) => array
            .as_primitive::<TimestampMillisecondType>()
            .value(row)
            .into(),
        DataType::Timestamp(TimeUnit::Microsecond, _) => array
            .as_primitive::<TimestampMicrosecondType>()
            .value(row)
            .into(),
        DataType::Timestamp(TimeUnit::Nanosecond, _) => array
            .as_primitive::<TimestampNanosecondType>()
            .value(row)
            .into(),
        DataType::Struct(fields) => {
            let s = array.as_struct();
            let mut obj = Map::new();
            for (i, f) in fields.iter().enumerate() {
                obj.insert(f.name().clone(), canon_value(s.column(i), row));
            }
            Value::Object(obj)
        }
        DataType::List(_) => {
            let l = array.as_list::<i32>();
            let values = l.value(row);
            Value::Array((0..values.len()).map(|i| canon_value(&values, i)).collect())
        }
        DataType::LargeList(_) => {
            let l = array.as_list::<i64>();
            let values = l.value(row);
            Value::Array((0..values.len()).map(|i| canon_value(&values, i)).collect())
        }
        DataType::Map(_, _) => {
            let m = array.as_map();
            let entries = m.value(row);
            let keys = entries.column(0);
            let vals = entries.column(1);
            Value::Array(
                (0..entries.len())
                    .map(|i| Value::Array(vec![canon_value(keys, i), canon_value(vals, i)]))
                    .collect(),
            )
        }
        other => panic!("canon_value: unsupported type {other}"),
    }
}

/// Canonical rows of record batches (column name → value).
pub fn canon_rows(batches: &[RecordBatch]) -> Vec<Map<String, Value>> {
    let mut out = Vec::new();
    for batch in batches {
        let schema = batch.schema();
        for row in 0..batch.num_rows() {
            let mut obj = Map::new();
            for (i, f) in schema.fields().iter().enumerate() {
                obj.insert(f.name().clone(), canon_value(batch.column(i), row));
            }
            out.push(obj);
        }
    }
    out
}
