//! ARCHIVAL (delete-only): removes the oldest instants from the active timeline, so that every listing of
//! `.hoodie/` and every timeline a reader loads stays bounded by `hoodie.keep.max.commits` plus the
//! instants still needed. Nothing is written under `.hoodie/archived/`: no reader consults it for snapshot or
//! time-travel queries, and a slightly wrong archive would break Spark's archive merging (table-services.md
//! §2.5, §2.7 B).
//!
//! When there are more than `keep.max.commits` completed commit-like instants, the oldest go until
//! `keep.min.commits` remain, but the cut never passes (each guard is a hazard of §2.6):
//! - the oldest pending instant (its files would count as archived, hence committed, for every reader);
//! - the time of a rolled-back instant whose files a zombie may still upload, until a sweep after the grace
//!   has removed them (an orphan older than the first active instant looks committed);
//! - the earliest commit to retain of the configuration and of the last clean (queries inside the retention
//!   keep their instants; cleans stay incremental);
//! - a replacecommit whose replaced file groups are not cleaned yet (archiving it resurrects those groups);
//! - merge-on-read: a deltacommit that wrote a log file (or a compaction that carried one) into a slice no
//!   later base file of its group supersedes (not compacted yet): the file-system view finds a slice's logs in
//!   the write stats of active deltacommits and the carried logs of active compactions only
//!   (`LogVisibility`), so archiving it would hide the log from the writer and the
//!   compactor (readers, which take any log block older than the first active instant as committed, would
//!   still see it);
//! - the first savepoint.
//!
//! Pending compactions and deltacommits are pending instants like any other: the cut stays below them. A
//! failed deltacommit that was rolled back holds the cut through its retired time until the sweep; after
//! that its files are gone, so archiving past it makes nothing visible.
//!
//! Merge-on-read instants archive like commits: a deltacommit's `requested`, `inflight` and completed
//! files, a compaction's `compaction.requested` and `compaction.inflight` with its completed `commit`.
//!
//! Cleans and rollbacks older than the cut go too (the latest completed clean always stays: it bounds the
//! next clean's work), and so do the oldest ones beyond `keep.max` of their action.
//!
//! Order (Spark's, HUDI-7207): the archived instants' markers and heartbeats, then their requested and
//! inflight files, then their completed files one at a time in ascending time. A crash at any step leaves a
//! valid timeline whose first instants are gone, never a hole that would hide a later commit's files.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::clean::{clean_cursor, CleanMemo};
use super::commits::CommitSummary;
use super::config::{CleanerPolicy, ServicesConfig};
use super::ServiceContext;
use crate::log_file::LogFileName;
use crate::mutation::{is_disabled, Mutation};
use crate::storage::ObjectMeta;
use crate::table::file_name::BaseFileName;
use crate::table::instant::{Action, Instant, InstantTime, State};
use crate::table::timeline::Timeline;
use crate::write::WriteError;

/// What bounds archival besides the timeline itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArchiveBounds {
    /// The earliest commit to retain of the current configuration.
    pub config_ecr: Option<InstantTime>,
    /// Whether the table is cleaned (then archival waits for a first clean and stays at or below its ECR).
    pub cleaning: bool,
    /// The last completed clean's cursor: its ECR, or what a file-versions clean scanned through.
    pub last_clean_cursor: Option<InstantTime>,
    /// Whether a completed clean exists.
    pub has_clean: bool,
    /// Merge-on-read: the oldest completed deltacommit whose log files compaction has not superseded yet.
    pub uncompacted_logs: Option<InstantTime>,
}

/// The instants one archival removes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArchivePlan {
    /// Instants to remove, oldest first.
    pub instants: Vec<Instant>,
    /// The exclusive upper bound on archived commit times, when commits are archived.
    pub cut: Option<InstantTime>,
}

fn min_opt(a: Option<InstantTime>, b: Option<InstantTime>) -> Option<InstantTime> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

