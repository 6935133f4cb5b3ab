//! The column statistics of an `add` action (`stats`, the Delta protocol's per-file statistics), from the
//! Parquet footer the writer wrote: delta-rs, Spark and the other Delta readers skip files by them.
//!
//! The rules are the protocol's and delta-kernel's stats schema:
//! - `numRecords` is the footer's row count; `nullCount`, `minValues` and `maxValues` nest as the schema's
//!   structs nest, and cover the first [`MAX_INDEXED_LEAVES`] leaf columns (`delta.dataSkippingNumIndexedCols`'
//!   default; arrays and maps count as one leaf each), partition columns excluded.
//! - min/max only for the types readers skip by: integers, floats, decimals, dates, timestamps and strings
//!   (not booleans, binaries, arrays or maps); a column whose values are all null has a `nullCount` and no
//!   min/max; arrays and maps get no `nullCount` (the footer's counts are of their elements).
//! - Values at full precision: timestamps to the microsecond (`2026-01-01T00:00:00.123456Z`), decimals as exact
//!   JSON numbers of their scale, floats in their shortest round-trip form (non-finite bounds are left out).
//! - Strings are cut to [`STRING_PREFIX`] characters: a cut min is its prefix (a lower bound), a cut max is its
//!   prefix and a tie-breaker (DEL, or U+10FFFF after a non-ASCII character), so it stays an upper bound.
//!   Parquet's own truncated bounds (`min_is_exact`/`max_is_exact` false) are bounds too.
//! - A column the file does not hold (added by a later schema) is all null: `nullCount` = `numRecords`.
//! - When a row group has no statistics for a column, that column's min/max/nullCount are left out (unknown).

use std::cmp::Ordering;
use std::collections::HashMap;

use deltalake_core::kernel::{DataType, PrimitiveType, StructType};
use parquet::basic::{LogicalType, TimeUnit};
use parquet::file::metadata::ParquetMetaData;
use parquet::file::statistics::Statistics;

/// How many leaf columns get statistics (the default of `delta.dataSkippingNumIndexedCols`).
pub(super) const MAX_INDEXED_LEAVES: usize = 32;
/// How many characters of a string bound are kept (delta-kernel's and Spark's prefix length).
pub(super) const STRING_PREFIX: usize = 32;
/// How far a string max may be cut before the bound is dropped (no tie-breaker fits before it).
const STRING_PREFIX_LIMIT: usize = 64;

/// The `stats` JSON of a file with footer `meta`, for the Delta schema `schema` whose top-level
/// `partition_columns` are not in the file's statistics.
pub(super) fn file_stats(
    meta: &ParquetMetaData,
    schema: &StructType,
    partition_columns: &[String],
) -> String {
    let descr = meta.file_metadata().schema_descr();
    let columns: HashMap<Vec<String>, usize> = descr
        .columns()
        .iter()
        .enumerate()
        .filter(|(_, c)| c.max_rep_level() == 0)
        .map(|(i, c)| (c.path().parts().to_vec(), i))
        .collect();
    let mut walk = Walk {
        meta,
        columns,
        budget: MAX_INDEXED_LEAVES,
        num_rows: meta.file_metadata().num_rows(),
    };
    let (min, max, nulls) = walk.fields(schema, &mut Vec::new(), partition_columns);
    let mut out = String::from("{\"numRecords\":");
    out.push_str(&walk.num_rows.to_string());
    for (key, node) in [("minValues", min), ("maxValues", max), ("nullCount", nulls)] {
        out.push_str(",\"");
        out.push_str(key);
        out.push_str("\":");
        render(&mut out, &node);
    }
    out.push('}');
    out
}

/// A statistics object: JSON text at the leaves, nested objects for structs.
enum Node {
    Leaf(String),
    Object(Vec<(String, Node)>),
}

