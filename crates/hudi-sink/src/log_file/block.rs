//! Block framing: magic, sizes, block type, header and footer maps, trailer (layout in the module doc of
//! [`super`]). Content is opaque here; [`super::reader`] hands it to the per-type decoders.
//!
//! Reading checks every length against the bytes that remain, the block size against the fields it covers,
//! and the trailer against the block size, so that a torn or damaged file fails with an error naming the
//! offset instead of a panic or a huge allocation.

use std::collections::BTreeMap;

use super::error::LogFileError;

/// `#HUDI#`, the first bytes of every block.
pub const MAGIC: &[u8; 6] = b"#HUDI#";

/// The log format version this module reads and writes.
pub const LOG_FORMAT_VERSION: i32 = 1;

/// Block types, by the ordinal Hudi writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BlockType {
    /// A command (rollback of an earlier instant's blocks).
    Command,
    /// Keys deleted by an instant.
    Delete,
    /// What Java's reader makes of bytes it cannot frame; never written.
    Corrupt,
    /// Records as Avro datums.
    AvroData,
    /// Records as an HFile (metadata table).
    HFileData,
    /// Records as a Parquet file.
    ParquetData,
    /// Change-data-capture records.
    CdcData,
}

impl BlockType {
    /// The ordinal written in the block.
    pub fn ordinal(self) -> i32 {
        match self {
            BlockType::Command => 0,
            BlockType::Delete => 1,
            BlockType::Corrupt => 2,
            BlockType::AvroData => 3,
            BlockType::HFileData => 4,
            BlockType::ParquetData => 5,
            BlockType::CdcData => 6,
        }
    }

    /// The block type with this ordinal.
    pub fn from_ordinal(ordinal: i32) -> Option<Self> {
        Some(match ordinal {
            0 => BlockType::Command,
            1 => BlockType::Delete,
            2 => BlockType::Corrupt,
            3 => BlockType::AvroData,
            4 => BlockType::HFileData,
            5 => BlockType::ParquetData,
            6 => BlockType::CdcData,
            _ => return None,
        })
    }
}

/// Header keys (`HeaderMetadataType`), by ordinal. Only the first four are written; the rest are read so that
/// a block from a newer writer is still framed (its content decoders ignore them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HeaderKey {
    /// The instant that wrote the block.
    InstantTime,
    /// The instant a command block acts on.
    TargetInstantTime,
    /// The writer schema of a data block (Avro JSON).
    Schema,
    /// Which command (`"0"` = rollback).
    CommandBlockType,
    /// Instants a log compaction merged (table version 5+).
    CompactedBlockTimes,
    /// Record positions in the base file (table version 6+).
    RecordPositions,
    /// A retry-safe block id (table version 6+).
    BlockIdentifier,
    /// Partial updates (table version 8).
    IsPartial,
    /// Base instant the record positions refer to (table version 8).
    BaseFileInstantTimeOfRecordPositions,
    /// Records sorted by key (table version 9).
    IsOrdered,
}

impl HeaderKey {
    /// The ordinal written in the map.
    pub fn ordinal(self) -> i32 {
        self as i32
    }

    /// The key with this ordinal.
    pub fn from_ordinal(ordinal: i32) -> Option<Self> {
        Some(match ordinal {
            0 => HeaderKey::InstantTime,
            1 => HeaderKey::TargetInstantTime,
            2 => HeaderKey::Schema,
            3 => HeaderKey::CommandBlockType,
            4 => HeaderKey::CompactedBlockTimes,
            5 => HeaderKey::RecordPositions,
            6 => HeaderKey::BlockIdentifier,
            7 => HeaderKey::IsPartial,
            8 => HeaderKey::BaseFileInstantTimeOfRecordPositions,
            9 => HeaderKey::IsOrdered,
            _ => return None,
        })
    }
}

/// A header or footer map.
pub type Header = BTreeMap<HeaderKey, String>;

/// One framed block as read: everything but the content's meaning.
#[derive(Debug, Clone, PartialEq)]
pub struct RawBlock<'a> {
    /// Byte offset of the block's magic in the file.
    pub offset: usize,
    /// The block type.
    pub block_type: BlockType,
    /// The header map.
    pub header: Header,
    /// The content bytes.
    pub content: &'a [u8],
    /// The footer map (empty in every block Hudi writes).
    pub footer: Header,
}

