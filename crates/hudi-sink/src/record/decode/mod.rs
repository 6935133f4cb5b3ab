//! JSON record values → Arrow record batches of the table's data schema, one record at a time, all or nothing.
//!
//! A [`RecordDecoder`] is built once per table schema ([`RecordDecoder::try_new`]): every Avro type is resolved, every
//! default compiled, every record's field-name index built up front, so decoding a record does no schema lookup.
//! [`RecordDecoder::append`] reads one Kafka value straight into column buffers with a small streaming JSON parser
//! (no `serde_json::Value` per record, exact number text, duplicate keys seen); [`RecordDecoder::finish`] hands
//! out the batch and leaves the decoder empty for the next one.
//!
//! # Invariants
//! - **Per-record atomicity.** When `append` fails, every column is truncated back to its length before the
//!   call: nothing of a refused record reaches a batch. The error is a [`RecordDecodeError`] naming the field path
//!   (`trip.stops[2].name`, map entries as `tags["k"]`) and the reason; it becomes the record's dead letter.
//! - **No quiet loss or change.** A value is stored only if it converts exactly: integers are range-checked (never
//!   wrapped), decimals are parsed from their text (never through `f64`), timestamps with more precision than the
//!   column are refused rather than truncated, a `null` is stored only where the column is nullable.
//! - **Classification.** A value that is not UTF-8 or not JSON (syntax error, trailing characters, empty) is
//!   [`RecordErrorKind::NotJson`], even when a type error occurs before the syntax error; valid JSON whose top
//!   level is not an object is [`RecordErrorKind::NotObject`]; everything else is [`RecordErrorKind::Invalid`].
//! - **Bounded work.** Objects and arrays nest at most [`DEFAULT_MAX_DEPTH`] levels (the record itself is level 1;
//!   see [`RecordDecoder::with_max_depth`]); a value nested deeper is refused as [`RecordDecodeReason::TooDeep`]
//!   (stage `decode`) without reading the rest of it, even if the rest is also malformed. Duplicate detection
//!   uses hash sets; nothing is quadratic in the input.
//!
//! # Accepted JSON per column type
//!
//! | Avro type | accepted JSON |
//! |---|---|
//! | `boolean` | `true`, `false` |
//! | `int`, `long` | an integer literal (no fraction or exponent) within the type's range |
//! | `float`, `double` | any number (correctly rounded; overflow to infinity is refused), or the strings `"NaN"`, `"Infinity"`, `"-Infinity"` (Avro's JSON spelling) |
//! | `string` (also `uuid`, not checked further) | a string |
//! | `enum` | a string that is one of the symbols (the enum's `default` is for schema evolution and not used here) |
//! | `bytes` | a string of standard, padded base64 |
//! | `fixed(n)` | a string of standard, padded base64 decoding to exactly `n` bytes |
//! | `decimal(p,s)` on bytes or fixed | a number or a string holding a JSON number (`"12.50"`, `"1.5e3"`), exact: at most `s` digits after the point once trailing zeros are removed, at most `p` digits in all |
//! | `date` | a `"YYYY-MM-DD"` string, or an integer number of days since 1970-01-01 |
//! | `time-millis`, `time-micros` | an integer in the column's unit after midnight, `0 ≤ t < 24h` |
//! | `timestamp-millis`, `timestamp-micros` | an integer since the epoch in the column's unit, or an RFC 3339 string with an offset (`2024-05-01T12:00:00.123Z`) |
//! | `local-timestamp-millis`, `-micros` | an integer in the column's unit, or `"YYYY-MM-DDTHH:MM:SS[.fraction]"` without an offset |
//! | `record` | an object (see below) |
//! | `array` | an array |
//! | `map` | an object; its members are the entries, in order |
//! | `["null", T]`, `[T, "null"]` | `null` or T's JSON; the bare value, not Avro's `{"T": value}` wrapper |
//!
//! Records: a field missing from the object takes the field's Avro `default`, else `null` when the field is
//! nullable, else the record is refused. Keys that are not fields of the record are **ignored** (schema evolution:
//! producers may be ahead of the table), but their values must still be well-formed JSON within the depth limit,
//! and they are counted ([`RecordDecoder::ignored_fields`]) so that a producer writing to the wrong table shows up in
//! metrics. A key that appears twice in any object — record, map, or ignored value — refuses the record
//! (`serde_json` would silently keep the last one).
//!
//! Defaults are read as the Avro specification writes them (bytes and fixed as strings whose code points
//! U+0000–U+00FF are the bytes, decimals as such bytes, `NaN`/`Infinity` strings for floats); a default that does
//! not fit its column is a [`DecodeError`] at construction.
//!
//! A batch holds at most 2 GiB of string or binary data per column (Arrow's 32-bit offsets); a record that would
//! cross that fails with [`RecordDecodeReason::ColumnFull`], leaving the decoder intact: finish the batch and
//! append the record again. ESM payloads (6 MB) are far below it.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

