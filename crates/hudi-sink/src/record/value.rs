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

fn write_display(out: &mut String, value: impl std::fmt::Display) {
    // Writing into a String cannot fail.
    let _ = write!(out, "{value}");
}

/// Appends the lower-case hex of `bytes` (Hudi's `StringUtils.objToString` of a `ByteBuffer`).
pub fn write_hex(bytes: &[u8], out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.reserve(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0x0f)]));
    }
}

/// Appends `java.util.Arrays.toString(byte[])`: signed bytes, `[1, -2, 3]` (Avro `GenericData.Fixed.toString`).
pub fn write_java_byte_array(bytes: &[u8], out: &mut String) {
    out.push('[');
    for (i, &b) in bytes.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_display(out, i8::from_ne_bytes([b]));
    }
    out.push(']');
}

/// Appends `java.time.LocalDate.ofEpochDay(days).toString()`: `yyyy-MM-dd`, four-digit years zero padded (with a
/// leading `-` for negative years), years above 9999 prefixed with `+`.
pub fn write_java_local_date(epoch_day: i64, out: &mut String) -> Result<(), ValueError> {
    let date = i32::try_from(epoch_day)
        .ok()
        .and_then(|d| d.checked_add(UNIX_EPOCH_DAYS_FROM_CE))
        .and_then(NaiveDate::from_num_days_from_ce_opt)
        .ok_or_else(|| ValueError::OutOfRange {
            what: "date (days since 1970-01-01)",
            value: epoch_day.to_string(),
        })?;
    write_java_year(date.year(), out);
    let _ = write!(out, "-{:02}-{:02}", date.month(), date.day());
    Ok(())
}

fn write_java_year(year: i32, out: &mut String) {
    if year.unsigned_abs() < 1000 {
        if year < 0 {
            out.push('-');
        }
        let _ = write!(out, "{:04}", year.unsigned_abs());
    } else {
        if year > 9999 {
            out.push('+');
        }
        write_display(out, year);
    }
}

/// Appends `new java.sql.Timestamp(millis).toString()` as a JVM whose default time zone is UTC prints it:
/// `yyyy-mm-dd hh:mm:ss.f`, the fraction without trailing zeros but at least one digit.
///
/// Only years 1583–9999 are accepted: before that `java.util.Date` switches to the Julian calendar and after it
/// the year no longer has four digits.
pub fn write_java_sql_timestamp(millis: i64, out: &mut String) -> Result<(), ValueError> {
    let out_of_range = || ValueError::OutOfRange {
        what: "timestamp (milliseconds since 1970-01-01T00:00Z)",
        value: millis.to_string(),
    };
    let dt = chrono::DateTime::from_timestamp_millis(millis)
        .ok_or_else(out_of_range)?
        .naive_utc();
    if !(1583..=9999).contains(&dt.year()) {
        return Err(out_of_range());
    }
    let _ = write!(
        out,
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}.",
        dt.year(),
        dt.month(),
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second()
    );
    let nanos = dt.nanosecond();
    if nanos == 0 {
        out.push('0');
    } else {
        let mut digits = DigitBuf::default();
        let _ = write!(digits, "{nanos:09}");
        out.push_str(digits.as_str().trim_end_matches('0'));
    }
    Ok(())
}

/// Appends Java's `BigDecimal.toString()` of `unscaled × 10^-scale` (unscaled given as sign and decimal digits).
///
/// Plain notation when `scale >= 0` and the adjusted exponent is at least -6, else scientific notation with an
/// explicit exponent sign (`1E+3`, `1.23E-8`), as the `BigDecimal.toString` contract specifies.
fn write_big_decimal_unscaled(negative: bool, digits: &mut DigitBuf, scale: i8, out: &mut String) {
    let coefficient = digits.as_str();
    let scale = i64::from(scale);
    let len = coefficient.len() as i64;
    let adjusted = -scale + (len - 1);
    if negative {
        out.push('-');
    }
    if scale == 0 {
        out.push_str(coefficient);
    } else if scale > 0 && adjusted >= -6 {
        if len > scale {
            let split = (len - scale) as usize;
            out.push_str(&coefficient[..split]);
            out.push('.');
            out.push_str(&coefficient[split..]);
        } else {
            out.push_str("0.");
            push_zeros(out, (scale - len) as usize);
            out.push_str(coefficient);
        }
    } else {
        out.push_str(&coefficient[..1]);
        if len > 1 {
            out.push('.');
            out.push_str(&coefficient[1..]);
        }
        out.push('E');
        if adjusted >= 0 {
            out.push('+');
        }
        write_display(out, adjusted);
    }
}

/// Appends Java's `BigDecimal.toString()` of `unscaled × 10^-scale`, e.g. `(1234567890, 5)` → `12345.67890`.
pub fn write_java_big_decimal(unscaled: i128, scale: i8, out: &mut String) {
    write_big_decimal_unscaled(
        unscaled < 0,
        &mut DigitBuf::of_u128(unscaled.unsigned_abs()),
        scale,
        out,
    );
}

fn push_zeros(out: &mut String, n: usize) {
    out.extend(std::iter::repeat_n('0', n));
}

