//! The timestamp-based partitioner: a field's time read as Hudi's `TimestampBasedAvroKeyGenerator` reads it.

use super::*;

/// The partition value of a timestamp-based key generator, as Hudi's `getPartitionPath(Object)` sees it.
pub(super) enum TimestampInput<'a> {
    /// A number in the configured unit (Hudi: `Long`, `Integer`, `Double.longValue()`, `LocalDate.toEpochDay()`…).
    Number(i64),
    /// Milliseconds since the epoch (a `java.sql.Timestamp`, with consistent logical timestamps).
    Instant(i64),
    /// A date string.
    Text(&'a str),
}

/// The compiled timestamp-based partitioner.
#[derive(Debug, Clone)]
pub(super) struct TimestampPartitioner {
    pub(super) timestamp_type: TimestampType,
    pub(super) unit: Option<JavaTimeUnit>,
    pub(super) inputs: Vec<DatePattern>,
    pub(super) output: DatePattern,
    pub(super) input_timezone: Option<FixedOffset>,
    pub(super) output_timezone: Option<FixedOffset>,
    pub(super) consistent_logical_timestamp: bool,
    /// The output for a null value (Hudi formats a default of 1 in the input's terms), or why there is none.
    pub(super) null_output: Result<String, String>,
}

impl TimestampPartitioner {
    pub(super) fn try_new(
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

    pub(super) fn check_field_type(&self, field: &FieldPath) -> Result<(), KeyGenError> {
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
    pub(super) fn default_output(&self) -> Result<String, String> {
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

    pub(super) fn write(
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
    pub(super) fn format_millis(
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
    pub(super) fn parse(&self, text: &str) -> Result<(i64, FixedOffset), String> {
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

    pub(super) fn read_input<'a>(
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

pub(super) fn utc() -> FixedOffset {
    chrono::Utc.fix()
}

pub(super) fn out_of_range(what: &'static str, value: impl std::fmt::Display) -> ValueError {
    ValueError::OutOfRange {
        what,
        value: value.to_string(),
    }
}

pub(super) fn prim<T: ArrowPrimitiveType>(
    array: &dyn Array,
    row: usize,
) -> Result<T::Native, ValueError> {
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
pub(super) fn decimal_long_value(unscaled: i128, scale: i8) -> Result<i64, ValueError> {
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

pub(super) fn is_numeric_type(data_type: &DataType) -> bool {
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
