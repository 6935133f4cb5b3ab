//! The slice merger: a file slice's base file streamed row group by row group, with the folded log
//! records ([`super::scan`]) merged in, as a snapshot reader (and later a compaction) produces it.
//!
//! ```text
//!  base file ── row group 0 ──► batch ─┐      for each base row with key k:
//!            ── row group 1 ──► batch ─┤        no log version of k      → the base row
//!            ── …                      │        log upsert that wins     → the log row
//!                                      │        log delete that wins     → dropped
//!  LogRecords { k → version } ─────────┤        log version that loses   → the base row
//!                                      ▼
//!                          output batches (file schema: meta columns + data)
//!                          then the log-only upserts (inserts), in log order
//! ```
//!
//! A log version wins against the base row under the table's [`MergeMode`]: commit time always; event time
//! when its ordering value is at least the base row's (ties go to the log, which is later), and always for a
//! commit-time delete. Rows keep their own `_hoodie_commit_time` and `_hoodie_commit_seqno` (a log row
//! keeps the `_hoodie_file_name` it was written with, the file id). Memory: one decoded base batch plus the
//! log records.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{new_null_array, Array, RecordBatch};
use arrow_schema::SchemaRef;
use arrow_select::interleave::interleave;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader,
    ParquetRecordBatchReaderBuilder,
};
use parquet::file::reader::ChunkReader;

use super::scan::{newer_wins, LogRecords, LogVersion, MergeError, MergeMode, OrderingKey};
use crate::base_file::BaseFileError;
use crate::schema::meta::RECORD_KEY_COL;

/// Rows per decoded base batch, and per batch of appended inserts.
pub const MERGE_BATCH_ROWS: usize = 8192;

fn records_error(reason: impl Into<String>) -> MergeError {
    MergeError::Records {
        reason: reason.into(),
    }
}

fn parquet_error(context: &str, source: parquet::errors::ParquetError) -> MergeError {
    MergeError::Base(BaseFileError::Parquet {
        context: context.into(),
        source,
    })
}

fn arrow_error(context: &str, source: arrow_schema::ArrowError) -> MergeError {
    MergeError::Base(BaseFileError::Arrow {
        context: context.into(),
        source,
    })
}

/// The merged rows of one file slice, as an iterator of batches in the output schema.
pub struct SliceMerger<R: ChunkReader + Clone + 'static> {
    schema: SchemaRef,
    base: Option<BaseStream<R>>,
    log: LogRecords,
    /// The log data batches in the output schema.
    log_batches: Vec<RecordBatch>,
    /// Which log versions a base row has consumed (by position in [`LogRecords::versions`]).
    matched: Vec<bool>,
    /// Next log version to consider for the inserts, once the base is done.
    next_insert: usize,
    /// Base rows read so far, and log-only upserts (inserts) produced so far (for write stats).
    counts: MergeCounts,
}

/// What a [`SliceMerger`] has read and produced so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MergeCounts {
    /// Rows read from the base file.
    pub base_rows: u64,
    /// Log-only upserts (keys the base file does not have) produced.
    pub inserted: u64,
}

/// The base file, opened once and decoded one row group at a time.
struct BaseStream<R: ChunkReader + Clone + 'static> {
    reader: R,
    metadata: ArrowReaderMetadata,
    next_row_group: usize,
    current: Option<ParquetRecordBatchReader>,
}

impl<R: ChunkReader + Clone + 'static> BaseStream<R> {
    fn next_batch(&mut self) -> Option<Result<RecordBatch, MergeError>> {
        loop {
            if let Some(current) = &mut self.current {
                match current.next() {
                    Some(batch) => {
                        return Some(batch.map_err(|e| arrow_error("decode base rows", e)))
                    }
                    None => self.current = None,
                }
            }
            if self.next_row_group >= self.metadata.metadata().num_row_groups() {
                return None;
            }
            let row_group = self.next_row_group;
            self.next_row_group += 1;
            let built = ParquetRecordBatchReaderBuilder::new_with_metadata(
                self.reader.clone(),
                self.metadata.clone(),
            )
            .with_row_groups(vec![row_group])
            .with_batch_size(MERGE_BATCH_ROWS)
            .build();
            match built {
                Ok(reader) => self.current = Some(reader),
                Err(e) => return Some(Err(parquet_error("open a base row group", e))),
            }
        }
    }
}

/// Merges `log` into the base file `base` (`None` for a slice of log files only). The output schema is the
/// base file's, or for a log-only slice the schema of its last data block.
pub fn merge_file_slice<R: ChunkReader + Clone + 'static>(
    base: Option<R>,
    log: LogRecords,
) -> Result<SliceMerger<R>, MergeError> {
    let (schema, base) = match base {
        Some(reader) => {
            let metadata = ArrowReaderMetadata::load(&reader, ArrowReaderOptions::default())
                .map_err(|e| parquet_error("open base file", e))?;
            let schema = metadata.schema().clone();
            let stream = BaseStream {
                reader,
                metadata,
                next_row_group: 0,
                current: None,
            };
            (schema, Some(stream))
        }
        None => match log.batches().last() {
            Some(batch) => (batch.schema(), None),
            None => (Arc::new(arrow_schema::Schema::empty()), None),
        },
    };
    SliceMerger::with_schema(schema, base, log)
}

/// Merges log records into base rows that the caller decodes itself (compaction reads the base file row
/// group by row group with ranged reads): every base batch goes through [`BaseRowMerger::merge`], in file
/// order, then [`BaseRowMerger::into_inserts`] gives the log-only upserts. Same rules as [`SliceMerger`].
pub struct BaseRowMerger {
    inner: SliceMerger<bytes::Bytes>,
}