fn render(out: &mut String, node: &Node) {
    match node {
        Node::Leaf(text) => out.push_str(text),
        Node::Object(entries) => {
            out.push('{');
            for (i, (key, child)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::Value::String(key.clone()).to_string());
                out.push(':');
                render(out, child);
            }
            out.push('}');
        }
    }
}

struct Walk<'a> {
    meta: &'a ParquetMetaData,
    /// Leaf columns outside any list or map, by path.
    columns: HashMap<Vec<String>, usize>,
    /// Leaf columns left to index.
    budget: usize,
    num_rows: i64,
}

impl Walk<'_> {
    /// The min, max and null-count objects of the fields of `st` at `path`.
    fn fields(
        &mut self,
        st: &StructType,
        path: &mut Vec<String>,
        skip: &[String],
    ) -> (Node, Node, Node) {
        let (mut mins, mut maxs, mut nulls) = (Vec::new(), Vec::new(), Vec::new());
        for field in st.fields() {
            if self.budget == 0 {
                break;
            }
            let name = field.name().to_string();
            if path.is_empty() && skip.contains(&name) {
                continue;
            }
            path.push(name.clone());
            match field.data_type() {
                DataType::Struct(inner) => {
                    let (min, max, null) = self.fields(inner, path, &[]);
                    for (list, node) in [(&mut mins, min), (&mut maxs, max), (&mut nulls, null)] {
                        if matches!(&node, Node::Object(e) if !e.is_empty()) {
                            list.push((name.clone(), node));
                        }
                    }
                }
                DataType::Primitive(primitive) => {
                    self.budget -= 1;
                    let leaf = self.leaf(path, primitive);
                    if let Some(n) = leaf.nulls {
                        nulls.push((name.clone(), Node::Leaf(n.to_string())));
                    }
                    if let Some(min) = leaf.min.and_then(|b| render_min(&b, primitive)) {
                        mins.push((name.clone(), Node::Leaf(min)));
                    }
                    if let Some(max) = leaf.max.and_then(|b| render_max(&b, primitive)) {
                        maxs.push((name.clone(), Node::Leaf(max)));
                    }
                }
                // Arrays, maps and variants count as one leaf and have no statistics the footer gives.
                _ => self.budget -= 1,
            }
            path.pop();
        }
        (Node::Object(mins), Node::Object(maxs), Node::Object(nulls))
    }

    /// The bounds and null count of the leaf column at `path` over every row group.
    fn leaf(&self, path: &[String], primitive: &PrimitiveType) -> LeafStats {
        let Some(&index) = self.columns.get(path) else {
            // Not in the file: every row reads as null.
            return LeafStats {
                nulls: Some(self.num_rows.max(0) as u64),
                min: None,
                max: None,
            };
        };
        let ranged = is_ranged(primitive);
        let mut out = LeafStats {
            nulls: Some(0),
            min: None,
            max: None,
        };
        let (mut min_known, mut max_known) = (ranged, ranged);
        for group in self.meta.row_groups() {
            let Some(stats) = group.column(index).statistics() else {
                return LeafStats {
                    nulls: None,
                    min: None,
                    max: None,
                };
            };
            let group_nulls = stats.null_count_opt();
            out.nulls = out.nulls.zip(group_nulls).map(|(a, b)| a + b);
            if group_nulls == Some(group.num_rows().max(0) as u64) {
                continue; // all null: no bounds to take
            }
            let logical = group.column(index).column_descr().logical_type_ref();
            if min_known {
                match bound(stats, logical, primitive, Side::Min) {
                    Some(b) => out.min = Some(pick(out.min.take(), b, Ordering::Less)),
                    None => min_known = false,
                }
            }
            if max_known {
                match bound(stats, logical, primitive, Side::Max) {
                    Some(b) => out.max = Some(pick(out.max.take(), b, Ordering::Greater)),
                    None => max_known = false,
                }
            }
        }
        if !min_known {
            out.min = None;
        }
        if !max_known {
            out.max = None;
        }
        out
    }
}

