//! Avro binary datums → Arrow arrays: each datum is decoded under the writer schema into an
//! [`AvroValue`] (unions resolved to their branch's value), then the values of a column are built into the
//! Arrow array [`avro_to_arrow`](super::avro_to_arrow) maps the field to.

use std::sync::Arc;

use arrow_array::builder::{BooleanBuilder, StringBuilder};
use arrow_array::types::*;
use arrow_array::{
    ArrayRef, BinaryArray, Decimal128Array, FixedSizeBinaryArray, Float32Array, Float64Array,
    ListArray, MapArray, PrimitiveArray, RecordBatch, StructArray,
};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, Fields, SchemaRef, TimeUnit};

use super::datum::{mismatch, Cursor, DatumError, Path, MAX_DEPTH};
use crate::avro::schema::{namespace_of, AvroSchema, NamedTypes, PrimitiveType, RecordSchema};
use crate::avro::AvroValue;

/// Items of zero encoded size (nulls, empty records) one datum may declare beyond its byte count.
const ZERO_SIZE_ITEMS: usize = 1 << 16;

/// Decodes Avro binary datums of one record schema into the columns of one Arrow record batch.
pub struct DatumDecoder<'s> {
    values: Decoder<'s>,
    record: &'s RecordSchema,
    ns: Option<String>,
    arrow_schema: SchemaRef,
    columns: Vec<Vec<AvroValue>>,
    row: Vec<AvroValue>,
    rows: usize,
}

impl<'s> DatumDecoder<'s> {
    /// A decoder of datums written under `record`, whose named types are `names` (from validating the
    /// schema `record` is the top of), into a batch of `arrow_schema` ([`avro_to_arrow`](super::avro_to_arrow)
    /// of that schema); `capacity` is the number of datums expected.
    pub fn new(
        names: NamedTypes<'s>,
        record: &'s RecordSchema,
        arrow_schema: SchemaRef,
        capacity: usize,
    ) -> Self {
        DatumDecoder {
            values: Decoder { names },
            record,
            ns: namespace_of(&record.name.fullname(None)).map(str::to_string),
            arrow_schema,
            columns: record
                .fields
                .iter()
                .map(|_| Vec::with_capacity(capacity))
                .collect(),
            row: Vec::with_capacity(record.fields.len()),
            rows: 0,
        }
    }

    /// Decodes one whole datum, all or nothing: bytes left after the record are an error. `base` is the
    /// datum's offset in the caller's bytes, which error offsets count from.
    pub fn append(&mut self, datum: &[u8], base: usize) -> Result<(), DatumError> {
        let mut r = Cursor::at(datum, base);
        let mut budget = datum.len() + ZERO_SIZE_ITEMS;
        let mut row = std::mem::take(&mut self.row);
        row.clear();
        for field in &self.record.fields {
            let path = Path::Field(&Path::Root, &field.name);
            row.push(self.values.value(
                &mut r,
                &field.schema,
                self.ns.as_deref(),
                &path,
                0,
                &mut budget,
            )?);
        }
        if r.remaining() > 0 {
            return Err(r.corrupt(format!("{} bytes after the record", r.remaining())));
        }
        for (column, value) in self.columns.iter_mut().zip(row.drain(..)) {
            column.push(value);
        }
        self.row = row;
        self.rows += 1;
        Ok(())
    }

