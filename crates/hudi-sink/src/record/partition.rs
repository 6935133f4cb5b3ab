//! Partition paths: one segment per partition field, joined by `/`, as Hudi's key generators build them.
//!
//! A segment is the field value's key text ([`super::value`]), or `field=value` with Hive-style partitioning;
//! a null or empty value becomes [`DEFAULT_PARTITION_PATH`]; with URL encoding the value is escaped with Hive's
//! escaping set (`PartitionPathEncodeUtils.escapePathName`). The same string is the directory below the table base
//! path, `_hoodie_partition_path`, and the key of the commit's `partitionToWriteStats`.
//!
//! Safety invariant (an acceptance test of the project): a record's value can never make the partition path leave
//! its own directory below the table. Without URL encoding, a value containing `/`, `\`, NUL or another control
//! character is refused, and so is a segment that is `.` or `..`; with URL encoding those characters are escaped
//! and `.`/`..` segments are still refused. Only the output of a timestamp-based key generator may contain `/`
//! (its date format puts it there by design); each of its sub-segments is checked the same way. Refusals are
//! per-record [`PartitionValueError`]s, which the writer turns into dead letters.

use std::fmt::Write as _;

use thiserror::Error;

/// The directory name Hudi uses for a null or empty partition value (`PartitionPathEncodeUtils.DEFAULT_PARTITION_PATH`).
pub const DEFAULT_PARTITION_PATH: &str = "__HIVE_DEFAULT_PARTITION__";

/// Separator between partition path segments (`KeyGenUtils.DEFAULT_PARTITION_PATH_SEPARATOR`).
pub const PARTITION_PATH_SEPARATOR: char = '/';

/// Why a partition value was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnsafeReason {
    /// The value contains `/`, which would add a directory level.
    Slash,
    /// The value contains `\`, a path separator on some systems and tools.
    Backslash,
    /// The value contains NUL or another control character (the code point is given).
    ControlCharacter(u32),
    /// A segment is `.` or `..`, which would name the partition's own or parent directory.
    DotSegment,
    /// A segment would be empty (`//`, or a leading or trailing `/`), which would change the directory depth or
    /// make the path absolute.
    EmptySegment,
}

impl std::fmt::Display for UnsafeReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Slash => f.write_str("contains '/'"),
            Self::Backslash => f.write_str("contains '\\'"),
            Self::ControlCharacter(c) => write!(f, "contains the control character U+{c:04X}"),
            Self::DotSegment => f.write_str("makes a path segment '.' or '..'"),
            Self::EmptySegment => f.write_str("makes an empty path segment (or an absolute path)"),
        }
    }
}

/// A partition value that cannot become a directory below the table (a per-record error).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PartitionValueError {
    /// The value would escape or distort the partition directory.
    #[error(
        "partition field `{field}`: value {value:?} {reason}; refused because the partition path must stay inside \
         the table (set hoodie.datasource.write.partitionpath.urlencode=true to escape such characters)"
    )]
    Unsafe {
        /// The partition field.
        field: String,
        /// The value as read from the record (before escaping).
        value: String,
        /// What is wrong with it.
        reason: UnsafeReason,
    },
}

/// How partition values are turned into segments (`hoodie.datasource.write.hive_style_partitioning`,
/// `hoodie.datasource.write.partitionpath.urlencode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PartitionPathOptions {
    /// Write `field=value` instead of `value`.
    pub hive_style: bool,
    /// Escape Hive's special characters as `%XX`.
    pub url_encode: bool,
}

/// Where the value of a segment comes from, which decides whether `/` is allowed in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentKind {
    /// A field value: it must stay one directory level.
    Value,
    /// The formatted output of a timestamp-based key generator (e.g. `2023/04/01/12`): `/` is allowed, each
    /// sub-segment must be safe.
    TimestampOutput,
}

/// A segment being written into a partition path: where it starts and where its value starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    start: usize,
    value_start: usize,
}

impl Segment {
    /// The byte offset in the output at which the value text must be appended.
    pub fn value_start(&self) -> usize {
        self.value_start
    }
}

/// Starts a segment for `field`: appends the `/` separator unless `out` is empty, then `field=` for Hive style.
/// The caller then appends the raw value text and calls [`finish_segment`].
pub fn begin_segment(out: &mut String, field: &str, options: PartitionPathOptions) -> Segment {
    if !out.is_empty() {
        out.push(PARTITION_PATH_SEPARATOR);
    }
    let start = out.len();
    if options.hive_style {
        out.push_str(field);
        out.push('=');
    }
    Segment {
        start,
        value_start: out.len(),
    }
}

