//! A bounds-checked cursor reading Avro binary values from block contents, in the terms of
//! [`ContentError`]; the encoding itself (varints, writers) is [`crate::avro::binary`].

use super::error::ContentError;
use crate::avro::binary::{self, VarintError};

pub(crate) use crate::avro::binary::{write_bytes, write_long};

/// Deepest nesting of values accepted when decoding.
pub(crate) const MAX_DEPTH: usize = 64;

/// Reads Avro binary values from a block's content; offsets in errors count from the content's start.
pub(crate) struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Offset of `buf` in the content, added to every offset reported.
    base: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Self::at(buf, 0)
    }

    /// A cursor over `buf`, which starts at content offset `base`.
    pub(crate) fn at(buf: &'a [u8], base: usize) -> Self {
        Self { buf, pos: 0, base }
    }

    /// The content offset of the next byte.
    pub(crate) fn offset(&self) -> usize {
        self.base + self.pos
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub(crate) fn truncated(&self, what: &str) -> ContentError {
        ContentError::Truncated {
            offset: self.offset(),
            what: what.to_string(),
        }
    }

    pub(crate) fn corrupt(&self, reason: impl Into<String>) -> ContentError {
        ContentError::Corrupt {
            offset: self.offset(),
            reason: reason.into(),
        }
    }

    pub(crate) fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], ContentError> {
        if n > self.remaining() {
            return Err(self.truncated(what));
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// A big-endian int32 (block framing inside the content, not Avro).
    pub(crate) fn be_i32(&mut self, what: &str) -> Result<i32, ContentError> {
        let b = self.take(4, what)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A non-negative big-endian int32 length.
    pub(crate) fn be_len(&mut self, what: &str) -> Result<usize, ContentError> {
        let at = self.offset();
        let v = self.be_i32(what)?;
        usize::try_from(v).map_err(|_| ContentError::Corrupt {
            offset: at,
            reason: format!("negative {what} {v}"),
        })
    }

    /// An Avro zig-zag varint long.
    pub(crate) fn long(&mut self, what: &str) -> Result<i64, ContentError> {
        binary::read_long(self.buf, &mut self.pos).map_err(|e| match e {
            VarintError::Truncated => self.truncated(what),
            other => self.corrupt(format!("{what}: {other}")),
        })
    }

    /// An Avro int (a long that must fit 32 bits).
    pub(crate) fn int(&mut self, what: &str) -> Result<i32, ContentError> {
        let v = self.long(what)?;
        i32::try_from(v).map_err(|_| self.corrupt(format!("{what}: {v} does not fit an int")))
    }

    /// A non-negative Avro length that fits in what remains (so nothing is allocated for a lie).
    pub(crate) fn length(&mut self, what: &str) -> Result<usize, ContentError> {
        let v = self.long(what)?;
        let n = usize::try_from(v).map_err(|_| self.corrupt(format!("negative {what} {v}")))?;
        if n > self.remaining() {
            return Err(self.truncated(what));
        }
        Ok(n)
    }

    pub(crate) fn bytes(&mut self, what: &str) -> Result<&'a [u8], ContentError> {
        let n = self.length(what)?;
        self.take(n, what)
    }

    pub(crate) fn string(&mut self, what: &str) -> Result<String, ContentError> {
        let at = self.offset();
        let b = self.bytes(what)?;
        std::str::from_utf8(b)
            .map(str::to_string)
            .map_err(|e| ContentError::Corrupt {
                offset: at,
                reason: format!("{what} is not UTF-8: {e}"),
            })
    }

    pub(crate) fn boolean(&mut self, what: &str) -> Result<bool, ContentError> {
        match self.take(1, what)?[0] {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(self.corrupt(format!("{what}: boolean byte {b}"))),
        }
    }

    pub(crate) fn float(&mut self, what: &str) -> Result<f32, ContentError> {
        let b = self.take(4, what)?;
        binary::float_from(b).ok_or_else(|| self.truncated(what))
    }

    pub(crate) fn double(&mut self, what: &str) -> Result<f64, ContentError> {
        let b = self.take(8, what)?;
        binary::double_from(b).ok_or_else(|| self.truncated(what))
    }

    /// The item count of the next array or map block (the byte size of a negative-count block is skipped);
    /// 0 ends the array or map. A count is refused when the items could not fit: every item takes at least
    /// `min_item_bytes` (0 for items that may be empty, bounded then by `zero_size_budget`).
    pub(crate) fn block_count(
        &mut self,
        what: &str,
        min_item_bytes: usize,
        zero_size_budget: &mut usize,
    ) -> Result<usize, ContentError> {
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
    fn longs_round_trip_through_the_shared_encoder() {
        for v in [
            0i64,
            1,
            -1,
            63,
            -64,
            64,
            300,
            i32::MAX as i64,
            i64::MIN,
            i64::MAX,
        ] {
            let mut out = Vec::new();
            write_long(&mut out, v);
            let mut c = Cursor::new(&out);
            assert_eq!(c.long("v").expect("long"), v);
            assert_eq!(c.remaining(), 0);
        }
    }

    #[test]
    fn bad_varints_and_lengths_are_errors() {
        assert!(matches!(
            Cursor::new(&[0x80; 11]).long("v"),
            Err(ContentError::Corrupt { .. })
        ));
        assert!(matches!(
            Cursor::new(&[0x80]).long("v"),
            Err(ContentError::Truncated { .. })
        ));
        // length 100 with 1 byte left
        assert!(matches!(
            Cursor::new(&[200, 1, 0]).bytes("b"),
            Err(ContentError::Truncated { .. })
        ));
        assert!(matches!(
            Cursor::new(&[1]).bytes("b"),
            Err(ContentError::Corrupt { .. })
        ));
        assert!(matches!(
            Cursor::new(&[2, 0xff]).string("s"),
            Err(ContentError::Corrupt { .. })
        ));
        assert!(matches!(
            Cursor::new(&[2]).boolean("b"),
            Err(ContentError::Corrupt { .. })
        ));
    }
}
