//! Clustering's fast path: an input base file whose Parquet schema and codec are the ones the table's
//! writer uses has its row groups copied into the output file column chunk by column chunk (the encoded
//! pages are spliced, never decoded), except `_hoodie_file_name`, which is written fresh (every row the new
//! file's name). Only `_hoodie_record_key` is decoded, for the footer: the bloom filter, min/max record key
//! and the other Hudi keys are built by the same code as [`BaseFileWriter`]'s, so that the footer is the one
//! it would write for the same rows.
//!
//! [`BaseFileWriter`]: crate::base_file::writer::BaseFileWriter

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, StringArray};
use bytes::Bytes;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::ProjectionMask;
use parquet::column::writer::ColumnCloseResult;
use parquet::data_type::{ByteArray, ByteArrayType};
use parquet::errors::ParquetError;
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader};
use parquet::file::writer::SerializedFileWriter;

use crate::base_file::writer::{
    bloom_for_keys, footer_key_values, track_keys, writer_properties, BaseFileOptions,
    WrittenBaseFile,
};
use crate::base_file::BaseFileError;
use crate::schema::meta::{FILE_NAME_COL, META_COLUMNS, RECORD_KEY_COL};
use crate::write::{TableSchema, WriteError};

/// Rows per write of the fresh `_hoodie_file_name` column.
const FILE_NAME_CHUNK_ROWS: usize = 8192;

fn parquet_err(context: String) -> impl FnOnce(ParquetError) -> WriteError {
    move |source| WriteError::BaseFile(BaseFileError::Parquet { context, source })
}

/// Leaf index of a meta column (the meta columns come first, each one leaf).
fn meta_index(name: &str) -> Result<usize, WriteError> {
    META_COLUMNS
        .iter()
        .position(|c| *c == name)
        .ok_or_else(|| WriteError::Data {
            reason: format!("{name} is not a meta column"),
        })
}

/// What clustering does with an input base file.
pub(super) enum Inspected {
    /// Its row groups are copied.
    Copy(CopyInput),
    /// It is decoded; its footer.
    Decode(ParquetMetaData),
}

/// An input base file whose row groups can be copied.
pub(super) struct CopyInput {
    data: Bytes,
    metadata: Arc<ParquetMetaData>,
    path: String,
}

impl CopyInput {
    /// `data` (the file at `path`) opened for copying, or `None` when a row group holds fewer than
    /// `min_row_group_bytes`, or its columns, their types or its compression codec differ from what the
    /// table's writer writes (the file is then decoded instead).
    #[cfg(test)]
    pub(super) fn open(
        data: Bytes,
        path: &str,
        schema: &TableSchema,
        options: &BaseFileOptions,
        min_row_group_bytes: u64,
    ) -> Result<Option<Self>, WriteError> {
        Ok(
            match Self::inspect(data, path, schema, options, min_row_group_bytes)? {
                Inspected::Copy(input) => Some(input),
                Inspected::Decode(_) => None,
            },
        )
    }

    /// As [`CopyInput::open`], with the footer of a file that is to be decoded (parsed once for both).
    pub(super) fn inspect(
        data: Bytes,
        path: &str,
        schema: &TableSchema,
        options: &BaseFileOptions,
        min_row_group_bytes: u64,
    ) -> Result<Inspected, WriteError> {
        let metadata = ParquetMetaDataReader::new()
            .with_page_index_policy(PageIndexPolicy::Optional)
            .parse_and_finish(&data)
            .map_err(parquet_err(format!("read footer of {path}")))?;
        let small = metadata
            .row_groups()
            .iter()
            .any(|rg| u64::try_from(rg.compressed_size()).unwrap_or(0) < min_row_group_bytes);
        let stored = metadata.file_metadata().schema_descr().root_schema();
        let codec = options.codec.to_parquet();
        let same_codec = metadata.row_groups().iter().all(|rg| {
            rg.columns()
                .iter()
                .all(|c| std::mem::discriminant(&c.compression()) == std::mem::discriminant(&codec))
        });
        if small || stored.get_fields() != schema.parquet.root_schema().get_fields() || !same_codec
        {
            return Ok(Inspected::Decode(metadata));
        }
        Ok(Inspected::Copy(Self {
            data,
            metadata: Arc::new(metadata),
            path: path.to_string(),
        }))
    }