/// Frames one block: `header` entries are written in the order given (readers treat the map as unordered;
/// the order is kept so that bytes can match Spark's), the footer empty.
pub fn encode_block(
    block_type: BlockType,
    header: &[(HeaderKey, &str)],
    content: &[u8],
) -> Vec<u8> {
    let map_len =
        |entries: &[(HeaderKey, &str)]| 4 + entries.iter().map(|(_, v)| 8 + v.len()).sum::<usize>();
    let footer: &[(HeaderKey, &str)] = &[];
    // version + type + header + content length + content + footer + trailer
    let block_size = 4 + 4 + map_len(header) + 8 + content.len() + map_len(footer) + 8;
    let mut out = Vec::with_capacity(MAGIC.len() + 8 + block_size);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&len_i64(block_size).to_be_bytes());
    out.extend_from_slice(&LOG_FORMAT_VERSION.to_be_bytes());
    out.extend_from_slice(&block_type.ordinal().to_be_bytes());
    write_map(&mut out, header);
    out.extend_from_slice(&len_i64(content.len()).to_be_bytes());
    out.extend_from_slice(content);
    write_map(&mut out, footer);
    // The trailer counts everything written so far (magic through footer).
    let total = out.len();
    out.extend_from_slice(&len_i64(total).to_be_bytes());
    out
}

fn len_i64(len: usize) -> i64 {
    // A Vec never holds more than isize::MAX bytes.
    i64::try_from(len).unwrap_or(i64::MAX)
}

fn len_i32(len: usize) -> i32 {
    // Header values are instant times and schemas, far below 2 GiB; a longer one would be refused by Java.
    i32::try_from(len).unwrap_or(i32::MAX)
}

fn write_map(out: &mut Vec<u8>, entries: &[(HeaderKey, &str)]) {
    out.extend_from_slice(&len_i32(entries.len()).to_be_bytes());
    for (key, value) in entries {
        out.extend_from_slice(&key.ordinal().to_be_bytes());
        out.extend_from_slice(&len_i32(value.len()).to_be_bytes());
        out.extend_from_slice(value.as_bytes());
    }
}

/// Reads big-endian fields of one block, failing with the block's offset.
struct Frame<'a, 'f> {
    file: &'f str,
    bytes: &'a [u8],
    /// Offset of the block's magic.
    start: usize,
    pos: usize,
    /// End of the block as its size says (bounds every field).
    end: usize,
}

impl<'a> Frame<'a, '_> {
    fn truncated(&self, what: &'static str) -> LogFileError {
        LogFileError::Truncated {
            file: self.file.to_string(),
            offset: self.start,
            what,
        }
    }

    fn corrupt(&self, reason: String) -> LogFileError {
        LogFileError::Corrupt {
            file: self.file.to_string(),
            offset: self.start,
            reason,
        }
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], LogFileError> {
        let stop = self
            .pos
            .checked_add(n)
            .filter(|&stop| stop <= self.end)
            .ok_or_else(|| {
                if self.end < self.bytes.len() {
                    self.corrupt(format!("{what} runs past the end given by the block size"))
                } else {
                    self.truncated(what)
                }
            })?;
        let out = &self.bytes[self.pos..stop];
        self.pos = stop;
        Ok(out)
    }

    fn i32(&mut self, what: &'static str) -> Result<i32, LogFileError> {
        let b = self.take(4, what)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn i64(&mut self, what: &'static str) -> Result<i64, LogFileError> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_be_bytes(a))
    }

    fn length(&mut self, what: &'static str, value: i64) -> Result<usize, LogFileError> {
        usize::try_from(value).map_err(|_| self.corrupt(format!("negative {what} {value}")))
    }

    fn map(&mut self, what: &'static str) -> Result<Header, LogFileError> {
        let count = self.i32(what)?;
        let count = self.length(what, i64::from(count))?;
        let mut map = Header::new();
        for _ in 0..count {
            let ordinal = self.i32(what)?;
            let key = HeaderKey::from_ordinal(ordinal).ok_or(LogFileError::UnknownHeaderKey {
                file: self.file.to_string(),
                offset: self.start,
                ordinal,
            })?;
            let len = self.i32(what)?;
            let len = self.length(what, i64::from(len))?;
            let value = self.take(len, what)?;
            let value = std::str::from_utf8(value)
                .map_err(|e| self.corrupt(format!("{what} value of {key:?} is not UTF-8: {e}")))?;
            if map.insert(key, value.to_string()).is_some() {
                return Err(self.corrupt(format!("{what} repeats {key:?}")));
            }
        }
        Ok(map)
    }
}

