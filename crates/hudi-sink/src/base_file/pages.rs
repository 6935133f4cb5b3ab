//! Reading base files without a zstd context per column chunk.
//!
//! The Parquet crate builds a codec for every column chunk it reads, and its zstd codec creates a compression
//! *and* a decompression context each time. Creating a context asks the CPU for its features (`cpuid`), which
//! leaves the virtual machine on Lambda and Firecracker: for the small files clustering and merges read (tens
//! of columns, hundreds of rows) that was the largest single cost of reading them. Here every zstd column chunk
//! is opened as if uncompressed (so the crate builds no codec) and its pages are decompressed with one context
//! per thread, reused across chunks and files. Other codecs go through the crate's own page reader unchanged.

use std::cell::RefCell;
use std::sync::Arc;

use bytes::Bytes;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ParquetRecordBatchReader, RowGroups};
use parquet::arrow::{parquet_to_arrow_field_levels, ProjectionMask};
use parquet::basic::Compression;
use parquet::column::page::{Page, PageIterator, PageMetadata, PageReader};
use parquet::errors::{ParquetError, Result};
use parquet::file::metadata::{ColumnChunkMetaData, ParquetMetaData, RowGroupMetaData};
use parquet::file::serialized_reader::SerializedPageReader;

/// Largest page size taken from a frame header for a one-shot decompression; a larger claim (or none) is
/// decompressed as a stream, which grows its buffer only as bytes come out.
const MAX_CLAIMED_PAGE_BYTES: u64 = 256 * 1024 * 1024;

thread_local! {
    /// The thread's zstd decompression context, created on first use.
    static DECOMPRESSOR: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
}

fn zstd_err(what: &str, e: std::io::Error) -> ParquetError {
    ParquetError::External(format!("zstd {what}: {e}").into())
}

/// The bytes of the zstd frames in `compressed`.
fn decompress(compressed: &[u8]) -> Result<Vec<u8>> {
    if compressed.is_empty() {
        return Ok(Vec::new());
    }
    if let Ok(Some(size)) = zstd::zstd_safe::get_frame_content_size(compressed) {
        if size <= MAX_CLAIMED_PAGE_BYTES {
            let capacity = usize::try_from(size).unwrap_or(usize::MAX);
            let one_shot = DECOMPRESSOR.with(|cell| -> Result<Option<Vec<u8>>> {
                let mut cell = cell.borrow_mut();
                let decompressor = match cell.as_mut() {
                    Some(d) => d,
                    None => cell.insert(
                        zstd::bulk::Decompressor::new()
                            .map_err(|e| zstd_err("decompression context", e))?,
                    ),
                };
                Ok(decompressor.decompress(compressed, capacity).ok())
            })?;
            // A page of several frames (the header names the first one's size) fails here and is
            // decompressed as a stream below.
            if let Some(bytes) = one_shot {
                if bytes.len() as u64 == size {
                    return Ok(bytes);
                }
            }
        }
    }
    zstd::stream::decode_all(compressed).map_err(|e| zstd_err("page", e))
}

/// `page` with its compressed part decompressed.
fn decompress_page(mut page: Page) -> Result<Page> {
    match &mut page {
        Page::DataPage { buf, .. } | Page::DictionaryPage { buf, .. } => {
            *buf = Bytes::from(decompress(buf)?);
        }
        Page::DataPageV2 {
            buf,
            def_levels_byte_len,
            rep_levels_byte_len,
            is_compressed: true,
            ..
        } => {
            // The levels come first and are never compressed.
            let levels = usize::try_from(*def_levels_byte_len)
                .ok()
                .zip(usize::try_from(*rep_levels_byte_len).ok())
                .and_then(|(d, r)| d.checked_add(r))
                .filter(|n| *n <= buf.len())
                .ok_or_else(|| {
                    ParquetError::General(format!(
                        "data page v2 levels ({def_levels_byte_len} + {rep_levels_byte_len} bytes) \
                         exceed its {} bytes",
                        buf.len()
                    ))
                })?;
            let mut out = buf[..levels].to_vec();
            out.extend_from_slice(&decompress(&buf[levels..])?);
            *buf = Bytes::from(out);
        }
        Page::DataPageV2 { .. } => {}
    }
    Ok(page)
}

