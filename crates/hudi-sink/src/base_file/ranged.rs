//! A stored base file decoded one row group at a time with ranged reads, so that a rewrite (compaction)
//! holds one row group's bytes instead of the whole file.
//!
//! [`RangedBaseFile::open`] reads the footer (two ranged reads of the tail); [`RangedBaseFile::row_group`]
//! fetches the byte span of one row group's column chunks with one ranged read and decodes it in batches.
//! Invariant: a decoder only ever reads inside the span fetched for its row group; a footer whose column
//! chunks point elsewhere (outside the file, negative offsets) is an error, never a panic or a wider read.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use bytes::{Buf, Bytes};
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::errors::ParquetError;
use parquet::file::reader::{ChunkReader, Length};

use super::reader::read_metadata_from_storage;
use super::BaseFileError;
use crate::storage::Storage;

/// The bytes of one row group: the span `offset..offset + data.len()` of a file of `file_len` bytes.
#[derive(Debug, Clone)]
struct RowGroupBytes {
    offset: u64,
    data: Bytes,
    file_len: u64,
}

impl RowGroupBytes {
    fn slice(&self, start: u64, len: Option<usize>) -> parquet::errors::Result<Bytes> {
        let outside = || {
            ParquetError::General(format!(
                "read at {start} outside the fetched row group span {}..{}",
                self.offset,
                self.offset + self.data.len() as u64
            ))
        };
        let from = start
            .checked_sub(self.offset)
            .and_then(|d| usize::try_from(d).ok())
            .filter(|d| *d <= self.data.len())
            .ok_or_else(outside)?;
        let to = match len {
            Some(n) => from
                .checked_add(n)
                .filter(|t| *t <= self.data.len())
                .ok_or_else(outside)?,
            None => self.data.len(),
        };
        Ok(self.data.slice(from..to))
    }
}

impl Length for RowGroupBytes {
    fn len(&self) -> u64 {
        self.file_len
    }
}

impl ChunkReader for RowGroupBytes {
    type T = bytes::buf::Reader<Bytes>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        Ok(self.slice(start, None)?.reader())
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        self.slice(start, Some(length))
    }
}

/// A stored base file whose footer has been read.
#[derive(Debug, Clone)]
pub struct RangedBaseFile {
    path: String,
    size: u64,
    metadata: ArrowReaderMetadata,
}

impl RangedBaseFile {
    /// Reads the footer of the `size`-byte file at `path`.
    pub async fn open(storage: &dyn Storage, path: &str, size: u64) -> Result<Self, BaseFileError> {
        let meta = read_metadata_from_storage(storage, path, size).await?;
        let metadata = ArrowReaderMetadata::try_new(Arc::new(meta), ArrowReaderOptions::default())
            .map_err(|source| BaseFileError::Parquet {
                context: format!("schema of {path}"),
                source,
            })?;
        Ok(Self {
            path: path.to_string(),
            size,
            metadata,
        })
    }

    /// The file's Arrow schema.
    pub fn schema(&self) -> SchemaRef {
        self.metadata.schema().clone()
    }

    /// Row groups in the file.
    pub fn num_row_groups(&self) -> usize {
        self.metadata.metadata().num_row_groups()
    }

    /// Rows in the file (from the footer).
    pub fn num_rows(&self) -> u64 {
        u64::try_from(self.metadata.metadata().file_metadata().num_rows()).unwrap_or(0)
    }

    /// The byte span of row group `index`'s column chunks, checked against the file size.
    fn span(&self, index: usize) -> Result<Range<u64>, BaseFileError> {
        let bad = |reason: String| BaseFileError::Footer {
            reason: format!("{}: row group {index}: {reason}", self.path),
        };
        let row_group = self
            .metadata
            .metadata()
            .row_groups()
            .get(index)
            .ok_or_else(|| bad("no such row group".into()))?;
        let mut span: Option<Range<u64>> = None;
        for column in row_group.columns() {
            let data = column.data_page_offset();
            let start = column
                .dictionary_page_offset()
                .map_or(data, |d| d.min(data));
            let start = u64::try_from(start)
                .map_err(|_| bad(format!("negative column chunk offset {start}")))?;
            let len = u64::try_from(column.compressed_size()).map_err(|_| {
                bad(format!(
                    "negative column chunk size {}",
                    column.compressed_size()
                ))
            })?;
            let end = start
                .checked_add(len)
                .filter(|e| *e <= self.size)
                .ok_or_else(|| bad(format!("column chunk {start}+{len} past the file end")))?;
            span = Some(match span {
                None => start..end,
                Some(s) => s.start.min(start)..s.end.max(end),
            });
        }
        Ok(span.unwrap_or(0..0))
    }

    /// Fetches row group `index` with one ranged read and decodes it in batches of at most `batch_rows`.
    pub async fn row_group(
        &self,
        storage: &dyn Storage,
        index: usize,
        batch_rows: usize,
    ) -> Result<impl Iterator<Item = Result<RecordBatch, BaseFileError>>, BaseFileError> {
        let span = self.span(index)?;
        let data = storage.get_range(&self.path, span.clone()).await?;
        let chunk = RowGroupBytes {
            offset: span.start,
            data,
            file_len: self.size,
        };
        let reader =
            ParquetRecordBatchReaderBuilder::new_with_metadata(chunk, self.metadata.clone())
                .with_row_groups(vec![index])
                .with_batch_size(batch_rows.max(1))
                .build()
                .map_err(|source| BaseFileError::Parquet {
                    context: format!("open row group {index} of {}", self.path),
                    source,
                })?;
        Ok(reader.map(|batch| {
            batch.map_err(|source| BaseFileError::Arrow {
                context: "decode base rows".into(),
                source,
            })
        }))
    }
}
