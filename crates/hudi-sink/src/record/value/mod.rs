//! The string form of one value, exactly as Hudi's Avro key generators print it.
//!
//! Record keys and partition paths are compared byte for byte by every later Hudi writer (an upsert finds the
//! existing record by `(partition path, _hoodie_record_key)`), so the text must be what
//! `HoodieAvroUtils.getNestedFieldValAsString` followed by `StringUtils.objToString` gives for the Avro value that
//! Hudi would hold for the same column:
//!
//! | Arrow type (Avro type) | text |
//! |---|---|
//! | integers (`int`, `long`) | decimal, `-` for negatives |
//! | `Boolean` | `true` / `false` |
//! | `Float64` / `Float32` | Java `Double.toString` / `Float.toString` of JDK 8–18 (`1.0E10`, `0.1`, `NaN`, `-0.0`, `4.9E-324`) |
//! | strings, dictionary of strings (`string`, `enum`) | as is |
//! | `Date32` / `Date64` (`date`) | `java.time.LocalDate.toString` (`2023-04-01`, `+10000-01-01`, `-0001-01-01`) |
//! | `Timestamp` (`timestamp-millis`/`-micros`) | the stored number (Hudi's default); with the consistent-logical-timestamp option, `java.sql.Timestamp.toString` in UTC |
//! | `Time32` / `Time64` (`time-*`) | the stored number |
//! | decimals (`decimal`) | Java `BigDecimal.toString` (`12345.67890`, `1E+3`, `1.0E-7`) |
//! | binary (`bytes`) | lower-case hex of the bytes |
//! | `FixedSizeBinary` (`fixed`) | `java.util.Arrays.toString` of the signed bytes (`[1, -2]`) |
//!
//! Nested fields are addressed by dot path (`structField.child_struct.child_field1`); a null struct on the way
//! makes the value null, as in Hudi. Paths are resolved to column indices once ([`FieldPath::resolve`]); per value
//! the text is appended to a caller-provided `String`, so that no allocation happens per record.
//!
//! Floats need care: JDK 8–18 (the JVMs Hudi 0.14–1.0 run on) do not print the shortest decimal for many values
//! (`2.0E23` prints as `1.9999999999999998E23`), so their digit generation is reproduced here, and checked against a
//! live JVM by `tests/it/bucket_jvm.rs`. JDK 19 and later print the shortest decimal; a table written by Hudi on
//! such a JVM can differ for those values.
//!
//! Invariants: [`write_value`] appends only on success and only for non-null values; it returns the byte range it
//! appended. Types without a defined key text (lists, maps, structs as leaves, intervals, half floats) are refused
//! when the path is resolved, never per record.

use std::fmt::Write as _;
use std::ops::Range;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Date64Type, Decimal128Type, Decimal256Type, Decimal32Type, Decimal64Type,
    Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, Time32MillisecondType,
    Time32SecondType, Time64MicrosecondType, Time64NanosecondType, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrowPrimitiveType, RecordBatch};
use arrow_schema::{DataType, Schema, TimeUnit};
use chrono::{Datelike, NaiveDate, Timelike};
use thiserror::Error;

mod float;
mod java;
#[cfg(test)]
mod tests;

use float::*;
pub use float::{write_java_double, write_java_float};
use java::*;
pub use java::{
    write_hex, write_java_big_decimal, write_java_byte_array, write_java_local_date,
    write_java_sql_timestamp,
};

/// Days from 0001-01-01 (chrono's day 1 of the common era) to 1970-01-01.
const UNIX_EPOCH_DAYS_FROM_CE: i32 = 719_163;
const MILLIS_PER_DAY: i64 = 86_400_000;