/// Finishes the segment whose raw value text was appended at `segment.value_start()..` (nothing appended and
/// `is_null` true for a null value): substitutes [`DEFAULT_PARTITION_PATH`] for null or empty values, escapes when
/// URL encoding is on, and refuses values that would leave the partition directory.
///
/// On error `out` is left as it was before [`begin_segment`]'s value (the caller discards it anyway).
pub fn finish_segment(
    out: &mut String,
    field: &str,
    segment: Segment,
    is_null: bool,
    kind: SegmentKind,
    options: PartitionPathOptions,
) -> Result<(), PartitionValueError> {
    if is_null || out.len() <= segment.value_start {
        out.truncate(segment.value_start);
        out.push_str(DEFAULT_PARTITION_PATH);
        return Ok(());
    }
    if options.url_encode {
        escape_in_place(out, segment.value_start);
    }
    let checked = match kind {
        SegmentKind::Value => check_segment(&out[segment.start..], false),
        SegmentKind::TimestampOutput => check_segment(&out[segment.start..], true),
    };
    checked.map_err(|reason| PartitionValueError::Unsafe {
        field: field.to_string(),
        value: out[segment.value_start..].to_string(),
        reason,
    })
}

/// Appends a whole segment for `field` with the given value (a convenience over [`begin_segment`] and
/// [`finish_segment`] for values that are already strings).
pub fn append_segment(
    out: &mut String,
    field: &str,
    value: Option<&str>,
    kind: SegmentKind,
    options: PartitionPathOptions,
) -> Result<(), PartitionValueError> {
    let segment = begin_segment(out, field, options);
    if let Some(value) = value {
        out.push_str(value);
    }
    finish_segment(out, field, segment, value.is_none(), kind, options)
}

/// Checks one segment (or, when `slashes_allowed`, each `/`-separated sub-segment) for path safety.
fn check_segment(segment: &str, slashes_allowed: bool) -> Result<(), UnsafeReason> {
    for c in segment.chars() {
        match c {
            '/' if !slashes_allowed => return Err(UnsafeReason::Slash),
            '\\' => return Err(UnsafeReason::Backslash),
            c if c.is_control() => return Err(UnsafeReason::ControlCharacter(u32::from(c))),
            _ => {}
        }
    }
    for part in segment.split(PARTITION_PATH_SEPARATOR) {
        match part {
            "" => return Err(UnsafeReason::EmptySegment),
            "." | ".." => return Err(UnsafeReason::DotSegment),
            _ => {}
        }
    }
    Ok(())
}

/// Whether Hive's `escapePathName` escapes `c`: NUL through 0x1F, `"` `#` `%` `'` `*` `/` `:` `=` `?` `\` 0x7F `{`
/// `[` `]` `^`. Other characters, non-ASCII included, are kept.
pub fn needs_escaping(c: char) -> bool {
    matches!(
        c,
        '\u{0}'
            ..='\u{1f}'
                | '"'
                | '#'
                | '%'
                | '\''
                | '*'
                | '/'
                | ':'
                | '='
                | '?'
                | '\\'
                | '\u{7f}'
                | '{'
                | '['
                | ']'
                | '^'
    )
}

/// Appends `value` escaped as Hive's `escapePathName` does: each character of [`needs_escaping`] becomes `%XX`
/// (upper-case hex of its code).
pub fn escape_path_name(value: &str, out: &mut String) {
    for c in value.chars() {
        push_escaped(out, c);
    }
}

