//! Java `.properties` syntax as read by `java.util.Properties.load` and written without escapes.
//!
//! Reading follows `Properties.load(InputStream)` exactly: the bytes are ISO-8859-1; `#` and `!` start comment
//! lines; a logical line continues onto the next natural line when it ends in an odd number of backslashes (the
//! continuation's leading blanks are dropped); the key ends at the first unescaped `=`, `:` or blank; escapes
//! `\t \r \n \f \uXXXX` are decoded and any other escaped character stands for itself (`\:` is `:`). Later
//! duplicates of a key replace the earlier value, as in Java's `Hashtable`, but keep the first position.
//!
//! Writing is deliberately *not* `Properties.store`: hudi-rs reads `hoodie.properties` raw (it splits each line at
//! the first `=`, trims, and never unescapes — hudi-format.md §2.1), so we write `key=value` lines with no escapes
//! at all. A value can then only be written if Java, Trino and hudi-rs all read it back identically; anything
//! else (backslash, line break or other control character, non-ASCII, leading or trailing blank) is refused with
//! [`JavaPropertiesError::Unwritable`] and the caller must not store that key.
//!
//! Invariant: for every map accepted by [`JavaProperties::to_bytes`], `JavaProperties::parse(to_bytes(m)) == m`.

use std::collections::HashMap;

use thiserror::Error;

/// Failures reading or writing a `.properties` file.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum JavaPropertiesError {
    /// A `\u` escape not followed by four hex digits (Java throws "Malformed \uxxxx encoding.").
    #[error("malformed \\uxxxx escape on line {line}")]
    MalformedUnicodeEscape {
        /// 1-based natural line where the logical line started.
        line: usize,
    },
    /// A `\uXXXX` escape naming half of a UTF-16 surrogate pair without its other half.
    #[error("unpaired UTF-16 surrogate \\u{code:04X} on line {line}")]
    UnpairedSurrogate {
        /// 1-based natural line where the logical line started.
        line: usize,
        /// The surrogate code unit.
        code: u16,
    },
    /// A key or value that cannot be written as a raw `key=value` line.
    #[error("property {key:?} cannot be written unescaped: {reason}")]
    Unwritable {
        /// The key concerned (for a bad comment: `"#"`).
        key: String,
        /// Why the text cannot be written.
        reason: &'static str,
    },
}

/// An ordered `.properties` map: keys in first-seen order, later duplicates replace the value in place.
///
/// Lookups go through a key → position index, so that parsing a file with many keys stays linear (a plain
/// scan per insert made a 100,000-key file take minutes).
#[derive(Debug, Clone, Default)]
pub struct JavaProperties {
    entries: Vec<(String, String)>,
    /// Key → position in `entries`.
    index: HashMap<String, usize>,
}

/// Equal when the entries are equal, in order (the index follows from them).
impl PartialEq for JavaProperties {
    fn eq(&self, other: &Self) -> bool {
        self.entries == other.entries
    }
}

impl Eq for JavaProperties {}

/// Java's blank characters inside a line (`Properties.load` treats exactly these as white space).
fn is_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\u{000C}')
}

impl JavaProperties {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses ISO-8859-1 bytes as `Properties.load(InputStream)` does.
    pub fn parse(bytes: &[u8]) -> Result<Self, JavaPropertiesError> {
        // ISO-8859-1 maps every byte to the code point of the same value.
        let chars: Vec<char> = bytes.iter().map(|&b| char::from(b)).collect();
        Self::parse_chars(&chars)
    }

    /// Parses already-decoded text as `Properties.load(Reader)` does.
    pub fn parse_str(text: &str) -> Result<Self, JavaPropertiesError> {
        let chars: Vec<char> = text.chars().collect();
        Self::parse_chars(&chars)
    }