/// Appends Java's `Double.toString(value)` exactly as JDK 8–18 print it (the JVMs Hudi 0.14–1.0 run on).
///
/// Those JDKs do not always print the shortest decimal: integer values below 2^63 keep all the digits of the
/// integer (`1.64606760795392717E18`), powers of two and subnormals may get an extra digit (`4.9E-324`), and the
/// E-form always has a digit after the point. Layout: plain (`100.0`, `0.001`) for 10^-3 ≤ |v| < 10^7, otherwise
/// `d.dddE±n`; `NaN`, `Infinity`, `-Infinity`, `-0.0`.
pub fn write_java_double(value: f64, out: &mut String) {
    if let Some(text) = special_float_text(
        value.is_nan(),
        value.is_infinite(),
        value == 0.0,
        value.is_sign_negative(),
    ) {
        out.push_str(text);
        return;
    }
    let bits = value.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let mut fract = bits & ((1u64 << 52) - 1);
    let (bin_exp, significant_bits) = if biased == 0 {
        // Subnormal: normalise so that the leading one sits at bit 52.
        let leading = fract.leading_zeros() as i32;
        let shift = leading - 11;
        fract <<= shift;
        (1 - shift - 1023, 64 - leading)
    } else {
        fract |= 1u64 << 52;
        (biased - 1023, 53)
    };
    write_jdk_floating_decimal(
        value.is_sign_negative(),
        bin_exp,
        fract,
        significant_bits,
        out,
    );
}

/// Appends Java's `Float.toString(value)` exactly as JDK 8–18 print it; see [`write_java_double`].
pub fn write_java_float(value: f32, out: &mut String) {
    if let Some(text) = special_float_text(
        value.is_nan(),
        value.is_infinite(),
        value == 0.0,
        value.is_sign_negative(),
    ) {
        out.push_str(text);
        return;
    }
    let bits = value.to_bits();
    let biased = ((bits >> 23) & 0xff) as i32;
    let mut fract = bits & ((1u32 << 23) - 1);
    let (bin_exp, significant_bits) = if biased == 0 {
        let leading = fract.leading_zeros() as i32;
        let shift = leading - 8;
        fract <<= shift;
        (1 - shift - 127, 32 - leading)
    } else {
        fract |= 1u32 << 23;
        (biased - 127, 24)
    };
    // The JDK develops float digits in the double's 53-bit frame.
    write_jdk_floating_decimal(
        value.is_sign_negative(),
        bin_exp,
        u64::from(fract) << 29,
        significant_bits,
        out,
    );
}

fn special_float_text(
    nan: bool,
    infinite: bool,
    zero: bool,
    negative: bool,
) -> Option<&'static str> {
    match (nan, infinite, zero, negative) {
        (true, _, _, _) => Some("NaN"),
        (_, true, _, false) => Some("Infinity"),
        (_, true, _, true) => Some("-Infinity"),
        (_, _, true, false) => Some("0.0"),
        (_, _, true, true) => Some("-0.0"),
        _ => None,
    }
}

fn write_jdk_floating_decimal(
    negative: bool,
    bin_exp: i32,
    fract: u64,
    significant_bits: i32,
    out: &mut String,
) {
    let mut digits = DigitBuf::default();
    let dec_exponent = match jdk_digits(bin_exp, fract, significant_bits, &mut digits) {
        Some(dec_exponent) => dec_exponent,
        None => {
            // Not reachable for finite non-zero input; fall back to the shortest digits rather than fail.
            digits = DigitBuf::default();
            let _ = write!(
                digits,
                "{:e}",
                f64::from_bits(((bin_exp + 1023) as u64) << 52 | (fract & ((1 << 52) - 1)))
            );
            digits.split_scientific()
        }
    };
    write_java_float_layout(negative, digits.as_str(), dec_exponent, out);
}

/// Bit length of 5^i as the JDK tabulates it (`N_5_BITS`), with its `3·i` estimate past the table.
fn n5_bits(i: i32) -> i32 {
    if i == 0 {
        0
    } else if i < 27 {
        (64 - 5u64.pow(i as u32).leading_zeros()) as i32
    } else {
        i * 3
    }
}

/// The JDK's estimate of ⌊log10(value)⌋ (`FloatingDecimal.estimateDecExp`), reproduced bit for bit because the
/// digit loop below depends on it when the estimate is one too high.
// The JDK's literal 0.301029995663981 is a truncated log10(2); it must stay as written to match bit for bit.
#[allow(clippy::approx_constant)]
fn estimate_dec_exp(fract: u64, bin_exp: i32) -> i32 {
    let d2 = f64::from_bits(0x3ff0_0000_0000_0000 | (fract & ((1u64 << 52) - 1)));
    let d = (d2 - 1.5) * 0.289529654 + 0.176091259 + f64::from(bin_exp) * 0.301029995663981;
    d.floor() as i32
}

