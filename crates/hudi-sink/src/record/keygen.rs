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

/// How a table's record keys and partition paths are built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyGenConfig {
    /// The key generator.
    pub kind: KeyGeneratorKind,
    /// Record key fields (dot paths), in key order.
    pub record_key_fields: Vec<String>,
    /// Partition fields (dot paths), in path order.
    pub partition_fields: Vec<String>,
    /// `field=value` segments.
    pub hive_style: bool,
    /// Hive escaping of partition values.
    pub url_encode: bool,
    /// Print `timestamp-millis`/`-micros` values as `java.sql.Timestamp` text (UTC) instead of numbers.
    pub consistent_logical_timestamp: bool,
    /// Options of [`KeyGeneratorKind::TimestampBased`] (`None` for the other kinds).
    pub timestamp: Option<TimestampOptions>,
    /// Write a one-field Complex key as `field:value` instead of `value`. Hudi 0.14.1 to 1.0.2 (the writers of
    /// table version 6 and 8) wrote just the value (HUDI-7001), so false is the default below table version 9;
    /// `hoodie.write.complex.keygen.new.encoding=false` turns it on, as in Hudi 1.1.
    pub complex_single_field_with_name: bool,
}

impl KeyGenConfig {
    /// Reads the key generator configuration from `hoodie.properties` keys and their write-config spellings.
    ///
    /// Table keys (`hoodie.table.recordkey.fields`, `hoodie.table.partition.fields`,
    /// `hoodie.table.keygenerator.class`/`.type`) win over the write-config keys
    /// (`hoodie.datasource.write.recordkey.field`, `…partitionpath.field`, `…keygenerator.class`/`.type`) when both
    /// are present and agree; disagreement is an error naming both. Without a key generator the kind is inferred
    /// as Hudi does. Other keys in `props` are ignored (other parts of the configuration read them).
    pub fn from_properties(props: &BTreeMap<String, String>) -> Result<Self, KeyGenError> {
        let record_key_fields = pick(
            props,
            "record key fields",
            TABLE_RECORD_KEY,
            WRITE_RECORD_KEY,
            |v| Ok(split_fields(v)),
        )?
        .unwrap_or_default();
        let partition_fields = pick(
            props,
            "partition fields",
            TABLE_PARTITION,
            WRITE_PARTITION,
            |v| Ok(split_fields(v)),
        )?
        .unwrap_or_default();
        let kind = match configured_kind(props)? {
            Some(kind) => kind,
            None => KeyGeneratorKind::infer(&record_key_fields, &partition_fields),
        };
        let hive_style = bool_property(props, HIVE_STYLE)?.unwrap_or(false);
        let url_encode = bool_property(props, URL_ENCODE)?.unwrap_or(false);
        let consistent_logical_timestamp =
            bool_property(props, CONSISTENT_LOGICAL_TIMESTAMP)?.unwrap_or(false);
        if bool_property(props, SLASH_SEPARATED_DATE)? == Some(true) {
            return Err(KeyGenError::InvalidValue {
                key: SLASH_SEPARATED_DATE,
                value: "true".to_string(),
                reason: "slash-separated date partitioning is not supported".to_string(),
            });
        }
        let table_version = match props.get(TABLE_VERSION) {
            Some(v) => Some(
                v.trim()
                    .parse::<u32>()
                    .map_err(|_| KeyGenError::InvalidValue {
                        key: TABLE_VERSION,
                        value: v.clone(),
                        reason: "not a whole number".to_string(),
                    })?,
            ),
            None => None,
        };
        let complex_single_field_with_name = if table_version.is_some_and(|v| v >= 9) {
            true
        } else {
            bool_property(props, COMPLEX_NEW_ENCODING)?
                .map(|new_encoding| !new_encoding)
                .unwrap_or(false)
        };
        let timestamp = match kind {
            KeyGeneratorKind::TimestampBased => Some(timestamp_options(props)?),
            _ => None,
        };
        let config = Self {
            kind,
            record_key_fields,
            partition_fields,
            hive_style,
            url_encode,
            consistent_logical_timestamp,
            timestamp,
            complex_single_field_with_name,
        };
        config.validate()?;
        Ok(config)
    }

    /// Checks that the fields fit the key generator (without looking at a schema).
    pub fn validate(&self) -> Result<(), KeyGenError> {
        let kind = self.kind.class_name();
        let invalid = |reason: String| Err(KeyGenError::InvalidFields { kind, reason });
        if self.record_key_fields.is_empty() {
            return Err(KeyGenError::MissingRecordKeyFields);
        }
        if let Some(empty) = self
            .record_key_fields
            .iter()
            .chain(&self.partition_fields)
            .find(|f| f.trim().is_empty())
        {
            return invalid(format!("field name {empty:?} is empty"));
        }
        match self.kind {
            KeyGeneratorKind::Simple | KeyGeneratorKind::TimestampBased
                if self.record_key_fields.len() != 1 =>
            {
                return invalid(format!(
                    "needs exactly one record key field, got {} ({}); use ComplexKeyGenerator for several",
                    self.record_key_fields.len(),
                    self.record_key_fields.join(",")
                ));
            }
            KeyGeneratorKind::Simple if self.partition_fields.len() > 1 => {
                return invalid(format!(
                    "takes at most one partition field, got {}; use ComplexKeyGenerator for several",
                    self.partition_fields.join(",")
                ));
            }
            KeyGeneratorKind::TimestampBased if self.partition_fields.len() != 1 => {
                return invalid(format!(
                    "needs exactly one partition field, got {:?}",
                    self.partition_fields.join(",")
                ));
            }
            KeyGeneratorKind::TimestampBased if self.timestamp.is_none() => {
                return Err(KeyGenError::MissingProperty {
                    key: TS_TYPE,
                    reason: "the timestamp-based key generator needs its hoodie.keygen.timebased.* options",
                });
            }
            _ => {}
        }
        if self.hive_style {
            for field in &self.partition_fields {
                if field
                    .chars()
                    .any(|c| matches!(c, '/' | '\\' | '=') || c.is_control())
                {
                    return invalid(format!(
                        "partition field name {field:?} cannot be a Hive-style path segment (contains '/', '\\', \
                         '=' or a control character)"
                    ));
                }
            }
        }
        Ok(())
    }

    /// The partition path options of this configuration.
    pub fn partition_path_options(&self) -> PartitionPathOptions {
        PartitionPathOptions {
            hive_style: self.hive_style,
            url_encode: self.url_encode,
        }
    }

    /// The value printing options of this configuration.
    pub fn value_options(&self) -> ValueOptions {
        ValueOptions {
            consistent_logical_timestamp: self.consistent_logical_timestamp,
        }
    }
}

