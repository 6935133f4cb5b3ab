//! Key generators: the record key and partition path of each record, exactly as Hudi's built-in key generators
//! compute them.
//!
//! A later Spark writer finds an existing record by `(partition path, _hoodie_record_key)`, so both strings must be
//! byte-identical to what `SimpleKeyGenerator`, `ComplexKeyGenerator`, `NonpartitionedKeyGenerator` or
//! `TimestampBasedKeyGenerator` (and their `Avro` variants) would produce for the same record; anything else makes
//! duplicates. The configuration is read once from `hoodie.properties` and the write config
//! ([`KeyGenConfig::from_properties`]), field paths are resolved once against the Arrow schema
//! ([`KeyGenerator::try_new`]), and per record the strings are written into caller-provided buffers.
//!
//! Record keys:
//! - one field (Simple, TimestampBased, Nonpartitioned with one field, and Complex with one field in table
//!   version 6, HUDI-7001): the value's key text ([`super::value`]); null or empty is an error;
//! - several fields (Complex, Nonpartitioned with several fields): `f1:v1,f2:v2` in configured order, null as
//!   `__null__`, empty as `__empty__`; all null or empty is an error.
//!
//! Partition paths: [`super::partition`] (segments, Hive style, URL encoding, the path-safety invariant);
//! Nonpartitioned gives `""`; TimestampBased formats the field's time with a Joda-Time date pattern.
//!
//! Invariants: configuration problems are [`KeyGenError`]s at start-up; per-record problems are [`KeyError`]s
//! (they become dead letters). Nothing panics, and [`KeyGenerator::record_key`] and
//! [`KeyGenerator::partition_path`] allocate nothing beyond growing the output buffer.

use std::collections::BTreeMap;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Date64Type, Decimal128Type, Decimal256Type, Decimal32Type, Decimal64Type,
    Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, Time32MillisecondType,
    Time32SecondType, Time64MicrosecondType, Time64NanosecondType, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrowPrimitiveType, RecordBatch};
use arrow_schema::{DataType, SchemaRef, TimeUnit};
use chrono::{DateTime, Datelike, FixedOffset, NaiveDate, Offset, Timelike};
use thiserror::Error;

use super::partition::{self, PartitionPathOptions, PartitionValueError, SegmentKind};
use super::value::{self, FieldPath, ValueError, ValueOptions};

mod config;
mod date_pattern;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_timestamp;
mod timestamp;

pub use config::{parse_java_timezone, KeyGenConfig};
use date_pattern::*;
use timestamp::*;

/// Placeholder for a null part of a multi-field record key (`KeyGenerator.NULL_RECORDKEY_PLACEHOLDER`).
pub const NULL_RECORDKEY_PLACEHOLDER: &str = "__null__";
/// Placeholder for an empty part of a multi-field record key (`KeyGenerator.EMPTY_RECORDKEY_PLACEHOLDER`).
pub const EMPTY_RECORDKEY_PLACEHOLDER: &str = "__empty__";

const TABLE_RECORD_KEY: &str = "hoodie.table.recordkey.fields";
const WRITE_RECORD_KEY: &str = "hoodie.datasource.write.recordkey.field";
const TABLE_PARTITION: &str = "hoodie.table.partition.fields";
const WRITE_PARTITION: &str = "hoodie.datasource.write.partitionpath.field";
const TABLE_KEYGEN_CLASS: &str = "hoodie.table.keygenerator.class";
const WRITE_KEYGEN_CLASS: &str = "hoodie.datasource.write.keygenerator.class";
const TABLE_KEYGEN_TYPE: &str = "hoodie.table.keygenerator.type";
const WRITE_KEYGEN_TYPE: &str = "hoodie.datasource.write.keygenerator.type";
const HIVE_STYLE: &str = "hoodie.datasource.write.hive_style_partitioning";
const URL_ENCODE: &str = "hoodie.datasource.write.partitionpath.urlencode";
const CONSISTENT_LOGICAL_TIMESTAMP: &str =
    "hoodie.datasource.write.keygenerator.consistent.logical.timestamp.enabled";
