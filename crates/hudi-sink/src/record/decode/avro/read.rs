//! Reading one datum with its plan: a cursor over the bytes, block counts and nesting bounded, values checked
//! and stored in the column buffers.

use super::*;
use crate::avro::binary::{self, VarintError};

/// A cursor over one datum.
pub(in crate::record::decode) struct Cursor<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) pos: usize,
    pub(super) depth: usize,
    pub(super) max_depth: usize,
    /// Array and map items left to read in this datum: bounds zero-byte items (nulls, empty records).
    pub(super) items_left: usize,
    /// Writer fields the table lacks, stepped over in this datum (what `RecordDecoder::ignored_fields` counts).
    pub(in crate::record::decode) skipped_fields: u64,
}

/// Items a datum may hold beyond one per byte (zero-byte items such as nulls).
pub(super) const EXTRA_ITEMS: usize = 65_536;

pub(super) fn malformed(pos: usize, message: impl Into<String>) -> Fail {
    Fail::new(RecordDecodeReason::NotAvro {
        byte_offset: pos,
        message: message.into(),
    })
}

impl<'a> Cursor<'a> {
    pub(in crate::record::decode) fn new(bytes: &'a [u8], max_depth: usize) -> Self {
        Cursor {
            bytes,
            pos: 0,
            depth: 0,
            max_depth,
            items_left: bytes.len().saturating_add(EXTRA_ITEMS),
            skipped_fields: 0,
        }
    }

    pub(super) fn take(&mut self, n: usize) -> Result<&'a [u8], Fail> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len())
            .ok_or_else(|| {
                malformed(
                    self.pos,
                    format!(
                        "needs {n} more bytes, {} are left",
                        self.bytes.len() - self.pos
                    ),
                )
            })?;
        let out = self.bytes.get(self.pos..end).unwrap_or_default();
        self.pos = end;
        Ok(out)
    }

    /// A zig-zag varint of at most 10 bytes.
    pub(super) fn long(&mut self) -> Result<i64, Fail> {
        let start = self.pos;
        binary::read_long(self.bytes, &mut self.pos).map_err(|e| match e {
            VarintError::Truncated => malformed(start, "the datum ends inside a number"),
            VarintError::Overflow | VarintError::TooLong => {
                malformed(start, "a number is longer than 64 bits")
            }
        })
    }

    pub(super) fn int(&mut self) -> Result<i32, Fail> {
        let start = self.pos;
        let v = self.long()?;
        i32::try_from(v).map_err(|_| malformed(start, format!("int {v} is out of range")))
    }

    pub(super) fn length(&mut self) -> Result<usize, Fail> {
        let start = self.pos;
        let n = self.long()?;
        usize::try_from(n).map_err(|_| malformed(start, format!("negative length {n}")))
    }

    pub(super) fn bytes(&mut self) -> Result<&'a [u8], Fail> {
        let n = self.length()?;
        self.take(n)
    }

    /// The item count of the next array or map block (0 at the end), its byte size skipped.
    pub(super) fn block(&mut self) -> Result<usize, Fail> {
        let start = self.pos;
        let count = self.long()?;
        let count = if count < 0 {
            self.long()?;
            count.unsigned_abs()
        } else {
            count as u64
        };
        let count = usize::try_from(count).unwrap_or(usize::MAX);
        if count > self.items_left {
            return Err(malformed(
                start,
                format!("a block of {count} items is more than the datum can hold"),
            ));
        }
        self.items_left -= count;
        Ok(count)
    }

    pub(super) fn enter(&mut self) -> Result<(), Fail> {
        self.depth += 1;
        if self.depth > self.max_depth {
            return Err(Fail::new(RecordDecodeReason::TooDeep {
                max_depth: self.max_depth,
            }));
        }
        Ok(())
    }

    /// Calls `each` once per item of the array or map at the cursor, block by block, one level deeper.
    pub(super) fn items(
        &mut self,
        mut each: impl FnMut(&mut Self) -> Result<(), Fail>,
    ) -> Result<(), Fail> {
        self.enter()?;
        loop {
            let count = self.block()?;
            if count == 0 {
                break;
            }
            for _ in 0..count {
                each(self)?;
            }
        }
        self.depth -= 1;
        Ok(())
    }
}