struct LeafStats {
    nulls: Option<u64>,
    min: Option<Bound>,
    max: Option<Bound>,
}

/// Whether readers skip by the min/max of a column of this type (delta-kernel's eligible types).
fn is_ranged(primitive: &PrimitiveType) -> bool {
    matches!(
        primitive,
        PrimitiveType::Byte
            | PrimitiveType::Short
            | PrimitiveType::Integer
            | PrimitiveType::Long
            | PrimitiveType::Float
            | PrimitiveType::Double
            | PrimitiveType::Date
            | PrimitiveType::Timestamp
            | PrimitiveType::TimestampNtz
            | PrimitiveType::String
            | PrimitiveType::Decimal(_)
    )
}

/// A bound in a form that orders as its type does: integers (also dates in days, timestamps in
/// microseconds and decimals unscaled), floats, and strings as UTF-8 bytes.
#[derive(Debug, Clone, PartialEq)]
enum Bound {
    Int(i128),
    Float(f64),
    Bytes(Vec<u8>),
}

#[derive(Clone, Copy, PartialEq)]
enum Side {
    Min,
    Max,
}

/// The smaller (`keep` = Less) or larger of two bounds of the same kind.
fn pick(current: Option<Bound>, new: Bound, keep: Ordering) -> Bound {
    let Some(current) = current else {
        return new;
    };
    let order = match (&new, &current) {
        (Bound::Int(a), Bound::Int(b)) => a.cmp(b),
        (Bound::Float(a), Bound::Float(b)) => a.total_cmp(b),
        (Bound::Bytes(a), Bound::Bytes(b)) => a.cmp(b),
        _ => Ordering::Equal,
    };
    if order == keep {
        new
    } else {
        current
    }
}

/// One row group's bound of a column as a [`Bound`] of the Delta type `primitive`, or `None` when the footer
/// has none or it does not fit the type.
fn bound(
    stats: &Statistics,
    logical: Option<&LogicalType>,
    primitive: &PrimitiveType,
    side: Side,
) -> Option<Bound> {
    let min = side == Side::Min;
    let decimal_scale = |scale: u8| match logical {
        Some(LogicalType::Decimal(d)) => d.scale == i32::from(scale),
        _ => false,
    };
    match (stats, primitive) {
        (Statistics::Int32(s), PrimitiveType::Decimal(d)) if decimal_scale(d.scale()) => {
            let v = if min { s.min_opt() } else { s.max_opt() }?;
            Some(Bound::Int(i128::from(*v)))
        }
        (Statistics::Int64(s), PrimitiveType::Decimal(d)) if decimal_scale(d.scale()) => {
            let v = if min { s.min_opt() } else { s.max_opt() }?;
            Some(Bound::Int(i128::from(*v)))
        }
        (
            Statistics::FixedLenByteArray(_) | Statistics::ByteArray(_),
            PrimitiveType::Decimal(d),
        ) if decimal_scale(d.scale()) => {
            let bytes = if min {
                stats.min_bytes_opt()
            } else {
                stats.max_bytes_opt()
            }?;
            signed_be(bytes).map(Bound::Int)
        }
        (
            Statistics::Int32(s),
            PrimitiveType::Byte
            | PrimitiveType::Short
            | PrimitiveType::Integer
            | PrimitiveType::Long,
        )
        | (Statistics::Int32(s), PrimitiveType::Date) => {
            let v = if min { s.min_opt() } else { s.max_opt() }?;
            Some(Bound::Int(i128::from(*v)))
        }
        (Statistics::Int64(s), PrimitiveType::Long) => {
            let v = if min { s.min_opt() } else { s.max_opt() }?;
            Some(Bound::Int(i128::from(*v)))
        }
        (Statistics::Int64(s), PrimitiveType::Timestamp | PrimitiveType::TimestampNtz) => {
            let v = i128::from(*(if min { s.min_opt() } else { s.max_opt() })?);
            let Some(LogicalType::Timestamp(t)) = logical else {
                return None;
            };
            let utc = matches!(primitive, PrimitiveType::Timestamp);
            if t.is_adjusted_to_u_t_c != utc {
                return None;
            }
            let micros = match t.unit {
                TimeUnit::MILLIS => v * 1000,
                TimeUnit::MICROS => v,
                // Rounded outwards, so that the bound stays a bound.
                TimeUnit::NANOS if min => v.div_euclid(1000),
                TimeUnit::NANOS => (v + 999).div_euclid(1000),
            };
            Some(Bound::Int(micros))
        }
        (Statistics::Float(s), PrimitiveType::Float) => {
            let v = if min { s.min_opt() } else { s.max_opt() }?;
            Some(Bound::Float(f64::from(*v)))
        }
        (Statistics::Double(s), PrimitiveType::Double) => {
            let v = if min { s.min_opt() } else { s.max_opt() }?;
            Some(Bound::Float(*v))
        }
        (Statistics::ByteArray(s), PrimitiveType::String)
            if matches!(logical, Some(LogicalType::String)) =>
        {
            let v = if min { s.min_opt() } else { s.max_opt() }?;
            Some(Bound::Bytes(v.data().to_vec()))
        }
        _ => None,
    }
}