    /// Row groups in the file.
    pub(super) fn row_groups(&self) -> usize {
        self.metadata.num_row_groups()
    }

    /// Rows of row group `rg`.
    pub(super) fn row_group_rows(&self, rg: usize) -> u64 {
        self.metadata
            .row_groups()
            .get(rg)
            .map_or(0, |g| u64::try_from(g.num_rows()).unwrap_or(0))
    }

    /// Encoded bytes of row group `rg`.
    pub(super) fn row_group_bytes(&self, rg: usize) -> u64 {
        self.metadata
            .row_groups()
            .get(rg)
            .map_or(0, |g| u64::try_from(g.compressed_size()).unwrap_or(0))
    }

    /// The `_hoodie_record_key` values of row group `rg`, in row order (the only column decoded).
    fn record_keys(&self, rg: usize) -> Result<Vec<ArrayRef>, WriteError> {
        let options = ArrowReaderOptions::new().with_skip_arrow_metadata(true);
        let arrow = ArrowReaderMetadata::try_new(self.metadata.clone(), options)
            .map_err(parquet_err(format!("read schema of {}", self.path)))?;
        let mask = ProjectionMask::leaves(
            self.metadata.file_metadata().schema_descr(),
            [meta_index(RECORD_KEY_COL)?],
        );
        let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(self.data.clone(), arrow)
            .with_projection(mask)
            .with_row_groups(vec![rg])
            .with_batch_size(FILE_NAME_CHUNK_ROWS)
            .build()
            .map_err(parquet_err(format!("read record keys of {}", self.path)))?;
        let mut keys = Vec::new();
        for batch in reader {
            let batch = batch.map_err(|source| WriteError::Arrow {
                context: "read record keys",
                source,
            })?;
            keys.push(batch.column(0).clone());
        }
        Ok(keys)
    }
}

/// An output base file filled with copied row groups.
pub(super) struct CopyFile {
    writer: SerializedFileWriter<Vec<u8>>,
    file_name: ByteArray,
    options: BaseFileOptions,
    avro_schema_json: String,
    keys: Vec<ArrayRef>,
    min_key: Option<String>,
    max_key: Option<String>,
    num_rows: u64,
}

impl CopyFile {
    /// An empty file named `file_name` of the table's schema, encoded as the table's writer encodes.
    pub(super) fn try_new(
        schema: &TableSchema,
        options: &BaseFileOptions,
        file_name: &str,
    ) -> Result<Self, WriteError> {
        let props = Arc::new(writer_properties(options));
        let writer = SerializedFileWriter::new(Vec::new(), schema.parquet.root_schema_ptr(), props)
            .map_err(parquet_err(format!("create {file_name}")))?;
        Ok(Self {
            writer,
            file_name: ByteArray::from(file_name.as_bytes().to_vec()),
            options: options.clone(),
            avro_schema_json: schema.avro_with_meta_json.clone(),
            keys: Vec::new(),
            min_key: None,
            max_key: None,
            num_rows: 0,
        })
    }

    /// Rows written so far.
    pub(super) fn num_rows(&self) -> u64 {
        self.num_rows
    }

    /// Bytes written so far (every row group is closed as soon as it is copied).
    pub(super) fn size(&self) -> u64 {
        self.writer.bytes_written() as u64
    }

