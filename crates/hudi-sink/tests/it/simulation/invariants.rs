//! The invariants of a finished run, and the recording store that lets them see the whole history: every
//! commit file ever created (archival removes them from the timeline) and every delete as it happens.
//!
//! Checked after each run ([`check_invariants`]): the table read through the library equals the model; the
//! checkpoint never moves backwards over all commits ever made and ends at the acknowledged offsets; every
//! file of a slice a query inside the retention reads exists (as of every commit at or after the last
//! clean's earliest commit to retain); nothing of a failed instant is left; the active timeline is valid
//! and holds at most `keep.max.commits` completed commits. Checked on every delete, by [`Recorder`]: no
//! file of a pending instant is deleted (a rollback retires the time first), and no completed commit is
//! archived while an older instant is still pending (readers would take that instant's files for
//! archived, committed data). Checked as each replacecommit is stored: a clustering replaces only file groups
//! that completed commits wrote and that no earlier clustering replaced ([`clustering`]).

use super::delta::{is_delta_log, DeltaLedger};
use super::window_invariant::check_windows;
use super::*;

/// What the recorder saw.
#[derive(Debug, Default)]
struct Seen {
    /// Completed commit-like files ever created: time → (file name, body).
    commits: BTreeMap<String, (String, Bytes)>,
    /// File names directly under `.hoodie/` now.
    timeline: BTreeSet<String>,
    /// Retired times now.
    retired: BTreeSet<String>,
    violations: Vec<(&'static str, String)>,
    /// What the table services did, by kind.
    services: BTreeMap<&'static str, u64>,
    /// Merge-on-read: the instants in the header of every log file ever stored at a path (a cleaned path may
    /// be stored again by a late writer of the same version), by path.
    log_instants: BTreeMap<String, Vec<String>>,
    /// Merge-on-read: the log files on storage now, with the instant that stored each.
    live_logs: BTreeMap<String, String>,
    /// Merge-on-read: per instant being rolled back, its log files on storage, with their markers, when the
    /// rollback retired it.
    rolling_back: BTreeMap<String, BTreeSet<String>>,
    /// Markers on storage now.
    live_markers: BTreeSet<String>,
    /// Base files on storage now, with the instant in their name.
    live_base_files: BTreeMap<String, String>,
    /// Interval commit: the instants that are windows (their `window.json` was stored).
    windows: BTreeSet<String>,
    /// Files deleted while their instant was pending, by a window's close (an excluded member's) or by this
    /// sink's compaction (a group it left out), by instant: its commit may not list them.
    deleted_before_commit: BTreeMap<String, BTreeSet<String>>,
    /// Compaction plans stored, by time: per (partition, file id), the planned slice's base instant and the
    /// log paths the plan merges.
    compaction_plans: BTreeMap<String, PlannedGroups>,
    /// The compactions whose stored plan is another engine's (no mark of this sink).
    foreign_compactions: BTreeSet<String>,
    /// The Delta mirror's versions.
    delta: DeltaLedger,
    /// File groups replaced by a completed replacecommit, by (partition, file id): the replacecommit's time.
    replaced: BTreeMap<(String, String), String>,
    /// File groups (partition, file id) that the completed commits stored so far wrote.
    written: BTreeSet<(String, String)>,
}

/// A compaction plan's groups: per (partition, file id), the planned slice's base instant and the log paths
/// it merges.
type PlannedGroups = BTreeMap<(String, String), (String, BTreeSet<String>)>;

mod buckets;
mod clustering;
mod compaction;
mod retention;

use buckets::check_one_group_per_bucket;
use retention::check_retention;

/// The instant in a base file's name (`<fileId>_<token>_<t>.parquet`), for data files outside `.hoodie/`.
fn base_file_instant(path: &str) -> Option<&str> {
    if path.starts_with(".hoodie/") || is_delta_log(path) {
        return None;
    }
    path.strip_suffix(".parquet")
        .and_then(|p| p.rsplit('_').next())
}

/// The paths a completed commit's body lists: its write stats' files and a compaction's carried logs.
fn listed_paths(body: &Bytes) -> BTreeSet<String> {
    CommitMetadata::from_json(body)
        .map(|m| {
            let carried = hudi_sink::table::carried::carried_logs(&m).unwrap_or_default();
            m.write_stats()
                .map(|s| s.path.clone())
                .chain(carried.into_iter().map(|c| c.path))
                .collect()
        })
        .unwrap_or_default()
}

/// The parsed name of a log file path outside `.hoodie/`, with its partition.
fn log_name_of(path: &str) -> Option<(&str, hudi_sink::log_file::LogFileName)> {
    let (partition, name) = path.rsplit_once('/').unwrap_or(("", path));
    hudi_sink::log_file::LogFileName::parse(name)
        .ok()
        .map(|n| (partition, n))
}

/// The file name suffixes of completed commit-like instants.
const COMPLETED: [&str; 3] = [".commit", ".deltacommit", ".replacecommit"];

fn completed_time(name: &str) -> Option<&str> {
    COMPLETED.iter().find_map(|s| name.strip_suffix(s))
}

impl Seen {
    fn is_pending(&self, time: &str) -> bool {
        let has = |suffix: &str| self.timeline.contains(&format!("{time}.{suffix}"));
        let pending = has("commit.requested")
            || has("inflight")
            || has("replacecommit.requested")
            || has("replacecommit.inflight")
            || has("deltacommit.requested")
            || has("deltacommit.inflight")
            || has("compaction.requested")
            || has("compaction.inflight");
        let done = has("commit") || has("replacecommit") || has("deltacommit");
        pending && !done && !self.retired.contains(time)
    }

