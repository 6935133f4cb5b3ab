//! The JSON reader: a cursor over UTF-8 text that the decoder drives value by value, straight into the columns.

use super::*;

/// Index of the first `"`, `\` or control character (below 0x20) in `bytes`, eight bytes per step.
///
/// Per word, `(v - 0x01…) & !v & 0x80…` flags the zero bytes of `v` (and `(v - n·0x01…) & !v & 0x80…` the
/// bytes below `n`); a borrow can only flag bytes *after* a true match, so the lowest flag is exact.
pub(super) fn string_stop(bytes: &[u8]) -> Option<usize> {
    pub(super) const ONES: u64 = 0x0101_0101_0101_0101;
    pub(super) const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut chunks = bytes.chunks_exact(8);
    let mut offset = 0;
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let v = u64::from_le_bytes(word);
        let quote = v ^ (ONES * u64::from(b'"'));
        let backslash = v ^ (ONES * u64::from(b'\\'));
        let flags = (quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash)
            | (v.wrapping_sub(ONES * 0x20) & !v);
        let flags = flags & HIGHS;
        if flags != 0 {
            return Some(offset + (flags.trailing_zeros() / 8) as usize);
        }
        offset += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .map(|n| offset + n)
}

pub(super) struct Parser<'a> {
    pub(super) text: &'a str,
    pub(super) bytes: &'a [u8],
    pub(super) pos: usize,
    pub(super) depth: usize,
    pub(super) max_depth: usize,
}

impl<'a> Parser<'a> {
    pub(super) fn new(text: &'a str, max_depth: usize) -> Self {
        Parser {
            text,
            bytes: text.as_bytes(),
            pos: 0,
            depth: 0,
            max_depth,
        }
    }

    pub(super) fn syntax(&self, message: &'static str) -> Fail {
        Fail::new(RecordDecodeReason::Syntax {
            byte_offset: self.pos,
            message,
        })
    }

    pub(super) fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    /// The first byte of the next token.
    pub(super) fn peek(&mut self) -> Result<u8, Fail> {
        self.skip_whitespace();
        match self.bytes.get(self.pos) {
            Some(&b) => Ok(b),
            None => Err(self.syntax("unexpected end of input")),
        }
    }

    /// The JSON type of the next value (syntax error if no value starts here).
    pub(super) fn peek_type(&mut self) -> Result<JsonType, Fail> {
        let b = self.peek()?;
        JsonType::from_first_byte(b).ok_or_else(|| self.syntax("expected a JSON value"))
    }

    pub(super) fn literal(&mut self, word: &'static [u8]) -> Result<(), Fail> {
        match self.bytes.get(self.pos..self.pos + word.len()) {
            Some(found) if found == word => {
                self.pos += word.len();
                Ok(())
            }
            _ => Err(self.syntax("invalid literal")),
        }
    }

    pub(super) fn boolean(&mut self) -> Result<bool, Fail> {
        if self.peek()? == b't' {
            self.literal(b"true").map(|()| true)
        } else {
            self.literal(b"false").map(|()| false)
        }
    }

    pub(super) fn digits(&mut self) -> usize {
        let start = self.pos;
        while let Some(b'0'..=b'9') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
        self.pos - start
    }

