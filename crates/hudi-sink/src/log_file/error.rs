//! Failures reading and writing log files: [`LogFileError`] for a whole file (with its name and the block's
//! byte offset), [`ContentError`] for one block's content (offsets relative to the content).

use thiserror::Error;

use super::block::{BlockType, HeaderKey};
use crate::avro::arrow::DatumError;
use crate::base_file::BaseFileError;
use crate::schema::SchemaError;
use crate::table::instant::InstantError;

/// Why a log file could not be read or written.
#[derive(Debug, Error)]
pub enum LogFileError {
    /// The file ends inside a block.
    #[error("log file {file}: truncated in the block at offset {offset} while reading {what}")]
    Truncated {
        file: String,
        offset: usize,
        what: &'static str,
    },
    /// A block does not start with `#HUDI#`.
    #[error("log file {file}: no #HUDI# magic at offset {offset} (found {found:02x?})")]
    BadMagic {
        file: String,
        offset: usize,
        found: Vec<u8>,
    },
    /// The framing is inconsistent (sizes disagree, trailer wrong, bad UTF-8 in a header).
    #[error("log file {file}: corrupt block at offset {offset}: {reason}")]
    Corrupt {
        file: String,
        offset: usize,
        reason: String,
    },
    /// A log format version other than 1.
    #[error("log file {file}: block at offset {offset} has log format version {version}, only 1 is supported")]
    UnsupportedFormatVersion {
        file: String,
        offset: usize,
        version: i32,
    },
    /// A block type ordinal outside Hudi's enum.
    #[error("log file {file}: block at offset {offset} has unknown block type {value}")]
    UnknownBlockType {
        file: String,
        offset: usize,
        value: i32,
    },
    /// A block type this reader does not decode (HFile, CDC, corrupt), rather than skipping its records.
    #[error("log file {file}: block at offset {offset} is a {block_type:?} block, which is not supported")]
    UnsupportedBlockType {
        file: String,
        offset: usize,
        block_type: BlockType,
    },
    /// A header or footer key ordinal outside Hudi's enum.
    #[error("log file {file}: block at offset {offset} has unknown header key ordinal {ordinal}")]
    UnknownHeaderKey {
        file: String,
        offset: usize,
        ordinal: i32,
    },
    /// A header key the block type needs is absent.
    #[error("log file {file}: {block_type:?} block at offset {offset} has no {key:?} header")]
    MissingHeader {
        file: String,
        offset: usize,
        block_type: BlockType,
        key: HeaderKey,
    },
    /// An instant-time header that is not an instant time.
    #[error("log file {file}: block at offset {offset}: {key:?} header: {source}")]
    InvalidInstant {
        file: String,
        offset: usize,
        key: HeaderKey,
        #[source]
        source: InstantError,
    },
    /// A command block whose COMMAND_BLOCK_TYPE is not the rollback command `"0"`.
    #[error("log file {file}: command block at offset {offset} has command type {value:?}; only rollback (\"0\") exists")]
    UnknownCommand {
        file: String,
        offset: usize,
        value: String,
    },
    /// The header SCHEMA is not a usable Avro schema.
    #[error("log file {file}: block at offset {offset}: header schema: {source}")]
    HeaderSchema {
        file: String,
        offset: usize,
        #[source]
        source: SchemaError,
    },
    /// A block's content does not decode.
    #[error("log file {file}: {block_type:?} block at offset {offset}: {source}")]
    Content {
        file: String,
        offset: usize,
        block_type: BlockType,
        #[source]
        source: ContentError,
    },
    /// Encoding a new block failed.
    #[error("encoding a {block_type:?} block: {source}")]
    Encode {
        block_type: BlockType,
        #[source]
        source: ContentError,
    },
    /// A writer with nothing to write.
    #[error("a log file needs a data block or a delete block")]
    Empty,
}

/// Why one block's content could not be encoded or decoded. Offsets count from the content's first byte;
/// `path` locates a value as `$.field`, `[i]` (array item), `{"key"}` (map value).
#[derive(Debug, Error)]
pub enum ContentError {
    /// The content ends inside `what`.
    #[error("truncated at content offset {offset} while reading {what}")]
    Truncated { offset: usize, what: String },
    /// The bytes cannot be what the schema says.
    #[error("corrupt at content offset {offset}: {reason}")]
    Corrupt { offset: usize, reason: String },
    /// A content version this reader does not know (Avro and delete blocks are version 3 since Hudi 0.x;
    /// delete versions 1 and 2 are Kryo-serialised Java objects).
    #[error("block content version {found}, expected {expected}")]
    UnsupportedVersion { found: i32, expected: i32 },
    /// The schema cannot be mapped (Avro → Arrow) or is not a record.
    #[error("schema: {0}")]
    Schema(#[from] SchemaError),
    /// A column does not hold what the Avro schema says at `path`.
    #[error("value at {path}: {reason}")]
    Mismatch { path: String, reason: String },
    /// Building the Arrow arrays failed.
    #[error("arrow: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
    /// A Parquet data block does not decode.
    #[error("parquet content: {0}")]
    Parquet(#[from] BaseFileError),
    /// Nesting deeper than [`crate::avro::arrow::MAX_DEPTH`] (a recursive schema or hostile bytes).
    #[error("value at {path} nests deeper than {limit} levels")]
    TooDeep { path: String, limit: usize },
}

/// A datum's failure is its content's, offset for offset (the datum codec counts from the content's start).
impl From<DatumError> for ContentError {
    fn from(e: DatumError) -> Self {
        match e {
            DatumError::Truncated { offset, what } => ContentError::Truncated { offset, what },
            DatumError::Corrupt { offset, reason } => ContentError::Corrupt { offset, reason },
            DatumError::Schema(e) => ContentError::Schema(e),
            DatumError::Mismatch { path, reason } => ContentError::Mismatch { path, reason },
            DatumError::Arrow(e) => ContentError::Arrow(e),
            DatumError::TooDeep { path, limit } => ContentError::TooDeep { path, limit },
        }
    }
}