    /// A data file of `time` lands: if `time` completed already, its commit must list the file (an excluded
    /// window member's upload after the close would be visible as the instant's). A log of the slice of a
    /// pending compaction is the compaction's carried copy of a committed log: its commit lists it (checked
    /// by [`Seen::check_compaction_commit`]).
    fn on_data_file(&mut self, path: &str, time: &str) {
        // A log of a slice whose base instant never completed (a pending compaction's carried copy, or one a
        // paused compactor wrote after its compaction was rolled back) is part of no visible slice.
        let invisible_slice = log_name_of(path)
            .is_some_and(|(_, log)| !self.commits.contains_key(&log.base_instant.to_string()));
        if invisible_slice {
            return;
        }
        if let Some((name, body)) = self.commits.get(time) {
            if !listed_paths(body).contains(path) {
                self.violations.push((
                    "no file of an excluded member is ever visible",
                    format!("{path} of {time} landed after {name}, which does not list it"),
                ));
            }
        }
    }

    /// A commit of `time` is created: no data file named with it (by name or log header) that it does not
    /// list may be on storage then.
    fn on_commit(&mut self, name: &str, time: &str, body: &Bytes) {
        let listed = listed_paths(body);
        if let Some(record) = CommitMetadata::from_json(body).ok().and_then(|m| {
            hudi_sink::commit::window::WindowRecord::from_extra_metadata(&m.extra_metadata)
        }) {
            *self.services.entry("window commits").or_default() += 1;
            *self
                .services
                .entry("window contributions committed")
                .or_default() += record.members.len() as u64;
            if record.members.len() > 1 {
                *self
                    .services
                    .entry("window commits of several members")
                    .or_default() += 1;
            }
            *self.services.entry("window members excluded").or_default() +=
                record.excluded.len() as u64;
        }
        if let Some(gone) = self
            .deleted_before_commit
            .get(time)
            .and_then(|deleted| deleted.iter().find(|p| listed.contains(*p)))
        {
            self.violations.push((
                "committed files exist with their size",
                format!("{name} lists {gone}, deleted before it (an excluded member's, or a group left out)"),
            ));
        }
        let unlisted = self
            .live_base_files
            .iter()
            .chain(self.live_logs.iter())
            .find(|(p, t)| *t == time && !listed.contains(*p))
            .map(|(p, _)| p.clone());
        if let Some(path) = unlisted {
            self.violations.push((
                "no file of an excluded member is ever visible",
                format!("{name} created while {path}, named with it and not listed, is on storage"),
            ));
        }
    }