/// The inverse of [`escape_path_name`], as Hudi's `unescapePathName` (catalog sync with
/// `hoodie.meta.sync.decode_partition`): `%XX` with two hex digits becomes that byte, anything
/// else stays; bytes that do not form UTF-8 are replaced.
pub fn unescape_path_name(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn push_escaped(out: &mut String, c: char) {
    if needs_escaping(c) {
        // Writing into a String cannot fail.
        let _ = write!(out, "%{:02X}", u32::from(c));
    } else {
        out.push(c);
    }
}

/// Escapes `out[from..]` in place, without a temporary string: the escaped text is appended after the raw text,
/// then the raw text is removed.
fn escape_in_place(out: &mut String, from: usize) {
    if !out[from..].chars().any(needs_escaping) {
        return;
    }
    let end = out.len();
    let mut i = from;
    while i < end {
        let Some(c) = out[i..end].chars().next() else {
            break;
        };
        i += c.len_utf8();
        push_escaped(out, c);
    }
    out.replace_range(from..end, "");
}

/// Number of directory levels of a partition path (`partitionDepth` of `.hoodie_partition_metadata`): 0 for the
/// non-partitioned `""`, otherwise the number of `/`-separated segments.
pub fn partition_depth(partition_path: &str) -> usize {
    if partition_path.is_empty() {
        0
    } else {
        partition_path.split(PARTITION_PATH_SEPARATOR).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAIN: PartitionPathOptions = PartitionPathOptions {
        hive_style: false,
        url_encode: false,
    };
    const HIVE: PartitionPathOptions = PartitionPathOptions {
        hive_style: true,
        url_encode: false,
    };
    const ENCODED: PartitionPathOptions = PartitionPathOptions {
        hive_style: false,
        url_encode: true,
    };
    const HIVE_ENCODED: PartitionPathOptions = PartitionPathOptions {
        hive_style: true,
        url_encode: true,
    };

    fn path(
        values: &[(&str, Option<&str>)],
        options: PartitionPathOptions,
    ) -> Result<String, PartitionValueError> {
        let mut out = String::new();
        for (field, value) in values {
            append_segment(&mut out, field, *value, SegmentKind::Value, options)?;
        }
        Ok(out)
    }

    fn one(value: &str, options: PartitionPathOptions) -> Result<String, PartitionValueError> {
        path(&[("f", Some(value))], options)
    }

    fn reason(result: Result<String, PartitionValueError>) -> UnsafeReason {
        match result {
            Err(PartitionValueError::Unsafe { reason, .. }) => reason,
            Ok(path) => panic!("accepted {path:?}"),
        }
    }

    #[test]
    fn segments_join_with_slash_in_field_order() {
        let values = [("byteField", Some("10")), ("shortField", Some("300"))];
        assert_eq!(path(&values, PLAIN).as_deref(), Ok("10/300"));
        assert_eq!(
            path(&values, HIVE).as_deref(),
            Ok("byteField=10/shortField=300")
        );
        assert_eq!(path(&[], HIVE).as_deref(), Ok(""));
    }

    #[test]
    fn null_and_empty_values_use_the_default_partition() {
        assert_eq!(
            path(&[("f", None)], PLAIN).as_deref(),
            Ok("__HIVE_DEFAULT_PARTITION__")
        );
        assert_eq!(
            path(&[("f", Some(""))], PLAIN).as_deref(),
            Ok("__HIVE_DEFAULT_PARTITION__")
        );
        assert_eq!(
            path(&[("a", None), ("b", Some("x"))], HIVE_ENCODED).as_deref(),
            Ok("a=__HIVE_DEFAULT_PARTITION__/b=x")
        );
    }

    #[test]
    fn url_encoding_uses_hives_set_in_upper_case_hex() {
        assert_eq!(one("a/b", ENCODED).as_deref(), Ok("a%2Fb"));
        assert_eq!(
            one("\"#%'*/:=?\\\u{7f}{[]^", ENCODED).as_deref(),
            Ok("%22%23%25%27%2A%2F%3A%3D%3F%5C%7F%7B%5B%5D%5E")
        );
        assert_eq!(one("\u{1}\n\u{1f}", ENCODED).as_deref(), Ok("%01%0A%1F"));
        assert_eq!(one("\u{0}", ENCODED).as_deref(), Ok("%00"));
        // Characters outside the set stay, including non-ASCII and the ones URL encoders usually escape.
        assert_eq!(
            one("a b+c&d~é中😀}", ENCODED).as_deref(),
            Ok("a b+c&d~é中😀}")
        );
        assert_eq!(
            one("2023-04-01 12:00:00", HIVE_ENCODED).as_deref(),
            Ok("f=2023-04-01 12%3A00%3A00")
        );
        let mut escaped = String::new();
        escape_path_name("x=1", &mut escaped);
        assert_eq!(escaped, "x%3D1");
    }

    #[test]
    fn hostile_values_without_url_encoding_are_refused() {
        assert_eq!(reason(one("../x", PLAIN)), UnsafeReason::Slash);
        assert_eq!(reason(one("/abs", PLAIN)), UnsafeReason::Slash);
        assert_eq!(reason(one("a/b", PLAIN)), UnsafeReason::Slash);
        assert_eq!(reason(one("a/b", HIVE)), UnsafeReason::Slash);
        assert_eq!(reason(one("..", PLAIN)), UnsafeReason::DotSegment);
        assert_eq!(reason(one(".", PLAIN)), UnsafeReason::DotSegment);
        assert_eq!(reason(one("a\\..\\b", PLAIN)), UnsafeReason::Backslash);
        assert_eq!(
            reason(one("a\u{0}b", PLAIN)),
            UnsafeReason::ControlCharacter(0)
        );
        assert_eq!(
            reason(one("a\nb", HIVE)),
            UnsafeReason::ControlCharacter(10)
        );
        assert_eq!(
            reason(one("\u{7f}", PLAIN)),
            UnsafeReason::ControlCharacter(0x7f)
        );
        assert_eq!(
            reason(one("\u{85}", PLAIN)),
            UnsafeReason::ControlCharacter(0x85)
        );
    }

    #[test]
    fn dot_values_with_hive_style_stay_inside_their_segment() {
        // `f=..` is an ordinary directory name, not a parent reference.
        assert_eq!(one("..", HIVE).as_deref(), Ok("f=.."));
        assert_eq!(one(".", HIVE).as_deref(), Ok("f=."));
    }

    #[test]
    fn url_encoding_neutralises_separators_but_not_dot_segments() {
        assert_eq!(one("../x", ENCODED).as_deref(), Ok("..%2Fx"));
        assert_eq!(one("/abs", ENCODED).as_deref(), Ok("%2Fabs"));
        assert_eq!(one("a\\b", ENCODED).as_deref(), Ok("a%5Cb"));
        assert_eq!(one("a\nb", ENCODED).as_deref(), Ok("a%0Ab"));
        assert_eq!(reason(one("..", ENCODED)), UnsafeReason::DotSegment);
        assert_eq!(reason(one(".", ENCODED)), UnsafeReason::DotSegment);
        assert_eq!(one("..", HIVE_ENCODED).as_deref(), Ok("f=.."));
        // C1 control characters are not in Hive's set: still refused.
        assert_eq!(
            reason(one("\u{85}", ENCODED)),
            UnsafeReason::ControlCharacter(0x85)
        );
    }

    #[test]
    fn literal_percent_and_non_ascii_are_kept() {
        assert_eq!(one("%2F", PLAIN).as_deref(), Ok("%2F"));
        assert_eq!(one("%2F", ENCODED).as_deref(), Ok("%252F"));
        assert_eq!(
            one("Zürich 中文 😀", PLAIN).as_deref(),
            Ok("Zürich 中文 😀")
        );
        assert_eq!(
            one("...", PLAIN).as_deref(),
            Ok("..."),
            "three dots is an ordinary name"
        );
        assert_eq!(one("a..b", PLAIN).as_deref(), Ok("a..b"));
    }

    #[test]
    fn timestamp_output_may_contain_slashes_but_no_traversal() {
        let ts = |value: &str, options| {
            let mut out = String::new();
            append_segment(
                &mut out,
                "ts",
                Some(value),
                SegmentKind::TimestampOutput,
                options,
            )
            .map(|()| out)
        };
        assert_eq!(ts("2023/04/01/12", PLAIN).as_deref(), Ok("2023/04/01/12"));
        assert_eq!(ts("2023/04/01/12", HIVE).as_deref(), Ok("ts=2023/04/01/12"));
        assert_eq!(
            ts("2023/04/01/12", ENCODED).as_deref(),
            Ok("2023%2F04%2F01%2F12")
        );
        assert_eq!(reason(ts("2023/../x", PLAIN)), UnsafeReason::DotSegment);
        assert_eq!(reason(ts("/2023", PLAIN)), UnsafeReason::EmptySegment);
        assert_eq!(reason(ts("2023//01", PLAIN)), UnsafeReason::EmptySegment);
        assert_eq!(reason(ts("2023/", PLAIN)), UnsafeReason::EmptySegment);
        assert_eq!(reason(ts("a\\b", PLAIN)), UnsafeReason::Backslash);
    }

    #[test]
    fn errors_name_field_and_value() {
        let err = one("../x", PLAIN).expect_err("refused");
        let text = err.to_string();
        assert!(
            text.contains("`f`") && text.contains("\"../x\"") && text.contains("'/'"),
            "{text}"
        );
        let err = one("a\u{0}b", PLAIN).expect_err("refused");
        assert!(err.to_string().contains("U+0000"), "{err}");
    }

    #[test]
    fn depth_counts_segments() {
        assert_eq!(partition_depth(""), 0);
        assert_eq!(partition_depth("10"), 1);
        assert_eq!(partition_depth("byteField=10/shortField=300"), 2);
        assert_eq!(partition_depth("2023/04/01/12"), 4);
    }
}