    /// A number's text, checked against the JSON grammar.
    pub(super) fn number(&mut self) -> Result<&'a str, Fail> {
        self.skip_whitespace();
        let start = self.pos;
        if self.bytes.get(self.pos) == Some(&b'-') {
            self.pos += 1;
        }
        match self.bytes.get(self.pos) {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.syntax("invalid number")),
        }
        if self.bytes.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return Err(self.syntax("invalid number: no digit after the decimal point"));
            }
        }
        if let Some(b'e' | b'E') = self.bytes.get(self.pos) {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.bytes.get(self.pos) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(self.syntax("invalid number: no digit in the exponent"));
            }
        }
        Ok(self.text.get(start..self.pos).unwrap_or_default())
    }

    /// A string (the cursor is on its opening quote); borrowed unless it has escapes.
    pub(super) fn string(&mut self) -> Result<Cow<'a, str>, Fail> {
        self.skip_whitespace();
        if self.bytes.get(self.pos) != Some(&b'"') {
            return Err(self.syntax("expected a string"));
        }
        self.pos += 1;
        let start = self.pos;
        // One scan for the end of the common, escape-free string.
        let rest = self.bytes.get(start..).unwrap_or_default();
        let stop = string_stop(rest);
        self.pos = start + stop.unwrap_or(rest.len());
        match stop.and_then(|n| rest.get(n)) {
            Some(b'"') => {
                let s = self.text.get(start..self.pos).unwrap_or_default();
                self.pos += 1;
                return Ok(Cow::Borrowed(s));
            }
            Some(b'\\') => {}
            Some(_) => return Err(self.syntax("control character in a string")),
            None => return Err(self.syntax("unterminated string")),
        }
        let mut out = String::from(self.text.get(start..self.pos).unwrap_or_default());
        loop {
            let run = self.pos;
            while let Some(&b) = self.bytes.get(self.pos) {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            out.push_str(self.text.get(run..self.pos).unwrap_or_default());
            match self.bytes.get(self.pos) {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(Cow::Owned(out));
                }
                Some(b'\\') => {
                    self.pos += 1;
                    self.escape(&mut out)?;
                }
                Some(_) => return Err(self.syntax("control character in a string")),
                None => return Err(self.syntax("unterminated string")),
            }
        }
    }

    /// One escape sequence (after the backslash).
    pub(super) fn escape(&mut self, out: &mut String) -> Result<(), Fail> {
        let Some(&b) = self.bytes.get(self.pos) else {
            return Err(self.syntax("unterminated string"));
        };
        self.pos += 1;
        let c = match b {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let first = self.hex4()?;
                let code = match first {
                    0xD800..=0xDBFF => {
                        if self.bytes.get(self.pos..self.pos + 2) != Some(b"\\u") {
                            return Err(self.syntax("unpaired UTF-16 surrogate in \\u escape"));
                        }
                        self.pos += 2;
                        let second = self.hex4()?;
                        if !(0xDC00..=0xDFFF).contains(&second) {
                            return Err(self.syntax("unpaired UTF-16 surrogate in \\u escape"));
                        }
                        0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
                    }
                    0xDC00..=0xDFFF => {
                        return Err(self.syntax("unpaired UTF-16 surrogate in \\u escape"))
                    }
                    other => other,
                };
                char::from_u32(code).ok_or_else(|| self.syntax("invalid \\u escape"))?
            }
            _ => return Err(self.syntax("invalid escape")),
        };
        out.push(c);
        Ok(())
    }

    pub(super) fn hex4(&mut self) -> Result<u32, Fail> {
        let mut code = 0u32;
        for _ in 0..4 {
            let digit = self
                .bytes
                .get(self.pos)
                .and_then(|&b| (b as char).to_digit(16))
                .ok_or_else(|| self.syntax("invalid \\u escape"))?;
            code = code * 16 + digit;
            self.pos += 1;
        }
        Ok(code)
    }

    pub(super) fn enter(&mut self) -> Result<(), Fail> {
        self.pos += 1;
        self.depth += 1;
        if self.depth > self.max_depth {
            return Err(Fail::new(RecordDecodeReason::TooDeep {
                max_depth: self.max_depth,
            }));
        }
        Ok(())
    }

    /// Consumes `{` (the caller has peeked it).
    pub(super) fn begin_object(&mut self) -> Result<(), Fail> {
        self.enter()
    }

    /// The next key of the object, or `None` after consuming `}`. `first` is true before the first member.
    pub(super) fn object_key(&mut self, first: &mut bool) -> Result<Option<Cow<'a, str>>, Fail> {
        let mut c = self.peek()?;
        if c == b'}' {
            self.pos += 1;
            self.depth -= 1;
            return Ok(None);
        }
        if !*first {
            if c != b',' {
                return Err(self.syntax("expected ',' or '}' in an object"));
            }
            self.pos += 1;
            c = self.peek()?;
        }
        *first = false;
        if c != b'"' {
            return Err(self.syntax("expected a string key in an object"));
        }
        let key = self.string()?;
        if self.peek()? != b':' {
            return Err(self.syntax("expected ':' after an object key"));
        }
        self.pos += 1;
        Ok(Some(key))
    }

    /// Consumes `[` (the caller has peeked it).
    pub(super) fn begin_array(&mut self) -> Result<(), Fail> {
        self.enter()
    }

    /// Whether another element follows (consumes `,`), or `false` after consuming `]`.
    pub(super) fn array_next(&mut self, first: &mut bool) -> Result<bool, Fail> {
        let c = self.peek()?;
        if c == b']' {
            self.pos += 1;
            self.depth -= 1;
            return Ok(false);
        }
        if !*first {
            if c != b',' {
                return Err(self.syntax("expected ',' or ']' in an array"));
            }
            self.pos += 1;
        }
        *first = false;
        Ok(true)
    }

    /// Skips one value, checking its syntax and depth, and (when `check_duplicates`) that no object in it
    /// repeats a key.
    pub(super) fn skip_value(&mut self, check_duplicates: bool) -> Result<(), Fail> {
        match self.peek_type()? {
            JsonType::Object => {
                self.begin_object()?;
                let mut seen: HashSet<Cow<'a, str>> = HashSet::new();
                let mut first = true;
                while let Some(key) = self.object_key(&mut first)? {
                    if check_duplicates && !seen.insert(key.clone()) {
                        return Err(Fail::new(RecordDecodeReason::DuplicateKey {
                            key: key.into_owned(),
                        }));
                    }
                    self.skip_value(check_duplicates)
                        .map_err(|f| f.at(Segment::Key(key.into_owned())))?;
                }
                Ok(())
            }
            JsonType::Array => {
                self.begin_array()?;
                let mut first = true;
                let mut index = 0;
                while self.array_next(&mut first)? {
                    self.skip_value(check_duplicates)
                        .map_err(|f| f.at(Segment::Index(index)))?;
                    index += 1;
                }
                Ok(())
            }
            JsonType::String => self.string().map(drop),
            JsonType::Number => self.number().map(drop),
            JsonType::Boolean => self.boolean().map(drop),
            JsonType::Null => self.literal(b"null"),
        }
    }

    /// Only whitespace may follow the value.
    pub(super) fn end(&mut self) -> Result<(), Fail> {
        self.skip_whitespace();
        if self.pos < self.bytes.len() {
            return Err(self.syntax("unexpected characters after the JSON value"));
        }
        Ok(())
    }
}

