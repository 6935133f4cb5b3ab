//! Keeping the snapshot: the file groups a compaction leaves out because carrying their late logs would
//! change what a snapshot shows (docs/architecture.md, "Compaction").
//!
//! Before a compaction `c` completes, readers merge a planned group as one slice: the old base file `B`, the
//! planned logs `L`, then the late logs `C` (appended while the merge ran). After it, they merge the new base
//! file `B' = merge(B, L)` with the carried copies of `C`. Under the event-time rule (`log_file::scan`) both
//! give the same row for a key unless a delete takes part:
//! - `L` leaves the key deleted (a delete record, or a `_hoodie_is_deleted` row that wins) and `C` writes it
//!   again: before, a re-created row below `B`'s version loses to it (the key shows `B`'s version), or a
//!   `_hoodie_is_deleted` row in `L` outranks a lower row of `C` (deleted); after, `B'` lacks the key and
//!   `C`'s row shows;
//! - `C` holds a commit-time delete of a key that `L` wrote, and then a row of it: the delete makes readers
//!   merge that row against the slice's base file, which is `B` before and `B'` after.
//!
//! Such a group is left out: its new base file and carried copies are deleted before `<c>.commit`, which
//! does not name it, so its old slice (`B`, `L`, `C`) stays the latest and reads as before. The next
//! compaction plans `L` and `C` together. The test is conservative (a key that matches may read the same
//! either way); a key without a delete in `L` or `C` never matches, so upserts alone never leave a group out.

use std::collections::BTreeSet;

use bytes::Bytes;

use crate::log_file::block::{read_blocks, BlockType};
use crate::log_file::delete_block::OrderingValue;
use crate::log_file::reader::{read_log_file, LogBlock};
use crate::log_file::MergeMode;
use crate::mutation::{is_disabled, Mutation};
use crate::schema::meta::RECORD_KEY_COL;
use arrow_array::cast::AsArray;

use super::service_error;
use crate::write::WriteError;

/// The keys of a group's late logs that matter to [`leaves_out`], gathered log by log in reader order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LateKeys {
    /// Keys the late logs write: a row (a `_hoodie_is_deleted` one too) or a delete with an ordering value.
    /// Gathered once the logs had to be decoded (see [`LateKeys::add`]).
    pub written: BTreeSet<String>,
    /// Keys a commit-time delete (ordering value `IntWrapper(0)` or none) deleted in the late logs.
    pub deleted: BTreeSet<String>,
    /// Keys written (a row, or a delete with an ordering value) after one of their commit-time deletes.
    pub after_delete: BTreeSet<String>,
    /// Whether a late log so far held a delete block: from it on every log is decoded.
    saw_delete_block: bool,
}

impl LateKeys {
    /// Adds the late log `bytes` (at `path`). A log is decoded only when it may matter: when the planned logs
    /// left a key deleted (`planned_deletes`), or from the first log holding a delete block on (rows before
    /// a key's commit-time delete cannot change its snapshot).
    pub fn add(
        &mut self,
        path: &str,
        bytes: &Bytes,
        planned_deletes: bool,
    ) -> Result<(), WriteError> {
        let error = |e: &dyn std::fmt::Display| service_error(format!("late log {path}: {e}"));
        if !planned_deletes && !self.saw_delete_block {
            let raw = read_blocks(path, bytes).map_err(|e| error(&e))?;
            if !raw.iter().any(|b| b.block_type == BlockType::Delete) {
                return Ok(());
            }
        }
        for block in read_log_file(path, bytes).map_err(|e| error(&e))? {
            match block {
                LogBlock::Data { records, .. } => {
                    let keys = records
                        .column_by_name(RECORD_KEY_COL)
                        .and_then(|c| c.as_string_opt::<i32>())
                        .ok_or_else(|| error(&format!("a data block without {RECORD_KEY_COL}")))?;
                    for key in keys.iter().flatten() {
                        self.written(key);
                    }
                }
                LogBlock::Delete { records, .. } => {
                    self.saw_delete_block = true;
                    for record in records {
                        let Some(key) = record.record_key.as_deref() else {
                            continue;
                        };
                        match record.ordering_value {
                            None | Some(OrderingValue::Int(0)) => {
                                self.deleted.insert(key.to_string());
                                self.after_delete.remove(key);
                            }
                            Some(_) => self.written(key),
                        }
                    }
                }
                LogBlock::Rollback { .. } => {}
            }
        }
        Ok(())
    }

    fn written(&mut self, key: &str) {
        self.written.insert(key.to_string());
        if self.deleted.contains(key) {
            self.after_delete.insert(key.to_string());
        }
    }

    /// Keys that leave the group out whatever the planned logs wrote: those `planned_deletes` left deleted
    /// and the late logs write again.
    fn rewritten_deletes<'a>(
        &'a self,
        planned_deletes: &'a BTreeSet<String>,
    ) -> impl Iterator<Item = &'a String> + 'a {
        self.written
            .iter()
            .filter(move |k| planned_deletes.contains(*k))
    }
}

/// Whether a group must be left out of its compaction: `planned_deletes` are the keys its planned logs left
/// deleted, `late` what its late logs hold, and `planned` the keys its planned logs hold (a row or a delete),
/// `None` when not read yet: the answer is then `None` if it needs them ([`needs_planned_keys`]). With the mutation switch
/// `CompactionKeepsSnapshot`, never.
pub fn leaves_out(
    mode: &MergeMode,
    planned_deletes: &BTreeSet<String>,
    late: &LateKeys,
    planned: Option<&BTreeSet<String>>,
) -> Option<bool> {
    // Under the commit-time rule the latest log version wins over everything, in both readings.
    if is_disabled(Mutation::CompactionKeepsSnapshot) || *mode == MergeMode::CommitTime {
        return Some(false);
    }
    if late.rewritten_deletes(planned_deletes).next().is_some() {
        return Some(true);
    }
    if late.after_delete.is_empty() {
        return Some(false);
    }
    // A row after a commit-time delete: it matters only for keys the planned logs wrote.
    planned.map(|p| late.after_delete.iter().any(|k| p.contains(k)))
}

/// Whether [`leaves_out`] needs the planned logs' keys for `late`.
pub fn needs_planned_keys(
    mode: &MergeMode,
    planned_deletes: &BTreeSet<String>,
    late: &LateKeys,
) -> bool {
    leaves_out(mode, planned_deletes, late, None).is_none()
}

#[cfg(test)]
mod tests;