/// `StringUtils.split(value, ",")`: trimmed, empty parts dropped.
fn split_fields(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Reads a setting that has a table key and a write-config key: the table key wins, a disagreement is an error.
fn pick<T: PartialEq>(
    props: &BTreeMap<String, String>,
    what: &'static str,
    table_key: &'static str,
    write_key: &'static str,
    parse: impl Fn(&str) -> Result<T, KeyGenError>,
) -> Result<Option<T>, KeyGenError> {
    let table = props
        .get(table_key)
        .map(|v| parse(v).map(|p| (v, p)))
        .transpose()?;
    let write = props
        .get(write_key)
        .map(|v| parse(v).map(|p| (v, p)))
        .transpose()?;
    match (table, write) {
        (Some((tv, t)), Some((wv, w))) if t != w => Err(KeyGenError::Conflict {
            what,
            table_key,
            table_value: tv.clone(),
            write_key,
            write_value: wv.clone(),
        }),
        (Some((_, t)), _) => Ok(Some(t)),
        (None, Some((_, w))) => Ok(Some(w)),
        (None, None) => Ok(None),
    }
}

fn configured_kind(
    props: &BTreeMap<String, String>,
) -> Result<Option<KeyGeneratorKind>, KeyGenError> {
    type Parser = fn(&str) -> Option<KeyGeneratorKind>;
    let sources: [(&'static str, Parser); 4] = [
        (TABLE_KEYGEN_CLASS, KeyGeneratorKind::from_class_name),
        (TABLE_KEYGEN_TYPE, KeyGeneratorKind::from_type_name),
        (WRITE_KEYGEN_CLASS, KeyGeneratorKind::from_class_name),
        (WRITE_KEYGEN_TYPE, KeyGeneratorKind::from_type_name),
    ];
    let mut chosen: Option<(&'static str, &String, KeyGeneratorKind)> = None;
    for (key, parse) in sources {
        let Some(value) = props.get(key).filter(|v| !v.trim().is_empty()) else {
            continue;
        };
        let kind = parse(value).ok_or_else(|| KeyGenError::UnsupportedKeyGenerator {
            key,
            value: value.clone(),
        })?;
        match chosen {
            Some((first_key, first_value, first_kind)) if first_kind != kind => {
                return Err(KeyGenError::Conflict {
                    what: "key generator",
                    table_key: first_key,
                    table_value: first_value.clone(),
                    write_key: key,
                    write_value: value.clone(),
                });
            }
            Some(_) => {}
            None => chosen = Some((key, value, kind)),
        }
    }
    Ok(chosen.map(|(_, _, kind)| kind))
}

fn bool_property(
    props: &BTreeMap<String, String>,
    key: &'static str,
) -> Result<Option<bool>, KeyGenError> {
    match props.get(key).map(|v| v.trim()) {
        None => Ok(None),
        Some(v) if v.eq_ignore_ascii_case("true") => Ok(Some(true)),
        Some(v) if v.eq_ignore_ascii_case("false") => Ok(Some(false)),
        Some(v) => Err(KeyGenError::InvalidValue {
            key,
            value: v.to_string(),
            reason: "expected true or false".to_string(),
        }),
    }
}

/// A `hoodie.keygen.timebased.*` option under its current name, or its deprecated `hoodie.deltastreamer.` name.
fn timestamp_property<'p>(
    props: &'p BTreeMap<String, String>,
    key: &'static str,
) -> Result<Option<&'p String>, KeyGenError> {
    let old_key = key.replacen(TS_NEW_PREFIX, TS_OLD_PREFIX, 1);
    match (props.get(key), props.get(&old_key)) {
        (Some(new), Some(old)) if new.trim() != old.trim() => Err(KeyGenError::InvalidValue {
            key,
            value: new.clone(),
            reason: format!("the deprecated {old_key}={old:?} says otherwise; remove one of them"),
        }),
        (Some(new), _) => Ok(Some(new)),
        (None, old) => Ok(old),
    }
}

fn timestamp_options(props: &BTreeMap<String, String>) -> Result<TimestampOptions, KeyGenError> {
    if let Some(parser) = props.get(TS_PARSER_CLASS) {
        if parser.trim() != DEFAULT_PARSER_CLASS {
            return Err(KeyGenError::InvalidValue {
                key: TS_PARSER_CLASS,
                value: parser.clone(),
                reason: format!("only the default {DEFAULT_PARSER_CLASS} is supported"),
            });
        }
    }
    let type_text = timestamp_property(props, TS_TYPE)?.ok_or(KeyGenError::MissingProperty {
        key: TS_TYPE,
        reason: "the timestamp-based key generator needs it (Hudi does not store it in hoodie.properties, so repeat \
                 the write config's value: UNIX_TIMESTAMP, DATE_STRING, MIXED, EPOCHMILLISECONDS, EPOCHMICROSECONDS \
                 or SCALAR)",
    })?;
    let timestamp_type = TimestampType::from_name(type_text).ok_or_else(|| KeyGenError::InvalidValue {
        key: TS_TYPE,
        value: type_text.clone(),
        reason: "expected UNIX_TIMESTAMP, DATE_STRING, MIXED, EPOCHMILLISECONDS, EPOCHMICROSECONDS or SCALAR"
            .to_string(),
    })?;
    let scalar_time_unit = match timestamp_property(props, TS_SCALAR_UNIT)? {
        Some(unit) => JavaTimeUnit::from_name(unit).ok_or_else(|| KeyGenError::InvalidValue {
            key: TS_SCALAR_UNIT,
            value: unit.clone(),
            reason: "expected a java.util.concurrent.TimeUnit name such as SECONDS".to_string(),
        })?,
        None => JavaTimeUnit::Seconds,
    };
    let output_date_format = timestamp_property(props, TS_OUTPUT_FORMAT)?
        .filter(|f| !f.trim().is_empty())
        .ok_or(KeyGenError::MissingProperty {
            key: TS_OUTPUT_FORMAT,
            reason: "the timestamp-based key generator formats partition paths with it",
        })?
        .clone();
    let delimiter = timestamp_property(props, TS_INPUT_FORMAT_DELIMITER)?
        .map(|d| d.trim())
        .filter(|d| !d.is_empty())
        .unwrap_or(",");
    if delimiter.chars().any(|c| "\\^$.|?*+()[]{}".contains(c)) {
        return Err(KeyGenError::InvalidValue {
            key: TS_INPUT_FORMAT_DELIMITER,
            value: delimiter.to_string(),
            reason: "only a literal delimiter (no regular expression syntax) is supported"
                .to_string(),
        });
    }
    let input_date_formats: Vec<String> = match timestamp_property(props, TS_INPUT_FORMAT)? {
        Some(formats) => formats
            .split(delimiter)
            .map(str::trim)
            .filter(|f| !f.is_empty())
            .map(str::to_string)
            .collect(),
        None => Vec::new(),
    };
    if timestamp_type.reads_strings() && input_date_formats.is_empty() {
        return Err(KeyGenError::MissingProperty {
            key: TS_INPUT_FORMAT,
            reason: "DATE_STRING and MIXED parse the partition field with it",
        });
    }
    let (input_timezone, output_timezone) = match timestamp_property(props, TS_TIMEZONE)? {
        Some(both) => {
            let zone = parse_java_timezone(TS_TIMEZONE, both)?;
            (zone, zone)
        }
        None => (
            timestamp_property(props, TS_INPUT_TIMEZONE)?
                .map(|z| parse_java_timezone(TS_INPUT_TIMEZONE, z))
                .transpose()?
                .flatten(),
            timestamp_property(props, TS_OUTPUT_TIMEZONE)?
                .map(|z| parse_java_timezone(TS_OUTPUT_TIMEZONE, z))
                .transpose()?
                .flatten(),
        ),
    };
    Ok(TimestampOptions {
        timestamp_type,
        scalar_time_unit,
        input_date_formats,
        output_date_format,
        input_timezone,
        output_timezone,
    })
}

/// Reads a `java.util.TimeZone` id that is a fixed offset: `UTC`, `GMT` and their aliases, or `GMT±h[h][[:]mm]`.
/// `None` for an empty value (Hudi: not set). Region ids (`Europe/Paris`) are refused because their offsets change
/// with daylight saving, which needs a time zone database; `UTC+01:00` is refused because Java would silently read
/// it as GMT.
pub fn parse_java_timezone(
    key: &'static str,
    value: &str,
) -> Result<Option<FixedOffset>, KeyGenError> {
    let id = value.trim();
    if id.is_empty() {
        return Ok(None);
    }
    let invalid = |reason: &str| KeyGenError::InvalidValue {
        key,
        value: value.to_string(),
        reason: reason.to_string(),
    };
    const UTC_ALIASES: &[&str] = &[
        "UTC",
        "GMT",
        "UCT",
        "Z",
        "GMT0",
        "Universal",
        "Zulu",
        "Greenwich",
        "Etc/UTC",
        "Etc/GMT",
        "Etc/UCT",
        "Etc/GMT0",
        "Etc/GMT+0",
        "Etc/GMT-0",
        "Etc/Universal",
        "Etc/Zulu",
        "Etc/Greenwich",
    ];
    if UTC_ALIASES.contains(&id) {
        return Ok(FixedOffset::east_opt(0));
    }
    let Some(rest) = id.strip_prefix("GMT") else {
        return Err(invalid(
            "only UTC, GMT or a fixed offset GMT+hh:mm is supported (region time zones need a time zone database; \
             note that Java reads UTC+hh:mm as plain GMT)",
        ));
    };
    let sign = match rest.chars().next() {
        Some('+') => 1,
        Some('-') => -1,
        _ => return Err(invalid("expected GMT+hh:mm or GMT-hh:mm")),
    };
    let digits = &rest[1..];
    let (hours, minutes) = match digits.split_once(':') {
        Some((h, m)) if (1..=2).contains(&h.len()) && m.len() == 2 => (h, m),
        None if (1..=2).contains(&digits.len()) => (digits, "0"),
        None if digits.len() == 4 => digits.split_at(2),
        _ => return Err(invalid("expected GMT+h, GMT+hh, GMT+hhmm or GMT+hh:mm")),
    };
    let parse = |s: &str| {
        s.parse::<i32>()
            .ok()
            .filter(|_| s.bytes().all(|b| b.is_ascii_digit()))
    };
    match (parse(hours), parse(minutes)) {
        (Some(h), Some(m)) if h <= 23 && m <= 59 => {
            Ok(FixedOffset::east_opt(sign * (h * 3600 + m * 60)))
        }
        _ => Err(invalid("hours must be 0-23 and minutes 00-59")),
    }
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

/// The partition value of a timestamp-based key generator, as Hudi's `getPartitionPath(Object)` sees it.
enum TimestampInput<'a> {
    /// A number in the configured unit (Hudi: `Long`, `Integer`, `Double.longValue()`, `LocalDate.toEpochDay()`…).
    Number(i64),
    /// Milliseconds since the epoch (a `java.sql.Timestamp`, with consistent logical timestamps).
    Instant(i64),
    /// A date string.
    Text(&'a str),
}

/// The compiled timestamp-based partitioner.
#[derive(Debug, Clone)]
struct TimestampPartitioner {
    timestamp_type: TimestampType,
    unit: Option<JavaTimeUnit>,
    inputs: Vec<DatePattern>,
    output: DatePattern,
    input_timezone: Option<FixedOffset>,
    output_timezone: Option<FixedOffset>,
    consistent_logical_timestamp: bool,
    /// The output for a null value (Hudi formats a default of 1 in the input's terms), or why there is none.
    null_output: Result<String, String>,
}

impl TimestampPartitioner {
    fn try_new(
        options: &TimestampOptions,
        field: &FieldPath,
        consistent: bool,
    ) -> Result<Self, KeyGenError> {
        let inputs = options
            .input_date_formats
            .iter()
            .map(|p| DatePattern::compile(TS_INPUT_FORMAT, p, true))
            .collect::<Result<Vec<_>, _>>()?;
        let output = DatePattern::compile(TS_OUTPUT_FORMAT, &options.output_date_format, false)?;
        let unit = match options.timestamp_type {
            TimestampType::UnixTimestamp => Some(JavaTimeUnit::Seconds),
            TimestampType::EpochMilliseconds => Some(JavaTimeUnit::Milliseconds),
            TimestampType::EpochMicroseconds => Some(JavaTimeUnit::Microseconds),
            TimestampType::Scalar => Some(options.scalar_time_unit),
            TimestampType::DateString | TimestampType::Mixed => None,
        };
        let mut partitioner = Self {
            timestamp_type: options.timestamp_type,
            unit,
            inputs,
            output,
            input_timezone: options.input_timezone,
            output_timezone: options.output_timezone,
            consistent_logical_timestamp: consistent,
            null_output: Err(String::new()),
        };
        partitioner.check_field_type(field)?;
        partitioner.null_output = partitioner.default_output();
        Ok(partitioner)
    }

    fn check_field_type(&self, field: &FieldPath) -> Result<(), KeyGenError> {
        let data_type = field.data_type();
        let refuse = |reason| {
            Err(KeyGenError::TimestampFieldType {
                field: field.path().to_string(),
                data_type: data_type.to_string(),
                timestamp_type: self.timestamp_type.name(),
                reason,
            })
        };
        let is_instant = self.consistent_logical_timestamp
            && matches!(
                data_type,
                DataType::Timestamp(TimeUnit::Millisecond | TimeUnit::Microsecond, Some(_))
            );
        if value::is_string_type(data_type) {
            if self.timestamp_type.reads_strings() {
                Ok(())
            } else {
                refuse("strings are only read by DATE_STRING and MIXED")
            }
        } else if is_numeric_type(data_type) {
            if is_instant || self.unit.is_some() {
                Ok(())
            } else {
                refuse("numbers need a unit: use UNIX_TIMESTAMP, EPOCHMILLISECONDS, EPOCHMICROSECONDS or SCALAR")
            }
        } else {
            refuse("only strings and numbers (integers, floats, decimals, dates, times, timestamps) can be read")
        }
    }

    /// Hudi's value for a null partition field: `1` in the configured unit, or for date strings the instant
    /// 1 ms after the epoch printed with the first input pattern (in the input zone, else the output zone, else
    /// UTC), then read back like any other value.
    fn default_output(&self) -> Result<String, String> {
        let mut out = String::new();
        match self.unit {
            Some(unit) => self.format_millis(unit.to_millis(1), None, &mut out)?,
            None => {
                let first = self.inputs.first().ok_or("no input date format")?;
                let zone = self
                    .input_timezone
                    .or(self.output_timezone)
                    .unwrap_or(utc());
                let mut text = String::new();
                first.format(1, zone, &mut text)?;
                let (millis, zone) = self.parse(&text)?;
                self.format_millis(millis, Some(zone), &mut out)?;
            }
        }
        Ok(out)
    }

    fn write(
        &self,
        field: &FieldPath,
        batch: &RecordBatch,
        row: usize,
        options: PartitionPathOptions,
        out: &mut String,
    ) -> Result<(), KeyError> {
        let segment = partition::begin_segment(out, field.path(), options);
        let value_error = |error| KeyError::Value {
            field: field.path().to_string(),
            error,
        };
        let input = match field.leaf(batch, row).map_err(value_error)? {
            Some(array) => self.read_input(array, row).map_err(value_error)?,
            None => None,
        };
        let failed = |value: String, reason: String| KeyError::Timestamp {
            field: field.path().to_string(),
            value,
            reason,
        };
        match input {
            None => match &self.null_output {
                Ok(text) => out.push_str(text),
                Err(reason) => return Err(failed("null".to_string(), reason.clone())),
            },
            Some(TimestampInput::Instant(millis)) => self
                .format_millis(millis, None, out)
                .map_err(|reason| failed(millis.to_string(), reason))?,
            Some(TimestampInput::Number(number)) => {
                let unit = self.unit.ok_or_else(|| {
                    failed(
                        number.to_string(),
                        "a number has no time unit with DATE_STRING or MIXED".to_string(),
                    )
                })?;
                self.format_millis(unit.to_millis(number), None, out)
                    .map_err(|reason| failed(number.to_string(), reason))?;
            }
            Some(TimestampInput::Text(text)) => {
                let (millis, zone) = self
                    .parse(text)
                    .map_err(|reason| failed(text.to_string(), reason))?;
                self.format_millis(millis, Some(zone), out)
                    .map_err(|reason| failed(text.to_string(), reason))?;
            }
        }
        partition::finish_segment(
            out,
            field.path(),
            segment,
            false,
            SegmentKind::TimestampOutput,
            options,
        )?;
        Ok(())
    }

    /// Formats with the output pattern in the output zone, else the zone parsed from the input, else UTC.
    fn format_millis(
        &self,
        millis: i64,
        parsed_zone: Option<FixedOffset>,
        out: &mut String,
    ) -> Result<(), String> {
        let zone = self.output_timezone.or(parsed_zone).unwrap_or(utc());
        self.output.format(millis, zone, out)
    }

    /// Parses with all input patterns (the one that consumes the most wins; it must consume everything) and
    /// returns the instant and the zone Joda-Time would attach to it.
    fn parse(&self, text: &str) -> Result<(i64, FixedOffset), String> {
        let mut best: Option<(usize, ParsedFields)> = None;
        let mut furthest_failure = 0;
        for pattern in &self.inputs {
            match pattern.parse(text) {
                Ok((end, fields)) => {
                    if best.as_ref().is_none_or(|(b, _)| end > *b) {
                        best = Some((end, fields));
                    }
                }
                Err(at) => furthest_failure = furthest_failure.max(at),
            }
        }
        let Some((end, fields)) = best else {
            return Err(format!(
                "does not match the input date format(s) at position {furthest_failure}"
            ));
        };
        if end != text.len() {
            return Err(format!("unexpected text at position {end} after the date"));
        }
        fields.resolve(self.input_timezone)
    }

    fn read_input<'a>(
        &self,
        array: &'a dyn Array,
        row: usize,
    ) -> Result<Option<TimestampInput<'a>>, ValueError> {
        if row >= array.len() {
            return Err(ValueError::RowOutOfRange {
                row,
                len: array.len(),
            });
        }
        if array.is_null(row) {
            return Ok(None);
        }
        let data_type = array.data_type();
        if value::is_string_type(data_type) {
            return Ok(value::str_value(array, row)?.map(TimestampInput::Text));
        }
        let number = match data_type {
            DataType::Int8 => i64::from(prim::<Int8Type>(array, row)?),
            DataType::Int16 => i64::from(prim::<Int16Type>(array, row)?),
            DataType::Int32 => i64::from(prim::<Int32Type>(array, row)?),
            DataType::Int64 => prim::<Int64Type>(array, row)?,
            DataType::UInt8 => i64::from(prim::<UInt8Type>(array, row)?),
            DataType::UInt16 => i64::from(prim::<UInt16Type>(array, row)?),
            DataType::UInt32 => i64::from(prim::<UInt32Type>(array, row)?),
            DataType::UInt64 => {
                let v = prim::<UInt64Type>(array, row)?;
                i64::try_from(v).map_err(|_| out_of_range("unsigned 64-bit value", v))?
            }
            // Java's (long) cast of a float: truncation, saturation, NaN → 0 — as Rust's `as`.
            DataType::Float32 => prim::<Float32Type>(array, row)? as i64,
            DataType::Float64 => prim::<Float64Type>(array, row)? as i64,
            DataType::Decimal32(_, s) => {
                decimal_long_value(i128::from(prim::<Decimal32Type>(array, row)?), *s)?
            }
            DataType::Decimal64(_, s) => {
                decimal_long_value(i128::from(prim::<Decimal64Type>(array, row)?), *s)?
            }
            DataType::Decimal128(_, s) => {
                decimal_long_value(prim::<Decimal128Type>(array, row)?, *s)?
            }
            DataType::Decimal256(_, s) => {
                let v = prim::<Decimal256Type>(array, row)?;
                let v = v.to_i128().ok_or_else(|| out_of_range("decimal", v))?;
                decimal_long_value(v, *s)?
            }
            DataType::Date32 => i64::from(prim::<Date32Type>(array, row)?),
            DataType::Date64 => prim::<Date64Type>(array, row)?.div_euclid(86_400_000),
            DataType::Time32(TimeUnit::Second) => i64::from(prim::<Time32SecondType>(array, row)?),
            DataType::Time32(_) => i64::from(prim::<Time32MillisecondType>(array, row)?),
            DataType::Time64(TimeUnit::Microsecond) => prim::<Time64MicrosecondType>(array, row)?,
            DataType::Time64(_) => prim::<Time64NanosecondType>(array, row)?,
            DataType::Timestamp(unit, tz) => {
                let raw = match unit {
                    TimeUnit::Second => prim::<TimestampSecondType>(array, row)?,
                    TimeUnit::Millisecond => prim::<TimestampMillisecondType>(array, row)?,
                    TimeUnit::Microsecond => prim::<TimestampMicrosecondType>(array, row)?,
                    TimeUnit::Nanosecond => prim::<TimestampNanosecondType>(array, row)?,
                };
                if self.consistent_logical_timestamp && tz.is_some() {
                    match unit {
                        TimeUnit::Millisecond => return Ok(Some(TimestampInput::Instant(raw))),
                        TimeUnit::Microsecond => {
                            return Ok(Some(TimestampInput::Instant(raw / 1000)))
                        }
                        _ => {}
                    }
                }
                raw
            }
            other => {
                return Err(ValueError::UnsupportedType {
                    path: "timestamp partition value".to_string(),
                    data_type: other.to_string(),
                    reason: "not a string or a number",
                })
            }
        };
        Ok(Some(TimestampInput::Number(number)))
    }
}