/// Decimal digits of a positive finite value `fract × 2^(bin_exp − 52)` (`fract` normalised with bit 52 set) as
/// JDK 8–18 `FloatingDecimal.BinaryToASCIIBuffer.dtoa` develops them: an exact path for integers below 2^63, and
/// otherwise Steele & White's free-format generation with a symmetric half-ULP margin, at least two digits in
/// E-form, and round-half-even on a tie. The integer and 64-bit variants use wrapping arithmetic like Java's
/// `int`/`long`. Returns Java's `decExponent` (value = 0.d1d2… × 10^decExponent); `None` only on an impossible
/// digit.
fn jdk_digits(
    bin_exp: i32,
    fract: u64,
    significant_bits: i32,
    digits: &mut DigitBuf,
) -> Option<i32> {
    let tail_zeros = fract.trailing_zeros() as i32;
    let n_fract_bits = 53 - tail_zeros;
    let n_tiny_bits = (n_fract_bits - bin_exp - 1).max(0);
    if (-21..=62).contains(&bin_exp) && n_tiny_bits == 0 {
        let value = if bin_exp >= 52 {
            fract << (bin_exp - 52)
        } else {
            fract >> (52 - bin_exp)
        };
        return Some(integer_digits(value, bin_exp, significant_bits, digits));
    }
    let mut dec_exp = estimate_dec_exp(fract, bin_exp);
    let b5 = (-dec_exp).max(0);
    let mut b2 = b5 + n_tiny_bits + bin_exp;
    let s5 = dec_exp.max(0);
    let mut s2 = s5 + n_tiny_bits;
    let m5 = b5;
    let mut m2 = b2 - significant_bits;
    let fract = fract >> tail_zeros;
    b2 -= n_fract_bits - 1;
    let common = b2.min(s2);
    b2 -= common;
    s2 -= common;
    m2 -= common;
    if n_fract_bits == 1 {
        // Below a power of two the next smaller value is only half an ULP away.
        m2 -= 1;
    }
    if m2 < 0 {
        b2 -= m2;
        s2 -= m2;
        m2 = 0;
    }
    let b_bits = n_fract_bits + b2 + n5_bits(b5);
    let ten_s_bits = s2 + 1 + n5_bits(s5 + 1);
    let (high, low, low_digit_difference) = if b_bits < 32 && ten_s_bits < 32 {
        let b = (fract as i32)
            .wrapping_mul(5i32.wrapping_pow(b5 as u32))
            .wrapping_shl(b2 as u32);
        let s = 5i32.wrapping_pow(s5 as u32).wrapping_shl(s2 as u32);
        let m = 5i32.wrapping_pow(m5 as u32).wrapping_shl(m2 as u32);
        let (high, low, b, tens) = small_digit_loop(b, s, m, &mut dec_exp, digits)?;
        (high, low, i64::from(b.wrapping_shl(1).wrapping_sub(tens)))
    } else if b_bits < 64 && ten_s_bits < 64 {
        let b = (fract as i64)
            .wrapping_mul(5i64.wrapping_pow(b5 as u32))
            .wrapping_shl(b2 as u32);
        let s = 5i64.wrapping_pow(s5 as u32).wrapping_shl(s2 as u32);
        let m = 5i64.wrapping_pow(m5 as u32).wrapping_shl(m2 as u32);
        let (high, low, b, tens) = small_digit_loop(b, s, m, &mut dec_exp, digits)?;
        (high, low, b.wrapping_shl(1).wrapping_sub(tens))
    } else {
        big_digit_loop(fract, (b5, b2), (s5, s2), (m5, m2), &mut dec_exp, digits)?
    };
    let mut dec_exponent = dec_exp + 1;
    if high {
        let round_up = if low {
            low_digit_difference > 0 || (low_digit_difference == 0 && digits.last_digit_is_odd())
        } else {
            true
        };
        if round_up && digits.round_up() {
            dec_exponent += 1;
        }
    }
    Some(dec_exponent)
}

/// Java's `int`/`long` arithmetic, with its wrap-around.
trait JavaInt: Copy + PartialOrd {
    const ZERO: Self;
    const TEN: Self;
    fn w_mul(self, other: Self) -> Self;
    fn w_add(self, other: Self) -> Self;
    fn w_div(self, other: Self) -> Self;
    fn w_rem(self, other: Self) -> Self;
    fn digit(self) -> Option<u8>;
}

macro_rules! java_int {
    ($t:ty) => {
        impl JavaInt for $t {
            const ZERO: Self = 0;
            const TEN: Self = 10;
            fn w_mul(self, other: Self) -> Self {
                self.wrapping_mul(other)
            }
            fn w_add(self, other: Self) -> Self {
                self.wrapping_add(other)
            }
            fn w_div(self, other: Self) -> Self {
                if other == 0 {
                    0
                } else {
                    self.wrapping_div(other)
                }
            }
            fn w_rem(self, other: Self) -> Self {
                if other == 0 {
                    0
                } else {
                    self.wrapping_rem(other)
                }
            }
            fn digit(self) -> Option<u8> {
                u8::try_from(self).ok().filter(|d| *d < 10)
            }
        }
    };
}
java_int!(i32);
java_int!(i64);