/// A two's-complement big-endian integer of at most 16 bytes.
fn signed_be(bytes: &[u8]) -> Option<i128> {
    let first = *bytes.first()?;
    if bytes.len() > 16 {
        return None;
    }
    let fill = if first & 0x80 != 0 { 0xff } else { 0 };
    let mut buf = [fill; 16];
    buf[16 - bytes.len()..].copy_from_slice(bytes);
    Some(i128::from_be_bytes(buf))
}

/// The JSON text of a lower bound.
fn render_min(bound: &Bound, primitive: &PrimitiveType) -> Option<String> {
    match bound {
        Bound::Bytes(bytes) => {
            let text = std::str::from_utf8(bytes).ok()?;
            let prefix: String = text.chars().take(STRING_PREFIX).collect();
            Some(json_string(prefix))
        }
        _ => render_value(bound, primitive),
    }
}

/// The JSON text of an upper bound.
fn render_max(bound: &Bound, primitive: &PrimitiveType) -> Option<String> {
    match bound {
        Bound::Bytes(bytes) => {
            let text = std::str::from_utf8(bytes).ok()?;
            truncate_max(text).map(json_string)
        }
        _ => render_value(bound, primitive),
    }
}

/// An upper bound of at most [`STRING_PREFIX`] characters and a tie-breaker for the string upper bound `text`:
/// the first `n` characters and DEL when the next one is below DEL, or U+10FFFF when it is below U+10FFFF
/// (UTF-8 orders as code points); `None` when no cut up to [`STRING_PREFIX_LIMIT`] characters works.
fn truncate_max(text: &str) -> Option<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= STRING_PREFIX {
        return Some(text.to_string());
    }
    for n in STRING_PREFIX..chars.len().min(STRING_PREFIX_LIMIT) {
        let next = chars[n];
        let breaker = if next < '\u{7f}' {
            '\u{7f}'
        } else if next < char::MAX {
            char::MAX
        } else {
            continue;
        };
        let mut out: String = chars[..n].iter().collect();
        out.push(breaker);
        return Some(out);
    }
    (chars.len() <= STRING_PREFIX_LIMIT).then(|| text.to_string())
}

fn json_string(text: String) -> String {
    serde_json::Value::String(text).to_string()
}

