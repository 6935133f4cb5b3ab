//! Reading: a container file's header, its blocks and the one record in them, under the writer schema
//! stored in the header.
//!
//! Invariants:
//! * Every length and count is checked against the bytes that remain before anything is allocated or
//!   looped over, so a hostile or damaged file fails with an error, not an allocation or a hang; nesting is
//!   bounded by [`MAX_DEPTH`].
//! * Exactly one record: none is [`AvroError::NoRecord`], two are [`AvroError::TooManyRecords`], and bytes
//!   after the block that do not form a block are [`AvroError::TrailingGarbage`].
//! * Codec null and deflate (raw RFC 1951, as the Avro specification defines it) are read; a deflate block
//!   may not inflate past [`MAX_INFLATED`].

use std::io::Read;

use super::graph::{Node, NodeId, SchemaGraph};
use super::value::AvroValue;
use super::write::{MAGIC, MAX_DEPTH};
use super::AvroError;
use crate::avro::binary::{self, VarintError};

/// Largest inflated deflate block accepted (timeline files are kilobytes).
pub(crate) const MAX_INFLATED: u64 = 256 << 20;

/// Items of zero encoded size (nulls, empty records) a file may declare beyond its byte count.
const ZERO_SIZE_ITEMS: u64 = 1 << 20;

/// A decoded container: the writer schema (text and parsed) and its one record.
pub(crate) struct Container {
    pub schema_json: String,
    pub schema: SchemaGraph,
    pub value: AvroValue,
}

/// Decodes an Avro container file holding exactly one record: returns the writer schema's JSON (as stored
/// in `avro.schema`) and the record, decoded under that schema.
pub fn decode_container(bytes: &[u8]) -> Result<(String, AvroValue), AvroError> {
    let container = read_container(bytes)?;
    Ok((container.schema_json, container.value))
}

/// The one record of a container whose writer schema is the record `full_name` (Java's reader requires the
/// names to match); [`AvroError::WrongRecord`] otherwise.
pub(crate) fn decode_named(bytes: &[u8], full_name: &str) -> Result<AvroValue, AvroError> {
    let container = read_container(bytes)?;
    match container.schema.full_name() {
        Some(name) if name == full_name => Ok(container.value),
        other => Err(AvroError::WrongRecord {
            expected: full_name.to_string(),
            found: other.unwrap_or("an unnamed schema").to_string(),
        }),
    }
}

/// One bare datum (no container) under `schema`: the whole of `bytes`, so that trailing bytes are an error
/// rather than silently dropped (a registry-framed Kafka value is one datum).
pub(crate) fn decode_datum(schema: &SchemaGraph, bytes: &[u8]) -> Result<AvroValue, AvroError> {
    let mut d = Reader::new(bytes, 0, 0);
    d.budget = bytes.len() as u64 + ZERO_SIZE_ITEMS;
    let mut path = String::from("$");
    let value = d.value(schema, schema.root(), &mut path, 0)?;
    if d.remaining() > 0 {
        return Err(d.corrupt(format!("{} bytes after the datum", d.remaining())));
    }
    Ok(value)
}

#[derive(Clone, Copy, PartialEq)]
enum Codec {
    Null,
    Deflate,
}

pub(crate) fn read_container(bytes: &[u8]) -> Result<Container, AvroError> {
    if bytes.is_empty() {
        return Err(AvroError::Empty);
    }
    if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
        return Err(AvroError::BadMagic {
            found: bytes.iter().take(MAGIC.len()).copied().collect(),
        });
    }
    let mut r = Reader::new(bytes, 0, MAGIC.len());
    let (schema_json, codec) = header(&mut r)?;
    let schema = SchemaGraph::parse(&schema_json)?;
    let sync = r.take(16, "the sync marker")?;

    let mut value = None;
    let mut records: u64 = 0;
    while r.remaining() > 0 {
        let start = r.pos;
        let block = match block(&mut r, sync) {
            Ok(block) => block,
            Err(e) if records > 0 => {
                return Err(AvroError::TrailingGarbage {
                    offset: start,
                    reason: e.to_string(),
                })
            }
            Err(e) => return Err(e),
        };
        if block.count == 0 {
            continue;
        }
        records = records.saturating_add(block.count);
        if records > 1 {
            return Err(AvroError::TooManyRecords { count: records });
        }
        let inflated;
        let (data, base, inside) = match codec {
            Codec::Null => (block.data, block.data_offset, false),
            Codec::Deflate => {
                inflated = inflate(block.data, block.data_offset)?;
                (inflated.as_slice(), 0, true)
            }
        };
        let mut d = Reader::new(data, base, 0);
        d.budget = data.len() as u64 + ZERO_SIZE_ITEMS;
        d.inflated = inside;
        let mut path = String::from("$");
        value = Some(d.value(&schema, schema.root(), &mut path, 0)?);
        if d.remaining() > 0 {
            return Err(d.corrupt(format!(
                "{} bytes after the record in its block",
                d.remaining()
            )));
        }
    }
    let value = value.ok_or(AvroError::NoRecord)?;
    Ok(Container {
        schema_json,
        schema,
        value,
    })
}