fn utc() -> FixedOffset {
    chrono::Utc.fix()
}

fn out_of_range(what: &'static str, value: impl std::fmt::Display) -> ValueError {
    ValueError::OutOfRange {
        what,
        value: value.to_string(),
    }
}

fn prim<T: ArrowPrimitiveType>(array: &dyn Array, row: usize) -> Result<T::Native, ValueError> {
    array
        .as_primitive_opt::<T>()
        .map(|a| a.value(row))
        .ok_or_else(|| ValueError::SchemaMismatch {
            detail: format!(
                "array of type {} cannot be read as that type",
                array.data_type()
            ),
        })
}

/// `BigDecimal.longValue()`: the integer part, truncated toward zero (refused when it does not fit a `long`).
fn decimal_long_value(unscaled: i128, scale: i8) -> Result<i64, ValueError> {
    let value = if scale >= 0 {
        10i128
            .checked_pow(u32::from(scale.unsigned_abs()))
            .map_or(0, |p| unscaled / p)
    } else {
        10i128
            .checked_pow(u32::from(scale.unsigned_abs()))
            .and_then(|p| unscaled.checked_mul(p))
            .ok_or_else(|| out_of_range("decimal", unscaled))?
    };
    i64::try_from(value).map_err(|_| out_of_range("decimal", value))
}

fn is_numeric_type(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32
            | DataType::UInt64
            | DataType::Float32
            | DataType::Float64
            | DataType::Decimal32(_, _)
            | DataType::Decimal64(_, _)
            | DataType::Decimal128(_, _)
            | DataType::Decimal256(_, _)
            | DataType::Date32
            | DataType::Date64
            | DataType::Time32(_)
            | DataType::Time64(_)
            | DataType::Timestamp(_, _)
    )
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const WEEKDAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// One element of a Joda-Time pattern (`DateTimeFormat.forPattern`), with Joda's printing and parsing rules.
#[derive(Debug, Clone, PartialEq, Eq)]
enum DateToken {
    /// Literal text (quoted with `'…'`, or any run of non-letters); parsed case-insensitively.
    Literal(String),
    /// `y`, `yyyy`…: signed year, padded to `min_digits`; parses up to `max_parse` digits.
    Year { min_digits: usize, max_parse: usize },
    /// `yy`: the last two digits of the year (output only: parsing depends on today's date).
    TwoDigitYear,
    /// `M`, `MM`.
    Month { min_digits: usize },
    /// `MMM` (short) or `MMMM` (full) English month name.
    MonthText { full: bool },
    /// `d`, `dd`.
    DayOfMonth { min_digits: usize },
    /// `D`, `DDD` (output only).
    DayOfYear { min_digits: usize },
    /// `E`…`EEE` (short) or `EEEE` (full) English weekday name (output only).
    DayOfWeekText { full: bool },
    /// `H`: 0–23.
    HourOfDay { min_digits: usize },
    /// `k`: 1–24.
    ClockHourOfDay { min_digits: usize },
    /// `K`: 0–11.
    HourOfHalfday { min_digits: usize },
    /// `h`: 1–12.
    ClockHourOfHalfday { min_digits: usize },
    /// `a`: `AM`/`PM`.
    Halfday,
    /// `m`.
    Minute { min_digits: usize },
    /// `s`.
    Second { min_digits: usize },
    /// `S…`: fraction of the second, exactly `digits` digits (millisecond precision).
    Fraction { digits: usize },
    /// `Z` (`+0530`) or `ZZ` (`+05:30`); parses `Z` as UTC too.
    ZoneOffset { colon: bool },
}

