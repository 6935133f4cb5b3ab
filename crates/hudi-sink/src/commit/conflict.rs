//! Optimistic concurrency: the rules by which a commit loses to commits that completed first.
//!
//! Writers write their files without the lock, against the table as of their *base instant* (the latest
//! completed instant when they began). At commit the coordinator checks the candidate against the completed
//! commits (docs/architecture.md, "Exactly-once"):
//!
//! | rule | refused when | variant |
//! | --- | --- | --- |
//! | completion follows instant order | a newer commit (not a replacecommit) completed | [`Conflict::OlderThanCompleted`] |
//! | one writer per file group | a commit after the base wrote the same (partition, file group) | [`Conflict::FileGroupWritten`] |
//! | replaced groups count as touched | a replacecommit after the base replaced one of its file groups | [`Conflict::FileGroupReplaced`] |
//! | one writer per bucket | a commit after the base touched the same (partition, bucket) | [`Conflict::BucketTouched`] |
//!
//! The checker is pure: it sees the candidate's write stats and base, and the completed instants with their
//! write stats, never storage. The coordinator reads the metadata of one completed commit at a time and stops
//! at the first conflict ([`Candidate::check_order`], then [`Candidate::check_against`] per commit after the
//! base), so a conflict costs no more reads than it needs; [`check`] applies the same rules to metadata
//! already at hand. A conflict is an answer, not an error: the writer aborts its instant and retries with a
//! fresh one (its text is the `reason` of the `conflict` answer).

use std::collections::BTreeSet;

use crate::index::bucket::bucket_id_from_file_id;
use crate::table::commit::WriteStat;
use crate::table::instant::{Action, Instant, InstantTime};

/// Why a candidate commit cannot complete: a commit that completed first changed what it was based on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Conflict {
    /// A newer instant completed before the candidate. Readers (and HoodieStreamer) take the checkpoint of
    /// the latest instant, so an older instant completing after it would hide its offsets. Replacecommits
    /// (clustering) carry no checkpoint and do not count.
    ///
    /// Help: the writer retries with a fresh (newer) instant.
    #[error("instant {instant} is older than commit {newer} completed meanwhile")]
    OlderThanCompleted {
        /// The candidate.
        instant: InstantTime,
        /// The newer completed commit.
        newer: InstantTime,
    },
    /// A commit completed after the candidate's base wrote a file group the candidate wrote too: the
    /// candidate's new slice would not contain that commit's rows.
    ///
    /// Help: the writer retries on the new base, merging with the winner's slice.
    #[error("file group {file_id} in partition {partition:?} was changed by commit {winner}")]
    FileGroupWritten {
        /// Partition path.
        partition: String,
        /// The shared file group.
        file_id: String,
        /// The commit that completed first.
        winner: InstantTime,
    },
    /// A replacecommit completed after the candidate's base replaced a file group the candidate wrote: the
    /// candidate's slice would land in a group readers no longer see. The text is the one of
    /// [`Conflict::FileGroupWritten`] (the protocol's reason is unchanged).
    ///
    /// Help: the writer retries on the new base, where the group is gone.
    #[error("file group {file_id} in partition {partition:?} was changed by commit {winner}")]
    FileGroupReplaced {
        /// Partition path.
        partition: String,
        /// The replaced file group.
        file_id: String,
        /// The replacecommit.
        winner: InstantTime,
    },
    /// A commit completed after the candidate's base touched a bucket the candidate wrote (bucket index):
    /// one bucket is one file group, so two writers of a bucket would each miss the other's records.
    ///
    /// Help: the writer retries on the new base.
    #[error("bucket {bucket} in partition {partition:?} was changed by commit {winner}")]
    BucketTouched {
        /// Partition path.
        partition: String,
        /// The shared bucket.
        bucket: u32,
        /// The commit that completed first.
        winner: InstantTime,
    },
}

/// What a completed commit changed, from its metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct CompletedWrite {
    /// The completed instant.
    pub instant: Instant,
    /// Its write stats (the files it wrote).
    pub written: Vec<WriteStat>,
    /// (partition, file group) pairs it replaced (a replacecommit's `partitionToReplaceFileIds`).
    pub replaced: Vec<(String, String)>,
}

/// The commit being checked: its instant, base and what its write stats touch.
#[derive(Debug, Clone)]
pub struct Candidate<'a> {
    instant: &'a InstantTime,
    base: Option<&'a InstantTime>,
    groups: BTreeSet<(&'a str, &'a str)>,
    buckets: BTreeSet<(&'a str, u32)>,
}

/// The (partition, file group) and (partition, bucket) keys of a file group.
fn bucket_of<'s>(partition: &'s str, file_id: &str) -> Option<(&'s str, u32)> {
    bucket_id_from_file_id(file_id).map(|b| (partition, b))
}