impl BaseRowMerger {
    /// A merger whose output has `schema` (the base file's).
    pub fn new(schema: SchemaRef, log: LogRecords) -> Result<Self, MergeError> {
        Ok(Self {
            inner: SliceMerger::with_schema(schema, None, log)?,
        })
    }

    /// `batch` of base rows with the log merged in (possibly empty, when every row was deleted).
    pub fn merge(&mut self, batch: &RecordBatch) -> Result<RecordBatch, MergeError> {
        self.inner.merge_base_batch(batch)
    }

    /// The log-only upserts, once every base row has been merged; its [`SliceMerger::counts`] cover the
    /// base rows merged too.
    pub fn into_inserts(self) -> SliceMerger<bytes::Bytes> {
        self.inner
    }
}

impl<R: ChunkReader + Clone + 'static> SliceMerger<R> {
    fn with_schema(
        schema: SchemaRef,
        base: Option<BaseStream<R>>,
        log: LogRecords,
    ) -> Result<Self, MergeError> {
        let log_batches = log
            .batches()
            .iter()
            .map(|b| conform(b, &schema))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(SliceMerger {
            schema,
            base,
            matched: vec![false; log.versions().len()],
            log,
            log_batches,
            next_insert: 0,
            counts: MergeCounts::default(),
        })
    }

    /// The schema of every batch produced.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// Base rows read and inserts produced so far (complete once the iterator is exhausted).
    pub fn counts(&self) -> MergeCounts {
        self.counts
    }

    /// Rows of `batch` (base) with the log merged in.
    fn merge_base_batch(&mut self, batch: &RecordBatch) -> Result<RecordBatch, MergeError> {
        self.counts.base_rows += batch.num_rows() as u64;
        let keys = batch
            .column_by_name(RECORD_KEY_COL)
            .and_then(|c| c.as_string_opt::<i32>())
            .ok_or_else(|| records_error(format!("a base file without {RECORD_KEY_COL}")))?;
        let ordering_col = match self.log.mode() {
            MergeMode::EventTime { ordering_field } => {
                Some(batch.column_by_name(ordering_field).ok_or_else(|| {
                    records_error(format!(
                        "a base file without the ordering column {ordering_field}"
                    ))
                })?)
            }
            MergeMode::CommitTime => None,
        };
        // (source array, row): 0 is the base batch, 1 + i the log batch i.
        let mut picks: Vec<(usize, usize)> = Vec::with_capacity(batch.num_rows());
        for row in 0..batch.num_rows() {
            let found = if keys.is_null(row) {
                None
            } else {
                self.log.get(keys.value(row))
            };
            let Some((slot, version)) = found else {
                picks.push((0, row));
                continue;
            };
            self.matched[slot] = true;
            let base_ordering = match ordering_col {
                Some(col) => OrderingKey::of_row(col, row)?,
                None => OrderingKey::Null,
            };
            if !newer_wins(self.log.mode(), Some(&base_ordering), version) {
                picks.push((0, row));
            } else if let LogVersion::Upsert { batch, row, .. } = version {
                picks.push((1 + batch, *row));
            }
        }
        self.assemble(Some(batch), &picks)
    }

    /// The next batch of log-only upserts.
    fn next_inserts(&mut self) -> Option<Result<RecordBatch, MergeError>> {
        let mut picks = Vec::new();
        let versions = self.log.versions();
        while self.next_insert < versions.len() && picks.len() < MERGE_BATCH_ROWS {
            let slot = self.next_insert;
            self.next_insert += 1;
            if self.matched[slot] {
                continue;
            }
            if let LogVersion::Upsert { batch, row, .. } = &versions[slot].1 {
                picks.push((1 + batch, *row));
            }
        }
        if picks.is_empty() {
            return None;
        }
        self.counts.inserted += picks.len() as u64;
        Some(self.assemble(None, &picks))
    }

    fn assemble(
        &self,
        base: Option<&RecordBatch>,
        picks: &[(usize, usize)],
    ) -> Result<RecordBatch, MergeError> {
        let mut columns = Vec::with_capacity(self.schema.fields().len());
        for col in 0..self.schema.fields().len() {
            let placeholder;
            let base_col: &dyn Array = match base {
                Some(b) => b.column(col).as_ref(),
                None => {
                    placeholder = new_null_array(self.schema.field(col).data_type(), 0);
                    placeholder.as_ref()
                }
            };
            let mut sources: Vec<&dyn Array> = Vec::with_capacity(1 + self.log_batches.len());
            sources.push(base_col);
            sources.extend(self.log_batches.iter().map(|b| b.column(col).as_ref()));
            columns.push(interleave(&sources, picks).map_err(|e| arrow_error("merge rows", e))?);
        }
        RecordBatch::try_new(self.schema.clone(), columns)
            .map_err(|e| arrow_error("assemble merged rows", e))
    }
}

impl<R: ChunkReader + Clone + 'static> Iterator for SliceMerger<R> {
    type Item = Result<RecordBatch, MergeError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let Some(base) = &mut self.base else {
                return self.next_inserts();
            };
            match base.next_batch() {
                None => self.base = None,
                Some(Err(e)) => return Some(Err(e)),
                Some(Ok(batch)) => {
                    let merged = self.merge_base_batch(&batch);
                    match merged {
                        Ok(b) if b.num_rows() == 0 => continue,
                        other => return Some(other),
                    }
                }
            }
        }
    }
}

/// `batch` with the columns of `schema`, by name ([`crate::schema::project::conform`]).
pub fn conform(batch: &RecordBatch, schema: &SchemaRef) -> Result<RecordBatch, MergeError> {
    crate::schema::project::conform(batch, schema)
        .map_err(|reason| records_error(format!("log records in the file schema: {reason}")))
}