/// Which instants to archive (see the module doc for the rules).
pub fn plan_archive(
    timeline: &Timeline,
    config: &ServicesConfig,
    bounds: &ArchiveBounds,
) -> ArchivePlan {
    let commits = timeline.completed_commits();
    let oldest_pending = if is_disabled(Mutation::ArchiveStopsAtPending) {
        None
    } else {
        timeline.pending().first().map(|i| i.time.clone())
    };
    let oldest_retired = timeline.retired_times().next().cloned();
    let first_savepoint = timeline
        .instants()
        .iter()
        .find(|i| i.action == Action::Savepoint)
        .map(|i| i.time.clone());
    // Never past anything a pending instant, a zombie or a savepoint still needs: the last completed commit
    // before it stays, so that its time remains inside the active timeline (a file older than the first
    // completed commit counts as committed for every reader).
    let blocking = min_opt(min_opt(oldest_pending, oldest_retired), first_savepoint);
    let hard = blocking.map(|b| {
        commits
            .iter()
            .rev()
            .find(|c| c.time < b)
            .or(commits.first())
            .map(|c| c.time.clone())
            .unwrap_or(b)
    });

    let mut cut = None;
    if commits.len() > config.keep_max_commits as usize {
        let keep_from = commits[commits.len() - config.keep_min_commits as usize]
            .time
            .clone();
        let mut limit = min_opt(Some(keep_from), hard.clone());
        limit = min_opt(limit, bounds.config_ecr.clone());
        // `None` from here on means "archive nothing", not "no bound": the later rules may only lower a cut.
        let mut blocked = false;
        if bounds.cleaning {
            if !bounds.has_clean {
                blocked = true;
            } else if config.cleaner_policy != CleanerPolicy::KeepLatestFileVersions {
                match &bounds.last_clean_cursor {
                    Some(cursor) => limit = min_opt(limit, Some(cursor.clone())),
                    None => blocked = true,
                }
            }
        }
        limit = min_opt(limit, bounds.uncompacted_logs.clone());
        // The first replacecommit whose replaced groups the last clean has not deleted.
        if !is_disabled(Mutation::ArchiveStopsAtUncleanedReplace) {
            let cleaned = |t: &InstantTime| match (&bounds.last_clean_cursor, config.cleaner_policy)
            {
                (Some(c), CleanerPolicy::KeepLatestFileVersions) => t <= c,
                (Some(c), _) => t < c,
                (None, _) => false,
            };
            if let Some(replace) = commits
                .iter()
                .find(|i| i.action == Action::ReplaceCommit && !cleaned(&i.time))
            {
                limit = min_opt(limit, Some(replace.time.clone()));
            }
        }
        cut = if blocked { None } else { limit };
    }

    let mut archived: BTreeSet<Instant> = BTreeSet::new();
    if let Some(cut) = &cut {
        archived.extend(
            commits
                .iter()
                .filter(|i| i.time < *cut)
                .map(|i| (*i).clone()),
        );
    }
    // Cleans and rollbacks: below the commit cut, and the oldest beyond keep.max of their action; the latest
    // completed clean stays.
    let latest_clean = timeline
        .instants()
        .iter()
        .rev()
        .find(|i| i.action == Action::Clean && i.is_completed())
        .map(|i| i.time.clone());
    for action in [Action::Clean, Action::Rollback] {
        let done: Vec<&Instant> = timeline
            .instants()
            .iter()
            .filter(|i| i.action == action && i.is_completed())
            .filter(|i| hard.as_ref().is_none_or(|h| i.time < *h))
            .filter(|i| Some(&i.time) != latest_clean.as_ref())
            .collect();
        let excess = if done.len() > config.keep_max_commits as usize {
            done.len() - config.keep_min_commits as usize
        } else {
            0
        };
        for (n, instant) in done.iter().enumerate() {
            if n < excess || cut.as_ref().is_some_and(|c| instant.time < *c) {
                archived.insert((*instant).clone());
            }
        }
    }
    ArchivePlan {
        instants: archived.into_iter().collect(),
        cut,
    }
}

