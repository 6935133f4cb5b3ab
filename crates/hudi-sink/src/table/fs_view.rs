//! File slices: which base file of each file group a reader sees, by listing ([`latest_file_slices`]) or from a
//! view kept current from the active timeline ([`FileSystemView`]).
//!
//! Invariants:
//! - Both apply the one rule of [`SliceVisibility`]; per file group the visible slice with the greatest instant
//!   wins, and two base files of one (partition, file id, instant) are an error (readers abort on them).
//! - Only `.parquet` files outside `.hoodie/` and `_delta_log/` are base files; `.hoodie_partition_metadata*` and
//!   other files are ignored, a `.parquet` file whose name is not a base file name is an error.
//! - [`FileSystemView`] holds one [`FileSlice`] per live file group, never the history: a warm batch costs one
//!   GET per commit completed since the last one, whatever the number of instants or files the table ever had.
//! - Merge-on-read: a slice also holds its log files (`.<fileId>_<baseInstant>.log.<version>_<token>`) whose
//!   base instant is the slice's and that [`LogVisibility`] counts as committed, in reader order; while a
//!   compaction of the group is pending, also the committed logs of the slice it will make (writers append
//!   there while another engine's compaction is pending), after the slice's own: Hudi's merged file slice.

mod log_visibility;
mod visibility;

#[cfg(test)]
mod mor_tests;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

pub use log_visibility::LogVisibility;
pub use visibility::{ReplacedGroups, SliceVisibility};

use super::commit::WriteStat;
use super::file_name::BaseFileName;
use super::instant::{Action, InstantTime};
use super::log_file_name::LogFileName;
use super::partition_metadata::PARTITION_METAFILE;
use super::timeline::{Timeline, TimelineError};
use crate::storage::Storage;

/// Top-level directories that hold no data files: the timeline and the planned Delta Lake mirror.
const NON_DATA_TOP_DIRS: [&str; 2] = [".hoodie/", "_delta_log/"];

/// Whether `path` lies in a top-level directory that holds no data files (the timeline, a Delta Lake mirror).
pub fn is_non_data_path(path: &str) -> bool {
    NON_DATA_TOP_DIRS.iter().any(|d| path.starts_with(d))
}
/// The only base file extension this writer handles.
const BASE_FILE_EXTENSION: &str = "parquet";

/// One log file of a slice: merge-on-read appends, merged over the base file by readers.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SliceLogFile {
    /// The parsed name (orders as readers order a slice's logs).
    pub name: LogFileName,
    /// Its size in bytes.
    pub size: u64,
}

/// One base file and its committed log files: the visible slice of a file group.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FileSlice {
    /// Partition path (`""` when non-partitioned).
    pub partition_path: String,
    /// File group id.
    pub file_id: String,
    /// The instant that wrote the base file.
    pub base_instant: InstantTime,
    /// The base file's name.
    pub file_name: String,
    /// Its size in bytes.
    pub size: u64,
    /// Merge-on-read: the committed log files appended to this slice, in reader order (empty on copy-on-write
    /// tables), then those appended to the slice of a pending compaction of the group (see the module doc).
    /// Slices without a base file (log-only groups, written by other engines) are not represented.
    pub log_files: Vec<SliceLogFile>,
}

/// A data file found by a listing or named by a write stat.
enum DataFile {
    Base(FileSlice),
    /// (partition path, log file).
    Log(String, SliceLogFile),
}

impl FileSlice {
    /// The base file's path relative to the table base path.
    pub fn path(&self) -> String {
        crate::storage::join_path(&[&self.partition_path, &self.file_name])
    }

    /// The log files' paths relative to the table base path, in reader order.
    pub fn log_paths(&self) -> Vec<String> {
        self.log_files
            .iter()
            .map(|l| crate::storage::join_path(&[&self.partition_path, &l.name.file_name()]))
            .collect()
    }