const COMPLEX_NEW_ENCODING: &str = "hoodie.write.complex.keygen.new.encoding";
const TABLE_VERSION: &str = "hoodie.table.version";
const SLASH_SEPARATED_DATE: &str = "hoodie.datasource.write.slash.separated.date.partitioning";
const TS_TYPE: &str = "hoodie.keygen.timebased.timestamp.type";
const TS_SCALAR_UNIT: &str = "hoodie.keygen.timebased.timestamp.scalar.time.unit";
const TS_INPUT_FORMAT: &str = "hoodie.keygen.timebased.input.dateformat";
const TS_INPUT_FORMAT_DELIMITER: &str =
    "hoodie.keygen.timebased.input.dateformat.list.delimiter.regex";
const TS_OUTPUT_FORMAT: &str = "hoodie.keygen.timebased.output.dateformat";
const TS_TIMEZONE: &str = "hoodie.keygen.timebased.timezone";
const TS_INPUT_TIMEZONE: &str = "hoodie.keygen.timebased.input.timezone";
const TS_OUTPUT_TIMEZONE: &str = "hoodie.keygen.timebased.output.timezone";
const TS_PARSER_CLASS: &str = "hoodie.keygen.datetime.parser.class";
const TS_OLD_PREFIX: &str = "hoodie.deltastreamer.keygen.timebased.";
const TS_NEW_PREFIX: &str = "hoodie.keygen.timebased.";
const DEFAULT_PARSER_CLASS: &str = "org.apache.hudi.keygen.parser.HoodieDateTimeParser";

/// The keys [`KeyGenConfig::from_properties`] reads besides the writer's own (the record key, partition,
/// hive-style and URL-encoding keys of `crate::write::config::KEYS`). `hoodie.table.version` is read from the
/// table's own `hoodie.properties` only: a table's version is not a setting.
pub const KEYS: &[&str] = &[
    TABLE_RECORD_KEY,
    TABLE_PARTITION,
    TABLE_KEYGEN_CLASS,
    WRITE_KEYGEN_CLASS,
    TABLE_KEYGEN_TYPE,
    WRITE_KEYGEN_TYPE,
    CONSISTENT_LOGICAL_TIMESTAMP,
    COMPLEX_NEW_ENCODING,
    SLASH_SEPARATED_DATE,
    TS_TYPE,
    TS_SCALAR_UNIT,
    TS_INPUT_FORMAT,
    TS_INPUT_FORMAT_DELIMITER,
    TS_OUTPUT_FORMAT,
    TS_TIMEZONE,
    TS_INPUT_TIMEZONE,
    TS_OUTPUT_TIMEZONE,
    TS_PARSER_CLASS,
];

/// A key generator configuration that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum KeyGenError {
    /// No record key field is configured.
    #[error(
        "no record key field is configured: set {TABLE_RECORD_KEY} (or {WRITE_RECORD_KEY}); tables whose keys Hudi \
         generates automatically are not supported"
    )]
    MissingRecordKeyFields,
    /// A table key and its write-config spelling disagree.
    #[error(
        "{table_key}={table_value:?} disagrees with {write_key}={write_value:?}: the write config must name the \
         same {what} as the table"
    )]
    Conflict {
        /// What the keys configure.
        what: &'static str,
        /// The `hoodie.properties` key (or the preferred spelling).
        table_key: &'static str,
        /// Its value.
        table_value: String,
        /// The write-config key (or the other spelling).
        write_key: &'static str,
        /// Its value.
        write_value: String,
    },
    /// The key generator class or type is not one this crate implements.
    #[error(
        "{key}={value:?} is not supported; supported are org.apache.hudi.keygen.SimpleKeyGenerator, \
         ComplexKeyGenerator, NonpartitionedKeyGenerator and TimestampBasedKeyGenerator (and their Avro variants), \
         or the types SIMPLE, COMPLEX, NON_PARTITION and TIMESTAMP"
    )]
    UnsupportedKeyGenerator {
        /// The key that named it.
        key: &'static str,
        /// The class or type name.
        value: String,
    },
    /// A property has a value that cannot be used.
    #[error("{key}={value:?} is invalid: {reason}")]
    InvalidValue {
        /// The property key.
        key: &'static str,
        /// Its value.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A property the configuration needs is missing.
    #[error("{key} must be set: {reason}")]
    MissingProperty {
        /// The property key.
        key: &'static str,
        /// Why it is needed.
        reason: &'static str,
    },
    /// The fields do not fit the key generator.
    #[error("{kind}: {reason}")]
    InvalidFields {
        /// The key generator class.
        kind: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// A Joda-Time date pattern uses something this crate cannot reproduce exactly.
    #[error("{key}: date pattern {pattern:?} is not supported: {reason}")]
    UnsupportedDatePattern {
        /// The property key.
        key: &'static str,
        /// The pattern.
        pattern: String,
        /// Which part is refused, and why.
        reason: String,
    },
    /// A configured field does not resolve against the schema, or has no key text.
    #[error("{role} {error}")]
    Field {
        /// `record key` or `partition` (the error text starts with the field).
        role: &'static str,
        /// What is wrong with the field.
        error: ValueError,
    },
    /// The timestamp partition field's type does not fit the configured timestamp type.
    #[error(
        "timestamp partition field `{field}` has type {data_type}, which {TS_TYPE}={timestamp_type} cannot \
         read: {reason}"
    )]
    TimestampFieldType {
        /// The partition field.
        field: String,
        /// Its Arrow type.
        data_type: String,
        /// The configured timestamp type.
        timestamp_type: &'static str,
        /// Why it does not fit.
        reason: &'static str,
    },
}

