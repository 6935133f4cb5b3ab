//! Clean planning as pure functions: the earliest commit to retain and the keep/delete rule per file group
//! (Spark's `CleanerUtils.getEarliestCommitToRetain` and `CleanPlanner`; table-services.md §1.3–1.4).

use std::collections::{BTreeMap, BTreeSet};

use crate::mutation::{is_disabled, Mutation};
use crate::services::config::{CleanerPolicy, ServicesConfig};
use crate::table::instant::{Action, Instant, InstantTime};
use crate::table::timeline::Timeline;

/// One committed slice of a file group, as found in a partition listing: its base file and, on
/// merge-on-read tables, every log file named with its base instant. Deleting a slice deletes all of them.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ListedSlice {
    /// File group.
    pub file_id: String,
    /// The slice's base instant (from the base file name, or the log file names of a log-only slice).
    pub instant: InstantTime,
    /// The base file's path relative to the table base path; `None` for a log-only slice.
    pub base_path: Option<String>,
    /// The log files' paths relative to the table base path, in reader order.
    pub log_paths: Vec<String>,
}

impl ListedSlice {
    /// Every file of the slice, base file first, then the logs in reader order (Spark's plan order).
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.base_path
            .iter()
            .chain(self.log_paths.iter())
            .map(String::as_str)
    }
}

/// Pending instants that hold back the earliest commit to retain: writes whose base slices a running
/// writer or a pending clustering may still read.
fn is_pending_write(instant: &Instant) -> bool {
    !instant.is_completed()
        && matches!(
            instant.action,
            Action::Commit | Action::DeltaCommit | Action::ReplaceCommit | Action::Compaction
        )
}

/// The earliest commit to retain (ECR) under `config`'s policy at `now_ms`, from the active timeline's
/// completed commit-like instants: every query as of this instant or later must still find all its files.
/// `None` when nothing may be cleaned yet (too few commits, or a pending write older than the candidate
/// with no completed commit before it) and always for `KEEP_LATEST_FILE_VERSIONS`.
pub fn earliest_commit_to_retain(
    timeline: &Timeline,
    config: &ServicesConfig,
    now_ms: i64,
) -> Option<Instant> {
    let completed = timeline.completed_commits();
    let candidate = match config.cleaner_policy {
        CleanerPolicy::KeepLatestFileVersions => return None,
        CleanerPolicy::KeepLatestCommits => {
            let retained = config.commits_retained as usize;
            if completed.len() <= retained {
                return None;
            }
            completed[completed.len() - retained]
        }
        CleanerPolicy::KeepLatestByHours => {
            let hours_ms = i64::from(config.hours_retained) * 3_600_000;
            let earliest = InstantTime::from_millis(now_ms.saturating_sub(hours_ms)).ok()?;
            *completed.iter().find(|i| i.time >= earliest)?
        }
    };
    // A pending write older than the candidate caps it at the last completed commit before that write.
    match timeline.instants().iter().find(|i| is_pending_write(i)) {
        Some(pending) if pending.time < candidate.time => completed
            .iter()
            .rev()
            .find(|i| i.time < pending.time)
            .map(|i| (*i).clone()),
        _ => Some(candidate.clone()),
    }
}

/// The newest completed commit-like instant older than every pending write: with
/// `KEEP_LATEST_FILE_VERSIONS`, the commits a clean has accounted for (later cleans scan what came after).
pub fn file_versions_boundary(timeline: &Timeline) -> Option<InstantTime> {
    let first_pending = timeline
        .instants()
        .iter()
        .find(|i| is_pending_write(i))
        .map(|i| &i.time);
    timeline
        .completed_commits()
        .into_iter()
        .rev()
        .find(|i| first_pending.is_none_or(|p| i.time < *p))
        .map(|i| i.time.clone())
}