/// Why a value has no key text, or a field path does not resolve.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ValueError {
    /// A part of a dot path names no field of the schema or struct it is looked up in.
    #[error("field `{path}`: no field named `{part}` (available: {available})")]
    FieldNotFound {
        /// The full dot path.
        path: String,
        /// The part that was not found.
        part: String,
        /// The field names that were available at that level, comma separated.
        available: String,
    },
    /// A dot path descends into a column that is not a struct.
    #[error("field `{path}`: `{part}` is of type {data_type}, not a struct, so the path cannot descend into it")]
    NotAStruct {
        /// The full dot path.
        path: String,
        /// The part that is not a struct.
        part: String,
        /// Its Arrow type.
        data_type: String,
    },
    /// The field's type has no key text in Hudi (or none that can be reproduced exactly).
    #[error("field `{path}`: type {data_type} cannot be used in a record key or partition path: {reason}")]
    UnsupportedType {
        /// The dot path (or a description of the value) whose type is refused.
        path: String,
        /// The Arrow type.
        data_type: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// The batch does not have the shape the path was resolved against.
    #[error("the record batch does not match the schema the field paths were resolved against: {detail}")]
    SchemaMismatch {
        /// What differs.
        detail: String,
    },
    /// The row index is past the end of the array.
    #[error("row {row} is out of range for an array of {len} rows")]
    RowOutOfRange {
        /// The row asked for.
        row: usize,
        /// The array length.
        len: usize,
    },
    /// The value exists but cannot be printed the way Java would print it (outside the supported range).
    #[error("{what} {value} is outside the range whose text can be reproduced exactly")]
    OutOfRange {
        /// Which kind of value.
        what: &'static str,
        /// The value, as stored.
        value: String,
    },
}

/// Options of the Hudi write config that change how a value is printed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ValueOptions {
    /// `hoodie.datasource.write.keygenerator.consistent.logical.timestamp.enabled` (default false): print
    /// `timestamp-millis`/`timestamp-micros` values as `java.sql.Timestamp` text instead of the stored number.
    /// The JVM would print them in its default time zone; this crate prints UTC (the default of AWS Lambda, EMR and
    /// Glue).
    pub consistent_logical_timestamp: bool,
}

/// A dot path resolved against a schema: the column index, then the child index at each struct level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldPath {
    path: String,
    indices: Vec<usize>,
    data_type: DataType,
}

impl FieldPath {
    /// Resolves `path` (`a` or `a.b.c`) against `schema`, once, so that per-record lookups are index walks.
    ///
    /// Fails naming the missing part, a non-struct on the way, or a leaf type without key text.
    pub fn resolve(schema: &Schema, path: &str) -> Result<Self, ValueError> {
        let mut parts = path.split('.');
        let first = parts.next().unwrap_or_default();
        let (index, field) =
            schema
                .fields()
                .find(first)
                .ok_or_else(|| ValueError::FieldNotFound {
                    path: path.to_string(),
                    part: first.to_string(),
                    available: join_names(schema.fields().iter().map(|f| f.name().as_str())),
                })?;
        let mut indices = vec![index];
        let mut current = field.clone();
        for part in parts {
            let DataType::Struct(children) = current.data_type() else {
                return Err(ValueError::NotAStruct {
                    path: path.to_string(),
                    part: current.name().clone(),
                    data_type: current.data_type().to_string(),
                });
            };
            let (child_index, child) =
                children
                    .find(part)
                    .ok_or_else(|| ValueError::FieldNotFound {
                        path: path.to_string(),
                        part: part.to_string(),
                        available: join_names(children.iter().map(|f| f.name().as_str())),
                    })?;
            indices.push(child_index);
            current = child.clone();
        }
        check_supported(current.data_type()).map_err(|reason| ValueError::UnsupportedType {
            path: path.to_string(),
            data_type: current.data_type().to_string(),
            reason,
        })?;
        Ok(Self {
            path: path.to_string(),
            indices,
            data_type: current.data_type().clone(),
        })
    }

    /// The dot path as configured.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The leaf's Arrow type at resolution time.
    pub fn data_type(&self) -> &DataType {
        &self.data_type
    }

