//! The model's batches: `hudi-sink ingest` under the interval commit writes consecutive event files as one
//! batch (up to a byte cap), and within a batch the fold rules apply across files. The model groups files
//! the same way, so that a table ingested on the default matches it.

use std::collections::HashMap;

use super::Fold;

/// The event-file bytes `hudi-sink ingest` reads into one batch under the interval commit by default, and
/// the model's default grouping: 64 MiB, about ten full ESM payloads.
pub const DEFAULT_MODEL_BATCH_BYTES: u64 = 64 << 20;

/// The batch being gathered: its folded versions per key, keys in first-seen order, and its files' bytes.
#[derive(Debug, Default)]
pub(super) struct ModelBatch {
    pub fold: HashMap<u64, Fold>,
    pub order: Vec<u64>,
    bytes: u64,
}

impl ModelBatch {
    /// Whether a file of `size` bytes starts a new batch under `cap` (0: every file is its own batch). The
    /// first file of a batch always joins it, as `hudi-sink ingest` reads at least one file per batch.
    pub fn full_for(&self, size: u64, cap: u64) -> bool {
        !self.order.is_empty() && (cap == 0 || self.bytes + size > cap)
    }

    /// Adds one file's folded versions (folded from scratch) after those already gathered.
    pub fn add_file(&mut self, fold: HashMap<u64, Fold>, order: Vec<u64>, size: u64) {
        for key in order {
            let Some(next) = fold.get(&key).copied() else {
                continue;
            };
            let merged = match self.fold.get(&key).copied() {
                None => {
                    self.order.push(key);
                    next
                }
                Some(prior) => compose(prior, next),
            };
            self.fold.insert(key, merged);
        }
        self.bytes += size;
    }

    /// Takes the gathered batch, leaving an empty one.
    pub fn take(&mut self) -> (HashMap<u64, Fold>, Vec<u64>) {
        self.bytes = 0;
        (
            std::mem::take(&mut self.fold),
            std::mem::take(&mut self.order),
        )
    }
}

/// One record (`incoming`: a tombstone, or a row not forced) folded onto the key's version so far in its
/// batch: a tombstone replaces everything before it; a row after a tombstone is forced (it replaces the stored
/// row whatever its ordering value); otherwise the larger ordering value wins, ties to the later record.
pub(super) fn fold_step(prior: Option<Fold>, incoming: Fold) -> Fold {
    match prior {
        None => incoming,
        Some(prior) => compose(prior, incoming),
    }
}

/// Folding a file's records after `prior` in one batch, from the file's own fold `next`: a tombstone in the
/// file resets the key (`next` is a tombstone, or a row forced after it); otherwise the file's best row
/// competes with `prior` by ordering value (ties to the later), keeping `prior`'s forced mark, exactly as
/// folding the file's records one by one onto `prior` would.
fn compose(prior: Fold, next: Fold) -> Fold {
    match (prior, next) {
        (_, Fold::Tombstone) => Fold::Tombstone,
        (_, forced @ Fold::Row { forced: true, .. }) => forced,
        (
            Fold::Tombstone,
            Fold::Row {
                index,
                ordering,
                deleted,
                ..
            },
        ) => Fold::Row {
            index,
            ordering,
            deleted,
            forced: true,
        },
        (
            current @ Fold::Row {
                ordering: cur,
                forced,
                ..
            },
            Fold::Row {
                index,
                ordering,
                deleted,
                ..
            },
        ) => {
            if ordering >= cur {
                Fold::Row {
                    index,
                    ordering,
                    deleted,
                    forced,
                }
            } else {
                current
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(index: u64, ordering: i64, deleted: bool) -> Fold {
        Fold::Row {
            index,
            ordering,
            deleted,
            forced: false,
        }
    }

    fn fold_all(records: &[Fold]) -> Option<Fold> {
        records
            .iter()
            .fold(None, |prior, r| Some(fold_step(prior, *r)))
    }

    fn same(a: Option<Fold>, b: Option<Fold>) -> bool {
        format!("{a:?}") == format!("{b:?}")
    }

    #[test]
    fn two_files_folded_together_equal_their_folds_composed() {
        // Every sequence of up to six records over three ordering values, split at every point.
        let kinds: Vec<Fold> = vec![
            Fold::Tombstone,
            row(0, 1, false),
            row(0, 2, false),
            row(0, 3, true),
            row(0, 2, true),
        ];
        let mut checked = 0;
        for len in 1..=6u32 {
            for code in 0..kinds.len().pow(len) {
                let mut c = code;
                let records: Vec<Fold> = (0..len as u64)
                    .map(|i| {
                        let k = kinds[c % kinds.len()];
                        c /= kinds.len();
                        match k {
                            Fold::Row {
                                ordering, deleted, ..
                            } => row(i, ordering, deleted),
                            t => t,
                        }
                    })
                    .collect();
                for split in 1..records.len() {
                    let (a, b) = records.split_at(split);
                    let whole = fold_all(&records);
                    let composed = match (fold_all(a), fold_all(b)) {
                        (Some(p), Some(n)) => Some(compose(p, n)),
                        (p, n) => p.or(n),
                    };
                    assert!(same(whole, composed), "{records:?} at {split}");
                    checked += 1;
                }
            }
        }
        assert!(checked > 10_000);
    }
}
