//! Merge planning: which version of each record survives, as pure functions over row indices.
//!
//! Two steps, both keeping the guarantees of the write path:
//! 1. [`fold_incoming`] folds the incoming rows of one write by record key, in arrival order: a delete
//!    (`_hoodie_is_deleted = true` or a delete operation) and an upsert are versions like any other; the
//!    larger ordering value wins, ties go to the later row.
//! 2. [`plan_file_group`] merges the folded winners of one file group into its current base file: stored
//!    rows keep their position (no re-sort of untouched rows); a winner with ordering value ≥ the stored one
//!    replaces it in place or deletes it; a lower one is ignored; new keys are appended in arrival order.

use std::collections::HashMap;

use arrow_array::ArrayRef;

use super::ordering::OrderingComparator;

/// One incoming version that survived folding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Winner {
    /// Row index in the concatenated incoming batch ([`TOMBSTONE_ROW`] for a Kafka tombstone, which has no
    /// data row).
    pub row: usize,
    /// Whether this version deletes the record.
    pub delete: bool,
    /// Whether it wins against the stored version whatever the ordering values: a Kafka tombstone, the
    /// delete operation, and a record that follows a tombstone in the same batch (it recreates the key).
    pub force: bool,
}

/// The `row` of a tombstone winner.
pub const TOMBSTONE_ROW: usize = usize::MAX;

/// The outcome of folding: winners in first-arrival order of their key, and how many rows were superseded.
#[derive(Debug, Default)]
pub struct Folded {
    /// `(record key, winner)` in order of each key's first arrival.
    pub winners: Vec<(String, Winner)>,
    /// Incoming rows that lost to another incoming row with the same key.
    pub superseded: u64,
}

/// Folds the incoming rows `rows` (indices into `keys`, `deletes`, `forced` and the ordering column, in
/// arrival order) by key; `ordering` = `None` means the later row wins. Forced rows (after a tombstone)
/// only compete with each other by ordering value; the winner stays forced.
pub fn fold_incoming(
    keys: &[String],
    deletes: &[bool],
    forced: &[bool],
    rows: &[usize],
    ordering: Option<(&ArrayRef, OrderingComparator)>,
) -> Folded {
    let mut index: HashMap<&str, usize> = HashMap::with_capacity(rows.len());
    let mut winners: Vec<(String, Winner)> = Vec::with_capacity(rows.len());
    let mut superseded = 0;
    for &row in rows {
        let key = keys[row].as_str();
        let candidate = Winner {
            row,
            delete: deletes[row],
            force: forced[row],
        };
        match index.get(key) {
            None => {
                index.insert(key, winners.len());
                winners.push((key.to_string(), candidate));
            }
            Some(&slot) => {
                superseded += 1;
                let current = winners[slot].1;
                let later_wins = match &ordering {
                    Some((col, cmp)) => cmp.later_wins(col, current.row, col, row),
                    None => true,
                };
                if later_wins {
                    winners[slot].1 = Winner {
                        force: candidate.force || current.force,
                        ..candidate
                    };
                }
            }
        }
    }
    Folded {
        winners,
        superseded,
    }
}

/// Where an output row comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Row of the stored base file, copied with its meta columns (untouched).
    Stored(usize),
    /// Incoming row replacing stored row `stored` (new meta: this instant).
    Update { incoming: usize, stored: usize },
    /// Incoming row with a new key (new meta: this instant).
    Insert(usize),
}

/// The plan for one new file slice, with the counts Hudi puts in its write stat.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FileGroupPlan {
    /// Output rows in file order.
    pub rows: Vec<Source>,
    /// Stored rows replaced by incoming versions.
    pub updated: u64,
    /// New keys.
    pub inserted: u64,
    /// Stored rows removed.
    pub deleted: u64,
    /// Incoming versions ignored because the stored version has a larger ordering value.
    pub ignored_older: u64,
    /// Incoming deletes of keys that are not stored (tombstones excluded: they probe several files).
    pub delete_misses: u64,
    /// Keys deleted by Kafka tombstones in this file group.
    pub tombstone_deletes: Vec<String>,
}

