//! JSON record values → Arrow record batches of the table's data schema, one record at a time, all or nothing.
//!
//! A [`JsonDecoder`] is built once per table schema ([`JsonDecoder::try_new`]): every Avro type is resolved, every
//! default compiled, every record's field-name index built up front, so decoding a record does no schema lookup.
//! [`JsonDecoder::append`] reads one Kafka value straight into column buffers with a small streaming JSON parser
//! (no `serde_json::Value` per record, exact number text, duplicate keys seen); [`JsonDecoder::finish`] hands
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
//!   see [`JsonDecoder::with_max_depth`]); a value nested deeper is refused as [`RecordDecodeReason::TooDeep`]
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
//! and they are counted ([`JsonDecoder::ignored_fields`]) so that a producer writing to the wrong table shows up in
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

use crate::schema::arrow::avro_to_arrow;
use crate::schema::avro::{namespace_of, AvroSchema, LogicalType, NamedTypes, PrimitiveType};
use crate::schema::SchemaError;

/// Default nesting limit of objects and arrays in one record (the record object is level 1).
pub const DEFAULT_MAX_DEPTH: usize = 64;
/// Upper bound accepted by [`JsonDecoder::with_max_depth`]: decoding recurses once per level, and a Lambda
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
}

impl RecordDecodeReason {
    fn kind(&self) -> RecordErrorKind {
        match self {
            RecordDecodeReason::NotUtf8 { .. }
            | RecordDecodeReason::Empty
            | RecordDecodeReason::Syntax { .. } => RecordErrorKind::NotJson,
            RecordDecodeReason::NotObject { .. } => RecordErrorKind::NotObject,
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
// The JSON parser: a cursor over UTF-8 text that the decoder drives value by value.

/// Index of the first `"`, `\` or control character (below 0x20) in `bytes`, eight bytes per step.
///
/// Per word, `(v - 0x01…) & !v & 0x80…` flags the zero bytes of `v` (and `(v - n·0x01…) & !v & 0x80…` the
/// bytes below `n`); a borrow can only flag bytes *after* a true match, so the lowest flag is exact.
fn string_stop(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut chunks = bytes.chunks_exact(8);
    let mut offset = 0;
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let v = u64::from_le_bytes(word);
        let quote = v ^ (ONES * u64::from(b'"'));
        let backslash = v ^ (ONES * u64::from(b'\\'));
        let flags = (quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash)
            | (v.wrapping_sub(ONES * 0x20) & !v);
        let flags = flags & HIGHS;
        if flags != 0 {
            return Some(offset + (flags.trailing_zeros() / 8) as usize);
        }
        offset += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .map(|n| offset + n)
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    depth: usize,
    max_depth: usize,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str, max_depth: usize) -> Self {
        Parser {
            text,
            bytes: text.as_bytes(),
            pos: 0,
            depth: 0,
            max_depth,
        }
    }

    fn syntax(&self, message: &'static str) -> Fail {
        Fail::new(RecordDecodeReason::Syntax {
            byte_offset: self.pos,
            message,
        })
    }

    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    /// The first byte of the next token.
    fn peek(&mut self) -> Result<u8, Fail> {
        self.skip_whitespace();
        match self.bytes.get(self.pos) {
            Some(&b) => Ok(b),
            None => Err(self.syntax("unexpected end of input")),
        }
    }

    /// The JSON type of the next value (syntax error if no value starts here).
    fn peek_type(&mut self) -> Result<JsonType, Fail> {
        let b = self.peek()?;
        JsonType::from_first_byte(b).ok_or_else(|| self.syntax("expected a JSON value"))
    }

    fn literal(&mut self, word: &'static [u8]) -> Result<(), Fail> {
        match self.bytes.get(self.pos..self.pos + word.len()) {
            Some(found) if found == word => {
                self.pos += word.len();
                Ok(())
            }
            _ => Err(self.syntax("invalid literal")),
        }
    }

    fn boolean(&mut self) -> Result<bool, Fail> {
        if self.peek()? == b't' {
            self.literal(b"true").map(|()| true)
        } else {
            self.literal(b"false").map(|()| false)
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while let Some(b'0'..=b'9') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
        self.pos - start
    }

    /// A number's text, checked against the JSON grammar.
    fn number(&mut self) -> Result<&'a str, Fail> {
        self.skip_whitespace();
        let start = self.pos;
        if self.bytes.get(self.pos) == Some(&b'-') {
            self.pos += 1;
        }
        match self.bytes.get(self.pos) {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.syntax("invalid number")),
        }
        if self.bytes.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return Err(self.syntax("invalid number: no digit after the decimal point"));
            }
        }
        if let Some(b'e' | b'E') = self.bytes.get(self.pos) {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.bytes.get(self.pos) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(self.syntax("invalid number: no digit in the exponent"));
            }
        }
        Ok(self.text.get(start..self.pos).unwrap_or_default())
    }

    /// A string (the cursor is on its opening quote); borrowed unless it has escapes.
    fn string(&mut self) -> Result<Cow<'a, str>, Fail> {
        self.skip_whitespace();
        if self.bytes.get(self.pos) != Some(&b'"') {
            return Err(self.syntax("expected a string"));
        }
        self.pos += 1;
        let start = self.pos;
        // One scan for the end of the common, escape-free string.
        let rest = self.bytes.get(start..).unwrap_or_default();
        let stop = string_stop(rest);
        self.pos = start + stop.unwrap_or(rest.len());
        match stop.and_then(|n| rest.get(n)) {
            Some(b'"') => {
                let s = self.text.get(start..self.pos).unwrap_or_default();
                self.pos += 1;
                return Ok(Cow::Borrowed(s));
            }
            Some(b'\\') => {}
            Some(_) => return Err(self.syntax("control character in a string")),
            None => return Err(self.syntax("unterminated string")),
        }
        let mut out = String::from(self.text.get(start..self.pos).unwrap_or_default());
        loop {
            let run = self.pos;
            while let Some(&b) = self.bytes.get(self.pos) {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            out.push_str(self.text.get(run..self.pos).unwrap_or_default());
            match self.bytes.get(self.pos) {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(Cow::Owned(out));
                }
                Some(b'\\') => {
                    self.pos += 1;
                    self.escape(&mut out)?;
                }
                Some(_) => return Err(self.syntax("control character in a string")),
                None => return Err(self.syntax("unterminated string")),
            }
        }
    }

    /// One escape sequence (after the backslash).
    fn escape(&mut self, out: &mut String) -> Result<(), Fail> {
        let Some(&b) = self.bytes.get(self.pos) else {
            return Err(self.syntax("unterminated string"));
        };
        self.pos += 1;
        let c = match b {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let first = self.hex4()?;
                let code = match first {
                    0xD800..=0xDBFF => {
                        if self.bytes.get(self.pos..self.pos + 2) != Some(b"\\u") {
                            return Err(self.syntax("unpaired UTF-16 surrogate in \\u escape"));
                        }
                        self.pos += 2;
                        let second = self.hex4()?;
                        if !(0xDC00..=0xDFFF).contains(&second) {
                            return Err(self.syntax("unpaired UTF-16 surrogate in \\u escape"));
                        }
                        0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
                    }
                    0xDC00..=0xDFFF => {
                        return Err(self.syntax("unpaired UTF-16 surrogate in \\u escape"))
                    }
                    other => other,
                };
                char::from_u32(code).ok_or_else(|| self.syntax("invalid \\u escape"))?
            }
            _ => return Err(self.syntax("invalid escape")),
        };
        out.push(c);
        Ok(())
    }

    fn hex4(&mut self) -> Result<u32, Fail> {
        let mut code = 0u32;
        for _ in 0..4 {
            let digit = self
                .bytes
                .get(self.pos)
                .and_then(|&b| (b as char).to_digit(16))
                .ok_or_else(|| self.syntax("invalid \\u escape"))?;
            code = code * 16 + digit;
            self.pos += 1;
        }
        Ok(code)
    }

    fn enter(&mut self) -> Result<(), Fail> {
        self.pos += 1;
        self.depth += 1;
        if self.depth > self.max_depth {
            return Err(Fail::new(RecordDecodeReason::TooDeep {
                max_depth: self.max_depth,
            }));
        }
        Ok(())
    }

    /// Consumes `{` (the caller has peeked it).
    fn begin_object(&mut self) -> Result<(), Fail> {
        self.enter()
    }

    /// The next key of the object, or `None` after consuming `}`. `first` is true before the first member.
    fn object_key(&mut self, first: &mut bool) -> Result<Option<Cow<'a, str>>, Fail> {
        let mut c = self.peek()?;
        if c == b'}' {
            self.pos += 1;
            self.depth -= 1;
            return Ok(None);
        }
        if !*first {
            if c != b',' {
                return Err(self.syntax("expected ',' or '}' in an object"));
            }
            self.pos += 1;
            c = self.peek()?;
        }
        *first = false;
        if c != b'"' {
            return Err(self.syntax("expected a string key in an object"));
        }
        let key = self.string()?;
        if self.peek()? != b':' {
            return Err(self.syntax("expected ':' after an object key"));
        }
        self.pos += 1;
        Ok(Some(key))
    }

    /// Consumes `[` (the caller has peeked it).
    fn begin_array(&mut self) -> Result<(), Fail> {
        self.enter()
    }

    /// Whether another element follows (consumes `,`), or `false` after consuming `]`.
    fn array_next(&mut self, first: &mut bool) -> Result<bool, Fail> {
        let c = self.peek()?;
        if c == b']' {
            self.pos += 1;
            self.depth -= 1;
            return Ok(false);
        }
        if !*first {
            if c != b',' {
                return Err(self.syntax("expected ',' or ']' in an array"));
            }
            self.pos += 1;
        }
        *first = false;
        Ok(true)
    }

    /// Skips one value, checking its syntax and depth, and (when `check_duplicates`) that no object in it
    /// repeats a key.
    fn skip_value(&mut self, check_duplicates: bool) -> Result<(), Fail> {
        match self.peek_type()? {
            JsonType::Object => {
                self.begin_object()?;
                let mut seen: HashSet<Cow<'a, str>> = HashSet::new();
                let mut first = true;
                while let Some(key) = self.object_key(&mut first)? {
                    if check_duplicates && !seen.insert(key.clone()) {
                        return Err(Fail::new(RecordDecodeReason::DuplicateKey {
                            key: key.into_owned(),
                        }));
                    }
                    self.skip_value(check_duplicates)
                        .map_err(|f| f.at(Segment::Key(key.into_owned())))?;
                }
                Ok(())
            }
            JsonType::Array => {
                self.begin_array()?;
                let mut first = true;
                let mut index = 0;
                while self.array_next(&mut first)? {
                    self.skip_value(check_duplicates)
                        .map_err(|f| f.at(Segment::Index(index)))?;
                    index += 1;
                }
                Ok(())
            }
            JsonType::String => self.string().map(drop),
            JsonType::Number => self.number().map(drop),
            JsonType::Boolean => self.boolean().map(drop),
            JsonType::Null => self.literal(b"null"),
        }
    }

    /// Only whitespace may follow the value.
    fn end(&mut self) -> Result<(), Fail> {
        self.skip_whitespace();
        if self.pos < self.bytes.len() {
            return Err(self.syntax("unexpected characters after the JSON value"));
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Column buffers that can be truncated (the rollback of a refused record).

/// Offsets and bytes of a string/binary column.
#[derive(Debug)]
struct VarData {
    offsets: Vec<i32>,
    bytes: Vec<u8>,
}

impl VarData {
    fn new() -> Self {
        VarData {
            offsets: vec![0],
            bytes: Vec::new(),
        }
    }

    /// Closes the value whose bytes were appended since the last call.
    fn close(&mut self) -> Result<(), Fail> {
        let end = i32::try_from(self.bytes.len())
            .map_err(|_| Fail::new(RecordDecodeReason::ColumnFull))?;
        self.offsets.push(end);
        Ok(())
    }

    fn push(&mut self, value: &[u8]) -> Result<(), Fail> {
        self.bytes.extend_from_slice(value);
        self.close()
    }

    fn truncate(&mut self, len: usize) {
        self.offsets.truncate(len + 1);
        let end = self.offsets.last().copied().unwrap_or(0);
        self.bytes.truncate(usize::try_from(end).unwrap_or(0));
    }

    fn take(&mut self) -> Result<(OffsetBuffer<i32>, Buffer), ArrowError> {
        let taken = std::mem::replace(self, VarData::new());
        Ok((offset_buffer(taken.offsets)?, Buffer::from_vec(taken.bytes)))
    }
}

/// Checks what `OffsetBuffer::new` asserts, so that a bug here is an error rather than a panic.
fn offset_buffer(offsets: Vec<i32>) -> Result<OffsetBuffer<i32>, ArrowError> {
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
enum IntKind {
    Int,
    Date,
    TimeMillis,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum LongKind {
    Long,
    TimeMicros,
    Timestamp {
        unit: TimeUnit,
        timezone: Option<Arc<str>>,
    },
}

/// What a field missing from an object becomes.
#[derive(Debug, Clone)]
enum Missing {
    Default(DefaultValue),
    Null,
    Required,
}

/// An Avro default, converted once to the column's physical values.
#[derive(Debug, Clone, PartialEq)]
enum DefaultValue {
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
struct Slot {
    name: String,
    column: Column,
    missing: Missing,
    seen: bool,
}

#[derive(Debug)]
struct StructData {
    fields: Fields,
    slots: Vec<Slot>,
    /// Field name → slot index, built once.
    index: HashMap<String, usize>,
}

#[derive(Debug)]
enum Data {
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
struct Column {
    /// The type in messages (`long`, `decimal(10,2)`, `record trips_record`).
    expected: String,
    /// `Some` exactly when the column is nullable.
    nulls: Option<NullBufferBuilder>,
    len: usize,
    data: Data,
}

/// Per-append counters, added to the decoder's totals only when the record is accepted.
#[derive(Debug, Default)]
struct Stats {
    ignored_fields: u64,
}

impl Column {
    fn new(expected: String, nullable: bool, data: Data) -> Self {
        Column {
            expected,
            nulls: nullable.then(|| NullBufferBuilder::new(0)),
            len: 0,
            data,
        }
    }

    /// Records a valid slot whose data was just appended.
    fn mark_valid(&mut self) {
        if let Some(nulls) = &mut self.nulls {
            nulls.append_non_null();
        }
        self.len += 1;
    }

    /// Appends a slot under a null parent or for a null value: null if nullable, else a zero value (masked by
    /// the parent's null).
    fn append_empty(&mut self) -> Result<(), Fail> {
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
    fn truncate(&mut self, len: usize) {
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

    /// Decodes the next JSON value into one slot. On error the column may hold part of it: the caller truncates.
    fn decode(&mut self, p: &mut Parser<'_>, stats: &mut Stats) -> Result<(), Fail> {
        let first = p.peek()?;
        let Some(found) = JsonType::from_first_byte(first) else {
            return Err(p.syntax("expected a JSON value"));
        };
        if found == JsonType::Null {
            p.literal(b"null")?;
            if self.nulls.is_none() {
                return Err(Fail::new(RecordDecodeReason::NullNotAllowed {
                    expected: self.expected.clone(),
                }));
            }
            return self.append_empty();
        }
        let expected = self.expected.as_str();
        let wrong = || {
            Fail::new(RecordDecodeReason::WrongType {
                expected: expected.to_string(),
                found,
            })
        };
        match &mut self.data {
            Data::Boolean(b) => match found {
                JsonType::Boolean => b.append(p.boolean()?),
                _ => return Err(wrong()),
            },
            Data::Int32(v, kind) => {
                let value = match (found, *kind) {
                    (JsonType::Number, IntKind::TimeMillis) => {
                        let text = p.number()?;
                        let ms = parse_integer(text, expected)?;
                        if !(0..DAY_MILLIS).contains(&ms) {
                            return Err(invalid(
                                text.to_string(),
                                expected,
                                "must be at least 0 and less than 86400000 (24 h)",
                            ));
                        }
                        ms
                    }
                    (JsonType::Number, _) => parse_integer(p.number()?, expected)?,
                    (JsonType::String, IntKind::Date) => {
                        i64::from(parse_date(&p.string()?, expected)?)
                    }
                    _ => return Err(wrong()),
                };
                let value = i32::try_from(value).map_err(|_| {
                    invalid(
                        value.to_string(),
                        expected,
                        format!("out of range {}..={}", i32::MIN, i32::MAX),
                    )
                })?;
                v.push(value);
            }
            Data::Int64(v, kind) => {
                let value = match (found, &*kind) {
                    (JsonType::Number, LongKind::TimeMicros) => {
                        let text = p.number()?;
                        let us = parse_integer(text, expected)?;
                        if !(0..DAY_MICROS).contains(&us) {
                            return Err(invalid(
                                text.to_string(),
                                expected,
                                "must be at least 0 and less than 86400000000 (24 h)",
                            ));
                        }
                        us
                    }
                    (JsonType::Number, _) => parse_integer(p.number()?, expected)?,
                    (JsonType::String, LongKind::Timestamp { unit, timezone }) => {
                        parse_timestamp(&p.string()?, *unit, timezone.is_some(), expected)?
                    }
                    _ => return Err(wrong()),
                };
                v.push(value);
            }
            Data::Float32(v) => {
                let value = match found {
                    JsonType::Number => {
                        let text = p.number()?;
                        let x: f32 = text
                            .parse()
                            .map_err(|_| invalid(text.to_string(), expected, "not a number"))?;
                        if x.is_infinite() {
                            return Err(invalid(
                                text.to_string(),
                                expected,
                                "out of range (overflows to infinity)",
                            ));
                        }
                        x
                    }
                    JsonType::String => special_float(&p.string()?, expected)? as f32,
                    _ => return Err(wrong()),
                };
                v.push(value);
            }
            Data::Float64(v) => {
                let value = match found {
                    JsonType::Number => {
                        let text = p.number()?;
                        let x: f64 = text
                            .parse()
                            .map_err(|_| invalid(text.to_string(), expected, "not a number"))?;
                        if x.is_infinite() {
                            return Err(invalid(
                                text.to_string(),
                                expected,
                                "out of range (overflows to infinity)",
                            ));
                        }
                        x
                    }
                    JsonType::String => special_float(&p.string()?, expected)?,
                    _ => return Err(wrong()),
                };
                v.push(value);
            }
            Data::Decimal(v, precision, scale) => {
                let (text, shown) = match found {
                    JsonType::Number => {
                        let t = p.number()?;
                        (Cow::Borrowed(t), t.to_string())
                    }
                    JsonType::String => {
                        let s = p.string()?;
                        let shown = quoted(&s);
                        (s, shown)
                    }
                    _ => return Err(wrong()),
                };
                let value = parse_decimal(&text, *precision, *scale)
                    .map_err(|detail| invalid(shown, expected, detail))?;
                v.push(value);
            }
            Data::Utf8(v, symbols) => match found {
                JsonType::String => {
                    let s = p.string()?;
                    if let Some(symbols) = symbols {
                        if !symbols.contains(s.as_ref()) {
                            return Err(invalid(
                                quoted(&s),
                                expected,
                                "not one of the enum's symbols",
                            ));
                        }
                    }
                    v.push(s.as_bytes())?;
                }
                _ => return Err(wrong()),
            },
            Data::Binary(v) => match found {
                JsonType::String => {
                    let s = p.string()?;
                    STANDARD
                        .decode_vec(s.as_bytes(), &mut v.bytes)
                        .map_err(|e| {
                            invalid(quoted(&s), expected, format!("not standard base64: {e}"))
                        })?;
                    v.close()?;
                }
                _ => return Err(wrong()),
            },
            Data::Fixed(v, size) => match found {
                JsonType::String => {
                    let s = p.string()?;
                    let before = v.len();
                    STANDARD.decode_vec(s.as_bytes(), v).map_err(|e| {
                        invalid(quoted(&s), expected, format!("not standard base64: {e}"))
                    })?;
                    let got = v.len() - before;
                    if got != *size {
                        return Err(invalid(
                            quoted(&s),
                            expected,
                            format!("decodes to {got} bytes, the type holds exactly {size}"),
                        ));
                    }
                }
                _ => return Err(wrong()),
            },
            Data::Struct(s) => match found {
                JsonType::Object => decode_struct(s, p, stats)?,
                _ => return Err(wrong()),
            },
            Data::List { offsets, item, .. } => match found {
                JsonType::Array => {
                    p.begin_array()?;
                    let mut first = true;
                    let mut index = 0;
                    while p.array_next(&mut first)? {
                        item.decode(p, stats)
                            .map_err(|f| f.at(Segment::Index(index)))?;
                        index += 1;
                    }
                    offsets.push(
                        i32::try_from(item.len)
                            .map_err(|_| Fail::new(RecordDecodeReason::ColumnFull))?,
                    );
                }
                _ => return Err(wrong()),
            },
            Data::Map {
                offsets,
                keys,
                values,
                ..
            } => match found {
                JsonType::Object => {
                    p.begin_object()?;
                    let mut seen: HashSet<Cow<'_, str>> = HashSet::new();
                    let mut first = true;
                    while let Some(key) = p.object_key(&mut first)? {
                        if !seen.insert(key.clone()) {
                            return Err(Fail::new(RecordDecodeReason::DuplicateKey {
                                key: key.into_owned(),
                            }));
                        }
                        keys.push(key.as_bytes())?;
                        values
                            .decode(p, stats)
                            .map_err(|f| f.at(Segment::Key(key.into_owned())))?;
                    }
                    offsets.push(
                        i32::try_from(values.len)
                            .map_err(|_| Fail::new(RecordDecodeReason::ColumnFull))?,
                    );
                }
                _ => return Err(wrong()),
            },
        }
        self.mark_valid();
        Ok(())
    }

    /// Appends a compiled default.
    fn append_default(&mut self, value: &DefaultValue) -> Result<(), Fail> {
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
    fn finish(&mut self, data_type: &DataType) -> Result<ArrayRef, ArrowError> {
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
    fn finish(
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

/// Decodes one object into a struct's slots: members by name, then the missing fields.
fn decode_struct(s: &mut StructData, p: &mut Parser<'_>, stats: &mut Stats) -> Result<(), Fail> {
    p.begin_object()?;
    for slot in &mut s.slots {
        slot.seen = false;
    }
    let mut unknown: Option<HashSet<Cow<'_, str>>> = None;
    let mut first = true;
    // Producers mostly write the fields in schema order: try the slot after the last one matched before
    // hashing the name.
    let mut next = 0usize;
    while let Some(key) = p.object_key(&mut first)? {
        let found = match s.slots.get(next) {
            Some(slot) if slot.name == key.as_ref() => Some(next),
            _ => s.index.get(key.as_ref()).copied(),
        };
        if let Some(i) = found {
            next = i + 1;
        }
        match found.and_then(|i| s.slots.get_mut(i)) {
            Some(slot) => {
                if slot.seen {
                    return Err(Fail::new(RecordDecodeReason::DuplicateKey {
                        key: key.into_owned(),
                    }));
                }
                slot.seen = true;
                slot.column
                    .decode(p, stats)
                    .map_err(|f| f.at(Segment::Field(slot.name.clone())))?;
            }
            None => {
                if !unknown.get_or_insert_with(HashSet::new).insert(key.clone()) {
                    return Err(Fail::new(RecordDecodeReason::DuplicateKey {
                        key: key.into_owned(),
                    }));
                }
                p.skip_value(true)
                    .map_err(|f| f.at(Segment::Field(key.into_owned())))?;
                stats.ignored_fields += 1;
            }
        }
    }
    for slot in &mut s.slots {
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

// ---------------------------------------------------------------------------------------------------------------
// Value conversions.

/// An integer literal as `i64` (range-checked, no fraction or exponent).
fn parse_integer(text: &str, expected: &str) -> Result<i64, Fail> {
    if text.bytes().any(|b| matches!(b, b'.' | b'e' | b'E')) {
        return Err(invalid(
            text.to_string(),
            expected,
            "not an integer (fraction or exponent)",
        ));
    }
    text.parse::<i64>().map_err(|_| {
        let range = match expected {
            "int" | "date" | "time-millis" => format!("{}..={}", i32::MIN, i32::MAX),
            _ => format!("{}..={}", i64::MIN, i64::MAX),
        };
        invalid(quote_text(text), expected, format!("out of range {range}"))
    })
}

/// `"NaN"`, `"Infinity"`, `"-Infinity"` (Avro's JSON spelling of the IEEE specials).
fn special_float(text: &str, expected: &str) -> Result<f64, Fail> {
    match text {
        "NaN" => Ok(f64::NAN),
        "Infinity" => Ok(f64::INFINITY),
        "-Infinity" => Ok(f64::NEG_INFINITY),
        _ => Err(invalid(
            quoted(text),
            expected,
            "a string is accepted only as \"NaN\", \"Infinity\" or \"-Infinity\"",
        )),
    }
}

/// `YYYY-MM-DD` → days since 1970-01-01.
fn parse_date(text: &str, expected: &str) -> Result<i32, Fail> {
    let bad = |detail: &str| invalid(quoted(text), expected, detail.to_string());
    let b = text.as_bytes();
    let shape_ok = b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit());
    if !shape_ok {
        return Err(bad("expected YYYY-MM-DD"));
    }
    let num = |range: std::ops::Range<usize>| text.get(range).and_then(|s| s.parse::<u32>().ok());
    let (Some(y), Some(m), Some(d)) = (num(0..4), num(5..7), num(8..10)) else {
        return Err(bad("expected YYYY-MM-DD"));
    };
    let date = i32::try_from(y)
        .ok()
        .and_then(|y| NaiveDate::from_ymd_opt(y, m, d))
        .ok_or_else(|| bad("no such calendar date"))?;
    let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).ok_or_else(|| bad("epoch"))?;
    i32::try_from(date.signed_duration_since(epoch).num_days()).map_err(|_| bad("out of range"))
}

/// An RFC 3339 string (UTC columns) or an offset-free date-time (local columns) → the column unit.
fn parse_timestamp(text: &str, unit: TimeUnit, utc: bool, expected: &str) -> Result<i64, Fail> {
    let (secs, nanos) = if utc {
        let dt = DateTime::parse_from_rfc3339(text).map_err(|e| {
            invalid(
                quoted(text),
                expected,
                format!("not an RFC 3339 date-time with offset ({e})"),
            )
        })?;
        (dt.timestamp(), dt.timestamp_subsec_nanos())
    } else {
        let dt = NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f").map_err(|e| {
            invalid(
                quoted(text),
                expected,
                format!("not a date-time YYYY-MM-DDTHH:MM:SS[.fraction] without offset ({e})"),
            )
        })?;
        let utc = dt.and_utc();
        (utc.timestamp(), utc.timestamp_subsec_nanos())
    };
    let (per_second, nanos_per_unit) = match unit {
        TimeUnit::Millisecond => (1_000_i64, 1_000_000_u32),
        _ => (1_000_000_i64, 1_000_u32),
    };
    if nanos % nanos_per_unit != 0 {
        return Err(invalid(
            quoted(text),
            expected,
            "has more sub-second digits than the column holds",
        ));
    }
    secs.checked_mul(per_second)
        .and_then(|v| v.checked_add(i64::from(nanos / nanos_per_unit)))
        .ok_or_else(|| invalid(quoted(text), expected, "out of range"))
}

/// The unscaled value of a decimal given as JSON number text, exactly, or why not.
fn parse_decimal(text: &str, precision: u8, scale: i8) -> Result<i128, String> {
    let grammar = "not a decimal number (JSON number syntax expected)";
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(i) => (&unsigned[..i], Some(&unsigned[i + 1..])),
        None => (unsigned, None),
    };
    let (int_part, frac_part) = match mantissa.split_once('.') {
        Some((i, f)) => (i, f),
        None => (mantissa, ""),
    };
    let digits_ok = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits_ok(int_part)
        || (int_part.len() > 1 && int_part.starts_with('0'))
        || (mantissa.contains('.') && !digits_ok(frac_part))
    {
        return Err(grammar.to_string());
    }
    let all_zero = int_part.bytes().chain(frac_part.bytes()).all(|b| b == b'0');
    let exponent: i64 = match exponent {
        None => 0,
        Some(e) => {
            let body = e.strip_prefix(['+', '-']).unwrap_or(e);
            if !digits_ok(body) {
                return Err(grammar.to_string());
            }
            match e.parse::<i64>() {
                Ok(v) if v.abs() <= 100_000 => v,
                _ if all_zero => 0,
                _ => {
                    return Err(format!(
                        "exponent out of range for decimal({precision},{scale})"
                    ))
                }
            }
        }
    };
    if all_zero {
        return Ok(0);
    }
    // value = digits × 10^(exponent − len(frac)); unscaled = value × 10^scale.
    let digits: Vec<u8> = int_part
        .bytes()
        .chain(frac_part.bytes())
        .map(|b| b - b'0')
        .skip_while(|&d| d == 0)
        .collect();
    let frac_len = i64::try_from(frac_part.len()).unwrap_or(i64::MAX);
    let shift = exponent - frac_len + i64::from(scale);
    let mut significant: &[u8] = &digits;
    if shift < 0 {
        let drop = usize::try_from(-shift).unwrap_or(usize::MAX);
        let keep = significant.len().saturating_sub(drop);
        let (kept, dropped) = significant.split_at(keep);
        if dropped.iter().any(|&d| d != 0) || drop > significant.len() {
            return Err(format!(
                "has more than {scale} digits after the decimal point (decimal({precision},{scale}) would round it)"
            ));
        }
        significant = kept;
    }
    let zeros = usize::try_from(shift.max(0)).unwrap_or(usize::MAX);
    let total = significant.len().saturating_add(zeros);
    if total > usize::from(precision) {
        return Err(format!(
            "needs {total} digits; decimal({precision},{scale}) holds {precision}"
        ));
    }
    let mut value: i128 = 0;
    for &d in significant {
        value = value * 10 + i128::from(d);
    }
    for _ in 0..zeros {
        value *= 10;
    }
    Ok(if negative { -value } else { value })
}

// ---------------------------------------------------------------------------------------------------------------
// Building the decoder from the schema.

struct Plan<'s> {
    names: NamedTypes<'s>,
}

fn mismatch(path: &str, avro: &AvroSchema, data_type: &DataType) -> DecodeError {
    DecodeError::SchemaMismatch {
        reason: format!(
            "field `{path}`: Avro {} does not map to Arrow {data_type}",
            avro.describe()
        ),
    }
}

impl<'s> Plan<'s> {
    /// Follows references to the definition and the namespace its members live in.
    fn resolve(
        &self,
        mut schema: &'s AvroSchema,
        mut ns: Option<String>,
        path: &str,
    ) -> Result<(&'s AvroSchema, Option<String>), DecodeError> {
        for _ in 0..64 {
            let AvroSchema::Reference(name) = schema else {
                return Ok((schema, ns));
            };
            let Some((full, target)) = self.names.resolve(name, ns.as_deref()) else {
                return Err(DecodeError::SchemaMismatch {
                    reason: format!("field `{path}`: {name} is not a defined type"),
                });
            };
            ns = namespace_of(&full).map(str::to_string);
            schema = target;
        }
        Err(DecodeError::SchemaMismatch {
            reason: format!("field `{path}`: references do not resolve"),
        })
    }

    fn column(
        &self,
        schema: &'s AvroSchema,
        ns: Option<String>,
        field: &Field,
        path: &str,
    ) -> Result<Column, DecodeError> {
        let inner = match schema {
            AvroSchema::Union(branches) => {
                let mut non_null = branches.iter().filter(|b| !b.is_null());
                match (non_null.next(), non_null.next()) {
                    (Some(inner), None) => inner,
                    _ => return Err(mismatch(path, schema, field.data_type())),
                }
            }
            other => other,
        };
        let (inner, ns) = self.resolve(inner, ns, path)?;
        let data_type = field.data_type();
        let fail = || mismatch(path, inner, data_type);
        let (expected, data) = match inner {
            AvroSchema::Primitive(prim) => {
                let expected = match prim.logical_type {
                    Some(LogicalType::Decimal { precision, scale }) => {
                        format!("decimal({precision},{scale})")
                    }
                    Some(LogicalType::Uuid) | None => prim.primitive.name().to_string(),
                    Some(lt) => lt.name().to_string(),
                };
                let data = match (prim.primitive, prim.logical_type, data_type) {
                    (PrimitiveType::Boolean, None, DataType::Boolean) => {
                        Data::Boolean(BooleanBufferBuilder::new(0))
                    }
                    (PrimitiveType::Int, None, DataType::Int32) => {
                        Data::Int32(Vec::new(), IntKind::Int)
                    }
                    (PrimitiveType::Int, Some(LogicalType::Date), DataType::Date32) => {
                        Data::Int32(Vec::new(), IntKind::Date)
                    }
                    (
                        PrimitiveType::Int,
                        Some(LogicalType::TimeMillis),
                        DataType::Time32(TimeUnit::Millisecond),
                    ) => Data::Int32(Vec::new(), IntKind::TimeMillis),
                    (PrimitiveType::Long, None, DataType::Int64) => {
                        Data::Int64(Vec::new(), LongKind::Long)
                    }
                    (
                        PrimitiveType::Long,
                        Some(LogicalType::TimeMicros),
                        DataType::Time64(TimeUnit::Microsecond),
                    ) => Data::Int64(Vec::new(), LongKind::TimeMicros),
                    (
                        PrimitiveType::Long,
                        Some(
                            LogicalType::TimestampMillis
                            | LogicalType::TimestampMicros
                            | LogicalType::LocalTimestampMillis
                            | LogicalType::LocalTimestampMicros,
                        ),
                        DataType::Timestamp(
                            unit @ (TimeUnit::Millisecond | TimeUnit::Microsecond),
                            timezone,
                        ),
                    ) => Data::Int64(
                        Vec::new(),
                        LongKind::Timestamp {
                            unit: *unit,
                            timezone: timezone.clone(),
                        },
                    ),
                    (PrimitiveType::Float, None, DataType::Float32) => Data::Float32(Vec::new()),
                    (PrimitiveType::Double, None, DataType::Float64) => Data::Float64(Vec::new()),
                    (PrimitiveType::String, None | Some(LogicalType::Uuid), DataType::Utf8) => {
                        Data::Utf8(VarData::new(), None)
                    }
                    (PrimitiveType::Bytes, None, DataType::Binary) => Data::Binary(VarData::new()),
                    (
                        PrimitiveType::Bytes,
                        Some(LogicalType::Decimal { .. }),
                        DataType::Decimal128(p, s),
                    ) => Data::Decimal(Vec::new(), *p, *s),
                    _ => return Err(fail()),
                };
                (expected, data)
            }
            AvroSchema::Enum(e) => match data_type {
                DataType::Utf8 => (
                    format!("enum {}", e.name.name),
                    Data::Utf8(VarData::new(), Some(e.symbols.iter().cloned().collect())),
                ),
                _ => return Err(fail()),
            },
            AvroSchema::Fixed(f) => match (f.logical_type, data_type) {
                (None, DataType::FixedSizeBinary(n))
                    if usize::try_from(*n).ok() == Some(f.size) =>
                {
                    (
                        format!("fixed({})", f.size),
                        Data::Fixed(Vec::new(), f.size),
                    )
                }
                (Some(LogicalType::Decimal { precision, scale }), DataType::Decimal128(p, s)) => (
                    format!("decimal({precision},{scale})"),
                    Data::Decimal(Vec::new(), *p, *s),
                ),
                _ => return Err(fail()),
            },
            AvroSchema::Record(r) => {
                let DataType::Struct(fields) = data_type else {
                    return Err(fail());
                };
                let full = r.name.fullname(ns.as_deref());
                let child_ns = namespace_of(&full).map(str::to_string);
                (
                    format!("record {}", r.name.name),
                    Data::Struct(self.struct_data(r, child_ns, fields, path)?),
                )
            }
            AvroSchema::Array(a) => {
                let DataType::List(item_field) = data_type else {
                    return Err(fail());
                };
                let item = self.column(&a.items, ns, item_field, &format!("{path}[]"))?;
                (
                    "array".to_string(),
                    Data::List {
                        offsets: vec![0],
                        item: Box::new(item),
                        field: item_field.clone(),
                    },
                )
            }
            AvroSchema::Map(m) => {
                let DataType::Map(entries, _) = data_type else {
                    return Err(fail());
                };
                let DataType::Struct(entry_fields) = entries.data_type() else {
                    return Err(fail());
                };
                let (Some(key_field), Some(value_field), 2) = (
                    entry_fields.first(),
                    entry_fields.get(1),
                    entry_fields.len(),
                ) else {
                    return Err(fail());
                };
                if key_field.data_type() != &DataType::Utf8 || key_field.is_nullable() {
                    return Err(fail());
                }
                let values = self.column(&m.values, ns, value_field, &format!("{path}{{}}"))?;
                (
                    "map".to_string(),
                    Data::Map {
                        offsets: vec![0],
                        keys: VarData::new(),
                        values: Box::new(values),
                        entries: entries.clone(),
                        entry_fields: entry_fields.clone(),
                    },
                )
            }
            AvroSchema::Union(_) | AvroSchema::Reference(_) => return Err(fail()),
        };
        Ok(Column::new(expected, field.is_nullable(), data))
    }

    fn struct_data(
        &self,
        record: &'s crate::schema::avro::RecordSchema,
        ns: Option<String>,
        fields: &Fields,
        path: &str,
    ) -> Result<StructData, DecodeError> {
        if record.fields.len() != fields.len() {
            return Err(DecodeError::SchemaMismatch {
                reason: format!(
                    "record `{}` has {} fields in Avro and {} in Arrow",
                    if path.is_empty() { "$" } else { path },
                    record.fields.len(),
                    fields.len()
                ),
            });
        }
        let mut slots = Vec::with_capacity(fields.len());
        let mut index = HashMap::with_capacity(fields.len());
        for (i, (avro_field, arrow_field)) in record.fields.iter().zip(fields.iter()).enumerate() {
            let field_path = if path.is_empty() {
                avro_field.name.clone()
            } else {
                format!("{path}.{}", avro_field.name)
            };
            if &avro_field.name != arrow_field.name() {
                return Err(DecodeError::SchemaMismatch {
                    reason: format!(
                        "field `{field_path}` is called `{}` in the Arrow schema",
                        arrow_field.name()
                    ),
                });
            }
            let column = self.column(&avro_field.schema, ns.clone(), arrow_field, &field_path)?;
            let missing = match &avro_field.default {
                Some(json) => {
                    Missing::Default(compile_default(&column, json).map_err(|reason| {
                        DecodeError::InvalidDefault {
                            path: field_path.clone(),
                            default: json.to_string(),
                            reason,
                        }
                    })?)
                }
                None if column.nulls.is_some() => Missing::Null,
                None => Missing::Required,
            };
            index.insert(avro_field.name.clone(), i);
            slots.push(Slot {
                name: avro_field.name.clone(),
                column,
                missing,
                seen: false,
            });
        }
        Ok(StructData {
            fields: fields.clone(),
            slots,
            index,
        })
    }
}

/// Bytes of an Avro JSON default for bytes/fixed: each code point U+0000–U+00FF is one byte.
fn latin1_bytes(json: &Value) -> Result<Vec<u8>, String> {
    let Value::String(s) = json else {
        return Err("bytes defaults are strings".to_string());
    };
    s.chars()
        .map(|c| {
            u8::try_from(u32::from(c))
                .map_err(|_| format!("character {c:?} is not a byte (U+0000–U+00FF)"))
        })
        .collect()
}

/// Converts an Avro default to the column's values, once, so that appending it cannot fail on content.
fn compile_default(column: &Column, json: &Value) -> Result<DefaultValue, String> {
    if json.is_null() {
        return if column.nulls.is_some() {
            Ok(DefaultValue::Null)
        } else {
            Err(format!("null for a non-nullable {}", column.expected))
        };
    }
    let wrong = || format!("{json} is not a {}", column.expected);
    let as_i64 = || json.as_i64().ok_or_else(wrong);
    let as_f64 = || match json {
        Value::Number(n) => n.as_f64().ok_or_else(wrong),
        Value::String(s) if s == "NaN" => Ok(f64::NAN),
        Value::String(s) if s == "Infinity" => Ok(f64::INFINITY),
        Value::String(s) if s == "-Infinity" => Ok(f64::NEG_INFINITY),
        _ => Err(wrong()),
    };
    Ok(match &column.data {
        Data::Boolean(_) => DefaultValue::Bool(json.as_bool().ok_or_else(wrong)?),
        Data::Int32(..) => DefaultValue::I32(i32::try_from(as_i64()?).map_err(|_| wrong())?),
        Data::Int64(..) => DefaultValue::I64(as_i64()?),
        Data::Float32(_) => DefaultValue::F32(as_f64()? as f32),
        Data::Float64(_) => DefaultValue::F64(as_f64()?),
        Data::Decimal(_, precision, _) => {
            let bytes = latin1_bytes(json)?;
            if bytes.is_empty() || bytes.len() > 16 {
                return Err(format!("{} bytes cannot hold a decimal128", bytes.len()));
            }
            let negative = bytes.first().is_some_and(|b| b & 0x80 != 0);
            let mut value: i128 = if negative { -1 } else { 0 };
            for b in bytes {
                value = (value << 8) | i128::from(b);
            }
            let limit = 10_i128
                .checked_pow(u32::from(*precision))
                .unwrap_or(i128::MAX);
            if value.checked_abs().is_none_or(|v| v >= limit) {
                return Err(format!(
                    "unscaled value {value} has more than {precision} digits"
                ));
            }
            DefaultValue::I128(value)
        }
        Data::Utf8(_, symbols) => {
            let s = json.as_str().ok_or_else(wrong)?;
            if let Some(symbols) = symbols {
                if !symbols.contains(s) {
                    return Err(format!("{s:?} is not a symbol of {}", column.expected));
                }
            }
            DefaultValue::Bytes(s.as_bytes().to_vec())
        }
        Data::Binary(_) => DefaultValue::Bytes(latin1_bytes(json)?),
        Data::Fixed(_, size) => {
            let bytes = latin1_bytes(json)?;
            if bytes.len() != *size {
                return Err(format!("{} bytes for a fixed({size})", bytes.len()));
            }
            DefaultValue::Bytes(bytes)
        }
        Data::Struct(s) => {
            let Value::Object(members) = json else {
                return Err(wrong());
            };
            let values =
                s.slots
                    .iter()
                    .map(|slot| match members.get(&slot.name) {
                        Some(v) => compile_default(&slot.column, v)
                            .map_err(|e| format!("{}: {e}", slot.name)),
                        None => match &slot.missing {
                            Missing::Default(d) => Ok(d.clone()),
                            Missing::Null => Ok(DefaultValue::Null),
                            Missing::Required => {
                                Err(format!("{}: missing and without default", slot.name))
                            }
                        },
                    })
                    .collect::<Result<Vec<_>, _>>()?;
            DefaultValue::Struct(values)
        }
        Data::List { item, .. } => {
            let Value::Array(items) = json else {
                return Err(wrong());
            };
            DefaultValue::List(
                items
                    .iter()
                    .map(|v| compile_default(item, v))
                    .collect::<Result<Vec<_>, _>>()?,
            )
        }
        Data::Map { values, .. } => {
            let Value::Object(members) = json else {
                return Err(wrong());
            };
            DefaultValue::Map(
                members
                    .iter()
                    .map(|(k, v)| compile_default(values, v).map(|d| (k.clone(), d)))
                    .collect::<Result<Vec<_>, _>>()?,
            )
        }
    })
}

// ---------------------------------------------------------------------------------------------------------------
// The decoder.

/// Decodes JSON record values into record batches of a table's Arrow data schema. See the module doc.
#[derive(Debug)]
pub struct JsonDecoder {
    schema: SchemaRef,
    root: Column,
    max_depth: usize,
    ignored_fields: u64,
}

impl JsonDecoder {
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
        Ok(JsonDecoder {
            schema: arrow,
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

    /// Records appended since the last [`JsonDecoder::finish`].
    pub fn len(&self) -> usize {
        self.root.len
    }

    /// Whether no record is pending.
    pub fn is_empty(&self) -> bool {
        self.root.len == 0
    }

    /// Object members ignored because the schema has no such field, over the decoder's lifetime (accepted
    /// records only).
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

#[cfg(test)]
mod tests {
    #[test]
    fn string_stop_finds_exactly_the_first_special_byte() {
        let naive = |b: &[u8]| b.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20);
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        // Every byte value at every position of a 20-byte run of plain text, then random mixes.
        for special in 0..=255u8 {
            for at in 0..20 {
                let mut text = vec![b'a'; 20];
                text[at] = special;
                assert_eq!(
                    super::string_stop(&text),
                    naive(&text),
                    "{special:#x} at {at}"
                );
            }
        }
        for len in 0..300usize {
            let text: Vec<u8> = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    // Mostly high and printable bytes, sometimes a special one.
                    match state % 50 {
                        0 => b'"',
                        1 => b'\\',
                        2 => (state >> 8) as u8 % 0x20,
                        _ => 0x20 + (state >> 8) as u8 % 0xE0,
                    }
                })
                .collect();
            assert_eq!(super::string_stop(&text), naive(&text), "{text:?}");
        }
    }

    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::Array;
    use arrow_schema::Schema;

    const TRIPS: &str = r#"{"type":"record","name":"trips_record","namespace":"hoodie.trips","fields":[
        {"name":"uuid","type":"string"},
        {"name":"ts","type":"long"},
        {"name":"rider","type":["null","string"],"default":null},
        {"name":"fare","type":["null","double"],"default":null},
        {"name":"city","type":"string"},
        {"name":"_hoodie_is_deleted","type":["null","boolean"],"default":null}]}"#;

    fn decoder(avsc: &str) -> JsonDecoder {
        let avro = AvroSchema::parse(avsc).unwrap_or_else(|e| panic!("schema: {e}"));
        let arrow = avro_to_arrow(&avro).unwrap_or_else(|e| panic!("arrow: {e}"));
        JsonDecoder::try_new(Arc::new(arrow), &avro).unwrap_or_else(|e| panic!("decoder: {e}"))
    }

    /// A one-field record `{"f": <type>}` (nullable when `nullable`).
    fn one(field_type: &str) -> JsonDecoder {
        decoder(&format!(
            r#"{{"type":"record","name":"r","fields":[{{"name":"f","type":{field_type}}}]}}"#
        ))
    }

    fn ok(d: &mut JsonDecoder, json: &str) {
        if let Err(e) = d.append(json.as_bytes()) {
            panic!("{json}: {e}");
        }
    }

    fn err(d: &mut JsonDecoder, json: &str) -> RecordDecodeError {
        let before = d.len();
        match d.append(json.as_bytes()) {
            Ok(()) => panic!("{json}: accepted"),
            Err(e) => {
                assert_eq!(d.len(), before, "{json}: length changed");
                e
            }
        }
    }

    fn batch(d: &mut JsonDecoder) -> RecordBatch {
        d.finish().unwrap_or_else(|e| panic!("finish: {e}"))
    }

    /// Column 0 after decoding each value of `f`, or the error text.
    fn field_i64(field_type: &str, values: &[&str]) -> Vec<Result<i64, String>> {
        values
            .iter()
            .map(|v| {
                let mut d = one(field_type);
                d.append(format!(r#"{{"f":{v}}}"#).as_bytes())
                    .map_err(|e| e.to_string())?;
                let b = batch(&mut d);
                let col = b.column(0);
                Ok(match col.data_type() {
                    DataType::Int32 => i64::from(col.as_primitive::<Int32Type>().value(0)),
                    DataType::Date32 => i64::from(col.as_primitive::<Date32Type>().value(0)),
                    DataType::Time32(_) => {
                        i64::from(col.as_primitive::<Time32MillisecondType>().value(0))
                    }
                    DataType::Time64(_) => col.as_primitive::<Time64MicrosecondType>().value(0),
                    DataType::Int64 => col.as_primitive::<Int64Type>().value(0),
                    DataType::Timestamp(TimeUnit::Millisecond, _) => {
                        col.as_primitive::<TimestampMillisecondType>().value(0)
                    }
                    DataType::Timestamp(TimeUnit::Microsecond, _) => {
                        col.as_primitive::<TimestampMicrosecondType>().value(0)
                    }
                    other => panic!("{other}"),
                })
            })
            .collect()
    }

    #[test]
    fn trips_records_decode_with_nulls_missing_and_unknown_fields() {
        let mut d = decoder(TRIPS);
        ok(
            &mut d,
            r#"{"uuid":"a","ts":1,"rider":"r1","fare":12.5,"city":"sf","_hoodie_is_deleted":false}"#,
        );
        ok(
            &mut d,
            r#"{"city":"nyc","ts":9007199254740993,"uuid":"b","rider":null}"#,
        );
        ok(
            &mut d,
            r#" {"uuid":"c\u00e9\ud83d\ude00","ts":-3,"city":"x","extra":{"deep":[1,{"a":null}]},"more":1} "#,
        );
        assert_eq!(d.len(), 3);
        assert_eq!(d.ignored_fields(), 2);
        let b = batch(&mut d);
        assert!(d.is_empty());
        assert_eq!(b.num_rows(), 3);
        let uuid = b.column(0).as_string::<i32>();
        assert_eq!(uuid.value(2), "cé😀");
        let ts = b.column(1).as_primitive::<Int64Type>();
        assert_eq!(ts.values().to_vec(), vec![1, 9_007_199_254_740_993, -3]);
        let rider = b.column(2).as_string::<i32>();
        assert_eq!(
            (rider.value(0), rider.is_null(1), rider.is_null(2)),
            ("r1", true, true)
        );
        let fare = b.column(3).as_primitive::<Float64Type>();
        assert_eq!((fare.value(0), fare.is_null(1)), (12.5, true));
        let deleted = b.column(5).as_boolean();
        assert_eq!((deleted.value(0), deleted.is_null(1)), (false, true));
        assert_eq!(b.schema(), *d.schema());
    }

    #[test]
    fn refused_records_leave_nothing_behind() {
        let mut d = decoder(
            r#"{"type":"record","name":"r","fields":[
                {"name":"id","type":"string"},
                {"name":"tags","type":{"type":"map","values":{"type":"array","items":"string"}}},
                {"name":"stops","type":{"type":"array","items":{"type":"record","name":"stop","fields":[
                    {"name":"name","type":"string"},{"name":"bin","type":"bytes"}]}}}]}"#,
        );
        ok(
            &mut d,
            r#"{"id":"1","tags":{"a":["x","y"]},"stops":[{"name":"s","bin":"AAE="}]}"#,
        );
        // Fails deep inside, after strings, map entries, list items and bytes were appended.
        let e = err(
            &mut d,
            r#"{"id":"2","tags":{"a":["p"],"b":["q"]},"stops":[{"name":"t","bin":"AAE="},{"name":"u","bin":7}]}"#,
        );
        assert_eq!(e.path(), "stops[1].bin");
        assert_eq!(
            e.to_string(),
            "field `stops[1].bin`: expected bytes, found a number"
        );
        let e = err(&mut d, r#"{"id":"3","tags":{"k":["a",null]},"stops":[]}"#);
        assert_eq!(e.path(), r#"tags["k"][1]"#);
        assert!(matches!(
            e.reason(),
            RecordDecodeReason::NullNotAllowed { .. }
        ));
        ok(
            &mut d,
            r#"{"id":"4","tags":{},"stops":[{"name":"v","bin":""}]}"#,
        );
        let b = batch(&mut d);
        assert_eq!(b.num_rows(), 2);
        assert_eq!(
            b.column(0).as_string::<i32>().iter().collect::<Vec<_>>(),
            [Some("1"), Some("4")]
        );
        let tags = b.column(1).as_map();
        assert_eq!(tags.value_offsets(), &[0, 1, 1]);
        assert_eq!(tags.keys().as_string::<i32>().value(0), "a");
        let stops = b.column(2).as_list::<i32>();
        assert_eq!(stops.value_offsets(), &[0, 1, 2]);
        let stop = stops.values().as_struct();
        assert_eq!(stop.column(0).as_string::<i32>().value(1), "v");
        assert_eq!(stop.column(1).as_binary::<i32>().value(0), &[0u8, 1]);
        // The decoder is reusable after finish.
        ok(&mut d, r#"{"id":"5","tags":{},"stops":[]}"#);
        assert_eq!(batch(&mut d).num_rows(), 1);
        assert_eq!(batch(&mut d).num_rows(), 0);
    }

    #[test]
    fn classification_not_json_not_object_invalid() {
        let mut d = decoder(TRIPS);
        let cases: &[(&[u8], RecordErrorKind)] = &[
            (b"", RecordErrorKind::NotJson),
            (b"   ", RecordErrorKind::NotJson),
            (b"\xff{}", RecordErrorKind::NotJson),
            (b"{\"uuid\":\"a\"", RecordErrorKind::NotJson),
            (b"{} {}", RecordErrorKind::NotJson),
            (b"{\"uuid\":1,", RecordErrorKind::NotJson), // a type error first, then broken JSON
            (b"{'uuid':1}", RecordErrorKind::NotJson),
            (b"{\"a\":01}", RecordErrorKind::NotJson),
            (b"{\"a\":1,}", RecordErrorKind::NotJson),
            (b"[1,]", RecordErrorKind::NotJson),
            (b"{\"a\":\"\\ud800\"}", RecordErrorKind::NotJson),
            (b"{\"a\":\"tab\there\"}", RecordErrorKind::NotJson),
            (b"nul", RecordErrorKind::NotJson),
            (b"[1,2]", RecordErrorKind::NotObject),
            (b"\"text\"", RecordErrorKind::NotObject),
            (b"null", RecordErrorKind::NotObject),
            (b"42", RecordErrorKind::NotObject),
            (b"{\"uuid\":1}", RecordErrorKind::Invalid),
        ];
        for (input, kind) in cases {
            match d.append(input) {
                Ok(()) => panic!("{:?} accepted", String::from_utf8_lossy(input)),
                Err(e) => assert_eq!(e.kind(), *kind, "{:?}: {e}", String::from_utf8_lossy(input)),
            }
        }
        assert!(d.is_empty());
        assert_eq!(
            err(&mut d, "[1,2]").to_string(),
            "expected a JSON object, found an array"
        );
        assert_eq!(err(&mut d, "").to_string(), "not JSON: the value is empty");
        assert_eq!(
            err(&mut d, r#"{"uuid":"a"} x"#).to_string(),
            "not JSON: unexpected characters after the JSON value at byte 13"
        );
    }

    #[test]
    fn missing_wrong_and_duplicate_fields() {
        let mut d = decoder(TRIPS);
        let e = err(&mut d, r#"{"uuid":"a","ts":1}"#);
        assert_eq!(
            e.to_string(),
            "field `city`: required field is missing (not nullable and no default)"
        );
        let e = err(&mut d, r#"{"uuid":"a","ts":"1","city":"c"}"#);
        assert_eq!(e.to_string(), "field `ts`: expected long, found a string");
        let e = err(&mut d, r#"{"uuid":null,"ts":1,"city":"c"}"#);
        assert_eq!(
            e.to_string(),
            "field `uuid`: null is not allowed: the field is a non-nullable string"
        );
        let e = err(&mut d, r#"{"uuid":"a","uuid":"b","ts":1,"city":"c"}"#);
        assert_eq!(e.to_string(), "duplicate key \"uuid\" in one object");
        let e = err(&mut d, r#"{"uuid":"a","ts":1,"city":"c","x":1,"x":2}"#);
        assert!(matches!(e.reason(), RecordDecodeReason::DuplicateKey { key } if key == "x"));
        let e = err(
            &mut d,
            r#"{"uuid":"a","ts":1,"city":"c","x":{"y":1,"y":2}}"#,
        );
        assert_eq!(e.path(), "x");
        assert!(matches!(e.reason(), RecordDecodeReason::DuplicateKey { key } if key == "y"));
        let e = err(&mut d, r#"{"uuid":"a","ts":1,"city":"c","fare":"12.5"}"#);
        assert_eq!(e.to_string(), "field `fare`: \"12.5\" is not a valid double: a string is accepted only as \"NaN\", \"Infinity\" or \"-Infinity\"");
        // Maps refuse duplicate keys too.
        let mut m = one(r#"{"type":"map","values":"int"}"#);
        let e = err(&mut m, r#"{"f":{"a":1,"a":2}}"#);
        assert_eq!(
            e.to_string(),
            "field `f`: duplicate key \"a\" in one object"
        );
        ok(&mut m, r#"{"f":{"a":1,"b":2}}"#);
    }

    #[test]
    fn nesting_is_bounded() {
        let mut d = decoder(TRIPS).with_max_depth(4);
        ok(&mut d, r#"{"uuid":"a","ts":1,"city":"c","x":[[[]]]}"#);
        let e = err(&mut d, r#"{"uuid":"a","ts":1,"city":"c","x":[[[[]]]]}"#);
        assert_eq!(e.reason(), &RecordDecodeReason::TooDeep { max_depth: 4 });
        let mut d = decoder(TRIPS);
        let deep = format!(
            r#"{{"uuid":"a","ts":1,"city":"c","x":{}{}}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        let e = err(&mut d, &deep);
        assert_eq!(
            e.reason(),
            &RecordDecodeReason::TooDeep {
                max_depth: DEFAULT_MAX_DEPTH
            }
        );
        // Unbalanced and deep: still reported without recursing past the limit.
        let e = err(&mut d, &"[".repeat(100_000));
        assert_eq!(e.kind(), RecordErrorKind::Invalid);
    }

    #[test]
    fn integers_are_range_checked() {
        assert_eq!(
            field_i64(r#""int""#, &["2147483647", "-2147483648", "0", "-0"]),
            vec![Ok(2147483647), Ok(-2147483648), Ok(0), Ok(0)]
        );
        let errors = field_i64(
            r#""int""#,
            &[
                "2147483648",
                "-2147483649",
                "1.0",
                "1e3",
                "99999999999999999999999",
            ],
        );
        assert_eq!(
            errors[0],
            Err(
                "field `f`: 2147483648 is not a valid int: out of range -2147483648..=2147483647"
                    .into()
            )
        );
        assert!(errors[1].is_err());
        assert_eq!(
            errors[2],
            Err("field `f`: 1.0 is not a valid int: not an integer (fraction or exponent)".into())
        );
        assert!(errors[3].is_err() && errors[4].is_err());
        assert_eq!(
            field_i64(r#""long""#, &["9223372036854775807", "-9223372036854775808", "9223372036854775808"]),
            vec![
                Ok(i64::MAX),
                Ok(i64::MIN),
                Err("field `f`: 9223372036854775808 is not a valid long: out of range -9223372036854775808..=9223372036854775807".into())
            ]
        );
    }

    #[test]
    fn floats_and_specials() {
        let mut d = decoder(
            r#"{"type":"record","name":"r","fields":[{"name":"f","type":"float"},{"name":"d","type":"double"}]}"#,
        );
        ok(&mut d, r#"{"f":0.1,"d":0.1}"#);
        ok(&mut d, r#"{"f":"NaN","d":"-Infinity"}"#);
        ok(&mut d, r#"{"f":1e-50,"d":5e-324}"#);
        assert!(err(&mut d, r#"{"f":1e39,"d":1}"#)
            .to_string()
            .contains("overflows to infinity"));
        assert!(err(&mut d, r#"{"f":1,"d":1e309}"#)
            .to_string()
            .contains("overflows to infinity"));
        let b = batch(&mut d);
        let f = b.column(0).as_primitive::<Float32Type>();
        let g = b.column(1).as_primitive::<Float64Type>();
        assert_eq!(f.value(0), 0.1_f32);
        assert!(f.value(1).is_nan());
        assert_eq!(g.value(1), f64::NEG_INFINITY);
        assert_eq!(g.value(2), 5e-324);
    }

    #[test]
    fn decimals_are_exact() {
        let fixed = r#"{"type":"fixed","name":"d","size":8,"logicalType":"decimal","precision":6,"scale":2}"#;
        let bytes = r#"{"type":"bytes","logicalType":"decimal","precision":6,"scale":2}"#;
        for schema in [fixed, bytes] {
            let cases: &[(&str, Result<i128, &str>)] = &[
                ("1234.56", Ok(123456)),
                ("\"1234.56\"", Ok(123456)),
                ("-0.01", Ok(-1)),
                ("1.5", Ok(150)),
                ("1.500", Ok(150)),
                ("12", Ok(1200)),
                ("0", Ok(0)),
                ("-0.000", Ok(0)),
                ("1.5e2", Ok(15000)),
                ("\"1.5E-1\"", Ok(15)),
                (
                    "\"1.5E-2\"",
                    Err("has more than 2 digits after the decimal point"),
                ),
                ("0e999999999999999999", Ok(0)),
                (
                    "0.1234567890123456789",
                    Err("has more than 2 digits after the decimal point"),
                ),
                (
                    "1.005",
                    Err("has more than 2 digits after the decimal point"),
                ),
                ("12345.6", Err("needs 7 digits; decimal(6,2) holds 6")),
                ("1e4", Err("needs 7 digits")),
                ("\"1.2.3\"", Err("not a decimal number")),
                ("\" 1\"", Err("not a decimal number")),
                ("\"+1\"", Err("not a decimal number")),
                ("\"01\"", Err("not a decimal number")),
                ("\"\"", Err("not a decimal number")),
                ("1e999999999999999999", Err("exponent out of range")),
                ("true", Err("expected decimal(6,2), found a boolean")),
            ];
            for (json, want) in cases {
                let mut d = one(schema);
                let got = d.append(format!(r#"{{"f":{json}}}"#).as_bytes());
                match (got, want) {
                    (Ok(()), Ok(v)) => {
                        let b = batch(&mut d);
                        let col = b.column(0).as_primitive::<Decimal128Type>();
                        assert_eq!(col.value(0), *v, "{json}");
                        assert_eq!(col.data_type(), &DataType::Decimal128(6, 2));
                    }
                    (Err(e), Err(text)) => assert!(e.to_string().contains(text), "{json}: {e}"),
                    (got, want) => panic!("{json}: got {got:?}, want {want:?}"),
                }
            }
        }
        // 38 digits fit, 39 do not.
        let mut d = one(r#"{"type":"bytes","logicalType":"decimal","precision":38,"scale":0}"#);
        ok(&mut d, &format!(r#"{{"f":{}}}"#, "9".repeat(38)));
        assert!(d
            .append(format!(r#"{{"f":{}}}"#, "9".repeat(39)).as_bytes())
            .is_err());
        let b = batch(&mut d);
        assert_eq!(
            b.column(0).as_primitive::<Decimal128Type>().value(0),
            10_i128.pow(38) - 1
        );
    }

    #[test]
    fn dates_times_and_timestamps() {
        assert_eq!(
            field_i64(
                r#"{"type":"int","logicalType":"date"}"#,
                &[
                    "\"1970-01-01\"",
                    "\"2024-02-29\"",
                    "\"1969-12-31\"",
                    "19782",
                    "\"2023-02-29\"",
                    "\"2024-1-01\"",
                    "\"2024-01-01T00:00:00Z\""
                ]
            ),
            vec![
                Ok(0),
                Ok(19782),
                Ok(-1),
                Ok(19782),
                Err("field `f`: \"2023-02-29\" is not a valid date: no such calendar date".into()),
                Err("field `f`: \"2024-1-01\" is not a valid date: expected YYYY-MM-DD".into()),
                Err(
                    "field `f`: \"2024-01-01T00:00:00Z\" is not a valid date: expected YYYY-MM-DD"
                        .into()
                ),
            ]
        );
        let ms = r#"{"type":"long","logicalType":"timestamp-millis"}"#;
        let got = field_i64(
            ms,
            &[
                "1764412800123",
                "\"2025-11-29T10:40:00.123Z\"",
                "\"2025-11-29T12:40:00.123+02:00\"",
                "\"2025-11-29T10:40:00.1234Z\"",
                "\"2025-11-29 10:40\"",
            ],
        );
        assert_eq!(got[0], Ok(1_764_412_800_123));
        assert_eq!(got[1], Ok(1_764_412_800_123));
        assert_eq!(got[2], Ok(1_764_412_800_123));
        assert!(
            got[3]
                .as_ref()
                .is_err_and(|e| e.contains("more sub-second digits")),
            "{:?}",
            got[3]
        );
        assert!(got[4].is_err());
        let us = r#"{"type":"long","logicalType":"timestamp-micros"}"#;
        assert_eq!(
            field_i64(us, &["\"1970-01-01T00:00:00.000001Z\"", "-1"]),
            vec![Ok(1), Ok(-1)]
        );
        let local = r#"{"type":"long","logicalType":"local-timestamp-millis"}"#;
        let got = field_i64(
            local,
            &["\"2025-11-29T10:40:00.123\"", "\"2025-11-29T10:40:00Z\""],
        );
        assert_eq!(got[0], Ok(1_764_412_800_123));
        assert!(got[1].is_err());
        let tm = r#"{"type":"int","logicalType":"time-millis"}"#;
        let got = field_i64(tm, &["0", "86399999", "86400000", "-1", "\"10:00\""]);
        assert_eq!(&got[..2], &[Ok(0), Ok(86_399_999)]);
        assert!(got[2..].iter().all(Result::is_err), "{got:?}");
        let tu = r#"{"type":"long","logicalType":"time-micros"}"#;
        let got = field_i64(tu, &["86399999999", "86400000000"]);
        assert_eq!(got[0], Ok(86_399_999_999));
        assert!(got[1].is_err());
    }

    #[test]
    fn bytes_fixed_enum_and_strings() {
        let mut d = decoder(
            r#"{"type":"record","name":"r","fields":[
                {"name":"b","type":"bytes"},
                {"name":"x","type":{"type":"fixed","name":"F","size":2}},
                {"name":"e","type":{"type":"enum","name":"Color","symbols":["RED","GREEN"]}},
                {"name":"u","type":{"type":"string","logicalType":"uuid"}}]}"#,
        );
        ok(
            &mut d,
            r#"{"b":"w6k=","x":"AAE=","e":"GREEN","u":"x\/y\n"}"#,
        );
        assert!(err(&mut d, r#"{"b":"w6k","x":"AAE=","e":"RED","u":""}"#)
            .to_string()
            .contains("not standard base64"));
        assert_eq!(
            err(&mut d, r#"{"b":"","x":"AAEC","e":"RED","u":""}"#).to_string(),
            "field `x`: \"AAEC\" is not a valid fixed(2): decodes to 3 bytes, the type holds exactly 2"
        );
        assert_eq!(
            err(&mut d, r#"{"b":"","x":"AAE=","e":"BLUE","u":""}"#).to_string(),
            "field `e`: \"BLUE\" is not a valid enum Color: not one of the enum's symbols"
        );
        let b = batch(&mut d);
        assert_eq!(b.num_rows(), 1);
        assert_eq!(b.column(0).as_binary::<i32>().value(0), "é".as_bytes());
        assert_eq!(b.column(1).as_fixed_size_binary().value(0), &[0, 1]);
        assert_eq!(b.column(2).as_string::<i32>().value(0), "GREEN");
        assert_eq!(b.column(3).as_string::<i32>().value(0), "x/y\n");
    }

    #[test]
    fn defaults_fill_missing_fields() {
        let mut d = decoder(
            r#"{"type":"record","name":"r","namespace":"ns","fields":[
                {"name":"id","type":"int"},
                {"name":"i","type":"int","default":7},
                {"name":"s","type":["string","null"],"default":"dflt"},
                {"name":"n","type":["null","string"],"default":null},
                {"name":"b","type":"bytes","default":"\u00ff\u0000"},
                {"name":"f","type":"float","default":"NaN"},
                {"name":"dec","type":{"type":"bytes","logicalType":"decimal","precision":5,"scale":2},"default":"\u00ff\u0085"},
                {"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]},"default":"B"},
                {"name":"rec","type":{"type":"record","name":"Inner","fields":[
                    {"name":"x","type":"long","default":5},{"name":"y","type":["null","long"],"default":null}]},
                 "default":{"x":1}},
                {"name":"arr","type":{"type":"array","items":"Inner"},"default":[{"x":2},{}]},
                {"name":"m","type":{"type":"map","values":"int"},"default":{"k":3}}]}"#,
        );
        ok(&mut d, r#"{"id":1}"#);
        ok(
            &mut d,
            r#"{"id":2,"i":8,"s":null,"n":"given","rec":{"x":9,"y":10},"arr":[],"m":{}}"#,
        );
        let b = batch(&mut d);
        let col = |name: &str| {
            b.column_by_name(name)
                .unwrap_or_else(|| panic!("{name}"))
                .clone()
        };
        assert_eq!(
            col("i").as_primitive::<Int32Type>().values().to_vec(),
            vec![7, 8]
        );
        let s = col("s");
        assert_eq!(
            (s.as_string::<i32>().value(0), s.is_null(1)),
            ("dflt", true)
        );
        let n = col("n");
        assert_eq!(
            (n.is_null(0), n.as_string::<i32>().value(1)),
            (true, "given")
        );
        assert_eq!(col("b").as_binary::<i32>().value(0), &[0xFF, 0x00]);
        assert!(col("f").as_primitive::<Float32Type>().value(0).is_nan());
        assert_eq!(col("dec").as_primitive::<Decimal128Type>().value(0), -123);
        assert_eq!(col("e").as_string::<i32>().value(0), "B");
        let rec = col("rec");
        let rec = rec.as_struct();
        assert_eq!(
            rec.column(0).as_primitive::<Int64Type>().values().to_vec(),
            vec![1, 9]
        );
        assert!(rec.column(1).is_null(0));
        let arr = col("arr");
        let arr = arr.as_list::<i32>();
        assert_eq!(arr.value_offsets(), &[0, 2, 2]);
        let inner = arr.values().as_struct();
        assert_eq!(
            inner
                .column(0)
                .as_primitive::<Int64Type>()
                .values()
                .to_vec(),
            vec![2, 5]
        );
        let m = col("m");
        let m = m.as_map();
        assert_eq!(m.value_offsets(), &[0, 1, 1]);
        assert_eq!(m.values().as_primitive::<Int32Type>().value(0), 3);
    }

    #[test]
    fn null_structs_mask_their_children() {
        let mut d = one(
            r#"["null",{"type":"record","name":"S","fields":[{"name":"a","type":"int"},{"name":"l","type":{"type":"array","items":"int"}}]}]"#,
        );
        ok(&mut d, r#"{"f":null}"#);
        ok(&mut d, r#"{}"#);
        ok(&mut d, r#"{"f":{"a":1,"l":[1,2]}}"#);
        let b = batch(&mut d);
        let s = b.column(0).as_struct();
        assert_eq!(
            (s.is_null(0), s.is_null(1), s.is_valid(2)),
            (true, true, true)
        );
        assert_eq!(s.column(0).as_primitive::<Int32Type>().value(2), 1);
        assert_eq!(s.column(1).as_list::<i32>().value_offsets(), &[0, 0, 0, 2]);
    }

    #[test]
    fn schema_mismatch_and_bad_defaults_fail_at_construction() {
        let avro = AvroSchema::parse(TRIPS).unwrap_or_else(|e| panic!("{e}"));
        let other = Schema::new(vec![Field::new("uuid", DataType::Utf8, false)]);
        assert!(matches!(
            JsonDecoder::try_new(Arc::new(other), &avro),
            Err(DecodeError::SchemaMismatch { .. })
        ));
        let bad = AvroSchema::parse(
            r#"{"type":"record","name":"r","fields":[{"name":"b","type":{"type":"fixed","name":"F","size":2},"default":"\u00ff"}]}"#,
        );
        // The Avro validator checks only that a fixed default is a string; the size is checked here.
        let avro = bad.unwrap_or_else(|e| panic!("{e}"));
        let arrow = avro_to_arrow(&avro).unwrap_or_else(|e| panic!("{e}"));
        match JsonDecoder::try_new(Arc::new(arrow), &avro) {
            Err(DecodeError::InvalidDefault { path, reason, .. }) => {
                assert_eq!(
                    (path.as_str(), reason.as_str()),
                    ("b", "1 bytes for a fixed(2)")
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