/// The bounds of archival for `timeline` now.
pub async fn bounds(
    ctx: &ServiceContext<'_>,
    timeline: &Timeline,
    memo: &CleanMemo,
) -> Result<ArchiveBounds, WriteError> {
    let config = ctx.config;
    let last = memo.last_completed_clean(ctx.storage, timeline).await?;
    let cursor = clean_cursor(
        timeline,
        last.as_ref().map(|(_, m)| m),
        config.cleaner_policy,
    );
    let config_ecr = match config.cleaner_policy {
        CleanerPolicy::KeepLatestFileVersions => None,
        _ => super::clean::earliest_commit_to_retain(timeline, config, ctx.clock.now_millis())
            .map(|i| i.time),
    };
    Ok(ArchiveBounds {
        config_ecr,
        cleaning: config.clean_automatic,
        last_clean_cursor: cursor,
        has_clean: last.is_some(),
        uncompacted_logs: uncompacted_logs(ctx, timeline, memo).await?,
    })
}

/// [`oldest_uncompacted_log_writer`] of `timeline`: reads (once per instant, through the memo's cache) the
/// commit metadata of every completed commit-like instant, only when the timeline has a deltacommit.
async fn uncompacted_logs(
    ctx: &ServiceContext<'_>,
    timeline: &Timeline,
    memo: &CleanMemo,
) -> Result<Option<InstantTime>, WriteError> {
    let commits = timeline.completed_commits();
    if !commits.iter().any(|i| i.action == Action::DeltaCommit) {
        return Ok(None);
    }
    let cache = memo.commits();
    cache.retain_active(timeline);
    let mut summaries = Vec::with_capacity(commits.len());
    for instant in commits {
        summaries.push(cache.get(ctx.storage, instant).await?);
    }
    Ok(oldest_uncompacted_log_writer(&summaries))
}

/// The oldest deltacommit among `commits` (completed commit-like instants, any order) that wrote a log file
/// (a stat's `path`) into a slice that no later base file of its group (a compaction's, or any commit's)
/// supersedes and whose group no replacecommit replaced: its logs are still live, and only its write stats
/// tell the file-system view so. A compaction that carried logs into its new slices (`table::carried`) holds
/// archival the same way while those slices are the latest: only its metadata names the copies.
pub fn oldest_uncompacted_log_writer(commits: &[Arc<CommitSummary>]) -> Option<InstantTime> {
    // Per (partition, file id): the newest base file instant and whether the group was replaced.
    let mut newest_base: BTreeMap<(String, String), InstantTime> = BTreeMap::new();
    let mut replaced: BTreeSet<(String, String)> = BTreeSet::new();
    for summary in commits {
        for stat in summary.metadata.commit.write_stats() {
            let (partition, name) = stat.path.rsplit_once('/').unwrap_or(("", &stat.path));
            if let Ok(base) = BaseFileName::parse(name) {
                let key = (partition.to_string(), base.file_id);
                let entry = newest_base
                    .entry(key)
                    .or_insert_with(|| base.instant_time.clone());
                if base.instant_time > *entry {
                    *entry = base.instant_time;
                }
            }
        }
        for (p, id) in summary.metadata.replaced_file_groups() {
            replaced.insert((p.to_string(), id.to_string()));
        }
    }
    let mut oldest: Option<InstantTime> = None;
    for summary in commits {
        // A deltacommit names the logs it wrote; a compaction the logs it carried into its new slices.
        let logs: Vec<String> = match summary.instant.action {
            Action::DeltaCommit => summary
                .metadata
                .commit
                .write_stats()
                .map(|s| s.path.clone())
                .collect(),
            Action::Commit => crate::table::carried::carried_logs(&summary.metadata.commit)
                .unwrap_or_default()
                .into_iter()
                .map(|c| c.path)
                .collect(),
            _ => continue,
        };
        let time = &summary.instant.time;
        if oldest.as_ref().is_some_and(|o| o <= time) {
            continue;
        }
        let live = logs.iter().any(|path| {
            let (partition, name) = path.rsplit_once('/').unwrap_or(("", path));
            let Ok(log) = LogFileName::parse(name) else {
                return false;
            };
            let key = (partition.to_string(), log.file_id.clone());
            let superseded = newest_base
                .get(&key)
                .is_some_and(|newest| *newest > log.base_instant);
            !superseded && !replaced.contains(&key)
        });
        if live {
            oldest = Some(time.clone());
        }
    }
    oldest
}

