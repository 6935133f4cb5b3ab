//! The active timeline (layout 1).
//!
//! Invariants:
//! - [`Timeline::load`] reads only the direct children of `.hoodie/` (the archive, markers, heartbeats, schema
//!   store, metadata table and `hoodie.properties*` are ignored) and keeps, per (time, comparable action), only
//!   the file with the highest state — Hudi's layout-1 rule, so `<t>.commit.requested`, `<t>.inflight` and
//!   `<t>.commit` are one completed instant. Instants are sorted as Java sorts them.
//! - A `.hoodie/timeline/` directory means a Hudi 1.x (layout 2) table, which is refused, never half-read.
//! - Which file slices the timeline makes visible is [`super::fs_view`]'s: a file slice (base file) is visible
//!   as of `t` iff its instant is ≤ `t` and ≤ the latest completed commit-like instant, and is either a completed
//!   commit-like instant or older than the first one (archived), and its file group was not replaced by a
//!   completed replacecommit ≤ `t`; per file group the visible slice with the greatest instant wins (Java
//!   `HoodieFileGroup.isFileSliceCommitted`, hudi-rs `get_file_slice_as_of`; hudi-format.md §3.5, §7.3).

use std::collections::{BTreeMap, BTreeSet};

use thiserror::Error;

use super::commit::{Checkpoint, CommitError, CommitMetadata, ReplaceCommitMetadata};
use super::file_name::FileNameError;
use super::instant::{Action, Instant, InstantError, InstantTime, State};
use super::properties::{HUDI_1X_HINT, V8_TIMELINE_DIR};
use crate::storage::{Storage, StorageError};

/// The file slices moved to [`super::fs_view`]; kept here so that `table::timeline::…` paths keep working.
pub use super::fs_view::{is_non_data_path, latest_file_slices, FileSlice};

/// The metadata directory every timeline file is under.
pub const META_DIR: &str = ".hoodie/";

/// Failures loading the timeline, commit metadata or file slices.
#[derive(Debug, Error)]
pub enum TimelineError {
    /// The table uses Hudi 1.x's timeline layout 2.
    #[error("{HUDI_1X_HINT} (found {path})")]
    Hudi1xLayout {
        /// A file found under `.hoodie/timeline/`.
        path: String,
    },
    /// A file in `.hoodie/` with an instant extension whose time part is invalid.
    #[error("timeline file .hoodie/{file_name}: {source}")]
    InvalidInstantFile {
        /// The file name.
        file_name: String,
        /// Why it does not parse.
        #[source]
        source: InstantError,
    },
    /// Commit metadata was asked for an instant that has none (not a completed commit-like instant).
    #[error("instant {instant} has no commit metadata (only completed commit, replacecommit, deltacommit do)")]
    NotACommit {
        /// The instant.
        instant: String,
    },
    /// A commit file does not parse.
    #[error("commit metadata of {instant}: {source}")]
    Commit {
        /// The instant.
        instant: String,
        /// Why.
        #[source]
        source: CommitError,
    },
    /// A `.parquet` file in a partition whose name is not a base file name (readers would fail on it too).
    #[error("data file {path}: {source}")]
    InvalidBaseFile {
        /// The file's path.
        path: String,
        /// Why.
        #[source]
        source: FileNameError,
    },
    /// Two base files for the same (partition, file id, instant): readers abort on this.
    #[error("two base files for file group {partition_path:?}/{file_id} at {instant}: {first} and {second}")]
    DuplicateSlice {
        /// Partition.
        partition_path: String,
        /// File group.
        file_id: String,
        /// Instant.
        instant: String,
        /// One file.
        first: String,
        /// The other.
        second: String,
    },
    /// A commit's write stat that cannot describe a base file.
    #[error("write stat {path:?} of {instant}: {reason}")]
    InvalidWriteStat {
        /// The commit.
        instant: String,
        /// The stat's path.
        path: String,
        /// Why.
        reason: String,
    },
    /// A pending compaction's plan cannot be read: which file groups it plans, and so which slice a write to
    /// them appends to, is unknown (`table::planned_groups`).
    #[error("compaction plan .hoodie/{instant}.compaction.requested cannot be read: {reason}")]
    CompactionPlan {
        /// The compaction.
        instant: String,
        /// Why.
        reason: String,
    },
    /// Storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// The instants of the active timeline, sorted, one per (time, comparable action) at its highest state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Timeline {
    instants: Vec<Instant>,
    /// The instant times that were rolled back (see [`RETIRED_DIR`]): they left the timeline, but a time must
    /// never be handed out again, or a zombie writer's late files would join the new instant, and files of
    /// those times are never committed ones.
    retired: BTreeSet<InstantTime>,
}