use arrow_array::types::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int32Type, Int64Type,
    Time32MillisecondType, Time64MicrosecondType, TimestampMicrosecondType,
    TimestampMillisecondType,
};
use arrow_array::{
    ArrayRef, BinaryArray, BooleanArray, FixedSizeBinaryArray, ListArray, MapArray, PrimitiveArray,
    RecordBatch, RecordBatchOptions, StringArray, StructArray,
};
use arrow_buffer::{BooleanBufferBuilder, Buffer, NullBufferBuilder, OffsetBuffer, ScalarBuffer};
use arrow_schema::{ArrowError, DataType, Field, FieldRef, Fields, SchemaRef, TimeUnit};
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use chrono::{DateTime, NaiveDate, NaiveDateTime};
use serde_json::Value;
use thiserror::Error;

mod avro;
mod column;
mod convert;
mod json;
mod plan;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_avro;

use avro::Cursor;
use column::*;
use convert::*;
use json::*;
use plan::*;

pub use crate::avro::resolve::{AvroPlan, PlanError};
use crate::schema::arrow::avro_to_arrow;
use crate::schema::avro::{namespace_of, AvroSchema, LogicalType, NamedTypes, PrimitiveType};
use crate::schema::SchemaError;

/// Default nesting limit of objects and arrays in one record (the record object is level 1).
pub const DEFAULT_MAX_DEPTH: usize = 64;
/// Upper bound accepted by [`RecordDecoder::with_max_depth`]: decoding recurses once per level, and a Lambda
/// thread's stack must hold the deepest record.
pub const MAX_SUPPORTED_DEPTH: usize = 256;

/// Longest value text quoted in an error message (the dead letter carries the full bytes).
const MAX_QUOTED_CHARS: usize = 64;
const DAY_MILLIS: i64 = 86_400_000;
const DAY_MICROS: i64 = 86_400_000_000;

// ---------------------------------------------------------------------------------------------------------------
// Errors

/// Why a decoder cannot be built for a schema (a start-up error).
#[derive(Debug, Error)]
pub enum DecodeError {
    /// The Avro schema is invalid or has no Arrow form.
    #[error(transparent)]
    Schema(#[from] SchemaError),
    /// The Arrow schema is not the one the Avro schema maps to.
    #[error("the Arrow data schema does not match the Avro schema: {reason}")]
    SchemaMismatch {
        /// The first difference found.
        reason: String,
    },
    /// A field's Avro default does not fit its column.
    #[error("field `{path}`: default {default} cannot be used: {reason}")]
    InvalidDefault {
        /// Field path.
        path: String,
        /// The default, as JSON.
        default: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Arrow refused to assemble the batch (a bug in this module, reported rather than panicking).
    #[error("assembling the record batch failed: {source}")]
    Arrow {
        /// Arrow's error.
        #[source]
        source: ArrowError,
    },
}

/// Which dead-letter stage a refused record belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecordErrorKind {
    /// Not UTF-8 or not JSON.
    NotJson,
    /// JSON, but the top level is not an object.
    NotObject,
    /// A JSON object that does not fit the schema.
    Invalid,
    /// Not an Avro datum of its writer schema (malformed or truncated binary).
    NotAvro,
    /// The value's writer schema is unknown or cannot be read into the table (framing, registry id,
    /// resolution).
    Schema,
}

/// The JSON type of a value, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JsonType {
    /// `{…}`
    Object,
    /// `[…]`
    Array,
    /// `"…"`
    String,
    /// A number.
    Number,
    /// `true`/`false`.
    Boolean,
    /// `null`.
    Null,
}