/// The digit loop of the JDK's `int` and `long` variants; returns `(high, low, b, tens)` at the end.
fn small_digit_loop<T: JavaInt>(
    mut b: T,
    s: T,
    mut m: T,
    dec_exp: &mut i32,
    digits: &mut DigitBuf,
) -> Option<(bool, bool, T, T)> {
    let tens = s.w_mul(T::TEN);
    let q = b.w_div(s);
    b = T::TEN.w_mul(b.w_rem(s));
    m = m.w_mul(T::TEN);
    let mut low = b < m;
    let mut high = b.w_add(m) > tens;
    let q = q.digit()?;
    if q == 0 && !high {
        *dec_exp -= 1;
    } else {
        digits.push_digit(q)?;
    }
    if *dec_exp < -3 || *dec_exp >= 8 {
        high = false;
        low = false;
    }
    while !low && !high {
        let q = b.w_div(s);
        b = T::TEN.w_mul(b.w_rem(s));
        m = m.w_mul(T::TEN);
        if m > T::ZERO {
            low = b < m;
            high = b.w_add(m) > tens;
        } else {
            // m wrapped around: it is certainly larger than b, and b + m larger than 10·s.
            low = true;
            high = true;
        }
        digits.push_digit(q.digit()?)?;
    }
    Some((high, low, b, tens))
}

/// The digit loop of the JDK's big-integer variant (note `>=` in the high test where the small variants use `>`).
fn big_digit_loop(
    fract: u64,
    (b5, b2): (i32, i32),
    (s5, s2): (i32, i32),
    (m5, m2): (i32, i32),
    dec_exp: &mut i32,
    digits: &mut DigitBuf,
) -> Option<(bool, bool, i64)> {
    let mut b = BigUint::from_u64(fract);
    b.mul_pow5(b5 as u32)?;
    b.shl(b2 as u32)?;
    let mut s = BigUint::from_u64(1);
    s.mul_pow5(s5 as u32)?;
    s.shl(s2 as u32)?;
    let mut m = BigUint::from_u64(1);
    m.mul_pow5(m5 as u32)?;
    m.shl(m2 as u32)?;
    let mut ten_s = s.clone();
    ten_s.mul_small(10)?;
    let q = b.quo_rem_times_ten(&s)?;
    m.mul_small(10)?;
    let mut low = b.cmp(&m).is_lt();
    let mut high = BigUint::sum_cmp(&b, &m, &ten_s).is_ge();
    if q == 0 && !high {
        *dec_exp -= 1;
    } else {
        digits.push_digit(q)?;
    }
    if *dec_exp < -3 || *dec_exp >= 8 {
        high = false;
        low = false;
    }
    while !low && !high {
        let q = b.quo_rem_times_ten(&s)?;
        m.mul_small(10)?;
        low = b.cmp(&m).is_lt();
        high = BigUint::sum_cmp(&b, &m, &ten_s).is_ge();
        digits.push_digit(q)?;
    }
    let low_digit_difference = if high && low {
        b.shl(1)?;
        match b.cmp(&ten_s) {
            std::cmp::Ordering::Less => -1,
            std::cmp::Ordering::Equal => 0,
            std::cmp::Ordering::Greater => 1,
        }
    } else {
        0
    };
    Some((high, low, low_digit_difference))
}

/// A fixed-capacity unsigned big integer (little-endian 32-bit limbs) for the JDK's big-integer digit loop; large
/// enough for every double (about 1,200 bits at the extremes), on the stack.
#[derive(Clone)]
struct BigUint {
    limbs: [u32; 48],
    len: usize,
}

impl BigUint {
    fn from_u64(value: u64) -> Self {
        let mut n = Self {
            limbs: [0; 48],
            len: 2,
        };
        n.limbs[0] = value as u32;
        n.limbs[1] = (value >> 32) as u32;
        n.trim();
        n
    }

    fn trim(&mut self) {
        while self.len > 0 && self.limbs[self.len - 1] == 0 {
            self.len -= 1;
        }
    }

    fn mul_small(&mut self, factor: u32) -> Option<()> {
        let mut carry = 0u64;
        for limb in &mut self.limbs[..self.len] {
            let product = u64::from(*limb) * u64::from(factor) + carry;
            *limb = product as u32;
            carry = product >> 32;
        }
        if carry > 0 {
            *self.limbs.get_mut(self.len)? = carry as u32;
            self.len += 1;
        }
        Some(())
    }

    fn mul_pow5(&mut self, mut exponent: u32) -> Option<()> {
        // 5^13 is the largest power of five below 2^32.
        while exponent >= 13 {
            self.mul_small(1_220_703_125)?;
            exponent -= 13;
        }
        if exponent > 0 {
            self.mul_small(5u32.pow(exponent))?;
        }
        Some(())
    }