/// Why one record has no record key or partition path (it becomes a dead letter).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum KeyError {
    /// The single record key field is null.
    #[error("record key field `{field}` is null; a record key must have a value")]
    NullRecordKey {
        /// The record key field.
        field: String,
    },
    /// The single record key field is an empty string.
    #[error("record key field `{field}` is an empty string; a record key must not be empty")]
    EmptyRecordKey {
        /// The record key field.
        field: String,
    },
    /// Every field of a multi-field record key is null or empty.
    #[error("record key fields {fields} are all null or empty; at least one must have a value")]
    AllRecordKeyFieldsNullOrEmpty {
        /// The record key fields, comma separated.
        fields: String,
    },
    /// The partition value would leave the partition directory.
    #[error(transparent)]
    Partition(#[from] PartitionValueError),
    /// The timestamp partition value cannot be read or formatted.
    #[error("timestamp partition field `{field}`: cannot partition by {value:?}: {reason}")]
    Timestamp {
        /// The partition field.
        field: String,
        /// The value, as text.
        value: String,
        /// What failed.
        reason: String,
    },
    /// The field's value cannot be read or printed.
    #[error("field `{field}`: {error}")]
    Value {
        /// The field.
        field: String,
        /// What failed.
        error: ValueError,
    },
}

/// Which of Hudi's built-in key generators a table uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyGeneratorKind {
    /// One record key field, at most one partition field (`SimpleKeyGenerator`).
    Simple,
    /// Any number of record key and partition fields (`ComplexKeyGenerator`).
    Complex,
    /// No partitions: every record in `""` (`NonpartitionedKeyGenerator`).
    NonPartitioned,
    /// One partition field read as a time and formatted with a date pattern (`TimestampBasedKeyGenerator`).
    TimestampBased,
}

impl KeyGeneratorKind {
    /// The kind named by a key generator class (`org.apache.hudi.keygen.SimpleKeyGenerator`, the `…Avro…`
    /// variants); `None` for any other class.
    pub fn from_class_name(class: &str) -> Option<Self> {
        match class.trim() {
            "org.apache.hudi.keygen.SimpleKeyGenerator"
            | "org.apache.hudi.keygen.SimpleAvroKeyGenerator" => Some(Self::Simple),
            "org.apache.hudi.keygen.ComplexKeyGenerator"
            | "org.apache.hudi.keygen.ComplexAvroKeyGenerator" => Some(Self::Complex),
            "org.apache.hudi.keygen.NonpartitionedKeyGenerator"
            | "org.apache.hudi.keygen.NonpartitionedAvroKeyGenerator"
            | "org.apache.hudi.keygen.NonPartitionedAvroKeyGenerator" => Some(Self::NonPartitioned),
            "org.apache.hudi.keygen.TimestampBasedKeyGenerator"
            | "org.apache.hudi.keygen.TimestampBasedAvroKeyGenerator" => Some(Self::TimestampBased),
            _ => None,
        }
    }