    /// Copies row group `rg` of `input` as one row group of this file, with `_hoodie_file_name` rewritten.
    pub(super) fn append_row_group(
        &mut self,
        input: &CopyInput,
        rg: usize,
    ) -> Result<(), WriteError> {
        let group = input
            .metadata
            .row_groups()
            .get(rg)
            .ok_or_else(|| WriteError::Data {
                reason: format!("{} has no row group {rg}", input.path),
            })?;
        let rows = usize::try_from(group.num_rows()).map_err(|_| WriteError::Data {
            reason: format!("{} row group {rg}: {} rows", input.path, group.num_rows()),
        })?;
        let keys = input.record_keys(rg)?;
        let mut decoded = 0;
        for column in &keys {
            let strings = column
                .as_any()
                .downcast_ref::<StringArray>()
                .ok_or_else(|| WriteError::Data {
                    reason: format!("{RECORD_KEY_COL} of {} must be a Utf8 column", input.path),
                })?;
            track_keys(strings, &mut self.min_key, &mut self.max_key)?;
            decoded += strings.len();
        }
        if decoded != rows {
            return Err(WriteError::Data {
                reason: format!(
                    "{} row group {rg}: {decoded} record keys for {rows} rows",
                    input.path
                ),
            });
        }
        let file_name_index = meta_index(FILE_NAME_COL)?;
        let context = |what: &str| format!("copy row group {rg} of {}: {what}", input.path);
        let column_indexes = input.metadata.column_index().and_then(|c| c.get(rg));
        let offset_indexes = input.metadata.offset_index().and_then(|o| o.get(rg));
        let mut out = self
            .writer
            .next_row_group()
            .map_err(parquet_err(context("start row group")))?;
        for (i, column) in group.columns().iter().enumerate() {
            if i == file_name_index {
                let mut writer = out
                    .next_column()
                    .map_err(parquet_err(context(FILE_NAME_COL)))?
                    .ok_or_else(|| WriteError::Data {
                        reason: context("the output has too few columns"),
                    })?;
                let max_def = writer
                    .typed::<ByteArrayType>()
                    .get_descriptor()
                    .max_def_level();
                let mut left = rows;
                while left > 0 {
                    let n = left.min(FILE_NAME_CHUNK_ROWS);
                    let values = vec![self.file_name.clone(); n];
                    let levels = (max_def > 0).then(|| vec![max_def; n]);
                    writer
                        .typed::<ByteArrayType>()
                        .write_batch(&values, levels.as_deref(), None)
                        .map_err(parquet_err(context(FILE_NAME_COL)))?;
                    left -= n;
                }
                writer
                    .close()
                    .map_err(parquet_err(context(FILE_NAME_COL)))?;
                continue;
            }
            let close = ColumnCloseResult {
                bytes_written: u64::try_from(column.compressed_size()).unwrap_or(0),
                rows_written: rows as u64,
                metadata: column.clone(),
                bloom_filter: None,
                column_index: column_indexes.and_then(|c| c.get(i)).cloned(),
                offset_index: offset_indexes.and_then(|o| o.get(i)).cloned(),
            };
            out.append_column(&input.data, close)
                .map_err(parquet_err(context(column.column_path().string().as_str())))?;
        }
        out.close()
            .map_err(parquet_err(context("close row group")))?;
        self.keys.extend(keys);
        self.num_rows += rows as u64;
        Ok(())
    }

    /// Adds the Hudi footer keys (those `BaseFileWriter` writes for the same rows) and closes the file.
    pub(super) fn finish(mut self) -> Result<WrittenBaseFile, WriteError> {
        let bloom = bloom_for_keys(&self.options.bloom, self.num_rows, &self.keys)?;
        let kv = footer_key_values(
            std::mem::take(&mut self.avro_schema_json),
            &bloom,
            self.min_key.as_deref(),
            self.max_key.as_deref(),
        );
        for kv in kv {
            self.writer.append_key_value_metadata(kv);
        }
        let data = self
            .writer
            .into_inner()
            .map_err(parquet_err("close clustered file".to_string()))?;
        Ok(WrittenBaseFile {
            data: Bytes::from(data),
            num_rows: self.num_rows,
            min_record_key: self.min_key,
            max_record_key: self.max_key,
        })
    }
}

#[cfg(test)]
#[path = "copy_tests.rs"]
mod tests;