    /// The leaf array for `row`, or `None` when a struct on the way is null at that row (Hudi: the value is null).
    pub fn leaf<'a>(
        &self,
        batch: &'a RecordBatch,
        row: usize,
    ) -> Result<Option<&'a dyn Array>, ValueError> {
        if row >= batch.num_rows() {
            return Err(ValueError::RowOutOfRange {
                row,
                len: batch.num_rows(),
            });
        }
        let mut indices = self.indices.iter();
        let first = indices.next().copied().unwrap_or_default();
        let mut array: &dyn Array = batch
            .columns()
            .get(first)
            .ok_or_else(|| ValueError::SchemaMismatch {
                detail: format!("`{}`: the batch has no column {first}", self.path),
            })?
            .as_ref();
        for &index in indices {
            if array.is_null(row) {
                return Ok(None);
            }
            let parent = array
                .as_struct_opt()
                .ok_or_else(|| ValueError::SchemaMismatch {
                    detail: format!(
                        "`{}`: expected a struct, found {}",
                        self.path,
                        array.data_type()
                    ),
                })?;
            array = parent
                .columns()
                .get(index)
                .ok_or_else(|| ValueError::SchemaMismatch {
                    detail: format!("`{}`: the struct has no child {index}", self.path),
                })?
                .as_ref();
        }
        Ok(Some(array))
    }

    /// Appends the key text of this field at `row` to `out` (see [`write_value`]); `None` when null.
    pub fn write(
        &self,
        batch: &RecordBatch,
        row: usize,
        options: ValueOptions,
        out: &mut String,
    ) -> Result<Option<Range<usize>>, ValueError> {
        match self.leaf(batch, row)? {
            Some(array) => write_value(array, row, options, out),
            None => Ok(None),
        }
    }
}

fn join_names<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let mut out = String::new();
    for (i, name) in names.enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(name);
    }
    out
}

/// Whether values of `data_type` have a key text; the reason when not.
pub fn check_supported(data_type: &DataType) -> Result<(), &'static str> {
    match data_type {
        DataType::Null
        | DataType::Boolean
        | DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::UInt64
        | DataType::Float32
        | DataType::Float64
        | DataType::Utf8
        | DataType::LargeUtf8
        | DataType::Utf8View
        | DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_)
        | DataType::Date32
        | DataType::Date64
        | DataType::Timestamp(_, _)
        | DataType::Time32(_)
        | DataType::Time64(_)
        | DataType::Decimal32(_, _)
        | DataType::Decimal64(_, _)
        | DataType::Decimal128(_, _)
        | DataType::Decimal256(_, _) => Ok(()),
        DataType::Dictionary(key, value) => {
            if key.is_dictionary_key_type() {
                check_supported(value)
            } else {
                Err("dictionary keys must be integers")
            }
        }
        DataType::Float16 => Err("Avro has no half-precision float, so Hudi has no text for it"),
        DataType::Struct(_) => {
            Err("a struct is not a scalar; name one of its fields with a dot path")
        }
        DataType::List(_)
        | DataType::LargeList(_)
        | DataType::ListView(_)
        | DataType::LargeListView(_)
        | DataType::FixedSizeList(_, _)
        | DataType::Map(_, _) => Err("arrays and maps have no stable key text"),
        _ => Err("Avro has no equivalent type, so Hudi has no text for it"),
    }
}