    fn shl(&mut self, bits: u32) -> Option<()> {
        if self.len == 0 {
            return Some(());
        }
        let limbs = (bits / 32) as usize;
        let bits = bits % 32;
        let new_len = self.len + limbs + 1;
        if new_len > self.limbs.len() {
            return None;
        }
        for i in (0..new_len).rev() {
            let hi = if i >= limbs && i - limbs < self.len {
                self.limbs[i - limbs]
            } else {
                0
            };
            let lo = if bits > 0 && i > limbs && i - limbs - 1 < self.len {
                self.limbs[i - limbs - 1]
            } else {
                0
            };
            self.limbs[i] = if bits == 0 {
                hi
            } else {
                (hi << bits) | (lo >> (32 - bits))
            };
        }
        self.len = new_len;
        self.trim();
        Some(())
    }

    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.len.cmp(&other.len).then_with(|| {
            for i in (0..self.len).rev() {
                match self.limbs[i].cmp(&other.limbs[i]) {
                    std::cmp::Ordering::Equal => continue,
                    unequal => return unequal,
                }
            }
            std::cmp::Ordering::Equal
        })
    }

    /// Compares `a + b` with `c`.
    fn sum_cmp(a: &Self, b: &Self, c: &Self) -> std::cmp::Ordering {
        let mut sum = a.clone();
        let mut carry = 0u64;
        let len = a.len.max(b.len);
        for i in 0..len {
            let x = u64::from(if i < a.len { a.limbs[i] } else { 0 });
            let y = u64::from(if i < b.len { b.limbs[i] } else { 0 });
            let total = x + y + carry;
            sum.limbs[i] = total as u32;
            carry = total >> 32;
        }
        sum.len = len;
        if carry > 0 {
            if len >= sum.limbs.len() {
                return std::cmp::Ordering::Greater;
            }
            sum.limbs[len] = carry as u32;
            sum.len += 1;
        }
        sum.cmp(c)
    }

    fn sub_assign(&mut self, other: &Self) {
        let mut borrow = 0i64;
        for i in 0..self.len {
            let y = i64::from(if i < other.len { other.limbs[i] } else { 0 });
            let mut diff = i64::from(self.limbs[i]) - y - borrow;
            borrow = 0;
            if diff < 0 {
                diff += 1 << 32;
                borrow = 1;
            }
            self.limbs[i] = diff as u32;
        }
        self.trim();
    }

    /// `q = self / divisor` (a single decimal digit), then `self = (self % divisor) · 10`.
    fn quo_rem_times_ten(&mut self, divisor: &Self) -> Option<u8> {
        let mut q = 0u8;
        while self.cmp(divisor).is_ge() {
            self.sub_assign(divisor);
            q += 1;
            if q >= 10 {
                return None;
            }
        }
        self.mul_small(10)?;
        Some(q)
    }
}

/// Digits of an integer value below 2^63 the way the JDK's `developLongDigits` gives them: the exact integer,
/// with `⌊log10(2^(binExp − significandBits − 1))⌋` low-order digits rounded away (half up) when the binary
/// exponent exceeds the significand width, trailing zeros dropped. Returns Java's `decExponent`.
fn integer_digits(
    mut value: u64,
    bin_exp: i32,
    significant_bits: i32,
    digits: &mut DigitBuf,
) -> i32 {
    let mut dec_exp: i32 = 0;
    let p2 = bin_exp - significant_bits - 1;
    let insignificant = if bin_exp > significant_bits && p2 > 1 {
        floor_log10_pow2(p2)
    } else {
        0
    };
    if insignificant > 0 {
        let pow10 = 10u64.pow(insignificant);
        let residue = value % pow10;
        value /= pow10;
        dec_exp += insignificant as i32;
        if residue >= pow10 / 2 {
            value += 1;
        }
    }
    while value % 10 == 0 && value != 0 {
        value /= 10;
        dec_exp += 1;
    }
    let _ = write!(digits, "{value}");
    dec_exp + digits.len() as i32
}

/// `⌊log10(2^p)⌋` for `0 <= p <= 63`.
fn floor_log10_pow2(p: i32) -> u32 {
    let pow = 1u64 << p;
    let mut n = 0;
    let mut ten = 10u64;
    while ten <= pow {
        n += 1;
        match ten.checked_mul(10) {
            Some(next) => ten = next,
            None => break,
        }
    }
    n
}

/// Lays out `0.digits × 10^dec_exp` the way `Double.toString`/`Float.toString` specify.
fn write_java_float_layout(negative: bool, digits: &str, dec_exp: i32, out: &mut String) {
    if negative {
        out.push('-');
    }
    if digits.is_empty() {
        out.push_str("0.0");
        return;
    }
    let n = digits.len() as i32;
    if dec_exp > 0 && dec_exp < 8 {
        let int_len = n.min(dec_exp) as usize;
        out.push_str(&digits[..int_len]);
        if (int_len as i32) < dec_exp {
            push_zeros(out, (dec_exp - int_len as i32) as usize);
            out.push_str(".0");
        } else {
            out.push('.');
            if int_len < digits.len() {
                out.push_str(&digits[int_len..]);
            } else {
                out.push('0');
            }
        }
    } else if dec_exp <= 0 && dec_exp > -3 {
        out.push_str("0.");
        push_zeros(out, (-dec_exp) as usize);
        out.push_str(digits);
    } else {
        out.push_str(&digits[..1]);
        out.push('.');
        if digits.len() > 1 {
            out.push_str(&digits[1..]);
        } else {
            out.push('0');
        }
        out.push('E');
        write_display(out, dec_exp - 1);
    }
}

/// A small stack buffer for digits, so that number formatting allocates nothing.
#[derive(Clone)]
struct DigitBuf {
    buf: [u8; 96],
    len: usize,
}

impl Default for DigitBuf {
    fn default() -> Self {
        Self {
            buf: [0; 96],
            len: 0,
        }
    }
}

impl DigitBuf {
    fn of_u128(value: u128) -> Self {
        let mut digits = Self::default();
        let _ = write!(digits, "{value}");
        digits
    }