/// Reads one datum with `plan` into the root struct. On error the columns may hold part of it: the caller
/// truncates.
pub(in crate::record::decode) fn read(
    plan: &AvroPlan,
    root: &mut Column,
    cur: &mut Cursor<'_>,
) -> Result<(), Fail> {
    let Data::Struct(s) = &mut root.data else {
        return Err(malformed(
            0,
            "internal error: the root column is not a record",
        ));
    };
    cur.enter()?;
    record(plan, plan.fields(), s, cur)?;
    root.mark_valid();
    if cur.pos != cur.bytes.len() {
        return Err(malformed(
            cur.pos,
            format!(
                "{} bytes are left after the record (is the writer schema right?)",
                cur.bytes.len() - cur.pos
            ),
        ));
    }
    Ok(())
}

fn record(
    plan: &AvroPlan,
    fields: &[FieldRead],
    s: &mut StructData,
    cur: &mut Cursor<'_>,
) -> Result<(), Fail> {
    for slot in &mut s.slots {
        slot.seen = false;
    }
    for field in fields {
        match field {
            FieldRead::Slot(i, read) => {
                let Some(slot) = s.slots.get_mut(*i) else {
                    return Err(malformed(cur.pos, "internal error: slot out of range"));
                };
                slot.seen = true;
                value(plan, read, &mut slot.column, cur)
                    .map_err(|f| f.at(Segment::Field(slot.name.clone())))?;
            }
            FieldRead::Skip(id) => {
                cur.skipped_fields += 1;
                skip(plan, *id, cur)?
            }
        }
    }
    s.fill_missing()
}