    fn parse_chars(chars: &[char]) -> Result<Self, JavaPropertiesError> {
        let mut props = JavaProperties::new();
        for (line_no, logical) in logical_lines(chars) {
            let (key, value) = split_key_value(&logical);
            let key = unescape(key, line_no)?;
            let value = unescape(value, line_no)?;
            props.insert(key, value);
        }
        Ok(props)
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&str> {
        let position = *self.index.get(key)?;
        self.entries.get(position).map(|(_, v)| v.as_str())
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Sets `key`, keeping its position if present (appending otherwise); returns the previous value.
    pub fn insert(&mut self, key: impl Into<String>, value: impl Into<String>) -> Option<String> {
        let key = key.into();
        let value = value.into();
        if let Some((_, v)) = self
            .index
            .get(&key)
            .and_then(|&position| self.entries.get_mut(position))
        {
            return Some(std::mem::replace(v, value));
        }
        self.index.insert(key.clone(), self.entries.len());
        self.entries.push((key, value));
        None
    }

    /// Removes `key`; returns its value.
    pub fn remove(&mut self, key: &str) -> Option<String> {
        let pos = self.index.remove(key)?;
        if pos >= self.entries.len() {
            return None;
        }
        let (_, value) = self.entries.remove(pos);
        for position in self.index.values_mut() {
            if *position > pos {
                *position -= 1;
            }
        }
        Some(value)
    }

    /// Entries in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no keys.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Writes `#<comment>` lines, then one raw `key=value` line per entry, `\n`-terminated, ASCII.
    ///
    /// Fails (writing nothing) if any comment, key or value cannot be written unescaped.
    pub fn to_bytes(&self, comments: &[&str]) -> Result<Vec<u8>, JavaPropertiesError> {
        let mut out = String::new();
        for comment in comments {
            check_comment(comment)?;
            out.push('#');
            out.push_str(comment);
            out.push('\n');
        }
        for (key, value) in &self.entries {
            write_line(&mut out, key, value)?;
        }
        Ok(out.into_bytes())
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for JavaProperties {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut props = JavaProperties::new();
        for (k, v) in iter {
            props.insert(k, v);
        }
        props
    }
}

impl IntoIterator for JavaProperties {
    type Item = (String, String);
    type IntoIter = std::vec::IntoIter<(String, String)>;
    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

/// Parses `.properties` text (already decoded) as `Properties.load(Reader)`; see [`JavaProperties::parse_str`].
pub fn parse(text: &str) -> Result<JavaProperties, JavaPropertiesError> {
    JavaProperties::parse_str(text)
}

/// Appends one raw `key=value\n` line after checking both parts with [`check_writable_key`] and
/// [`check_writable_value`].
pub fn write_line(out: &mut String, key: &str, value: &str) -> Result<(), JavaPropertiesError> {
    check_writable_key(key)?;
    check_writable_value(key, value)?;
    out.push_str(key);
    out.push('=');
    out.push_str(value);
    out.push('\n');
    Ok(())
}

/// A key is writable raw when it is non-empty printable ASCII without blanks, `=`, `:` or `\`, and does not
/// start a comment. Then Java (first `=`/`:`/blank ends the key) and hudi-rs (first `=`) split the line alike.
pub fn check_writable_key(key: &str) -> Result<(), JavaPropertiesError> {
    let bad = |reason| {
        Err(JavaPropertiesError::Unwritable {
            key: key.to_string(),
            reason,
        })
    };
    if key.is_empty() {
        return bad("empty key");
    }
    if key.starts_with('#') || key.starts_with('!') {
        return bad("key starts with a comment character");
    }
    for c in key.chars() {
        if !c.is_ascii() {
            return bad("non-ASCII character in key");
        }
        if c.is_ascii_control() || c == ' ' {
            return bad("blank or control character in key");
        }
        if matches!(c, '=' | ':' | '\\') {
            return bad("'=', ':' or '\\' in key");
        }
    }
    Ok(())
}

/// A value is writable raw when Java's loader and hudi-rs's raw reader return it unchanged: printable ASCII only
/// (no backslash, no line break or other control character) and no leading or trailing blank (Java drops leading
/// blanks, hudi-rs trims both ends). `=`, `:`, `#` and `!` inside a value are fine.
pub fn check_writable_value(key: &str, value: &str) -> Result<(), JavaPropertiesError> {
    let bad = |reason| {
        Err(JavaPropertiesError::Unwritable {
            key: key.to_string(),
            reason,
        })
    };
    for c in value.chars() {
        if !c.is_ascii() {
            return bad("non-ASCII character in value");
        }
        if c == '\n' || c == '\r' {
            return bad("line break in value");
        }
        if c.is_ascii_control() {
            return bad("control character in value");
        }
        if c == '\\' {
            return bad("backslash in value (Java would unescape it, hudi-rs would not)");
        }
    }
    if value.starts_with(' ') {
        return bad("leading blank in value (Java drops it)");
    }
    if value.ends_with(' ') {
        return bad("trailing blank in value (hudi-rs trims it)");
    }
    Ok(())
}

fn check_comment(comment: &str) -> Result<(), JavaPropertiesError> {
    if comment
        .chars()
        .all(|c| c.is_ascii() && !c.is_ascii_control())
    {
        Ok(())
    } else {
        Err(JavaPropertiesError::Unwritable {
            key: "#".to_string(),
            reason: "comment must be printable ASCII on one line",
        })
    }
}

/// Splits the text into logical lines (comments and blank lines dropped, continuations joined, escapes still
/// raw), each with the 1-based natural line number where it starts.
fn logical_lines(chars: &[char]) -> Vec<(usize, Vec<char>)> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut line_no = 1;
    let n = chars.len();
    loop {
        // Start of a logical line: skip blanks and empty lines.
        while i < n && (is_blank(chars[i]) || chars[i] == '\n' || chars[i] == '\r') {
            if chars[i] == '\n' || (chars[i] == '\r' && chars.get(i + 1) != Some(&'\n')) {
                line_no += 1;
            }
            i += 1;
        }
        if i >= n {
            break;
        }
        let start_line = line_no;
        if chars[i] == '#' || chars[i] == '!' {
            // Comment lines never continue, whatever they end with.
            while i < n && chars[i] != '\n' && chars[i] != '\r' {
                i += 1;
            }
            continue;
        }
        let mut buf = Vec::new();
        let mut preceding_backslash = false;
        while i < n {
            let c = chars[i];
            i += 1;
            if c == '\n' || c == '\r' {
                if c == '\r' && chars.get(i) == Some(&'\n') {
                    i += 1;
                }
                line_no += 1;
                if preceding_backslash {
                    // Continuation: drop the backslash and the next line's leading blanks.
                    buf.pop();
                    preceding_backslash = false;
                    while i < n && is_blank(chars[i]) {
                        i += 1;
                    }
                    continue;
                }
                break;
            }
            buf.push(c);
            preceding_backslash = c == '\\' && !preceding_backslash;
        }
        if i >= n && preceding_backslash {
            // A backslash ending the last line is dropped.
            buf.pop();
        }
        out.push((start_line, buf));
    }
    out
}

/// Splits a logical line into raw key and raw value as `Properties.load` does.
fn split_key_value(line: &[char]) -> (&[char], &[char]) {
    let len = line.len();
    let mut key_len = 0;
    let mut value_start = len;
    let mut has_sep = false;
    let mut preceding_backslash = false;
    while key_len < len {
        let c = line[key_len];
        if (c == '=' || c == ':') && !preceding_backslash {
            value_start = key_len + 1;
            has_sep = true;
            break;
        }
        if is_blank(c) && !preceding_backslash {
            value_start = key_len + 1;
            break;
        }
        preceding_backslash = c == '\\' && !preceding_backslash;
        key_len += 1;
    }
    while value_start < len {
        let c = line[value_start];
        if !is_blank(c) {
            if !has_sep && (c == '=' || c == ':') {
                has_sep = true;
            } else {
                break;
            }
        }
        value_start += 1;
    }
    (&line[..key_len], &line[value_start.min(len)..])
}

/// Decodes backslash escapes (`loadConvert`).
fn unescape(raw: &[char], line: usize) -> Result<String, JavaPropertiesError> {
    let mut out = String::with_capacity(raw.len());
    let mut i = 0;
    let mut pending_high: Option<u16> = None;
    while i < raw.len() {
        let c = raw[i];
        i += 1;
        if c != '\\' {
            if let Some(code) = pending_high.take() {
                return Err(JavaPropertiesError::UnpairedSurrogate { line, code });
            }
            out.push(c);
            continue;
        }
        let Some(&e) = raw.get(i) else {
            // Unreachable through `logical_lines`, which never leaves a lone trailing backslash.
            break;
        };
        i += 1;
        if e == 'u' {
            let hex: String = raw
                .get(i..i + 4)
                .map(|s| s.iter().collect())
                .unwrap_or_default();
            let code = if hex.len() == 4 && hex.chars().all(|h| h.is_ascii_hexdigit()) {
                u16::from_str_radix(&hex, 16)
                    .map_err(|_| JavaPropertiesError::MalformedUnicodeEscape { line })?
            } else {
                return Err(JavaPropertiesError::MalformedUnicodeEscape { line });
            };
            i += 4;
            match (pending_high.take(), code) {
                (None, 0xD800..=0xDBFF) => pending_high = Some(code),
                (Some(high), 0xDC00..=0xDFFF) => {
                    let scalar =
                        0x10000 + ((u32::from(high) - 0xD800) << 10) + (u32::from(code) - 0xDC00);
                    match char::from_u32(scalar) {
                        Some(ch) => out.push(ch),
                        None => {
                            return Err(JavaPropertiesError::UnpairedSurrogate { line, code: high })
                        }
                    }
                }
                (Some(high), _) => {
                    return Err(JavaPropertiesError::UnpairedSurrogate { line, code: high })
                }
                (None, _) => match char::from_u32(u32::from(code)) {
                    Some(ch) => out.push(ch),
                    None => return Err(JavaPropertiesError::UnpairedSurrogate { line, code }),
                },
            }
            continue;
        }
        if let Some(code) = pending_high.take() {
            return Err(JavaPropertiesError::UnpairedSurrogate { line, code });
        }
        out.push(match e {
            't' => '\t',
            'r' => '\r',
            'n' => '\n',
            'f' => '\u{000C}',
            other => other,
        });
    }
    if let Some(code) = pending_high {
        return Err(JavaPropertiesError::UnpairedSurrogate { line, code });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Vec<(String, String)> {
        JavaProperties::parse(text.as_bytes())
            .expect("parse")
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn kv(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn many_keys_and_removals_keep_order_and_lookups() {
        // 200,000 keys, each set twice: linear with the index (a scan per insert would be 2·10^10 steps).
        let mut text = String::new();
        for i in 0..100_000 {
            text.push_str(&format!("k{i}=a\n"));
        }
        for i in 0..100_000 {
            text.push_str(&format!("k{i}=b{i}\n"));
        }
        let mut props = JavaProperties::parse(text.as_bytes()).expect("parse");
        assert_eq!(props.len(), 100_000);
        assert_eq!(props.iter().next(), Some(("k0", "b0")));
        assert_eq!(props.get("k99999"), Some("b99999"));
        assert_eq!(props.remove("k5"), Some("b5".to_string()));
        assert_eq!(props.remove("k5"), None);
        assert_eq!(props.get("k5"), None);
        assert_eq!(props.get("k6"), Some("b6"));
        assert_eq!(props.insert("k5", "again"), None);
        assert_eq!(props.iter().last(), Some(("k5", "again")));
        assert_eq!(props.insert("k6", "x"), Some("b6".to_string()));
        let keys: Vec<&str> = props.iter().map(|(k, _)| k).take(7).collect();
        assert_eq!(keys, ["k0", "k1", "k2", "k3", "k4", "k6", "k7"]);
    }

    #[test]
    fn separators_and_blanks() {
        assert_eq!(
            parse("a=1\nb:2\nc 3\nd\t=\t4\n  e  :  5  \nf\ng=\nh = = x\n"),
            kv(&[
                ("a", "1"),
                ("b", "2"),
                ("c", "3"),
                ("d", "4"),
                ("e", "5  "),
                ("f", ""),
                ("g", ""),
                ("h", "= x"),
            ])
        );
    }

    #[test]
    fn comments_and_blank_lines() {
        let text =
            "#Properties saved on 2024\n! bang\n   # indented comment\n\n\r\na=1\n#x=2 \\\nb=2";
        assert_eq!(parse(text), kv(&[("a", "1"), ("b", "2")]));
    }

    #[test]
    fn escapes_like_java() {
        assert_eq!(
            parse(r#"s={"type"\:"record"}"#),
            kv(&[("s", r#"{"type":"record"}"#)])
        );
        assert_eq!(
            parse(r"k\=ey\:x\ y=v\=\\\t\n\u0041\q"),
            kv(&[("k=ey:x y", "v=\\\t\nAq")])
        );
        assert_eq!(
            parse(r"d=yyyy-MM-dd'T'HH\:mm\:ss.SSSZ"),
            kv(&[("d", "yyyy-MM-dd'T'HH:mm:ss.SSSZ")])
        );
        // Surrogate pair escapes combine into one character.
        assert_eq!(parse(r"e=\uD83D\uDE00"), kv(&[("e", "\u{1F600}")]));
    }

    #[test]
    fn continuation_lines() {
        assert_eq!(
            parse("a=one \\\n    two\\\r\n\tthree\nb=x\\\\\nc=y\\\n\nd=z\\"),
            kv(&[("a", "one twothree"), ("b", "x\\"), ("c", "y"), ("d", "z")])
        );
        // A continuation line starting with '#' is not a comment.
        assert_eq!(parse("a=1\\\n#2\n"), kv(&[("a", "1#2")]));
        // CR alone ends a line.
        assert_eq!(parse("a=1\rb=2"), kv(&[("a", "1"), ("b", "2")]));
    }

    #[test]
    fn latin1_bytes() {
        let props = JavaProperties::parse(b"name=caf\xe9").expect("parse");
        assert_eq!(props.get("name"), Some("caf\u{e9}"));
    }

    #[test]
    fn duplicates_keep_first_position_last_value() {
        let props = JavaProperties::parse(b"a=1\nb=2\na=3\n").expect("parse");
        assert_eq!(
            props.iter().collect::<Vec<_>>(),
            vec![("a", "3"), ("b", "2")]
        );
    }

    #[test]
    fn malformed_unicode_is_an_error() {
        assert_eq!(
            JavaProperties::parse(b"a=1\nb=\\u12").expect_err("short"),
            JavaPropertiesError::MalformedUnicodeEscape { line: 2 }
        );
        assert!(JavaProperties::parse(b"b=\\uZZZZ").is_err());
        assert!(matches!(
            JavaProperties::parse(b"b=\\uD83Dx").expect_err("lone surrogate"),
            JavaPropertiesError::UnpairedSurrogate { code: 0xD83D, .. }
        ));
    }

    #[test]
    fn writes_raw_lines_that_read_back_identically() {
        let props: JavaProperties = [
            ("hoodie.table.name", "trips"),
            (
                "hoodie.table.create.schema",
                r##"{"type":"record","a":"b=c","d":"#!"}"##,
            ),
            ("empty", ""),
        ]
        .into_iter()
        .collect();
        let bytes = props
            .to_bytes(&["Properties saved on 2025-03-01T10:29:59.000Z"])
            .expect("write");
        let text = String::from_utf8(bytes.clone()).expect("ascii");
        assert_eq!(
            text,
            "#Properties saved on 2025-03-01T10:29:59.000Z\nhoodie.table.name=trips\n\
             hoodie.table.create.schema={\"type\":\"record\",\"a\":\"b=c\",\"d\":\"#!\"}\nempty=\n"
        );
        assert!(!text.contains('\\'));
        assert_eq!(JavaProperties::parse(&bytes).expect("reparse"), props);
    }

    #[test]
    fn hostile_values_are_refused() {
        for value in [
            "a\\b",
            "line\nbreak",
            "cr\rx",
            " leading",
            "trailing ",
            "tab\tinside",
            "caf\u{e9}",
            "nul\0",
            r#"{"doc":"say \"hi\""}"#,
        ] {
            let props: JavaProperties = [("k", value)].into_iter().collect();
            assert!(
                matches!(props.to_bytes(&[]), Err(JavaPropertiesError::Unwritable { ref key, .. }) if key == "k"),
                "{value:?} accepted"
            );
        }
        for key in ["", "a=b", "a:b", "a b", "#a", "!a", "a\\b", "k\u{e9}"] {
            assert!(check_writable_key(key).is_err(), "key {key:?} accepted");
        }
        assert!(JavaProperties::new().to_bytes(&["two\nlines"]).is_err());
    }

    #[test]
    fn insert_remove() {
        let mut props = JavaProperties::new();
        assert_eq!(props.insert("a", "1"), None);
        assert_eq!(props.insert("b", "2"), None);
        assert_eq!(props.insert("a", "3"), Some("1".to_string()));
        assert_eq!(props.remove("a"), Some("3".to_string()));
        assert_eq!(props.remove("a"), None);
        assert_eq!(props.len(), 1);
        assert!(props.contains_key("b"));
        assert!(!props.is_empty());
    }
}