    fn len(&self) -> usize {
        self.len
    }

    fn push_digit(&mut self, digit: u8) -> Option<()> {
        if digit > 9 || self.len >= self.buf.len() {
            return None;
        }
        self.buf[self.len] = b'0' + digit;
        self.len += 1;
        Some(())
    }

    fn last_digit_is_odd(&self) -> bool {
        self.len > 0 && (self.buf[self.len - 1] - b'0') % 2 == 1
    }

    /// Adds one to the last digit with carry, as the JDK's `roundup`; digits that carry become `0` and stay.
    /// Returns true when the carry ran out of digits (the first digit becomes `1` and the exponent must grow).
    fn round_up(&mut self) -> bool {
        let mut i = self.len;
        while i > 0 {
            i -= 1;
            if self.buf[i] == b'9' {
                if i == 0 {
                    self.buf[0] = b'1';
                    return true;
                }
                self.buf[i] = b'0';
            } else {
                self.buf[i] += 1;
                return false;
            }
        }
        false
    }

    fn as_str(&self) -> &str {
        // Only ASCII is ever written into the buffer (see `write_str`).
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or_default()
    }

    /// Removes a leading '-' and reports whether there was one.
    fn strip_minus(&mut self) -> bool {
        if self.len > 0 && self.buf[0] == b'-' {
            self.buf.copy_within(1..self.len, 0);
            self.len -= 1;
            true
        } else {
            false
        }
    }

    /// Turns Rust's `{:e}` text (`1.2345e-7`) into its digits (`12345`, kept in the buffer) and Java's
    /// `decExponent` (value = 0.d1d2… × 10^decExponent).
    fn split_scientific(&mut self) -> i32 {
        let text = &self.buf[..self.len];
        let e_pos = text.iter().position(|&b| b == b'e').unwrap_or(self.len);
        let exponent: i32 = std::str::from_utf8(&text[(e_pos + 1).min(self.len)..])
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let mut digits = [0u8; 96];
        let mut n = 0;
        for &b in &text[..e_pos] {
            if b.is_ascii_digit() {
                digits[n] = b;
                n += 1;
            }
        }
        // Rust's shortest form never has trailing zeros in the mantissa except for a lone "0".
        while n > 1 && digits[n - 1] == b'0' {
            n -= 1;
        }
        self.buf[..n].copy_from_slice(&digits[..n]);
        self.len = n;
        exponent + 1
    }
}