fn value(plan: &AvroPlan, read: &Read, col: &mut Column, cur: &mut Cursor<'_>) -> Result<(), Fail> {
    let expected = col.expected.as_str();
    let internal =
        |pos: usize| malformed(pos, format!("internal error: plan does not fit {expected}"));
    match (read, &mut col.data) {
        (Read::Union(branches), _) => {
            let at = cur.pos;
            let index = cur.long()?;
            let branch = usize::try_from(index)
                .ok()
                .and_then(|i| branches.get(i))
                .ok_or_else(|| {
                    malformed(
                        at,
                        format!(
                            "union branch {index} does not exist ({} branches)",
                            branches.len()
                        ),
                    )
                })?;
            return match branch {
                Ok(read) => value(plan, read, col, cur),
                Err(reason) => Err(invalid(
                    format!("union branch {index}"),
                    expected,
                    reason.clone(),
                )),
            };
        }
        (Read::Null, _) => {
            if col.nulls.is_none() {
                return Err(Fail::new(RecordDecodeReason::NullNotAllowed {
                    expected: expected.to_string(),
                }));
            }
            return col.append_empty();
        }
        (Read::Boolean, Data::Boolean(b)) => {
            let at = cur.pos;
            match cur.take(1)? {
                [0] => b.append(false),
                [1] => b.append(true),
                other => {
                    return Err(malformed(
                        at,
                        format!("boolean byte {other:?} is not 0 or 1"),
                    ))
                }
            }
        }
        (Read::Int(NumTo::I32), Data::Int32(v, kind)) => {
            let x = cur.int()?;
            if *kind == IntKind::TimeMillis && !(0..DAY_MILLIS).contains(&i64::from(x)) {
                return Err(invalid(
                    x.to_string(),
                    expected,
                    "must be at least 0 and less than 86400000 (24 h)",
                ));
            }
            v.push(x);
        }
        (Read::Int(NumTo::I64), Data::Int64(v, _)) => v.push(i64::from(cur.int()?)),
        (Read::Int(NumTo::F32), Data::Float32(v)) => v.push(cur.int()? as f32),
        (Read::Int(NumTo::F64), Data::Float64(v)) => v.push(f64::from(cur.int()?)),
        (Read::Long(NumTo::I64, scale), Data::Int64(v, kind)) => {
            let x = cur.long()?;
            if *kind == LongKind::TimeMicros && !(0..DAY_MICROS).contains(&x) {
                return Err(invalid(
                    x.to_string(),
                    expected,
                    "must be at least 0 and less than 86400000000 (24 h)",
                ));
            }
            let scaled = x.checked_mul(*scale).ok_or_else(|| {
                invalid(x.to_string(), expected, "out of range in the column's unit")
            })?;
            v.push(scaled);
        }
        (Read::Long(NumTo::F32, _), Data::Float32(v)) => v.push(cur.long()? as f32),
        (Read::Long(NumTo::F64, _), Data::Float64(v)) => v.push(cur.long()? as f64),
        (Read::Float(to), data) => {
            let raw = cur.take(4)?;
            let x = binary::float_from(raw).ok_or_else(|| internal(0))?;
            match (to, data) {
                (NumTo::F32, Data::Float32(v)) => v.push(x),
                (NumTo::F64, Data::Float64(v)) => v.push(f64::from(x)),
                _ => return Err(internal(cur.pos)),
            }
        }
        (Read::Double, Data::Float64(v)) => {
            let raw = cur.take(8)?;
            v.push(binary::double_from(raw).ok_or_else(|| internal(0))?);
        }
        (Read::Bytes(to), data) => {
            let at = cur.pos;
            let bytes = cur.bytes()?;
            store_bytes(*to, bytes, data, expected, at)?;
        }
        (Read::Fixed(size, to), data) => {
            let at = cur.pos;
            let bytes = cur.take(*size)?;
            store_bytes(*to, bytes, data, expected, at)?;
        }
        (Read::Enum(symbols), Data::Utf8(v, _)) => {
            let at = cur.pos;
            let index = cur.int()?;
            let Some((symbol, known)) = usize::try_from(index).ok().and_then(|i| symbols.get(i))
            else {
                return Err(malformed(
                    at,
                    format!(
                        "enum index {index} does not exist ({} symbols)",
                        symbols.len()
                    ),
                ));
            };
            if !known {
                return Err(invalid(
                    quoted(symbol),
                    expected,
                    "not one of the table enum's symbols",
                ));
            }
            v.push(symbol.as_bytes())?;
        }
        (Read::Record(fields), Data::Struct(s)) => {
            cur.enter()?;
            record(plan, fields, s, cur)?;
            cur.depth -= 1;
        }
        (Read::Array(item_read), Data::List { offsets, item, .. }) => {
            let mut index = 0;
            cur.items(|cur| {
                value(plan, item_read, item, cur).map_err(|f| f.at(Segment::Index(index)))?;
                index += 1;
                Ok(())
            })?;
            offsets.push(
                i32::try_from(item.len).map_err(|_| Fail::new(RecordDecodeReason::ColumnFull))?,
            );
        }
        (
            Read::Map(value_read),
            Data::Map {
                offsets,
                keys,
                values,
                ..
            },
        ) => {
            let mut seen: HashSet<&[u8]> = HashSet::new();
            cur.items(|cur| {
                let at = cur.pos;
                let key = cur.bytes()?;
                let key_text = std::str::from_utf8(key)
                    .map_err(|_| malformed(at, "a map key is not UTF-8"))?;
                if !seen.insert(key) {
                    return Err(Fail::new(RecordDecodeReason::DuplicateKey {
                        key: key_text.to_string(),
                    }));
                }
                keys.push(key)?;
                value(plan, value_read, values, cur)
                    .map_err(|f| f.at(Segment::Key(key_text.to_string())))
            })?;
            offsets.push(
                i32::try_from(values.len).map_err(|_| Fail::new(RecordDecodeReason::ColumnFull))?,
            );
        }
        _ => return Err(internal(cur.pos)),
    }
    col.mark_valid();
    Ok(())
}

