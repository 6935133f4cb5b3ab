//! The rule against the merge itself: for every small history of one key (a base version or none, planned
//! logs, late logs), the snapshot before the compaction (base, planned, late) and after it (the merged base,
//! late) are read with the sink's own reader (`log_file::merge`), and a history whose snapshot changes must
//! leave its group out.

use std::collections::BTreeSet;

use bytes::Bytes;

use super::{leaves_out, needs_planned_keys, LateKeys};
use crate::log_file::merge_tests::{
    all_committed, base_file, deletes, event_time, merged, scan, upserts, T1, T2,
};
use crate::log_file::{DeleteRecord, MergeMode, OrderingValue};

/// One log entry of key `a`, each written as its own log file.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Entry {
    /// A row with this ordering value.
    Row(i64),
    /// A `_hoodie_is_deleted = true` row with this ordering value.
    IsDeleted(i64),
    /// A commit-time delete (`IntWrapper(0)`).
    Delete,
    /// A delete with this ordering value.
    OrderedDelete(i64),
}

const ENTRIES: [Entry; 6] = [
    Entry::Row(1),
    Entry::Row(9),
    Entry::IsDeleted(7),
    Entry::IsDeleted(2),
    Entry::Delete,
    Entry::OrderedDelete(6),
];

/// The log file of `entry` written by `t`, labelled `label` (rows carry it in `v`, to tell versions apart).
fn log_of(entry: Entry, t: &str, label: &str) -> Vec<u8> {
    match entry {
        Entry::Row(ts) => upserts(t, &[("a", ts, label, false)]),
        Entry::IsDeleted(ts) => upserts(t, &[("a", ts, label, true)]),
        Entry::Delete => deletes(t, &[DeleteRecord::new("a", "")]),
        Entry::OrderedDelete(ts) => deletes(
            t,
            &[DeleteRecord {
                ordering_value: Some(OrderingValue::Long(ts)),
                ..DeleteRecord::new("a", "")
            }],
        ),
    }
}

fn has_delete(entries: &[Entry]) -> bool {
    entries.iter().any(|e| !matches!(e, Entry::Row(_)))
}

/// Every sequence of `ENTRIES` of length `lengths`.
fn sequences(lengths: std::ops::RangeInclusive<usize>) -> Vec<Vec<Entry>> {
    let mut out = Vec::new();
    for n in lengths {
        let mut index = vec![0usize; n];
        loop {
            out.push(index.iter().map(|&i| ENTRIES[i]).collect());
            let Some(pos) = (0..n).rev().find(|&p| index[p] + 1 < ENTRIES.len()) else {
                break;
            };
            index[pos] += 1;
            for i in index.iter_mut().skip(pos + 1) {
                *i = 0;
            }
        }
    }
    out
}

/// (key, ts, v) of a merged slice: the commit time is left out, the label tells versions apart.
fn rows(base: Option<Bytes>, logs: &[Vec<u8>]) -> Vec<(String, i64, String)> {
    merged(base, scan(logs, &all_committed(), &event_time()))
        .into_iter()
        .map(|(k, _, ts, v)| (k, ts, v))
        .collect()
}