/// Appends the key text of `array[row]` to `out`, as Hudi prints the equivalent Avro value.
///
/// Returns the byte range appended, or `None` (nothing appended) when the value is null.
pub fn write_value(
    array: &dyn Array,
    row: usize,
    options: ValueOptions,
    out: &mut String,
) -> Result<Option<Range<usize>>, ValueError> {
    if row >= array.len() {
        return Err(ValueError::RowOutOfRange {
            row,
            len: array.len(),
        });
    }
    if array.is_null(row) || matches!(array.data_type(), DataType::Null) {
        return Ok(None);
    }
    let start = out.len();
    match array.data_type() {
        DataType::Boolean => {
            let values = downcast(array.as_boolean_opt(), array)?;
            out.push_str(if values.value(row) { "true" } else { "false" });
        }
        DataType::Int8 => write_display(out, primitive::<Int8Type>(array, row)?),
        DataType::Int16 => write_display(out, primitive::<Int16Type>(array, row)?),
        DataType::Int32 => write_display(out, primitive::<Int32Type>(array, row)?),
        DataType::Int64 => write_display(out, primitive::<Int64Type>(array, row)?),
        DataType::UInt8 => write_display(out, primitive::<UInt8Type>(array, row)?),
        DataType::UInt16 => write_display(out, primitive::<UInt16Type>(array, row)?),
        DataType::UInt32 => write_display(out, primitive::<UInt32Type>(array, row)?),
        DataType::UInt64 => write_display(out, primitive::<UInt64Type>(array, row)?),
        DataType::Float32 => write_java_float(primitive::<Float32Type>(array, row)?, out),
        DataType::Float64 => write_java_double(primitive::<Float64Type>(array, row)?, out),
        DataType::Utf8 => out.push_str(downcast(array.as_string_opt::<i32>(), array)?.value(row)),
        DataType::LargeUtf8 => {
            out.push_str(downcast(array.as_string_opt::<i64>(), array)?.value(row))
        }
        DataType::Utf8View => out.push_str(downcast(array.as_string_view_opt(), array)?.value(row)),
        DataType::Binary => write_hex(
            downcast(array.as_binary_opt::<i32>(), array)?.value(row),
            out,
        ),
        DataType::LargeBinary => write_hex(
            downcast(array.as_binary_opt::<i64>(), array)?.value(row),
            out,
        ),
        DataType::BinaryView => {
            write_hex(downcast(array.as_binary_view_opt(), array)?.value(row), out)
        }
        DataType::FixedSizeBinary(_) => write_java_byte_array(
            downcast(array.as_fixed_size_binary_opt(), array)?.value(row),
            out,
        ),
        DataType::Date32 => {
            write_java_local_date(i64::from(primitive::<Date32Type>(array, row)?), out)?
        }
        DataType::Date64 => {
            let millis = primitive::<Date64Type>(array, row)?;
            write_java_local_date(millis.div_euclid(MILLIS_PER_DAY), out)?;
        }
        DataType::Timestamp(unit, tz) => {
            let value = timestamp_value(array, row, *unit)?;
            let convert = options.consistent_logical_timestamp && tz.is_some();
            match (convert, unit) {
                (true, TimeUnit::Millisecond) => write_java_sql_timestamp(value, out)?,
                // Hudi divides micros by 1000 with Java's truncating division before building the Timestamp.
                (true, TimeUnit::Microsecond) => write_java_sql_timestamp(value / 1000, out)?,
                _ => write_display(out, value),
            }
        }
        DataType::Time32(TimeUnit::Second) => {
            write_display(out, primitive::<Time32SecondType>(array, row)?)
        }
        DataType::Time32(_) => write_display(out, primitive::<Time32MillisecondType>(array, row)?),
        DataType::Time64(TimeUnit::Microsecond) => {
            write_display(out, primitive::<Time64MicrosecondType>(array, row)?)
        }
        DataType::Time64(_) => write_display(out, primitive::<Time64NanosecondType>(array, row)?),
        DataType::Decimal32(_, scale) => {
            let v = primitive::<Decimal32Type>(array, row)?;
            write_big_decimal_unscaled(
                v < 0,
                &mut DigitBuf::of_u128(u128::from(v.unsigned_abs())),
                *scale,
                out,
            )
        }
        DataType::Decimal64(_, scale) => {
            let v = primitive::<Decimal64Type>(array, row)?;
            write_big_decimal_unscaled(
                v < 0,
                &mut DigitBuf::of_u128(u128::from(v.unsigned_abs())),
                *scale,
                out,
            )
        }
        DataType::Decimal128(_, scale) => {
            let v = primitive::<Decimal128Type>(array, row)?;
            write_big_decimal_unscaled(v < 0, &mut DigitBuf::of_u128(v.unsigned_abs()), *scale, out)
        }
        DataType::Decimal256(_, scale) => {
            let v = primitive::<Decimal256Type>(array, row)?;
            let mut digits = DigitBuf::default();
            // i256's Display writes an optional '-' then the digits; split the sign off.
            let _ = write!(digits, "{v}");
            let negative = digits.strip_minus();
            write_big_decimal_unscaled(negative, &mut digits, *scale, out)
        }
        DataType::Dictionary(_, _) => {
            let dict = array
                .as_any_dictionary_opt()
                .ok_or_else(|| mismatch(array))?;
            let index = dictionary_key(dict.keys(), row)?;
            return match write_value(dict.values().as_ref(), index, options, out)? {
                Some(_) => Ok(Some(start..out.len())),
                None => Ok(None),
            };
        }
        other => {
            return Err(ValueError::UnsupportedType {
                path: "value".to_string(),
                data_type: other.to_string(),
                reason: check_supported(other).err().unwrap_or("not supported"),
            })
        }
    }
    Ok(Some(start..out.len()))
}