    /// The record batch of the datums appended.
    pub fn finish(self) -> Result<RecordBatch, DatumError> {
        let arrays = self
            .arrow_schema
            .fields()
            .iter()
            .zip(&self.columns)
            .map(|(f, values)| {
                let refs: Vec<&AvroValue> = values.iter().collect();
                build(f.data_type(), &refs, &Path::Field(&Path::Root, f.name()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(self.rows));
        Ok(RecordBatch::try_new_with_options(
            self.arrow_schema,
            arrays,
            &options,
        )?)
    }
}

struct Decoder<'s> {
    names: NamedTypes<'s>,
}

impl<'s> Decoder<'s> {
    /// One value; unions are resolved to the value of their branch (a null branch gives `Null`).
    fn value(
        &self,
        c: &mut Cursor<'_>,
        schema: &'s AvroSchema,
        ns: Option<&str>,
        path: &Path<'_>,
        depth: usize,
        budget: &mut usize,
    ) -> Result<AvroValue, DatumError> {
        if depth > MAX_DEPTH {
            return Err(DatumError::TooDeep {
                path: path.render(),
                limit: MAX_DEPTH,
            });
        }
        Ok(match schema {
            AvroSchema::Union(branches) => {
                let index = c.long("a union branch")?;
                let branch = usize::try_from(index)
                    .ok()
                    .and_then(|i| branches.get(i))
                    .ok_or_else(|| {
                        c.corrupt(format!(
                            "union branch {index} at {} does not exist",
                            path.render()
                        ))
                    })?;
                return self.value(c, branch, ns, path, depth + 1, budget);
            }
            AvroSchema::Reference(name) => {
                let (full, target) = self
                    .names
                    .resolve(name, ns)
                    .ok_or_else(|| mismatch(path, format!("{name} is not a defined type")))?;
                let target_ns = namespace_of(&full).map(str::to_string);
                return self.value(c, target, target_ns.as_deref(), path, depth + 1, budget);
            }
            AvroSchema::Primitive(p) => match p.primitive {
                PrimitiveType::Null => AvroValue::Null,
                PrimitiveType::Boolean => AvroValue::Boolean(c.boolean("a boolean")?),
                PrimitiveType::Int => AvroValue::Int(c.int("an int")?),
                PrimitiveType::Long => AvroValue::Long(c.long("a long")?),
                PrimitiveType::Float => AvroValue::Float(c.float("a float")?),
                PrimitiveType::Double => AvroValue::Double(c.double("a double")?),
                PrimitiveType::Bytes => AvroValue::Bytes(c.bytes("bytes")?.to_vec()),
                PrimitiveType::String => AvroValue::String(c.string("a string")?),
            },
            AvroSchema::Record(r) => {
                let full = r.name.fullname(ns);
                let child_ns = namespace_of(&full);
                let mut fields = Vec::with_capacity(r.fields.len());
                for f in &r.fields {
                    let fpath = Path::Field(path, &f.name);
                    fields.push((
                        f.name.clone(),
                        self.value(c, &f.schema, child_ns, &fpath, depth + 1, budget)?,
                    ));
                }
                AvroValue::Record(fields)
            }
            AvroSchema::Enum(e) => {
                let index = c.long("an enum index")?;
                let symbol = usize::try_from(index)
                    .ok()
                    .and_then(|i| e.symbols.get(i))
                    .ok_or_else(|| {
                        c.corrupt(format!(
                            "enum index {index} at {} does not exist",
                            path.render()
                        ))
                    })?;
                AvroValue::Enum(index as u32, symbol.clone())
            }
            AvroSchema::Array(a) => {
                let mut items = Vec::new();
                loop {
                    let n = c.block_count("an array block count", 0, budget)?;
                    if n == 0 {
                        break;
                    }
                    for _ in 0..n {
                        let ipath = Path::Item(path, items.len());
                        items.push(self.value(c, &a.items, ns, &ipath, depth + 1, budget)?);
                    }
                }
                AvroValue::Array(items)
            }
            AvroSchema::Map(m) => {
                let mut entries = Vec::new();
                loop {
                    // Every entry has at least its key's length byte.
                    let n = c.block_count("a map block count", 1, budget)?;
                    if n == 0 {
                        break;
                    }
                    for _ in 0..n {
                        let key = c.string("a map key")?;
                        let vpath = Path::MapValue(path, &key);
                        let value = self.value(c, &m.values, ns, &vpath, depth + 1, budget)?;
                        entries.push((key, value));
                    }
                }
                AvroValue::Map(entries)
            }
            AvroSchema::Fixed(f) => AvroValue::Bytes(c.take(f.size, "a fixed")?.to_vec()),
        })
    }
}

static NULL: AvroValue = AvroValue::Null;

fn nulls_of(values: &[&AvroValue]) -> Option<NullBuffer> {
    if values.iter().any(|v| v.is_null()) {
        Some(NullBuffer::from(
            values.iter().map(|v| !v.is_null()).collect::<Vec<_>>(),
        ))
    } else {
        None
    }
}

fn prim<T: ArrowPrimitiveType>(
    values: &[&AvroValue],
    path: &Path<'_>,
    get: impl Fn(&AvroValue) -> Option<T::Native>,
) -> Result<PrimitiveArray<T>, DatumError> {
    values
        .iter()
        .map(|v| match v {
            AvroValue::Null => Ok(None),
            other => get(other).map(Some).ok_or_else(|| {
                mismatch(
                    path,
                    format!("{} for a {} column", other.kind(), T::DATA_TYPE),
                )
            }),
        })
        .collect()
}

fn int(v: &AvroValue) -> Option<i32> {
    match v {
        AvroValue::Int(i) => Some(*i),
        _ => None,
    }
}

fn long(v: &AvroValue) -> Option<i64> {
    match v {
        AvroValue::Long(i) => Some(*i),
        _ => None,
    }
}

/// Two's-complement big-endian bytes as an i128 (at most 16 bytes, or sign extension beyond).
fn unscaled(bytes: &[u8]) -> Option<i128> {
    let negative = bytes.first().is_some_and(|b| b & 0x80 != 0);
    let sign = if negative { 0xff } else { 0x00 };
    let (extra, rest) = bytes.split_at(bytes.len().saturating_sub(16));
    if extra.iter().any(|&b| b != sign) {
        return None;
    }
    let mut a = [sign; 16];
    a[16 - rest.len()..].copy_from_slice(rest);
    Some(i128::from_be_bytes(a))
}

/// One Arrow array of `data_type` from decoded values (`Null` for a null).
fn build(
    data_type: &DataType,
    values: &[&AvroValue],
    path: &Path<'_>,
) -> Result<ArrayRef, DatumError> {
    let wrong = |v: &AvroValue| mismatch(path, format!("{} for a {data_type} column", v.kind()));
    Ok(match data_type {
        DataType::Boolean => {
            let mut b = BooleanBuilder::with_capacity(values.len());
            for v in values {
                match v {
                    AvroValue::Null => b.append_null(),
                    AvroValue::Boolean(x) => b.append_value(*x),
                    other => return Err(wrong(other)),
                }
            }
            Arc::new(b.finish())
        }
        DataType::Int32 => Arc::new(prim::<Int32Type>(values, path, int)?),
        DataType::Date32 => Arc::new(prim::<Date32Type>(values, path, int)?),
        DataType::Time32(TimeUnit::Millisecond) => {
            Arc::new(prim::<Time32MillisecondType>(values, path, int)?)
        }
        DataType::Int64 => Arc::new(prim::<Int64Type>(values, path, long)?),
        DataType::Time64(TimeUnit::Microsecond) => {
            Arc::new(prim::<Time64MicrosecondType>(values, path, long)?)
        }
        DataType::Timestamp(TimeUnit::Millisecond, tz) => Arc::new(
            prim::<TimestampMillisecondType>(values, path, long)?.with_timezone_opt(tz.clone()),
        ),
        DataType::Timestamp(TimeUnit::Microsecond, tz) => Arc::new(
            prim::<TimestampMicrosecondType>(values, path, long)?.with_timezone_opt(tz.clone()),
        ),
        DataType::Float32 => {
            let a: Float32Array = prim::<Float32Type>(values, path, |v| match v {
                AvroValue::Float(x) => Some(*x),
                _ => None,
            })?;
            Arc::new(a)
        }
        DataType::Float64 => {
            let a: Float64Array = prim::<Float64Type>(values, path, |v| match v {
                AvroValue::Double(x) => Some(*x),
                _ => None,
            })?;
            Arc::new(a)
        }
        DataType::Utf8 => {
            let mut b = StringBuilder::with_capacity(values.len(), 0);
            for v in values {
                match v {
                    AvroValue::Null => b.append_null(),
                    AvroValue::String(s) | AvroValue::Enum(_, s) => b.append_value(s),
                    other => return Err(wrong(other)),
                }
            }
            Arc::new(b.finish())
        }
        DataType::Binary => {
            let items = values
                .iter()
                .map(|v| match v {
                    AvroValue::Null => Ok(None),
                    AvroValue::Bytes(b) => Ok(Some(b.as_slice())),
                    other => Err(wrong(other)),
                })
                .collect::<Result<Vec<_>, _>>()?;
            Arc::new(BinaryArray::from_opt_vec(items))
        }
        DataType::FixedSizeBinary(size) => {
            let items = values
                .iter()
                .map(|v| match v {
                    AvroValue::Null => Ok(None),
                    AvroValue::Bytes(b) => Ok(Some(b.as_slice())),
                    other => Err(wrong(other)),
                })
                .collect::<Result<Vec<_>, _>>()?;
            Arc::new(FixedSizeBinaryArray::try_from_sparse_iter_with_size(
                items.into_iter(),
                *size,
            )?)
        }
        DataType::Decimal128(p, s) => {
            let items = values
                .iter()
                .map(|v| match v {
                    AvroValue::Null => Ok(None),
                    AvroValue::Bytes(b) => unscaled(b).map(Some).ok_or_else(|| {
                        mismatch(path, format!("{} decimal bytes exceed 128 bits", b.len()))
                    }),
                    other => Err(wrong(other)),
                })
                .collect::<Result<Vec<_>, _>>()?;
            Arc::new(Decimal128Array::from(items).with_precision_and_scale(*p, *s)?)
        }
        DataType::Struct(fields) => build_struct(fields, values, path)?,
        DataType::List(item) => {
            let mut offsets = Vec::with_capacity(values.len() + 1);
            offsets.push(0i32);
            let mut children: Vec<&AvroValue> = Vec::new();
            for v in values {
                match v {
                    AvroValue::Null => {}
                    AvroValue::Array(items) => children.extend(items.iter()),
                    other => return Err(wrong(other)),
                }
                offsets.push(offset_i32(children.len(), path)?);
            }
            let ipath = Path::Item(path, 0);
            let child = build(item.data_type(), &children, &ipath)?;
            Arc::new(ListArray::try_new(
                item.clone(),
                OffsetBuffer::new(offsets.into()),
                child,
                nulls_of(values),
            )?)
        }
        DataType::Map(entries_field, sorted) => {
            let DataType::Struct(kv) = entries_field.data_type() else {
                return Err(mismatch(path, "map entries are not a struct"));
            };
            let (Some(_), Some(value_field)) = (kv.first(), kv.get(1)) else {
                return Err(mismatch(path, "map entries need a key and a value"));
            };
            let mut offsets = Vec::with_capacity(values.len() + 1);
            offsets.push(0i32);
            let mut keys = StringBuilder::new();
            let mut vals: Vec<&AvroValue> = Vec::new();
            for v in values {
                match v {
                    AvroValue::Null => {}
                    AvroValue::Map(entries) => {
                        for (k, val) in entries {
                            keys.append_value(k);
                            vals.push(val);
                        }
                    }
                    other => return Err(wrong(other)),
                }
                offsets.push(offset_i32(vals.len(), path)?);
            }
            let vpath = Path::MapValue(path, "");
            let value_array = build(value_field.data_type(), &vals, &vpath)?;
            let key_array: ArrayRef = Arc::new(keys.finish());
            let entries = StructArray::try_new(kv.clone(), vec![key_array, value_array], None)?;
            Arc::new(MapArray::try_new(
                entries_field.clone(),
                OffsetBuffer::new(offsets.into()),
                entries,
                nulls_of(values),
                *sorted,
            )?)
        }
        other => return Err(mismatch(path, format!("no Avro decoding into {other}"))),
    })
}

fn offset_i32(n: usize, path: &Path<'_>) -> Result<i32, DatumError> {
    i32::try_from(n).map_err(|_| mismatch(path, "more than i32::MAX nested items"))
}

fn build_struct(
    fields: &Fields,
    values: &[&AvroValue],
    path: &Path<'_>,
) -> Result<ArrayRef, DatumError> {
    let mut children = Vec::with_capacity(fields.len());
    for (i, f) in fields.iter().enumerate() {
        let child_values = values
            .iter()
            .map(|v| match v {
                AvroValue::Null => Ok(&NULL),
                AvroValue::Record(fs) => fs
                    .get(i)
                    .map(|(_, v)| v)
                    .ok_or_else(|| mismatch(path, format!("record has no field {}", f.name()))),
                other => Err(mismatch(
                    path,
                    format!("{} for a struct column", other.kind()),
                )),
            })
            .collect::<Result<Vec<_>, _>>()?;
        children.push(build(
            f.data_type(),
            &child_values,
            &Path::Field(path, f.name()),
        )?);
    }
    Ok(Arc::new(StructArray::try_new(
        fields.clone(),
        children,
        nulls_of(values),
    )?))
}