impl<'a> Candidate<'a> {
    /// The candidate `instant`, written against `base`, with `stats`.
    pub fn new(
        instant: &'a InstantTime,
        base: Option<&'a InstantTime>,
        stats: &'a [WriteStat],
    ) -> Self {
        let mut groups = BTreeSet::new();
        let mut buckets = BTreeSet::new();
        for s in stats {
            groups.insert((s.partition_path.as_str(), s.file_id.as_str()));
            buckets.extend(bucket_of(&s.partition_path, &s.file_id));
        }
        Self {
            instant,
            base,
            groups,
            buckets,
        }
    }

    /// Whether `done` completed after the candidate's base (with no base, every commit did): only those can
    /// conflict with what the candidate wrote.
    pub fn is_after_base(&self, done: &Instant) -> bool {
        self.base.is_none_or(|b| done.time > *b)
    }

    /// Completion follows instant order: refused when one of `completed` (the completed commit-like
    /// instants, in time order) is newer than the candidate, replacecommits excepted.
    pub fn check_order<'i>(
        &self,
        completed: impl IntoIterator<Item = &'i Instant>,
    ) -> Result<(), Conflict> {
        match completed
            .into_iter()
            .find(|done| done.time > *self.instant && done.action != Action::ReplaceCommit)
        {
            Some(newer) => Err(Conflict::OlderThanCompleted {
                instant: self.instant.clone(),
                newer: newer.time.clone(),
            }),
            None => Ok(()),
        }
    }

    /// The file-group and bucket rules against one commit completed after the base. The first shared key
    /// (in partition, then file-group order) is the one named.
    pub fn check_against(&self, done: &CompletedWrite) -> Result<(), Conflict> {
        let winner = || done.instant.time.clone();
        let written: BTreeSet<(&str, &str)> = done
            .written
            .iter()
            .map(|s| (s.partition_path.as_str(), s.file_id.as_str()))
            .collect();
        let replaced: BTreeSet<(&str, &str)> = done
            .replaced
            .iter()
            .map(|(p, f)| (p.as_str(), f.as_str()))
            .collect();
        let mut theirs = written.clone();
        theirs.extend(replaced.iter().copied());
        if let Some(&(partition, file_id)) = self.groups.intersection(&theirs).next() {
            let was_written = written.contains(&(partition, file_id));
            let (partition, file_id) = (partition.to_string(), file_id.to_string());
            return Err(if was_written {
                Conflict::FileGroupWritten {
                    partition,
                    file_id,
                    winner: winner(),
                }
            } else {
                Conflict::FileGroupReplaced {
                    partition,
                    file_id,
                    winner: winner(),
                }
            });
        }
        let their_buckets: BTreeSet<(&str, u32)> =
            theirs.iter().filter_map(|(p, f)| bucket_of(p, f)).collect();
        if let Some(&(partition, bucket)) = self.buckets.intersection(&their_buckets).next() {
            return Err(Conflict::BucketTouched {
                partition: partition.to_string(),
                bucket,
                winner: winner(),
            });
        }
        Ok(())
    }
}