    /// The kind named by a `KeyGeneratorType` value (`SIMPLE`, `COMPLEX`, `NON_PARTITION`, `TIMESTAMP`, with or
    /// without `_AVRO`, any case); `None` for any other type.
    pub fn from_type_name(name: &str) -> Option<Self> {
        let upper = name.trim().to_ascii_uppercase();
        match upper.strip_suffix("_AVRO").unwrap_or(&upper) {
            "SIMPLE" => Some(Self::Simple),
            "COMPLEX" => Some(Self::Complex),
            "NON_PARTITION" => Some(Self::NonPartitioned),
            "TIMESTAMP" => Some(Self::TimestampBased),
            _ => None,
        }
    }

    /// Hudi's inference when no key generator is configured (`KeyGenUtils.inferKeyGeneratorType`): no partition
    /// field → NonPartitioned; one record key and one partition field → Simple; otherwise Complex.
    pub fn infer(record_key_fields: &[String], partition_fields: &[String]) -> Self {
        match (record_key_fields.len(), partition_fields.len()) {
            (_, 0) => Self::NonPartitioned,
            (0 | 1, 1) => Self::Simple,
            _ => Self::Complex,
        }
    }

    /// The Spark key generator class Hudi writes into `hoodie.table.keygenerator.class`.
    pub fn class_name(self) -> &'static str {
        match self {
            Self::Simple => "org.apache.hudi.keygen.SimpleKeyGenerator",
            Self::Complex => "org.apache.hudi.keygen.ComplexKeyGenerator",
            Self::NonPartitioned => "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
            Self::TimestampBased => "org.apache.hudi.keygen.TimestampBasedKeyGenerator",
        }
    }

    /// The `KeyGeneratorType` name (`hoodie.table.keygenerator.type` in table version 8 and later).
    pub fn type_name(self) -> &'static str {
        match self {
            Self::Simple => "SIMPLE",
            Self::Complex => "COMPLEX",
            Self::NonPartitioned => "NON_PARTITION",
            Self::TimestampBased => "TIMESTAMP",
        }
    }
}

/// How a timestamp-based key generator reads its partition field (`hoodie.keygen.timebased.timestamp.type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimestampType {
    /// Seconds since the epoch.
    UnixTimestamp,
    /// A string parsed with the input date pattern(s).
    DateString,
    /// A string parsed with the input date pattern(s); numbers are refused (Hudi has no unit for them).
    Mixed,
    /// Milliseconds since the epoch.
    EpochMilliseconds,
    /// Microseconds since the epoch.
    EpochMicroseconds,
    /// A number in `hoodie.keygen.timebased.timestamp.scalar.time.unit` since the epoch.
    Scalar,
}

impl TimestampType {
    /// Parses the Java enum name (`DATE_STRING`, …), case-sensitive as `TimestampType.valueOf` is.
    pub fn from_name(name: &str) -> Option<Self> {
        match name.trim() {
            "UNIX_TIMESTAMP" => Some(Self::UnixTimestamp),
            "DATE_STRING" => Some(Self::DateString),
            "MIXED" => Some(Self::Mixed),
            "EPOCHMILLISECONDS" => Some(Self::EpochMilliseconds),
            "EPOCHMICROSECONDS" => Some(Self::EpochMicroseconds),
            "SCALAR" => Some(Self::Scalar),
            _ => None,
        }
    }

    /// The Java enum name.
    pub fn name(self) -> &'static str {
        match self {
            Self::UnixTimestamp => "UNIX_TIMESTAMP",
            Self::DateString => "DATE_STRING",
            Self::Mixed => "MIXED",
            Self::EpochMilliseconds => "EPOCHMILLISECONDS",
            Self::EpochMicroseconds => "EPOCHMICROSECONDS",
            Self::Scalar => "SCALAR",
        }
    }

    fn reads_strings(self) -> bool {
        matches!(self, Self::DateString | Self::Mixed)
    }
}