    fn on_delete(&mut self, path: &str) {
        if is_delta_log(path) {
            let active: BTreeSet<&str> = self
                .timeline
                .iter()
                .filter_map(|n| completed_time(n))
                .collect();
            if let Some(violation) = self.delta.on_delete(path, &active) {
                self.violations.push(violation);
            }
            return;
        }
        self.live_logs.remove(path);
        self.live_markers.remove(path);
        self.live_base_files.remove(path);
        if let Some(time) = path
            .strip_prefix(".hoodie/")
            .and_then(|n| n.strip_suffix(".deltacommit.requested"))
        {
            // A rollback retires the time first and removes the requested file last, after the data files:
            // none of the log files the instant had stored when it was retired may be left (the sweep would
            // find them later, but until then they sit in live slices). A zombie's later logs are the next
            // rollback's.
            if let Some(logs) = self.rolling_back.remove(time) {
                // Still there and still this instant's (another writer may have stored the freed version).
                if let Some(log) = logs
                    .iter()
                    .find(|l| self.live_logs.get(*l).is_some_and(|t| t == time))
                {
                    self.violations.push((
                        "a rollback deletes its log files",
                        format!("{log} of {time} left after its rollback"),
                    ));
                }
            }
        }
        if let Some(name) = path.strip_prefix(".hoodie/").filter(|n| !n.contains('/')) {
            if let Some(time) = completed_time(name) {
                // Readers count a file older than the first completed commit as committed: once this
                // commit goes, a completed commit must still precede every pending instant and every
                // rolled-back time (whose late files may exist).
                let remaining: Vec<&str> = self
                    .timeline
                    .iter()
                    .filter_map(|n| completed_time(n))
                    .filter(|t| *t != time)
                    .collect();
                let exposed: Vec<String> = self
                    .timeline
                    .iter()
                    .filter_map(|n| n.split('.').next())
                    .filter(|t| self.is_pending(t))
                    .chain(self.retired.iter().map(String::as_str))
                    .filter(|t| *t > time && !remaining.iter().any(|c| c < t))
                    .map(String::from)
                    .collect();
                *self.services.entry("commits archived").or_default() += 1;
                if let Some(p) = exposed.first() {
                    self.violations.push((
                        "archival never passes a pending instant",
                        format!(
                            "completed {name} removed: no completed commit is left before {p}, which is \
                             pending or rolled back, so readers would take its files for committed ones"
                        ),
                    ));
                }
            }
            self.timeline.remove(name);
            return;
        }
        if let Some(time) = path.strip_prefix(RETIRED_DIR) {
            self.retired.remove(time);
            return;
        }
        if path.ends_with(".parquet") && !path.starts_with(".hoodie/") {
            let time = path
                .trim_end_matches(".parquet")
                .rsplit('_')
                .next()
                .unwrap_or_default();
            *self.services.entry("data files deleted").or_default() += 1;
            let own_compaction = self.compaction_plans.contains_key(time)
                && !self.foreign_compactions.contains(time);
            if (self.windows.contains(time) || own_compaction) && self.is_pending(time) {
                // A window's close deletes the files of excluded members before its commit, and a compaction
                // the new base files of the groups it leaves out.
                self.deleted_before_commit
                    .entry(time.to_string())
                    .or_default()
                    .insert(path.to_string());
            } else if self.is_pending(time) {
                self.violations
                    .push(("no file of a pending instant is deleted", path.to_string()));
            }
        }
    }

