//! Execution: each planned file slice merged into one new base file.
//!
//! Memory per group, independent of the base file's size: the log records (`log_file::scan`), one row
//! group of the base file (fetched with a ranged read, `base_file::ranged`) decoded a batch at a time, the
//! new file's row group being encoded (at most [`MAX_ROW_GROUP_BYTES`]), and one upload part: the new file
//! goes to storage row group by row group through [`Storage::put_multipart`], and appears under its name
//! only when complete (a failed group's upload is aborted).

use std::collections::BTreeSet;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, StringArray};
use bytes::Bytes;

use super::{service_error, PlannedOperation, Scheduled};
use crate::base_file::ranged::RangedBaseFile;
use crate::base_file::writer::{BaseFileOptions, BaseFileWriter, StreamedBaseFile};
use crate::clock::Clock;
use crate::log_file::merge::{conform, MERGE_BATCH_ROWS};
use crate::log_file::{
    scan_stored_log_files, BaseRowMerger, CommittedInstants, MergeCounts, MergeMode,
};
use crate::schema::meta::FILE_NAME_COL;
use crate::storage::{join_path, MultipartUpload, Storage};
use crate::table::commit::WriteStat;
use crate::table::file_name::{marker_path, BaseFileName, MarkerType, WriteToken};
use crate::table::instant::InstantTime;
use crate::write::heartbeat::write_heartbeat;
use crate::write::{TableSchema, WriteError};

fn i64_of(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// `batch` with every `_hoodie_file_name` set to `file_name`.
fn with_file_name(
    batch: &RecordBatch,
    index: usize,
    file_name: &str,
) -> Result<RecordBatch, WriteError> {
    let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
    columns[index] = Arc::new(StringArray::from_iter_values(std::iter::repeat_n(
        file_name,
        batch.num_rows(),
    )));
    RecordBatch::try_new(batch.schema(), columns).map_err(|source| WriteError::Arrow {
        context: "set _hoodie_file_name",
        source,
    })
}

/// Largest row group a compaction writes (`hoodie.parquet.block.size` when smaller): the writer holds
/// one encoded row group, and the next compaction of the group fetches one at a time, so this bounds both.
pub const MAX_ROW_GROUP_BYTES: usize = 16 * 1024 * 1024;

/// Where the merged rows go: the file being encoded, its upload, and how its rows are stamped.
struct Output<'a> {
    writer: BaseFileWriter<Vec<u8>>,
    upload: &'a mut dyn MultipartUpload,
    schema: &'a TableSchema,
    file_name: &'a str,
    file_name_index: usize,
    what: String,
}

impl Output<'_> {
    /// Writes `batch` (merged rows) and uploads the bytes of any row group it closed.
    async fn write(&mut self, batch: &RecordBatch) -> Result<(), WriteError> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let batch = conform(batch, &self.schema.file)
            .map_err(|e| service_error(format!("rows of {}: {e}", self.what)))?;
        self.writer.write(&with_file_name(
            &batch,
            self.file_name_index,
            self.file_name,
        )?)?;
        self.drain().await
    }

    async fn drain(&mut self) -> Result<(), WriteError> {
        let bytes = std::mem::take(self.writer.sink_mut());
        if !bytes.is_empty() {
            self.upload.write(Bytes::from(bytes)).await?;
        }
        Ok(())
    }

    /// Closes the file and uploads its last bytes (the upload is still to be completed).
    async fn finish(self) -> Result<StreamedBaseFile, WriteError> {
        let (rest, file) = self.writer.finish_into()?;
        if !rest.is_empty() {
            self.upload.write(Bytes::from(rest)).await?;
        }
        Ok(file)
    }
}

/// Streams the merge of `base` (row group by row group) with the log into `out`.
async fn write_merged(
    storage: &dyn Storage,
    base: &RangedBaseFile,
    mut merger: BaseRowMerger,
    mut out: Output<'_>,
) -> Result<(StreamedBaseFile, MergeCounts), WriteError> {
    let what = out.what.clone();
    let merge_error = |e: &dyn std::fmt::Display| service_error(format!("merging {what}: {e}"));
    for index in 0..base.num_row_groups() {
        let batches = base
            .row_group(storage, index, MERGE_BATCH_ROWS)
            .await
            .map_err(|e| service_error(format!("base file {what}: {e}")))?;
        for batch in batches {
            let batch = batch.map_err(|e| merge_error(&e))?;
            let batch = conform(&batch, &out.schema.file).map_err(|e| merge_error(&e))?;
            let merged = merger.merge(&batch).map_err(|e| merge_error(&e))?;
            out.write(&merged).await?;
        }
    }
    let mut inserts = merger.into_inserts();
    for batch in inserts.by_ref() {
        let batch = batch.map_err(|e| merge_error(&e))?;
        out.write(&batch).await?;
    }
    let counts = inserts.counts();
    Ok((out.finish().await?, counts))
}

/// One file group merged by [`execute`].
#[derive(Debug, Clone, PartialEq)]
pub struct MergedGroup {
    /// The write stat of its new base file.
    pub stat: WriteStat,
    /// The keys its planned logs left deleted: what the carry checks its late logs against (`keep.rs`).
    pub deleted: BTreeSet<String>,
}