impl std::fmt::Write for DigitBuf {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let bytes = s.as_bytes();
        if !s.is_ascii() || self.len + bytes.len() > self.buf.len() {
            return Err(std::fmt::Error);
        }
        self.buf[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::builder::{Int32Builder, StringDictionaryBuilder};
    use arrow_array::types::Int32Type as DictKey;
    use arrow_array::{
        ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, FixedSizeBinaryArray,
        Float32Array, Float64Array, Int64Array, Int8Array, StringArray, StructArray,
        TimestampMicrosecondArray, UInt64Array,
    };
    use arrow_schema::{Field, Fields};

    use super::*;

    fn text(array: &dyn Array, row: usize) -> Option<String> {
        text_with(array, row, ValueOptions::default())
    }

    fn text_with(array: &dyn Array, row: usize, options: ValueOptions) -> Option<String> {
        let mut out = String::from("prefix|");
        let range = write_value(array, row, options, &mut out).expect("supported");
        range.map(|r| {
            assert_eq!(r.end, out.len());
            out[r].to_string()
        })
    }

    fn double(v: f64) -> String {
        let mut out = String::new();
        write_java_double(v, &mut out);
        out
    }

    fn float(v: f32) -> String {
        let mut out = String::new();
        write_java_float(v, &mut out);
        out
    }

    #[test]
    fn integers_booleans_strings() {
        let ints = Int64Array::from(vec![Some(0), Some(-42), None, Some(i64::MIN)]);
        assert_eq!(text(&ints, 0).as_deref(), Some("0"));
        assert_eq!(text(&ints, 1).as_deref(), Some("-42"));
        assert_eq!(text(&ints, 2), None);
        assert_eq!(text(&ints, 3).as_deref(), Some("-9223372036854775808"));
        assert_eq!(
            text(&Int8Array::from(vec![-128i8]), 0).as_deref(),
            Some("-128")
        );
        assert_eq!(
            text(&UInt64Array::from(vec![u64::MAX]), 0).as_deref(),
            Some("18446744073709551615")
        );
        let bools = BooleanArray::from(vec![true, false]);
        assert_eq!(text(&bools, 0).as_deref(), Some("true"));
        assert_eq!(text(&bools, 1).as_deref(), Some("false"));
        let strings = StringArray::from(vec![Some("Alice"), Some(""), None, Some("中文/é")]);
        assert_eq!(text(&strings, 0).as_deref(), Some("Alice"));
        assert_eq!(text(&strings, 1).as_deref(), Some(""));
        assert_eq!(text(&strings, 2), None);
        assert_eq!(text(&strings, 3).as_deref(), Some("中文/é"));
    }

    #[test]
    fn doubles_follow_java_double_to_string() {
        assert_eq!(double(1.0), "1.0");
        assert_eq!(double(0.1), "0.1");
        assert_eq!(double(2.468), "2.468");
        assert_eq!(double(123.456), "123.456");
        assert_eq!(double(100.0), "100.0");
        assert_eq!(double(1.0e7), "1.0E7");
        assert_eq!(double(9_999_999.0), "9999999.0");
        assert_eq!(double(1.0e10), "1.0E10");
        assert_eq!(double(0.001), "0.001");
        assert_eq!(double(0.0001), "1.0E-4");
        assert_eq!(double(1.0e-5), "1.0E-5");
        assert_eq!(double(-2.5e-8), "-2.5E-8");
        assert_eq!(double(123456.789), "123456.789");
        assert_eq!(double(f64::MAX), "1.7976931348623157E308");
        assert_eq!(double(f64::MIN_POSITIVE), "2.2250738585072014E-308");
        assert_eq!(double(5e-324), "4.9E-324");
        assert_eq!(double(f64::NAN), "NaN");
        assert_eq!(double(f64::INFINITY), "Infinity");
        assert_eq!(double(f64::NEG_INFINITY), "-Infinity");
        assert_eq!(double(0.0), "0.0");
        assert_eq!(double(-0.0), "-0.0");
        // Integer values below 2^63 keep FloatingDecimal's extra digits (JDK 8-18), checked against Java 17.
        assert_eq!(double(1.646_067_607_953_927_2e18), "1.64606760795392717E18");
        // JDK 8-18 do not print the shortest digits here (JDK-4511638); Hudi's JVMs print these.
        assert_eq!(double(2.0e23), "1.9999999999999998E23");
        assert_eq!(double(1.0e23), "9.999999999999999E22");
        assert_eq!(double(9_007_199_254_740_993.0), "9.007199254740992E15");
    }

    #[test]
    fn floats_follow_java_float_to_string() {
        assert_eq!(float(1.0), "1.0");
        assert_eq!(float(0.1), "0.1");
        assert_eq!(float(3.0), "3.0");
        assert_eq!(float(1.0e10), "1.0E10");
        assert_eq!(float(1.1), "1.1");
        assert_eq!(float(f32::MAX), "3.4028235E38");
        assert_eq!(float(f32::MIN_POSITIVE), "1.17549435E-38");
        assert_eq!(float(1.0e-45), "1.4E-45");
        // Integer-valued floats keep FloatingDecimal's extra digits (JDK 8-18), checked against Java 17.
        assert_eq!(float(6.456_23e10), "6.4562299E10");
        assert_eq!(float(f32::NAN), "NaN");
        assert_eq!(float(-0.0), "-0.0");
        let array = Float32Array::from(vec![2.5f32]);
        assert_eq!(text(&array, 0).as_deref(), Some("2.5"));
        let array = Float64Array::from(vec![1e21]);
        assert_eq!(text(&array, 0).as_deref(), Some("1.0E21"));
    }

    #[test]
    fn dates_follow_local_date_to_string() {
        let dates = Date32Array::from(vec![0, 19448, -1, -719_528, 2_932_897, -719_893, -719_894]);
        assert_eq!(text(&dates, 0).as_deref(), Some("1970-01-01"));
        assert_eq!(text(&dates, 1).as_deref(), Some("2023-04-01"));
        assert_eq!(text(&dates, 2).as_deref(), Some("1969-12-31"));
        assert_eq!(text(&dates, 3).as_deref(), Some("0000-01-01"));
        assert_eq!(text(&dates, 4).as_deref(), Some("+10000-01-01"));
        assert_eq!(text(&dates, 5).as_deref(), Some("-0001-01-01"));
        assert_eq!(text(&dates, 6).as_deref(), Some("-0002-12-31"));
        let too_far = Date32Array::from(vec![i32::MAX]);
        assert!(matches!(
            write_value(&too_far, 0, ValueOptions::default(), &mut String::new()),
            Err(ValueError::OutOfRange { .. })
        ));
    }

    #[test]
    fn timestamps_are_numbers_unless_consistent_logical_timestamps() {
        let ts =
            TimestampMicrosecondArray::from(vec![1_680_368_460_000_000i64, 1_680_368_460_123_456])
                .with_timezone("UTC");
        assert_eq!(text(&ts, 0).as_deref(), Some("1680368460000000"));
        let consistent = ValueOptions {
            consistent_logical_timestamp: true,
        };
        assert_eq!(
            text_with(&ts, 0, consistent).as_deref(),
            Some("2023-04-01 17:01:00.0")
        );
        assert_eq!(
            text_with(&ts, 1, consistent).as_deref(),
            Some("2023-04-01 17:01:00.123")
        );
        // Without a time zone the Avro type is local-timestamp-micros, which Hudi leaves as a number.
        let local = TimestampMicrosecondArray::from(vec![1_680_368_460_000_000i64]);
        assert_eq!(
            text_with(&local, 0, consistent).as_deref(),
            Some("1680368460000000")
        );
    }

    #[test]
    fn decimals_follow_big_decimal_to_string() {
        let dec = |unscaled: i128, scale: i8| {
            let mut out = String::new();
            write_java_big_decimal(unscaled, scale, &mut out);
            out
        };
        assert_eq!(dec(1_234_567_890, 5), "12345.67890");
        assert_eq!(dec(-1_234_567_890, 5), "-12345.67890");
        assert_eq!(dec(5, 2), "0.05");
        assert_eq!(dec(0, 2), "0.00");
        assert_eq!(dec(0, 0), "0");
        assert_eq!(dec(123, 0), "123");
        assert_eq!(dec(1, 6), "0.000001");
        assert_eq!(dec(1, 7), "1E-7");
        assert_eq!(dec(12, 8), "1.2E-7");
        assert_eq!(dec(-12, 9), "-1.2E-8");
        assert_eq!(dec(1, -3), "1E+3");
        assert_eq!(dec(123, -2), "1.23E+4");
        assert_eq!(dec(0, -2), "0E+2");
        assert_eq!(
            dec(i128::MIN, 0),
            "-170141183460469231731687303715884105728"
        );
        let array = Decimal128Array::from(vec![1_234_567_890i128])
            .with_precision_and_scale(10, 5)
            .expect("valid");
        assert_eq!(text(&array, 0).as_deref(), Some("12345.67890"));
    }

    #[test]
    fn binary_and_fixed() {
        let binary = BinaryArray::from(vec![b"binary data".as_ref(), b"\x00\xff".as_ref()]);
        assert_eq!(text(&binary, 0).as_deref(), Some("62696e6172792064617461"));
        assert_eq!(text(&binary, 1).as_deref(), Some("00ff"));
        let fixed = FixedSizeBinaryArray::try_from_iter(vec![vec![1u8, 0xfe, 127]].into_iter())
            .expect("fixed");
        assert_eq!(text(&fixed, 0).as_deref(), Some("[1, -2, 127]"));
    }

    #[test]
    fn dictionary_of_strings_prints_the_symbol() {
        let mut builder = StringDictionaryBuilder::<DictKey>::new();
        builder.append_value("RED");
        builder.append_null();
        builder.append_value("BLUE");
        let dict = builder.finish();
        assert_eq!(text(&dict, 0).as_deref(), Some("RED"));
        assert_eq!(text(&dict, 1), None);
        assert_eq!(text(&dict, 2).as_deref(), Some("BLUE"));
    }

    fn nested_batch() -> RecordBatch {
        let inner_fields = Fields::from(vec![Field::new("leaf", DataType::Int32, true)]);
        let mut leaf = Int32Builder::new();
        leaf.append_value(7);
        leaf.append_value(8);
        leaf.append_null();
        let inner = StructArray::new(
            inner_fields.clone(),
            vec![Arc::new(leaf.finish()) as ArrayRef],
            Some(vec![true, false, true].into()),
        );
        let outer_fields = Fields::from(vec![Field::new(
            "inner",
            DataType::Struct(inner_fields),
            true,
        )]);
        let outer = StructArray::new(
            outer_fields.clone(),
            vec![Arc::new(inner) as ArrayRef],
            None,
        );
        let id = Int64Array::from(vec![1, 2, 3]);
        let schema = Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("outer", DataType::Struct(outer_fields), true),
        ]);
        RecordBatch::try_new(Arc::new(schema), vec![Arc::new(id), Arc::new(outer)]).expect("batch")
    }

    #[test]
    fn dot_paths_resolve_once_and_null_structs_give_null() {
        let batch = nested_batch();
        let path = FieldPath::resolve(&batch.schema(), "outer.inner.leaf").expect("resolves");
        assert_eq!(path.data_type(), &DataType::Int32);
        let get = |row| {
            let mut out = String::new();
            path.write(&batch, row, ValueOptions::default(), &mut out)
                .expect("ok")
                .map(|_| out)
        };
        assert_eq!(get(0).as_deref(), Some("7"));
        assert_eq!(get(1), None, "the inner struct is null at row 1");
        assert_eq!(get(2), None, "the leaf is null at row 2");
        assert!(matches!(
            path.write(&batch, 3, ValueOptions::default(), &mut String::new()),
            Err(ValueError::RowOutOfRange { row: 3, len: 3 })
        ));
    }

    #[test]
    fn bad_paths_name_the_missing_part() {
        let batch = nested_batch();
        let schema = batch.schema();
        let err = FieldPath::resolve(&schema, "outer.nope.leaf").expect_err("missing");
        assert!(err.to_string().contains("`nope`"), "{err}");
        assert!(
            err.to_string().contains("inner"),
            "lists what exists: {err}"
        );
        let err = FieldPath::resolve(&schema, "id.x").expect_err("not a struct");
        assert!(matches!(err, ValueError::NotAStruct { .. }), "{err}");
        let err = FieldPath::resolve(&schema, "outer").expect_err("struct leaf");
        assert!(matches!(err, ValueError::UnsupportedType { .. }), "{err}");
        let err = FieldPath::resolve(&schema, "missing").expect_err("missing top level");
        assert!(err.to_string().contains("available: id, outer"), "{err}");
    }

    #[test]
    fn unsupported_types_are_refused() {
        assert!(check_supported(&DataType::Float16).is_err());
        assert!(check_supported(&DataType::new_list(DataType::Int32, true)).is_err());
        assert!(check_supported(&DataType::Utf8View).is_ok());
    }
}
