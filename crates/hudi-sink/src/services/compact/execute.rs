//! Execution: each planned file slice merged into one new base file.
//!
//! Memory per group: the base file's bytes, one decoded row group batch at a time, the log records
//! (`log_file::scan`), and the new file's encoded bytes (`BaseFileWriter` builds it in memory).

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, StringArray};
use bytes::Bytes;

use super::{service_error, CompactionPlanned, PlannedOperation};
use crate::base_file::writer::{BaseFileOptions, BaseFileWriter};
use crate::log_file::merge::conform;
use crate::log_file::{merge_file_slice, scan_stored_log_files, CommittedInstants, MergeMode};
use crate::schema::meta::FILE_NAME_COL;
use crate::storage::{join_path, Storage};
use crate::table::commit::WriteStat;
use crate::table::file_name::{marker_path, BaseFileName, MarkerType, WriteToken};
use crate::table::instant::InstantTime;
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

/// Merges one slice into the new base file `<fileId>_<index>-0-0_<c>.parquet` (marker first) and returns
/// its write stat.
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
) -> Result<WriteStat, WriteError> {
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
    let log_upserts = log
        .versions()
        .iter()
        .filter(|(_, v)| !v.is_delete())
        .count() as u64;
    let base: Bytes = storage.get(&slice.path()).await?;
    let mut merger = merge_file_slice(Some(base), log)
        .map_err(|e| service_error(format!("base file {}: {e}", slice.path())))?;
    storage
        .put(
            &marker_path(c, partition, &file_name, MarkerType::Merge),
            Bytes::new(),
        )
        .await?;
    let mut writer = BaseFileWriter::try_new(
        schema.file.clone(),
        schema.parquet.clone(),
        schema.avro_with_meta_json.clone(),
        options,
    )?;
    for batch in merger.by_ref() {
        let batch = batch.map_err(|e| service_error(format!("merging {}: {e}", slice.path())))?;
        let batch = conform(&batch, &schema.file)
            .map_err(|e| service_error(format!("rows of {}: {e}", slice.path())))?;
        writer.write(&with_file_name(&batch, file_name_index, &file_name)?)?;
    }
    let counts = merger.counts();
    let written = writer.finish()?;
    let path = join_path(&[partition, &file_name]);
    let size = written.data.len() as u64;
    storage.put(&path, written.data).await?;
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
    Ok(stat)
}

/// Merges every planned slice into its new base file (see the module doc of [`super`]) and returns one
/// write stat per new file. `committed` says which log blocks count, `mode` how records merge; the files
/// are written in `schema` with `options`.
pub async fn execute(
    storage: &dyn Storage,
    planned: &CompactionPlanned,
    schema: &TableSchema,
    mode: &MergeMode,
    committed: &CommittedInstants,
    options: &BaseFileOptions,
) -> Result<Vec<WriteStat>, WriteError> {
    let mut stats = Vec::with_capacity(planned.operations.len());
    for (index, op) in planned.operations.iter().enumerate() {
        stats.push(
            compact_one(
                storage,
                &planned.instant,
                index as u64,
                op,
                schema,
                mode,
                committed,
                options,
            )
            .await?,
        );
    }
    tracing::info!(instant = %planned.instant, files = stats.len(), "compaction files written");
    Ok(stats)
}