/// A compiled Joda-Time pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
struct DatePattern {
    tokens: Vec<DateToken>,
}

/// A raw pattern element before year widths are decided.
enum RawToken {
    Letters(char, usize),
    Text(String),
}

impl RawToken {
    /// Joda's `isNumericToken`.
    fn is_numeric(&self) -> bool {
        match self {
            Self::Letters(c, len) => "cCxyYdhHmsSeDFwWkK".contains(*c) || (*c == 'M' && *len <= 2),
            Self::Text(_) => false,
        }
    }
}

impl DatePattern {
    /// Compiles `pattern`; `for_input` additionally refuses elements whose parsing cannot be reproduced exactly.
    fn compile(key: &'static str, pattern: &str, for_input: bool) -> Result<Self, KeyGenError> {
        let refuse = |reason: String| KeyGenError::UnsupportedDatePattern {
            key,
            pattern: pattern.to_string(),
            reason,
        };
        let chars: Vec<char> = pattern.chars().collect();
        let mut raw = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if c.is_ascii_alphabetic() {
                let start = i;
                while i < chars.len() && chars[i] == c {
                    i += 1;
                }
                raw.push(RawToken::Letters(c, i - start));
            } else if c == '\'' {
                if chars.get(i + 1) == Some(&'\'') {
                    raw.push(RawToken::Text("'".to_string()));
                    i += 2;
                    continue;
                }
                i += 1;
                let mut text = String::new();
                loop {
                    match chars.get(i) {
                        None => return Err(refuse("a quote is not closed".to_string())),
                        Some('\'') if chars.get(i + 1) == Some(&'\'') => {
                            text.push('\'');
                            i += 2;
                        }
                        Some('\'') => {
                            i += 1;
                            break;
                        }
                        Some(&other) => {
                            text.push(other);
                            i += 1;
                        }
                    }
                }
                raw.push(RawToken::Text(text));
            } else {
                let mut text = String::new();
                while i < chars.len() && !chars[i].is_ascii_alphabetic() && chars[i] != '\'' {
                    text.push(chars[i]);
                    i += 1;
                }
                raw.push(RawToken::Text(text));
            }
        }
        let mut tokens = Vec::with_capacity(raw.len());
        for (index, token) in raw.iter().enumerate() {
            let (c, len) = match token {
                RawToken::Text(text) => {
                    tokens.push(DateToken::Literal(text.clone()));
                    continue;
                }
                RawToken::Letters(c, len) => (*c, *len),
            };
            let next_is_numeric = raw.get(index + 1).is_some_and(RawToken::is_numeric);
            let output_only = |what: &str| {
                refuse(format!(
                    "'{c}' ({what}) can only be used in the output format"
                ))
            };
            let token = match c {
                'y' if len == 2 => {
                    if for_input {
                        return Err(output_only(
                            "two-digit year, whose parsing depends on today's date",
                        ));
                    }
                    DateToken::TwoDigitYear
                }
                'y' => DateToken::Year {
                    min_digits: len,
                    max_parse: if next_is_numeric { len } else { 9 },
                },
                'M' if len >= 3 => DateToken::MonthText { full: len >= 4 },
                'M' => DateToken::Month { min_digits: len },
                'd' => DateToken::DayOfMonth { min_digits: len },
                'D' => {
                    if for_input {
                        return Err(output_only("day of year"));
                    }
                    DateToken::DayOfYear { min_digits: len }
                }
                'E' => {
                    if for_input {
                        return Err(output_only("day of week"));
                    }
                    DateToken::DayOfWeekText { full: len >= 4 }
                }
                'H' => DateToken::HourOfDay { min_digits: len },
                'k' => DateToken::ClockHourOfDay { min_digits: len },
                'K' => DateToken::HourOfHalfday { min_digits: len },
                'h' => DateToken::ClockHourOfHalfday { min_digits: len },
                'a' => DateToken::Halfday,
                'm' => DateToken::Minute { min_digits: len },
                's' => DateToken::Second { min_digits: len },
                'S' => DateToken::Fraction { digits: len },
                'Z' if len <= 2 => DateToken::ZoneOffset { colon: len == 2 },
                'Z' | 'z' => {
                    return Err(refuse(format!(
                        "'{c}' (time zone name or id) is not supported"
                    )))
                }
                'Y' => {
                    return Err(refuse(
                        "'Y' (year of era) is not supported; use 'y'".to_string(),
                    ))
                }
                'G' | 'C' | 'x' | 'w' | 'e' => {
                    return Err(refuse(format!(
                        "'{c}' (era, century or week-based fields) is not supported"
                    )))
                }
                other => {
                    return Err(refuse(format!(
                        "'{other}' is not a Joda-Time pattern letter"
                    )))
                }
            };
            tokens.push(token);
        }
        Ok(Self { tokens })
    }

    /// Prints the instant `millis` in `zone`.
    fn format(&self, millis: i64, zone: FixedOffset, out: &mut String) -> Result<(), String> {
        let utc = DateTime::from_timestamp_millis(millis)
            .ok_or("the instant is outside the supported years")?;
        let local = utc.with_timezone(&zone);
        for token in &self.tokens {
            match token {
                DateToken::Literal(text) => out.push_str(text),
                DateToken::Year { min_digits, .. } => {
                    push_signed_padded(out, i64::from(local.year()), *min_digits)
                }
                DateToken::TwoDigitYear => {
                    push_padded(out, u64::from(local.year().unsigned_abs() % 100), 2)
                }
                DateToken::Month { min_digits } => {
                    push_padded(out, u64::from(local.month()), *min_digits)
                }
                DateToken::MonthText { full } => {
                    let name = MONTHS[local.month0() as usize % 12];
                    out.push_str(if *full { name } else { &name[..3] });
                }
                DateToken::DayOfMonth { min_digits } => {
                    push_padded(out, u64::from(local.day()), *min_digits)
                }
                DateToken::DayOfYear { min_digits } => {
                    push_padded(out, u64::from(local.ordinal()), *min_digits)
                }
                DateToken::DayOfWeekText { full } => {
                    let name = WEEKDAYS[local.weekday().num_days_from_monday() as usize % 7];
                    out.push_str(if *full { name } else { &name[..3] });
                }
                DateToken::HourOfDay { min_digits } => {
                    push_padded(out, u64::from(local.hour()), *min_digits)
                }
                DateToken::ClockHourOfDay { min_digits } => {
                    let hour = if local.hour() == 0 { 24 } else { local.hour() };
                    push_padded(out, u64::from(hour), *min_digits);
                }
                DateToken::HourOfHalfday { min_digits } => {
                    push_padded(out, u64::from(local.hour() % 12), *min_digits)
                }
                DateToken::ClockHourOfHalfday { min_digits } => {
                    let hour = if local.hour() % 12 == 0 {
                        12
                    } else {
                        local.hour() % 12
                    };
                    push_padded(out, u64::from(hour), *min_digits);
                }
                DateToken::Halfday => out.push_str(if local.hour() < 12 { "AM" } else { "PM" }),
                DateToken::Minute { min_digits } => {
                    push_padded(out, u64::from(local.minute()), *min_digits)
                }
                DateToken::Second { min_digits } => {
                    push_padded(out, u64::from(local.second()), *min_digits)
                }
                DateToken::Fraction { digits } => {
                    let millis = u64::from(local.timestamp_subsec_millis() % 1000);
                    if *digits <= 3 {
                        push_padded(out, millis / 10u64.pow(3 - *digits as u32), *digits);
                    } else {
                        push_padded(out, millis, 3);
                        out.extend(std::iter::repeat_n('0', digits - 3));
                    }
                }
                DateToken::ZoneOffset { colon } => {
                    let seconds = zone.local_minus_utc();
                    out.push(if seconds < 0 { '-' } else { '+' });
                    let seconds = seconds.unsigned_abs();
                    push_padded(out, u64::from(seconds / 3600), 2);
                    if *colon {
                        out.push(':');
                    }
                    push_padded(out, u64::from(seconds % 3600 / 60), 2);
                }
            }
        }
        Ok(())
    }

    /// Parses `text` from its start; `Ok((end, fields))` when every element matched (text may remain after
    /// `end`), `Err(position)` where it failed.
    fn parse(&self, text: &str) -> Result<(usize, ParsedFields), usize> {
        let bytes = text.as_bytes();
        let mut pos = 0;
        let mut fields = ParsedFields::default();
        for token in &self.tokens {
            match token {
                DateToken::Literal(literal) => {
                    for expected in literal.chars() {
                        let actual = text
                            .get(pos..)
                            .and_then(|rest| rest.chars().next())
                            .ok_or(pos)?;
                        let equal = actual == expected
                            || actual.to_lowercase().eq(expected.to_lowercase())
                            || actual.to_uppercase().eq(expected.to_uppercase());
                        if !equal {
                            return Err(pos);
                        }
                        pos += actual.len_utf8();
                    }
                }
                DateToken::Year { max_parse, .. } => {
                    fields.year = Some(parse_number(bytes, &mut pos, *max_parse, true)?)
                }
                DateToken::Month { .. } => {
                    fields.month = Some(parse_number(bytes, &mut pos, 2, false)?)
                }
                DateToken::MonthText { .. } => {
                    fields.month = Some(parse_name(text, &mut pos, &MONTHS)? as i64 + 1);
                }
                DateToken::DayOfMonth { .. } => {
                    fields.day = Some(parse_number(bytes, &mut pos, 2, false)?)
                }
                DateToken::HourOfDay { .. } => {
                    fields.hour_of_day = Some(parse_number(bytes, &mut pos, 2, false)?)
                }
                DateToken::ClockHourOfDay { .. } => {
                    fields.clock_hour_of_day = Some(parse_number(bytes, &mut pos, 2, false)?)
                }
                DateToken::HourOfHalfday { .. } => {
                    fields.hour_of_halfday = Some(parse_number(bytes, &mut pos, 2, false)?)
                }
                DateToken::ClockHourOfHalfday { .. } => {
                    fields.clock_hour_of_halfday = Some(parse_number(bytes, &mut pos, 2, false)?)
                }
                DateToken::Halfday => {
                    fields.pm = Some(parse_name(text, &mut pos, &["AM", "PM"])? == 1);
                }
                DateToken::Minute { .. } => {
                    fields.minute = Some(parse_number(bytes, &mut pos, 2, false)?)
                }
                DateToken::Second { .. } => {
                    fields.second = Some(parse_number(bytes, &mut pos, 2, false)?)
                }
                DateToken::Fraction { digits } => {
                    let start = pos;
                    let value = parse_number(bytes, &mut pos, *digits, false)?;
                    let read = (pos - start) as u32;
                    fields.millis = Some(if read <= 3 {
                        value * 10i64.pow(3 - read)
                    } else {
                        value / 10i64.checked_pow(read - 3).unwrap_or(i64::MAX)
                    });
                }
                DateToken::ZoneOffset { .. } => {
                    fields.offset_seconds = Some(parse_offset(bytes, &mut pos)?)
                }
                DateToken::TwoDigitYear
                | DateToken::DayOfYear { .. }
                | DateToken::DayOfWeekText { .. } => return Err(pos),
            }
        }
        Ok((pos, fields))
    }
}

