//! Avro binary primitives shared by every codec in the crate: zig-zag varints, lengths, floats and
//! byte strings. [`read_long`] is the one varint decoder; [`Reader`] is a bounds-checked cursor that reports
//! in its user's error type (see [`ReadError`]); writers append to a `Vec<u8>`.
//!
//! Invariants:
//! * A read never indexes past the bytes: every length and count is checked against what remains before
//!   anything is taken or allocated, so hostile bytes give an error, never a panic or a huge allocation.
//! * Offsets in errors count from the start of the whole content (`base` plus the position in the slice).

use std::marker::PhantomData;

use thiserror::Error;

/// Why a zig-zag varint could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum VarintError {
    /// The bytes end inside the varint.
    #[error("the bytes end inside a varint")]
    Truncated,
    /// The tenth byte carries bits beyond 64.
    #[error("varint overflows 64 bits")]
    Overflow,
    /// Ten bytes and the varint still continues.
    #[error("varint longer than 10 bytes")]
    TooLong,
}

/// Reads the zig-zag varint long at `*pos` in `buf`, advancing `*pos` past every byte examined (also on
/// error, so that a caller can report where decoding stopped).
pub fn read_long(buf: &[u8], pos: &mut usize) -> Result<i64, VarintError> {
    let mut n: u64 = 0;
    for i in 0..10 {
        let Some(&b) = buf.get(*pos) else {
            return Err(VarintError::Truncated);
        };
        *pos += 1;
        n |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            if i == 9 && b > 1 {
                return Err(VarintError::Overflow);
            }
            return Ok(zigzag_decode(n));
        }
    }
    Err(VarintError::TooLong)
}

/// Zig-zag decoding: 0, 1, 2, 3 … become 0, -1, 1, -2 ….
pub fn zigzag_decode(n: u64) -> i64 {
    ((n >> 1) as i64) ^ -((n & 1) as i64)
}

/// Zig-zag encoding, the inverse of [`zigzag_decode`].
pub fn zigzag_encode(value: i64) -> u64 {
    ((value << 1) ^ (value >> 63)) as u64
}

/// Appends `value` as a zig-zag varint (Avro `int` and `long`, counts and lengths).
pub fn write_long(out: &mut Vec<u8>, value: i64) {
    let mut n = zigzag_encode(value);
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Appends a length or count as a zig-zag varint.
pub fn write_len(out: &mut Vec<u8>, len: usize) {
    // A Vec or slice never holds more than isize::MAX items.
    write_long(out, i64::try_from(len).unwrap_or(i64::MAX));
}

/// Appends an Avro `bytes` or `string`: the length, then the bytes.
pub fn write_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    write_len(out, bytes.len());
    out.extend_from_slice(bytes);
}

/// Appends an Avro `float` (4 bytes little-endian).
pub fn write_float(out: &mut Vec<u8>, value: f32) {
    out.extend_from_slice(&value.to_le_bytes());
}

/// Appends an Avro `double` (8 bytes little-endian).
pub fn write_double(out: &mut Vec<u8>, value: f64) {
    out.extend_from_slice(&value.to_le_bytes());
}

/// An Avro `float` from the 4 bytes at the start of `b` (`None` if fewer).
pub fn float_from(b: &[u8]) -> Option<f32> {
    Some(f32::from_le_bytes(b.get(..4)?.try_into().ok()?))
}

/// An Avro `double` from the 8 bytes at the start of `b` (`None` if fewer).
pub fn double_from(b: &[u8]) -> Option<f64> {
    Some(f64::from_le_bytes(b.get(..8)?.try_into().ok()?))
}

/// How a [`Reader`]'s user reports the two ways bytes can fail: they end too soon, or they cannot be Avro.
pub trait ReadError {
    /// The bytes end at `offset` while reading `what`.
    fn truncated(offset: usize, what: &str) -> Self;
    /// The bytes at `offset` cannot be what is read.
    fn corrupt(offset: usize, reason: String) -> Self;
}

/// A bounds-checked cursor over Avro binary data, reporting errors as `E`.
pub struct Reader<'a, E> {
    buf: &'a [u8],
    pos: usize,
    /// Offset of `buf` in the content, added to every offset reported.
    base: usize,
    error: PhantomData<fn() -> E>,
}

impl<'a, E: ReadError> Reader<'a, E> {
    /// A reader over `buf`, whose first byte is content offset 0.
    pub fn new(buf: &'a [u8]) -> Self {
        Self::at(buf, 0)
    }

    /// A reader over `buf`, which starts at content offset `base`.
    pub fn at(buf: &'a [u8], base: usize) -> Self {
        Self {
            buf,
            pos: 0,
            base,
            error: PhantomData,
        }
    }

