//! Value conversions from text: integers, floats, dates, times, timestamps and decimals, all exact.

use super::*;

/// An integer literal as `i64` (range-checked, no fraction or exponent).
pub(super) fn parse_integer(text: &str, expected: &str) -> Result<i64, Fail> {
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
pub(super) fn special_float(text: &str, expected: &str) -> Result<f64, Fail> {
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
pub(super) fn parse_date(text: &str, expected: &str) -> Result<i32, Fail> {
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
pub(super) fn parse_timestamp(
    text: &str,
    unit: TimeUnit,
    utc: bool,
    expected: &str,
) -> Result<i64, Fail> {
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
pub(super) fn parse_decimal(text: &str, precision: u8, scale: i8) -> Result<i128, String> {
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