/// Where a rollback records the time it retired (`.hoodie/.aux/hudi-sink/rolled-back/<t>`, empty objects that
/// every reader ignores), so that the one listing of `.hoodie/` that loads the timeline also sees them.
pub const RETIRED_DIR: &str = ".hoodie/.aux/hudi-sink/rolled-back/";

impl Timeline {
    /// Builds a timeline from instants, applying the layout-1 rule (highest state per time and comparable action)
    /// and Java's order.
    pub fn from_instants(instants: impl IntoIterator<Item = Instant>) -> Self {
        let mut best: BTreeMap<(InstantTime, &'static str), Instant> = BTreeMap::new();
        for instant in instants {
            let key = (instant.time.clone(), instant.action.comparable().as_str());
            match best.get(&key) {
                Some(existing) if existing.state >= instant.state => {}
                _ => {
                    best.insert(key, instant);
                }
            }
        }
        let mut instants: Vec<Instant> = best.into_values().collect();
        instants.sort();
        Self {
            instants,
            retired: BTreeSet::new(),
        }
    }

    /// Lists `.hoodie/` and parses the active timeline.
    pub async fn load(storage: &dyn Storage) -> Result<Self, TimelineError> {
        let listed = storage.list(META_DIR).await?;
        Self::from_listing(&listed)
    }

    /// Parses the active timeline from a listing of `.hoodie/` (so that one listing can also serve the other
    /// files under `.hoodie/`: markers, heartbeats, `hoodie.properties`).
    pub fn from_listing(listed: &[crate::storage::ObjectMeta]) -> Result<Self, TimelineError> {
        let mut instants = Vec::new();
        let mut retired = BTreeSet::new();
        for object in listed {
            if let Some(time) = object.path.strip_prefix(RETIRED_DIR) {
                if let Ok(time) = InstantTime::parse(time) {
                    retired.insert(time);
                }
                continue;
            }
            let Some(name) = object.path.strip_prefix(META_DIR) else {
                continue;
            };
            if object.path.starts_with(V8_TIMELINE_DIR) {
                return Err(TimelineError::Hudi1xLayout {
                    path: object.path.clone(),
                });
            }
            // Direct children only: `.temp/`, `.aux/`, `archived/`, `.schema/`, `.heartbeat/`, `metadata/` are not
            // timeline files; neither is `hoodie.properties` or its backup.
            if name.contains('/') || name.starts_with("hoodie.properties") {
                continue;
            }
            match Instant::parse_file_name(name) {
                Ok(instant) => instants.push(instant),
                Err(InstantError::InvalidFileName { .. }) => {
                    tracing::debug!(file = %object.path, "ignoring non-timeline file in .hoodie/");
                }
                Err(source) => {
                    return Err(TimelineError::InvalidInstantFile {
                        file_name: name.to_string(),
                        source,
                    })
                }
            }
        }
        let mut timeline = Self::from_instants(instants);
        timeline.retired = retired;
        Ok(timeline)
    }

    /// This timeline with `instant` added (as if listed), for a change this process just made.
    pub fn with_instant(&self, instant: Instant) -> Timeline {
        let mut timeline = Timeline::from_instants(self.instants.iter().cloned().chain([instant]));
        timeline.retired = self.retired.clone();
        timeline
    }

    /// Every instant, in order.
    pub fn instants(&self) -> &[Instant] {
        &self.instants
    }

    /// Whether there are no instants.
    pub fn is_empty(&self) -> bool {
        self.instants.is_empty()
    }

    /// Completed commit-like instants (commit, replacecommit, deltacommit), oldest first.
    pub fn completed_commits(&self) -> Vec<&Instant> {
        self.instants
            .iter()
            .filter(|i| i.is_completed() && i.action.is_commit_like())
            .collect()
    }

    /// The latest completed commit-like instant: the snapshot readers see.
    pub fn latest_completed(&self) -> Option<&Instant> {
        self.completed_commits().last().copied()
    }

    /// The earliest completed commit-like instant (older slices count as archived, hence committed).
    pub fn first_completed(&self) -> Option<&Instant> {
        self.completed_commits().first().copied()
    }

    /// Requested or inflight instants of any action, oldest first.
    pub fn pending(&self) -> Vec<&Instant> {
        self.instants.iter().filter(|i| !i.is_completed()).collect()
    }

    /// The retired times (rolled back, markers still present), oldest first.
    pub fn retired_times(&self) -> impl Iterator<Item = &InstantTime> {
        self.retired.iter()
    }

    /// Whether a rollback retired this time (its files, even ones written after the rollback, are never
    /// committed data).
    pub fn is_retired(&self, time: &InstantTime) -> bool {
        self.retired.contains(time)
    }

    /// Whether any instant (any action, any state) has this time: such a time must never be reused.
    pub fn contains(&self, time: &InstantTime) -> bool {
        self.instants.iter().any(|i| i.time == *time)
    }

    /// Whether `time` is a completed commit-like instant.
    pub fn is_completed_commit(&self, time: &InstantTime) -> bool {
        self.instants
            .iter()
            .any(|i| i.time == *time && i.is_completed() && i.action.is_commit_like())
    }

    /// The greatest time of any instant (pending ones included): new instants must be strictly greater.
    pub fn last_instant_time(&self) -> Option<&InstantTime> {
        self.instants.iter().map(|i| &i.time).max()
    }

    /// The greatest time ever handed out, rolled-back instants included: the floor for a new instant time.
    pub fn last_used_time(&self) -> Option<&InstantTime> {
        self.last_instant_time().max(self.retired.last())
    }

    /// The instant with this time and action, if present.
    pub fn find(&self, time: &InstantTime, action: Action) -> Option<&Instant> {
        self.instants
            .iter()
            .find(|i| i.time == *time && i.action.comparable() == action.comparable())
    }

    /// Reads and parses the commit metadata of a completed commit-like instant (for a replacecommit, its commit
    /// part; use [`Timeline::replace_commit_metadata`] for the replaced file groups).
    pub async fn commit_metadata(
        &self,
        storage: &dyn Storage,
        instant: &Instant,
    ) -> Result<CommitMetadata, TimelineError> {
        let bytes = read_commit_file(storage, instant).await?;
        CommitMetadata::from_json(&bytes).map_err(|source| TimelineError::Commit {
            instant: instant.to_string(),
            source,
        })
    }

    /// Reads and parses a completed replacecommit's metadata.
    pub async fn replace_commit_metadata(
        &self,
        storage: &dyn Storage,
        instant: &Instant,
    ) -> Result<ReplaceCommitMetadata, TimelineError> {
        if instant.action != Action::ReplaceCommit {
            return Err(TimelineError::NotACommit {
                instant: instant.to_string(),
            });
        }
        let bytes = read_commit_file(storage, instant).await?;
        ReplaceCommitMetadata::from_json(&bytes).map_err(|source| TimelineError::Commit {
            instant: instant.to_string(),
            source,
        })
    }

    /// The table schema: `extraMetadata.schema` of the latest completed commit-like instant whose operation may
    /// change the schema (not CLUSTER/COMPACT/LOG_COMPACT/INDEX) and whose schema is non-empty (Java's
    /// `getLastCommitMetadataWithValidSchema`). `None` when no commit has one.
    pub async fn latest_schema(
        &self,
        storage: &dyn Storage,
    ) -> Result<Option<String>, TimelineError> {
        for instant in self.completed_commits().into_iter().rev() {
            let meta = self.commit_metadata(storage, instant).await?;
            if meta.operation_type.can_update_schema() {
                if let Some(schema) = meta.schema() {
                    return Ok(Some(schema.to_string()));
                }
            }
        }
        Ok(None)
    }

    /// The checkpoint of the latest completed commit-like instant that carries one (clustering and other table
    /// services carry none and are skipped, as HoodieStreamer does), with that instant.
    pub async fn latest_checkpoint(
        &self,
        storage: &dyn Storage,
    ) -> Result<Option<(Instant, Checkpoint)>, TimelineError> {
        self.latest_checkpoint_for_topic(storage, None).await
    }

    /// The checkpoint of [`Timeline::latest_checkpoint`] and the schema of [`Timeline::latest_schema`],
    /// reading each commit once (the latest commit usually carries both).
    pub async fn latest_checkpoint_and_schema(
        &self,
        storage: &dyn Storage,
    ) -> Result<(Option<(Instant, Checkpoint)>, Option<String>), TimelineError> {
        let mut checkpoint = None;
        let mut schema = None;
        for (read, instant) in self.completed_commits().into_iter().rev().enumerate() {
            // Past the checkpoint, a schema is looked for among a few commits only (a table whose commits
            // carry none would otherwise be read whole).
            if checkpoint.is_some() && (schema.is_some() || read >= SCHEMA_LOOKBACK) {
                break;
            }
            let meta = self.commit_metadata(storage, instant).await?;
            if checkpoint.is_none() {
                checkpoint = checkpoint_of(instant, &meta, None)?.map(|c| (instant.clone(), c));
            }
            if schema.is_none() && meta.operation_type.can_update_schema() {
                schema = meta.schema().map(str::to_string);
            }
        }
        Ok((checkpoint, schema))
    }

    /// As [`Timeline::latest_checkpoint`], attributing Kafka Connect's topic-less `kafka.commit.offsets` to
    /// `connect_topic` (without it such a commit is an error, not a silent skip to an older checkpoint).
    pub async fn latest_checkpoint_for_topic(
        &self,
        storage: &dyn Storage,
        connect_topic: Option<&str>,
    ) -> Result<Option<(Instant, Checkpoint)>, TimelineError> {
        for instant in self.completed_commits().into_iter().rev() {
            let meta = self.commit_metadata(storage, instant).await?;
            if let Some(checkpoint) = checkpoint_of(instant, &meta, connect_topic)? {
                return Ok(Some((instant.clone(), checkpoint)));
            }
        }
        Ok(None)
    }
}

/// The checkpoint `meta`, the metadata of `instant`, carries (see [`Checkpoint::from_extra_metadata`]).
fn checkpoint_of(
    instant: &Instant,
    meta: &CommitMetadata,
    connect_topic: Option<&str>,
) -> Result<Option<Checkpoint>, TimelineError> {
    Checkpoint::from_extra_metadata(&meta.extra_metadata, connect_topic).map_err(|source| {
        TimelineError::Commit {
            instant: instant.to_string(),
            source,
        }
    })
}

/// Commits read for a schema once the checkpoint is found.
const SCHEMA_LOOKBACK: usize = 10;

async fn read_commit_file(
    storage: &dyn Storage,
    instant: &Instant,
) -> Result<bytes::Bytes, TimelineError> {
    if !(instant.is_completed() && instant.action.is_commit_like()) {
        return Err(TimelineError::NotACommit {
            instant: instant.to_string(),
        });
    }
    Ok(storage.get(&instant.path()).await?)
}

/// Instants in `timeline` whose state is `state` and action `action`, oldest first.
pub fn instants_with(timeline: &Timeline, action: Action, state: State) -> Vec<&Instant> {
    timeline
        .instants()
        .iter()
        .filter(|i| i.action == action && i.state == state)
        .collect()
}

/// Whether a completed instant orders the writes of the table (`delta`: a merge-on-read table): every action
/// but a replacecommit (clustering) and, on merge-on-read, a compaction `commit`, neither of which carries a
/// checkpoint.
pub fn orders_writes(done: &Instant, delta: bool) -> bool {
    done.action != Action::ReplaceCommit && !(delta && done.action == Action::Commit)
}

/// The base instant of a new write (what `begin` answers): the latest completed instant, unless a pending
/// write older than it can still complete (every completed instant newer than it is one that does not order
/// writes, see `crate::commit::conflict`); then the newest completed instant older than that write. A write
/// that completes after a newer compaction would otherwise be below the base of writers that never saw it, and
/// their file groups and buckets would not be checked against it.
///
/// On merge-on-read a pending compaction always counts as such a write: it merges outside the lock and
/// completes after the deltacommits that landed meanwhile, so a writer based above it would never check its
/// appends to the old slices against it (the mutation switch `PendingCompactionHoldsBase` turns this off).
pub fn writer_base(timeline: &Timeline, delta: bool) -> Option<&Instant> {
    let completed = timeline.completed_commits();
    let can_complete = |p: &Instant| {
        !completed
            .iter()
            .any(|c| c.time > p.time && orders_writes(c, delta))
    };
    let compaction_holds = delta
        && !crate::mutation::is_disabled(crate::mutation::Mutation::PendingCompactionHoldsBase);
    let oldest_live = timeline
        .pending()
        .into_iter()
        .filter(|p| {
            (p.action.is_write() && can_complete(p))
                || (compaction_holds && p.action == Action::Compaction)
        })
        .map(|p| &p.time)
        .min();
    completed
        .into_iter()
        .rev()
        .find(|c| oldest_live.is_none_or(|p| c.time < *p))
}

/// The write instants pending below `base` (a writer's base from [`writer_base`]): the base does not cover them,
/// yet one may still complete (another engine's writer completes out of instant order), so the commit of a
/// writer that began now checks them too once they completed (`crate::commit::conflict`).
pub fn pending_below(timeline: &Timeline, base: Option<&Instant>) -> Vec<InstantTime> {
    let Some(base) = base else {
        return Vec::new();
    };
    timeline
        .pending()
        .into_iter()
        .filter(|p| p.action.is_write() && p.time < base.time)
        .map(|p| p.time.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::memory::MemoryStorage;
    use bytes::Bytes;

    fn t(s: &str) -> InstantTime {
        InstantTime::parse(s).expect("t")
    }

    async fn put(storage: &MemoryStorage, path: &str, data: &[u8]) {
        storage
            .put(path, Bytes::copy_from_slice(data))
            .await
            .expect("put");
    }

    fn commit_json(schema: Option<&str>, op: &str, extra: &[(&str, &str)]) -> Vec<u8> {
        let mut meta = CommitMetadata::new(op.parse().expect("op"));
        if let Some(s) = schema {
            meta.set_schema(s);
        }
        for (k, v) in extra {
            meta.extra_metadata.insert(k.to_string(), v.to_string());
        }
        meta.to_json_pretty().expect("json")
    }

    #[test]
    fn layout1_keeps_highest_state_and_java_order() {
        let parse = |n: &str| Instant::parse_file_name(n).expect(n);
        let timeline = Timeline::from_instants(
            [
                "20240101000000003.commit.requested",
                "20240101000000001.commit",
                "20240101000000001.inflight",
                "20240101000000001.commit.requested",
                "20240101000000002.replacecommit.requested",
                "20240101000000002.replacecommit.inflight",
                "20240101000000004.compaction.requested",
                "20240101000000004.compaction.inflight",
                "20240101000000004.commit",
                "20240101000000005.clean.requested",
            ]
            .into_iter()
            .map(parse),
        );
        let names: Vec<String> = timeline.instants().iter().map(Instant::file_name).collect();
        assert_eq!(
            names,
            vec![
                "20240101000000001.commit",
                "20240101000000002.replacecommit.inflight",
                "20240101000000003.commit.requested",
                "20240101000000004.commit",
                "20240101000000005.clean.requested",
            ]
        );
        assert_eq!(timeline.completed_commits().len(), 2);
        assert_eq!(
            timeline.latest_completed().map(|i| i.time.as_str()),
            Some("20240101000000004")
        );
        assert_eq!(timeline.pending().len(), 3);
        assert_eq!(
            timeline.last_instant_time().map(InstantTime::as_str),
            Some("20240101000000005")
        );
        assert!(timeline.contains(&t("20240101000000003")));
        assert!(!timeline.is_completed_commit(&t("20240101000000003")));
        assert!(timeline.is_completed_commit(&t("20240101000000004")));
        assert!(timeline
            .find(&t("20240101000000002"), Action::ReplaceCommit)
            .is_some());
        assert_eq!(
            instants_with(&timeline, Action::Clean, State::Requested).len(),
            1
        );
    }

    #[tokio::test]
    async fn load_filters_non_timeline_files() {
        let storage = MemoryStorage::new("mem://t");
        for path in [
            ".hoodie/hoodie.properties",
            ".hoodie/hoodie.properties.backup",
            ".hoodie/20240101000000001.commit.requested",
            ".hoodie/20240101000000001.inflight",
            ".hoodie/.temp/20240101000000002/p/x.parquet.marker.CREATE",
            ".hoodie/.heartbeat/20240101000000002",
            ".hoodie/.aux/.bootstrap/.partitions/x",
            ".hoodie/archived/.commits_.archive.1_1-0-1",
            ".hoodie/metadata/.hoodie/20240101000000009.deltacommit",
            ".hoodie/.schema/1",
            ".hoodie/.DS_Store",
        ] {
            put(&storage, path, b"").await;
        }
        let timeline = Timeline::load(&storage).await.expect("load");
        assert_eq!(
            timeline
                .instants()
                .iter()
                .map(Instant::file_name)
                .collect::<Vec<_>>(),
            vec!["20240101000000001.inflight"]
        );
        put(&storage, ".hoodie/2024010100000000.commit", b"{}").await;
        assert!(matches!(
            Timeline::load(&storage).await,
            Err(TimelineError::InvalidInstantFile { .. })
        ));
        storage
            .delete(".hoodie/2024010100000000.commit")
            .await
            .expect("delete");
        put(
            &storage,
            ".hoodie/timeline/20240101000000001.commit.requested",
            b"",
        )
        .await;
        let err = Timeline::load(&storage).await.expect_err("v8");
        assert!(err.to_string().contains("Hudi 1.x table"), "{err}");
    }

    #[tokio::test]
    async fn schema_and_checkpoint_walk_back() {
        let storage = MemoryStorage::new("mem://t");
        let mut cp = Checkpoint::new();
        cp.set("orders", 0, 10);
        let mut extra = BTreeMap::new();
        cp.write_to(&mut extra).expect("cp");
        let extra: Vec<(&str, &str)> = extra
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        put(
            &storage,
            ".hoodie/20240101000000001.commit",
            &commit_json(Some("s1"), "INSERT", &extra),
        )
        .await;
        put(
            &storage,
            ".hoodie/20240101000000002.commit",
            &commit_json(Some("s2"), "UPSERT", &[]),
        )
        .await;
        put(
            &storage,
            ".hoodie/20240101000000003.replacecommit",
            &commit_json(Some("s3"), "CLUSTER", &[]),
        )
        .await;
        put(
            &storage,
            ".hoodie/20240101000000004.commit",
            &commit_json(None, "UPSERT", &[]),
        )
        .await;
        put(&storage, ".hoodie/20240101000000005.commit.requested", b"").await;
        let timeline = Timeline::load(&storage).await.expect("load");
        assert_eq!(
            timeline
                .latest_schema(&storage)
                .await
                .expect("schema")
                .as_deref(),
            Some("s2")
        );
        let (instant, found) = timeline
            .latest_checkpoint(&storage)
            .await
            .expect("cp")
            .expect("some");
        assert_eq!(instant.time.as_str(), "20240101000000001");
        assert_eq!(found, cp);
        let pending = timeline.pending()[0].clone();
        assert!(matches!(
            timeline.commit_metadata(&storage, &pending).await,
            Err(TimelineError::NotACommit { .. })
        ));
        put(
            &storage,
            ".hoodie/20240101000000006.commit",
            b"{\"operationType\":\"NOPE\"}",
        )
        .await;
        let timeline = Timeline::load(&storage).await.expect("load");
        assert!(matches!(
            timeline.latest_schema(&storage).await,
            Err(TimelineError::Commit { .. })
        ));
        assert_eq!(
            Timeline::default()
                .latest_schema(&storage)
                .await
                .expect("none"),
            None
        );
    }
}
