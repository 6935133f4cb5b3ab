//! [`PlannedGroups`]: the file groups that pending compactions plan, and whose plans they are
//! (docs/architecture.md, "Compaction", "Another engine's compaction").
//!
//! Hudi's writers append to the slice a pending compaction will make (base instant `c`), and Hudi's
//! compaction executors merge only the logs their plan names and carry nothing. So while another engine's
//! compaction is pending, a write to one of its groups must go to slice `c` as well: a log appended to the
//! slice the plan reads would be superseded by the new base file and vanish from every reader. This sink's own
//! plans are different: its compactor carries the logs that land meanwhile, and writers keep appending to the
//! old slice (which hudi-rs 0.5.0 shows while the compaction is pending).
//!
//! Invariants:
//! - A plan is this sink's when its `extraMetadata` carries [`WRITER_KEY`] = [`WRITER_NAME`]; every other plan
//!   is another engine's. A pending compaction without its `.requested` plans no group, whoever left it (an
//!   orphan of this sink's rollback, which the compaction service rolls back again, or a plan no executor can
//!   run), so whose it is does not matter here.
//! - A plan that cannot be read is an error, never "no groups": a writer that cannot tell whether a group is
//!   planned cannot tell which slice to append to.
//! - Plans never change once requested, so [`PlannedGroups::load`] reads each pending plan once and keeps it
//!   while the compaction stays pending.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::instant::{Action, Instant, InstantTime, State};
use super::records::{CompactionPlan, WRITER_KEY, WRITER_NAME};
use super::timeline::{Timeline, TimelineError};
use crate::storage::Storage;

/// One pending compaction: whose it is and the (partition, file id) groups its plan names.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Plan {
    this_sink: bool,
    groups: Vec<(String, String)>,
}

/// The pending compactions of one timeline and the groups they plan (see the module doc).
#[derive(Debug, Clone, Default)]
pub struct PlannedGroups {
    plans: BTreeMap<InstantTime, Arc<Plan>>,
    /// (partition, file id) → the pending compaction of another engine that plans it.
    foreign: BTreeMap<(String, String), InstantTime>,
}

/// No compaction pending.
pub static NOTHING_PLANNED: PlannedGroups = PlannedGroups {
    plans: BTreeMap::new(),
    foreign: BTreeMap::new(),
};

impl PlannedGroups {
    /// The plans of every compaction pending on `timeline`, reusing those `previous` already read (one GET per
    /// plan not read before, none when nothing is pending).
    pub async fn load(
        storage: &dyn Storage,
        timeline: &Timeline,
        previous: Option<&PlannedGroups>,
    ) -> Result<Self, TimelineError> {
        let mut out = Self::default();
        for pending in timeline.pending() {
            if pending.action != Action::Compaction {
                continue;
            }
            let known = previous.and_then(|p| p.plans.get(&pending.time)).cloned();
            let plan = match known {
                Some(plan) => plan,
                None => Arc::new(read_plan(storage, &pending.time).await?),
            };
            if !plan.this_sink {
                for group in &plan.groups {
                    out.foreign.insert(group.clone(), pending.time.clone());
                }
            }
            out.plans.insert(pending.time.clone(), plan);
        }
        Ok(out)
    }

    /// The pending compaction of another engine that plans the group, if one does: the base instant a write to
    /// the group appends to.
    pub fn foreign(&self, partition: &str, file_id: &str) -> Option<&InstantTime> {
        self.foreign
            .get(&(partition.to_string(), file_id.to_string()))
    }

    /// Another engine's compaction `time` pending on `groups` ((partition, file id) pairs), for unit tests of
    /// the rules that read plans.
    #[cfg(test)]
    pub(crate) fn with_foreign(mut self, time: &InstantTime, groups: &[(&str, &str)]) -> Self {
        let groups: Vec<(String, String)> = groups
            .iter()
            .map(|(p, f)| (p.to_string(), f.to_string()))
            .collect();
        for group in &groups {
            self.foreign.insert(group.clone(), time.clone());
        }
        let plan = Plan {
            this_sink: false,
            groups,
        };
        self.plans.insert(time.clone(), Arc::new(plan));
        self
    }

    /// Whether another engine's compaction is pending.
    pub fn has_foreign(&self) -> bool {
        !self.foreign.is_empty()
    }
}

