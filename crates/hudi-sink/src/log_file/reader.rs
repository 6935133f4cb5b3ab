//! Reading a whole log file into typed blocks, in file order: data records as Arrow, deleted keys,
//! rollback commands, each with the instant that wrote it.
//!
//! Which blocks count (committed instants only, rollbacks applied) is the merging reader's business, not
//! this one's: every block is returned. Block types this module cannot decode (HFile, CDC, corrupt) are an
//! error rather than skipped, so that a compaction never silently loses their records.

use arrow_array::RecordBatch;

use super::avro_block::decode_avro_content;
use super::block::{read_blocks, BlockType, HeaderKey, RawBlock};
use super::command_block::ROLLBACK_COMMAND;
use super::delete_block::{decode_delete_content, DeleteRecord};
use super::error::{ContentError, LogFileError};
use super::parquet_block::decode_parquet_content;
use crate::schema::avro::AvroSchema;
use crate::table::instant::InstantTime;

/// How a data block stores its records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataBlockFormat {
    Avro,
    Parquet,
}

/// One decoded block.
#[derive(Debug, Clone, PartialEq)]
pub enum LogBlock {
    /// Records upserted by `instant_time`.
    Data {
        instant_time: InstantTime,
        format: DataBlockFormat,
        /// The header SCHEMA (writer schema, with the meta fields).
        schema: Box<AvroSchema>,
        records: RecordBatch,
    },
    /// Keys deleted by `instant_time`.
    Delete {
        instant_time: InstantTime,
        records: Vec<DeleteRecord>,
    },
    /// `instant_time` rolls back the blocks `target_instant_time` wrote.
    Rollback {
        instant_time: InstantTime,
        target_instant_time: InstantTime,
    },
}

impl LogBlock {
    /// The instant that wrote the block.
    pub fn instant_time(&self) -> &InstantTime {
        match self {
            LogBlock::Data { instant_time, .. }
            | LogBlock::Delete { instant_time, .. }
            | LogBlock::Rollback { instant_time, .. } => instant_time,
        }
    }
}

/// Decodes every block of the log file `bytes`; `file` names it in errors.
pub fn read_log_file(file: &str, bytes: &[u8]) -> Result<Vec<LogBlock>, LogFileError> {
    read_blocks(file, bytes)?
        .iter()
        .map(|raw| decode_block(file, raw))
        .collect()
}

fn decode_block(file: &str, raw: &RawBlock<'_>) -> Result<LogBlock, LogFileError> {
    let header = |key: HeaderKey| {
        raw.header
            .get(&key)
            .map(String::as_str)
            .ok_or(LogFileError::MissingHeader {
                file: file.to_string(),
                offset: raw.offset,
                block_type: raw.block_type,
                key,
            })
    };
    let instant = |key: HeaderKey| {
        InstantTime::parse(header(key)?).map_err(|source| LogFileError::InvalidInstant {
            file: file.to_string(),
            offset: raw.offset,
            key,
            source,
        })
    };
    let content = |source: ContentError| LogFileError::Content {
        file: file.to_string(),
        offset: raw.offset,
        block_type: raw.block_type,
        source,
    };
    let schema = || {
        AvroSchema::parse(header(HeaderKey::Schema)?).map_err(|source| LogFileError::HeaderSchema {
            file: file.to_string(),
            offset: raw.offset,
            source,
        })
    };
    let instant_time = instant(HeaderKey::InstantTime)?;
    Ok(match raw.block_type {
        BlockType::AvroData => {
            let schema = schema()?;
            let records = decode_avro_content(&schema, raw.content).map_err(content)?;
            LogBlock::Data {
                instant_time,
                format: DataBlockFormat::Avro,
                schema: Box::new(schema),
                records,
            }
        }
        BlockType::ParquetData => {
            let schema = schema()?;
            let records = decode_parquet_content(raw.content).map_err(content)?;
            LogBlock::Data {
                instant_time,
                format: DataBlockFormat::Parquet,
                schema: Box::new(schema),
                records,
            }
        }
        BlockType::Delete => LogBlock::Delete {
            instant_time,
            records: decode_delete_content(raw.content).map_err(content)?,
        },
        BlockType::Command => {
            let command = header(HeaderKey::CommandBlockType)?;
            if command != ROLLBACK_COMMAND {
                return Err(LogFileError::UnknownCommand {
                    file: file.to_string(),
                    offset: raw.offset,
                    value: command.to_string(),
                });
            }
            LogBlock::Rollback {
                instant_time,
                target_instant_time: instant(HeaderKey::TargetInstantTime)?,
            }
        }
        BlockType::Corrupt | BlockType::HFileData | BlockType::CdcData => {
            return Err(LogFileError::UnsupportedBlockType {
                file: file.to_string(),
                offset: raw.offset,
                block_type: raw.block_type,
            })
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log_file::block::encode_block;

    #[test]
    fn headers_and_block_types_are_checked() {
        let t = "20250101000000000";
        let no_instant = encode_block(
            BlockType::Command,
            &[(HeaderKey::CommandBlockType, "0")],
            &[],
        );
        assert!(matches!(
            read_log_file("f", &no_instant),
            Err(LogFileError::MissingHeader {
                key: HeaderKey::InstantTime,
                ..
            })
        ));
        let bad_instant = encode_block(
            BlockType::Delete,
            &[(HeaderKey::InstantTime, "yesterday")],
            &[],
        );
        assert!(matches!(
            read_log_file("f", &bad_instant),
            Err(LogFileError::InvalidInstant { .. })
        ));
        let other_command = encode_block(
            BlockType::Command,
            &[
                (HeaderKey::InstantTime, t),
                (HeaderKey::CommandBlockType, "1"),
                (HeaderKey::TargetInstantTime, t),
            ],
            &[],
        );
        assert!(matches!(
            read_log_file("f", &other_command),
            Err(LogFileError::UnknownCommand { .. })
        ));
        let no_schema = encode_block(
            BlockType::AvroData,
            &[(HeaderKey::InstantTime, t)],
            &[0, 0, 0, 3, 0, 0, 0, 0],
        );
        assert!(matches!(
            read_log_file("f", &no_schema),
            Err(LogFileError::MissingHeader {
                key: HeaderKey::Schema,
                ..
            })
        ));
        let bad_schema = encode_block(
            BlockType::AvroData,
            &[(HeaderKey::InstantTime, t), (HeaderKey::Schema, "{")],
            &[0, 0, 0, 3, 0, 0, 0, 0],
        );
        assert!(matches!(
            read_log_file("f", &bad_schema),
            Err(LogFileError::HeaderSchema { .. })
        ));
        for block_type in [BlockType::HFileData, BlockType::CdcData, BlockType::Corrupt] {
            let bytes = encode_block(block_type, &[(HeaderKey::InstantTime, t)], b"x");
            assert!(matches!(
                read_log_file("f", &bytes),
                Err(LogFileError::UnsupportedBlockType { .. })
            ));
        }
        let bad_content = encode_block(
            BlockType::Delete,
            &[(HeaderKey::InstantTime, t)],
            &[0, 0, 0, 2],
        );
        match read_log_file("x.log", &bad_content) {
            Err(e @ LogFileError::Content { .. }) => {
                assert!(
                    e.to_string()
                        .starts_with("log file x.log: Delete block at offset 0"),
                    "{e}"
                )
            }
            other => panic!("{other:?}"),
        }
    }
}
