//! Merge-on-read TOAST back-fill: an upsert whose placeholder the batch could not fill takes the value of
//! the key's latest merged version in the file slice it is appended to, and so does one the batch filled
//! from a version older than that one (`write::toast`). The slice is read only for a group whose batch
//! carries such a placeholder or such a fill.

use super::*;
use crate::log_file::merge::{conform, merge_file_slice};
use crate::log_file::scan::{scan_stored_log_files, CommittedInstants, MergeMode};

impl TableWriter {
    /// `batch` with the placeholders of `winners` (upserts of `slice`'s group) replaced by the values the
    /// slice holds for their keys, where the stored version is the one to take (`Toast::stored_value_wins`;
    /// `fills`: what the batch decided); `None` when there is nothing to replace.
    pub(super) async fn backfill_from_slice(
        &self,
        slice: &FileSlice,
        timeline: &Timeline,
        batch: &RecordBatch,
        fills: &BatchFills,
        winners: &[(&str, Winner)],
    ) -> Result<Option<RecordBatch>, WriteError> {
        let shape = self.shape();
        let Some(toast) = shape.toast.as_ref() else {
            return Ok(None);
        };
        let needed: HashMap<&str, usize> = winners
            .iter()
            .filter(|(_, w)| !w.delete && w.row != crate::write::merge::TOMBSTONE_ROW)
            .filter(|(_, w)| fills.contains_key(&w.row) || toast.has_placeholder(batch, w.row))
            .map(|(k, w)| (*k, w.row))
            .collect();
        if needed.is_empty() {
            return Ok(None);
        }
        let storage = self.storage.as_ref();
        let slice_err = |e: &dyn std::fmt::Display| {
            table_err(
                storage,
                format!(
                    "reading file group {} of partition {:?} for TOAST placeholders: {e}",
                    slice.file_id, slice.partition_path
                ),
            )
        };
        let committed = CommittedInstants::new(
            timeline
                .completed_commits()
                .into_iter()
                .map(|i| i.time.clone()),
            timeline.instants().first().map(|i| i.time.clone()),
        );
        let mode = MergeMode::from_table_properties(&self.properties.as_map())
            .map_err(|e| slice_err(&e))?;
        let log = scan_stored_log_files(storage, &slice.log_paths(), &committed, &mode)
            .await
            .map_err(|e| slice_err(&e))?;
        let base = self.storage.get(&slice.path()).await?;
        let schema = &shape.schema;
        let mut merged = Vec::new();
        for out in merge_file_slice(Some(base), log).map_err(|e| slice_err(&e))? {
            let out = out.map_err(|e| slice_err(&e))?;
            merged.push(conform(&out, &schema.file).map_err(|e| slice_err(&e))?);
        }
        // Where each needed key's stored version is: (1 + merged batch, row).
        let mut found: HashMap<usize, (usize, usize)> = HashMap::new();
        for (i, m) in merged.iter().enumerate() {
            let keys = m.column(2).as_string::<i32>();
            for r in 0..m.num_rows() {
                if let Some(&row) = needed.get(keys.value(r)) {
                    found.insert(row, (i + 1, r));
                }
            }
        }
        if found.is_empty() {
            return Ok(None);
        }
        let meta_offset = META_COLUMNS.len();
        let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
        for &col in toast.columns() {
            let indices: Vec<(usize, usize)> = (0..batch.num_rows())
                .map(|r| match found.get(&r) {
                    Some(&(m, at))
                        if toast.stored_value_wins(
                            batch,
                            r,
                            col,
                            fills,
                            shape.ordering.map(|(idx, cmp)| {
                                (
                                    batch.column(idx),
                                    merged[m - 1].column(meta_offset + idx),
                                    cmp,
                                )
                            }),
                            at,
                        ) =>
                    {
                        (m, at)
                    }
                    _ => (0, r),
                })
                .collect();
            let mut sources: Vec<&dyn Array> = vec![batch.column(col).as_ref()];
            sources.extend(merged.iter().map(|m| m.column(meta_offset + col).as_ref()));
            columns[col] = interleave(&sources, &indices).map_err(|source| WriteError::Arrow {
                context: "back-fill placeholders from the file slice",
                source,
            })?;
        }
        RecordBatch::try_new(batch.schema(), columns)
            .map(Some)
            .map_err(|source| WriteError::Arrow {
                context: "back-fill placeholders from the file slice",
                source,
            })
    }
}
