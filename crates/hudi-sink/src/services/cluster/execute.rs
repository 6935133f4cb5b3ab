//! Execution without the table lock: the input files of each group rewritten into new file groups.
//!
//! Two paths, chosen per input file:
//! - copy: a file whose Parquet columns, types and compression codec are the ones the
//!   table's writer writes has its row groups copied whole into the output (see [`super::copy`]): the
//!   column chunks are spliced as encoded, `_hoodie_file_name` is written fresh, and only
//!   `_hoodie_record_key` is decoded, for the footer (bloom filter, min/max key), which is the one
//!   `BaseFileWriter` writes for the same rows. Outputs are cut between row groups: a row group that would
//!   take a non-empty output past the target size starts the next one.
//!   Only files whose row groups all hold at least `copy_min_row_group_bytes` are copied, so that an output
//!   never keeps many tiny row groups (docs/performance.md, "Inline clustering's cost").
//! - decode: any other file (small row groups, an older schema, another codec, another writer) is
//!   read into Arrow batches, conformed to the table schema and re-encoded by `BaseFileWriter`, with outputs
//!   cut by measured bytes per row. An output writes without a dictionary the columns whose dictionary did not
//!   pay in the input that opened it ([`super::dictionary`]). The input's footer, parsed to choose the path, is
//!   the one its rows are decoded with.
//!
//! A group may mix both: an output file is written by one path only, so a switch closes the open output.
//!
//! Memory: one input file (its bytes and one decoded batch of at most 8192 rows, or one row group's record
//! keys) and one output file (its encoded bytes, built in memory up to the target size, plus the row group
//! being encoded) at a time.

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, StringArray};
use bytes::Bytes;
use parquet::file::metadata::ParquetMetaData;

use super::copy::{CopyFile, CopyInput, Inspected};
use super::ClusteringPlanned;
use crate::base_file::reader::read_base_file_batches;
use crate::base_file::writer::{BaseFileWriter, WrittenBaseFile};
use crate::clock::Clock;
use crate::schema::meta::{FILE_NAME_COL, META_COLUMNS};
use crate::storage::{join_path, Storage};
use crate::table::commit::WriteStat;
use crate::table::file_name::{marker_path, new_file_id, BaseFileName, MarkerType, WriteToken};
use crate::table::instant::InstantTime;
use crate::write::heartbeat::HeartbeatPacer;
use crate::write::{TableWriter, WriteError};

/// Rows of the first write into a new file, which measures the bytes per row.
const FIRST_CHUNK_ROWS: usize = 256;
/// Most rows per write call (the size check runs between calls).
const MAX_CHUNK_ROWS: usize = 4096;
/// Fewest rows per call, so that a nearly full file still makes progress.
const MIN_CHUNK_ROWS: usize = 16;

/// Index of `_hoodie_file_name` among the file columns.
fn file_name_index() -> usize {
    META_COLUMNS
        .iter()
        .position(|c| *c == FILE_NAME_COL)
        .unwrap_or(META_COLUMNS.len() - 1)
}

/// How an output file is being filled.
enum Sink {
    /// Decoded rows re-encoded.
    Decode(BaseFileWriter),
    /// Row groups copied.
    Copy(CopyFile),
}

/// The output file being filled.
struct OpenFile {
    file_id: String,
    file_name: String,
    sink: Sink,
    rows: usize,
}

/// Writes the new files of one instant: names, markers, stats.
struct Output<'a> {
    storage: &'a dyn Storage,
    clock: &'a dyn Clock,
    writer: &'a TableWriter,
    instant: &'a InstantTime,
    target: u64,
    /// Files started so far in this instant (the write token's task number, as the writer numbers them).
    file_index: u64,
    heartbeat: HeartbeatPacer,
    stats: Vec<WriteStat>,
}