    /// The logs of the slice based at `base` (the slice's own, or a pending compaction's), in reader order.
    pub fn logs_based_at<'s>(
        &'s self,
        base: &'s InstantTime,
    ) -> impl Iterator<Item = &'s SliceLogFile> + 's {
        self.log_files
            .iter()
            .filter(move |l| l.name.base_instant == *base)
    }

    /// Appends a committed log of this slice, keeping reader order and each log once.
    fn add_log(&mut self, log: SliceLogFile) {
        if let Err(at) = self.log_files.binary_search(&log) {
            self.log_files.insert(at, log);
        }
    }

    /// Parses a table-relative path: `None` when it is neither a base file location (see the module doc) nor
    /// a parsable log file name, an error when it is a `.parquet` file without a base file name.
    fn from_path(path: &str, size: u64) -> Result<Option<DataFile>, TimelineError> {
        if is_non_data_path(path) {
            return Ok(None);
        }
        let (partition_path, file_name) = path.rsplit_once('/').unwrap_or(("", path));
        if file_name.starts_with('.') && file_name.contains(".log.") {
            // Hidden files of other tools and CDC logs are not slice logs.
            return Ok(LogFileName::parse(file_name).ok().map(|name| {
                DataFile::Log(partition_path.to_string(), SliceLogFile { name, size })
            }));
        }
        let extension = file_name.rsplit_once('.').map(|(_, ext)| ext);
        if file_name.starts_with(PARTITION_METAFILE) || extension != Some(BASE_FILE_EXTENSION) {
            return Ok(None);
        }
        let base =
            BaseFileName::parse(file_name).map_err(|source| TimelineError::InvalidBaseFile {
                path: path.to_string(),
                source,
            })?;
        Ok(Some(DataFile::Base(Self {
            partition_path: partition_path.to_string(),
            file_id: base.file_id,
            base_instant: base.instant_time,
            file_name: file_name.to_string(),
            size,
            log_files: Vec::new(),
        })))
    }
}

/// Per (partition, file id): committed logs whose slice is not (yet) the group's latest visible one, e.g. logs
/// appended to a pending compaction's slice; attached when that slice appears, dropped when a newer one does.
type DetachedLogs = BTreeMap<(String, String), Vec<SliceLogFile>>;

/// Attaches `log` to its group's slice when the slice's base instant is the log's, or when the log's base is a
/// pending compaction newer than the slice (the slice the compaction will make, merged with the one it reads, as
/// Hudi's `getLatestMergedFileSlicesBeforeOrOn` does); else keeps it detached.
fn attach_log(
    best: &mut LatestSlices,
    detached: &mut DetachedLogs,
    logs: &LogVisibility,
    partition_path: &str,
    log: SliceLogFile,
) {
    let key = (partition_path.to_string(), log.name.file_id.clone());
    match best.get_mut(&key) {
        Some(slice)
            if slice.base_instant == log.name.base_instant
                || (slice.base_instant < log.name.base_instant
                    && logs.is_pending_compaction_base(&log.name)) =>
        {
            slice.add_log(log);
        }
        Some(slice) if slice.base_instant > log.name.base_instant => {}
        _ => {
            let waiting = detached.entry(key).or_default();
            if !waiting.contains(&log) {
                waiting.push(log);
            }
        }
    }
}

/// Moves the detached logs of `key` onto its (new) latest slice, dropping those of older slices.
fn reattach(best: &mut LatestSlices, detached: &mut DetachedLogs, key: &(String, String)) {
    let Some(slice) = best.get_mut(key) else {
        return;
    };
    if let Some(waiting) = detached.get_mut(key) {
        let mut kept = Vec::new();
        for log in waiting.drain(..) {
            if log.name.base_instant == slice.base_instant {
                slice.add_log(log);
            } else if log.name.base_instant > slice.base_instant {
                kept.push(log);
            }
        }
        *waiting = kept;
    }
    if detached.get(key).is_some_and(Vec::is_empty) {
        detached.remove(key);
    }
}

/// Per (partition, file id): the slice with the greatest instant.
type LatestSlices = BTreeMap<(String, String), FileSlice>;

/// Keeps `slice` if it is the greatest of its group; the same instant twice under another name is an error.
fn offer(best: &mut LatestSlices, slice: FileSlice) -> Result<(), TimelineError> {
    let key = (slice.partition_path.clone(), slice.file_id.clone());
    match best.get(&key) {
        Some(existing)
            if existing.base_instant == slice.base_instant
                && existing.file_name != slice.file_name =>
        {
            Err(TimelineError::DuplicateSlice {
                partition_path: slice.partition_path,
                file_id: slice.file_id,
                instant: slice.base_instant.to_string(),
                first: existing.file_name.clone(),
                second: slice.file_name,
            })
        }
        Some(existing) if existing.base_instant >= slice.base_instant => Ok(()),
        _ => {
            let mut slice = slice;
            // Logs appended to this slice while its compaction was pending were merged into the older slice.
            if let Some(older) = best.remove(&key) {
                for log in older.log_files {
                    if log.name.base_instant >= slice.base_instant {
                        slice.add_log(log);
                    }
                }
            }
            best.insert(key, slice);
            Ok(())
        }
    }
}