impl Column {
    /// Decodes the next JSON value into one slot. On error the column may hold part of it: the caller truncates.
    pub(super) fn decode(&mut self, p: &mut Parser<'_>, stats: &mut Stats) -> Result<(), Fail> {
        let first = p.peek()?;
        let Some(found) = JsonType::from_first_byte(first) else {
            return Err(p.syntax("expected a JSON value"));
        };
        if found == JsonType::Null {
            p.literal(b"null")?;
            if self.nulls.is_none() {
                return Err(Fail::new(RecordDecodeReason::NullNotAllowed {
                    expected: self.expected.clone(),
                }));
            }
            return self.append_empty();
        }
        let expected = self.expected.as_str();
        let wrong = || {
            Fail::new(RecordDecodeReason::WrongType {
                expected: expected.to_string(),
                found,
            })
        };
        match &mut self.data {
            Data::Boolean(b) => match found {
                JsonType::Boolean => b.append(p.boolean()?),
                _ => return Err(wrong()),
            },
            Data::Int32(v, kind) => {
                let value = match (found, *kind) {
                    (JsonType::Number, IntKind::TimeMillis) => {
                        let text = p.number()?;
                        let ms = parse_integer(text, expected)?;
                        if !(0..DAY_MILLIS).contains(&ms) {
                            return Err(invalid(
                                text.to_string(),
                                expected,
                                "must be at least 0 and less than 86400000 (24 h)",
                            ));
                        }
                        ms
                    }
                    (JsonType::Number, _) => parse_integer(p.number()?, expected)?,
                    (JsonType::String, IntKind::Date) => {
                        i64::from(parse_date(&p.string()?, expected)?)
                    }
                    _ => return Err(wrong()),
                };
                let value = i32::try_from(value).map_err(|_| {
                    invalid(
                        value.to_string(),
                        expected,
                        format!("out of range {}..={}", i32::MIN, i32::MAX),
                    )
                })?;
                v.push(value);
            }
            Data::Int64(v, kind) => {
                let value = match (found, &*kind) {
                    (JsonType::Number, LongKind::TimeMicros) => {
                        let text = p.number()?;
                        let us = parse_integer(text, expected)?;
                        if !(0..DAY_MICROS).contains(&us) {
                            return Err(invalid(
                                text.to_string(),
                                expected,
                                "must be at least 0 and less than 86400000000 (24 h)",
                            ));
                        }
                        us
                    }
                    (JsonType::Number, _) => parse_integer(p.number()?, expected)?,
                    (JsonType::String, LongKind::Timestamp { unit, timezone }) => {
                        parse_timestamp(&p.string()?, *unit, timezone.is_some(), expected)?
                    }
                    _ => return Err(wrong()),
                };
                v.push(value);
            }
            Data::Float32(v) => {
                let value = match found {
                    JsonType::Number => {
                        let text = p.number()?;
                        let x: f32 = text
                            .parse()
                            .map_err(|_| invalid(text.to_string(), expected, "not a number"))?;
                        if x.is_infinite() {
                            return Err(invalid(
                                text.to_string(),
                                expected,
                                "out of range (overflows to infinity)",
                            ));
                        }
                        x
                    }
                    JsonType::String => special_float(&p.string()?, expected)? as f32,
                    _ => return Err(wrong()),
                };
                v.push(value);
            }
            Data::Float64(v) => {
                let value = match found {
                    JsonType::Number => {
                        let text = p.number()?;
                        let x: f64 = text
                            .parse()
                            .map_err(|_| invalid(text.to_string(), expected, "not a number"))?;
                        if x.is_infinite() {
                            return Err(invalid(
                                text.to_string(),
                                expected,
                                "out of range (overflows to infinity)",
                            ));
                        }
                        x
                    }
                    JsonType::String => special_float(&p.string()?, expected)?,
                    _ => return Err(wrong()),
                };
                v.push(value);
            }
            Data::Decimal(v, precision, scale) => {
                let (text, shown) = match found {
                    JsonType::Number => {
                        let t = p.number()?;
                        (Cow::Borrowed(t), t.to_string())
                    }
                    JsonType::String => {
                        let s = p.string()?;
                        let shown = quoted(&s);
                        (s, shown)
                    }
                    _ => return Err(wrong()),
                };
                let value = parse_decimal(&text, *precision, *scale)
                    .map_err(|detail| invalid(shown, expected, detail))?;
                v.push(value);
            }
            Data::Utf8(v, symbols) => match found {
                JsonType::String => {
                    let s = p.string()?;
                    if let Some(symbols) = symbols {
                        if !symbols.contains(s.as_ref()) {
                            return Err(invalid(
                                quoted(&s),
                                expected,
                                "not one of the enum's symbols",
                            ));
                        }
                    }
                    v.push(s.as_bytes())?;
                }
                _ => return Err(wrong()),
            },
            Data::Binary(v) => match found {
                JsonType::String => {
                    let s = p.string()?;
                    STANDARD
                        .decode_vec(s.as_bytes(), &mut v.bytes)
                        .map_err(|e| {
                            invalid(quoted(&s), expected, format!("not standard base64: {e}"))
                        })?;
                    v.close()?;
                }
                _ => return Err(wrong()),
            },
            Data::Fixed(v, size) => match found {
                JsonType::String => {
                    let s = p.string()?;
                    let before = v.len();
                    STANDARD.decode_vec(s.as_bytes(), v).map_err(|e| {
                        invalid(quoted(&s), expected, format!("not standard base64: {e}"))
                    })?;
                    let got = v.len() - before;
                    if got != *size {
                        return Err(invalid(
                            quoted(&s),
                            expected,
                            format!("decodes to {got} bytes, the type holds exactly {size}"),
                        ));
                    }
                }
                _ => return Err(wrong()),
            },
            Data::Struct(s) => match found {
                JsonType::Object => decode_struct(s, p, stats)?,
                _ => return Err(wrong()),
            },
            Data::List { offsets, item, .. } => match found {
                JsonType::Array => {
                    p.begin_array()?;
                    let mut first = true;
                    let mut index = 0;
                    while p.array_next(&mut first)? {
                        item.decode(p, stats)
                            .map_err(|f| f.at(Segment::Index(index)))?;
                        index += 1;
                    }
                    offsets.push(
                        i32::try_from(item.len)
                            .map_err(|_| Fail::new(RecordDecodeReason::ColumnFull))?,
                    );
                }
                _ => return Err(wrong()),
            },
            Data::Map {
                offsets,
                keys,
                values,
                ..
            } => match found {
                JsonType::Object => {
                    p.begin_object()?;
                    let mut seen: HashSet<Cow<'_, str>> = HashSet::new();
                    let mut first = true;
                    while let Some(key) = p.object_key(&mut first)? {
                        if !seen.insert(key.clone()) {
                            return Err(Fail::new(RecordDecodeReason::DuplicateKey {
                                key: key.into_owned(),
                            }));
                        }
                        keys.push(key.as_bytes())?;
                        values
                            .decode(p, stats)
                            .map_err(|f| f.at(Segment::Key(key.into_owned())))?;
                    }
                    offsets.push(
                        i32::try_from(values.len)
                            .map_err(|_| Fail::new(RecordDecodeReason::ColumnFull))?,
                    );
                }
                _ => return Err(wrong()),
            },
        }
        self.mark_valid();
        Ok(())
    }
}