/// The slices of one partition to delete. `groups` holds every committed slice of the partition by file
/// group; `replaced` the groups whose replacement makes every slice obsolete (replaced before the ECR, or by
/// any completed replacecommit under `KEEP_LATEST_FILE_VERSIONS`); `pending` the base instant of the slice
/// a pending compaction reads, by file group.
///
/// Kept, per live group: the latest slice; every slice at or after the base instant a pending compaction
/// reads (Spark's `isFileSliceNeededForPendingCompaction`); under the commit and hour policies also the
/// newest slice older than the ECR (a query as of the ECR reads it) and every slice at or after the ECR;
/// under the file versions policy the newest `fileversions.retained` slices, the pending compaction's
/// output counting as one of them (as Spark counts it).
pub fn slices_to_delete(
    config: &ServicesConfig,
    ecr: Option<&InstantTime>,
    groups: &BTreeMap<String, Vec<ListedSlice>>,
    replaced: &BTreeSet<String>,
    pending: &BTreeMap<String, InstantTime>,
) -> Vec<ListedSlice> {
    let mut doomed = Vec::new();
    for (file_id, slices) in groups {
        let mut slices: Vec<&ListedSlice> = slices.iter().collect();
        // Newest first.
        slices.sort_by(|a, b| b.instant.cmp(&a.instant));
        let compacting = pending.get(file_id);
        let needed = |s: &ListedSlice| compacting.is_some_and(|base| s.instant >= *base);
        if replaced.contains(file_id) {
            doomed.extend(slices.into_iter().filter(|s| !needed(s)).cloned());
            continue;
        }
        match config.cleaner_policy {
            CleanerPolicy::KeepLatestFileVersions => {
                let mut keep = config.file_versions_retained as usize;
                if compacting.is_some() {
                    keep = keep.saturating_sub(1);
                }
                doomed.extend(
                    slices
                        .into_iter()
                        .filter(|s| !needed(s))
                        .skip(keep)
                        .cloned(),
                );
            }
            CleanerPolicy::KeepLatestCommits | CleanerPolicy::KeepLatestByHours => {
                let Some(ecr) = ecr else { continue };
                let latest = slices.first().map(|s| s.instant.clone());
                let newest_before_ecr = if is_disabled(Mutation::CleanKeepsNewestBeforeEcr) {
                    None
                } else {
                    slices
                        .iter()
                        .find(|s| s.instant < *ecr)
                        .map(|s| s.instant.clone())
                };
                for slice in slices {
                    let keep = Some(&slice.instant) == latest.as_ref()
                        || Some(&slice.instant) == newest_before_ecr.as_ref()
                        || slice.instant >= *ecr
                        || needed(slice);
                    if !keep {
                        doomed.push(slice.clone());
                    }
                }
            }
        }
    }
    doomed.sort();
    doomed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::instant::State;

    fn t(n: u32) -> InstantTime {
        InstantTime::parse(&format!("202401010000{n:05}")).expect("t")
    }

    fn timeline(spec: &[(u32, Action, State)]) -> Timeline {
        Timeline::from_instants(spec.iter().map(|(n, a, s)| Instant::new(t(*n), *a, *s)))
    }

    fn commits(n: u32) -> Vec<(u32, Action, State)> {
        (1..=n)
            .map(|i| (i, Action::Commit, State::Completed))
            .collect()
    }

    fn config(policy: CleanerPolicy) -> ServicesConfig {
        ServicesConfig {
            cleaner_policy: policy,
            commits_retained: 3,
            file_versions_retained: 2,
            ..ServicesConfig::default()
        }
    }

    #[test]
    fn ecr_keeps_the_last_n_commits() {
        let c = config(CleanerPolicy::KeepLatestCommits);
        assert_eq!(
            earliest_commit_to_retain(&timeline(&commits(3)), &c, 0),
            None
        );
        let ecr = earliest_commit_to_retain(&timeline(&commits(5)), &c, 0).expect("ecr");
        assert_eq!(ecr.time, t(3));
        assert_eq!(
            earliest_commit_to_retain(
                &timeline(&commits(5)),
                &config(CleanerPolicy::KeepLatestFileVersions),
                0
            ),
            None
        );
    }

    #[test]
    fn a_pending_write_holds_the_ecr_back() {
        let c = config(CleanerPolicy::KeepLatestCommits);
        let mut spec = commits(6);
        spec[1] = (2, Action::Commit, State::Inflight);
        // Completed 1,3,4,5,6; candidate is 4 (3 retained), pending 2 caps it at 1.
        let ecr = earliest_commit_to_retain(&timeline(&spec), &c, 0).expect("ecr");
        assert_eq!(ecr.time, t(1));
        spec[0] = (1, Action::ReplaceCommit, State::Requested);
        assert_eq!(earliest_commit_to_retain(&timeline(&spec), &c, 0), None);
        // A pending clean does not hold it back.
        let mut spec = commits(6);
        spec.push((0, Action::Clean, State::Requested));
        assert_eq!(
            earliest_commit_to_retain(&timeline(&spec), &c, 0).map(|i| i.time),
            Some(t(4))
        );
    }

    #[test]
    fn ecr_by_hours_is_the_first_commit_inside_the_window() {
        let c = ServicesConfig {
            cleaner_policy: CleanerPolicy::KeepLatestByHours,
            hours_retained: 1,
            ..ServicesConfig::default()
        };
        let at = |ms: i64| InstantTime::from_millis(ms).expect("t");
        let hour = 3_600_000;
        let now = 1_700_000_000_000;
        let tl = Timeline::from_instants(
            [now - 3 * hour, now - 2 * hour, now - hour / 2, now - 1]
                .into_iter()
                .map(|ms| Instant::new(at(ms), Action::Commit, State::Completed)),
        );
        assert_eq!(
            earliest_commit_to_retain(&tl, &c, now).map(|i| i.time),
            Some(at(now - hour / 2))
        );
        assert_eq!(earliest_commit_to_retain(&tl, &c, now + 10 * hour), None);
    }

    fn slice(file_id: &str, n: u32) -> ListedSlice {
        ListedSlice {
            file_id: file_id.into(),
            instant: t(n),
            base_path: Some(format!("p/{file_id}_0-0-0_{}.parquet", t(n))),
            log_paths: vec![format!("p/.{file_id}_{}.log.1_0-0-0", t(n))],
        }
    }

    fn groups(spec: &[(&str, &[u32])]) -> BTreeMap<String, Vec<ListedSlice>> {
        spec.iter()
            .map(|(id, ns)| (id.to_string(), ns.iter().map(|n| slice(id, *n)).collect()))
            .collect()
    }

    fn names(v: Vec<ListedSlice>) -> Vec<(String, InstantTime)> {
        v.into_iter().map(|s| (s.file_id, s.instant)).collect()
    }

    #[test]
    fn keep_latest_commits_keeps_latest_and_newest_before_ecr() {
        let c = config(CleanerPolicy::KeepLatestCommits);
        let g = groups(&[("a", &[1, 2, 3, 5, 7]), ("b", &[1, 2]), ("c", &[6])]);
        let doomed = slices_to_delete(&c, Some(&t(5)), &g, &BTreeSet::new(), &BTreeMap::new());
        // a: 7 latest, 5 ≥ ECR, 3 newest before the ECR; 1 and 2 go. b: 2 latest (and newest before); 1 goes.
        assert_eq!(
            names(doomed),
            vec![("a".into(), t(1)), ("a".into(), t(2)), ("b".into(), t(1))]
        );
        assert!(slices_to_delete(&c, None, &g, &BTreeSet::new(), &BTreeMap::new()).is_empty());
    }

    #[test]
    fn replaced_groups_lose_every_slice() {
        let c = config(CleanerPolicy::KeepLatestCommits);
        let g = groups(&[("a", &[1, 2]), ("b", &[3])]);
        let replaced: BTreeSet<String> = ["b".to_string()].into();
        assert_eq!(
            names(slices_to_delete(
                &c,
                Some(&t(4)),
                &g,
                &replaced,
                &BTreeMap::new()
            )),
            vec![("a".into(), t(1)), ("b".into(), t(3))]
        );
    }

    #[test]
    fn keep_latest_file_versions_keeps_k() {
        let c = config(CleanerPolicy::KeepLatestFileVersions);
        let g = groups(&[("a", &[1, 2, 3, 4]), ("b", &[1])]);
        assert_eq!(
            names(slices_to_delete(
                &c,
                None,
                &g,
                &BTreeSet::new(),
                &BTreeMap::new()
            )),
            vec![("a".into(), t(1)), ("a".into(), t(2))]
        );
    }

    #[test]
    fn a_slice_a_pending_compaction_reads_is_kept_with_every_later_one() {
        // Group a: slices 1, 2, 3, 5, 7; a pending compaction reads slice 2 (a stale plan: the view's latest
        // is 7). ECR 6: without the plan 1, 2 and 3 would go; with it only 1.
        let c = config(CleanerPolicy::KeepLatestCommits);
        let g = groups(&[("a", &[1, 2, 3, 5, 7]), ("b", &[1, 2, 3])]);
        let pending = BTreeMap::from([("a".to_string(), t(2))]);
        assert_eq!(
            names(slices_to_delete(
                &c,
                Some(&t(6)),
                &g,
                &BTreeSet::new(),
                &BTreeMap::new()
            )),
            vec![
                ("a".into(), t(1)),
                ("a".into(), t(2)),
                ("a".into(), t(3)),
                ("b".into(), t(1)),
                ("b".into(), t(2)),
            ]
        );
        assert_eq!(
            names(slices_to_delete(
                &c,
                Some(&t(6)),
                &g,
                &BTreeSet::new(),
                &pending
            )),
            vec![("a".into(), t(1)), ("b".into(), t(1)), ("b".into(), t(2))]
        );
        // File versions (k = 2): the compaction's output counts as one version, so of the slices before
        // the one it reads only one more stays.
        let c = config(CleanerPolicy::KeepLatestFileVersions);
        let pending = BTreeMap::from([("a".to_string(), t(5))]);
        assert_eq!(
            names(slices_to_delete(&c, None, &g, &BTreeSet::new(), &pending)),
            vec![("a".into(), t(1)), ("a".into(), t(2)), ("b".into(), t(1))]
        );
    }

    #[test]
    fn a_deleted_slice_lists_its_base_file_then_its_logs() {
        let s = slice("a", 1);
        assert_eq!(
            s.paths().collect::<Vec<_>>(),
            vec![
                format!("p/a_0-0-0_{}.parquet", t(1)),
                format!("p/.a_{}.log.1_0-0-0", t(1))
            ]
        );
    }

    #[test]
    fn file_versions_boundary_stops_before_pending() {
        let mut spec = commits(4);
        spec[2] = (3, Action::Commit, State::Requested);
        assert_eq!(file_versions_boundary(&timeline(&spec)), Some(t(2)));
        assert_eq!(file_versions_boundary(&timeline(&commits(4))), Some(t(4)));
    }
}