    fn on_put(&mut self, path: &str, data: &Bytes) {
        if is_delta_log(path) {
            let completed: BTreeSet<String> = self.commits.keys().cloned().collect();
            if let Some(violation) = self.delta.on_put(path, data, &completed) {
                self.violations.push(violation);
            }
            return;
        }
        if path.starts_with(".hoodie/.temp/") {
            self.live_markers.insert(path.to_string());
        }
        if let Some(time) = path
            .strip_prefix(hudi_sink::commit::window::WINDOW_DIR)
            .and_then(|rest| rest.strip_suffix("/window.json"))
        {
            self.windows.insert(time.to_string());
        }
        if let Some(time) = base_file_instant(path) {
            let time = time.to_string();
            self.on_data_file(path, &time);
            self.live_base_files.insert(path.to_string(), time);
        }
        if let Some(name) = path.strip_prefix(".hoodie/").filter(|n| !n.contains('/')) {
            if name.ends_with(".clean") {
                *self.services.entry("cleans completed").or_default() += 1;
            }
            if name.ends_with(".replacecommit.requested") {
                *self.services.entry("clusterings planned").or_default() += 1;
            }
            self.timeline.insert(name.to_string());
            if let Some(time) = completed_time(name) {
                if !self.commits.contains_key(time) {
                    self.on_commit(name, time, data);
                    if name.ends_with(".commit") {
                        self.check_compaction_commit(time, data);
                    }
                    if name.ends_with(".deltacommit") {
                        self.check_appends_to_foreign_plans(time, data);
                    }
                    if name.ends_with(".replacecommit") {
                        self.check_replace_commit(name, time, data);
                    }
                    self.note_written(data);
                }
                if std::env::var_os("SIM_TRACE").is_some() {
                    let files: Vec<String> = CommitMetadata::from_json(data)
                        .map(|m| m.write_stats().map(|s| s.path.clone()).collect())
                        .unwrap_or_default();
                    eprintln!("sim: {name} stored: {files:?}");
                }
                self.commits
                    .insert(time.to_string(), (name.to_string(), data.clone()));
            }
            if let Some(time) = name.strip_suffix(".compaction.requested") {
                self.check_compaction_plan(time, data);
            }
        } else if let Some(time) = path.strip_prefix(RETIRED_DIR) {
            self.retired.insert(time.to_string());
            // Only logs whose marker is there: a rollback finds an instant's files by their markers (a
            // zombie's log whose marker an earlier rollback removed is the sweep's).
            let logs = self
                .live_logs
                .iter()
                .filter(|(l, t)| {
                    *t == time
                        && self
                            .live_markers
                            .contains(&format!(".hoodie/.temp/{time}/{l}.marker.APPEND"))
                })
                .map(|(l, _)| l.clone())
                .collect();
            self.rolling_back.insert(time.to_string(), logs);
        } else if path.contains(".log.") && !path.starts_with(".hoodie/") {
            let instant = hudi_sink::log_file::block::read_blocks(path, data)
                .ok()
                .and_then(|blocks| {
                    blocks.first().and_then(|b| {
                        b.header
                            .get(&hudi_sink::log_file::HeaderKey::InstantTime)
                            .cloned()
                    })
                });
            match instant {
                Some(t) => {
                    self.on_data_file(path, &t);
                    self.live_logs.insert(path.to_string(), t.clone());
                    self.log_instants
                        .entry(path.to_string())
                        .or_default()
                        .push(t);
                }
                None => self
                    .violations
                    .push(("every log file is readable", path.to_string())),
            }
        }
    }
}

/// The true store of a run, recording what [`check_invariants`] needs to know about its history.
#[derive(Debug)]
pub(super) struct Recorder {
    inner: Arc<dyn Storage>,
    seen: Mutex<Seen>,
}

impl Recorder {
    pub(super) fn new(inner: Arc<dyn Storage>) -> Self {
        Self {
            inner,
            seen: Mutex::new(Seen::default()),
        }
    }

    /// Every completed commit ever created, oldest first: (time, file name, metadata).
    pub(super) fn commits(&self) -> Result<Vec<(String, String, ReplaceCommitMetadata)>, Failure> {
        let seen = lock(&self.seen);
        seen.commits
            .iter()
            .map(|(time, (name, body))| {
                let meta = if name.ends_with(".replacecommit") {
                    ReplaceCommitMetadata::from_json(body)
                } else {
                    CommitMetadata::from_json(body).map(|commit| ReplaceCommitMetadata {
                        commit,
                        ..ReplaceCommitMetadata::default()
                    })
                }
                .map_err(|e| fail("timeline valid", format!("{name}: {e}")))?;
                Ok((time.clone(), name.clone(), meta))
            })
            .collect()
    }

    /// The partitions written by every completed commit ever created at or before `time` (`""` excluded).
    pub(super) fn partitions_written_up_to(&self, time: &str) -> Result<BTreeSet<String>, Failure> {
        Ok(self
            .commits()?
            .into_iter()
            .filter(|(t, _, _)| t.as_str() <= time)
            .flat_map(|(_, _, meta)| {
                let mut p: Vec<String> = meta.commit.partition_to_write_stats.into_keys().collect();
                p.extend(meta.partition_to_replace_file_ids.into_keys());
                p
            })
            .filter(|p| !p.is_empty())
            .collect())
    }