/// Decodes one object into a struct's slots: members by name, then the missing fields.
pub(super) fn decode_struct(
    s: &mut StructData,
    p: &mut Parser<'_>,
    stats: &mut Stats,
) -> Result<(), Fail> {
    p.begin_object()?;
    for slot in &mut s.slots {
        slot.seen = false;
    }
    let mut unknown: Option<HashSet<Cow<'_, str>>> = None;
    let mut first = true;
    // Producers mostly write the fields in schema order: try the slot after the last one matched before
    // hashing the name.
    let mut next = 0usize;
    while let Some(key) = p.object_key(&mut first)? {
        let found = match s.slots.get(next) {
            Some(slot) if slot.name == key.as_ref() => Some(next),
            _ => s.index.get(key.as_ref()).copied(),
        };
        if let Some(i) = found {
            next = i + 1;
        }
        match found.and_then(|i| s.slots.get_mut(i)) {
            Some(slot) => {
                if slot.seen {
                    return Err(Fail::new(RecordDecodeReason::DuplicateKey {
                        key: key.into_owned(),
                    }));
                }
                slot.seen = true;
                slot.column
                    .decode(p, stats)
                    .map_err(|f| f.at(Segment::Field(slot.name.clone())))?;
            }
            None => {
                if !unknown.get_or_insert_with(HashSet::new).insert(key.clone()) {
                    return Err(Fail::new(RecordDecodeReason::DuplicateKey {
                        key: key.into_owned(),
                    }));
                }
                p.skip_value(true)
                    .map_err(|f| f.at(Segment::Field(key.into_owned())))?;
                stats.ignored_fields += 1;
            }
        }
    }
    s.fill_missing()
}
