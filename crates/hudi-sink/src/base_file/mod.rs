//! Parquet base files: the bloom filter footer, writing with Hudi's footers, reading back into Arrow.

pub mod bloom;
pub mod codec;
mod pages;
pub mod ranged;
pub mod reader;
pub mod writer;

use thiserror::Error;

use crate::storage::StorageError;

/// Failures writing or reading a base file.
#[derive(Debug, Error)]
pub enum BaseFileError {
    /// The batch does not have the shape of a Hudi base file.
    #[error("base file schema: {reason}")]
    Schema { reason: String },
    /// parquet-rs failed.
    #[error("parquet {context}: {source}")]
    Parquet {
        context: String,
        #[source]
        source: parquet::errors::ParquetError,
    },
    /// arrow-rs failed while decoding.
    #[error("arrow {context}: {source}")]
    Arrow {
        context: String,
        #[source]
        source: arrow_schema::ArrowError,
    },
    /// The footer is malformed.
    #[error("base file footer: {reason}")]
    Footer { reason: String },
    /// Reading from storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// `batch` written as a plain Parquet file with `props` (no Hudi footer): tests' inputs for readers.
#[cfg(test)]
pub(crate) fn parquet_file(
    batch: &arrow_array::RecordBatch,
    props: parquet::file::properties::WriterProperties,
) -> bytes::Bytes {
    let mut out = Vec::new();
    let mut writer = parquet::arrow::ArrowWriter::try_new(&mut out, batch.schema(), Some(props))
        .unwrap_or_else(|e| panic!("{e}"));
    writer.write(batch).unwrap_or_else(|e| panic!("{e}"));
    writer.close().unwrap_or_else(|e| panic!("{e}"));
    bytes::Bytes::from(out)
}
