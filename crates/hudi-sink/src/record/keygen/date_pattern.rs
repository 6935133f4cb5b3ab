//! Joda-Time date patterns: compiled once, then parsed and formatted without allocating per record.

use super::*;

pub(super) const MONTHS: [&str; 12] = [
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
pub(super) const WEEKDAYS: [&str; 7] = [
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
pub(super) enum DateToken {
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
pub(super) struct DatePattern {
    pub(super) tokens: Vec<DateToken>,
}

/// A raw pattern element before year widths are decided.
pub(super) enum RawToken {
    Letters(char, usize),
    Text(String),
}

impl RawToken {
    /// Joda's `isNumericToken`.
    pub(super) fn is_numeric(&self) -> bool {
        match self {
            Self::Letters(c, len) => "cCxyYdhHmsSeDFwWkK".contains(*c) || (*c == 'M' && *len <= 2),
            Self::Text(_) => false,
        }
    }
}

impl DatePattern {
    /// Compiles `pattern`; `for_input` additionally refuses elements whose parsing cannot be reproduced exactly.
    pub(super) fn compile(
        key: &'static str,
        pattern: &str,
        for_input: bool,
    ) -> Result<Self, KeyGenError> {
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
    pub(super) fn format(
        &self,
        millis: i64,
        zone: FixedOffset,
        out: &mut String,
    ) -> Result<(), String> {
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
    pub(super) fn parse(&self, text: &str) -> Result<(usize, ParsedFields), usize> {
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

pub(super) fn push_padded(out: &mut String, value: u64, min_digits: usize) {
    use std::fmt::Write as _;
    // Writing into a String cannot fail.
    let _ = write!(out, "{value:0min_digits$}");
}

pub(super) fn push_signed_padded(out: &mut String, value: i64, min_digits: usize) {
    if value < 0 {
        out.push('-');
    }
    push_padded(out, value.unsigned_abs(), min_digits);
}

/// Joda's number parser: up to `max_digits` digits (at least one), optionally signed; `Err(position)` otherwise.
pub(super) fn parse_number(
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
pub(super) fn parse_name(text: &str, pos: &mut usize, names: &[&str]) -> Result<usize, usize> {
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
pub(super) fn parse_offset(bytes: &[u8], pos: &mut usize) -> Result<i32, usize> {
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
pub(super) struct ParsedFields {
    pub(super) year: Option<i64>,
    pub(super) month: Option<i64>,
    pub(super) day: Option<i64>,
    pub(super) hour_of_day: Option<i64>,
    pub(super) clock_hour_of_day: Option<i64>,
    pub(super) hour_of_halfday: Option<i64>,
    pub(super) clock_hour_of_halfday: Option<i64>,
    pub(super) pm: Option<bool>,
    pub(super) minute: Option<i64>,
    pub(super) second: Option<i64>,
    pub(super) millis: Option<i64>,
    pub(super) offset_seconds: Option<i32>,
}

impl ParsedFields {
    /// The instant (Joda's defaults: 1970-01-01T00:00:00.000 for fields not in the pattern) and the zone Joda
    /// attaches to it: the input zone when configured, else the parsed offset, else UTC.
    pub(super) fn resolve(
        &self,
        input_timezone: Option<FixedOffset>,
    ) -> Result<(i64, FixedOffset), String> {
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
