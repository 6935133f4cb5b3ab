//! [`SliceVisibility`]: which base files a reader counts as committed data, as of a time.
//!
//! The rule (Java `HoodieFileGroup.isFileSliceCommitted` and `containsOrBeforeTimelineStarts`, hudi-rs
//! `get_file_slice_as_of`; hudi-format.md §3.5, §7.3), one clause per method:
//! - [`SliceVisibility::cutoff`]: the slice's instant is ≤ the as-of time and ≤ the latest completed
//!   commit-like instant (nothing is visible before the first commit completes);
//! - [`SliceVisibility::is_committed`]: the instant is a completed commit-like instant, or older than the first
//!   one (archived), provided it is neither on the timeline (pending, e.g. a failed write) nor retired by a
//!   rollback — our addition, so that a frozen writer's files older than the first commit of a young table never
//!   count as committed;
//! - [`SliceVisibility::is_replaced`]: the slice's file group was not replaced by a completed replacecommit ≤
//!   the cutoff.
//!
//! Per file group the visible slice with the greatest instant wins (the callers apply that).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use crate::storage::Storage;
use crate::table::instant::{Action, InstantTime};
use crate::table::timeline::{Timeline, TimelineError};

/// File groups removed by completed replacecommits (`partitionToReplaceFileIds`), with the replacing times.
///
/// Invariant: per group, `first` ≤ `last` are the earliest and latest replacecommit times naming it (Hudi never
/// names a group twice, but a group stays replaced as long as any of its replacecommits is on the timeline).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplacedGroups {
    /// Partition path → file id → (first, last) replacing time.
    groups: BTreeMap<String, BTreeMap<String, (InstantTime, InstantTime)>>,
}

impl ReplacedGroups {
    /// Records that the replacecommit at `by` replaced `file_id` of `partition_path`.
    pub fn insert(&mut self, partition_path: &str, file_id: &str, by: &InstantTime) {
        let entry = self
            .groups
            .entry(partition_path.to_string())
            .or_default()
            .entry(file_id.to_string())
            .or_insert_with(|| (by.clone(), by.clone()));
        if *by < entry.0 {
            entry.0 = by.clone();
        }
        if *by > entry.1 {
            entry.1 = by.clone();
        }
    }

    /// The earliest replacecommit time that replaced this group, if any.
    pub fn replaced_at(&self, partition_path: &str, file_id: &str) -> Option<&InstantTime> {
        self.groups
            .get(partition_path)
            .and_then(|ids| ids.get(file_id))
            .map(|(first, _)| first)
    }

    /// Forgets groups whose every replacecommit is older than `first_active` (they left the active timeline, so
    /// readers no longer exclude those groups either; archival only removes a replacecommit once the cleaner
    /// has deleted the replaced files). Keeps the set bounded by the active timeline.
    pub fn prune_before(&mut self, first_active: &InstantTime) {
        for ids in self.groups.values_mut() {
            ids.retain(|_, (_, last)| *last >= *first_active);
        }
        self.groups.retain(|_, ids| !ids.is_empty());
    }

    /// Number of replaced groups.
    pub fn len(&self) -> usize {
        self.groups.values().map(BTreeMap::len).sum()
    }

    /// Whether no group is replaced.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Every replaced (partition, file id), sorted.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.groups
            .iter()
            .flat_map(|(p, ids)| ids.keys().map(move |f| (p.as_str(), f.as_str())))
    }

    /// Reads the metadata of every completed replacecommit ≤ `cutoff` (one GET each).
    pub async fn load(
        storage: &dyn Storage,
        timeline: &Timeline,
        cutoff: Option<&InstantTime>,
    ) -> Result<Self, TimelineError> {
        let mut replaced = Self::default();
        let Some(cutoff) = cutoff else {
            return Ok(replaced);
        };
        for instant in timeline.completed_commits() {
            if instant.action == Action::ReplaceCommit && instant.time <= *cutoff {
                let meta = timeline.replace_commit_metadata(storage, instant).await?;
                for (partition, file_id) in meta.replaced_file_groups() {
                    replaced.insert(partition, file_id, &instant.time);
                }
            }
        }
        Ok(replaced)
    }
}

/// The visibility rule of the module doc, evaluated against one timeline as of one time. Building it costs one
/// pass over the active timeline; every check is then a set lookup.
#[derive(Debug, Clone)]
pub struct SliceVisibility<'a> {
    timeline: &'a Timeline,
    /// min(as-of, latest completed); `None` when nothing completed (nothing is visible).
    cutoff: Option<InstantTime>,
    completed: BTreeSet<&'a InstantTime>,
    first_completed: Option<&'a InstantTime>,
    replaced: Cow<'a, ReplacedGroups>,
}