/// Whether the rule leaves the group out for `planned` and `late` (the late logs given as bytes).
fn decide(mode: &MergeMode, planned: &[Vec<u8>], late: &[Vec<u8>]) -> bool {
    let records = scan(planned, &all_committed(), &event_time());
    let deleted: BTreeSet<String> = records
        .versions()
        .iter()
        .filter(|(_, v)| v.is_delete())
        .map(|(k, _)| k.clone())
        .collect();
    let mut keys = LateKeys::default();
    for (i, log) in late.iter().enumerate() {
        keys.add(
            &format!("late-{i}"),
            &Bytes::from(log.clone()),
            !deleted.is_empty(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    }
    let planned_keys: BTreeSet<String> =
        records.versions().iter().map(|(k, _)| k.clone()).collect();
    let without = leaves_out(mode, &deleted, &keys, None);
    assert_eq!(without.is_none(), needs_planned_keys(mode, &deleted, &keys));
    let with = leaves_out(mode, &deleted, &keys, Some(&planned_keys))
        .unwrap_or_else(|| panic!("an answer once the planned keys are known"));
    if let Some(answer) = without {
        assert_eq!(answer, with, "the planned keys change a settled answer");
    }
    with
}

#[test]
fn every_history_whose_snapshot_a_carry_changes_leaves_its_group_out() {
    let mut changed = 0;
    let mut left_out = 0;
    let mut kept_with_deletes = 0;
    let mut histories = 0;
    for base in [None, Some(5)] {
        let base_bytes = base.map(|ts| base_file(&[("a", ts, "base", false)], 10));
        for planned in sequences(0..=2) {
            let planned_logs: Vec<Vec<u8>> = planned
                .iter()
                .enumerate()
                .map(|(i, e)| log_of(*e, T1, &format!("L{i}")))
                .collect();
            // The compaction's new base file: the planned slice merged.
            let compacted = rows(base_bytes.clone(), &planned_logs);
            let new_base = (!compacted.is_empty()).then(|| {
                let rows: Vec<(&str, i64, &str, bool)> = compacted
                    .iter()
                    .map(|(k, ts, v)| (k.as_str(), *ts, v.as_str(), false))
                    .collect();
                base_file(&rows, 10)
            });
            for late in sequences(1..=2) {
                histories += 1;
                let late_logs: Vec<Vec<u8>> = late
                    .iter()
                    .enumerate()
                    .map(|(i, e)| log_of(*e, T2, &format!("C{i}")))
                    .collect();
                let all: Vec<Vec<u8>> = planned_logs.iter().chain(&late_logs).cloned().collect();
                let before = rows(base_bytes.clone(), &all);
                let after = rows(new_base.clone(), &late_logs);
                let leaves = decide(&event_time(), &planned_logs, &late_logs);
                let history = format!("base {base:?}, planned {planned:?}, late {late:?}");
                if before != after {
                    changed += 1;
                    assert!(
                        leaves,
                        "{history}: {before:?} before, {after:?} after, kept"
                    );
                }
                if leaves {
                    left_out += 1;
                } else if has_delete(&planned) || has_delete(&late) {
                    kept_with_deletes += 1;
                }
                if !has_delete(&planned) && !has_delete(&late) {
                    assert!(!leaves, "{history}: upserts alone leave the group out");
                }
                assert!(
                    !decide(&MergeMode::CommitTime, &planned_logs, &late_logs),
                    "{history}: the commit-time rule leaves nothing out"
                );
            }
        }
    }
    // The enumeration reaches the cases the rule exists for, and the rule is not "any delete".
    eprintln!("{histories} histories: {changed} change, {left_out} left out, {kept_with_deletes} kept with a delete");
    assert!(changed > 50, "{changed} of {histories} histories change");
    assert!(
        kept_with_deletes > histories / 4,
        "{kept_with_deletes} of {histories} kept with a delete"
    );
}

#[test]
fn a_planned_delete_rewritten_late_needs_no_planned_keys() {
    let planned = [log_of(Entry::Delete, T1, "L0")];
    let late = [log_of(Entry::Row(1), T2, "C0")];
    let mut keys = LateKeys::default();
    keys.add("late", &Bytes::from(late[0].clone()), true)
        .unwrap_or_else(|e| panic!("{e}"));
    let deleted: BTreeSet<String> = ["a".to_string()].into();
    assert_eq!(leaves_out(&event_time(), &deleted, &keys, None), Some(true));
    assert!(decide(&event_time(), &planned, &late));
}

#[test]
fn late_rows_without_a_delete_are_not_decoded() {
    // Without planned deletes and without a delete block, a late log is not decoded: nothing is gathered.
    let mut keys = LateKeys::default();
    keys.add("late", &Bytes::from(log_of(Entry::Row(1), T2, "C0")), false)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(keys, LateKeys::default());
    // From a delete block on, logs are decoded.
    keys.add("late", &Bytes::from(log_of(Entry::Delete, T2, "C1")), false)
        .unwrap_or_else(|e| panic!("{e}"));
    keys.add("late", &Bytes::from(log_of(Entry::Row(1), T2, "C2")), false)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(keys.after_delete.contains("a"));
}