/// Frames every block of a whole log file, in order. `file` names the file in errors.
pub fn read_blocks<'a>(file: &str, bytes: &'a [u8]) -> Result<Vec<RawBlock<'a>>, LogFileError> {
    let mut blocks = Vec::new();
    let mut pos = 0;
    while pos < bytes.len() {
        let (block, next) = read_block(file, bytes, pos)?;
        blocks.push(block);
        pos = next;
    }
    Ok(blocks)
}

/// Frames the block starting at `start`; returns it and the offset after it.
fn read_block<'a>(
    file: &str,
    bytes: &'a [u8],
    start: usize,
) -> Result<(RawBlock<'a>, usize), LogFileError> {
    let mut f = Frame {
        file,
        bytes,
        start,
        pos: start,
        end: bytes.len(),
    };
    let magic = f.take(MAGIC.len(), "the magic")?;
    if magic != MAGIC {
        return Err(LogFileError::BadMagic {
            file: file.to_string(),
            offset: start,
            found: magic.to_vec(),
        });
    }
    let size = f.i64("the block size")?;
    let size = f.length("block size", size)?;
    let after_size = f.pos;
    let end = after_size
        .checked_add(size)
        .ok_or_else(|| f.corrupt(format!("block size {size} overflows")))?;
    if end > bytes.len() {
        return Err(f.truncated("the block (its size runs past the end of the file)"));
    }
    f.end = end;
    let version = f.i32("the log format version")?;
    if version != LOG_FORMAT_VERSION {
        return Err(LogFileError::UnsupportedFormatVersion {
            file: file.to_string(),
            offset: start,
            version,
        });
    }
    let type_ordinal = f.i32("the block type")?;
    let block_type =
        BlockType::from_ordinal(type_ordinal).ok_or(LogFileError::UnknownBlockType {
            file: file.to_string(),
            offset: start,
            value: type_ordinal,
        })?;
    let header = f.map("the header")?;
    let content_len = f.i64("the content length")?;
    let content_len = f.length("content length", content_len)?;
    let content = f.take(content_len, "the content")?;
    let footer = f.map("the footer")?;
    let trailer_at = f.pos;
    let trailer = f.i64("the trailer")?;
    if f.pos != end {
        return Err(f.corrupt(format!(
            "block size {size} says the block ends at {end}, its fields end at {}",
            f.pos
        )));
    }
    let expected = trailer_at - start;
    if usize::try_from(trailer).ok() != Some(expected) {
        return Err(f.corrupt(format!(
            "trailer {trailer} is not the block length {expected}"
        )));
    }
    Ok((
        RawBlock {
            offset: start,
            block_type,
            header,
            content,
            footer,
        },
        end,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spark's rollback block (`valid_log_rollback`, 105 bytes), spelled out field by field.
    fn spark_rollback() -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(b"#HUDI#");
        b.extend_from_slice(&91i64.to_be_bytes());
        b.extend_from_slice(&1i32.to_be_bytes());
        b.extend_from_slice(&0i32.to_be_bytes());
        b.extend_from_slice(&3i32.to_be_bytes());
        for (k, v) in [
            (0i32, "20250126040936578"),
            (3, "0"),
            (1, "20250126040826878"),
        ] {
            b.extend_from_slice(&k.to_be_bytes());
            b.extend_from_slice(&(v.len() as i32).to_be_bytes());
            b.extend_from_slice(v.as_bytes());
        }
        b.extend_from_slice(&0i64.to_be_bytes());
        b.extend_from_slice(&0i32.to_be_bytes());
        b.extend_from_slice(&97i64.to_be_bytes());
        b
    }

    #[test]
    fn encode_matches_the_spark_layout_and_reads_back() {
        let ours = encode_block(
            BlockType::Command,
            &[
                (HeaderKey::InstantTime, "20250126040936578"),
                (HeaderKey::CommandBlockType, "0"),
                (HeaderKey::TargetInstantTime, "20250126040826878"),
            ],
            &[],
        );
        assert_eq!(ours, spark_rollback());
        assert_eq!(ours.len(), 105);
        let blocks = read_blocks("f", &ours).expect("read");
        assert_eq!(blocks.len(), 1);
        assert_eq!(blocks[0].block_type, BlockType::Command);
        assert_eq!(
            blocks[0].header[&HeaderKey::TargetInstantTime],
            "20250126040826878"
        );
        assert!(blocks[0].content.is_empty() && blocks[0].footer.is_empty());
    }

    #[test]
    fn several_blocks_are_framed_in_order() {
        let mut file = encode_block(
            BlockType::AvroData,
            &[(HeaderKey::InstantTime, "1")],
            b"abc",
        );
        let second_at = file.len();
        file.extend(encode_block(BlockType::Delete, &[], b"xyz!"));
        let blocks = read_blocks("f", &file).expect("read");
        assert_eq!(blocks.len(), 2);
        assert_eq!((blocks[0].offset, blocks[0].content), (0, &b"abc"[..]));
        assert_eq!(
            (blocks[1].offset, blocks[1].content),
            (second_at, &b"xyz!"[..])
        );
        assert_eq!(blocks[1].block_type, BlockType::Delete);
    }

    #[test]
    fn damage_is_reported_with_file_and_offset() {
        let good = spark_rollback();
        // Truncated anywhere: a Truncated error, never a panic.
        for cut in 1..good.len() {
            match read_blocks("x.log", &good[..cut]) {
                Err(LogFileError::Truncated {
                    file, offset: 0, ..
                }) => assert_eq!(file, "x.log"),
                other => panic!("cut at {cut}: {other:?}"),
            }
        }
        let mut bad_trailer = good.clone();
        let n = bad_trailer.len();
        bad_trailer[n - 1] = 0x62;
        assert!(matches!(
            read_blocks("f", &bad_trailer),
            Err(LogFileError::Corrupt { .. })
        ));
        let mut bad_magic = good.clone();
        bad_magic[0] = b'X';
        assert!(matches!(
            read_blocks("f", &bad_magic),
            Err(LogFileError::BadMagic { .. })
        ));
        let mut bad_version = good.clone();
        bad_version[17] = 2;
        assert!(matches!(
            read_blocks("f", &bad_version),
            Err(LogFileError::UnsupportedFormatVersion { version: 2, .. })
        ));
        let mut bad_type = good.clone();
        bad_type[21] = 9;
        assert!(matches!(
            read_blocks("f", &bad_type),
            Err(LogFileError::UnknownBlockType { value: 9, .. })
        ));
        let mut bad_key = good.clone();
        bad_key[29] = 42;
        assert!(matches!(
            read_blocks("f", &bad_key),
            Err(LogFileError::UnknownHeaderKey { ordinal: 42, .. })
        ));
        // A second block that is damaged names its own offset.
        let mut two = good.clone();
        two.extend_from_slice(&good[..50]);
        assert!(matches!(
            read_blocks("f", &two),
            Err(LogFileError::Truncated { offset: 105, .. })
        ));
    }

    #[test]
    fn mutated_bytes_never_panic() {
        let mut file = spark_rollback();
        file.extend(encode_block(
            BlockType::AvroData,
            &[
                (HeaderKey::InstantTime, "20250126040936578"),
                (HeaderKey::Schema, "{}"),
            ],
            &[0, 0, 0, 3, 0, 0, 0, 0],
        ));
        // Deterministic pseudo-random mutations: every byte set to a few values, and random multi-byte hits.
        for i in 0..file.len() {
            for v in [0x00, 0x01, 0x7f, 0x80, 0xff] {
                let mut m = file.clone();
                m[i] = v;
                let _ = read_blocks("f", &m);
            }
        }
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..5000 {
            let mut m = file.clone();
            for _ in 0..4 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let at = (seed as usize) % m.len();
                m[at] = (seed >> 32) as u8;
            }
            let _ = read_blocks("f", &m);
        }
    }
}