impl JsonType {
    fn from_first_byte(b: u8) -> Option<Self> {
        Some(match b {
            b'{' => JsonType::Object,
            b'[' => JsonType::Array,
            b'"' => JsonType::String,
            b'-' | b'0'..=b'9' => JsonType::Number,
            b't' | b'f' => JsonType::Boolean,
            b'n' => JsonType::Null,
            _ => return None,
        })
    }
}

impl fmt::Display for JsonType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            JsonType::Object => "an object",
            JsonType::Array => "an array",
            JsonType::String => "a string",
            JsonType::Number => "a number",
            JsonType::Boolean => "a boolean",
            JsonType::Null => "null",
        })
    }
}

/// What is wrong with a refused record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordDecodeReason {
    /// The bytes are not UTF-8.
    NotUtf8 {
        /// Byte offset of the first invalid sequence.
        byte_offset: usize,
    },
    /// Empty or whitespace only.
    Empty,
    /// A JSON syntax error.
    Syntax {
        /// Byte offset where parsing stopped.
        byte_offset: usize,
        /// What was expected or found.
        message: &'static str,
    },
    /// Valid JSON whose top level is not an object.
    NotObject {
        /// What it is.
        found: JsonType,
    },
    /// Objects and arrays nest deeper than the limit.
    TooDeep {
        /// The limit.
        max_depth: usize,
    },
    /// A key appears twice in one object.
    DuplicateKey {
        /// The key.
        key: String,
    },
    /// A field that is not nullable and has no default is absent.
    MissingField,
    /// `null` where the column is not nullable.
    NullNotAllowed {
        /// The column type.
        expected: String,
    },
    /// The JSON type cannot hold the column type.
    WrongType {
        /// The column type.
        expected: String,
        /// The JSON type found.
        found: JsonType,
    },
    /// The JSON type is right but the value does not convert exactly.
    InvalidValue {
        /// The value's text (shortened).
        value: String,
        /// The column type.
        expected: String,
        /// Why.
        detail: String,
    },
    /// The batch's string/binary data for one column would exceed 2 GiB: finish the batch and retry the record.
    ColumnFull,
    /// The bytes are not a datum of the writer schema.
    NotAvro {
        /// Byte offset in the datum where reading stopped.
        byte_offset: usize,
        /// What was wrong there.
        message: String,
    },
    /// The writer schema is unknown or does not resolve to the table schema.
    Schema {
        /// Why (names the schema id and the field).
        detail: String,
    },
}

impl RecordDecodeReason {
    fn kind(&self) -> RecordErrorKind {
        match self {
            RecordDecodeReason::NotUtf8 { .. }
            | RecordDecodeReason::Empty
            | RecordDecodeReason::Syntax { .. } => RecordErrorKind::NotJson,
            RecordDecodeReason::NotObject { .. } => RecordErrorKind::NotObject,
            RecordDecodeReason::NotAvro { .. } => RecordErrorKind::NotAvro,
            RecordDecodeReason::Schema { .. } => RecordErrorKind::Schema,
            _ => RecordErrorKind::Invalid,
        }
    }
}

