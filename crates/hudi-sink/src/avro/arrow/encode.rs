//! Arrow rows → Avro binary datums, walking each value under its Avro schema.

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, TimeUnit};

use super::datum::{mismatch, DatumError, Path, MAX_DEPTH};
use crate::avro::binary::{write_bytes, write_double, write_float, write_long};
use crate::avro::schema::{
    namespace_of, AvroSchema, LogicalType, NamedTypes, PrimitiveSchema, PrimitiveType, RecordSchema,
};

/// Encodes the rows of Arrow record batches as Avro binary datums of one record schema.
pub struct DatumEncoder<'s> {
    values: Encoder<'s>,
    record: &'s RecordSchema,
    ns: Option<String>,
}

impl<'s> DatumEncoder<'s> {
    /// An encoder of datums of `record`, whose named types are `names` (from validating the schema `record`
    /// is the top of).
    pub fn new(names: NamedTypes<'s>, record: &'s RecordSchema) -> Self {
        DatumEncoder {
            values: Encoder { names },
            record,
            ns: namespace_of(&record.name.fullname(None)).map(str::to_string),
        }
    }

    /// The batch's columns in record field order, checking that they are the record's fields, by name and
    /// in order.
    pub fn columns<'b>(&self, batch: &'b RecordBatch) -> Result<Vec<&'b ArrayRef>, DatumError> {
        let schema = batch.schema();
        let found: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        let expected: Vec<&str> = self.record.fields.iter().map(|f| f.name.as_str()).collect();
        if found != expected {
            return Err(DatumError::Mismatch {
                path: "$".into(),
                reason: format!("batch columns {found:?} are not the schema's fields {expected:?}"),
            });
        }
        Ok(batch.columns().iter().collect())
    }

    /// Appends the datum of row `row` of `columns` (from [`DatumEncoder::columns`]) to `out`.
    pub fn encode(
        &self,
        columns: &[&ArrayRef],
        row: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), DatumError> {
        if columns.len() != self.record.fields.len() {
            return Err(DatumError::Mismatch {
                path: "$".into(),
                reason: format!(
                    "{} columns for the schema's {} fields",
                    columns.len(),
                    self.record.fields.len()
                ),
            });
        }
        for (field, column) in self.record.fields.iter().zip(columns) {
            let path = Path::Field(&Path::Root, &field.name);
            self.values.value(
                &field.schema,
                self.ns.as_deref(),
                column.as_ref(),
                row,
                out,
                &path,
                0,
            )?;
        }
        Ok(())
    }
}

struct Encoder<'s> {
    names: NamedTypes<'s>,
}