/// Every rule: `completed` are the completed commit-like instants in time order, `after_base` those after
/// the candidate's base with what they changed (in time order). The first rule broken is the answer.
pub fn check<'i>(
    candidate: &Candidate<'_>,
    completed: impl IntoIterator<Item = &'i Instant>,
    after_base: &[CompletedWrite],
) -> Result<(), Conflict> {
    candidate.check_order(completed)?;
    for done in after_base
        .iter()
        .filter(|d| candidate.is_after_base(&d.instant))
    {
        candidate.check_against(done)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::instant::State;

    fn time(t: &str) -> InstantTime {
        InstantTime::parse(t).unwrap_or_else(|e| panic!("{e}"))
    }

    fn done(
        t: &str,
        action: Action,
        written: &[(&str, &str)],
        replaced: &[(&str, &str)],
    ) -> CompletedWrite {
        CompletedWrite {
            instant: Instant::new(time(t), action, State::Completed),
            written: written
                .iter()
                .map(|(p, f)| WriteStat::new(f, p, &format!("{p}/{f}_0-0-0_{t}.parquet")))
                .collect(),
            replaced: replaced
                .iter()
                .map(|(p, f)| (p.to_string(), f.to_string()))
                .collect(),
        }
    }

    fn stats(groups: &[(&str, &str)]) -> Vec<WriteStat> {
        groups
            .iter()
            .map(|(p, f)| WriteStat::new(f, p, &format!("{p}/{f}.parquet")))
            .collect()
    }

    const BASE: &str = "20250101000000000";
    const WINNER: &str = "20250101000001000";
    const CANDIDATE: &str = "20250101000002000";
    const NEWER: &str = "20250101000003000";

    fn checked(written: &[(&str, &str)], completed: &[CompletedWrite]) -> Result<(), Conflict> {
        let (instant, base, stats) = (time(CANDIDATE), time(BASE), stats(written));
        let candidate = Candidate::new(&instant, Some(&base), &stats);
        check(&candidate, completed.iter().map(|d| &d.instant), completed)
    }

    #[test]
    fn disjoint_commits_after_the_base_do_not_conflict() {
        let completed = [
            done(BASE, Action::Commit, &[("p", "g1")], &[]),
            done(WINNER, Action::Commit, &[("p", "g2"), ("q", "g1")], &[]),
        ];
        assert_eq!(checked(&[("p", "g1")], &completed), Ok(()));
        // Commits at or before the base are the candidate's own view: never a conflict.
        let completed = [done(BASE, Action::Commit, &[("p", "g1")], &[])];
        assert_eq!(checked(&[("p", "g1")], &completed), Ok(()));
    }

    #[test]
    fn a_newer_completed_commit_refuses_an_older_instant() {
        let completed = [done(NEWER, Action::Commit, &[("q", "other")], &[])];
        let conflict = checked(&[("p", "g1")], &completed);
        assert_eq!(
            conflict,
            Err(Conflict::OlderThanCompleted {
                instant: time(CANDIDATE),
                newer: time(NEWER),
            })
        );
        assert_eq!(
            conflict.map_err(|c| c.to_string()),
            Err(format!(
                "instant {CANDIDATE} is older than commit {NEWER} completed meanwhile"
            ))
        );
        // A newer replacecommit (clustering) carries no checkpoint: no order conflict.
        let completed = [done(
            NEWER,
            Action::ReplaceCommit,
            &[("q", "new")],
            &[("q", "old")],
        )];
        assert_eq!(checked(&[("p", "g1")], &completed), Ok(()));
    }

    #[test]
    fn a_file_group_written_after_the_base_conflicts() {
        let completed = [done(
            WINNER,
            Action::Commit,
            &[("p", "g2"), ("p", "g1")],
            &[],
        )];
        let conflict = checked(&[("p", "g1"), ("p", "g3")], &completed);
        assert_eq!(
            conflict,
            Err(Conflict::FileGroupWritten {
                partition: "p".into(),
                file_id: "g1".into(),
                winner: time(WINNER),
            })
        );
        assert_eq!(
            conflict.map_err(|c| c.to_string()),
            Err(format!(
                "file group g1 in partition \"p\" was changed by commit {WINNER}"
            ))
        );
    }

    #[test]
    fn a_file_group_replaced_after_the_base_conflicts() {
        let completed = [done(
            WINNER,
            Action::ReplaceCommit,
            &[("p", "new")],
            &[("p", "g1")],
        )];
        let conflict = checked(&[("p", "g1")], &completed);
        assert_eq!(
            conflict,
            Err(Conflict::FileGroupReplaced {
                partition: "p".into(),
                file_id: "g1".into(),
                winner: time(WINNER),
            })
        );
        // The protocol's reason is the same as for a written group.
        assert_eq!(
            conflict.map_err(|c| c.to_string()),
            Err(format!(
                "file group g1 in partition \"p\" was changed by commit {WINNER}"
            ))
        );
    }

    #[test]
    fn a_bucket_touched_after_the_base_conflicts() {
        // Two file ids of bucket 3 (different uuid suffixes): no shared group, a shared bucket.
        let mine = "00000003-aaaa-bbbb-cccc-000000000001-0";
        let theirs = "00000003-dddd-eeee-ffff-000000000002-0";
        let completed = [done(
            WINNER,
            Action::Commit,
            &[("p", theirs), ("q", mine)],
            &[],
        )];
        let conflict = checked(&[("p", mine)], &completed);
        assert_eq!(
            conflict,
            Err(Conflict::BucketTouched {
                partition: "p".into(),
                bucket: 3,
                winner: time(WINNER),
            })
        );
        assert_eq!(
            conflict.map_err(|c| c.to_string()),
            Err(format!(
                "bucket 3 in partition \"p\" was changed by commit {WINNER}"
            ))
        );
    }

    #[test]
    fn the_first_rule_broken_is_the_answer() {
        // Order before groups, and the first commit after the base before later ones.
        let completed = [
            done(WINNER, Action::Commit, &[("p", "g1")], &[]),
            done(NEWER, Action::Commit, &[("p", "g1")], &[]),
        ];
        assert!(matches!(
            checked(&[("p", "g1")], &completed),
            Err(Conflict::OlderThanCompleted { .. })
        ));
        let later = "20250101000001500";
        let completed = [
            done(WINNER, Action::Commit, &[("p", "g2")], &[]),
            done(later, Action::Commit, &[("p", "g1")], &[]),
        ];
        assert_eq!(
            checked(&[("p", "g1"), ("p", "g2")], &completed),
            Err(Conflict::FileGroupWritten {
                partition: "p".into(),
                file_id: "g2".into(),
                winner: time(WINNER),
            })
        );
        // Without a base every completed commit counts.
        let (instant, stats) = (time(CANDIDATE), stats(&[("p", "g1")]));
        let candidate = Candidate::new(&instant, None, &stats);
        let completed = [done(BASE, Action::Commit, &[("p", "g1")], &[])];
        assert!(matches!(
            check(&candidate, completed.iter().map(|d| &d.instant), &completed),
            Err(Conflict::FileGroupWritten { .. })
        ));
    }
}
