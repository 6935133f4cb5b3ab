//! A cache of parsed commit metadata for the services: completed commit files are created once and never
//! change, so a warm coordinator reads each at most once. Entries of instants that left the active timeline
//! are dropped, so the cache is bounded by the active timeline (which archival bounds).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::storage::Storage;
use crate::table::commit::ReplaceCommitMetadata;
use crate::table::instant::{Action, Instant, InstantTime};
use crate::table::timeline::Timeline;
use crate::write::WriteError;

/// What the services need of one completed commit-like instant.
#[derive(Debug, Clone, PartialEq)]
pub struct CommitSummary {
    /// The instant.
    pub instant: Instant,
    /// The commit (for a replacecommit, with its replaced file groups).
    pub metadata: ReplaceCommitMetadata,
}

impl CommitSummary {
    /// Partitions where this commit wrote a new slice of an existing file group (`prevCommit` set), or
    /// replaced file groups: the only partitions where it can have made older slices obsolete.
    pub fn superseding_partitions(&self) -> impl Iterator<Item = &str> {
        let updated = self
            .metadata
            .commit
            .partition_to_write_stats
            .iter()
            .filter(|(_, stats)| stats.iter().any(|s| s.prev_commit_instant().is_some()))
            .map(|(p, _)| p.as_str());
        updated.chain(
            self.metadata
                .partition_to_replace_file_ids
                .iter()
                .filter(|(_, ids)| !ids.is_empty())
                .map(|(p, _)| p.as_str()),
        )
    }

    /// Every partition this commit wrote or replaced groups in.
    pub fn partitions(&self) -> impl Iterator<Item = &str> {
        self.metadata
            .commit
            .partition_to_write_stats
            .keys()
            .chain(self.metadata.partition_to_replace_file_ids.keys())
            .map(String::as_str)
    }
}

/// Cached summaries by (time, action).
type Entries = BTreeMap<(InstantTime, &'static str), Arc<CommitSummary>>;

/// Commit metadata by (time, action), shared by the services of one coordinator.
#[derive(Debug, Clone, Default)]
pub struct CommitCache {
    entries: Arc<Mutex<Entries>>,
}

impl CommitCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The metadata of a completed commit-like instant, read once.
    pub async fn get(
        &self,
        storage: &dyn Storage,
        instant: &Instant,
    ) -> Result<Arc<CommitSummary>, WriteError> {
        let key = (instant.time.clone(), instant.action.as_str());
        if let Some(found) = self.lock().get(&key) {
            return Ok(found.clone());
        }
        if !(instant.is_completed() && instant.action.is_commit_like()) {
            return Err(crate::table::timeline::TimelineError::NotACommit {
                instant: instant.to_string(),
            }
            .into());
        }
        let bytes = storage.get(&instant.path()).await?;
        let metadata = if instant.action == Action::ReplaceCommit {
            ReplaceCommitMetadata::from_json(&bytes)?
        } else {
            ReplaceCommitMetadata {
                commit: crate::table::commit::CommitMetadata::from_json(&bytes)?,
                ..ReplaceCommitMetadata::default()
            }
        };
        let summary = Arc::new(CommitSummary {
            instant: instant.clone(),
            metadata,
        });
        self.lock().insert(key, summary.clone());
        Ok(summary)
    }

    /// Drops entries of instants no longer on `timeline`.
    pub fn retain_active(&self, timeline: &Timeline) {
        self.retain_active_except(timeline, &[]);
    }

    /// Drops entries of instants not on `timeline` or among `removed` (an archival just removed them from
    /// it), so that the cache follows the timeline without reading it again.
    pub fn retain_active_except(&self, timeline: &Timeline, removed: &[Instant]) {
        let on = |instants: &[Instant], time: &InstantTime, action: &str| {
            instants
                .iter()
                .any(|i| i.time == *time && i.action.as_str() == action)
        };
        self.lock().retain(|(time, action), _| {
            on(timeline.instants(), time, action) && !on(removed, time, action)
        });
    }

    /// Number of cached entries.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}
