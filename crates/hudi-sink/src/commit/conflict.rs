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
//! | log versions follow commit order | a deltacommit after the base appended a higher log version to a group the candidate appends to | [`Conflict::LogVersionBehind`] |
//! | another engine's plan takes the group | another engine's pending compaction plans a group the candidate appended to below the compaction's slice, or the candidate is older than it | [`Conflict::PlannedByCompaction`] |
//!
//! Merge-on-read appends commute: two deltacommits that each append a log file to the same file group do not
//! conflict (readers merge both logs), as long as the later commit's log comes later in reader order (the last
//! rule: Java's log scanner stops at the first block newer than the query instant, so block instants must
//! grow with the log's place: its slice's base instant, then its version). Appends do conflict with whatever
//! rewrites the group (a compaction, a replacecommit) and with a new file group in their bucket, unless the
//! append went to the slice the rewrite made (or a later one): a member that saw the compaction complete
//! appends to its slice. A compaction `commit` carries no checkpoint, so it does not count for the
//! completion order of deltacommits; it may complete after newer deltacommits (its merge runs outside the
//! lock), which is why a pending compaction holds every writer's base below it ([`writer_base`]).
//!
//! "After the base" means: not in the candidate's view when it began. That is every commit newer than the base,
//! and also a write that was pending below the base then and completed since ([`Candidate::pending`]): another
//! engine's writer (Spark) completes its instants out of instant order, so an instant it requested before the
//! base completed may complete after it. Its file groups would otherwise never be checked.
//!
//! The checker is pure: it sees the candidate's write stats and base, and the completed instants with their
//! write stats, never storage. The coordinator reads the metadata of one completed commit at a time and stops
//! at the first conflict ([`Candidate::check_order`], then [`Candidate::check_against`] per commit after the
//! base), so a conflict costs no more reads than it needs; [`check`] applies the same rules to metadata
//! already at hand. A conflict is an answer, not an error: the writer aborts its instant and retries with a
//! fresh one (its text is the `reason` of the `conflict` answer).

use std::collections::{BTreeMap, BTreeSet};

use crate::index::bucket::bucket_id_from_file_id;
use crate::table::commit::WriteStat;
use crate::table::instant::{Instant, InstantTime};
use crate::table::planned_groups::PlannedGroups;

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
    /// A deltacommit completed after the candidate's base appended a log file that comes later in reader
    /// order (a higher version in the same slice, or any log of a newer slice) to a file group the candidate
    /// appends to: the candidate's blocks would come before older-instant blocks of the winner, and Java
    /// readers of earlier instants would stop before them.
    ///
    /// Help: the writer retries, appending the next version.
    #[error(
        "log version {version} of file group {file_id} in partition {partition:?} is below version \
         {winner_version} appended by commit {winner}"
    )]
    LogVersionBehind {
        /// Partition path.
        partition: String,
        /// The shared file group.
        file_id: String,
        /// The candidate's log version.
        version: i64,
        /// The winner's (higher) log version.
        winner_version: i64,
        /// The deltacommit that completed first.
        winner: InstantTime,
    },
    /// Another engine's compaction is pending on a file group the candidate appended to, and the append did
    /// not go to the slice that compaction will make, or the candidate is older than the compaction. Hudi's
    /// executors merge only the logs their plan names and carry nothing, so a log below the compaction's slice
    /// would vanish behind its base file (`table::planned_groups`); a block older than the slice it sits in
    /// would be missed by time travel between the two.
    ///
    /// Help: the writer retries with a fresh instant, appending to the compaction's slice.
    #[error(
        "file group {file_id} in partition {partition:?} is planned by compaction {compaction} of another \
         engine: appends go to its slice, from a newer instant"
    )]
    PlannedByCompaction {
        /// Partition path.
        partition: String,
        /// The planned file group.
        file_id: String,
        /// The pending compaction.
        compaction: InstantTime,
    },
}

/// Whether a conflict's text (as the coordinator answers it) is [`Conflict::PlannedByCompaction`]: the writer's
/// timeline missed another engine's compaction and must be listed again before the next attempt.
pub fn is_planned_by_compaction(reason: &str) -> bool {
    reason.contains(PLANNED_BY_ANOTHER_ENGINE)
}