/// One listing of the whole table, keeping the latest visible slice per group with its committed logs, and
/// the committed logs of slices not visible yet.
async fn list_visible(
    storage: &dyn Storage,
    visibility: &SliceVisibility<'_>,
    logs: &LogVisibility,
) -> Result<(LatestSlices, DetachedLogs), TimelineError> {
    let mut best = LatestSlices::new();
    let mut listed_logs = Vec::new();
    for object in storage.list("").await? {
        match FileSlice::from_path(&object.path, object.size)? {
            Some(DataFile::Base(slice))
                if visibility.is_visible(
                    &slice.partition_path,
                    &slice.file_id,
                    &slice.base_instant,
                ) =>
            {
                offer(&mut best, slice)?;
            }
            Some(DataFile::Log(partition, log))
                if logs.written_by(&object.path).is_some()
                    && !visibility.is_replaced(&partition, &log.name.file_id) =>
            {
                listed_logs.push((partition, log));
            }
            _ => {}
        }
    }
    let mut detached = DetachedLogs::new();
    for (partition, log) in listed_logs {
        attach_log(&mut best, &mut detached, logs, &partition, log);
    }
    Ok((best, detached))
}

/// The latest visible slice of every file group as of `as_of` (default: the latest completed commit-like
/// instant), sorted by partition and file id: one listing of the whole table (none before the first commit)
/// plus one GET per replacecommit and per deltacommit ≤ the cutoff. See [`SliceVisibility`] and
/// [`LogVisibility`] for the rule.
pub async fn latest_file_slices(
    storage: &dyn Storage,
    timeline: &Timeline,
    as_of: Option<&InstantTime>,
) -> Result<Vec<FileSlice>, TimelineError> {
    let visibility = SliceVisibility::load(storage, timeline, as_of).await?;
    if visibility.cutoff().is_none() {
        // Nothing committed: nothing is visible.
        return Ok(Vec::new());
    }
    let logs = LogVisibility::load(storage, timeline, visibility.cutoff()).await?;
    Ok(list_visible(storage, &visibility, &logs)
        .await?
        .0
        .into_values()
        .collect())
}

/// Why [`FileSystemView::sync`] listed the table instead of applying instants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListReason {
    /// The view had no state (new, or dropped after a failure).
    Cold,
    /// The first completed commit is newer than everything the view saw: instants it never saw may have been
    /// archived in between.
    Unseen,
    /// A commit-like instant the view saw pending left the timeline without being retired (completed and
    /// archived, or rolled back by another engine).
    PendingVanished,
    /// An applied instant at or after the first completed commit is no longer a completed commit (a restore or
    /// a rollback of a completed commit).
    AppliedRemoved,
}

/// What one [`FileSystemView::sync`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refresh {
    /// Rebuilt from one listing of the table.
    Listed(ListReason),
    /// Brought up to date from the commit metadata of this many newly completed instants (one GET each).
    Applied(usize),
}

/// The latest committed slice of every file group, kept across batches while the process is warm and brought up
/// to date from the active timeline instead of listings.
///
/// Invariants (between syncs):
/// - `slices` equals [`latest_file_slices`] on the timeline of the last sync, provided committed instants'
///   write stats name exactly their base and log files (as every Hudi writer's commit does) and no orphan base
///   file lies below the first active instant (archival only cuts where none does). A deltacommit's log joins
///   its group's slice when the log's base instant is the slice's; logs of a slice not visible yet (a pending
///   compaction's) wait in `detached` until it appears, as the listing would then find them.
/// - `applied` holds the completed commit-like times reflected in `slices`, only those ≥ the first completed one
///   (older ones left the timeline for good), so it is bounded by the active timeline, as are `pending` and
///   `replaced`.
/// - Cleaning never deletes a group's latest slice (and deletes replaced groups only after their replacecommit
///   removed them here), so cleaning never invalidates the view.
/// - A sync that fails leaves the view cold: the next one lists the table.
#[derive(Default)]
pub struct FileSystemView {
    warm: Option<Warm>,
}