/// A `java.util.concurrent.TimeUnit`, for numeric timestamp partition values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JavaTimeUnit {
    /// `NANOSECONDS`
    Nanoseconds,
    /// `MICROSECONDS`
    Microseconds,
    /// `MILLISECONDS`
    Milliseconds,
    /// `SECONDS`
    Seconds,
    /// `MINUTES`
    Minutes,
    /// `HOURS`
    Hours,
    /// `DAYS`
    Days,
}

impl JavaTimeUnit {
    /// Parses a `TimeUnit` name, any case (Hudi upper-cases it).
    pub fn from_name(name: &str) -> Option<Self> {
        match name.trim().to_ascii_uppercase().as_str() {
            "NANOSECONDS" => Some(Self::Nanoseconds),
            "MICROSECONDS" => Some(Self::Microseconds),
            "MILLISECONDS" => Some(Self::Milliseconds),
            "SECONDS" => Some(Self::Seconds),
            "MINUTES" => Some(Self::Minutes),
            "HOURS" => Some(Self::Hours),
            "DAYS" => Some(Self::Days),
            _ => None,
        }
    }

    /// `TimeUnit.MILLISECONDS.convert(value, self)`: truncating toward zero, saturating at the `long` range.
    pub fn to_millis(self, value: i64) -> i64 {
        match self {
            Self::Nanoseconds => value / 1_000_000,
            Self::Microseconds => value / 1000,
            Self::Milliseconds => value,
            Self::Seconds => value.saturating_mul(1000),
            Self::Minutes => value.saturating_mul(60_000),
            Self::Hours => value.saturating_mul(3_600_000),
            Self::Days => value.saturating_mul(86_400_000),
        }
    }
}

/// Options of the timestamp-based key generator (`hoodie.keygen.timebased.*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimestampOptions {
    /// How the partition field is read.
    pub timestamp_type: TimestampType,
    /// Unit of numbers for [`TimestampType::Scalar`] (default seconds).
    pub scalar_time_unit: JavaTimeUnit,
    /// Joda-Time patterns for string input, tried together (the longest match wins).
    pub input_date_formats: Vec<String>,
    /// Joda-Time pattern of the partition path.
    pub output_date_format: String,
    /// Zone of input strings without an offset; `None`: the offset in the string, else UTC.
    pub input_timezone: Option<FixedOffset>,
    /// Zone of the output; `None`: the zone parsed from the input string, else UTC.
    pub output_timezone: Option<FixedOffset>,
}

/// How a record key is assembled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyShape {
    /// The one field's value.
    Single,
    /// `field:value` pairs.
    Named,
}

/// A key generator bound to a schema: field paths resolved, date patterns compiled.
#[derive(Debug, Clone)]
pub struct KeyGenerator {
    config: KeyGenConfig,
    record_key: Vec<FieldPath>,
    partition: Vec<FieldPath>,
    shape: KeyShape,
    timestamp: Option<TimestampPartitioner>,
    value_options: ValueOptions,
    partition_options: PartitionPathOptions,
}