/// The words of [`Conflict::PlannedByCompaction`]'s text that [`is_planned_by_compaction`] looks for.
const PLANNED_BY_ANOTHER_ENGINE: &str = "of another engine: appends go to its slice";

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
    /// Writes pending below the base when the candidate began: they were not in its view.
    pending: BTreeSet<&'a InstantTime>,
    groups: BTreeSet<(&'a str, &'a str)>,
    buckets: BTreeSet<(&'a str, u32)>,
    /// Buckets of the groups it creates or rewrites (not merge-on-read appends).
    rewritten_buckets: BTreeSet<(&'a str, u32)>,
    /// Merge-on-read appends: the log's place per (partition, file group).
    appends: BTreeMap<(&'a str, &'a str), LogPlace>,
    /// Whether the candidate is a deltacommit (merge-on-read): compaction commits do not order it.
    delta: bool,
}

use crate::table::timeline::orders_writes;
pub use crate::table::timeline::{pending_below, writer_base};

/// The (partition, file group) and (partition, bucket) keys of a file group.
fn bucket_of<'s>(partition: &'s str, file_id: &str) -> Option<(&'s str, u32)> {
    bucket_id_from_file_id(file_id).map(|b| (partition, b))
}

/// Where a merge-on-read log sits in reader order: the base instant of its slice (from its name; `None`
/// when the name does not parse), then its version.
#[derive(Debug, Clone, PartialEq, Eq)]
struct LogPlace {
    base: Option<InstantTime>,
    version: i64,
}

impl LogPlace {
    /// Whether `self` comes before `other` in reader order. Logs of two slices order by their base instants;
    /// without both bases, by version alone.
    fn is_before(&self, other: &LogPlace) -> bool {
        match (&self.base, &other.base) {
            (Some(a), Some(b)) if a != b => a < b,
            _ => self.version < other.version,
        }
    }
}

