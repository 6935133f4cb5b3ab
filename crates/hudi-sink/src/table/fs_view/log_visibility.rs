//! [`LogVisibility`]: which log files of merge-on-read file slices hold committed data, as of a time
//! (docs/architecture.md, "File-system view").
//!
//! On table version 6 a log file's name carries the base instant of the slice it appends to, not the
//! deltacommit that wrote it, so the writer is found in the write stats of completed deltacommits. The rule,
//! one clause per method, on top of the base file rule of [`super::SliceVisibility`] (the log's slice must be
//! its group's visible slice, which the callers check):
//! - [`LogVisibility::written_by`]: a completed deltacommit ≤ the cutoff names the log as its `path`, or a
//!   completed compaction ≤ the cutoff carried it into its new slice (`table::carried`; visible from the later
//!   of the compaction and the deltacommit whose blocks it holds). Logs of a failed (pending or rolled-back)
//!   deltacommit and rollback command blocks are named by none, so they are not visible.
//!
//! A committed log whose base instant is a pending compaction ([`LogVisibility::is_pending_compaction_base`])
//! belongs to the slice that compaction will make; until then readers merge it after the logs of the slice
//! the compaction reads (Spark does; hudi-rs 0.5.0 hides such logs until the compaction commits).
//!
//! Cost: [`LogVisibility::load`] reads every completed deltacommit ≤ the cutoff (one GET each), which is bounded
//! by the active timeline. A log written by an archived deltacommit is therefore not found; compaction retires
//! such logs before archival may reach their deltacommits.

use std::collections::{BTreeMap, BTreeSet};

use crate::storage::Storage;
use crate::table::instant::{Action, InstantTime};
use crate::table::log_file_name::LogFileName;
use crate::table::timeline::{Timeline, TimelineError};

/// The log file rule of the module doc, as of one cutoff.
#[derive(Debug, Clone, Default)]
pub struct LogVisibility {
    cutoff: Option<InstantTime>,
    /// Table-relative log path → the completed deltacommit (≤ cutoff) that wrote it.
    writers: BTreeMap<String, InstantTime>,
    /// Times of compactions requested or inflight.
    pending_compactions: BTreeSet<InstantTime>,
}

impl LogVisibility {
    /// The rule on `timeline` with `cutoff` (see [`super::SliceVisibility::cutoff`]) and no writers known yet
    /// (see [`LogVisibility::record`], [`LogVisibility::load`]).
    pub fn new(timeline: &Timeline, cutoff: Option<&InstantTime>) -> Self {
        let pending_compactions = timeline
            .pending()
            .into_iter()
            .filter(|i| i.action == Action::Compaction)
            .map(|i| i.time.clone())
            .collect();
        Self {
            cutoff: cutoff.cloned(),
            writers: BTreeMap::new(),
            pending_compactions,
        }
    }

    /// The rule with the writers read from the write stats of every completed deltacommit ≤ `cutoff` (one GET
    /// each, bounded by the active timeline).
    pub async fn load(
        storage: &dyn Storage,
        timeline: &Timeline,
        cutoff: Option<&InstantTime>,
    ) -> Result<Self, TimelineError> {
        let mut rule = Self::new(timeline, cutoff);
        let Some(cutoff) = cutoff else {
            return Ok(rule);
        };
        let completed = timeline.completed_commits();
        let merge_on_read = completed.iter().any(|i| i.action == Action::DeltaCommit);
        for instant in completed {
            if instant.time > *cutoff {
                continue;
            }
            if instant.action == Action::DeltaCommit {
                let meta = timeline.commit_metadata(storage, instant).await?;
                for stat in meta.write_stats() {
                    rule.record(&stat.path, &instant.time);
                }
            } else if merge_on_read && instant.action == Action::Commit {
                // A compaction: the logs it carried into its new slices (`table::carried`).
                let meta = timeline.commit_metadata(storage, instant).await?;
                let carried = crate::table::carried::carried_logs(&meta).map_err(|e| {
                    TimelineError::InvalidWriteStat {
                        instant: instant.time.to_string(),
                        path: crate::table::carried::CARRIED_KEY.to_string(),
                        reason: e.to_string(),
                    }
                })?;
                for log in &carried {
                    let from = crate::table::carried::visible_from(&instant.time, log);
                    rule.record(&log.path, &from);
                }
            }
        }
        Ok(rule)
    }

