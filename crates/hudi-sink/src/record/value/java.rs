//! Java's text of bytes, dates, SQL timestamps and big decimals, as Hudi's key generators print them.

use super::*;

pub(super) fn write_display(out: &mut String, value: impl std::fmt::Display) {
    // Writing into a String cannot fail.
    let _ = write!(out, "{value}");
}

/// Appends the lower-case hex of `bytes` (Hudi's `StringUtils.objToString` of a `ByteBuffer`).
pub fn write_hex(bytes: &[u8], out: &mut String) {
    pub(super) const HEX: &[u8; 16] = b"0123456789abcdef";
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

pub(super) fn write_java_year(year: i32, out: &mut String) {
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
pub(super) fn write_big_decimal_unscaled(
    negative: bool,
    digits: &mut DigitBuf,
    scale: i8,
    out: &mut String,
) {
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

pub(super) fn push_zeros(out: &mut String, n: usize) {
    out.extend(std::iter::repeat_n('0', n));
}