/// A completed instant read by a sync, before it is applied.
struct NewInstant {
    time: InstantTime,
    stats: Vec<WriteStat>,
    /// (partition, file id) of the groups a replacecommit replaced.
    replaced: Vec<(String, String)>,
    /// A deltacommit: only its stats' log files count as written (as in [`LogVisibility::load`]).
    delta: bool,
    /// A compaction's carried logs (`table::carried`): logs of its new slices that it wrote.
    carried: Vec<(String, u64)>,
}

/// The carried logs of the compaction commit `time` (see [`crate::table::carried`]), as (path, size).
pub(crate) fn carried_of(
    time: &InstantTime,
    meta: &super::commit::CommitMetadata,
) -> Result<Vec<(String, u64)>, TimelineError> {
    super::carried::carried_logs(meta)
        .map(|logs| logs.into_iter().map(|l| (l.path, l.size)).collect())
        .map_err(|e| TimelineError::InvalidWriteStat {
            instant: time.to_string(),
            path: super::carried::CARRIED_KEY.to_string(),
            reason: e.to_string(),
        })
}

/// The state of a view that has synced.
#[derive(Default)]
struct Warm {
    slices: LatestSlices,
    /// Committed logs of slices not visible yet (bounded by the active timeline's deltacommits).
    detached: DetachedLogs,
    replaced: ReplacedGroups,
    applied: BTreeSet<InstantTime>,
    /// Commit-like times pending at the last sync (they may complete later).
    pending: BTreeSet<InstantTime>,
    /// The greatest time on the timeline (rolled-back ones included) at the last sync.
    horizon: Option<InstantTime>,
    /// Metadata of commits the caller read already (a window member reads its window's commit): applied
    /// without reading it again.
    primed: BTreeMap<InstantTime, super::commit::CommitMetadata>,
    /// The schema of the newest commit applied since the last listing that carries one (`None` after a
    /// listing, which reads no commit): a writer catches up with it before it rewrites stored files.
    schema: Option<(InstantTime, String)>,
}

/// How many primed commits a view keeps (older ones are dropped: they are read again if ever needed).
const MAX_PRIMED: usize = 4;

impl fmt::Debug for FileSystemView {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.warm {
            None => f.write_str("FileSystemView(cold)"),
            Some(w) => f
                .debug_struct("FileSystemView")
                .field("file_groups", &w.slices.len())
                .field("replaced", &w.replaced.len())
                .field("applied", &w.applied.len())
                .field("horizon", &w.horizon)
                .finish(),
        }
    }
}

impl FileSystemView {
    /// A cold view: its first sync lists the table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the view has state (its next sync may avoid the listing).
    pub fn is_warm(&self) -> bool {
        self.warm.is_some()
    }

    /// Drops the state, so that the next sync lists the table (after anything that may have left the view
    /// behind the table, e.g. a failed write).
    pub fn invalidate(&mut self) {
        self.warm = None;
    }

    /// Records that the commit-like instant `time` exists, pending: the one the caller is writing, when the
    /// timeline it synced from was loaded before that instant began. Once it completes it is then known, not
    /// unseen (which would make the next sync list the table).
    pub fn saw_pending(&mut self, time: &InstantTime) {
        if let Some(warm) = self.warm.as_mut() {
            warm.pending.insert(time.clone());
            if warm.horizon.as_ref().is_none_or(|h| h < time) {
                warm.horizon = Some(time.clone());
            }
        }
    }

    /// Gives the view the metadata of the completed commit `time`, read by the caller: the next sync applies
    /// it without reading it again (a cold view ignores it: its sync lists the table).
    pub fn prime(&mut self, time: InstantTime, meta: super::commit::CommitMetadata) {
        if let Some(warm) = self.warm.as_mut() {
            if warm.applied.contains(&time) {
                return;
            }
            warm.primed.insert(time, meta);
            while warm.primed.len() > MAX_PRIMED {
                warm.primed.pop_first();
            }
        }
    }

    /// The latest slice of every live file group as of the last sync, sorted by partition and file id (none
    /// when cold).
    pub fn slices(&self) -> impl Iterator<Item = &FileSlice> {
        self.warm.iter().flat_map(|w| w.slices.values())
    }

