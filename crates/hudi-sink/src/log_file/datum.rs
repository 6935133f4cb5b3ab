//! Avro binary values in block contents: [`crate::avro::binary`]'s reader reporting [`ContentError`], plus the
//! big-endian framing ints of Hudi's block layout.

use super::error::ContentError;
use crate::avro::binary::{self, ReadError};

pub(crate) use crate::avro::binary::{write_bytes, write_long};

/// Reads Avro binary values from a block's content; offsets in errors count from the content's start.
pub(crate) type Cursor<'a> = binary::Reader<'a, ContentError>;

impl ReadError for ContentError {
    fn truncated(offset: usize, what: &str) -> Self {
        ContentError::Truncated {
            offset,
            what: what.to_string(),
        }
    }

    fn corrupt(offset: usize, reason: String) -> Self {
        ContentError::Corrupt { offset, reason }
    }
}

/// The block framing inside a content: big-endian int32s (Hudi's, not Avro's).
impl Cursor<'_> {
    /// A big-endian int32.
    pub(crate) fn be_i32(&mut self, what: &str) -> Result<i32, ContentError> {
        let b = self.take(4, what)?;
        b.try_into()
            .map(i32::from_be_bytes)
            .map_err(|_| self.truncated(what))
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