/// The string at `array[row]` for string columns (`Utf8`, `LargeUtf8`, `Utf8View`, dictionaries of those),
/// without copying; `None` when null, `Err` for other types.
pub fn str_value(array: &dyn Array, row: usize) -> Result<Option<&str>, ValueError> {
    if row >= array.len() {
        return Err(ValueError::RowOutOfRange {
            row,
            len: array.len(),
        });
    }
    if array.is_null(row) {
        return Ok(None);
    }
    match array.data_type() {
        DataType::Utf8 => Ok(Some(
            downcast(array.as_string_opt::<i32>(), array)?.value(row),
        )),
        DataType::LargeUtf8 => Ok(Some(
            downcast(array.as_string_opt::<i64>(), array)?.value(row),
        )),
        DataType::Utf8View => Ok(Some(
            downcast(array.as_string_view_opt(), array)?.value(row),
        )),
        DataType::Dictionary(_, _) => {
            let dict = array
                .as_any_dictionary_opt()
                .ok_or_else(|| mismatch(array))?;
            let index = dictionary_key(dict.keys(), row)?;
            str_value(dict.values().as_ref(), index)
        }
        _ => Err(mismatch(array)),
    }
}

/// Whether `data_type` holds strings (directly or as dictionary values).
pub fn is_string_type(data_type: &DataType) -> bool {
    match data_type {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => true,
        DataType::Dictionary(_, value) => is_string_type(value),
        _ => false,
    }
}

fn mismatch(array: &dyn Array) -> ValueError {
    ValueError::SchemaMismatch {
        detail: format!(
            "array of type {} cannot be read as that type",
            array.data_type()
        ),
    }
}

fn downcast<'a, T>(value: Option<&'a T>, array: &dyn Array) -> Result<&'a T, ValueError> {
    value.ok_or_else(|| mismatch(array))
}

fn primitive<T: ArrowPrimitiveType>(
    array: &dyn Array,
    row: usize,
) -> Result<T::Native, ValueError> {
    Ok(downcast(array.as_primitive_opt::<T>(), array)?.value(row))
}

fn timestamp_value(array: &dyn Array, row: usize, unit: TimeUnit) -> Result<i64, ValueError> {
    match unit {
        TimeUnit::Second => primitive::<TimestampSecondType>(array, row),
        TimeUnit::Millisecond => primitive::<TimestampMillisecondType>(array, row),
        TimeUnit::Microsecond => primitive::<TimestampMicrosecondType>(array, row),
        TimeUnit::Nanosecond => primitive::<TimestampNanosecondType>(array, row),
    }
}

/// The index into a dictionary's values for `row`, whatever the key type.
pub(crate) fn dictionary_key(keys: &dyn Array, row: usize) -> Result<usize, ValueError> {
    let key: Option<usize> = match keys.data_type() {
        DataType::Int8 => usize::try_from(primitive::<Int8Type>(keys, row)?).ok(),
        DataType::Int16 => usize::try_from(primitive::<Int16Type>(keys, row)?).ok(),
        DataType::Int32 => usize::try_from(primitive::<Int32Type>(keys, row)?).ok(),
        DataType::Int64 => usize::try_from(primitive::<Int64Type>(keys, row)?).ok(),
        DataType::UInt8 => Some(usize::from(primitive::<UInt8Type>(keys, row)?)),
        DataType::UInt16 => Some(usize::from(primitive::<UInt16Type>(keys, row)?)),
        DataType::UInt32 => usize::try_from(primitive::<UInt32Type>(keys, row)?).ok(),
        DataType::UInt64 => usize::try_from(primitive::<UInt64Type>(keys, row)?).ok(),
        _ => None,
    };
    key.ok_or_else(|| ValueError::SchemaMismatch {
        detail: format!(
            "dictionary key of type {} at row {row} is not a valid index",
            keys.data_type()
        ),
    })
}
