//! Projection: rows written under an older table schema, read in the current one.
//!
//! Schema evolution ([`super::evolution`]) only adds nullable fields and widens types, and files written
//! before a change stay as they are. Whatever reads such a file to write it again (a copy-on-write merge, a
//! compaction, the log records of a merge) projects its rows into the current schema first:
//!
//! | stored column | table column | read as |
//! |---|---|---|
//! | absent (added later) | any | null |
//! | `int` | `long`, `float`, `double` | the number widened |
//! | `long` | `float`, `double` | the number widened |
//! | `float` | `double` | the number widened |
//! | `int`, `long`, `float`, `double` | `string` | its decimal text |
//! | decimal(p, s) | decimal(p' ≥ p, s) | the same unscaled value |
//! | record, array, map | the same kind | each child projected by name |
//!
//! Columns are matched by name (never by position), so a field added to a nested record is null in older
//! rows too. Anything else is an error, never a silent drop of data.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type};
use arrow_array::{
    make_array, new_null_array, Array, ArrayRef, ListArray, MapArray, RecordBatch, StringArray,
    StructArray,
};
use arrow_schema::{DataType, SchemaRef};

/// `batch` with the columns of `schema`, by name: a missing column is null, a narrower type is widened as
/// the module doc says, and a type that differs only in what does not change the data (time zone names,
/// nested field names or nullability, decimal precision) takes the schema's type. The error names the
/// column and both types.
pub fn conform(batch: &RecordBatch, schema: &SchemaRef) -> Result<RecordBatch, String> {
    if batch.schema() == *schema {
        return Ok(batch.clone());
    }
    let columns = schema
        .fields()
        .iter()
        .map(|field| match batch.column_by_name(field.name()) {
            None => Ok(new_null_array(field.data_type(), batch.num_rows())),
            Some(col) => retype(col, field.data_type())
                .map_err(|reason| format!("column {}: {reason}", field.name())),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    RecordBatch::try_new_with_options(schema.clone(), columns, &options).map_err(|e| e.to_string())
}

/// The columns of `batch` (by name, nested records included) that `schema` has no place for: what a
/// projection into `schema` would drop. Empty when every stored value has a column to go to.
pub fn dropped_columns(stored: &SchemaRef, schema: &SchemaRef) -> Vec<String> {
    let mut dropped = Vec::new();
    for field in stored.fields() {
        match schema.field_with_name(field.name()) {
            Ok(target) => dropped_in(
                field.data_type(),
                target.data_type(),
                field.name(),
                &mut dropped,
            ),
            Err(_) => dropped.push(field.name().clone()),
        }
    }
    dropped
}

fn dropped_in(stored: &DataType, target: &DataType, path: &str, out: &mut Vec<String>) {
    match (stored, target) {
        (DataType::Struct(s), DataType::Struct(t)) => {
            for f in s {
                match t.iter().find(|x| x.name() == f.name()) {
                    Some(x) => dropped_in(
                        f.data_type(),
                        x.data_type(),
                        &format!("{path}.{}", f.name()),
                        out,
                    ),
                    None => out.push(format!("{path}.{}", f.name())),
                }
            }
        }
        (DataType::List(s), DataType::List(t)) | (DataType::Map(s, _), DataType::Map(t, _)) => {
            dropped_in(s.data_type(), t.data_type(), path, out)
        }
        _ => {}
    }
}

/// `array` as `target`: see [`conform`].
pub fn retype(array: &ArrayRef, target: &DataType) -> Result<ArrayRef, String> {
    if array.data_type() == target {
        return Ok(array.clone());
    }
    match (array.data_type(), target) {
        (DataType::Struct(_), DataType::Struct(fields)) => {
            let s = array.as_struct();
            let children = fields
                .iter()
                .map(|f| match s.column_by_name(f.name()) {
                    Some(c) => retype(c, f.data_type()),
                    None => Ok(new_null_array(f.data_type(), s.len())),
                })
                .collect::<Result<Vec<_>, _>>()?;
            if fields.is_empty() {
                return Ok(Arc::new(StructArray::new_empty_fields(
                    s.len(),
                    s.nulls().cloned(),
                )));
            }
            StructArray::try_new(fields.clone(), children, s.nulls().cloned())
                .map(|a| Arc::new(a) as ArrayRef)
                .map_err(|e| e.to_string())
        }
        (DataType::List(_), DataType::List(field)) => {
            let l = array.as_list::<i32>();
            let values = retype(l.values(), field.data_type())?;
            ListArray::try_new(
                field.clone(),
                l.offsets().clone(),
                values,
                l.nulls().cloned(),
            )
            .map(|a| Arc::new(a) as ArrayRef)
            .map_err(|e| e.to_string())
        }
        (DataType::Map(_, _), DataType::Map(field, sorted)) => {
            let m = array.as_map();
            let entries: ArrayRef = Arc::new(m.entries().clone());
            let entries = retype(&entries, field.data_type())?;
            let entries = entries.as_struct().clone();
            MapArray::try_new(
                field.clone(),
                m.offsets().clone(),
                entries,
                m.nulls().cloned(),
                *sorted,
            )
            .map(|a| Arc::new(a) as ArrayRef)
            .map_err(|e| e.to_string())
        }
        (from, to) if same_layout(from, to) => {
            let data = array
                .to_data()
                .into_builder()
                .data_type(to.clone())
                .build()
                .map_err(|e| e.to_string())?;
            Ok(make_array(data))
        }
        (from, to) => widen(array, to).ok_or_else(|| format!("type {from} cannot be read as {to}")),
    }
}

/// Primitive types whose values are stored the same way.
fn same_layout(a: &DataType, b: &DataType) -> bool {
    use DataType::*;
    match (a, b) {
        (Timestamp(u1, _), Timestamp(u2, _)) => u1 == u2,
        (Decimal128(_, s1), Decimal128(_, s2)) => s1 == s2,
        _ => false,
    }
}

/// The widenings of the module doc; `None` for any other pair.
fn widen(array: &ArrayRef, to: &DataType) -> Option<ArrayRef> {
    use DataType::*;
    let out: ArrayRef = match (array.data_type(), to) {
        (Int32, Int64) => Arc::new(
            array
                .as_primitive::<Int32Type>()
                .unary::<_, Int64Type>(i64::from),
        ),
        (Int32, Float32) => Arc::new(
            array
                .as_primitive::<Int32Type>()
                .unary::<_, Float32Type>(|v| v as f32),
        ),
        (Int32, Float64) => Arc::new(
            array
                .as_primitive::<Int32Type>()
                .unary::<_, Float64Type>(f64::from),
        ),
        (Int64, Float32) => Arc::new(
            array
                .as_primitive::<Int64Type>()
                .unary::<_, Float32Type>(|v| v as f32),
        ),
        (Int64, Float64) => Arc::new(
            array
                .as_primitive::<Int64Type>()
                .unary::<_, Float64Type>(|v| v as f64),
        ),
        (Float32, Float64) => Arc::new(
            array
                .as_primitive::<Float32Type>()
                .unary::<_, Float64Type>(f64::from),
        ),
        (Int32, Utf8) => text(array.as_primitive::<Int32Type>().iter(), |v| v.to_string()),
        (Int64, Utf8) => text(array.as_primitive::<Int64Type>().iter(), |v| v.to_string()),
        (Float32, Utf8) => text(array.as_primitive::<Float32Type>().iter(), |v| {
            format!("{v:?}")
        }),
        (Float64, Utf8) => text(array.as_primitive::<Float64Type>().iter(), |v| {
            format!("{v:?}")
        }),
        _ => return None,
    };
    Some(out)
}

fn text<T>(values: impl Iterator<Item = Option<T>>, show: impl Fn(T) -> String) -> ArrayRef {
    Arc::new(values.map(|v| v.map(&show)).collect::<StringArray>())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Float64Array, Int32Array, Int64Array};
    use arrow_schema::{Field, Fields, Schema};

    fn batch(fields: Vec<Field>, columns: Vec<ArrayRef>) -> RecordBatch {
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).expect("batch")
    }

    #[test]
    fn added_columns_are_null_and_narrower_numbers_widen() {
        let old = batch(
            vec![
                Field::new("id", DataType::Int32, false),
                Field::new("n", DataType::Int32, true),
            ],
            vec![
                Arc::new(Int32Array::from(vec![1, 2])),
                Arc::new(Int32Array::from(vec![Some(7), None])),
            ],
        );
        let new: SchemaRef = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("n", DataType::Float64, true),
            Field::new("note", DataType::Utf8, true),
        ]));
        let out = conform(&old, &new).expect("conform");
        assert_eq!(out.schema(), new);
        assert_eq!(
            out.column(0).as_primitive::<Int64Type>(),
            &Int64Array::from(vec![1, 2])
        );
        assert_eq!(
            out.column(1).as_primitive::<Float64Type>(),
            &Float64Array::from(vec![Some(7.0), None])
        );
        assert_eq!(out.column(2).null_count(), 2);
    }

    #[test]
    fn numbers_read_as_text_and_nested_records_gain_fields() {
        let inner = Fields::from(vec![Field::new("a", DataType::Int64, true)]);
        let wider = Fields::from(vec![
            Field::new("a", DataType::Utf8, true),
            Field::new("b", DataType::Boolean, true),
        ]);
        let s = StructArray::try_new(
            inner.clone(),
            vec![Arc::new(Int64Array::from(vec![Some(-3), None]))],
            None,
        )
        .expect("struct");
        let old = batch(
            vec![Field::new("s", DataType::Struct(inner), true)],
            vec![Arc::new(s)],
        );
        let new: SchemaRef = Arc::new(Schema::new(vec![Field::new(
            "s",
            DataType::Struct(wider),
            true,
        )]));
        let out = conform(&old, &new).expect("conform");
        let s = out.column(0).as_struct();
        let a = s.column(0).as_string::<i32>();
        assert_eq!(a.value(0), "-3");
        assert!(a.is_null(1));
        assert_eq!(s.column(1).null_count(), 2);
    }

    #[test]
    fn narrowing_is_an_error_and_dropped_columns_are_named() {
        let old = batch(
            vec![Field::new("n", DataType::Int64, true)],
            vec![Arc::new(Int64Array::from(vec![1]))],
        );
        let narrower: SchemaRef =
            Arc::new(Schema::new(vec![Field::new("n", DataType::Int32, true)]));
        let err = conform(&old, &narrower).expect_err("narrowing");
        assert!(err.contains("column n") && err.contains("Int64"), "{err}");
        let stored: SchemaRef = Arc::new(Schema::new(vec![
            Field::new("n", DataType::Int64, true),
            Field::new(
                "s",
                DataType::Struct(Fields::from(vec![Field::new("x", DataType::Utf8, true)])),
                true,
            ),
        ]));
        let table: SchemaRef = Arc::new(Schema::new(vec![Field::new(
            "s",
            DataType::Struct(Fields::empty()),
            true,
        )]));
        assert_eq!(dropped_columns(&stored, &table), ["n", "s.x"]);
        assert!(dropped_columns(&stored, &stored).is_empty());
    }
}
