//! Registry framings of a Kafka value: which schema wrote it, and where its Avro body starts.
//!
//! | first byte | framing | layout |
//! |---|---|---|
//! | `0x00` | Confluent | magic, schema id (big-endian `i32`), Avro binary body |
//! | `0x03` | AWS Glue | header version, compression (`0` none, `5` zlib), schema version UUID (16 bytes), body |
//!
//! A value whose first byte is neither is refused as [`FramingError::UnknownMagic`]: bare Avro is configured
//! explicitly (`hudi.sink.value.avro.framing=none`), never guessed, since a bare body may start with any byte.

use std::borrow::Cow;
use std::fmt;
use std::io::Read as _;

use thiserror::Error;
use uuid::Uuid;

/// Largest Glue body accepted once inflated: the Lambda ESM payload limit (6 MB). A zlib bomb stops here.
pub const MAX_INFLATED_BYTES: usize = 6 * 1024 * 1024;

/// A writer schema's identity in its registry (immutable there, so it can be cached for good).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SchemaId {
    /// A Confluent Schema Registry id (global across subjects).
    Confluent(i32),
    /// An AWS Glue Schema Registry schema version id.
    Glue(Uuid),
}

impl fmt::Display for SchemaId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchemaId::Confluent(id) => write!(f, "Confluent schema id {id}"),
            SchemaId::Glue(id) => write!(f, "Glue schema version {id}"),
        }
    }
}

/// A value split into its writer schema's id and its Avro body.
#[derive(Debug, PartialEq, Eq)]
pub struct Framed<'a> {
    /// The writer schema.
    pub id: SchemaId,
    /// The Avro binary datum (inflated when the Glue header says zlib).
    pub body: Cow<'a, [u8]>,
}

/// Why a value's framing cannot be read (the record is dead-lettered with it).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FramingError {
    /// The value has no bytes.
    #[error("the value is empty: no registry framing")]
    Empty,
    /// The first byte names no known framing.
    #[error(
        "unknown framing byte 0x{0:02x}: expected 0x00 (Confluent) or 0x03 (Glue); bare Avro needs \
         hudi.sink.value.avro.framing=none"
    )]
    UnknownMagic(u8),
    /// The value ends inside the header.
    #[error("the {framing} header needs {needed} bytes, the value has {len}")]
    Truncated {
        /// Which framing.
        framing: &'static str,
        /// Header length.
        needed: usize,
        /// Value length.
        len: usize,
    },
    /// A Glue compression byte other than 0 or 5.
    #[error("unknown Glue compression byte {0} (0 = none, 5 = zlib)")]
    Compression(u8),
    /// The zlib body does not inflate.
    #[error("the Glue zlib body does not inflate: {0}")]
    Zlib(String),
    /// The zlib body inflates past [`MAX_INFLATED_BYTES`].
    #[error("the Glue zlib body inflates past {limit} bytes (the payload limit)")]
    TooLarge {
        /// The limit.
        limit: usize,
    },
}

const CONFLUENT_HEADER: usize = 5;
const GLUE_HEADER: usize = 18;

/// Splits a registry-framed value (see the module doc).
pub fn unframe(value: &[u8]) -> Result<Framed<'_>, FramingError> {
    let (id, start, zlib) = parse_header(value)?;
    let body = value.get(start..).unwrap_or_default();
    Ok(Framed {
        id,
        body: if zlib {
            Cow::Owned(inflate(body)?)
        } else {
            Cow::Borrowed(body)
        },
    })
}

/// The writer schema a framed value names, from its header alone (a zlib body is not inflated).
pub fn schema_id(value: &[u8]) -> Result<SchemaId, FramingError> {
    parse_header(value).map(|(id, _, _)| id)
}

/// The schema id, where the body starts, and whether the body is zlib.
fn parse_header(value: &[u8]) -> Result<(SchemaId, usize, bool), FramingError> {
    let Some(&magic) = value.first() else {
        return Err(FramingError::Empty);
    };
    match magic {
        0x00 => {
            let header: [u8; CONFLUENT_HEADER] = header(value, "Confluent")?;
            let id = i32::from_be_bytes([header[1], header[2], header[3], header[4]]);
            Ok((SchemaId::Confluent(id), CONFLUENT_HEADER, false))
        }
        0x03 => {
            let header: [u8; GLUE_HEADER] = header(value, "Glue")?;
            let mut uuid = [0u8; 16];
            uuid.copy_from_slice(&header[2..]);
            let id = SchemaId::Glue(Uuid::from_bytes(uuid));
            match header[1] {
                0 => Ok((id, GLUE_HEADER, false)),
                5 => Ok((id, GLUE_HEADER, true)),
                other => Err(FramingError::Compression(other)),
            }
        }
        other => Err(FramingError::UnknownMagic(other)),
    }
}