/// The JSON text of a non-string bound of type `primitive` at full precision.
fn render_value(bound: &Bound, primitive: &PrimitiveType) -> Option<String> {
    match (bound, primitive) {
        (Bound::Int(v), PrimitiveType::Decimal(d)) => Some(decimal_text(*v, d.scale())),
        (Bound::Int(v), PrimitiveType::Date) => {
            let days = i64::try_from(*v).ok()?;
            let date = chrono::DateTime::from_timestamp(days.checked_mul(86_400)?, 0)?;
            Some(json_string(date.format("%Y-%m-%d").to_string()))
        }
        (Bound::Int(v), PrimitiveType::Timestamp | PrimitiveType::TimestampNtz) => {
            let micros = i64::try_from(*v).ok()?;
            let ts = chrono::DateTime::from_timestamp_micros(micros)?;
            let format = if matches!(primitive, PrimitiveType::Timestamp) {
                "%Y-%m-%dT%H:%M:%S%.6fZ"
            } else {
                "%Y-%m-%dT%H:%M:%S%.6f"
            };
            Some(json_string(ts.format(format).to_string()))
        }
        (Bound::Int(v), _) => Some(v.to_string()),
        (Bound::Float(v), PrimitiveType::Float) => {
            let f = *v as f32;
            f.is_finite().then(|| f.to_string())
        }
        (Bound::Float(v), _) => v.is_finite().then(|| v.to_string()),
        (Bound::Bytes(_), _) => None,
    }
}

/// The exact decimal text of `unscaled` × 10^-`scale`.
fn decimal_text(unscaled: i128, scale: u8) -> String {
    let digits = unscaled.unsigned_abs().to_string();
    let sign = if unscaled < 0 { "-" } else { "" };
    let scale = usize::from(scale);
    if scale == 0 {
        return format!("{sign}{digits}");
    }
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (int, frac) = padded.split_at(padded.len() - scale);
    format!("{sign}{int}.{frac}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_are_exact() {
        assert_eq!(decimal_text(-12345, 5), "-0.12345");
        assert_eq!(decimal_text(12345, 2), "123.45");
        assert_eq!(decimal_text(7, 3), "0.007");
        assert_eq!(decimal_text(-7, 0), "-7");
        assert_eq!(
            decimal_text(i128::from(i64::MAX) * 1000 + 1, 3),
            "9223372036854775807.001"
        );
    }

    #[test]
    fn two_complement_big_endian() {
        assert_eq!(signed_be(&[0xff]), Some(-1));
        assert_eq!(signed_be(&[0x00, 0x80]), Some(128));
        assert_eq!(signed_be(&[0x80, 0x00]), Some(-32768));
        assert_eq!(signed_be(&[]), None);
    }

    #[test]
    fn a_cut_string_max_stays_an_upper_bound() {
        let long = "a".repeat(40);
        let max = truncate_max(&long).expect("cut");
        assert_eq!(max.chars().count(), STRING_PREFIX + 1);
        assert!(max.as_str() > long.as_str());
        let accented = format!("{}é{}", "b".repeat(32), "z".repeat(5));
        let max = truncate_max(&accented).expect("cut");
        assert!(max.as_str() > accented.as_str());
        assert!(max.ends_with(char::MAX));
        let del = format!("{}\u{7f}\u{7f}", "c".repeat(32));
        let max = truncate_max(&del).expect("cut");
        assert!(max.as_str() > del.as_str());
        let top = format!("{}{}", "d".repeat(32), char::MAX.to_string().repeat(40));
        assert_eq!(truncate_max(&top), None);
        assert_eq!(truncate_max("short"), Some("short".into()));
    }

    #[test]
    fn timestamps_keep_microseconds() {
        let text = render_value(
            &Bound::Int(1_767_225_600_123_456),
            &PrimitiveType::Timestamp,
        );
        assert_eq!(text.as_deref(), Some("\"2026-01-01T00:00:00.123456Z\""));
        let date = render_value(&Bound::Int(-1), &PrimitiveType::Date);
        assert_eq!(date.as_deref(), Some("\"1969-12-31\""));
    }
}