impl fmt::Display for RecordDecodeReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordDecodeReason::NotUtf8 { byte_offset } => {
                write!(f, "not UTF-8 text (invalid byte sequence at byte {byte_offset})")
            }
            RecordDecodeReason::Empty => f.write_str("not JSON: the value is empty"),
            RecordDecodeReason::Syntax {
                byte_offset,
                message,
            } => write!(f, "not JSON: {message} at byte {byte_offset}"),
            RecordDecodeReason::NotObject { found } => {
                write!(f, "expected a JSON object, found {found}")
            }
            RecordDecodeReason::TooDeep { max_depth } => {
                write!(f, "objects and arrays nest deeper than {max_depth} levels")
            }
            RecordDecodeReason::DuplicateKey { key } => {
                write!(f, "duplicate key {key:?} in one object")
            }
            RecordDecodeReason::MissingField => {
                f.write_str("required field is missing (not nullable and no default)")
            }
            RecordDecodeReason::NullNotAllowed { expected } => {
                write!(f, "null is not allowed: the field is a non-nullable {expected}")
            }
            RecordDecodeReason::WrongType { expected, found } => {
                write!(f, "expected {expected}, found {found}")
            }
            RecordDecodeReason::InvalidValue {
                value,
                expected,
                detail,
            } => write!(f, "{value} is not a valid {expected}: {detail}"),
            RecordDecodeReason::ColumnFull => f.write_str(
                "the batch holds 2 GiB of data in one column; finish the batch and append the record again",
            ),
            RecordDecodeReason::NotAvro {
                byte_offset,
                message,
            } => write!(f, "not Avro of its writer schema: {message} at byte {byte_offset}"),
            RecordDecodeReason::Schema { detail } => f.write_str(detail),
        }
    }
}

/// A record the decoder refused: where ([`RecordDecodeError::path`]) and why. Its text is the dead-letter reason.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub struct RecordDecodeError {
    path: String,
    reason: RecordDecodeReason,
}

impl RecordDecodeError {
    /// The field path (`a.b[2]`, `tags["k"]`); empty for the record as a whole.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Why.
    pub fn reason(&self) -> &RecordDecodeReason {
        &self.reason
    }

    /// The dead-letter stage.
    pub fn kind(&self) -> RecordErrorKind {
        self.reason.kind()
    }
}

impl fmt::Display for RecordDecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.reason)
        } else {
            write!(f, "field `{}`: {}", self.path, self.reason)
        }
    }
}

/// One step of a field path, collected innermost first while an error unwinds.
#[derive(Debug)]
enum Segment {
    Field(String),
    Index(usize),
    Key(String),
}

/// An error inside decoding, before its path is rendered.
#[derive(Debug)]
struct Fail {
    /// Innermost segment first.
    path: Vec<Segment>,
    reason: RecordDecodeReason,
}

impl Fail {
    fn new(reason: RecordDecodeReason) -> Self {
        Fail {
            path: Vec::new(),
            reason,
        }
    }

    fn at(mut self, segment: Segment) -> Self {
        // Syntax errors have no meaningful field path.
        if self.reason.kind() == RecordErrorKind::Invalid {
            self.path.push(segment);
        }
        self
    }

    fn into_error(self) -> RecordDecodeError {
        let mut path = String::new();
        for segment in self.path.iter().rev() {
            match segment {
                Segment::Field(name) => {
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(name);
                }
                Segment::Index(i) => {
                    path.push('[');
                    path.push_str(&i.to_string());
                    path.push(']');
                }
                Segment::Key(k) => {
                    path.push('[');
                    path.push_str(&Value::String(k.clone()).to_string());
                    path.push(']');
                }
            }
        }
        RecordDecodeError {
            path,
            reason: self.reason,
        }
    }
}

fn quote_text(text: &str) -> String {
    if text.chars().count() <= MAX_QUOTED_CHARS {
        return text.to_string();
    }
    let mut out: String = text.chars().take(MAX_QUOTED_CHARS).collect();
    out.push('…');
    out
}