    /// The schema of the newest commit the view applied since it last listed the table, when it carried
    /// one (`None` while cold or right after a listing: the caller reads the timeline's latest schema).
    pub fn applied_schema(&self) -> Option<&str> {
        self.warm
            .as_ref()
            .and_then(|w| w.schema.as_ref())
            .map(|(_, s)| s.as_str())
    }

    /// The number of live file groups.
    pub fn len(&self) -> usize {
        self.warm.as_ref().map_or(0, |w| w.slices.len())
    }

    /// Whether no file group is live (or the view is cold).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Brings the view to the latest committed state of `timeline` (the table's active timeline, loaded by the
    /// caller): applies the write stats and replaced groups of completed commit-like instants it has not applied
    /// yet (one GET each; pending instants and rolled-back times never complete, so they are never applied), or
    /// lists the table when it is cold or cannot prove it saw every instant that may have left the timeline.
    pub async fn sync(
        &mut self,
        storage: &dyn Storage,
        timeline: &Timeline,
    ) -> Result<Refresh, TimelineError> {
        // Taken out for the duration: a sync that fails leaves the view cold.
        let (warm, refresh) = match self.warm.take() {
            None => (
                Warm::list(storage, timeline).await?,
                Refresh::Listed(ListReason::Cold),
            ),
            Some(warm) => match warm.stale_reason(timeline) {
                Some(reason) => (
                    Warm::list(storage, timeline).await?,
                    Refresh::Listed(reason),
                ),
                None => {
                    let mut warm = warm;
                    let applied = warm.apply_new(storage, timeline).await?;
                    (warm, Refresh::Applied(applied))
                }
            },
        };
        if let Refresh::Listed(reason) = refresh {
            tracing::debug!(
                ?reason,
                groups = warm.slices.len(),
                "file system view listed the table"
            );
        }
        self.warm = Some(warm);
        Ok(refresh)
    }
}

impl Warm {
    /// One listing of the table and the rule, as [`latest_file_slices`] does.
    async fn list(storage: &dyn Storage, timeline: &Timeline) -> Result<Self, TimelineError> {
        let visibility = SliceVisibility::load(storage, timeline, None).await?;
        let (slices, detached) = match visibility.cutoff() {
            Some(cutoff) => {
                let logs = LogVisibility::load(storage, timeline, Some(cutoff)).await?;
                list_visible(storage, &visibility, &logs).await?
            }
            None => (LatestSlices::new(), DetachedLogs::new()),
        };
        let mut warm = Warm {
            slices,
            detached,
            replaced: visibility.replaced().clone(),
            applied: completed_times(timeline).cloned().collect(),
            ..Warm::default()
        };
        warm.seen(timeline);
        Ok(warm)
    }