fn skip(plan: &AvroPlan, id: usize, cur: &mut Cursor<'_>) -> Result<(), Fail> {
    match plan.skip(id) {
        None | Some(Skip::Pending) => Err(malformed(cur.pos, "internal error: no skip plan")),
        Some(Skip::Null) => Ok(()),
        Some(Skip::Boolean) => cur.take(1).map(drop),
        Some(Skip::Int | Skip::Long) => cur.long().map(drop),
        Some(Skip::Float) => cur.take(4).map(drop),
        Some(Skip::Double) => cur.take(8).map(drop),
        Some(Skip::Bytes) => cur.bytes().map(drop),
        Some(Skip::Fixed(n)) => cur.take(*n).map(drop),
        Some(Skip::Record(fields)) => {
            cur.enter()?;
            for &f in fields {
                skip(plan, f, cur)?;
            }
            cur.depth -= 1;
            Ok(())
        }
        Some(Skip::Array(item)) => cur.items(|cur| skip(plan, *item, cur)),
        Some(Skip::Map(value)) => cur.items(|cur| {
            cur.bytes()?;
            skip(plan, *value, cur)
        }),
        Some(Skip::Union(branches)) => {
            let at = cur.pos;
            let index = cur.long()?;
            let branch = usize::try_from(index)
                .ok()
                .and_then(|i| branches.get(i))
                .ok_or_else(|| malformed(at, format!("union branch {index} does not exist")))?;
            skip(plan, *branch, cur)
        }
    }
}

/// Stores the bytes of a writer `bytes`, `string` or `fixed` value.
pub(super) fn store_bytes(
    to: BytesTo,
    bytes: &[u8],
    data: &mut Data,
    expected: &str,
    at: usize,
) -> Result<(), Fail> {
    match (to, data) {
        (BytesTo::Utf8, Data::Utf8(v, _)) => {
            if simdutf8::basic::from_utf8(bytes).is_err() {
                return Err(malformed(at, "a string is not UTF-8"));
            }
            v.push(bytes)
        }
        (BytesTo::Binary, Data::Binary(v)) => v.push(bytes),
        (BytesTo::Fixed, Data::Fixed(v, _)) => {
            v.extend_from_slice(bytes);
            Ok(())
        }
        (BytesTo::Decimal, Data::Decimal(v, precision, _)) => {
            let unscaled = twos_complement(bytes).ok_or_else(|| {
                invalid(
                    format!("{} bytes", bytes.len()),
                    expected,
                    "the unscaled value does not fit 128 bits",
                )
            })?;
            let limit = 10i128
                .checked_pow(u32::from(*precision))
                .unwrap_or(i128::MAX);
            if unscaled.unsigned_abs() >= limit.unsigned_abs() {
                return Err(invalid(
                    unscaled.to_string(),
                    expected,
                    format!("the unscaled value has more than {precision} digits"),
                ));
            }
            v.push(unscaled);
            Ok(())
        }
        _ => Err(malformed(
            at,
            format!("internal error: plan does not fit {expected}"),
        )),
    }
}

/// A big-endian two's-complement integer of any length, if it fits `i128`.
pub(in crate::record::decode) fn twos_complement(bytes: &[u8]) -> Option<i128> {
    let negative = bytes.first().is_some_and(|b| b & 0x80 != 0);
    let fill = if negative { 0xFF } else { 0x00 };
    let cut = bytes.len().saturating_sub(16);
    let (head, tail) = bytes.split_at(cut);
    // Bytes beyond 16 must be sign extension, and the sign must survive the cut.
    if head.iter().any(|&b| b != fill) {
        return None;
    }
    if cut > 0 && tail.first().is_some_and(|&b| (b & 0x80 != 0) != negative) {
        return None;
    }
    let mut buf = [fill; 16];
    buf[16 - tail.len()..].copy_from_slice(tail);
    Some(i128::from_be_bytes(buf))
}
