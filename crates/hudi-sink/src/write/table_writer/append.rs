//! Merge-on-read appends: a batch's versions for an existing file group go into one new log file of the
//! group's latest slice, without reading the slice (docs/architecture.md, "Merge-on-read").
//!
//! ```text
//! winners of (partition, bucket) ─ data rows: upserts and `_hoodie_is_deleted` rows (event time)
//!                                ─ delete records: the delete operation and Kafka tombstones (IntWrapper 0)
//!                                ─ leading delete records: keys deleted and then re-created in the batch
//!   ─ marker <log>.marker.APPEND ─ .<fileId>_<base>.log.<v>_<token>, created if absent (v+1 when taken)
//!   ─ HoodieDeltaWriteStat
//! ```
//!
//! What the writer cannot know without reading the slice, readers decide: whether an upsert updates or
//! inserts (every row counts as `updated`), whether an older version is ignored (never `ignored_older`), and
//! whether a delete finds its key (every delete counts as `deleted`, never `delete_misses`). The log file is
//! created with create-if-absent, so two writers of the same slice at the same time never overwrite each
//! other's file: the second takes the next version.
//!
//! A key the batch deletes (tombstone) and then re-creates gets a delete record (IntWrapper 0) in a delete
//! block ahead of the data block, as two deltacommits [delete] then [record] would write it: readers apply
//! blocks in order, so the delete removes the slice's earlier log versions and the re-created record is then
//! merged against the base file's version only (docs/semantics.md, "Merge-on-read tables").

use arrow_array::RecordBatch;
use bytes::Bytes;

use super::super::merge::{Source, Winner, TOMBSTONE_ROW};
use super::{TableWriter, WriteCounts};
use crate::log_file::{DeleteRecord, LogFileName, LogFileWriter, OrderingValue};
use crate::storage::{join_path, PutOutcome};
use crate::table::commit::WriteStat;
use crate::table::file_name::{MarkerType, WriteToken};
use crate::table::fs_view::FileSlice;
use crate::table::instant::InstantTime;
use crate::write::WriteError;

/// The delete-block ordering value of `column[row]`: a long (`_event_lsn`) or a string (`_event_seq`);
/// null (an event without an LSN) has none, so the delete applies by commit time.
fn ordering_value(column: &arrow_array::ArrayRef, row: usize) -> Option<OrderingValue> {
    use arrow_array::cast::AsArray;
    use arrow_array::Array;
    if column.is_null(row) {
        return None;
    }
    match column.data_type() {
        arrow_schema::DataType::Int64 => Some(OrderingValue::Long(
            column
                .as_primitive::<arrow_array::types::Int64Type>()
                .value(row),
        )),
        arrow_schema::DataType::Int32 => Some(OrderingValue::Int(
            column
                .as_primitive::<arrow_array::types::Int32Type>()
                .value(row),
        )),
        arrow_schema::DataType::Utf8 => Some(OrderingValue::String(
            column.as_string::<i32>().value(row).to_string(),
        )),
        _ => None,
    }
}

/// How many taken versions an append skips before it gives up (another writer of the same slice took each).
const MAX_VERSION_ATTEMPTS: u32 = 64;

