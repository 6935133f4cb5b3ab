//! Column buffers that can be truncated (the rollback of a refused record), shared by the JSON and Avro readers.

use super::*;

/// Offsets and bytes of a string/binary column.
#[derive(Debug)]
pub(super) struct VarData {
    pub(super) offsets: Vec<i32>,
    pub(super) bytes: Vec<u8>,
}

impl VarData {
    pub(super) fn new() -> Self {
        VarData {
            offsets: vec![0],
            bytes: Vec::new(),
        }
    }

    /// Closes the value whose bytes were appended since the last call.
    pub(super) fn close(&mut self) -> Result<(), Fail> {
        let end = i32::try_from(self.bytes.len())
            .map_err(|_| Fail::new(RecordDecodeReason::ColumnFull))?;
        self.offsets.push(end);
        Ok(())
    }

    pub(super) fn push(&mut self, value: &[u8]) -> Result<(), Fail> {
        self.bytes.extend_from_slice(value);
        self.close()
    }

    pub(super) fn truncate(&mut self, len: usize) {
        self.offsets.truncate(len + 1);
        let end = self.offsets.last().copied().unwrap_or(0);
        self.bytes.truncate(usize::try_from(end).unwrap_or(0));
    }

    pub(super) fn take(&mut self) -> Result<(OffsetBuffer<i32>, Buffer), ArrowError> {
        let taken = std::mem::replace(self, VarData::new());
        Ok((offset_buffer(taken.offsets)?, Buffer::from_vec(taken.bytes)))
    }
}