impl Output<'_> {
    /// A new output, filled by copying or (`copy` false) by encoding decoded rows, with the `plain` columns
    /// written without a dictionary ([`super::dictionary`]).
    async fn open(
        &mut self,
        partition: &str,
        copy: bool,
        plain: &[String],
    ) -> Result<OpenFile, WriteError> {
        let file_id = new_file_id();
        let token = WriteToken::new(self.file_index, 0, 0);
        let file_name =
            BaseFileName::new_parquet(&file_id, &token, self.instant.clone())?.file_name();
        self.file_index += 1;
        let marker = marker_path(self.instant, partition, &file_name, MarkerType::Create);
        self.storage.put(&marker, Bytes::new()).await?;
        let sink = if copy {
            let schema = self.writer.schema();
            Sink::Copy(CopyFile::try_new(
                &schema,
                &self.writer.config().base_file,
                &file_name,
            )?)
        } else {
            Sink::Decode(self.writer.new_file_writer_plain(plain)?)
        };
        Ok(OpenFile {
            file_id,
            file_name,
            sink,
            rows: 0,
        })
    }

    /// Rows of the next write into `file`: sized from its bytes per row so far, so that it ends close to
    /// the target.
    fn next_chunk(&self, size: u64, rows: usize, available: usize) -> usize {
        let chunk = match size.checked_div(rows as u64) {
            None => FIRST_CHUNK_ROWS,
            Some(per_row) => {
                let room = self.target.saturating_sub(size);
                usize::try_from(room / per_row.max(1))
                    .unwrap_or(MAX_CHUNK_ROWS)
                    .clamp(MIN_CHUNK_ROWS, MAX_CHUNK_ROWS)
            }
        };
        chunk.min(available)
    }

    async fn close(&mut self, partition: &str, file: OpenFile) -> Result<(), WriteError> {
        let written: WrittenBaseFile = match file.sink {
            Sink::Decode(writer) => writer.finish()?,
            Sink::Copy(copy) => copy.finish()?,
        };
        let path = join_path(&[partition, &file.file_name]);
        let size = written.data.len() as i64;
        self.storage.put(&path, written.data).await?;
        let mut stat = WriteStat::new(&file.file_id, partition, &path);
        let rows = i64::try_from(written.num_rows).unwrap_or(i64::MAX);
        stat.num_writes = rows;
        stat.num_inserts = rows;
        stat.total_write_bytes = size;
        stat.file_size_in_bytes = size;
        self.stats.push(stat);
        self.heartbeat
            .beat(self.storage, self.clock, self.instant)
            .await?;
        Ok(())
    }
}

/// `batch` with every `_hoodie_file_name` set to `file_name` (the only meta column clustering changes).
fn with_file_name(batch: &RecordBatch, file_name: &str) -> Result<RecordBatch, WriteError> {
    let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
    let idx = file_name_index();
    columns[idx] = Arc::new(StringArray::from_iter_values(std::iter::repeat_n(
        file_name,
        batch.num_rows(),
    )));
    RecordBatch::try_new(batch.schema(), columns).map_err(|source| WriteError::Arrow {
        context: "set _hoodie_file_name",
        source,
    })
}

/// Copies the row groups of `input` into the open output (or new ones), cutting at the target size.
async fn copy_file(
    out: &mut Output<'_>,
    partition: &str,
    open: &mut Option<OpenFile>,
    input: &CopyInput,
) -> Result<(), WriteError> {
    if let Some(file) = open.take_if(|f| !matches!(f.sink, Sink::Copy(_))) {
        out.close(partition, file).await?;
    }
    for rg in 0..input.row_groups() {
        if input.row_group_rows(rg) == 0 {
            continue;
        }
        let bytes = input.row_group_bytes(rg);
        let full = |f: &mut OpenFile| match &f.sink {
            Sink::Copy(copy) => copy.num_rows() > 0 && copy.size() + bytes > out.target,
            Sink::Decode(_) => true,
        };
        if let Some(file) = open.take_if(full) {
            out.close(partition, file).await?;
        }
        let mut file = match open.take() {
            Some(file) => file,
            None => out.open(partition, true, &[]).await?,
        };
        let size = match &mut file.sink {
            Sink::Copy(copy) => {
                copy.append_row_group(input, rg)?;
                file.rows = usize::try_from(copy.num_rows()).unwrap_or(usize::MAX);
                copy.size()
            }
            Sink::Decode(_) => {
                return Err(WriteError::Data {
                    reason: "a copied row group reached a decoding output".into(),
                })
            }
        };
        if size >= out.target {
            out.close(partition, file).await?;
        } else {
            *open = Some(file);
        }
    }
    Ok(())
}