    /// Applies the completed commit-like instants not applied yet; returns how many.
    async fn apply_new(
        &mut self,
        storage: &dyn Storage,
        timeline: &Timeline,
    ) -> Result<usize, TimelineError> {
        // Read everything first, then apply in time order.
        let mut new: Vec<NewInstant> = Vec::new();
        for instant in timeline.completed_commits() {
            if self.applied.contains(&instant.time) {
                continue;
            }
            if instant.action == Action::ReplaceCommit {
                let meta = timeline.replace_commit_metadata(storage, instant).await?;
                let replaced = meta
                    .replaced_file_groups()
                    .map(|(p, f)| (p.to_string(), f.to_string()))
                    .collect();
                let stats = meta.commit.write_stats().cloned().collect();
                new.push(NewInstant {
                    time: instant.time.clone(),
                    stats,
                    replaced,
                    delta: false,
                    carried: Vec::new(),
                });
            } else {
                let meta = match self.primed.remove(&instant.time) {
                    Some(meta) => meta,
                    None => timeline.commit_metadata(storage, instant).await?,
                };
                let stats = meta.write_stats().cloned().collect();
                if let (true, Some(schema)) =
                    (meta.operation_type.can_update_schema(), meta.schema())
                {
                    if self.schema.as_ref().is_none_or(|(t, _)| *t < instant.time) {
                        self.schema = Some((instant.time.clone(), schema.to_string()));
                    }
                }
                let delta = instant.action == Action::DeltaCommit;
                let carried = if delta {
                    Vec::new()
                } else {
                    carried_of(&instant.time, &meta)?
                };
                new.push(NewInstant {
                    time: instant.time.clone(),
                    stats,
                    replaced: Vec::new(),
                    delta,
                    carried,
                });
            }
        }
        let count = new.len();
        // Replaced groups first: a replaced group stays hidden whatever the time of its slices.
        for NewInstant { time, replaced, .. } in &new {
            for (partition, file_id) in replaced {
                self.replaced.insert(partition, file_id, time);
                self.slices.remove(&(partition.clone(), file_id.clone()));
                self.detached.remove(&(partition.clone(), file_id.clone()));
            }
        }
        let visibility = SliceVisibility::new(timeline, None).with_replaced(&self.replaced);
        let logs = LogVisibility::new(timeline, visibility.cutoff());
        for NewInstant {
            time,
            stats,
            delta,
            carried,
            ..
        } in &new
        {
            for stat in stats {
                let size = u64::try_from(stat.file_size_in_bytes).map_err(|_| {
                    TimelineError::InvalidWriteStat {
                        instant: time.to_string(),
                        path: stat.path.clone(),
                        reason: format!("negative fileSizeInBytes {}", stat.file_size_in_bytes),
                    }
                })?;
                match FileSlice::from_path(&stat.path, size)? {
                    Some(DataFile::Base(slice))
                        if visibility.is_visible(
                            &slice.partition_path,
                            &slice.file_id,
                            &slice.base_instant,
                        ) =>
                    {
                        let key = (slice.partition_path.clone(), slice.file_id.clone());
                        offer(&mut self.slices, slice)?;
                        reattach(&mut self.slices, &mut self.detached, &key);
                    }
                    // A completed deltacommit's stat naming a log: it wrote the log (LogVisibility's rule).
                    Some(DataFile::Log(partition, log))
                        if *delta && !visibility.is_replaced(&partition, &log.name.file_id) =>
                    {
                        attach_log(&mut self.slices, &mut self.detached, &logs, &partition, log);
                    }
                    _ => {}
                }
            }
            // A compaction's carried logs, after its base files: they belong to its new slices.
            for (path, size) in carried {
                if let Some(DataFile::Log(partition, log)) = FileSlice::from_path(path, *size)? {
                    if !visibility.is_replaced(&partition, &log.name.file_id) {
                        attach_log(&mut self.slices, &mut self.detached, &logs, &partition, log);
                    }
                }
            }
        }
        self.applied.extend(new.into_iter().map(|n| n.time));
        self.seen(timeline);
        Ok(count)
    }
}

/// The times of the completed commit-like instants, oldest first.
fn completed_times(timeline: &Timeline) -> impl Iterator<Item = &InstantTime> {
    timeline
        .instants()
        .iter()
        .filter(|i| i.is_completed() && i.action.is_commit_like())
        .map(|i| &i.time)
}

impl Warm {
    /// Why the view cannot be brought up to date from `timeline` by applying instants, if it cannot.
    fn stale_reason(&self, timeline: &Timeline) -> Option<ListReason> {
        let first = completed_times(timeline).next();
        // Archival removes a prefix of the timeline: if the first completed commit is one the view never saw,
        // instants between its horizon and that commit may be gone unseen.
        if let Some(first) = first {
            let newer_than_seen = self.horizon.as_ref().is_none_or(|h| first > h);
            if newer_than_seen && !self.applied.contains(first) {
                return Some(ListReason::Unseen);
            }
        }
        // Seen pending, now neither on the timeline nor retired: it may have completed and been archived.
        if self
            .pending
            .iter()
            .any(|t| !timeline.contains(t) && !timeline.is_retired(t))
        {
            return Some(ListReason::PendingVanished);
        }
        let completed: BTreeSet<&InstantTime> = completed_times(timeline).collect();
        if self
            .applied
            .iter()
            .any(|t| first.is_none_or(|first| t >= first) && !completed.contains(t))
        {
            return Some(ListReason::AppliedRemoved);
        }
        None
    }

    /// Records what the view has seen of `timeline`, pruning what left it.
    fn seen(&mut self, timeline: &Timeline) {
        if let Some(first) = completed_times(timeline).next() {
            self.applied = self.applied.split_off(first);
            self.replaced.prune_before(first);
        }
        self.pending = timeline
            .pending()
            .into_iter()
            .filter(|i| i.action.comparable().is_commit_like())
            .map(|i| i.time.clone())
            .collect();
        self.horizon = timeline.last_used_time().cloned();
    }
}