    /// Records that the completed deltacommit `time` wrote the file at `path` (ignored past the cutoff).
    pub fn record(&mut self, path: &str, time: &InstantTime) {
        if self.cutoff.as_ref().is_some_and(|cutoff| time <= cutoff) {
            self.writers.insert(path.to_string(), time.clone());
        }
    }

    /// Whether the log's base instant is a compaction still requested or inflight.
    pub fn is_pending_compaction_base(&self, log: &LogFileName) -> bool {
        self.pending_compactions.contains(&log.base_instant)
    }

    /// The completed deltacommit ≤ the cutoff that wrote the log at `path`, if one did.
    pub fn written_by(&self, path: &str) -> Option<&InstantTime> {
        self.writers.get(path)
    }

    /// Whether the log at `path` holds committed data as of the cutoff (the rule of the module doc).
    pub fn is_visible(&self, path: &str) -> bool {
        self.written_by(path).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::instant::{Instant, State};

    fn t(n: u32) -> InstantTime {
        InstantTime::parse(&format!("202401010000000{n:02}")).expect("time")
    }

    fn log(base: u32, version: u32) -> (String, LogFileName) {
        let name = format!(".g-0_{}.log.{version}_0-1-0", t(base));
        (format!("p/{name}"), LogFileName::parse(&name).expect("log"))
    }

    /// Commit 10 (base files), deltacommits 20 (completed) and 30 (failed), compaction 40 pending.
    fn timeline() -> Timeline {
        Timeline::from_instants([
            Instant::new(t(10), Action::Commit, State::Completed),
            Instant::new(t(20), Action::DeltaCommit, State::Completed),
            Instant::new(t(30), Action::DeltaCommit, State::Inflight),
            Instant::new(t(40), Action::Compaction, State::Requested),
        ])
    }

    #[test]
    fn a_log_written_by_a_completed_deltacommit_at_or_before_the_cutoff_is_visible() {
        let tl = timeline();
        let (path, _) = log(10, 1);
        let mut latest = LogVisibility::new(&tl, Some(&t(20)));
        latest.record(&path, &t(20));
        assert_eq!(latest.written_by(&path), Some(&t(20)));
        assert!(latest.is_visible(&path));
        // As of 10 the deltacommit 20 is in the future: not recorded, not visible.
        let mut as_of_10 = LogVisibility::new(&tl, Some(&t(10)));
        as_of_10.record(&path, &t(20));
        assert_eq!(as_of_10.written_by(&path), None);
        assert!(!as_of_10.is_visible(&path));
        // Nothing committed: nothing recorded.
        let mut none = LogVisibility::new(&tl, None);
        none.record(&path, &t(20));
        assert!(!none.is_visible(&path));
    }

    #[test]
    fn a_log_of_a_failed_deltacommit_is_invisible() {
        let tl = timeline();
        // Deltacommit 30 never completed: no completed stat names its log (its name carries base 10 only).
        let (written, _) = log(10, 1);
        let (failed, _) = log(10, 2);
        let mut v = LogVisibility::new(&tl, Some(&t(20)));
        v.record(&written, &t(20));
        assert!(v.is_visible(&written));
        assert_eq!(v.written_by(&failed), None);
        assert!(!v.is_visible(&failed));
    }

    #[test]
    fn a_log_whose_base_is_a_pending_compaction_is_visible_once_written() {
        // Deltacommit 50 completed while compaction 40 was pending, appending to the compaction's slice.
        let tl =
            timeline().with_instant(Instant::new(t(50), Action::DeltaCommit, State::Completed));
        let (path, name) = log(40, 1);
        let mut v = LogVisibility::new(&tl, Some(&t(50)));
        v.record(&path, &t(50));
        assert_eq!(v.written_by(&path), Some(&t(50)));
        assert!(v.is_pending_compaction_base(&name));
        assert!(
            v.is_visible(&path),
            "written against a pending compaction: merged by readers"
        );
        // Once the compaction completes (a commit at 40) the base is no longer pending.
        let done = Timeline::from_instants([
            Instant::new(t(10), Action::Commit, State::Completed),
            Instant::new(t(40), Action::Commit, State::Completed),
        ]);
        let after = LogVisibility::new(&done, Some(&t(40)));
        assert!(!after.is_pending_compaction_base(&name));
    }
}