/// Decodes the base file `data`, conforms its rows to the table schema and writes them into the open output
/// (or new ones), cutting near the target size.
async fn decode_file(
    out: &mut Output<'_>,
    partition: &str,
    open: &mut Option<OpenFile>,
    data: Bytes,
    footer: ParquetMetaData,
) -> Result<(), WriteError> {
    let plain = super::dictionary::plain_in(&footer);
    if let Some(file) = open.take_if(|f| !matches!(f.sink, Sink::Decode(_))) {
        out.close(partition, file).await?;
    }
    for batch in read_base_file_batches(data, Arc::new(footer))? {
        let batch = out.writer.conform_stored_batch(batch?)?;
        let mut offset = 0;
        while offset < batch.num_rows() {
            let mut file = match open.take() {
                Some(file) => file,
                None => out.open(partition, false, &plain).await?,
            };
            let Sink::Decode(writer) = &mut file.sink else {
                return Err(WriteError::Data {
                    reason: "decoded rows reached a copying output".into(),
                });
            };
            let size = writer.estimated_size() as u64;
            let chunk = out.next_chunk(size, file.rows, batch.num_rows() - offset);
            writer.write(&with_file_name(
                &batch.slice(offset, chunk),
                &file.file_name,
            )?)?;
            let size = writer.estimated_size() as u64;
            file.rows += chunk;
            offset += chunk;
            if size >= out.target {
                out.close(partition, file).await?;
            } else {
                *open = Some(file);
            }
        }
    }
    Ok(())
}

/// Rewrites every group of `planned` into new base files (without the table lock) and returns one write
/// stat per new file (`prevCommit` "null", every row an insert, exact sizes). Uses `writer` for the table
/// schema and the base-file encoding; all I/O goes to `storage`. The heartbeat is refreshed between files,
/// paced for others' `heartbeat_tolerance` ([`HeartbeatPacer`]).
pub async fn execute(
    storage: &dyn Storage,
    clock: &dyn Clock,
    writer: &TableWriter,
    planned: &ClusteringPlanned,
    heartbeat_tolerance: std::time::Duration,
) -> Result<Vec<WriteStat>, WriteError> {
    let mut out = Output {
        storage,
        clock,
        writer,
        instant: &planned.instant,
        target: planned.target_file_max_bytes.max(1),
        file_index: 0,
        heartbeat: HeartbeatPacer::new(heartbeat_tolerance),
        stats: Vec::new(),
    };
    for group in &planned.groups {
        let partition = group.partition_path.as_str();
        let mut open: Option<OpenFile> = None;
        for slice in &group.slices {
            out.heartbeat.beat(storage, clock, &planned.instant).await?;
            let path = slice.path();
            let data = storage.get(&path).await?;
            let schema = writer.schema();
            let copyable = CopyInput::inspect(
                data.clone(),
                &path,
                &schema,
                &writer.config().base_file,
                planned.copy_min_row_group_bytes,
            )?;
            match copyable {
                Inspected::Copy(input) => copy_file(&mut out, partition, &mut open, &input).await?,
                Inspected::Decode(footer) => {
                    decode_file(&mut out, partition, &mut open, data, footer).await?
                }
            }
        }
        if let Some(file) = open.take() {
            out.close(partition, file).await?;
        }
    }
    tracing::info!(instant = %planned.instant, files = out.stats.len(), "clustering files written");
    Ok(out.stats)
}