/// Merges one slice into the new base file `<fileId>_<index>-0-0_<c>.parquet` (marker first) and returns
/// its write stat, with the keys the planned logs left deleted.
#[allow(clippy::too_many_arguments)]
async fn compact_one(
    storage: &dyn Storage,
    c: &InstantTime,
    index: u64,
    op: &PlannedOperation,
    schema: &TableSchema,
    mode: &MergeMode,
    committed: &CommittedInstants,
    options: &BaseFileOptions,
) -> Result<MergedGroup, WriteError> {
    let slice = &op.slice;
    let partition = slice.partition_path.as_str();
    let file_name =
        BaseFileName::new_parquet(&slice.file_id, &WriteToken::new(index, 0, 0), c.clone())?
            .file_name();
    let file_name_index = schema
        .file
        .index_of(FILE_NAME_COL)
        .map_err(|e| service_error(format!("table file schema: {e}")))?;
    let log = scan_stored_log_files(storage, &op.log_paths, committed, mode)
        .await
        .map_err(|e| service_error(format!("log files of {}: {e}", slice.file_id)))?;
    let log_stats = log.stats();
    let log_keys = log.versions().len() as u64;
    let deleted: BTreeSet<String> = log
        .versions()
        .iter()
        .filter(|(_, v)| v.is_delete())
        .map(|(k, _)| k.clone())
        .collect();
    let log_upserts = log_keys - deleted.len() as u64;
    let base = RangedBaseFile::open(storage, &slice.path(), slice.size)
        .await
        .map_err(|e| service_error(format!("base file {}: {e}", slice.path())))?;
    // The merge runs in the table schema: a base file or log block written before the schema evolved is
    // projected into it (new columns null, narrower types widened), never the other way round.
    let merger = BaseRowMerger::new(schema.file.clone(), log)
        .map_err(|e| service_error(format!("base file {}: {e}", slice.path())))?;
    storage
        .put(
            &marker_path(c, partition, &file_name, MarkerType::Merge),
            Bytes::new(),
        )
        .await?;
    let mut file_options = options.clone();
    file_options.row_group_bytes = options.row_group_bytes.min(MAX_ROW_GROUP_BYTES);
    let writer = BaseFileWriter::try_new_streaming(
        Vec::new(),
        schema.file.clone(),
        schema.parquet.clone(),
        schema.avro_with_meta_json.clone(),
        &file_options,
        base.num_rows().saturating_add(log_upserts),
    )?;
    let path = join_path(&[partition, &file_name]);
    let mut upload = storage.put_multipart(&path).await?;
    let out = Output {
        writer,
        upload: upload.as_mut(),
        schema,
        file_name: &file_name,
        file_name_index,
        what: slice.path(),
    };
    let (written, counts) = match write_merged(storage, &base, merger, out).await {
        Ok(done) => done,
        Err(e) => {
            if let Err(abort) = upload.abort().await {
                tracing::warn!(path = %path, error = %abort, "aborting the upload of a failed compaction failed");
            }
            return Err(e);
        }
    };
    let size = upload.complete().await?;
    let mut stat = WriteStat::new(&slice.file_id, partition, &path);
    stat.prev_commit = slice.base_instant.to_string();
    stat.num_writes = i64_of(written.num_rows);
    stat.num_inserts = i64_of(counts.inserted);
    stat.num_update_writes = i64_of(log_upserts.saturating_sub(counts.inserted));
    stat.num_deletes =
        i64_of((counts.base_rows + counts.inserted).saturating_sub(written.num_rows));
    stat.total_write_bytes = i64_of(size);
    stat.file_size_in_bytes = i64_of(size);
    stat.total_log_records = i64_of(log_stats.records);
    stat.total_log_files_compacted = op.log_paths.len() as i64;
    stat.total_log_size_compacted = i64_of(op.log_bytes);
    stat.total_updated_records_compacted = i64_of(log_keys);
    stat.total_log_blocks = i64_of(
        log_stats.blocks_merged
            + log_stats.blocks_uncommitted
            + log_stats.blocks_rolled_back
            + log_stats.rollback_blocks,
    );
    stat.total_rollback_blocks = i64_of(log_stats.rollback_blocks);
    Ok(MergedGroup { stat, deleted })
}

/// File groups one compaction merges at once: memory is bounded by the log records of this many groups
/// (plus a row group each).
const GROUPS_IN_FLIGHT: usize = 4;

/// Merges every planned slice of `scheduled` into its new base file (see the module doc of [`super`]) and
/// returns one [`MergedGroup`] per new file (in the plan's order), writing the compaction's heartbeat before each group (the merge runs
/// outside the lock, and a later holder rolls back a compaction whose heartbeat expired). The files are
/// written in the scheduled schema with `options`.
pub async fn execute(
    storage: &dyn Storage,
    clock: &dyn Clock,
    scheduled: &Scheduled,
    options: &BaseFileOptions,
) -> Result<Vec<MergedGroup>, WriteError> {
    let planned = &scheduled.planned;
    // GROUPS_IN_FLIGHT groups at a time: each group waits on its reads and uploads; the stats keep the
    // plan's order. A failed group lets the others finish their uploads (`finish_in_order`). Collected
    // first: a stream over a mapping closure would make the caller's future not `Send` for every lifetime
    // (a rustc limitation).
    let mut groups = Vec::with_capacity(planned.operations.len());
    for (index, op) in planned.operations.iter().enumerate() {
        groups.push(async move {
            write_heartbeat(storage, clock, &planned.instant).await?;
            compact_one(
                storage,
                &planned.instant,
                index as u64,
                op,
                &scheduled.schema,
                &scheduled.mode,
                &scheduled.committed,
                options,
            )
            .await
        });
    }
    let merged: Vec<MergedGroup> =
        crate::services::in_flight::finish_in_order(groups, GROUPS_IN_FLIGHT).await?;
    tracing::info!(instant = %planned.instant, files = merged.len(), "compaction files written");
    Ok(merged)
}