/// Reads the plan of the pending compaction `time`.
async fn read_plan(storage: &dyn Storage, time: &InstantTime) -> Result<Plan, TimelineError> {
    let requested = Instant::new(time.clone(), Action::Compaction, State::Requested);
    let path = requested.path();
    let bytes = match storage.get(&path).await {
        Ok(bytes) => bytes,
        // No plan: no group is planned (see the module doc).
        Err(e) if e.is_not_found() => {
            return Ok(Plan {
                this_sink: false,
                groups: Vec::new(),
            })
        }
        Err(e) => return Err(e.into()),
    };
    let plan =
        CompactionPlan::from_avro_bytes(&bytes).map_err(|e| TimelineError::CompactionPlan {
            instant: time.to_string(),
            reason: e.to_string(),
        })?;
    let this_sink = plan.extra_metadata.get(WRITER_KEY).map(String::as_str) == Some(WRITER_NAME);
    let groups = plan
        .operations
        .into_iter()
        .map(|op| (op.partition_path, op.file_id))
        .collect();
    Ok(Plan { this_sink, groups })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::memory::MemoryStorage;
    use crate::table::records::CompactionOperation;
    use bytes::Bytes;

    fn t(n: u32) -> InstantTime {
        InstantTime::parse(&format!("202401010000000{n:02}")).expect("time")
    }

    fn plan(marked: bool, groups: &[(&str, &str)]) -> Bytes {
        let mut extra_metadata = BTreeMap::new();
        if marked {
            extra_metadata.insert(WRITER_KEY.to_string(), WRITER_NAME.to_string());
        }
        let plan = CompactionPlan {
            operations: groups
                .iter()
                .map(|(p, f)| CompactionOperation {
                    base_instant_time: t(1).to_string(),
                    delta_file_paths: Vec::new(),
                    data_file_path: None,
                    file_id: f.to_string(),
                    partition_path: p.to_string(),
                    metrics: BTreeMap::new(),
                    bootstrap_file_path: None,
                })
                .collect(),
            extra_metadata,
            version: 2,
            preserve_hoodie_metadata: true,
        };
        Bytes::from(plan.to_avro_bytes().expect("encode"))
    }

    async fn requested(storage: &MemoryStorage, time: &InstantTime, body: Bytes) {
        let instant = Instant::new(time.clone(), Action::Compaction, State::Requested);
        storage.put(&instant.path(), body).await.expect("put");
    }

    #[tokio::test]
    async fn only_another_engines_plan_names_foreign_groups_and_plans_are_read_once() {
        let storage = MemoryStorage::new("mem://t");
        requested(&storage, &t(5), plan(false, &[("p", "g-0"), ("q", "g-1")])).await;
        requested(&storage, &t(6), plan(true, &[("p", "g-2")])).await;
        let timeline = Timeline::from_instants([
            Instant::new(t(1), Action::DeltaCommit, State::Completed),
            Instant::new(t(5), Action::Compaction, State::Requested),
            Instant::new(t(6), Action::Compaction, State::Inflight),
        ]);
        let groups = PlannedGroups::load(&storage, &timeline, None)
            .await
            .expect("load");
        assert_eq!(groups.foreign("p", "g-0"), Some(&t(5)));
        assert_eq!(groups.foreign("q", "g-1"), Some(&t(5)));
        assert_eq!(groups.foreign("p", "g-2"), None, "this sink's plan");
        assert_eq!(groups.foreign("q", "g-0"), None);
        assert!(groups.has_foreign());
        // Known plans are not read again (the files could be gone: the answer is the same).
        storage
            .delete(&Instant::new(t(5), Action::Compaction, State::Requested).path())
            .await
            .expect("delete");
        let again = PlannedGroups::load(&storage, &timeline, Some(&groups))
            .await
            .expect("load");
        assert_eq!(again.foreign("p", "g-0"), Some(&t(5)));
        // Once the compaction completed, nothing is planned.
        let done = Timeline::from_instants([
            Instant::new(t(1), Action::DeltaCommit, State::Completed),
            Instant::new(t(5), Action::Commit, State::Completed),
        ]);
        let after = PlannedGroups::load(&storage, &done, Some(&again))
            .await
            .expect("load");
        assert!(!after.has_foreign());
    }

    #[tokio::test]
    async fn an_unreadable_plan_is_an_error() {
        let storage = MemoryStorage::new("mem://t");
        requested(&storage, &t(5), Bytes::from_static(b"not avro")).await;
        let timeline =
            Timeline::from_instants([Instant::new(t(5), Action::Compaction, State::Requested)]);
        let err = PlannedGroups::load(&storage, &timeline, None)
            .await
            .expect_err("unreadable");
        assert!(err.to_string().contains("compaction plan"), "{err}");
    }
}
