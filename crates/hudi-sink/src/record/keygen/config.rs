//! Key generator configuration: Hudi's key generator keys read, checked and defaulted, once at start-up.

use super::*;

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
pub(super) fn split_fields(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Reads a setting that has a table key and a write-config key: the table key wins, a disagreement is an error.
pub(super) fn pick<T: PartialEq>(
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

pub(super) fn configured_kind(
    props: &BTreeMap<String, String>,
) -> Result<Option<KeyGeneratorKind>, KeyGenError> {
    pub(super) type Parser = fn(&str) -> Option<KeyGeneratorKind>;
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

pub(super) fn bool_property(
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
pub(super) fn timestamp_property<'p>(
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

pub(super) fn timestamp_options(
    props: &BTreeMap<String, String>,
) -> Result<TimestampOptions, KeyGenError> {
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
    pub(super) const UTC_ALIASES: &[&str] = &[
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