impl<'s> Encoder<'s> {
    #[allow(clippy::too_many_arguments)]
    fn value(
        &self,
        schema: &'s AvroSchema,
        ns: Option<&str>,
        array: &dyn Array,
        row: usize,
        out: &mut Vec<u8>,
        path: &Path<'_>,
        depth: usize,
    ) -> Result<(), DatumError> {
        if depth > MAX_DEPTH {
            return Err(DatumError::TooDeep {
                path: path.render(),
                limit: MAX_DEPTH,
            });
        }
        match schema {
            AvroSchema::Union(branches) => {
                let null = array.is_null(row);
                let index = branches
                    .iter()
                    .position(|b| b.is_null() == null)
                    .ok_or_else(|| {
                        mismatch(
                            path,
                            format!(
                                "no union branch for a {} value",
                                if null { "null" } else { "non-null" }
                            ),
                        )
                    })?;
                write_long(out, index as i64);
                self.value(&branches[index], ns, array, row, out, path, depth + 1)
            }
            AvroSchema::Reference(name) => {
                let (full, target) = self
                    .names
                    .resolve(name, ns)
                    .ok_or_else(|| mismatch(path, format!("{name} is not a defined type")))?;
                let target_ns = namespace_of(&full).map(str::to_string);
                self.value(
                    target,
                    target_ns.as_deref(),
                    array,
                    row,
                    out,
                    path,
                    depth + 1,
                )
            }
            s if s.is_null() => Ok(()),
            _ if array.is_null(row) => Err(mismatch(path, "null in a non-nullable field")),
            AvroSchema::Primitive(p) => primitive(p, array, row, out, path),
            AvroSchema::Record(r) => {
                let s = array.as_struct_opt().ok_or_else(|| {
                    mismatch(
                        path,
                        format!("record needs a struct column, found {}", array.data_type()),
                    )
                })?;
                let full = r.name.fullname(ns);
                let child_ns = namespace_of(&full);
                for f in &r.fields {
                    let fpath = Path::Field(path, &f.name);
                    let child = s
                        .column_by_name(&f.name)
                        .ok_or_else(|| mismatch(&fpath, "no such struct field"))?;
                    self.value(
                        &f.schema,
                        child_ns,
                        child.as_ref(),
                        row,
                        out,
                        &fpath,
                        depth + 1,
                    )?;
                }
                Ok(())
            }
            AvroSchema::Enum(e) => {
                let symbol = string_at(array, row).ok_or_else(|| {
                    mismatch(
                        path,
                        format!("enum needs a string column, found {}", array.data_type()),
                    )
                })?;
                let index = e.symbols.iter().position(|s| s == symbol).ok_or_else(|| {
                    mismatch(
                        path,
                        format!("{symbol:?} is not a symbol of enum {}", e.name.name),
                    )
                })?;
                write_long(out, index as i64);
                Ok(())
            }
            AvroSchema::Array(a) => {
                let items = list_value(array, row).ok_or_else(|| {
                    mismatch(
                        path,
                        format!("array needs a list column, found {}", array.data_type()),
                    )
                })?;
                if !items.is_empty() {
                    write_long(out, items.len() as i64);
                    for i in 0..items.len() {
                        let ipath = Path::Item(path, i);
                        self.value(&a.items, ns, items.as_ref(), i, out, &ipath, depth + 1)?;
                    }
                }
                write_long(out, 0);
                Ok(())
            }
            AvroSchema::Map(m) => {
                let map = array.as_map_opt().ok_or_else(|| {
                    mismatch(
                        path,
                        format!("map needs a map column, found {}", array.data_type()),
                    )
                })?;
                let entries = map.value(row);
                let keys = entries.column(0);
                let values = entries.column(1);
                if !entries.is_empty() {
                    write_long(out, entries.len() as i64);
                    for i in 0..entries.len() {
                        let key = string_at(keys.as_ref(), i)
                            .ok_or_else(|| mismatch(path, "map keys must be non-null strings"))?;
                        write_bytes(out, key.as_bytes());
                        let vpath = Path::MapValue(path, key);
                        self.value(&m.values, ns, values.as_ref(), i, out, &vpath, depth + 1)?;
                    }
                }
                write_long(out, 0);
                Ok(())
            }
            AvroSchema::Fixed(f) => {
                if let Some(LogicalType::Decimal { scale, .. }) = f.logical_type {
                    let unscaled = decimal_at(array, row, scale, path)?;
                    out.extend_from_slice(&decimal_fixed_bytes(unscaled, f.size, path)?);
                    return Ok(());
                }
                let b = array
                    .as_fixed_size_binary_opt()
                    .ok_or_else(|| {
                        mismatch(
                            path,
                            format!(
                                "fixed needs a fixed-size binary column, found {}",
                                array.data_type()
                            ),
                        )
                    })?
                    .value(row);
                if b.len() != f.size {
                    return Err(mismatch(
                        path,
                        format!("{} bytes for fixed({})", b.len(), f.size),
                    ));
                }
                out.extend_from_slice(b);
                Ok(())
            }
        }
    }
}

fn string_at(array: &dyn Array, row: usize) -> Option<&str> {
    if array.is_null(row) {
        return None;
    }
    if let Some(s) = array.as_string_opt::<i32>() {
        return Some(s.value(row));
    }
    array.as_string_opt::<i64>().map(|s| s.value(row))
}

fn list_value(array: &dyn Array, row: usize) -> Option<ArrayRef> {
    if let Some(l) = array.as_list_opt::<i32>() {
        return Some(l.value(row));
    }
    array.as_list_opt::<i64>().map(|l| l.value(row))
}

fn decimal_at(
    array: &dyn Array,
    row: usize,
    scale: u32,
    path: &Path<'_>,
) -> Result<i128, DatumError> {
    let d = array.as_primitive_opt::<Decimal128Type>().ok_or_else(|| {
        mismatch(
            path,
            format!(
                "decimal needs a Decimal128 column, found {}",
                array.data_type()
            ),
        )
    })?;
    if i64::from(d.scale()) != i64::from(scale) {
        return Err(mismatch(
            path,
            format!(
                "column scale {} is not the schema's scale {scale}",
                d.scale()
            ),
        ));
    }
    Ok(d.value(row))
}

/// The shortest two's-complement big-endian bytes of `v` (what Java's `BigInteger.toByteArray` gives).
fn decimal_min_bytes(v: i128) -> Vec<u8> {
    let b = v.to_be_bytes();
    let mut start = 0;
    while start < 15 {
        let (hi, next) = (b[start], b[start + 1]);
        if (hi == 0x00 && next & 0x80 == 0) || (hi == 0xff && next & 0x80 != 0) {
            start += 1;
        } else {
            break;
        }
    }
    b[start..].to_vec()
}

