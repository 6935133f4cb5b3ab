//! Which contributions of a window its commit takes: a pure function of the contributions, the table's
//! checkpoint and the commits completed after the window's base (docs/architecture.md, "Interval commit").
//!
//! Contributions are taken in offset order (the lowest first offset first, then by member name). Each one is
//! left out when
//! - the checkpoint, advanced past the contributions taken before it, covers one of its offsets (its batch
//!   was committed already, by an earlier window or by another attempt of the same batch in this one), or
//! - it conflicts ([`super::super::conflict`]) with a commit completed after the base, or with a
//!   contribution taken before it (copy-on-write: the same file group or bucket). Merge-on-read appends of
//!   one window commute: their blocks carry the same instant.
//! - an earlier contribution with offsets of one of its topic-partitions was left out for a conflict: taking
//!   it would move the checkpoint past offsets that are not committed (only several members per
//!   partition, as `hudi-sink ingest` runs them, meet this; the ESM has one batch per partition in flight).

use crate::commit::checkpoint::advance;
use crate::commit::conflict::{Candidate, CompletedWrite, Conflict};
use crate::mutation::{is_disabled, Mutation};
use crate::protocol::{checkpoint_covers, Contribution};
use crate::table::commit::Checkpoint;
use crate::table::instant::{Action, Instant, InstantTime, State};
use crate::table::planned_groups::PlannedGroups;

/// Why a contribution is left out of its window's commit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Exclusion {
    /// Its offsets are committed already: the member re-filters its batch.
    #[error("its offsets are committed already")]
    Covered,
    /// It conflicts: the member writes its batch again in a later window.
    #[error(transparent)]
    Conflict(#[from] Conflict),
    /// It did not submit before its lease ended.
    #[error("it did not submit before its lease ended")]
    Late,
    /// An earlier batch of one of its topic-partitions was left out: it waits for it, in a later window.
    #[error("an earlier batch of {topic}/{partition} moves to a later window")]
    BehindExcluded {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
    },
}

/// The outcome: what the commit takes, what it leaves out, and the checkpoint after it.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolution {
    /// Contributions committed, in the order taken.
    pub accepted: Vec<Contribution>,
    /// Members left out, with the reason.
    pub excluded: Vec<(String, Exclusion)>,
    /// The checkpoint moved past every accepted contribution's offsets.
    pub checkpoint: Checkpoint,
}

/// The window being resolved.
#[derive(Debug, Clone, Copy)]
pub struct WindowOf<'a> {
    /// The window's instant.
    pub instant: &'a InstantTime,
    /// Its base instant.
    pub base: Option<&'a InstantTime>,
    /// The writes pending below the base when it opened.
    pub pending: &'a [InstantTime],
    /// Its action (`commit`, or `deltacommit` on merge-on-read).
    pub action: Action,
    /// The groups pending compactions plan (another engine's take appends to their own slice only).
    pub planned: &'a PlannedGroups,
}

fn first_offset(c: &Contribution) -> i64 {
    c.offsets
        .iter()
        .flat_map(|t| t.ranges.iter().map(|r| r.first))
        .min()
        .unwrap_or(i64::MAX)
}

/// Resolves `contributions` against `checkpoint` (the table's, at the close), `completed` (the completed
/// commit-like instants, in time order) and `after_base` (what those after the base changed).
pub fn resolve(
    window: WindowOf<'_>,
    mut contributions: Vec<Contribution>,
    checkpoint: Checkpoint,
    completed: &[&Instant],
    after_base: &[CompletedWrite],
) -> Resolution {
    contributions.sort_by(|a, b| (first_offset(a), &a.member).cmp(&(first_offset(b), &b.member)));
    let delta = window.action == Action::DeltaCommit;
    let table_checkpoint = checkpoint.clone();
    let mut next = checkpoint;
    let mut accepted: Vec<Contribution> = Vec::new();
    let mut excluded = Vec::new();
    // Topic-partitions of contributions left out for a conflict.
    let mut blocked: std::collections::BTreeSet<(String, i32)> = std::collections::BTreeSet::new();
    for contribution in contributions {
        let partitions = || {
            contribution
                .offsets
                .iter()
                .flat_map(|t| t.ranges.iter().map(move |r| (t.topic.clone(), r.partition)))
        };
        if let Some((topic, partition)) = partitions().find(|tp| blocked.contains(tp)) {
            excluded.push((
                contribution.member.clone(),
                Exclusion::BehindExcluded { topic, partition },
            ));
            blocked.extend(partitions());
            continue;
        }
        // Without the dedupe, only the table's checkpoint is looked at: two attempts of one batch both pass.
        let against = if is_disabled(Mutation::ContributionDedupe) {
            &table_checkpoint
        } else {
            &next
        };
        if checkpoint_covers(against, &contribution.offsets)
            && !is_disabled(Mutation::CheckpointFilter)
        {
            excluded.push((contribution.member.clone(), Exclusion::Covered));
            continue;
        }
        if !is_disabled(Mutation::OccCheck) {
            if let Err(conflict) = check_contribution(
                window,
                delta,
                &contribution,
                completed,
                after_base,
                &accepted,
            ) {
                excluded.push((contribution.member.clone(), conflict.into()));
                blocked.extend(partitions());
                continue;
            }
        }
        advance(&mut next, &contribution.offsets);
        accepted.push(contribution);
    }
    Resolution {
        accepted,
        excluded,
        checkpoint: next,
    }
}

