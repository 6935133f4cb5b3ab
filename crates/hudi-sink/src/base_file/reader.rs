//! Reads base files back: whole files into Arrow (to merge upserts) and footers alone (to prune files by
//! bloom filter and key range without reading data).

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use bytes::Bytes;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader,
};
use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader};

use super::bloom::{BloomFilter, BloomFilterType};
use super::writer::{BLOOM_FILTER_KEY, BLOOM_FILTER_TYPE_CODE_KEY, MAX_RECORD_KEY, MIN_RECORD_KEY};
use super::BaseFileError;
use crate::storage::Storage;

/// Rows per decoded batch when reading a base file back.
const READ_BATCH_ROWS: usize = 8192;

/// The footer key/value metadata of a base file and its row count.
#[derive(Debug, Clone, Default)]
pub struct BaseFileFooter {
    /// Every footer key/value pair.
    pub key_values: BTreeMap<String, String>,
    /// Rows in the file.
    pub num_rows: u64,
}

impl BaseFileFooter {
    /// `hoodie_min_record_key`.
    pub fn min_record_key(&self) -> Option<&str> {
        self.key_values.get(MIN_RECORD_KEY).map(String::as_str)
    }

    /// `hoodie_max_record_key`.
    pub fn max_record_key(&self) -> Option<&str> {
        self.key_values.get(MAX_RECORD_KEY).map(String::as_str)
    }

    /// The bloom filter, if the file has one (type from `hoodie_bloom_filter_type_code`, else SIMPLE).
    pub fn bloom_filter(&self) -> Result<Option<BloomFilter>, BaseFileError> {
        let Some(text) = self.key_values.get(BLOOM_FILTER_KEY) else {
            return Ok(None);
        };
        let kind = match self.key_values.get(BLOOM_FILTER_TYPE_CODE_KEY) {
            Some(code) => code
                .parse::<BloomFilterType>()
                .map_err(|e| BaseFileError::Footer {
                    reason: format!("{BLOOM_FILTER_TYPE_CODE_KEY}: {e}"),
                })?,
            None => BloomFilterType::Simple,
        };
        BloomFilter::from_base64(text, kind)
            .map(Some)
            .map_err(|e| BaseFileError::Footer {
                reason: format!("{BLOOM_FILTER_KEY}: {e}"),
            })
    }
}

/// The key/value pairs and row count of decoded Parquet metadata.
fn footer_of(meta: &parquet::file::metadata::ParquetMetaData) -> BaseFileFooter {
    let file = meta.file_metadata();
    let key_values = file
        .key_value_metadata()
        .map(|kvs| {
            kvs.iter()
                .filter_map(|kv| kv.value.as_ref().map(|v| (kv.key.clone(), v.clone())))
                .collect()
        })
        .unwrap_or_default();
    BaseFileFooter {
        key_values,
        num_rows: u64::try_from(file.num_rows()).unwrap_or(0),
    }
}

/// The reader of every row of `data`, [`READ_BATCH_ROWS`] at a time, and its Arrow schema (zstd pages
/// decompressed with a reused context, [`super::pages`]).
fn batch_reader(data: Bytes) -> Result<(SchemaRef, ParquetRecordBatchReader), BaseFileError> {
    let meta = ArrowReaderMetadata::load(&data, ArrowReaderOptions::new()).map_err(|source| {
        BaseFileError::Parquet {
            context: "open file".into(),
            source,
        }
    })?;
    reader_with(data, &meta)
}

fn reader_with(
    data: Bytes,
    meta: &ArrowReaderMetadata,
) -> Result<(SchemaRef, ParquetRecordBatchReader), BaseFileError> {
    let reader = super::pages::read_batches(data, meta, READ_BATCH_ROWS).map_err(|source| {
        BaseFileError::Parquet {
            context: "build reader".into(),
            source,
        }
    })?;
    Ok((meta.schema().clone(), reader))
}

/// Decodes a whole base file into record batches.
pub fn read_base_file(data: Bytes) -> Result<(SchemaRef, Vec<RecordBatch>), BaseFileError> {
    let (schema, reader) = batch_reader(data)?;
    let batches = reader
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| BaseFileError::Arrow {
            context: "decode rows".into(),
            source,
        })?;
    Ok((schema, batches))
}

/// Decodes a base file batch by batch (at most [`READ_BATCH_ROWS`] rows decoded at a time), for rewrites
/// that must not hold a whole decoded file (clustering, which has already parsed its `footer`).
pub fn read_base_file_batches(
    data: Bytes,
    footer: Arc<ParquetMetaData>,
) -> Result<impl Iterator<Item = Result<RecordBatch, BaseFileError>>, BaseFileError> {
    let meta =
        ArrowReaderMetadata::try_new(footer, ArrowReaderOptions::new()).map_err(|source| {
            BaseFileError::Parquet {
                context: "open file".into(),
                source,
            }
        })?;
    let (_, reader) = reader_with(data, &meta)?;
    Ok(reader.map(|batch| {
        batch.map_err(|source| BaseFileError::Arrow {
            context: "decode rows".into(),
            source,
        })
    }))
}

/// Parses the footer of a complete file held in memory.
pub fn read_footer(data: &Bytes) -> Result<BaseFileFooter, BaseFileError> {
    let meta = ParquetMetaDataReader::new()
        .parse_and_finish(data)
        .map_err(|source| BaseFileError::Parquet {
            context: "read footer".into(),
            source,
        })?;
    Ok(footer_of(&meta))
}

/// Reads only the footer of a stored base file with two ranged reads (length trailer, then footer).
pub async fn read_footer_from_storage(
    storage: &dyn Storage,
    path: &str,
    size: u64,
) -> Result<BaseFileFooter, BaseFileError> {
    Ok(footer_of(
        &read_metadata_from_storage(storage, path, size).await?,
    ))
}

/// The decoded Parquet metadata of a stored file of `size` bytes, with two ranged reads (length trailer,
/// then footer).
pub async fn read_metadata_from_storage(
    storage: &dyn Storage,
    path: &str,
    size: u64,
) -> Result<ParquetMetaData, BaseFileError> {
    if size < 12 {
        return Err(BaseFileError::Footer {
            reason: format!("{path}: {size} bytes is too small for a Parquet file"),
        });
    }
    let tail = storage.get_range(path, size - 8..size).await?;
    if tail.len() != 8 || &tail[4..8] != b"PAR1" {
        return Err(BaseFileError::Footer {
            reason: format!("{path}: missing PAR1 magic"),
        });
    }
    let footer_len = u64::from(u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]));
    let start = size
        .checked_sub(8 + footer_len)
        .ok_or_else(|| BaseFileError::Footer {
            reason: format!("{path}: footer length {footer_len} exceeds file size {size}"),
        })?;
    let footer = storage.get_range(path, start..size).await?;
    // The footer bytes end with the 8-byte trailer, which is what the metadata decoder expects.
    let body = footer
        .len()
        .checked_sub(8)
        .and_then(|n| footer.get(..n))
        .ok_or_else(|| BaseFileError::Footer {
            reason: format!("{path}: short footer read"),
        })?;
    ParquetMetaDataReader::decode_metadata(body).map_err(|source| BaseFileError::Parquet {
        context: format!("decode footer of {path}"),
        source,
    })
}