/// The pages of a zstd column chunk, read as stored and decompressed here.
struct ZstdPages {
    inner: SerializedPageReader<Bytes>,
}

impl Iterator for ZstdPages {
    type Item = Result<Page>;

    fn next(&mut self) -> Option<Self::Item> {
        self.get_next_page().transpose()
    }
}

impl PageReader for ZstdPages {
    fn get_next_page(&mut self) -> Result<Option<Page>> {
        self.inner.get_next_page()?.map(decompress_page).transpose()
    }

    fn peek_next_page(&mut self) -> Result<Option<PageMetadata>> {
        self.inner.peek_next_page()
    }

    fn skip_next_page(&mut self) -> Result<()> {
        self.inner.skip_next_page()
    }

    fn at_record_boundary(&mut self) -> Result<bool> {
        self.inner.at_record_boundary()
    }
}

/// The page reader of `column` (of a row group of `rows` rows) in the file `data`.
fn page_reader(
    data: &Arc<Bytes>,
    column: &ColumnChunkMetaData,
    rows: usize,
) -> Result<Box<dyn PageReader>> {
    if matches!(column.compression(), Compression::ZSTD(_)) {
        let stored = column
            .clone()
            .into_builder()
            .set_compression(Compression::UNCOMPRESSED)
            .build()?;
        let inner = SerializedPageReader::new(data.clone(), &stored, rows, None)?;
        return Ok(Box::new(ZstdPages { inner }));
    }
    Ok(Box::new(SerializedPageReader::new(
        data.clone(),
        column,
        rows,
        None,
    )?))
}

/// One column's page readers, one per row group.
struct ColumnPages(std::vec::IntoIter<Result<Box<dyn PageReader>>>);

impl Iterator for ColumnPages {
    type Item = Result<Box<dyn PageReader>>;

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next()
    }
}

impl PageIterator for ColumnPages {}

/// Every row group of a file held in memory.
struct FileRowGroups {
    data: Arc<Bytes>,
    metadata: Arc<ParquetMetaData>,
}

impl RowGroups for FileRowGroups {
    fn num_rows(&self) -> usize {
        self.metadata
            .row_groups()
            .iter()
            .map(|rg| usize::try_from(rg.num_rows()).unwrap_or(0))
            .sum()
    }

    fn column_chunks(&self, i: usize) -> Result<Box<dyn PageIterator>> {
        let readers: Vec<_> = self
            .metadata
            .row_groups()
            .iter()
            .map(|rg| {
                let rows = usize::try_from(rg.num_rows()).unwrap_or(0);
                page_reader(&self.data, rg.column(i), rows)
            })
            .collect();
        Ok(Box::new(ColumnPages(readers.into_iter())))
    }

    fn row_groups(&self) -> Box<dyn Iterator<Item = &RowGroupMetaData> + '_> {
        Box::new(self.metadata.row_groups().iter())
    }

    fn metadata(&self) -> &ParquetMetaData {
        &self.metadata
    }
}

/// A reader of every row and column of the file `data` (whose decoded footer and Arrow schema are
/// `metadata`), `batch_size` rows at a time; the same batches as the crate's own reader gives.
pub(crate) fn read_batches(
    data: Bytes,
    metadata: &ArrowReaderMetadata,
    batch_size: usize,
) -> Result<ParquetRecordBatchReader> {
    let parquet = metadata.metadata().clone();
    let levels = parquet_to_arrow_field_levels(
        parquet.file_metadata().schema_descr(),
        ProjectionMask::all(),
        Some(metadata.schema().fields()),
    )?;
    let row_groups = FileRowGroups {
        data: Arc::new(data),
        metadata: parquet,
    };
    ParquetRecordBatchReader::try_new_with_row_groups(&levels, &row_groups, batch_size, None)
}

#[cfg(test)]
#[path = "pages_tests.rs"]
mod tests;