fn invalid(value: String, expected: &str, detail: impl Into<String>) -> Fail {
    Fail::new(RecordDecodeReason::InvalidValue {
        value,
        expected: expected.to_string(),
        detail: detail.into(),
    })
}

/// `value` quoted as a JSON string, shortened.
fn quoted(value: &str) -> String {
    format!("{:?}", quote_text(value))
}

// ---------------------------------------------------------------------------------------------------------------
// The decoder.

/// Decodes JSON record values into record batches of a table's Arrow data schema. See the module doc.
#[derive(Debug)]
pub struct RecordDecoder {
    schema: SchemaRef,
    /// The table's Avro schema, which the columns follow field for field (Avro plans are compiled against it).
    table: AvroSchema,
    root: Column,
    max_depth: usize,
    ignored_fields: u64,
}

impl RecordDecoder {
    /// A decoder for `arrow`, the data schema that [`avro_to_arrow`] gives for `avro` (checked).
    pub fn try_new(arrow: SchemaRef, avro: &AvroSchema) -> Result<Self, DecodeError> {
        let expected = avro_to_arrow(avro)?;
        if expected.fields() != arrow.fields() {
            let reason = expected
                .fields()
                .iter()
                .zip(arrow.fields().iter())
                .find(|(a, b)| a != b)
                .map(|(a, b)| {
                    format!(
                        "field `{}`: Avro gives {a:?}, the Arrow schema has {b:?}",
                        a.name()
                    )
                })
                .unwrap_or_else(|| {
                    format!(
                        "Avro gives {} columns, the Arrow schema has {}",
                        expected.fields().len(),
                        arrow.fields().len()
                    )
                });
            return Err(DecodeError::SchemaMismatch { reason });
        }
        let AvroSchema::Record(record) = avro else {
            return Err(DecodeError::SchemaMismatch {
                reason: format!("the table schema is {}, not a record", avro.describe()),
            });
        };
        let plan = Plan {
            names: avro.validate()?,
        };
        let full = record.name.fullname(None);
        let ns = namespace_of(&full).map(str::to_string);
        let root = plan.struct_data(record, ns, arrow.fields(), "")?;
        Ok(RecordDecoder {
            schema: arrow,
            table: avro.clone(),
            root: Column::new(
                format!("record {}", record.name.name),
                false,
                Data::Struct(root),
            ),
            max_depth: DEFAULT_MAX_DEPTH,
            ignored_fields: 0,
        })
    }

    /// Sets the nesting limit (at least 1, at most [`MAX_SUPPORTED_DEPTH`]).
    pub fn with_max_depth(mut self, max_depth: usize) -> Self {
        self.max_depth = max_depth.clamp(1, MAX_SUPPORTED_DEPTH);
        self
    }

    /// The Arrow data schema of the batches.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Records appended since the last [`RecordDecoder::finish`].
    pub fn len(&self) -> usize {
        self.root.len
    }

    /// Whether no record is pending.
    pub fn is_empty(&self) -> bool {
        self.root.len == 0
    }

    /// Fields a value carries that the table schema lacks, over the decoder's lifetime (accepted records
    /// only): JSON object members, and Avro writer fields a plan steps over. They are dropped, so the sink
    /// reports them (`IgnoredFields`).
    pub fn ignored_fields(&self) -> u64 {
        self.ignored_fields
    }

    /// Decodes one record value. On error nothing of it stays in the decoder.
    pub fn append(&mut self, json: &[u8]) -> Result<(), RecordDecodeError> {
        // The SIMD check is the fast path; std's names the first bad byte when it fails.
        let text = match simdutf8::basic::from_utf8(json) {
            Ok(text) => text,
            Err(_) => std::str::from_utf8(json).map_err(|e| {
                Fail::new(RecordDecodeReason::NotUtf8 {
                    byte_offset: e.valid_up_to(),
                })
                .into_error()
            })?,
        };
        let rows = self.root.len;
        let mut stats = Stats::default();
        let mut parser = Parser::new(text, self.max_depth);
        match self.decode_record(&mut parser, &mut stats) {
            Ok(()) => {
                self.ignored_fields += stats.ignored_fields;
                Ok(())
            }
            Err(fail) => {
                self.root.truncate(rows);
                Err(self.classify(text, fail).into_error())
            }
        }
    }