/// Merges folded `winners` into a stored file whose keys are `stored_keys` (file order).
///
/// `stored_ordering`/`incoming_ordering` are the ordering columns of both sides (same comparator);
/// `None` means the incoming version always wins.
pub fn plan_file_group(
    stored_keys: &[&str],
    winners: &[(&str, Winner)],
    ordering: Option<(&ArrayRef, &ArrayRef, OrderingComparator)>,
) -> FileGroupPlan {
    let mut plan = FileGroupPlan::default();
    let by_key: HashMap<&str, Winner> = winners.iter().map(|(k, w)| (*k, *w)).collect();
    let mut matched: HashMap<&str, ()> = HashMap::new();
    plan.rows.reserve(stored_keys.len() + winners.len());
    for (stored_row, key) in stored_keys.iter().enumerate() {
        let Some(w) = by_key.get(key) else {
            plan.rows.push(Source::Stored(stored_row));
            continue;
        };
        matched.insert(key, ());
        let incoming_wins = w.force
            || match &ordering {
                Some((stored_col, incoming_col, cmp)) => {
                    cmp.replaces_stored(stored_col, stored_row, incoming_col, w.row)
                }
                None => true,
            };
        if !incoming_wins {
            plan.ignored_older += 1;
            plan.rows.push(Source::Stored(stored_row));
        } else if w.row == TOMBSTONE_ROW {
            plan.tombstone_deletes.push(key.to_string());
        } else if w.delete {
            plan.deleted += 1;
        } else {
            plan.updated += 1;
            plan.rows.push(Source::Update {
                incoming: w.row,
                stored: stored_row,
            });
        }
    }
    for (key, w) in winners {
        if matched.contains_key(key) {
            continue;
        }
        if w.row == TOMBSTONE_ROW {
            // Accounted by the caller once per tombstone, whatever the number of files probed.
        } else if w.delete {
            plan.delete_misses += 1;
        } else {
            plan.inserted += 1;
            plan.rows.push(Source::Insert(w.row));
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Int64Array;
    use std::sync::Arc;

    fn keys(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn fold_keeps_largest_ordering_and_later_on_ties() {
        let ts: ArrayRef = Arc::new(Int64Array::from(vec![5, 3, 5, 1, 9]));
        let cmp = OrderingComparator::try_new("ts", ts.data_type()).expect("orderable");
        let k = keys(&["a", "a", "a", "b", "b"]);
        let folded = fold_incoming(
            &k,
            &[false, false, true, false, false],
            &[false; 5],
            &[0, 1, 2, 3, 4],
            Some((&ts, cmp)),
        );
        // a: row0 ts5, row1 ts3 loses, row2 ts5 ties and wins (a delete); b: row4 ts9 wins.
        assert_eq!(
            folded.winners,
            vec![
                (
                    "a".to_string(),
                    Winner {
                        row: 2,
                        delete: true,
                        force: false
                    }
                ),
                (
                    "b".to_string(),
                    Winner {
                        row: 4,
                        delete: false,
                        force: false
                    }
                )
            ]
        );
        assert_eq!(folded.superseded, 3);
    }

    #[test]
    fn fold_without_ordering_takes_the_last() {
        let k = keys(&["a", "b", "a"]);
        let folded = fold_incoming(&k, &[false, false, false], &[false; 3], &[0, 1, 2], None);
        assert_eq!(folded.winners[0].1.row, 2);
        assert_eq!(folded.superseded, 1);
    }

    #[test]
    fn plan_keeps_stored_order_and_applies_ordering() {
        let stored_ts: ArrayRef = Arc::new(Int64Array::from(vec![10, 10, 10, 10]));
        let incoming_ts: ArrayRef = Arc::new(Int64Array::from(vec![11, 9, 10, 50, 1]));
        let cmp = OrderingComparator::try_new("ts", stored_ts.data_type()).expect("orderable");
        let stored = ["k1", "k2", "k3", "k4"];
        let winners = [
            (
                "k2",
                Winner {
                    row: 0,
                    delete: false,
                    force: false,
                },
            ), // newer: update
            (
                "k3",
                Winner {
                    row: 1,
                    delete: true,
                    force: false,
                },
            ), // older delete: ignored
            (
                "k4",
                Winner {
                    row: 2,
                    delete: true,
                    force: false,
                },
            ), // equal delete: deletes
            (
                "k9",
                Winner {
                    row: 3,
                    delete: false,
                    force: false,
                },
            ), // insert
            (
                "k8",
                Winner {
                    row: 4,
                    delete: true,
                    force: false,
                },
            ), // delete of a missing key
        ];
        let plan = plan_file_group(&stored, &winners, Some((&stored_ts, &incoming_ts, cmp)));
        assert_eq!(
            plan.rows,
            vec![
                Source::Stored(0),
                Source::Update {
                    incoming: 0,
                    stored: 1
                },
                Source::Stored(2),
                Source::Insert(3)
            ]
        );
        assert_eq!(
            (
                plan.updated,
                plan.inserted,
                plan.deleted,
                plan.ignored_older,
                plan.delete_misses
            ),
            (1, 1, 1, 1, 1)
        );
    }

    #[test]
    fn forced_versions_win_whatever_the_ordering_and_tombstones_are_reported() {
        let stored_ts: ArrayRef = Arc::new(Int64Array::from(vec![10, 10]));
        let incoming_ts: ArrayRef = Arc::new(Int64Array::from(vec![1]));
        let cmp = OrderingComparator::try_new("ts", stored_ts.data_type()).expect("orderable");
        let winners = [
            (
                "k1",
                Winner {
                    row: 0,
                    delete: false,
                    force: true,
                },
            ),
            (
                "k2",
                Winner {
                    row: TOMBSTONE_ROW,
                    delete: true,
                    force: true,
                },
            ),
            (
                "k3",
                Winner {
                    row: TOMBSTONE_ROW,
                    delete: true,
                    force: true,
                },
            ),
        ];
        let plan = plan_file_group(
            &["k1", "k2"],
            &winners,
            Some((&stored_ts, &incoming_ts, cmp)),
        );
        assert_eq!(
            plan.rows,
            vec![Source::Update {
                incoming: 0,
                stored: 0
            }]
        );
        assert_eq!(plan.tombstone_deletes, vec!["k2".to_string()]);
        assert_eq!((plan.deleted, plan.delete_misses), (0, 0));
    }
}