/// The metadata map: `avro.schema` (required) and `avro.codec` (absent means null).
fn header(r: &mut Reader<'_>) -> Result<(String, Codec), AvroError> {
    let mut schema = None;
    let mut codec = Codec::Null;
    loop {
        let count = r.block_count("the header metadata")?;
        if count == 0 {
            break;
        }
        for _ in 0..count {
            let key = r.string("a header metadata key")?;
            let value = r.bytes("a header metadata value")?;
            match key.as_str() {
                "avro.schema" => {
                    schema = Some(
                        String::from_utf8(value.to_vec())
                            .map_err(|_| r.corrupt("avro.schema is not UTF-8".to_string()))?,
                    )
                }
                "avro.codec" => {
                    codec = match value {
                        b"null" => Codec::Null,
                        b"deflate" => Codec::Deflate,
                        other => {
                            return Err(AvroError::UnsupportedCodec(
                                String::from_utf8_lossy(other).into_owned(),
                            ))
                        }
                    }
                }
                _ => {}
            }
        }
    }
    Ok((schema.ok_or(AvroError::MissingSchema)?, codec))
}

struct Block<'a> {
    count: u64,
    data: &'a [u8],
    data_offset: usize,
}

fn block<'a>(r: &mut Reader<'a>, sync: &[u8]) -> Result<Block<'a>, AvroError> {
    let count = r.long("a block's record count")?;
    let count =
        u64::try_from(count).map_err(|_| r.corrupt(format!("negative record count {count}")))?;
    let size = r.length("a block's size")?;
    let data_offset = r.offset();
    let data = r.take(size, "a block's data")?;
    let sync_at = r.offset();
    if r.take(16, "a block's sync marker")? != sync {
        return Err(AvroError::BadSync { offset: sync_at });
    }
    Ok(Block {
        count,
        data,
        data_offset,
    })
}

fn inflate(data: &[u8], offset: usize) -> Result<Vec<u8>, AvroError> {
    let mut out = Vec::new();
    flate2::read::DeflateDecoder::new(data)
        .take(MAX_INFLATED + 1)
        .read_to_end(&mut out)
        .map_err(|source| AvroError::Deflate { offset, source })?;
    if out.len() as u64 > MAX_INFLATED {
        return Err(AvroError::Corrupt {
            offset,
            reason: format!("deflate block inflates past {MAX_INFLATED} bytes"),
        });
    }
    Ok(out)
}