fn push_padded(out: &mut String, value: u64, min_digits: usize) {
    use std::fmt::Write as _;
    // Writing into a String cannot fail.
    let _ = write!(out, "{value:0min_digits$}");
}

fn push_signed_padded(out: &mut String, value: i64, min_digits: usize) {
    if value < 0 {
        out.push('-');
    }
    push_padded(out, value.unsigned_abs(), min_digits);
}

/// Joda's number parser: up to `max_digits` digits (at least one), optionally signed; `Err(position)` otherwise.
fn parse_number(
    bytes: &[u8],
    pos: &mut usize,
    max_digits: usize,
    signed: bool,
) -> Result<i64, usize> {
    let start = *pos;
    let mut i = *pos;
    let mut negative = false;
    if signed
        && matches!(bytes.get(i), Some(b'-' | b'+'))
        && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)
    {
        negative = bytes[i] == b'-';
        i += 1;
    }
    let digits_start = i;
    let mut value: i64 = 0;
    while i < bytes.len() && i - digits_start < max_digits && bytes[i].is_ascii_digit() {
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add(i64::from(bytes[i] - b'0')))
            .ok_or(start)?;
        i += 1;
    }
    if i == digits_start {
        return Err(start);
    }
    *pos = i;
    Ok(if negative { -value } else { value })
}

/// Matches one of `names` (full, then the 3-letter short form), case-insensitively; returns its index.
fn parse_name(text: &str, pos: &mut usize, names: &[&str]) -> Result<usize, usize> {
    let rest = text.get(*pos..).ok_or(*pos)?;
    let starts_with = |name: &str| {
        rest.get(..name.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(name))
    };
    for (index, name) in names.iter().enumerate() {
        if starts_with(name) {
            *pos += name.len();
            return Ok(index);
        }
    }
    for (index, name) in names.iter().enumerate() {
        let short = name.get(..3).unwrap_or(name);
        if starts_with(short) {
            *pos += short.len();
            return Ok(index);
        }
    }
    Err(*pos)
}

/// Joda's offset parser: `Z` for UTC, else `±hh`, optionally followed by `mm` or `:mm`.
fn parse_offset(bytes: &[u8], pos: &mut usize) -> Result<i32, usize> {
    let start = *pos;
    match bytes.get(start) {
        Some(b'Z' | b'z') => {
            *pos += 1;
            return Ok(0);
        }
        Some(b'+' | b'-') => {}
        _ => return Err(start),
    }
    let sign = if bytes[start] == b'-' { -1 } else { 1 };
    let two_digits = |at: usize| -> Option<i32> {
        let d = bytes.get(at..at + 2)?;
        d.iter()
            .all(u8::is_ascii_digit)
            .then(|| i32::from(d[0] - b'0') * 10 + i32::from(d[1] - b'0'))
    };
    let hours = two_digits(start + 1).filter(|h| *h <= 23).ok_or(start)?;
    let mut i = start + 3;
    let mut minutes = 0;
    let colon = bytes.get(i) == Some(&b':');
    if let Some(m) = two_digits(if colon { i + 1 } else { i }) {
        if m > 59 {
            return Err(start);
        }
        minutes = m;
        i += if colon { 3 } else { 2 };
    }
    *pos = i;
    Ok(sign * (hours * 3600 + minutes * 60))
}

/// The fields a pattern read from a string, before they become an instant.
#[derive(Debug, Clone, Default)]
struct ParsedFields {
    year: Option<i64>,
    month: Option<i64>,
    day: Option<i64>,
    hour_of_day: Option<i64>,
    clock_hour_of_day: Option<i64>,
    hour_of_halfday: Option<i64>,
    clock_hour_of_halfday: Option<i64>,
    pm: Option<bool>,
    minute: Option<i64>,
    second: Option<i64>,
    millis: Option<i64>,
    offset_seconds: Option<i32>,
}