fn check_contribution(
    window: WindowOf<'_>,
    delta: bool,
    contribution: &Contribution,
    completed: &[&Instant],
    after_base: &[CompletedWrite],
    accepted: &[Contribution],
) -> Result<(), Conflict> {
    let candidate = Candidate::new(window.instant, window.base, &contribution.write_stats)
        .pending(window.pending)
        .deltacommit(delta);
    crate::commit::conflict::check(&candidate, completed.iter().copied(), after_base)?;
    candidate.check_planned(window.planned)?;
    if accepted.is_empty() {
        return Ok(());
    }
    let taken = CompletedWrite {
        instant: Instant::new(window.instant.clone(), window.action, State::Completed),
        written: accepted
            .iter()
            .flat_map(|c| c.write_stats.iter().cloned())
            .collect(),
        replaced: Vec::new(),
    };
    candidate.check_against(&taken)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{OffsetRange, TopicOffsets};
    use crate::table::commit::WriteStat;

    fn t(s: &str) -> InstantTime {
        InstantTime::parse(s).expect("time")
    }

    fn contribution(member: &str, first: i64, last: i64, files: &[&str]) -> Contribution {
        Contribution {
            member: member.into(),
            operation: "UPSERT".into(),
            write_stats: files
                .iter()
                .map(|f| {
                    let file_id = f.split('_').next().unwrap_or_default();
                    WriteStat::new(file_id, "p", &format!("p/{f}"))
                })
                .collect(),
            schema: "{}".into(),
            offsets: vec![TopicOffsets {
                topic: "t".into(),
                ranges: vec![OffsetRange {
                    partition: 0,
                    first,
                    last,
                }],
            }],
        }
    }

    fn window(instant: &InstantTime, action: Action) -> WindowOf<'_> {
        WindowOf {
            instant,
            base: None,
            pending: &[],
            action,
            planned: &crate::table::planned_groups::NOTHING_PLANNED,
        }
    }

    const T: &str = "20261201000000000";

    #[test]
    fn a_redelivered_batch_is_committed_once() {
        let instant = t(T);
        let a = contribution("a", 0, 9, &["g1-0_1-0-0_20261201000000000.parquet"]);
        let b = contribution("b", 0, 9, &["g2-0_1-0-0_20261201000000000.parquet"]);
        let r = resolve(
            window(&instant, Action::Commit),
            vec![b, a],
            Checkpoint::new(),
            &[],
            &[],
        );
        assert_eq!(
            r.accepted
                .iter()
                .map(|c| c.member.as_str())
                .collect::<Vec<_>>(),
            vec!["a"]
        );
        assert_eq!(r.excluded, vec![("b".to_string(), Exclusion::Covered)]);
        assert_eq!(r.checkpoint.get("t", 0), Some(10));
    }

    #[test]
    fn offsets_the_table_committed_are_left_out_and_later_ones_taken() {
        let instant = t(T);
        let mut checkpoint = Checkpoint::new();
        checkpoint.set("t", 0, 10);
        let old = contribution("old", 5, 9, &[]);
        let new = contribution("new", 10, 19, &[]);
        let r = resolve(
            window(&instant, Action::Commit),
            vec![new, old],
            checkpoint,
            &[],
            &[],
        );
        assert_eq!(r.accepted.len(), 1);
        assert_eq!(r.accepted[0].member, "new");
        assert_eq!(r.excluded, vec![("old".to_string(), Exclusion::Covered)]);
        assert_eq!(r.checkpoint.get("t", 0), Some(20));
    }

    #[test]
    fn copy_on_write_members_of_one_bucket_conflict_and_the_second_moves_on() {
        let instant = t(T);
        let mut a = contribution("a", 0, 9, &["00000001-x_1-0-0_20261201000000000.parquet"]);
        a.offsets[0].ranges[0].partition = 0;
        let mut b = contribution("b", 0, 9, &["00000001-x_2-0-0_20261201000000000.parquet"]);
        b.offsets[0].ranges[0].partition = 1;
        let r = resolve(
            window(&instant, Action::Commit),
            vec![a, b],
            Checkpoint::new(),
            &[],
            &[],
        );
        assert_eq!(r.accepted.len(), 1);
        assert!(matches!(
            r.excluded.as_slice(),
            [(m, Exclusion::Conflict(Conflict::FileGroupWritten { .. }))] if m == "b"
        ));
        // The excluded member's offsets are not in the checkpoint.
        assert_eq!(r.checkpoint.get("t", 1), None);
    }

    #[test]
    fn a_later_batch_of_a_partition_whose_earlier_batch_conflicts_waits_for_it() {
        let instant = t(T);
        // a and b write the same bucket (b conflicts); c is b's partition's next batch, elsewhere.
        let a = contribution("a", 0, 9, &["00000001-x_1-0-0_20261201000000000.parquet"]);
        let mut b = contribution("b", 0, 9, &["00000001-x_2-0-0_20261201000000000.parquet"]);
        b.offsets[0].ranges[0].partition = 1;
        let mut c = contribution("c", 10, 19, &["00000002-y_3-0-0_20261201000000000.parquet"]);
        c.offsets[0].ranges[0].partition = 1;
        let r = resolve(
            window(&instant, Action::Commit),
            vec![c, b, a],
            Checkpoint::new(),
            &[],
            &[],
        );
        assert_eq!(r.accepted.len(), 1);
        assert_eq!(r.accepted[0].member, "a");
        assert!(matches!(
            &r.excluded[1],
            (m, Exclusion::BehindExcluded { partition: 1, .. }) if m == "c"
        ));
        assert_eq!(r.checkpoint.get("t", 1), None, "{:?}", r.checkpoint);
    }

    #[test]
    fn merge_on_read_appends_of_one_window_commute_whatever_their_versions() {
        let instant = t(T);
        let log = |v: u32, token: &str| format!(".00000001-x_20261130000000000.log.{v}_{token}");
        let (la, lb) = (log(2, "1-0-0"), log(1, "2-0-0"));
        let mut a = contribution("a", 0, 9, &[]);
        a.write_stats = vec![WriteStat::new("00000001-x", "p", &format!("p/{la}"))];
        let mut b = contribution("b", 0, 9, &[]);
        b.offsets[0].ranges[0].partition = 1;
        b.write_stats = vec![WriteStat::new("00000001-x", "p", &format!("p/{lb}"))];
        let r = resolve(
            window(&instant, Action::DeltaCommit),
            vec![a, b],
            Checkpoint::new(),
            &[],
            &[],
        );
        assert_eq!(r.accepted.len(), 2, "{:?}", r.excluded);
    }

    #[test]
    fn a_member_conflicting_with_a_commit_after_the_base_is_left_out() {
        let instant = t(T);
        let done = CompletedWrite {
            instant: Instant::new(t("20261130000000000"), Action::Commit, State::Completed),
            written: vec![WriteStat::new(
                "00000001-x",
                "p",
                "p/00000001-x_0-0-0_20261130000000000.parquet",
            )],
            replaced: Vec::new(),
        };
        let a = contribution("a", 0, 9, &["00000001-x_1-0-0_20261201000000000.parquet"]);
        let r = resolve(
            window(&instant, Action::Commit),
            vec![a],
            Checkpoint::new(),
            &[&done.instant],
            std::slice::from_ref(&done),
        );
        assert!(r.accepted.is_empty());
        assert!(matches!(
            r.excluded.as_slice(),
            [(_, Exclusion::Conflict(Conflict::FileGroupWritten { .. }))]
        ));
    }
}