/// A cursor over `buf`, whose first byte is at `base` in the file (or in the inflated block).
struct Reader<'a> {
    buf: &'a [u8],
    base: usize,
    pos: usize,
    /// Items still allowed in arrays and maps (see [`ZERO_SIZE_ITEMS`]).
    budget: u64,
    /// Offsets are inside an inflated deflate block.
    inflated: bool,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8], base: usize, pos: usize) -> Self {
        Reader {
            buf,
            base,
            pos,
            budget: u64::MAX,
            inflated: false,
        }
    }

    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn offset(&self) -> usize {
        self.base + self.pos
    }

    fn truncated(&self, what: &str) -> AvroError {
        AvroError::Truncated {
            offset: self.offset(),
            what: self.where_(what),
        }
    }

    fn corrupt(&self, reason: String) -> AvroError {
        AvroError::Corrupt {
            offset: self.offset(),
            reason: self.where_(&reason),
        }
    }

    fn where_(&self, what: &str) -> String {
        if self.inflated {
            format!("{what} (offset inside the inflated block)")
        } else {
            what.to_string()
        }
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], AvroError> {
        if n > self.remaining() {
            return Err(self.truncated(what));
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn long(&mut self, what: &str) -> Result<i64, AvroError> {
        binary::read_long(self.buf, &mut self.pos).map_err(|e| match e {
            VarintError::Truncated => self.truncated(what),
            other => self.corrupt(format!("{what}: {other}")),
        })
    }

    fn int(&mut self, what: &str) -> Result<i32, AvroError> {
        let l = self.long(what)?;
        i32::try_from(l).map_err(|_| self.corrupt(format!("{what}: {l} does not fit an int")))
    }

    /// A non-negative length that fits in the remaining bytes.
    fn length(&mut self, what: &str) -> Result<usize, AvroError> {
        let l = self.long(what)?;
        let l =
            usize::try_from(l).map_err(|_| self.corrupt(format!("{what}: negative length {l}")))?;
        if l > self.remaining() {
            return Err(self.truncated(what));
        }
        Ok(l)
    }

    fn bytes(&mut self, what: &str) -> Result<&'a [u8], AvroError> {
        let n = self.length(what)?;
        self.take(n, what)
    }

    fn string(&mut self, what: &str) -> Result<String, AvroError> {
        let start = self.offset();
        let bytes = self.bytes(what)?;
        std::str::from_utf8(bytes)
            .map(str::to_string)
            .map_err(|e| AvroError::Corrupt {
                offset: start,
                reason: self.where_(&format!("{what} is not UTF-8: {e}")),
            })
    }

    /// The item count of the next array or map block (a negative count is followed by the byte size).
    fn block_count(&mut self, what: &str) -> Result<u64, AvroError> {
        let count = self.long(what)?;
        if count < 0 {
            self.length(what)?;
        }
        let count = count.unsigned_abs();
        if count > self.budget {
            return Err(self.corrupt(format!("{what}: {count} items cannot fit in the data")));
        }
        self.budget -= count;
        Ok(count)
    }

    fn value(
        &mut self,
        schema: &SchemaGraph,
        id: NodeId,
        path: &mut String,
        depth: usize,
    ) -> Result<AvroValue, AvroError> {
        if depth > MAX_DEPTH {
            return Err(AvroError::TooDeep {
                path: path.clone(),
                limit: MAX_DEPTH,
            });
        }
        let what = path.clone();
        Ok(match schema.node(id) {
            Node::Null => AvroValue::Null,
            Node::Boolean => match self.take(1, &what)? {
                [0] => AvroValue::Boolean(false),
                [1] => AvroValue::Boolean(true),
                other => return Err(self.corrupt(format!("{what}: boolean byte {other:?}"))),
            },
            Node::Int => AvroValue::Int(self.int(&what)?),
            Node::Long => AvroValue::Long(self.long(&what)?),
            Node::Float => {
                let b = self.take(4, &what)?;
                AvroValue::Float(binary::float_from(b).ok_or_else(|| self.truncated(&what))?)
            }
            Node::Double => {
                let b = self.take(8, &what)?;
                AvroValue::Double(binary::double_from(b).ok_or_else(|| self.truncated(&what))?)
            }
            Node::Bytes => AvroValue::Bytes(self.bytes(&what)?.to_vec()),
            Node::String => AvroValue::String(self.string(&what)?),
            Node::Fixed { size, .. } => AvroValue::Bytes(self.take(*size, &what)?.to_vec()),
            Node::Enum { symbols, name } => {
                let index = self.int(&what)?;
                let symbol = usize::try_from(index).ok().and_then(|i| symbols.get(i));
                match symbol {
                    Some(symbol) => AvroValue::Enum(index.unsigned_abs(), symbol.clone()),
                    None => {
                        return Err(self
                            .corrupt(format!("{what}: index {index} is not a symbol of {name}")))
                    }
                }
            }
            Node::Union(branches) => {
                let index = self.long(&what)?;
                let branch = usize::try_from(index)
                    .ok()
                    .and_then(|i| branches.get(i).copied());
                let (Some(branch), Ok(index)) = (branch, u32::try_from(index)) else {
                    return Err(self.corrupt(format!(
                        "{what}: union branch {index} of {}",
                        branches.len()
                    )));
                };
                AvroValue::Union(
                    index,
                    Box::new(self.value(schema, branch, path, depth + 1)?),
                )
            }
            Node::Array(items) => {
                let mut out = Vec::new();
                loop {
                    let count = self.block_count(&what)?;
                    if count == 0 {
                        break;
                    }
                    out.reserve(count.min(self.remaining() as u64) as usize);
                    for _ in 0..count {
                        let base = path.len();
                        path.push_str(&format!("[{}]", out.len()));
                        out.push(self.value(schema, *items, path, depth + 1)?);
                        path.truncate(base);
                    }
                }
                AvroValue::Array(out)
            }
            Node::Map(values) => {
                let mut out = Vec::new();
                loop {
                    let count = self.block_count(&what)?;
                    if count == 0 {
                        break;
                    }
                    for _ in 0..count {
                        let key = self.string(&what)?;
                        let base = path.len();
                        path.push_str(&format!("[{key:?}]"));
                        let value = self.value(schema, *values, path, depth + 1)?;
                        path.truncate(base);
                        out.push((key, value));
                    }
                }
                AvroValue::Map(out)
            }
            Node::Record { fields, .. } => {
                let mut out = Vec::with_capacity(fields.len());
                for field in fields {
                    let base = path.len();
                    path.push('.');
                    path.push_str(&field.name);
                    let value = self.value(schema, field.schema, path, depth + 1)?;
                    path.truncate(base);
                    out.push((field.name.clone(), value));
                }
                AvroValue::Record(out)
            }
        })
    }
}