    /// What the services did, by kind.
    pub(super) fn services(&self) -> BTreeMap<&'static str, u64> {
        lock(&self.seen).services.clone()
    }

    /// Records a broken invariant seen outside the storage calls (an invocation's end).
    pub(super) fn note_violation(&self, invariant: &'static str, detail: String) {
        lock(&self.seen).violations.push((invariant, detail));
    }

    pub(super) fn violations(&self) -> Vec<(&'static str, String)> {
        lock(&self.seen).violations.clone()
    }

    /// Whether `instant` stored a log file at `path` (its header names it).
    fn log_stored_by(&self, path: &str, instant: &str) -> bool {
        lock(&self.seen)
            .log_instants
            .get(path)
            .is_some_and(|ts| ts.iter().any(|t| t == instant))
    }
}

#[async_trait]
impl Storage for Recorder {
    fn base_uri(&self) -> &str {
        self.inner.base_uri()
    }

    async fn get(&self, path: &str) -> StorageResult<Bytes> {
        self.inner.get(path).await
    }

    async fn get_range(&self, path: &str, range: std::ops::Range<u64>) -> StorageResult<Bytes> {
        self.inner.get_range(path, range).await
    }

    async fn head(&self, path: &str) -> StorageResult<Option<ObjectMeta>> {
        self.inner.head(path).await
    }

    async fn put(&self, path: &str, data: Bytes) -> StorageResult<()> {
        self.inner.put(path, data.clone()).await?;
        lock(&self.seen).on_put(path, &data);
        Ok(())
    }

    async fn put_if_absent(&self, path: &str, data: Bytes) -> StorageResult<PutOutcome> {
        let outcome = self.inner.put_if_absent(path, data.clone()).await?;
        if outcome == PutOutcome::Created {
            lock(&self.seen).on_put(path, &data);
        }
        Ok(outcome)
    }

    async fn list(&self, prefix: &str) -> StorageResult<Vec<ObjectMeta>> {
        self.inner.list(prefix).await
    }

    async fn delete(&self, path: &str) -> StorageResult<()> {
        lock(&self.seen).on_delete(path);
        self.inner.delete(path).await
    }

    async fn delete_many(&self, paths: &[String]) -> StorageResult<()> {
        {
            let mut seen = lock(&self.seen);
            for p in paths {
                seen.on_delete(p);
            }
        }
        self.inner.delete_many(paths).await
    }
}

/// The batches the completed commits wrote, in commit order: for each commit, the stream's records between
/// the previous checkpoint and its own. Fails when a commit's range is not the tail of a delivered batch.
pub(super) async fn committed_batches(
    store: &Recorder,
    msgs: &[Msg],
    delivered: &BTreeSet<(i32, i64, i64)>,
) -> Result<Vec<Vec<Msg>>, Failure> {
    let mut previous = Checkpoint::default();
    let mut out = Vec::new();
    for (time, _, meta) in store.commits()? {
        let Some(cp) = meta
            .commit
            .checkpoint()
            .map_err(|e| fail("checkpoint never moves backwards", e.to_string()))?
        else {
            // Table services (clustering) carry no checkpoint and write no new records.
            continue;
        };
        let mut batch = Vec::new();
        for (topic, offsets) in cp.topics() {
            for (p, next) in offsets {
                let from = previous.get(topic, *p).unwrap_or(0);
                if *next <= from {
                    continue;
                }
                let part: Vec<Msg> = msgs
                    .iter()
                    .filter(|m| m.partition == *p && m.offset >= from && m.offset < *next)
                    .cloned()
                    .collect();
                let Some(first) = part.first().map(|m| m.offset) else {
                    continue;
                };
                if !delivered
                    .iter()
                    .any(|(dp, df, dl)| dp == p && *df <= first && *dl == next - 1)
                {
                    return Err(fail(
                        "commits match deliveries",
                        format!(
                            "{time} covers {topic}/{p} offsets {from}..{next}, the tail of no delivered batch"
                        ),
                    ));
                }
                batch.extend(part);
            }
        }
        out.push(batch);
        previous = cp;
    }
    Ok(out)
}