    fn decode_record(&mut self, p: &mut Parser<'_>, stats: &mut Stats) -> Result<(), Fail> {
        p.skip_whitespace();
        if p.pos >= p.bytes.len() {
            return Err(Fail::new(RecordDecodeReason::Empty));
        }
        let found = p.peek_type()?;
        if found != JsonType::Object {
            p.skip_value(false)?;
            p.end()?;
            return Err(Fail::new(RecordDecodeReason::NotObject { found }));
        }
        self.root.decode(p, stats)?;
        p.end()
    }

    /// Compiles `writer`, the schema an Avro value was written with, against the table's columns: once per
    /// writer schema, then [`RecordDecoder::append_avro`] per value.
    pub fn compile_avro(&self, writer: &AvroSchema) -> Result<AvroPlan, PlanError> {
        AvroPlan::compile(writer, &self.table)
    }

    /// Decodes one Avro binary datum (no framing) written with the schema `plan` was compiled from. On error
    /// nothing of it stays in the decoder.
    pub fn append_avro(&mut self, plan: &AvroPlan, datum: &[u8]) -> Result<(), RecordDecodeError> {
        let rows = self.root.len;
        let mut cursor = Cursor::new(datum, self.max_depth);
        match avro::read(plan, &mut self.root, &mut cursor) {
            Ok(()) => {
                self.ignored_fields += cursor.skipped_fields;
                Ok(())
            }
            Err(fail) => {
                self.root.truncate(rows);
                Err(fail.into_error())
            }
        }
    }

    /// Refuses a record whose column `field` holds `value` that cannot become `expected`, as the decoder
    /// refuses one (a Debezium decimal that is not its encoding is such a value).
    pub fn value_refusal(
        field: &str,
        value: String,
        expected: &str,
        detail: impl Into<String>,
    ) -> RecordDecodeError {
        invalid(value, expected, detail)
            .at(Segment::Field(field.to_string()))
            .into_error()
    }

    /// Refuses a record whose writer schema cannot be used, in the same error type as a decode refusal.
    pub fn schema_refusal(detail: impl Into<String>) -> RecordDecodeError {
        Fail::new(RecordDecodeReason::Schema {
            detail: detail.into(),
        })
        .into_error()
    }

    /// A record that is not JSON is reported as such even when a type error came first.
    fn classify(&self, text: &str, fail: Fail) -> Fail {
        if fail.reason.kind() != RecordErrorKind::Invalid {
            return fail;
        }
        let mut check = Parser::new(text, self.max_depth);
        match check.skip_value(false).and_then(|()| check.end()) {
            Err(syntax) if syntax.reason.kind() == RecordErrorKind::NotJson => syntax,
            _ => fail,
        }
    }

    /// The batch of every record appended since the last call; the decoder is empty afterwards.
    pub fn finish(&mut self) -> Result<RecordBatch, DecodeError> {
        let rows = std::mem::take(&mut self.root.len);
        let Data::Struct(root) = &mut self.root.data else {
            return Err(DecodeError::Arrow {
                source: ArrowError::InvalidArgumentError("root is not a struct".into()),
            });
        };
        let columns = root
            .slots
            .iter_mut()
            .zip(self.schema.fields().iter())
            .map(|(slot, field)| slot.column.finish(field.data_type()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|source| DecodeError::Arrow { source })?;
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        RecordBatch::try_new_with_options(self.schema.clone(), columns, &options)
            .map_err(|source| DecodeError::Arrow { source })
    }
}