fn header<const N: usize>(value: &[u8], framing: &'static str) -> Result<[u8; N], FramingError> {
    value
        .get(..N)
        .and_then(|h| <[u8; N]>::try_from(h).ok())
        .ok_or(FramingError::Truncated {
            framing,
            needed: N,
            len: value.len(),
        })
}

/// Inflates a zlib stream, refusing more than [`MAX_INFLATED_BYTES`].
fn inflate(body: &[u8]) -> Result<Vec<u8>, FramingError> {
    let mut out = Vec::new();
    flate2::read::ZlibDecoder::new(body)
        .take(MAX_INFLATED_BYTES as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| FramingError::Zlib(e.to_string()))?;
    if out.len() > MAX_INFLATED_BYTES {
        return Err(FramingError::TooLarge {
            limit: MAX_INFLATED_BYTES,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    #[test]
    fn confluent_and_glue_headers_name_their_schema() {
        let framed = unframe(&[0, 0, 0, 1, 2, 9, 9]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(framed.id, SchemaId::Confluent(258));
        assert_eq!(&*framed.body, &[9, 9]);
        let negative = unframe(&[0, 0xFF, 0xFF, 0xFF, 0xFF]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(negative.id, SchemaId::Confluent(-1));
        let uuid = Uuid::from_u128(0x574f6a9a_9548_4dea_86a3_d82c0479a116);
        let mut glue = vec![3, 0];
        glue.extend_from_slice(uuid.as_bytes());
        glue.extend_from_slice(b"\x14Powertools\x0a");
        let framed = unframe(&glue).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(framed.id, SchemaId::Glue(uuid));
        assert_eq!(&*framed.body, b"\x14Powertools\x0a");
    }

    #[test]
    fn zlib_bodies_inflate_within_the_limit() {
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(b"\x02\x04body")
            .unwrap_or_else(|e| panic!("{e}"));
        let mut value = vec![3, 5];
        value.extend_from_slice(&[7; 16]);
        value.extend_from_slice(&z.finish().unwrap_or_else(|e| panic!("{e}")));
        assert_eq!(
            &*unframe(&value).unwrap_or_else(|e| panic!("{e}")).body,
            b"\x02\x04body"
        );
        // A bomb: 7 MB of zeros compresses to a few kB and stops at the limit.
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        z.write_all(&vec![0u8; 7 * 1024 * 1024])
            .unwrap_or_else(|e| panic!("{e}"));
        let mut bomb = vec![3, 5];
        bomb.extend_from_slice(&[7; 16]);
        bomb.extend_from_slice(&z.finish().unwrap_or_else(|e| panic!("{e}")));
        assert!(bomb.len() < 64 * 1024);
        // The header alone names the schema without inflating anything.
        assert_eq!(
            schema_id(&bomb),
            Ok(SchemaId::Glue(Uuid::from_bytes([7; 16])))
        );
        assert_eq!(
            unframe(&bomb),
            Err(FramingError::TooLarge {
                limit: MAX_INFLATED_BYTES
            })
        );
        let mut broken = vec![3, 5];
        broken.extend_from_slice(&[7; 16]);
        broken.extend_from_slice(b"not zlib");
        assert!(matches!(unframe(&broken), Err(FramingError::Zlib(_))));
    }

    #[test]
    fn bad_framings_are_named() {
        assert_eq!(unframe(&[]), Err(FramingError::Empty));
        assert_eq!(unframe(b"{\"a\":1}"), Err(FramingError::UnknownMagic(b'{')));
        assert_eq!(
            unframe(&[0, 0, 1]),
            Err(FramingError::Truncated {
                framing: "Confluent",
                needed: 5,
                len: 3
            })
        );
        let mut glue = vec![3, 2];
        glue.extend_from_slice(&[0; 16]);
        assert_eq!(unframe(&glue), Err(FramingError::Compression(2)));
        assert!(matches!(
            unframe(&[3, 0, 1]),
            Err(FramingError::Truncated {
                framing: "Glue",
                ..
            })
        ));
    }
}