/// Checks what `OffsetBuffer::new` asserts, so that a bug here is an error rather than a panic.
pub(super) fn offset_buffer(offsets: Vec<i32>) -> Result<OffsetBuffer<i32>, ArrowError> {
    let valid =
        offsets.first().is_some_and(|&o| o >= 0) && offsets.windows(2).all(|w| w[0] <= w[1]);
    if !valid {
        return Err(ArrowError::InvalidArgumentError(
            "decoder produced invalid offsets".to_string(),
        ));
    }
    Ok(OffsetBuffer::new(ScalarBuffer::from(offsets)))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum IntKind {
    Int,
    Date,
    TimeMillis,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum LongKind {
    Long,
    TimeMicros,
    Timestamp {
        unit: TimeUnit,
        timezone: Option<Arc<str>>,
    },
}

/// What a field missing from an object becomes.
#[derive(Debug, Clone)]
pub(super) enum Missing {
    Default(DefaultValue),
    Null,
    Required,
}

/// An Avro default, converted once to the column's physical values.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum DefaultValue {
    Null,
    Bool(bool),
    I32(i32),
    I64(i64),
    F32(f32),
    F64(f64),
    I128(i128),
    Bytes(Vec<u8>),
    Struct(Vec<DefaultValue>),
    List(Vec<DefaultValue>),
    Map(Vec<(String, DefaultValue)>),
}

#[derive(Debug)]
pub(super) struct Slot {
    pub(super) name: String,
    pub(super) column: Column,
    pub(super) missing: Missing,
    pub(super) seen: bool,
}

#[derive(Debug)]
pub(super) struct StructData {
    pub(super) fields: Fields,
    pub(super) slots: Vec<Slot>,
    /// Field name → slot index, built once.
    pub(super) index: HashMap<String, usize>,
}

#[derive(Debug)]
pub(super) enum Data {
    Boolean(BooleanBufferBuilder),
    Int32(Vec<i32>, IntKind),
    Int64(Vec<i64>, LongKind),
    Float32(Vec<f32>),
    Float64(Vec<f64>),
    Decimal(Vec<i128>, u8, i8),
    /// With the enum symbols when the Avro type is an enum.
    Utf8(VarData, Option<HashSet<String>>),
    Binary(VarData),
    Fixed(Vec<u8>, usize),
    Struct(StructData),
    List {
        offsets: Vec<i32>,
        item: Box<Column>,
        field: FieldRef,
    },
    Map {
        offsets: Vec<i32>,
        keys: VarData,
        values: Box<Column>,
        entries: FieldRef,
        entry_fields: Fields,
    },
}

/// One column (or nested child) being built.
#[derive(Debug)]
pub(super) struct Column {
    /// The type in messages (`long`, `decimal(10,2)`, `record trips_record`: [`type_label`]).
    pub(super) expected: String,
    /// `Some` exactly when the column is nullable.
    pub(super) nulls: Option<NullBufferBuilder>,
    pub(super) len: usize,
    pub(super) data: Data,
}

/// Per-append counters, added to the decoder's totals only when the record is accepted.
#[derive(Debug, Default)]
pub(super) struct Stats {
    pub(super) ignored_fields: u64,
}

impl Column {
    pub(super) fn new(expected: String, nullable: bool, data: Data) -> Self {
        Column {
            expected,
            nulls: nullable.then(|| NullBufferBuilder::new(0)),
            len: 0,
            data,
        }
    }

    /// Records a valid slot whose data was just appended.
    pub(super) fn mark_valid(&mut self) {
        if let Some(nulls) = &mut self.nulls {
            nulls.append_non_null();
        }
        self.len += 1;
    }

    /// Appends a slot under a null parent or for a null value: null if nullable, else a zero value (masked by
    /// the parent's null).
    pub(super) fn append_empty(&mut self) -> Result<(), Fail> {
        match &mut self.data {
            Data::Boolean(b) => b.append(false),
            Data::Int32(v, _) => v.push(0),
            Data::Int64(v, _) => v.push(0),
            Data::Float32(v) => v.push(0.0),
            Data::Float64(v) => v.push(0.0),
            Data::Decimal(v, _, _) => v.push(0),
            Data::Utf8(v, _) | Data::Binary(v) => v.push(&[])?,
            Data::Fixed(v, size) => v.resize(v.len() + *size, 0),
            Data::Struct(s) => {
                for slot in &mut s.slots {
                    slot.column.append_empty()?;
                }
            }
            Data::List { offsets, .. } | Data::Map { offsets, .. } => {
                let last = offsets.last().copied().unwrap_or(0);
                offsets.push(last);
            }
        }
        if let Some(nulls) = &mut self.nulls {
            nulls.append_null();
        }
        self.len += 1;
        Ok(())
    }

    /// Truncates to `len` slots, children included. Buffers are cut even when `self.len` is already `len`: a
    /// value that failed half-way (a map key pushed before its value failed, base64 bytes before a size check)
    /// leaves data beyond the last counted slot.
    pub(super) fn truncate(&mut self, len: usize) {
        if let Some(nulls) = &mut self.nulls {
            nulls.truncate(len);
        }
        match &mut self.data {
            Data::Boolean(b) => b.truncate(len),
            Data::Int32(v, _) => v.truncate(len),
            Data::Int64(v, _) => v.truncate(len),
            Data::Float32(v) => v.truncate(len),
            Data::Float64(v) => v.truncate(len),
            Data::Decimal(v, _, _) => v.truncate(len),
            Data::Utf8(v, _) | Data::Binary(v) => v.truncate(len),
            Data::Fixed(v, size) => v.truncate(len * *size),
            Data::Struct(s) => {
                for slot in &mut s.slots {
                    slot.column.truncate(len);
                }
            }
            Data::List { offsets, item, .. } => {
                offsets.truncate(len + 1);
                let end = offsets.last().copied().unwrap_or(0);
                item.truncate(usize::try_from(end).unwrap_or(0));
            }
            Data::Map {
                offsets,
                keys,
                values,
                ..
            } => {
                offsets.truncate(len + 1);
                let end = usize::try_from(offsets.last().copied().unwrap_or(0)).unwrap_or(0);
                keys.truncate(end);
                values.truncate(end);
            }
        }
        self.len = self.len.min(len);
    }
}

impl Column {
    /// Appends a compiled default.
    pub(super) fn append_default(&mut self, value: &DefaultValue) -> Result<(), Fail> {
        let mismatch = || {
            Fail::new(RecordDecodeReason::InvalidValue {
                value: format!("{value:?}"),
                expected: self.expected.clone(),
                detail: "internal error: default compiled for another type".to_string(),
            })
        };
        if *value == DefaultValue::Null {
            if self.nulls.is_none() {
                return Err(mismatch());
            }
            return self.append_empty();
        }
        match (&mut self.data, value) {
            (Data::Boolean(b), DefaultValue::Bool(x)) => b.append(*x),
            (Data::Int32(v, _), DefaultValue::I32(x)) => v.push(*x),
            (Data::Int64(v, _), DefaultValue::I64(x)) => v.push(*x),
            (Data::Float32(v), DefaultValue::F32(x)) => v.push(*x),
            (Data::Float64(v), DefaultValue::F64(x)) => v.push(*x),
            (Data::Decimal(v, _, _), DefaultValue::I128(x)) => v.push(*x),
            (Data::Utf8(v, _) | Data::Binary(v), DefaultValue::Bytes(x)) => v.push(x)?,
            (Data::Fixed(v, size), DefaultValue::Bytes(x)) if x.len() == *size => {
                v.extend_from_slice(x)
            }
            (Data::Struct(s), DefaultValue::Struct(values)) if values.len() == s.slots.len() => {
                for (slot, value) in s.slots.iter_mut().zip(values) {
                    slot.column.append_default(value)?;
                }
            }
            (Data::List { offsets, item, .. }, DefaultValue::List(values)) => {
                for value in values {
                    item.append_default(value)?;
                }
                offsets.push(
                    i32::try_from(item.len)
                        .map_err(|_| Fail::new(RecordDecodeReason::ColumnFull))?,
                );
            }
            (
                Data::Map {
                    offsets,
                    keys,
                    values,
                    ..
                },
                DefaultValue::Map(entries),
            ) => {
                for (key, value) in entries {
                    keys.push(key.as_bytes())?;
                    values.append_default(value)?;
                }
                offsets.push(
                    i32::try_from(values.len)
                        .map_err(|_| Fail::new(RecordDecodeReason::ColumnFull))?,
                );
            }
            _ => return Err(mismatch()),
        }
        self.mark_valid();
        Ok(())
    }

    /// Hands out the array built so far and leaves the column empty.
    pub(super) fn finish(&mut self, data_type: &DataType) -> Result<ArrayRef, ArrowError> {
        let nulls = self.nulls.as_mut().and_then(NullBufferBuilder::finish);
        let len = std::mem::take(&mut self.len);
        let array: ArrayRef = match &mut self.data {
            Data::Boolean(b) => Arc::new(BooleanArray::new(b.finish(), nulls)),
            Data::Int32(v, kind) => {
                let values = ScalarBuffer::from(std::mem::take(v));
                match kind {
                    IntKind::Int => Arc::new(PrimitiveArray::<Int32Type>::try_new(values, nulls)?),
                    IntKind::Date => {
                        Arc::new(PrimitiveArray::<Date32Type>::try_new(values, nulls)?)
                    }
                    IntKind::TimeMillis => Arc::new(
                        PrimitiveArray::<Time32MillisecondType>::try_new(values, nulls)?,
                    ),
                }
            }
            Data::Int64(v, kind) => {
                let values = ScalarBuffer::from(std::mem::take(v));
                match kind {
                    LongKind::Long => {
                        Arc::new(PrimitiveArray::<Int64Type>::try_new(values, nulls)?)
                    }
                    LongKind::TimeMicros => Arc::new(
                        PrimitiveArray::<Time64MicrosecondType>::try_new(values, nulls)?,
                    ),
                    LongKind::Timestamp { unit, timezone } => match unit {
                        TimeUnit::Millisecond => Arc::new(
                            PrimitiveArray::<TimestampMillisecondType>::try_new(values, nulls)?
                                .with_timezone_opt(timezone.clone()),
                        ),
                        TimeUnit::Microsecond => Arc::new(
                            PrimitiveArray::<TimestampMicrosecondType>::try_new(values, nulls)?
                                .with_timezone_opt(timezone.clone()),
                        ),
                        other => {
                            return Err(ArrowError::InvalidArgumentError(format!(
                                "timestamp unit {other:?} is not written by this decoder"
                            )))
                        }
                    },
                }
            }
            Data::Float32(v) => Arc::new(PrimitiveArray::<Float32Type>::try_new(
                ScalarBuffer::from(std::mem::take(v)),
                nulls,
            )?),
            Data::Float64(v) => Arc::new(PrimitiveArray::<Float64Type>::try_new(
                ScalarBuffer::from(std::mem::take(v)),
                nulls,
            )?),
            Data::Decimal(v, precision, scale) => Arc::new(
                PrimitiveArray::<Decimal128Type>::try_new(
                    ScalarBuffer::from(std::mem::take(v)),
                    nulls,
                )?
                .with_precision_and_scale(*precision, *scale)?,
            ),
            Data::Utf8(v, _) => {
                let (offsets, bytes) = v.take()?;
                Arc::new(StringArray::try_new(offsets, bytes, nulls)?)
            }
            Data::Binary(v) => {
                let (offsets, bytes) = v.take()?;
                Arc::new(BinaryArray::try_new(offsets, bytes, nulls)?)
            }
            Data::Fixed(v, size) => {
                let size = i32::try_from(*size)
                    .map_err(|_| ArrowError::InvalidArgumentError("fixed size too large".into()))?;
                Arc::new(FixedSizeBinaryArray::try_new_with_len(
                    size,
                    Buffer::from_vec(std::mem::take(v)),
                    nulls,
                    len,
                )?)
            }
            Data::Struct(s) => Arc::new(s.finish(nulls, len)?),
            Data::List {
                offsets,
                item,
                field,
            } => {
                let offsets = offset_buffer(std::mem::replace(offsets, vec![0]))?;
                let values = item.finish(field.data_type())?;
                Arc::new(ListArray::try_new(field.clone(), offsets, values, nulls)?)
            }
            Data::Map {
                offsets,
                keys,
                values,
                entries,
                entry_fields,
            } => {
                let offsets = offset_buffer(std::mem::replace(offsets, vec![0]))?;
                let (key_offsets, key_bytes) = keys.take()?;
                let entry_count = key_offsets.len() - 1;
                let key_array: ArrayRef =
                    Arc::new(StringArray::try_new(key_offsets, key_bytes, None)?);
                let value_type = entry_fields
                    .get(1)
                    .map(|f| f.data_type().clone())
                    .ok_or_else(|| {
                        ArrowError::InvalidArgumentError("map entries need two fields".into())
                    })?;
                let value_array = values.finish(&value_type)?;
                let entries_array = StructArray::try_new_with_length(
                    entry_fields.clone(),
                    vec![key_array, value_array],
                    None,
                    entry_count,
                )?;
                Arc::new(MapArray::try_new(
                    entries.clone(),
                    offsets,
                    entries_array,
                    nulls,
                    false,
                )?)
            }
        };
        if array.data_type() != data_type {
            return Err(ArrowError::InvalidArgumentError(format!(
                "decoder built {} for a {data_type} column",
                array.data_type()
            )));
        }
        Ok(array)
    }
}

impl StructData {
    /// Fills every slot the record did not set (`seen` false): its default, else null, else the record is
    /// refused naming the field. Both readers end a record with it.
    pub(super) fn fill_missing(&mut self) -> Result<(), Fail> {
        for slot in &mut self.slots {
            if slot.seen {
                continue;
            }
            let result = match &slot.missing {
                Missing::Default(value) => slot.column.append_default(value),
                Missing::Null => slot.column.append_empty(),
                Missing::Required => Err(Fail::new(RecordDecodeReason::MissingField)),
            };
            result.map_err(|f| f.at(Segment::Field(slot.name.clone())))?;
        }
        Ok(())
    }

    pub(super) fn finish(
        &mut self,
        nulls: Option<arrow_buffer::NullBuffer>,
        len: usize,
    ) -> Result<StructArray, ArrowError> {
        let arrays = self
            .slots
            .iter_mut()
            .zip(self.fields.iter())
            .map(|(slot, field)| slot.column.finish(field.data_type()))
            .collect::<Result<Vec<_>, _>>()?;
        StructArray::try_new_with_length(self.fields.clone(), arrays, nulls, len)
    }
}
