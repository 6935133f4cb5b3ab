//! Avro binary primitives shared by every codec in the crate: zig-zag varints, lengths, floats and
//! byte strings. Readers keep their own cursors (each reports offsets and errors in its own terms) and call
//! [`read_long`] for the one varint decoder; writers append to a `Vec<u8>`.

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