/// The place of a merge-on-read append (a stat whose file is a log file), `None` for a base file.
fn appended_place(stat: &WriteStat) -> Option<LogPlace> {
    if !stat.file_name().starts_with('.') {
        return None;
    }
    let parsed = crate::log_file::LogFileName::parse(stat.file_name()).ok();
    let version = stat
        .log_version
        .or_else(|| parsed.as_ref().map(|n| i64::from(n.version)))?;
    Some(LogPlace {
        base: parsed.map(|n| n.base_instant),
        version,
    })
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
        let mut rewritten_buckets = BTreeSet::new();
        let mut appends = BTreeMap::new();
        for s in stats {
            let group = (s.partition_path.as_str(), s.file_id.as_str());
            groups.insert(group);
            buckets.extend(bucket_of(&s.partition_path, &s.file_id));
            match appended_place(s) {
                Some(place) => {
                    appends.insert(group, place);
                }
                None => rewritten_buckets.extend(bucket_of(&s.partition_path, &s.file_id)),
            }
        }
        Self {
            instant,
            base,
            pending: BTreeSet::new(),
            groups,
            buckets,
            rewritten_buckets,
            appends,
            delta: false,
        }
    }

    /// The candidate is a deltacommit of a merge-on-read table.
    pub fn deltacommit(mut self, delta: bool) -> Self {
        self.delta = delta;
        self
    }

    /// The write instants that were pending below the base when the candidate began ([`pending_below`]):
    /// whichever of them completed since is checked too.
    pub fn pending(mut self, pending: &'a [InstantTime]) -> Self {
        if !crate::mutation::is_disabled(crate::mutation::Mutation::PendingBelowBaseChecked) {
            self.pending = pending.iter().collect();
        }
        self
    }

    /// Whether `done` completed after the candidate's base (the commits it must be checked against): newer
    /// than the base, or pending below it when the candidate began.
    pub fn is_after_base(&self, done: &Instant) -> bool {
        self.base.is_none_or(|b| done.time > *b) || self.pending.contains(&done.time)
    }

    /// Completion follows instant order: refused when a newer commit completed. Replacecommits do not count,
    /// nor, for a deltacommit, compaction commits: neither carries a checkpoint.
    pub fn check_order<'i>(
        &self,
        completed: impl IntoIterator<Item = &'i Instant>,
    ) -> Result<(), Conflict> {
        match completed
            .into_iter()
            .find(|done| done.time > *self.instant && orders_writes(done, self.delta))
        {
            Some(newer) => Err(Conflict::OlderThanCompleted {
                instant: self.instant.clone(),
                newer: newer.time.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Another engine's pending compactions: every append to a group one of them plans went to its slice, from
    /// a newer instant ([`Conflict::PlannedByCompaction`]).
    pub fn check_planned(&self, planned: &PlannedGroups) -> Result<(), Conflict> {
        if !planned.has_foreign()
            || crate::mutation::is_disabled(crate::mutation::Mutation::ForeignCompactionSlice)
        {
            return Ok(());
        }
        for (&(partition, file_id), place) in &self.appends {
            if let Some(compaction) = planned.foreign(partition, file_id) {
                if place.base.as_ref() != Some(compaction) || self.instant <= compaction {
                    return Err(Conflict::PlannedByCompaction {
                        partition: partition.to_string(),
                        file_id: file_id.to_string(),
                        compaction: compaction.clone(),
                    });
                }
            }
        }
        Ok(())
    }

    /// The file group, bucket and log version rules against one commit completed after the base.
    pub fn check_against(&self, done: &CompletedWrite) -> Result<(), Conflict> {
        let winner = || done.instant.time.clone();
        // Per (partition, file group) the winner wrote: the latest log place it appended, or `None` when it
        // wrote a base file there.
        let mut written: BTreeMap<(&str, &str), Option<LogPlace>> = BTreeMap::new();
        for s in &done.written {
            let key = (s.partition_path.as_str(), s.file_id.as_str());
            let place = appended_place(s);
            let entry = written.entry(key).or_insert_with(|| place.clone());
            *entry = match (entry.take(), place) {
                (Some(a), Some(b)) => Some(if a.is_before(&b) { b } else { a }),
                _ => None,
            };
        }
        let replaced: BTreeSet<(&str, &str)> = done
            .replaced
            .iter()
            .map(|(p, f)| (p.as_str(), f.as_str()))
            .collect();
        // Groups the candidate appended to at the slice the winner made (or a later one): settled, for the
        // bucket rule too (the winner's base file there is not another group of the bucket).
        let mut settled: BTreeSet<(&str, &str)> = BTreeSet::new();
        for &(partition, file_id) in &self.groups {
            let key = (partition, file_id);
            let ours = self.appends.get(&key);
            let is_replaced = replaced.contains(&key);
            let conflict = match (written.get(&key), ours) {
                // Appends of one window's members carry the same instant: they commute.
                (Some(Some(_)), Some(_)) if !is_replaced && done.instant.time == *self.instant => {
                    None
                }
                // Both appended: logs commute, if the later commit's log comes later.
                (Some(Some(theirs)), Some(place)) if !is_replaced && theirs.is_before(place) => {
                    None
                }
                (Some(Some(theirs)), Some(place)) if !is_replaced => {
                    Some(Conflict::LogVersionBehind {
                        partition: partition.to_string(),
                        file_id: file_id.to_string(),
                        version: place.version,
                        winner_version: theirs.version,
                        winner: winner(),
                    })
                }
                // The winner rewrote the group (a compaction's new base file) and the candidate appended to
                // the slice it made, or a later one: the candidate saw it complete.
                (Some(None), Some(place))
                    if !is_replaced
                        && place.base.as_ref().is_some_and(|b| *b >= done.instant.time) =>
                {
                    settled.insert(key);
                    None
                }
                (Some(_), _) => Some(Conflict::FileGroupWritten {
                    partition: partition.to_string(),
                    file_id: file_id.to_string(),
                    winner: winner(),
                }),
                (None, _) if is_replaced => Some(Conflict::FileGroupReplaced {
                    partition: partition.to_string(),
                    file_id: file_id.to_string(),
                    winner: winner(),
                }),
                (None, _) => None,
            };
            if let Some(conflict) = conflict {
                return Err(conflict);
            }
        }
        // Buckets: a group created or rewritten in a bucket the other side touched.
        let mut their_buckets = BTreeSet::new();
        let mut their_rewritten = BTreeSet::new();
        for (&(p, f), version) in written.iter().filter(|(k, _)| !settled.contains(*k)) {
            their_buckets.extend(bucket_of(p, f));
            if version.is_none() {
                their_rewritten.extend(bucket_of(p, f));
            }
        }
        for &(p, f) in &replaced {
            their_buckets.extend(bucket_of(p, f));
            their_rewritten.extend(bucket_of(p, f));
        }
        let touched = self
            .buckets
            .intersection(&their_rewritten)
            .chain(self.rewritten_buckets.intersection(&their_buckets))
            .next();
        if let Some(&(partition, bucket)) = touched {
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
mod tests;