/// See the module doc. Returns the number of commits ever completed.
pub(super) async fn check_invariants(
    store: &Recorder,
    model: &Model,
    acked_next: &BTreeMap<(String, i32), i64>,
    services: &ServicesConfig,
    bound_timeline: bool,
) -> Result<u64, Failure> {
    let keep_max_commits = bound_timeline.then_some(services.keep_max_commits as usize);
    let io = |e: &dyn std::fmt::Display| fail("readable table", e.to_string());
    if let Some((invariant, detail)) = store.violations().into_iter().next() {
        return Err(fail(invariant, detail));
    }
    let timeline = Timeline::load(store).await.map_err(|e| io(&e))?;
    let objects = store.list("").await.map_err(|e| io(&e))?;
    let names: BTreeSet<&str> = objects.iter().map(|o| o.path.as_str()).collect();

    // Timeline: nothing pending, each completed commit with its requested and inflight files, bounded.
    if let Some(p) = timeline.pending().first() {
        return Err(fail("timeline valid", format!("pending instant left: {p}")));
    }
    let completed = timeline.completed_commits();
    for c in &completed {
        let suffixes = match c.action {
            // On merge-on-read a commit is a compaction's.
            Action::Commit
                if names.contains(format!(".hoodie/{}.compaction.requested", c.time).as_str()) =>
            {
                ["compaction.requested", "compaction.inflight"]
            }
            Action::Commit => ["commit.requested", "inflight"],
            Action::DeltaCommit => ["deltacommit.requested", "deltacommit.inflight"],
            _ => continue,
        };
        for suffix in suffixes {
            let f = format!(".hoodie/{}.{suffix}", c.time);
            if !names.contains(f.as_str()) {
                return Err(fail(
                    "timeline valid",
                    format!("{f} missing for a completed commit"),
                ));
            }
        }
    }
    if let Some(max) = keep_max_commits {
        if completed.len() > max {
            return Err(fail(
                "the active timeline stays within keep.max.commits",
                format!(
                    "{} completed commits, keep.max.commits {max}: {:?}",
                    completed.len(),
                    completed.iter().map(|i| i.to_string()).collect::<Vec<_>>()
                ),
            ));
        }
    }

    // Every commit ever made: its checkpoint never moves backwards; the last one is the acknowledged one.
    let commits = store.commits()?;
    let mut previous = Checkpoint::default();
    for (time, _, meta) in &commits {
        // A compaction names the logs it carried in its write stats too (Java's incremental view reads them).
        let carried: BTreeSet<String> = hudi_sink::table::carried::carried_logs(&meta.commit)
            .map_err(|e| fail("committed files exist with their size", e.to_string()))?
            .into_iter()
            .map(|c| c.path)
            .collect();
        let stated: BTreeSet<&str> = meta.commit.write_stats().map(|s| s.path.as_str()).collect();
        if let Some(missing) = carried.iter().find(|p| !stated.contains(p.as_str())) {
            return Err(fail(
                "committed files exist with their size",
                format!("carried log {missing} has no write stat in {time}"),
            ));
        }
        for stat in meta.commit.write_stats() {
            // A log file is named after its slice; its header names the instant (checked below).
            let log = stat.file_name().starts_with('.');
            if log && !carried.contains(&stat.path) && !store.log_stored_by(&stat.path, time) {
                return Err(fail(
                    "committed files exist with their size",
                    format!("log {} is not a file of {time}", stat.path),
                ));
            }
            if !log && !stat.path.contains(time.as_str()) {
                return Err(fail(
                    "committed files exist with their size",
                    format!("{} is not a file of {time}", stat.path),
                ));
            }
        }
        let Some(cp) = meta
            .commit
            .checkpoint()
            .map_err(|e| fail("checkpoint never moves backwards", e.to_string()))?
        else {
            continue;
        };
        for (topic, offsets) in previous.topics() {
            for (p, before) in offsets {
                let now = cp.get(topic, *p);
                if now.is_none_or(|n| n < *before) {
                    return Err(fail(
                        "checkpoint never moves backwards",
                        format!("{topic}/{p}: {before} before {time}, then {now:?}"),
                    ));
                }
            }
        }
        previous = cp;
    }
    for ((topic, p), next) in acked_next {
        if previous.get(topic, *p) != Some(*next) {
            return Err(fail(
                "checkpoint ends at the acknowledged offsets",
                format!(
                    "{topic}/{p}: table {:?}, model {next}",
                    previous.get(topic, *p)
                ),
            ));
        }
    }
    // The latest slices exist with their recorded sizes.
    if let Some((_, _, meta)) = commits.last() {
        for stat in meta.commit.write_stats() {
            match store.head(&stat.path).await.map_err(|e| io(&e))? {
                Some(m) if m.size as i64 == stat.file_size_in_bytes => {}
                found => {
                    return Err(fail(
                        "committed files exist with their size",
                        format!(
                            "{}: found {:?}, recorded {}",
                            stat.path,
                            found.map(|m| m.size),
                            stat.file_size_in_bytes
                        ),
                    ))
                }
            }
        }
    }
    check_one_group_per_bucket(&commits)?;
    check_retention(store, &timeline, &commits, services).await?;
    check_windows(&commits)?;

    // Nothing of a failed instant survives the final commit.
    let done: BTreeSet<&str> = commits.iter().map(|(t, _, _)| t.as_str()).collect();
    for o in &objects {
        if is_delta_log(&o.path) {
            continue;
        }
        let is_log = o.path.contains(".log.") && !o.path.starts_with(".hoodie/");
        let leftover = if is_log {
            // Every log file is one a completed deltacommit listed, or a compaction carried.
            !commits.iter().any(|(_, _, meta)| {
                meta.commit.write_stats().any(|s| s.path == o.path)
                    || hudi_sink::table::carried::carried_logs(&meta.commit)
                        .unwrap_or_default()
                        .iter()
                        .any(|c| c.path == o.path)
            })
        } else if o.path.ends_with(".parquet") {
            let t = o
                .path
                .trim_end_matches(".parquet")
                .rsplit('_')
                .next()
                .unwrap_or_default();
            // Named with a completed instant is not enough: that instant's commit must list it (an excluded
            // window member's file is named with the window's instant).
            !done.contains(t)
                || !commits.iter().any(|(time, _, meta)| {
                    time == t && meta.commit.write_stats().any(|s| s.path == o.path)
                })
        } else {
            o.path.starts_with(".hoodie/.temp/") || o.path.starts_with(".hoodie/.heartbeat/")
        };
        if leftover {
            return Err(fail("no file of a failed instant left", o.path.clone()));
        }
    }

    // The table read through the library equals the model (merge-on-read slices merged with their logs).
    let rows = table_rows(store, &timeline).await?;
    model
        .check_rows(rows)
        .map_err(|e| fail("table equals the model", e))?;
    Ok(commits.len() as u64)
}