impl<'a> SliceVisibility<'a> {
    /// The rule on `timeline` as of `as_of` (default and upper bound: the latest completed commit-like
    /// instant), with no replaced groups yet (see [`SliceVisibility::with_replaced`], [`SliceVisibility::load`]).
    pub fn new(timeline: &'a Timeline, as_of: Option<&InstantTime>) -> Self {
        let completed: BTreeSet<&'a InstantTime> = timeline
            .completed_commits()
            .into_iter()
            .map(|i| &i.time)
            .collect();
        let first_completed = completed.first().copied();
        let cutoff = completed.last().map(|latest| match as_of {
            Some(t) if t < *latest => t.clone(),
            _ => (*latest).clone(),
        });
        Self {
            timeline,
            cutoff,
            completed,
            first_completed,
            replaced: Cow::Owned(ReplacedGroups::default()),
        }
    }

    /// The rule with `replaced` as the groups removed by completed replacecommits (only those replaced at or
    /// before the cutoff count).
    pub fn with_replaced(mut self, replaced: &'a ReplacedGroups) -> Self {
        self.replaced = Cow::Borrowed(replaced);
        self
    }

    /// The rule with the replaced groups read from the timeline's replacecommits ≤ the cutoff (one GET each).
    pub async fn load(
        storage: &dyn Storage,
        timeline: &'a Timeline,
        as_of: Option<&InstantTime>,
    ) -> Result<Self, TimelineError> {
        let mut visibility = Self::new(timeline, as_of);
        let replaced = ReplacedGroups::load(storage, timeline, visibility.cutoff.as_ref()).await?;
        visibility.replaced = Cow::Owned(replaced);
        Ok(visibility)
    }

    /// The greatest instant a visible slice may have: min(as-of, latest completed); `None` before the first
    /// completed commit.
    pub fn cutoff(&self) -> Option<&InstantTime> {
        self.cutoff.as_ref()
    }

    /// The replaced groups this rule excludes.
    pub fn replaced(&self) -> &ReplacedGroups {
        &self.replaced
    }

    /// Whether files of `time` are committed data: a completed commit-like instant, or older than the first one
    /// (archived) and neither on the timeline nor retired.
    pub fn is_committed(&self, time: &InstantTime) -> bool {
        self.completed.contains(time)
            || (self.first_completed.is_some_and(|first| time < first)
                && !self.timeline.contains(time)
                && !self.timeline.is_retired(time))
    }

    /// Whether the group was replaced by a completed replacecommit ≤ the cutoff.
    pub fn is_replaced(&self, partition_path: &str, file_id: &str) -> bool {
        match (
            self.replaced.replaced_at(partition_path, file_id),
            &self.cutoff,
        ) {
            (Some(at), Some(cutoff)) => at <= cutoff,
            _ => false,
        }
    }