impl ParsedFields {
    /// The instant (Joda's defaults: 1970-01-01T00:00:00.000 for fields not in the pattern) and the zone Joda
    /// attaches to it: the input zone when configured, else the parsed offset, else UTC.
    fn resolve(&self, input_timezone: Option<FixedOffset>) -> Result<(i64, FixedOffset), String> {
        let check =
            |name: &str, value: Option<i64>, range: std::ops::RangeInclusive<i64>, default: i64| {
                let v = value.unwrap_or(default);
                if range.contains(&v) {
                    Ok(v)
                } else {
                    Err(format!("{name} {v} is out of range"))
                }
            };
        let year = check("year", self.year, -262_000..=262_000, 1970)?;
        let month = check("month", self.month, 1..=12, 1)?;
        let day = check("day of month", self.day, 1..=31, 1)?;
        let hour = if let Some(h) = self.hour_of_day {
            check("hour of day", Some(h), 0..=23, 0)?
        } else if let Some(k) = self.clock_hour_of_day {
            check("clock hour of day", Some(k), 1..=24, 24)? % 24
        } else {
            let base = if let Some(k) = self.hour_of_halfday {
                check("hour of half day", Some(k), 0..=11, 0)?
            } else if let Some(h) = self.clock_hour_of_halfday {
                check("clock hour of half day", Some(h), 1..=12, 12)? % 12
            } else {
                0
            };
            base + if self.pm == Some(true) { 12 } else { 0 }
        };
        let minute = check("minute", self.minute, 0..=59, 0)?;
        let second = check("second", self.second, 0..=59, 0)?;
        let millis = check("millisecond", self.millis, 0..=999, 0)?;
        let date = NaiveDate::from_ymd_opt(year as i32, month as u32, day as u32)
            .ok_or_else(|| format!("{year:04}-{month:02}-{day:02} is not a date"))?;
        let local = date
            .and_hms_milli_opt(hour as u32, minute as u32, second as u32, millis as u32)
            .ok_or("the time of day is invalid")?;
        let parsed_offset = match self.offset_seconds {
            Some(seconds) => {
                Some(FixedOffset::east_opt(seconds).ok_or("the offset is out of range")?)
            }
            None => None,
        };
        let offset_for_instant = parsed_offset.or(input_timezone).unwrap_or(utc());
        let instant = local.and_utc().timestamp_millis()
            - i64::from(offset_for_instant.local_minus_utc()) * 1000;
        let zone = input_timezone.or(parsed_offset).unwrap_or(utc());
        Ok((instant, zone))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::builder::{Int32Builder, StringBuilder};
    use arrow_array::{ArrayRef, Int64Array, StructArray, TimestampMillisecondArray};
    use arrow_schema::{Field, Fields, Schema};

    use super::*;

    fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
        let fields: Vec<Field> = columns
            .iter()
            .map(|(name, array)| Field::new(*name, array.data_type().clone(), true))
            .collect();
        let arrays = columns.into_iter().map(|(_, a)| a).collect();
        RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).expect("batch")
    }

    fn ints(values: &[Option<i32>]) -> ArrayRef {
        let mut b = Int32Builder::new();
        for v in values {
            b.append_option(*v);
        }
        Arc::new(b.finish())
    }

    fn strings(values: &[Option<&str>]) -> ArrayRef {
        let mut b = StringBuilder::new();
        for v in values {
            b.append_option(*v);
        }
        Arc::new(b.finish())
    }

    fn generator(pairs: &[(&str, &str)], batch: &RecordBatch) -> KeyGenerator {
        let config = KeyGenConfig::from_properties(&props(pairs)).expect("config");
        KeyGenerator::try_new(config, &batch.schema()).expect("generator")
    }

    #[test]
    fn kinds_parse_from_classes_and_types() {
        use KeyGeneratorKind::*;
        for (name, kind) in [
            ("org.apache.hudi.keygen.SimpleKeyGenerator", Simple),
            ("org.apache.hudi.keygen.SimpleAvroKeyGenerator", Simple),
            ("org.apache.hudi.keygen.ComplexKeyGenerator", Complex),
            ("org.apache.hudi.keygen.ComplexAvroKeyGenerator", Complex),
            (
                "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
                NonPartitioned,
            ),
            (
                "org.apache.hudi.keygen.NonpartitionedAvroKeyGenerator",
                NonPartitioned,
            ),
            (
                "org.apache.hudi.keygen.TimestampBasedKeyGenerator",
                TimestampBased,
            ),
            (
                "org.apache.hudi.keygen.TimestampBasedAvroKeyGenerator",
                TimestampBased,
            ),
        ] {
            assert_eq!(
                KeyGeneratorKind::from_class_name(name),
                Some(kind),
                "{name}"
            );
        }
        assert_eq!(
            KeyGeneratorKind::from_class_name("org.apache.hudi.keygen.CustomKeyGenerator"),
            None
        );
        assert_eq!(
            KeyGeneratorKind::from_class_name("SimpleKeyGenerator"),
            None
        );
        for (name, kind) in [
            ("SIMPLE", Simple),
            ("simple", Simple),
            ("COMPLEX_AVRO", Complex),
            ("NON_PARTITION", NonPartitioned),
            ("TIMESTAMP", TimestampBased),
        ] {
            assert_eq!(KeyGeneratorKind::from_type_name(name), Some(kind), "{name}");
        }
        assert_eq!(KeyGeneratorKind::from_type_name("CUSTOM"), None);
        for kind in [Simple, Complex, NonPartitioned, TimestampBased] {
            assert_eq!(
                KeyGeneratorKind::from_class_name(kind.class_name()),
                Some(kind)
            );
            assert_eq!(
                KeyGeneratorKind::from_type_name(kind.type_name()),
                Some(kind)
            );
        }
    }

    #[test]
    fn kind_is_inferred_as_hudi_does() {
        let f = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            KeyGeneratorKind::infer(&f(&["id"]), &f(&[])),
            KeyGeneratorKind::NonPartitioned
        );
        assert_eq!(
            KeyGeneratorKind::infer(&f(&["a", "b"]), &f(&[])),
            KeyGeneratorKind::NonPartitioned
        );
        assert_eq!(
            KeyGeneratorKind::infer(&f(&["id"]), &f(&["p"])),
            KeyGeneratorKind::Simple
        );
        assert_eq!(
            KeyGeneratorKind::infer(&f(&["a", "b"]), &f(&["p"])),
            KeyGeneratorKind::Complex
        );
        assert_eq!(
            KeyGeneratorKind::infer(&f(&["id"]), &f(&["p", "q"])),
            KeyGeneratorKind::Complex
        );
        let config = KeyGenConfig::from_properties(&props(&[
            (WRITE_RECORD_KEY, "id"),
            (WRITE_PARTITION, "p"),
        ]))
        .expect("config");
        assert_eq!(config.kind, KeyGeneratorKind::Simple);
    }

    #[test]
    fn table_and_write_keys_must_agree() {
        let config = KeyGenConfig::from_properties(&props(&[
            (TABLE_RECORD_KEY, "id,name"),
            (WRITE_RECORD_KEY, " id , name "),
            (TABLE_PARTITION, "p"),
            (
                TABLE_KEYGEN_CLASS,
                "org.apache.hudi.keygen.ComplexKeyGenerator",
            ),
            (WRITE_KEYGEN_TYPE, "COMPLEX"),
            (HIVE_STYLE, "true"),
        ]))
        .expect("agreeing spellings");
        assert_eq!(config.record_key_fields, vec!["id", "name"]);
        assert_eq!(config.kind, KeyGeneratorKind::Complex);
        assert!(config.hive_style && !config.url_encode);

        let err = KeyGenConfig::from_properties(&props(&[
            (TABLE_RECORD_KEY, "id"),
            (WRITE_RECORD_KEY, "uuid"),
        ]))
        .expect_err("disagree");
        let text = err.to_string();
        assert!(
            text.contains(TABLE_RECORD_KEY)
                && text.contains(WRITE_RECORD_KEY)
                && text.contains("uuid"),
            "{text}"
        );

        let err = KeyGenConfig::from_properties(&props(&[
            (TABLE_RECORD_KEY, "id"),
            (
                TABLE_KEYGEN_CLASS,
                "org.apache.hudi.keygen.SimpleKeyGenerator",
            ),
            (
                WRITE_KEYGEN_CLASS,
                "org.apache.hudi.keygen.ComplexKeyGenerator",
            ),
            (TABLE_PARTITION, "p"),
        ]))
        .expect_err("disagree");
        assert!(err.to_string().contains(WRITE_KEYGEN_CLASS), "{err}");

        let err = KeyGenConfig::from_properties(&props(&[
            (TABLE_RECORD_KEY, "id"),
            (
                TABLE_KEYGEN_CLASS,
                "org.apache.hudi.keygen.CustomKeyGenerator",
            ),
        ]))
        .expect_err("unsupported");
        assert!(
            matches!(err, KeyGenError::UnsupportedKeyGenerator { .. }),
            "{err}"
        );
        assert_eq!(
            KeyGenConfig::from_properties(&props(&[(TABLE_PARTITION, "p")])),
            Err(KeyGenError::MissingRecordKeyFields)
        );
        assert!(matches!(
            KeyGenConfig::from_properties(&props(&[(TABLE_RECORD_KEY, "id"), (HIVE_STYLE, "yes")])),
            Err(KeyGenError::InvalidValue {
                key: HIVE_STYLE,
                ..
            })
        ));
    }

    #[test]
    fn field_counts_fit_the_kind() {
        let simple = |keys: &str, parts: &str| {
            KeyGenConfig::from_properties(&props(&[
                (TABLE_RECORD_KEY, keys),
                (TABLE_PARTITION, parts),
                (
                    TABLE_KEYGEN_CLASS,
                    "org.apache.hudi.keygen.SimpleKeyGenerator",
                ),
            ]))
        };
        assert!(simple("id", "p").is_ok());
        assert!(simple("id", "").is_ok());
        assert!(matches!(
            simple("a,b", "p"),
            Err(KeyGenError::InvalidFields { .. })
        ));
        assert!(matches!(
            simple("id", "p,q"),
            Err(KeyGenError::InvalidFields { .. })
        ));
        let hive_bad_name = KeyGenConfig {
            kind: KeyGeneratorKind::Complex,
            record_key_fields: vec!["id".to_string()],
            partition_fields: vec!["a=b".to_string()],
            hive_style: true,
            url_encode: false,
            consistent_logical_timestamp: false,
            timestamp: None,
            complex_single_field_with_name: false,
        };
        assert!(matches!(
            hive_bad_name.validate(),
            Err(KeyGenError::InvalidFields { .. })
        ));
    }

    #[test]
    fn missing_fields_are_named_at_start_up() {
        let batch = batch(vec![("id", ints(&[Some(1)]))]);
        let config = KeyGenConfig::from_properties(&props(&[
            (TABLE_RECORD_KEY, "id"),
            (TABLE_PARTITION, "region"),
        ]))
        .expect("config");
        let err = KeyGenerator::try_new(config, &batch.schema()).expect_err("region missing");
        let text = err.to_string();
        assert!(
            text.contains("partition field") && text.contains("`region`"),
            "{text}"
        );
    }

    #[test]
    fn simple_keys_and_paths() {
        let batch = batch(vec![
            ("id", ints(&[Some(1), None, Some(3), Some(4)])),
            ("byteField", ints(&[Some(10), Some(20), None, Some(30)])),
            (
                "name",
                strings(&[Some("a"), Some("b"), Some("c"), Some("")]),
            ),
        ]);
        let keygen = generator(
            &[
                (TABLE_RECORD_KEY, "id"),
                (TABLE_PARTITION, "byteField"),
                (
                    TABLE_KEYGEN_CLASS,
                    "org.apache.hudi.keygen.SimpleKeyGenerator",
                ),
                (HIVE_STYLE, "true"),
            ],
            &batch,
        );
        let keys = keygen.keys(&batch);
        assert_eq!(keys[0], Ok(("1".to_string(), "byteField=10".to_string())));
        assert_eq!(
            keys[1],
            Err(KeyError::NullRecordKey {
                field: "id".to_string()
            })
        );
        assert_eq!(
            keys[2],
            Ok((
                "3".to_string(),
                "byteField=__HIVE_DEFAULT_PARTITION__".to_string()
            ))
        );
        let by_name = generator(
            &[(TABLE_RECORD_KEY, "name"), (TABLE_PARTITION, "byteField")],
            &batch,
        );
        let mut out = String::from("stale");
        assert_eq!(
            by_name.record_key(&batch, 3, &mut out),
            Err(KeyError::EmptyRecordKey {
                field: "name".to_string()
            })
        );
        by_name.record_key(&batch, 0, &mut out).expect("key");
        assert_eq!(out, "a", "the buffer is cleared first");
        let mut path = String::new();
        by_name.partition_path(&batch, 0, &mut path).expect("path");
        assert_eq!(path, "10");
        assert!(matches!(
            by_name.record_key(&batch, 4, &mut out),
            Err(KeyError::Value {
                error: ValueError::RowOutOfRange { .. },
                ..
            })
        ));
    }

    #[test]
    fn complex_keys_name_their_fields() {
        let batch = batch(vec![
            ("id", ints(&[Some(1), None, None, Some(4)])),
            (
                "name",
                strings(&[Some("Alice"), Some(""), None, Some("x:y,z")]),
            ),
            ("byteField", ints(&[Some(10), Some(20), Some(30), Some(40)])),
            ("shortField", ints(&[Some(300), Some(100), None, Some(1)])),
        ]);
        let keygen = generator(
            &[
                (TABLE_RECORD_KEY, "id,name"),
                (TABLE_PARTITION, "byteField,shortField"),
                (
                    TABLE_KEYGEN_CLASS,
                    "org.apache.hudi.keygen.ComplexKeyGenerator",
                ),
                (HIVE_STYLE, "true"),
            ],
            &batch,
        );
        let keys = keygen.keys(&batch);
        assert_eq!(
            keys[0],
            Ok((
                "id:1,name:Alice".to_string(),
                "byteField=10/shortField=300".to_string()
            ))
        );
        assert_eq!(
            keys[1],
            Err(KeyError::AllRecordKeyFieldsNullOrEmpty {
                fields: "id,name".to_string()
            })
        );
        assert!(matches!(
            keys[2],
            Err(KeyError::AllRecordKeyFieldsNullOrEmpty { .. })
        ));
        assert_eq!(
            keys[3],
            Ok((
                "id:4,name:x:y,z".to_string(),
                "byteField=40/shortField=1".to_string()
            ))
        );
        let mut key = String::new();
        let partial = batch.slice(1, 1);
        let half = generator(
            &[
                (TABLE_RECORD_KEY, "id,byteField"),
                (TABLE_PARTITION, "name"),
            ],
            &partial,
        );
        half.record_key(&partial, 0, &mut key)
            .expect("one value present");
        assert_eq!(key, "id:__null__,byteField:20");
        let empty = generator(
            &[
                (TABLE_RECORD_KEY, "name,byteField"),
                (TABLE_PARTITION, "name"),
            ],
            &partial,
        );
        empty
            .record_key(&partial, 0, &mut key)
            .expect("one value present");
        assert_eq!(key, "name:__empty__,byteField:20");
    }

    #[test]
    fn single_field_complex_keys_follow_the_table_version() {
        let batch = batch(vec![("id", ints(&[Some(7)])), ("p", ints(&[Some(1)]))]);
        let base = [
            (TABLE_RECORD_KEY, "id"),
            (TABLE_PARTITION, "p"),
            (
                TABLE_KEYGEN_CLASS,
                "org.apache.hudi.keygen.ComplexKeyGenerator",
            ),
        ];
        let key_of = |extra: &[(&str, &str)]| {
            let mut pairs = base.to_vec();
            pairs.extend_from_slice(extra);
            let keygen = generator(&pairs, &batch);
            let mut key = String::new();
            keygen.record_key(&batch, 0, &mut key).expect("key");
            key
        };
        assert_eq!(key_of(&[]), "7", "Hudi 0.14.1-1.0.2 (HUDI-7001)");
        assert_eq!(key_of(&[(TABLE_VERSION, "6")]), "7");
        assert_eq!(key_of(&[(COMPLEX_NEW_ENCODING, "true")]), "7");
        assert_eq!(key_of(&[(COMPLEX_NEW_ENCODING, "false")]), "id:7");
        assert_eq!(key_of(&[(TABLE_VERSION, "9")]), "id:7");
    }

    #[test]
    fn nonpartitioned_keys() {
        let batch = batch(vec![
            ("id", ints(&[Some(1)])),
            ("name", strings(&[Some("n")])),
        ]);
        let one = generator(
            &[
                (TABLE_RECORD_KEY, "id"),
                (
                    TABLE_KEYGEN_CLASS,
                    "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
                ),
            ],
            &batch,
        );
        assert_eq!(one.keys(&batch), vec![Ok(("1".to_string(), String::new()))]);
        let two = generator(&[(TABLE_RECORD_KEY, "id,name")], &batch);
        assert_eq!(two.config().kind, KeyGeneratorKind::NonPartitioned);
        assert_eq!(
            two.keys(&batch),
            vec![Ok(("id:1,name:n".to_string(), String::new()))]
        );
    }

    #[test]
    fn nested_fields_by_dot_path() {
        let inner = Fields::from(vec![Field::new("city", DataType::Utf8, true)]);
        let address = StructArray::new(
            inner.clone(),
            vec![strings(&[Some("Paris"), None])],
            Some(vec![true, true].into()),
        );
        let batch = batch(vec![
            ("id", ints(&[Some(1), Some(2)])),
            ("address", Arc::new(address) as ArrayRef),
        ]);
        let keygen = generator(
            &[
                (TABLE_RECORD_KEY, "id"),
                (TABLE_PARTITION, "address.city"),
                (HIVE_STYLE, "true"),
            ],
            &batch,
        );
        let keys = keygen.keys(&batch);
        assert_eq!(
            keys[0],
            Ok(("1".to_string(), "address.city=Paris".to_string()))
        );
        assert_eq!(
            keys[1],
            Ok((
                "2".to_string(),
                "address.city=__HIVE_DEFAULT_PARTITION__".to_string()
            ))
        );
    }

    #[test]
    fn hostile_partition_values_become_key_errors() {
        let batch = batch(vec![
            ("id", ints(&[Some(1), Some(2), Some(3)])),
            ("p", strings(&[Some("../etc"), Some(".."), Some("a/b")])),
        ]);
        let plain = generator(&[(TABLE_RECORD_KEY, "id"), (TABLE_PARTITION, "p")], &batch);
        for result in plain.keys(&batch) {
            assert!(matches!(result, Err(KeyError::Partition(_))), "{result:?}");
        }
        let encoded = generator(
            &[
                (TABLE_RECORD_KEY, "id"),
                (TABLE_PARTITION, "p"),
                (URL_ENCODE, "true"),
            ],
            &batch,
        );
        let keys = encoded.keys(&batch);
        assert_eq!(keys[0], Ok(("1".to_string(), "..%2Fetc".to_string())));
        assert!(matches!(keys[1], Err(KeyError::Partition(_))));
        assert_eq!(keys[2], Ok(("3".to_string(), "a%2Fb".to_string())));
    }

    fn timestamp_generator(
        extra: &[(&str, &str)],
        batch: &RecordBatch,
    ) -> Result<KeyGenerator, KeyGenError> {
        let mut pairs = vec![
            (TABLE_RECORD_KEY, "id"),
            (TABLE_PARTITION, "ts"),
            (
                TABLE_KEYGEN_CLASS,
                "org.apache.hudi.keygen.TimestampBasedKeyGenerator",
            ),
        ];
        pairs.extend_from_slice(extra);
        let config = KeyGenConfig::from_properties(&props(&pairs))?;
        KeyGenerator::try_new(config, &batch.schema())
    }

    fn paths(keygen: &KeyGenerator, batch: &RecordBatch) -> Vec<Result<String, String>> {
        keygen
            .keys(batch)
            .into_iter()
            .map(|r| r.map(|(_, p)| p).map_err(|e| e.to_string()))
            .collect()
    }

    #[test]
    fn date_strings_as_the_golden_table() {
        let batch = batch(vec![
            ("id", ints(&[Some(1), Some(2), Some(3), Some(4), Some(5)])),
            (
                "ts",
                strings(&[
                    Some("2023-04-01T12:01:00.123Z"),
                    Some("2023-04-04T13:01:00.123Z"),
                    Some("2023-04-01T23:30:00.000-0200"),
                    None,
                    Some("not a date"),
                ]),
            ),
        ]);
        let keygen = timestamp_generator(
            &[
                (TS_TYPE, "DATE_STRING"),
                (TS_INPUT_FORMAT, "yyyy-MM-dd'T'HH:mm:ss.SSSZ"),
                (TS_OUTPUT_FORMAT, "yyyy/MM/dd/HH"),
            ],
            &batch,
        )
        .expect("generator");
        let got = paths(&keygen, &batch);
        assert_eq!(got[0].as_deref(), Ok("2023/04/01/12"));
        assert_eq!(got[1].as_deref(), Ok("2023/04/04/13"));
        assert_eq!(
            got[2].as_deref(),
            Ok("2023/04/01/23"),
            "no output zone: the parsed offset's wall clock"
        );
        assert_eq!(
            got[3].as_deref(),
            Ok("1970/01/01/00"),
            "null: Hudi's default of epoch + 1 ms"
        );
        assert!(
            got[4].as_ref().is_err_and(|e| e.contains("not a date")),
            "{:?}",
            got[4]
        );

        let utc_out = timestamp_generator(
            &[
                (TS_TYPE, "DATE_STRING"),
                (TS_INPUT_FORMAT, "yyyy-MM-dd'T'HH:mm:ss.SSSZ"),
                (TS_OUTPUT_FORMAT, "yyyy/MM/dd/HH"),
                (TS_OUTPUT_TIMEZONE, "UTC"),
                (HIVE_STYLE, "true"),
            ],
            &batch,
        )
        .expect("generator");
        assert_eq!(
            paths(&utc_out, &batch)[2].as_deref(),
            Ok("ts=2023/04/02/01")
        );
    }

    #[test]
    fn epoch_inputs_and_zones() {
        let millis = Arc::new(Int64Array::from(vec![
            Some(1_578_283_932_000),
            None,
            Some(-1),
            Some(i64::MAX),
        ])) as ArrayRef;
        let batch = batch(vec![
            ("id", ints(&[Some(1), Some(2), Some(3), Some(4)])),
            ("ts", millis),
        ]);
        // Hudi's own test: 1578283932000 ms in GMT+8 with "yyyy-MM-dd hh" is "2020-01-06 12".
        let keygen = timestamp_generator(
            &[
                (TS_TYPE, "EPOCHMILLISECONDS"),
                (TS_OUTPUT_FORMAT, "yyyy-MM-dd hh"),
                (TS_TIMEZONE, "GMT+8:00"),
            ],
            &batch,
        )
        .expect("generator");
        let got = paths(&keygen, &batch);
        assert_eq!(got[0].as_deref(), Ok("2020-01-06 12"));
        assert_eq!(
            got[1].as_deref(),
            Ok("1970-01-01 08"),
            "null: 1 ms after the epoch"
        );
        assert_eq!(got[2].as_deref(), Ok("1970-01-01 07"));

        let seconds = timestamp_generator(
            &[
                (TS_TYPE, "UNIX_TIMESTAMP"),
                (TS_OUTPUT_FORMAT, "yyyyMMddHHmmss"),
            ],
            &batch,
        )
        .expect("generator");
        let got = paths(&seconds, &batch);
        assert_eq!(got[0].as_deref(), Ok("519831030032000"), "year 51983");
        assert!(
            got[3].as_ref().is_err_and(|e| e.contains("outside")),
            "year 292 million: {:?}",
            got[3]
        );
        assert_eq!(
            got[1].as_deref(),
            Ok("19700101000001"),
            "null: 1 second after the epoch"
        );
        assert_eq!(got[2].as_deref(), Ok("19691231235959"));
        let micros = timestamp_generator(
            &[(TS_TYPE, "EPOCHMICROSECONDS"), (TS_OUTPUT_FORMAT, "yyyy")],
            &batch,
        )
        .expect("generator");
        assert_eq!(paths(&micros, &batch)[0].as_deref(), Ok("1970"));
        let scalar = timestamp_generator(
            &[
                (TS_TYPE, "SCALAR"),
                (TS_SCALAR_UNIT, "days"),
                (TS_OUTPUT_FORMAT, "yyyy-MM-dd"),
            ],
            &batch,
        )
        .expect("generator");
        assert_eq!(paths(&scalar, &batch)[1].as_deref(), Ok("1970-01-02"));
    }

    #[test]
    fn timestamp_configuration_errors() {
        let batch = batch(vec![
            ("id", ints(&[Some(1)])),
            ("ts", strings(&[Some("x")])),
        ]);
        assert!(matches!(
            timestamp_generator(&[(TS_OUTPUT_FORMAT, "yyyy")], &batch),
            Err(KeyGenError::MissingProperty { key: TS_TYPE, .. })
        ));
        assert!(matches!(
            timestamp_generator(
                &[(TS_TYPE, "DATE_STRING"), (TS_OUTPUT_FORMAT, "yyyy")],
                &batch
            ),
            Err(KeyGenError::MissingProperty {
                key: TS_INPUT_FORMAT,
                ..
            })
        ));
        assert!(matches!(
            timestamp_generator(
                &[(TS_TYPE, "EPOCHMILLISECONDS"), (TS_OUTPUT_FORMAT, "yyyy")],
                &batch
            ),
            Err(KeyGenError::TimestampFieldType { .. })
        ));
        for bad in [
            "yyyy-ww",
            "YYYY",
            "yyyy zzz",
            "yyyy 'open",
            "yyyy ZZZ",
            "yyyy G",
        ] {
            let err = timestamp_generator(
                &[
                    (TS_TYPE, "DATE_STRING"),
                    (TS_INPUT_FORMAT, "yyyy"),
                    (TS_OUTPUT_FORMAT, bad),
                ],
                &batch,
            )
            .expect_err(bad);
            assert!(
                matches!(err, KeyGenError::UnsupportedDatePattern { .. }),
                "{bad}: {err}"
            );
        }
        for bad_input in ["yy-MM", "yyyy-DDD", "EEE yyyy"] {
            assert!(
                timestamp_generator(
                    &[
                        (TS_TYPE, "DATE_STRING"),
                        (TS_INPUT_FORMAT, bad_input),
                        (TS_OUTPUT_FORMAT, "yyyy")
                    ],
                    &batch
                )
                .is_err(),
                "{bad_input}"
            );
        }
        for zone in ["Europe/Paris", "UTC+01:00", "GMT+25", "GMT+1:5"] {
            let err = timestamp_generator(
                &[
                    (TS_TYPE, "DATE_STRING"),
                    (TS_INPUT_FORMAT, "yyyy"),
                    (TS_OUTPUT_FORMAT, "yyyy"),
                    (TS_TIMEZONE, zone),
                ],
                &batch,
            )
            .expect_err(zone);
            assert!(err.to_string().contains(TS_TIMEZONE), "{err}");
        }
        // The deprecated spelling is read too.
        assert!(timestamp_generator(
            &[
                (
                    "hoodie.deltastreamer.keygen.timebased.timestamp.type",
                    "DATE_STRING"
                ),
                (TS_INPUT_FORMAT, "yyyy"),
                (TS_OUTPUT_FORMAT, "yyyy"),
            ],
            &batch
        )
        .is_ok());
    }

    #[test]
    fn timezone_ids() {
        let offset = |id| {
            parse_java_timezone(TS_TIMEZONE, id)
                .expect(id)
                .map(|o| o.local_minus_utc())
        };
        assert_eq!(offset("UTC"), Some(0));
        assert_eq!(offset("GMT"), Some(0));
        assert_eq!(offset("Etc/UTC"), Some(0));
        assert_eq!(offset("GMT+8"), Some(8 * 3600));
        assert_eq!(offset("GMT+8:00"), Some(8 * 3600));
        assert_eq!(offset("GMT-05:30"), Some(-(5 * 3600 + 1800)));
        assert_eq!(offset("GMT+0530"), Some(5 * 3600 + 1800));
        assert_eq!(offset(""), None);
    }

    fn pattern(p: &str) -> DatePattern {
        DatePattern::compile(TS_OUTPUT_FORMAT, p, false).expect(p)
    }

    fn format(p: &str, millis: i64, offset_seconds: i32) -> String {
        let mut out = String::new();
        pattern(p)
            .format(
                millis,
                FixedOffset::east_opt(offset_seconds).expect("offset"),
                &mut out,
            )
            .expect("format");
        out
    }

    #[test]
    fn joda_formatting() {
        // 2023-04-01T12:01:02.034Z, a Saturday.
        let t = 1_680_350_462_034;
        assert_eq!(format("yyyy/MM/dd/HH", t, 0), "2023/04/01/12");
        assert_eq!(
            format("yyyy-MM-dd'T'HH:mm:ss.SSSZ", t, 0),
            "2023-04-01T12:01:02.034+0000"
        );
        assert_eq!(
            format("yyyy-MM-dd'T'HH:mm:ss.SSSZZ", t, -(5 * 3600 + 1800)),
            "2023-04-01T06:31:02.034-05:30"
        );
        assert_eq!(format("y-M-d H:m:s.S", t, 0), "2023-4-1 12:1:2.0");
        assert_eq!(
            format("yy MMM MMMM EEE EEEE D DDD", t, 0),
            "23 Apr April Sat Saturday 91 091"
        );
        assert_eq!(format("hh:mm a K k", t, 0), "12:01 PM 0 12");
        assert_eq!(format("hh a k", 0, 0), "12 AM 24");
        assert_eq!(format("SSSSS", t, 0), "03400");
        assert_eq!(format("'quoted ''x''' yyyy''", t, 0), "quoted 'x' 2023'");
        assert_eq!(format("yyyy", -62_198_755_200_000, 0), "-0001");
        assert_eq!(format("yyyyMMdd", 253_402_300_800_000, 0), "100000101");
    }

    fn parse(p: &str, text: &str) -> Result<(i64, i32), String> {
        let compiled = DatePattern::compile(TS_INPUT_FORMAT, p, true).expect(p);
        let (end, fields) = compiled
            .parse(text)
            .map_err(|at| format!("failed at {at}"))?;
        if end != text.len() {
            return Err(format!("stopped at {end}"));
        }
        fields
            .resolve(None)
            .map(|(ms, zone)| (ms, zone.local_minus_utc()))
    }

    #[test]
    fn joda_parsing() {
        assert_eq!(
            parse("yyyy-MM-dd'T'HH:mm:ss.SSSZ", "2023-04-01T12:01:00.123Z"),
            Ok((1_680_350_460_123, 0))
        );
        assert_eq!(
            parse("yyyy-MM-dd'T'HH:mm:ss.SSSZ", "2023-04-01T12:01:00.123+0530"),
            Ok((1_680_350_460_123 - 19_800_000, 19_800))
        );
        assert_eq!(
            parse(
                "yyyy-MM-dd'T'HH:mm:ss.SSSZZ",
                "2023-04-01T12:01:00.123-02:00"
            ),
            Ok((1_680_350_460_123 + 7_200_000, -7_200))
        );
        assert_eq!(parse("yyyyMMdd", "20230401"), Ok((1_680_307_200_000, 0)));
        assert_eq!(parse("yyyy-M-d", "2023-4-1"), Ok((1_680_307_200_000, 0)));
        assert_eq!(
            parse("dd MMM yyyy hh:mm a", "01 apr 2023 01:30 pm"),
            Ok((1_680_355_800_000, 0))
        );
        assert_eq!(
            parse("dd MMMM yyyy", "01 April 2023"),
            Ok((1_680_307_200_000, 0))
        );
        assert_eq!(
            parse("yyyy-MM-dd't'HH", "2023-04-01T12"),
            Ok((1_680_350_400_000, 0)),
            "literals ignore case"
        );
        assert_eq!(
            parse("yyyy.SSS", "2023.5"),
            Ok((1_672_531_200_500, 0)),
            "one fraction digit is tenths"
        );
        // Extra fraction digits are truncated to milliseconds; long fractions do not overflow.
        let nines = format!("yyyy.{}", "S".repeat(18));
        assert_eq!(
            parse(&nines, &format!("2023.{}", "9".repeat(18))).map(|r| r.0),
            Ok(1_672_531_200_999)
        );
        let zeros = format!("yyyy.{}", "S".repeat(25));
        assert_eq!(
            parse(&zeros, &format!("2023.{}", "0".repeat(25))).map(|r| r.0),
            Ok(1_672_531_200_000)
        );
        assert!(parse("yyyy-MM-dd", "2023-02-30").is_err_and(|e| e.contains("not a date")));
        assert!(parse("yyyy-MM-dd", "2023-13-01").is_err());
        assert!(parse("yyyy-MM-dd", "2023-04-01x").is_err_and(|e| e.contains("stopped")));
        assert!(parse("yyyy-MM-dd", "2023/04/01").is_err());
        assert!(parse("HH", "24").is_err());
    }

    #[test]
    fn several_input_formats_longest_match_wins() {
        let batch = batch(vec![
            ("id", ints(&[Some(1), Some(2)])),
            ("ts", strings(&[Some("2023-04-01"), Some("2023-04-01 13")])),
        ]);
        let keygen = timestamp_generator(
            &[
                (TS_TYPE, "DATE_STRING"),
                (TS_INPUT_FORMAT, "yyyy-MM-dd, yyyy-MM-dd HH"),
                (TS_OUTPUT_FORMAT, "yyyy/MM/dd/HH"),
            ],
            &batch,
        )
        .expect("generator");
        let got = paths(&keygen, &batch);
        assert_eq!(got[0].as_deref(), Ok("2023/04/01/00"));
        assert_eq!(got[1].as_deref(), Ok("2023/04/01/13"));
    }

    #[test]
    fn consistent_logical_timestamps_read_instants() {
        let ts = TimestampMillisecondArray::from(vec![1_680_350_460_123i64]).with_timezone("UTC");
        let batch = batch(vec![
            ("id", ints(&[Some(1)])),
            ("ts", Arc::new(ts) as ArrayRef),
        ]);
        // Without the option the stored number is read in the configured unit (here seconds, as Hudi would).
        let raw = timestamp_generator(
            &[
                (TS_TYPE, "EPOCHMILLISECONDS"),
                (TS_OUTPUT_FORMAT, "yyyy-MM-dd"),
            ],
            &batch,
        )
        .expect("generator");
        assert_eq!(paths(&raw, &batch)[0].as_deref(), Ok("2023-04-01"));
        let instant = timestamp_generator(
            &[
                (TS_TYPE, "DATE_STRING"),
                (TS_INPUT_FORMAT, "yyyy"),
                (TS_OUTPUT_FORMAT, "yyyy-MM-dd HH"),
                (CONSISTENT_LOGICAL_TIMESTAMP, "true"),
            ],
            &batch,
        )
        .expect("a Timestamp needs no unit");
        assert_eq!(paths(&instant, &batch)[0].as_deref(), Ok("2023-04-01 12"));
    }
}