fn decimal_fixed_bytes(v: i128, size: usize, path: &Path<'_>) -> Result<Vec<u8>, DatumError> {
    let min = decimal_min_bytes(v);
    if min.len() > size {
        return Err(mismatch(
            path,
            format!("unscaled {v} needs {} bytes, fixed has {size}", min.len()),
        ));
    }
    let sign = if v < 0 { 0xff } else { 0x00 };
    let mut out = vec![sign; size - min.len()];
    out.extend_from_slice(&min);
    Ok(out)
}

fn primitive(
    p: &PrimitiveSchema,
    array: &dyn Array,
    row: usize,
    out: &mut Vec<u8>,
    path: &Path<'_>,
) -> Result<(), DatumError> {
    let wrong = || {
        mismatch(
            path,
            format!(
                "{} cannot come from a {} column",
                describe(p),
                array.data_type()
            ),
        )
    };
    match (p.primitive, p.logical_type) {
        (PrimitiveType::Null, _) => Ok(()),
        (PrimitiveType::Boolean, None) => {
            let b = array.as_boolean_opt().ok_or_else(wrong)?.value(row);
            out.push(u8::from(b));
            Ok(())
        }
        (PrimitiveType::Int, lt) => {
            let v = match (lt, array.data_type()) {
                (None, DataType::Int32) => array.as_primitive::<Int32Type>().value(row),
                (None, DataType::Int16) => i32::from(array.as_primitive::<Int16Type>().value(row)),
                (None, DataType::Int8) => i32::from(array.as_primitive::<Int8Type>().value(row)),
                (Some(LogicalType::Date), DataType::Date32) => {
                    array.as_primitive::<Date32Type>().value(row)
                }
                (Some(LogicalType::TimeMillis), DataType::Time32(TimeUnit::Millisecond)) => {
                    array.as_primitive::<Time32MillisecondType>().value(row)
                }
                _ => return Err(wrong()),
            };
            write_long(out, i64::from(v));
            Ok(())
        }
        (PrimitiveType::Long, lt) => {
            use LogicalType::*;
            let v = match (lt, array.data_type()) {
                (None, DataType::Int64) => array.as_primitive::<Int64Type>().value(row),
                (Some(TimeMicros), DataType::Time64(TimeUnit::Microsecond)) => {
                    array.as_primitive::<Time64MicrosecondType>().value(row)
                }
                (Some(TimestampMillis), DataType::Timestamp(TimeUnit::Millisecond, Some(_)))
                | (Some(LocalTimestampMillis), DataType::Timestamp(TimeUnit::Millisecond, None)) => {
                    array.as_primitive::<TimestampMillisecondType>().value(row)
                }
                (Some(TimestampMicros), DataType::Timestamp(TimeUnit::Microsecond, Some(_)))
                | (Some(LocalTimestampMicros), DataType::Timestamp(TimeUnit::Microsecond, None)) => {
                    array.as_primitive::<TimestampMicrosecondType>().value(row)
                }
                _ => return Err(wrong()),
            };
            write_long(out, v);
            Ok(())
        }
        (PrimitiveType::Float, None) => {
            let v = array
                .as_primitive_opt::<Float32Type>()
                .ok_or_else(wrong)?
                .value(row);
            write_float(out, v);
            Ok(())
        }
        (PrimitiveType::Double, None) => {
            let v = array
                .as_primitive_opt::<Float64Type>()
                .ok_or_else(wrong)?
                .value(row);
            write_double(out, v);
            Ok(())
        }
        (PrimitiveType::Bytes, None) => {
            let b = if let Some(b) = array.as_binary_opt::<i32>() {
                b.value(row)
            } else {
                array.as_binary_opt::<i64>().ok_or_else(wrong)?.value(row)
            };
            write_bytes(out, b);
            Ok(())
        }
        (PrimitiveType::Bytes, Some(LogicalType::Decimal { scale, .. })) => {
            let v = decimal_at(array, row, scale, path)?;
            write_bytes(out, &decimal_min_bytes(v));
            Ok(())
        }
        (PrimitiveType::String, None | Some(LogicalType::Uuid)) => {
            let s = string_at(array, row).ok_or_else(wrong)?;
            write_bytes(out, s.as_bytes());
            Ok(())
        }
        _ => Err(wrong()),
    }
}

fn describe(p: &PrimitiveSchema) -> String {
    match p.logical_type {
        Some(lt) => format!("{} ({})", p.primitive.name(), lt.name()),
        None => p.primitive.name().to_string(),
    }
}