    /// Whether the base file of `file_id` in `partition_path` written at `instant` is visible: within the
    /// cutoff, committed, and of a group not replaced.
    pub fn is_visible(&self, partition_path: &str, file_id: &str, instant: &InstantTime) -> bool {
        self.cutoff.as_ref().is_some_and(|cutoff| instant <= cutoff)
            && self.is_committed(instant)
            && !self.is_replaced(partition_path, file_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::instant::{Instant, State};

    fn t(n: u32) -> InstantTime {
        InstantTime::parse(&format!("202401010000000{n:02}")).expect("time")
    }

    fn instant(n: u32, action: Action, state: State) -> Instant {
        Instant::new(t(n), action, state)
    }

    /// Completed commits 10 and 20, a failed (inflight) write at 15, a pending one at 30.
    fn timeline() -> Timeline {
        Timeline::from_instants([
            instant(10, Action::Commit, State::Completed),
            instant(15, Action::Commit, State::Inflight),
            instant(20, Action::Commit, State::Completed),
            instant(30, Action::Commit, State::Requested),
        ])
    }

    /// A timeline whose listing also holds a retired (rolled-back) time 05, older than the first commit.
    fn timeline_with_retired() -> Timeline {
        let listed: Vec<crate::storage::ObjectMeta> = [
            format!("{}{}", crate::table::timeline::RETIRED_DIR, t(5)),
            format!(".hoodie/{}.commit", t(10)),
            format!(".hoodie/{}.commit", t(20)),
        ]
        .into_iter()
        .map(|path| crate::storage::ObjectMeta { path, size: 0 })
        .collect();
        Timeline::from_listing(&listed).expect("timeline")
    }

    #[test]
    fn cutoff_is_the_as_of_time_capped_at_the_latest_completed_commit() {
        let tl = timeline();
        let latest = SliceVisibility::new(&tl, None);
        assert_eq!(latest.cutoff(), Some(&t(20)));
        assert!(latest.is_visible("p", "a", &t(20)));
        // Pending 30 is past the latest completed commit: beyond the cutoff even when asked for.
        let future = SliceVisibility::new(&tl, Some(&t(99)));
        assert_eq!(future.cutoff(), Some(&t(20)));
        let as_of_10 = SliceVisibility::new(&tl, Some(&t(10)));
        assert_eq!(as_of_10.cutoff(), Some(&t(10)));
        assert!(as_of_10.is_visible("p", "a", &t(10)));
        assert!(
            !as_of_10.is_visible("p", "a", &t(20)),
            "after the as-of time"
        );
        // Nothing completed: nothing visible, not even an archived-looking time.
        let young = Timeline::from_instants([instant(10, Action::Commit, State::Inflight)]);
        let none = SliceVisibility::new(&young, None);
        assert_eq!(none.cutoff(), None);
        assert!(!none.is_visible("p", "a", &t(1)));
    }

    #[test]
    fn completed_commit_like_instants_are_committed() {
        let tl = Timeline::from_instants([
            instant(10, Action::Commit, State::Completed),
            instant(20, Action::ReplaceCommit, State::Completed),
            instant(25, Action::DeltaCommit, State::Completed),
            instant(27, Action::Clean, State::Completed),
        ]);
        let v = SliceVisibility::new(&tl, None);
        for n in [10, 20, 25] {
            assert!(v.is_committed(&t(n)), "{n}");
        }
        // A completed clean writes no data files: its time is not a committed one.
        assert!(!v.is_committed(&t(27)));
    }

    #[test]
    fn times_older_than_the_first_commit_count_as_archived() {
        let tl = timeline();
        let v = SliceVisibility::new(&tl, None);
        assert!(
            v.is_committed(&t(1)),
            "older than the first commit, not on the timeline"
        );
        assert!(v.is_visible("p", "a", &t(1)));
        // Between commits and not completed (failed, or never on the timeline): not committed.
        assert!(!v.is_committed(&t(15)));
        assert!(!v.is_committed(&t(12)));
    }

    #[test]
    fn pending_times_older_than_the_first_commit_are_not_committed() {
        let tl = Timeline::from_instants([
            instant(3, Action::Commit, State::Inflight),
            instant(10, Action::Commit, State::Completed),
        ]);
        let v = SliceVisibility::new(&tl, None);
        assert!(
            !v.is_committed(&t(3)),
            "still on the timeline: a failed write"
        );
        assert!(v.is_committed(&t(2)));
    }

    #[test]
    fn retired_times_older_than_the_first_commit_are_not_committed() {
        let tl = timeline_with_retired();
        assert!(tl.is_retired(&t(5)));
        let v = SliceVisibility::new(&tl, None);
        assert!(
            !v.is_committed(&t(5)),
            "rolled back: a frozen writer's files"
        );
        assert!(!v.is_visible("p", "a", &t(5)));
        assert!(v.is_committed(&t(4)));
    }

    #[test]
    fn groups_replaced_at_or_before_the_cutoff_are_hidden() {
        let tl = timeline();
        let mut replaced = ReplacedGroups::default();
        replaced.insert("p", "a", &t(20));
        let latest = SliceVisibility::new(&tl, None).with_replaced(&replaced);
        assert!(latest.is_replaced("p", "a"));
        assert!(!latest.is_visible("p", "a", &t(10)));
        assert!(latest.is_visible("p", "b", &t(10)), "another group");
        assert!(
            latest.is_visible("q", "a", &t(10)),
            "same id, another partition"
        );
        // As of before the replacement the group is still there.
        let as_of_10 = SliceVisibility::new(&tl, Some(&t(10))).with_replaced(&replaced);
        assert!(!as_of_10.is_replaced("p", "a"));
        assert!(as_of_10.is_visible("p", "a", &t(10)));
    }

    #[test]
    fn replaced_groups_keep_their_earliest_time_and_prune_by_their_latest() {
        let mut replaced = ReplacedGroups::default();
        replaced.insert("p", "a", &t(20));
        replaced.insert("p", "a", &t(10));
        replaced.insert("p", "b", &t(12));
        assert_eq!(replaced.replaced_at("p", "a"), Some(&t(10)));
        assert_eq!(replaced.len(), 2);
        replaced.prune_before(&t(15));
        // "a" is still replaced by 20, "b" left with its only replacecommit.
        assert_eq!(replaced.iter().collect::<Vec<_>>(), vec![("p", "a")]);
        replaced.prune_before(&t(21));
        assert!(replaced.is_empty());
    }
}