impl TableWriter {
    /// Appends `winners` to `slice` as one new log file and returns its stat and the tombstoned keys it
    /// deletes (`None` when nothing was written). With `append_to`, the log goes to the slice of that pending
    /// compaction of another engine instead (base instant `append_to`, no base file yet).
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn append_bucket(
        &self,
        instant: &InstantTime,
        partition: &str,
        slice: &FileSlice,
        append_to: Option<&InstantTime>,
        batch: &RecordBatch,
        winners: &[(&str, Winner)],
        file_index: &mut usize,
        counts: &mut WriteCounts,
    ) -> Result<(Option<WriteStat>, Vec<String>), WriteError> {
        let mut sources = Vec::new();
        let mut keys = Vec::new();
        let mut deletes = Vec::new();
        let mut leading_deletes = Vec::new();
        let mut tombstoned = Vec::new();
        // Under a Debezium payload a delete event is a delete record carrying its ordering value (what
        // HoodieStreamer's append handle writes for a payload without an insert value): readers keep a
        // stored version with a larger one.
        let shape = self.shape();
        let debezium_ordering = match (shape.op_deleted, shape.ordering) {
            (Some(_), Some((idx, _))) => Some(batch.column(idx).clone()),
            _ => None,
        };
        for (key, w) in winners {
            if let (Some(ordering), true) = (&debezium_ordering, w.delete && w.row != TOMBSTONE_ROW)
            {
                if !w.force {
                    deletes.push(DeleteRecord {
                        ordering_value: ordering_value(ordering, w.row),
                        ..DeleteRecord::new(*key, partition)
                    });
                    counts.deleted += 1;
                    continue;
                }
            }
            if w.delete && w.force {
                // The delete operation and tombstones win whatever the ordering value: Spark's
                // IntWrapper(0) delete, which readers apply by commit time.
                deletes.push(DeleteRecord::new(*key, partition));
                if w.row == TOMBSTONE_ROW {
                    tombstoned.push(key.to_string());
                } else {
                    counts.deleted += 1;
                }
            } else if w.row != TOMBSTONE_ROW {
                // Upserts, and `_hoodie_is_deleted` rows, which readers merge by ordering value.
                if w.force
                    && !crate::mutation::is_disabled(
                        crate::mutation::Mutation::RecreateWritesDelete,
                    )
                {
                    // Re-created after a tombstone of this batch: the tombstone's delete goes first.
                    leading_deletes.push(DeleteRecord::new(*key, partition));
                }
                sources.push(Source::Insert(w.row));
                keys.push(*key);
                if w.delete {
                    counts.deleted += 1;
                } else {
                    counts.updated += 1;
                }
            }
        }
        if sources.is_empty() && deletes.is_empty() {
            return Ok((None, Vec::new()));
        }
        let mut seq = 0u64;
        let data = if sources.is_empty() {
            None
        } else {
            // In a log the `_hoodie_file_name` meta column holds the file id (Spark's append handle).
            Some(self.build_output(
                instant,
                partition,
                &slice.file_id,
                *file_index,
                &mut seq,
                None,
                batch,
                &sources,
                &keys,
            )?)
        };
        let mut writer = LogFileWriter::new(instant.clone(), &slice.file_id, &self.schema().avro);
        if let Some(rows) = &data {
            writer = writer.with_records(std::slice::from_ref(rows))?;
        }
        if !leading_deletes.is_empty() {
            writer = writer.with_leading_deletes(&leading_deletes)?;
        }
        if !deletes.is_empty() {
            writer = writer.with_deletes(&deletes)?;
        }
        let body = Bytes::from(writer.finish()?);
        let token = WriteToken::new(*file_index as u64, crate::write::lease::stage(), 0);
        let base = append_to.unwrap_or(&slice.base_instant);
        let existing: Vec<&LogFileName> = slice.logs_based_at(base).map(|l| &l.name).collect();
        let mut name = LogFileName::next_in_slice(existing, &slice.file_id, base, token)?;
        let mut attempts = 0;
        let path = loop {
            let file_name = name.file_name();
            self.put_marker(instant, partition, &file_name, MarkerType::Append)
                .await?;
            let path = join_path(&[partition, &file_name]);
            crate::write::lease::check()?;
            match self.storage.put_if_absent(&path, body.clone()).await? {
                PutOutcome::Created => {
                    crate::write::lease::check_after_upload(self.storage.as_ref(), &path).await?;
                    break path;
                }
                PutOutcome::AlreadyExists => {
                    // Another writer of this slice (or a failed write not rolled back yet) took the
                    // version: the marker stays, naming a file this instant does not own; the rollback
                    // of this instant skips files another instant wrote (their header names it).
                    attempts += 1;
                    if attempts >= MAX_VERSION_ATTEMPTS {
                        return Err(WriteError::Table {
                            base_path: self.storage.base_uri().to_string(),
                            reason: format!(
                                "{attempts} log versions of file group {} in partition {partition:?} were taken by other writers",
                                slice.file_id
                            ),
                        });
                    }
                    name = name.next_version(token)?;
                }
            }
        };
        *file_index += 1;
        let size = body.len() as i64;
        let mut stat = WriteStat::new(&slice.file_id, partition, &path);
        stat.prev_commit = base.to_string();
        stat.num_writes = sources.len() as i64;
        stat.num_update_writes = sources.len() as i64;
        stat.num_deletes = (leading_deletes.len() + deletes.len()) as i64;
        stat.total_write_bytes = size;
        stat.file_size_in_bytes = size;
        stat.total_log_records = (sources.len() + leading_deletes.len() + deletes.len()) as i64;
        stat.total_log_blocks = i64::from(!leading_deletes.is_empty())
            + i64::from(!sources.is_empty())
            + i64::from(!deletes.is_empty());
        stat.log_version = Some(i64::from(name.version));
        stat.log_offset = Some(0);
        // The pending compaction's slice has no base file yet (Hudi's append handle writes "").
        stat.base_file = Some(match append_to {
            Some(_) => String::new(),
            None => slice.file_name.clone(),
        });
        let mut log_files: Vec<String> = slice
            .logs_based_at(base)
            .map(|l| l.name.file_name())
            .collect();
        log_files.push(name.file_name());
        stat.log_files = Some(log_files);
        stat.records_stats = Some(serde_json::json!({ "val": null }));
        Ok((Some(stat), tombstoned))
    }
}