/// The rows of the table's latest file slices as a snapshot reader reads them: base files, merged with their
/// committed log blocks on a merge-on-read table.
pub(super) async fn table_rows(
    store: &dyn Storage,
    timeline: &Timeline,
) -> Result<Vec<Trip>, Failure> {
    use hudi_sink::log_file::{
        merge_file_slice, scan_stored_log_files, CommittedInstants, MergeMode,
    };
    let io = |e: &dyn std::fmt::Display| fail("readable table", e.to_string());
    let props = hudi_sink::table::properties::TableProperties::load(store)
        .await
        .map_err(|e| io(&e))?;
    let mode = MergeMode::from_table_properties(&props.as_map()).map_err(|e| io(&e))?;
    let committed = CommittedInstants::new(
        timeline
            .completed_commits()
            .into_iter()
            .map(|i| i.time.clone()),
        timeline.instants().first().map(|i| i.time.clone()),
    );
    let slices = latest_file_slices(store, timeline, None)
        .await
        .map_err(|e| io(&e))?;
    let mut rows = Vec::new();
    for slice in &slices {
        let data = store.get(&slice.path()).await.map_err(|e| io(&e))?;
        let logs = scan_stored_log_files(store, &slice.log_paths(), &committed, &mode)
            .await
            .map_err(|e| io(&e))?;
        let merger = merge_file_slice(Some(data), logs).map_err(|e| io(&e))?;
        for b in merger {
            let b = b.map_err(|e| io(&e))?;
            rows.extend(trips_of(&b).map_err(|e| fail("readable table", e))?);
        }
    }
    Ok(rows)
}