    /// The content offset of the next byte.
    pub fn offset(&self) -> usize {
        self.base + self.pos
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The error for bytes ending here while reading `what`.
    pub fn truncated(&self, what: &str) -> E {
        E::truncated(self.offset(), what)
    }

    /// The error for bytes here that cannot be what is read.
    pub fn corrupt(&self, reason: impl Into<String>) -> E {
        E::corrupt(self.offset(), reason.into())
    }

    /// The next `n` bytes.
    pub fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], E> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.buf.len())
            .ok_or_else(|| self.truncated(what))?;
        let out = self.buf.get(self.pos..end).unwrap_or_default();
        self.pos = end;
        Ok(out)
    }

    /// An Avro zig-zag varint long.
    pub fn long(&mut self, what: &str) -> Result<i64, E> {
        read_long(self.buf, &mut self.pos).map_err(|e| match e {
            VarintError::Truncated => self.truncated(what),
            other => self.corrupt(format!("{what}: {other}")),
        })
    }

    /// An Avro int (a long that must fit 32 bits).
    pub fn int(&mut self, what: &str) -> Result<i32, E> {
        let v = self.long(what)?;
        i32::try_from(v).map_err(|_| self.corrupt(format!("{what}: {v} does not fit an int")))
    }

    /// A non-negative Avro length that fits in what remains (so nothing is allocated for a lie).
    pub fn length(&mut self, what: &str) -> Result<usize, E> {
        let v = self.long(what)?;
        let n = usize::try_from(v).map_err(|_| self.corrupt(format!("negative {what} {v}")))?;
        if n > self.remaining() {
            return Err(self.truncated(what));
        }
        Ok(n)
    }

    /// An Avro `bytes`.
    pub fn bytes(&mut self, what: &str) -> Result<&'a [u8], E> {
        let n = self.length(what)?;
        self.take(n, what)
    }

    /// An Avro `string` (UTF-8 checked).
    pub fn string(&mut self, what: &str) -> Result<String, E> {
        let at = self.offset();
        let b = self.bytes(what)?;
        std::str::from_utf8(b)
            .map(str::to_string)
            .map_err(|e| E::corrupt(at, format!("{what} is not UTF-8: {e}")))
    }

    /// An Avro `boolean` (one byte, 0 or 1).
    pub fn boolean(&mut self, what: &str) -> Result<bool, E> {
        match self.take(1, what)? {
            [0] => Ok(false),
            [1] => Ok(true),
            b => Err(self.corrupt(format!(
                "{what}: boolean byte {}",
                b.first().copied().unwrap_or(0)
            ))),
        }
    }

    /// An Avro `float`.
    pub fn float(&mut self, what: &str) -> Result<f32, E> {
        let b = self.take(4, what)?;
        float_from(b).ok_or_else(|| self.truncated(what))
    }

    /// An Avro `double`.
    pub fn double(&mut self, what: &str) -> Result<f64, E> {
        let b = self.take(8, what)?;
        double_from(b).ok_or_else(|| self.truncated(what))
    }

    /// The item count of the next array or map block (the byte size of a negative-count block is skipped);
    /// 0 ends the array or map. A count is refused when the items could not fit: every item takes at least
    /// `min_item_bytes` (0 for items that may be empty, bounded then by `zero_size_budget`).
    pub fn block_count(
        &mut self,
        what: &str,
        min_item_bytes: usize,
        zero_size_budget: &mut usize,
    ) -> Result<usize, E> {
        let mut count = self.long(what)?;
        if count < 0 {
            count = count
                .checked_neg()
                .ok_or_else(|| self.corrupt(format!("{what}: block count overflows")))?;
            let _size = self.long(what)?;
        }
        let n =
            usize::try_from(count).map_err(|_| self.corrupt(format!("{what}: count {count}")))?;
        match self.remaining().checked_div(min_item_bytes) {
            Some(fits) if n > fits => return Err(self.truncated(what)),
            Some(_) => {}
            None if n > *zero_size_budget => {
                return Err(self.corrupt(format!("{what}: {n} items of no size")))
            }
            None => *zero_size_budget -= n,
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longs_round_trip() {
        for v in [
            0i64,
            1,
            -1,
            63,
            -64,
            64,
            300,
            i64::from(i32::MAX),
            i64::MIN,
            i64::MAX,
        ] {
            let mut out = Vec::new();
            write_long(&mut out, v);
            let mut pos = 0;
            assert_eq!(read_long(&out, &mut pos), Ok(v));
            assert_eq!(pos, out.len());
        }
    }

    #[test]
    fn known_encodings() {
        let enc = |v| {
            let mut out = Vec::new();
            write_long(&mut out, v);
            out
        };
        assert_eq!(enc(0), [0]);
        assert_eq!(enc(-1), [1]);
        assert_eq!(enc(1), [2]);
        assert_eq!(enc(-64), [0x7f]);
        assert_eq!(enc(64), [0x80, 1]);
        assert_eq!(
            enc(i64::MIN),
            [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1]
        );
    }

    #[test]
    fn bad_varints_are_typed() {
        let mut pos = 0;
        assert_eq!(read_long(&[0x80], &mut pos), Err(VarintError::Truncated));
        assert_eq!(pos, 1);
        let mut pos = 0;
        assert_eq!(read_long(&[0x80; 11], &mut pos), Err(VarintError::TooLong));
        assert_eq!(pos, 10);
        let mut ten = [0xff; 10];
        ten[9] = 2;
        let mut pos = 0;
        assert_eq!(read_long(&ten, &mut pos), Err(VarintError::Overflow));
        assert_eq!(pos, 10);
    }

    #[test]
    fn floats_read_back() {
        let mut out = Vec::new();
        write_float(&mut out, 1.5);
        write_double(&mut out, -2.25);
        assert_eq!(float_from(&out), Some(1.5));
        assert_eq!(double_from(&out[4..]), Some(-2.25));
        assert_eq!(double_from(&out[5..]), None);
    }
}