/// The timeline files of `instant` that exist in some state, pending states first. A completed `commit`
/// may be a compaction's: its pending files are `compaction.requested` and `compaction.inflight`.
fn state_files(instant: &Instant) -> (Vec<String>, String) {
    let mut actions = vec![instant.action];
    if instant.action == Action::Commit {
        actions.push(Action::Compaction);
    }
    let pending = actions
        .into_iter()
        .flat_map(|a| {
            [State::Requested, State::Inflight]
                .into_iter()
                .map(move |s| Instant::new(instant.time.clone(), a, s).path())
        })
        .collect();
    (
        pending,
        Instant::new(instant.time.clone(), instant.action, State::Completed).path(),
    )
}

/// Archives per [`plan_archive`]; `listed` is a listing of `.hoodie/` (for markers and heartbeats).
/// Returns the instants removed, oldest first.
pub async fn run(
    ctx: &ServiceContext<'_>,
    timeline: &Timeline,
    listed: &[ObjectMeta],
    memo: &CleanMemo,
) -> Result<Vec<Instant>, WriteError> {
    // Nothing can be due below keep.max of every action: no read at all then.
    let over = |f: &dyn Fn(&Instant) -> bool| {
        timeline
            .instants()
            .iter()
            .filter(|i| i.is_completed() && f(i))
            .count()
            > ctx.config.keep_max_commits as usize
    };
    if !over(&|i| i.action.is_commit_like())
        && !over(&|i| i.action == Action::Clean)
        && !over(&|i| i.action == Action::Rollback)
    {
        return Ok(Vec::new());
    }
    let bounds = bounds(ctx, timeline, memo).await?;
    let plan = plan_archive(timeline, ctx.config, &bounds);
    if plan.instants.is_empty() {
        return Ok(Vec::new());
    }
    let storage = ctx.storage;
    let times: BTreeSet<&InstantTime> = plan.instants.iter().map(|i| &i.time).collect();
    // Leftover markers and heartbeats first: a marker of an instant that is no longer on the timeline would
    // otherwise be taken for a zombie's and rolled back.
    let mut leftovers: Vec<String> = listed
        .iter()
        .filter(|o| {
            [".hoodie/.temp/", ".hoodie/.heartbeat/"]
                .iter()
                .any(|prefix| {
                    o.path
                        .strip_prefix(prefix)
                        .and_then(|rest| rest.split('/').next())
                        .and_then(|t| InstantTime::parse(t).ok())
                        .is_some_and(|t| times.contains(&t))
                })
        })
        .map(|o| o.path.clone())
        .collect();
    let mut completed = Vec::new();
    for instant in &plan.instants {
        let (pending, done) = state_files(instant);
        // A legacy `<t>.inflight` is the commit's inflight file (`Instant::path` knows the spelling).
        leftovers.extend(pending);
        completed.push(done);
    }
    ctx.fence().await?;
    storage.delete_many(&leftovers).await?;
    for path in &completed {
        ctx.fence().await?;
        storage.delete(path).await?;
    }
    tracing::info!(
        instants = plan.instants.len(),
        cut = plan.cut.as_ref().map(InstantTime::as_str).unwrap_or(""),
        "archived the oldest instants"
    );
    Ok(plan.instants)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(n: u32) -> InstantTime {
        InstantTime::parse(&format!("202401010000{n:05}")).expect("t")
    }

    fn config() -> ServicesConfig {
        ServicesConfig {
            commits_retained: 2,
            keep_min_commits: 3,
            keep_max_commits: 5,
            ..ServicesConfig::default()
        }
    }

    fn tl(spec: &[(u32, Action, State)]) -> Timeline {
        Timeline::from_instants(spec.iter().map(|(n, a, s)| Instant::new(t(*n), *a, *s)))
    }

    fn commits(range: std::ops::RangeInclusive<u32>) -> Vec<(u32, Action, State)> {
        range
            .map(|n| (n, Action::Commit, State::Completed))
            .collect()
    }

    fn times(plan: &ArchivePlan) -> Vec<u32> {
        plan.instants
            .iter()
            .map(|i| i.time.as_str()[12..].parse().expect("n"))
            .collect()
    }

    fn open() -> ArchiveBounds {
        ArchiveBounds {
            config_ecr: Some(t(100)),
            cleaning: true,
            last_clean_cursor: Some(t(100)),
            has_clean: true,
            uncompacted_logs: None,
        }
    }

    #[test]
    fn archives_down_to_min_once_over_max() {
        let c = config();
        assert!(plan_archive(&tl(&commits(1..=5)), &c, &open())
            .instants
            .is_empty());
        let plan = plan_archive(&tl(&commits(1..=6)), &c, &open());
        assert_eq!(times(&plan), vec![1, 2, 3]);
        assert_eq!(plan.cut, Some(t(4)));
    }

    #[test]
    fn never_past_the_last_commit_before_the_oldest_pending_instant() {
        let mut spec = commits(1..=8);
        spec.push((3, Action::Clean, State::Requested));
        // 3 is a pending clean: commit 2, the last one before it, stays with everything after it.
        spec.retain(|(n, a, _)| !(*n == 3 && *a == Action::Commit));
        let plan = plan_archive(&tl(&spec), &config(), &open());
        assert_eq!(times(&plan), vec![1]);
        // A rolled-back time holds archival the same way until the sweep forgets it.
        let mut timeline = tl(&commits(1..=8));
        timeline = Timeline::from_listing(
            &timeline
                .instants()
                .iter()
                .map(|i| ObjectMeta {
                    path: i.path(),
                    size: 0,
                })
                .chain([ObjectMeta {
                    path: format!("{}{}", crate::table::timeline::RETIRED_DIR, t(3)),
                    size: 0,
                }])
                .collect::<Vec<_>>(),
        )
        .expect("timeline");
        assert_eq!(times(&plan_archive(&timeline, &config(), &open())), vec![1]);
    }

    #[test]
    fn never_past_the_clean_cursor_or_config_ecr() {
        let spec = commits(1..=8);
        let mut b = open();
        b.last_clean_cursor = Some(t(3));
        assert_eq!(times(&plan_archive(&tl(&spec), &config(), &b)), vec![1, 2]);
        b.last_clean_cursor = Some(t(100));
        b.config_ecr = Some(t(2));
        assert_eq!(times(&plan_archive(&tl(&spec), &config(), &b)), vec![1]);
        b.has_clean = false;
        assert!(plan_archive(&tl(&spec), &config(), &b).instants.is_empty());
        b.cleaning = false;
        assert_eq!(times(&plan_archive(&tl(&spec), &config(), &b)), vec![1]);
    }

    #[test]
    fn never_past_an_uncleaned_replacecommit() {
        let mut spec = commits(1..=8);
        spec[1] = (2, Action::ReplaceCommit, State::Completed);
        let mut b = open();
        b.last_clean_cursor = Some(t(2));
        // The clean's ECR is 2: the replacecommit at 2 is not older, so its groups may still have files.
        assert_eq!(times(&plan_archive(&tl(&spec), &config(), &b)), vec![1]);
        b.last_clean_cursor = Some(t(3));
        assert_eq!(times(&plan_archive(&tl(&spec), &config(), &b)), vec![1, 2]);
    }

    #[test]
    fn cleans_go_with_the_commits_but_the_latest_stays() {
        // Commits at 10..80, cleans right after the first three and after commit 70.
        let timeline = Timeline::from_instants(
            commits(1..=8)
                .iter()
                .map(|(n, a, s)| Instant::new(t(*n * 10), *a, *s))
                .chain(
                    [11u32, 21, 31, 71]
                        .map(|n| Instant::new(t(n), Action::Clean, State::Completed)),
                ),
        );
        let mut b = open();
        b.last_clean_cursor = Some(t(1000));
        b.config_ecr = Some(t(1000));
        let plan = plan_archive(&timeline, &config(), &b);
        let kinds: Vec<(u32, Action)> = plan
            .instants
            .iter()
            .map(|i| (i.time.as_str()[12..].parse().expect("n"), i.action))
            .collect();
        assert_eq!(
            kinds,
            vec![
                (10, Action::Commit),
                (11, Action::Clean),
                (20, Action::Commit),
                (21, Action::Clean),
                (30, Action::Commit),
                (31, Action::Clean),
                (40, Action::Commit),
                (50, Action::Commit),
            ]
        );
    }

    #[test]
    fn never_past_a_pending_compaction_or_deltacommit() {
        for action in [Action::Compaction, Action::DeltaCommit] {
            let mut spec: Vec<(u32, Action, State)> = (1..=8)
                .map(|n| (n, Action::DeltaCommit, State::Completed))
                .collect();
            spec[3] = (4, action, State::Requested);
            // Deltacommit 3, the last completed one before the pending instant at 4, stays.
            assert_eq!(
                times(&plan_archive(&tl(&spec), &config(), &open())),
                vec![1, 2],
                "{action}"
            );
            spec[3] = (4, action, State::Inflight);
            assert_eq!(
                times(&plan_archive(&tl(&spec), &config(), &open())),
                vec![1, 2]
            );
        }
        // Once the compaction completes (as a commit) the cut moves on.
        let mut spec: Vec<(u32, Action, State)> = (1..=8)
            .map(|n| (n, Action::DeltaCommit, State::Completed))
            .collect();
        spec[3] = (4, Action::Commit, State::Completed);
        assert_eq!(
            times(&plan_archive(&tl(&spec), &config(), &open())),
            vec![1, 2, 3, 4, 5]
        );
    }

    #[test]
    fn deltacommits_and_compactions_archive_every_state_file() {
        let delta = Instant::new(t(1), Action::DeltaCommit, State::Completed);
        let (pending, done) = state_files(&delta);
        let base = t(1);
        assert_eq!(
            pending,
            vec![
                format!(".hoodie/{base}.deltacommit.requested"),
                format!(".hoodie/{base}.deltacommit.inflight")
            ]
        );
        assert_eq!(done, format!(".hoodie/{base}.deltacommit"));
        // A completed commit may be a compaction's.
        let commit = Instant::new(t(1), Action::Commit, State::Completed);
        let (pending, done) = state_files(&commit);
        assert_eq!(
            pending,
            vec![
                format!(".hoodie/{base}.commit.requested"),
                format!(".hoodie/{base}.inflight"),
                format!(".hoodie/{base}.compaction.requested"),
                format!(".hoodie/{base}.compaction.inflight")
            ]
        );
        assert_eq!(done, format!(".hoodie/{base}.commit"));
    }

    fn summary(n: u32, action: Action, paths: &[String]) -> Arc<CommitSummary> {
        let mut commit =
            crate::table::commit::CommitMetadata::new(crate::table::commit::OperationType::Upsert);
        for path in paths {
            let (p, name) = path.rsplit_once('/').expect("partition");
            let id = name.trim_start_matches('.').split('_').next().expect("id");
            commit.add_write_stat(crate::table::commit::WriteStat::new(id, p, path));
        }
        Arc::new(CommitSummary {
            instant: Instant::new(t(n), action, State::Completed),
            metadata: crate::table::commit::ReplaceCommitMetadata {
                commit,
                ..Default::default()
            },
        })
    }

    fn base(id: &str, n: u32) -> String {
        format!("p/{id}_0-0-0_{}.parquet", t(n))
    }

    fn log(id: &str, base: u32, version: u32) -> String {
        format!("p/.{id}_{}.log.{version}_0-0-0", t(base))
    }

    #[test]
    fn a_deltacommit_whose_logs_are_not_compacted_holds_archival() {
        // 1: bases a, b. 2: logs of a@1 and b@1. 3: log of a@1. 4: compaction of a. 5: log of a@4.
        let written = vec![
            summary(1, Action::DeltaCommit, &[base("a", 1), base("b", 1)]),
            summary(2, Action::DeltaCommit, &[log("a", 1, 1), log("b", 1, 1)]),
            summary(3, Action::DeltaCommit, &[log("a", 1, 2)]),
            summary(4, Action::Commit, &[base("a", 4)]),
            summary(5, Action::DeltaCommit, &[log("a", 4, 1)]),
        ];
        // b@1's log (written by 2) is live: 2 stays.
        assert_eq!(oldest_uncompacted_log_writer(&written), Some(t(2)));
        // Once b is compacted too, a@4's log (written by 5) is the oldest live one.
        let mut compacted = written.clone();
        compacted.push(summary(6, Action::Commit, &[base("b", 6)]));
        assert_eq!(oldest_uncompacted_log_writer(&compacted), Some(t(5)));
        // A replaced group's logs are not live either.
        let mut replaced = written;
        let mut replace = (*summary(6, Action::ReplaceCommit, &[base("c", 6)])).clone();
        replace
            .metadata
            .partition_to_replace_file_ids
            .insert("p".into(), vec!["b".into()]);
        replaced.push(Arc::new(replace));
        assert_eq!(oldest_uncompacted_log_writer(&replaced), Some(t(5)));
        // Copy-on-write: no logs, no bound.
        assert_eq!(
            oldest_uncompacted_log_writer(&[summary(1, Action::Commit, &[base("a", 1)])]),
            None
        );
        // The bound caps the cut.
        let mut b = open();
        b.uncompacted_logs = Some(t(2));
        assert_eq!(
            times(&plan_archive(&tl(&commits(1..=8)), &config(), &b)),
            vec![1]
        );
    }

    #[test]
    fn a_compaction_that_carried_logs_holds_archival_until_its_slice_is_compacted() {
        // 1: bases a. 2: log of a@1. 4: compaction of a (planned at 3) carrying 3's log into a@4. 3: log of a@1.
        let mut compaction = (*summary(4, Action::Commit, &[base("a", 4)])).clone();
        let carried = crate::table::carried::CarriedLog {
            path: log("a", 4, 1),
            from: log("a", 1, 2),
            size: 1,
            instant: t(3).to_string(),
        };
        crate::table::carried::set_carried(&mut compaction.metadata.commit, &[carried])
            .unwrap_or_else(|e| panic!("{e}"));
        let written = vec![
            summary(1, Action::DeltaCommit, &[base("a", 1)]),
            summary(2, Action::DeltaCommit, &[log("a", 1, 1)]),
            summary(3, Action::DeltaCommit, &[log("a", 1, 2)]),
            Arc::new(compaction),
        ];
        // 2's and 3's logs are superseded by a@4; the copy in a@4 is named by 4 alone: 4 stays.
        assert_eq!(oldest_uncompacted_log_writer(&written), Some(t(4)));
        // Once a@4 is compacted, nothing holds archival.
        let mut compacted = written;
        compacted.push(summary(6, Action::Commit, &[base("a", 6)]));
        assert_eq!(oldest_uncompacted_log_writer(&compacted), None);
    }

    #[test]
    fn a_rule_that_forbids_archival_is_not_undone_by_a_later_bound() {
        // No clean yet (or no cursor) means no archival at all; the merge-on-read bound (and the
        // replacecommit bound) only ever lower a cut, so they must not turn "none" into a cut.
        let b = ArchiveBounds {
            has_clean: false,
            uncompacted_logs: Some(t(5)),
            ..open()
        };
        assert!(plan_archive(&tl(&commits(1..=8)), &config(), &b)
            .instants
            .is_empty());
        let b = ArchiveBounds {
            last_clean_cursor: None,
            uncompacted_logs: Some(t(5)),
            ..open()
        };
        assert!(plan_archive(&tl(&commits(1..=8)), &config(), &b)
            .instants
            .is_empty());
        // With a clean, the bound applies.
        let b = ArchiveBounds {
            uncompacted_logs: Some(t(3)),
            ..open()
        };
        assert_eq!(
            times(&plan_archive(&tl(&commits(1..=8)), &config(), &b)),
            [1, 2]
        );
    }
}