impl KeyGenerator {
    /// Validates `config` against `schema`: resolves every field path once (an error names a missing field),
    /// refuses field types without key text, and compiles the timestamp patterns.
    pub fn try_new(config: KeyGenConfig, schema: &SchemaRef) -> Result<Self, KeyGenError> {
        config.validate()?;
        let resolve = |role: &'static str, path: &String| {
            FieldPath::resolve(schema, path).map_err(|error| KeyGenError::Field { role, error })
        };
        let record_key = config
            .record_key_fields
            .iter()
            .map(|p| resolve("record key", p))
            .collect::<Result<Vec<_>, _>>()?;
        let partition = match config.kind {
            KeyGeneratorKind::NonPartitioned => Vec::new(),
            _ => config
                .partition_fields
                .iter()
                .map(|p| resolve("partition", p))
                .collect::<Result<Vec<_>, _>>()?,
        };
        let shape = match (config.kind, record_key.len()) {
            (KeyGeneratorKind::Simple | KeyGeneratorKind::TimestampBased, _) => KeyShape::Single,
            (KeyGeneratorKind::NonPartitioned, 1) => KeyShape::Single,
            (KeyGeneratorKind::Complex, 1) if !config.complex_single_field_with_name => {
                KeyShape::Single
            }
            _ => KeyShape::Named,
        };
        let timestamp = match (&config.timestamp, config.kind, partition.first()) {
            (Some(options), KeyGeneratorKind::TimestampBased, Some(field)) => Some(
                TimestampPartitioner::try_new(options, field, config.consistent_logical_timestamp)?,
            ),
            _ => None,
        };
        Ok(Self {
            value_options: config.value_options(),
            partition_options: config.partition_path_options(),
            config,
            record_key,
            partition,
            shape,
            timestamp,
        })
    }

    /// The configuration this generator was built from.
    pub fn config(&self) -> &KeyGenConfig {
        &self.config
    }

    /// Writes the record key of `batch[row]` into `out` (cleared first; on error its content is unspecified).
    pub fn record_key(
        &self,
        batch: &RecordBatch,
        row: usize,
        out: &mut String,
    ) -> Result<(), KeyError> {
        out.clear();
        match self.shape {
            KeyShape::Single => {
                let field =
                    self.record_key
                        .first()
                        .ok_or(KeyError::AllRecordKeyFieldsNullOrEmpty {
                            fields: String::new(),
                        })?;
                match self.write_field(field, batch, row, out)? {
                    None => Err(KeyError::NullRecordKey {
                        field: field.path().to_string(),
                    }),
                    Some(true) => Err(KeyError::EmptyRecordKey {
                        field: field.path().to_string(),
                    }),
                    Some(false) => Ok(()),
                }
            }
            KeyShape::Named => {
                let mut all_null_or_empty = true;
                for (i, field) in self.record_key.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(field.path());
                    out.push(':');
                    match self.write_field(field, batch, row, out)? {
                        None => out.push_str(NULL_RECORDKEY_PLACEHOLDER),
                        Some(true) => out.push_str(EMPTY_RECORDKEY_PLACEHOLDER),
                        Some(false) => all_null_or_empty = false,
                    }
                }
                if all_null_or_empty {
                    return Err(KeyError::AllRecordKeyFieldsNullOrEmpty {
                        fields: self.config.record_key_fields.join(","),
                    });
                }
                Ok(())
            }
        }
    }

    /// Writes the partition path of `batch[row]` into `out` (cleared first; `""` when not partitioned; on error
    /// its content is unspecified).
    pub fn partition_path(
        &self,
        batch: &RecordBatch,
        row: usize,
        out: &mut String,
    ) -> Result<(), KeyError> {
        out.clear();
        if let (Some(timestamp), Some(field)) = (&self.timestamp, self.partition.first()) {
            return timestamp.write(field, batch, row, self.partition_options, out);
        }
        for field in &self.partition {
            let segment = partition::begin_segment(out, field.path(), self.partition_options);
            let written = self.write_field(field, batch, row, out)?;
            partition::finish_segment(
                out,
                field.path(),
                segment,
                written.is_none(),
                SegmentKind::Value,
                self.partition_options,
            )?;
        }
        Ok(())
    }

    /// Record key and partition path of every row (allocating two strings per row; for tests and small batches).
    pub fn keys(&self, batch: &RecordBatch) -> Vec<Result<(String, String), KeyError>> {
        (0..batch.num_rows())
            .map(|row| {
                let mut key = String::new();
                let mut partition_path = String::new();
                self.record_key(batch, row, &mut key)?;
                self.partition_path(batch, row, &mut partition_path)?;
                Ok((key, partition_path))
            })
            .collect()
    }

    /// Appends the field's text; `None` when null, `Some(is_empty)` otherwise.
    fn write_field(
        &self,
        field: &FieldPath,
        batch: &RecordBatch,
        row: usize,
        out: &mut String,
    ) -> Result<Option<bool>, KeyError> {
        field
            .write(batch, row, self.value_options, out)
            .map(|range| range.map(|r| r.is_empty()))
            .map_err(|error| KeyError::Value {
                field: field.path().to_string(),
                error,
            })
    }
}
