//! `commit`: completes a writer's instant under the table lock (docs/architecture.md, "Exactly-once").

use std::collections::BTreeSet;

use bytes::Bytes;

use crate::index::bucket::bucket_id_from_file_id;
use crate::mutation::{is_disabled, Mutation};
use crate::protocol::{CommitRequest, CoordinatorResponse};
use crate::storage::{ObjectMeta, PutOutcome, Storage};
use crate::table::commit::{CommitMetadata, OperationType, WriteStat};
use crate::table::file_name::heartbeat_path;
use crate::table::instant::{Action, Instant, InstantTime, State};
use crate::table::properties::TableProperties;
use crate::table::timeline::Timeline;
use crate::write::WriteError;

use super::Coordinator;

/// Checks that every file of `stats` exists with exactly its stated size.
pub(crate) async fn verify_files(
    storage: &dyn Storage,
    instant: &InstantTime,
    stats: &[WriteStat],
) -> Result<(), WriteError> {
    for stat in stats {
        match storage.head(&stat.path).await? {
            Some(ObjectMeta { size, .. }) if size as i64 == stat.file_size_in_bytes => {}
            found => {
                return Err(WriteError::Table {
                    base_path: storage.base_uri().to_string(),
                    reason: format!(
                        "file {} of instant {instant} has size {:?}, expected {}",
                        stat.path,
                        found.map(|m| m.size),
                        stat.file_size_in_bytes
                    ),
                })
            }
        }
    }
    Ok(())
}

fn parse_instant(text: &str) -> Result<InstantTime, WriteError> {
    Ok(InstantTime::parse(text)?)
}

/// (partition, file group) and (partition, bucket) keys of write stats.
type Touched = (BTreeSet<(String, String)>, BTreeSet<(String, u32)>);

/// What a set of write stats touched, for conflict detection.
fn touched(stats: &[WriteStat]) -> Touched {
    let mut groups = BTreeSet::new();
    let mut buckets = BTreeSet::new();
    for s in stats {
        groups.insert((s.partition_path.clone(), s.file_id.clone()));
        if let Some(b) = bucket_id_from_file_id(&s.file_id) {
            buckets.insert((s.partition_path.clone(), b));
        }
    }
    (groups, buckets)
}

impl Coordinator {
    pub(super) async fn commit(
        &self,
        req: CommitRequest,
    ) -> Result<CoordinatorResponse, WriteError> {
        let guard = self.lock().await?;
        let result = self.commit_locked(&guard, req).await;
        let response = self.unlock(guard, result).await?;
        if matches!(response, CoordinatorResponse::Committed { .. }) {
            self.inline_clustering().await;
        }
        Ok(response)
    }

    async fn commit_locked(
        &self,
        guard: &crate::lock::LockGuard,
        req: CommitRequest,
    ) -> Result<CoordinatorResponse, WriteError> {
        let instant = parse_instant(&req.instant)?;
        let base = req.base_instant.as_deref().map(parse_instant).transpose()?;
        let operation: OperationType = req.operation.parse()?;
        {
            let storage = self.storage.as_ref();
            TableProperties::load(storage).await?.validate_writable()?;
            // One listing of `.hoodie/`: the timeline, and this instant's markers to delete once committed
            // (its writer has written them all before asking for the commit).
            let listed = storage.list(crate::table::timeline::META_DIR).await?;
            let timeline = Timeline::from_listing(&listed)?;
            let commit_file = format!(
                ".hoodie/{}",
                Instant::new(instant.clone(), Action::Commit, State::Completed).file_name()
            );
            if timeline.is_completed_commit(&instant) {
                // A retry of a commit whose answer was lost: success only if it is the same commit.
                let stored = CommitMetadata::from_json(&storage.get(&commit_file).await?)?;
                let same = stored.write_stats().cloned().collect::<Vec<_>>();
                let mut asked = req.write_stats.clone();
                asked.sort_by(|a, b| {
                    (&a.partition_path, &a.path).cmp(&(&b.partition_path, &b.path))
                });
                let mut same_sorted = same;
                same_sorted.sort_by(|a, b| {
                    (&a.partition_path, &a.path).cmp(&(&b.partition_path, &b.path))
                });
                if same_sorted == asked {
                    return Ok(CoordinatorResponse::Committed {
                        instant: instant.to_string(),
                    });
                }
                return Err(WriteError::InstantExists {
                    instant: instant.to_string(),
                    file: commit_file,
                });
            }
            let rolled_back = if is_disabled(Mutation::RollbackBeforeCommit) {
                Vec::new()
            } else {
                let reported = req.last_heartbeat_ms.map(|ms| (&instant, ms));
                self.rollback_expired(guard, &timeline, reported).await?
            };
            // Read again only if that changed it (we hold the lock: nobody else changes the timeline).
            let timeline = if rolled_back.is_empty() {
                timeline
            } else {
                Timeline::load(storage).await?
            };
            // A rollback retires the time before it deletes anything: a retired instant never completes, even
            // when a rollback that lost its lease half-way has not removed its timeline files yet.
            let retired = format!("{}{instant}", crate::table::timeline::RETIRED_DIR);
            if !timeline.contains(&instant) || listed.iter().any(|o| o.path == retired) {
                return Ok(CoordinatorResponse::RolledBack {
                    instant: instant.to_string(),
                });
            }
            // Optimistic concurrency: commits completed after the writer's base must not share its file
            // groups or buckets.
            let (groups, buckets) = touched(&req.write_stats);
            let occ = !is_disabled(Mutation::OccCheck);
            // Completion must follow instant order: readers (and HoodieStreamer) take the checkpoint of the
            // latest instant, so an older instant completing after a newer one would hide its offsets. A
            // replacecommit (clustering) carries no checkpoint and is skipped by checkpoint readers.
            if let Some(newer) = timeline
                .completed_commits()
                .into_iter()
                .find(|done| occ && done.time > instant && done.action != Action::ReplaceCommit)
            {
                return Ok(CoordinatorResponse::Conflict {
                    reason: format!(
                        "instant {instant} is older than commit {} completed meanwhile",
                        newer.time
                    ),
                });
            }
            for done in timeline.completed_commits().into_iter().filter(|_| occ) {
                if base.as_ref().is_some_and(|b| done.time <= *b) {
                    continue;
                }
                let stats: Vec<WriteStat> = if done.action == Action::ReplaceCommit {
                    let meta = timeline.replace_commit_metadata(storage, done).await?;
                    let mut s: Vec<WriteStat> = meta.commit.write_stats().cloned().collect();
                    for (p, f) in meta.replaced_file_groups() {
                        s.push(WriteStat::new(f, p, ""));
                    }
                    s
                } else {
                    timeline
                        .commit_metadata(storage, done)
                        .await?
                        .write_stats()
                        .cloned()
                        .collect()
                };
                let (their_groups, their_buckets) = touched(&stats);
                if let Some((p, f)) = groups.intersection(&their_groups).next() {
                    return Ok(CoordinatorResponse::Conflict {
                        reason: format!(
                            "file group {f} in partition {p:?} was changed by commit {}",
                            done.time
                        ),
                    });
                }
                if let Some((p, b)) = buckets.intersection(&their_buckets).next() {
                    return Ok(CoordinatorResponse::Conflict {
                        reason: format!(
                            "bucket {b} in partition {p:?} was changed by commit {}",
                            done.time
                        ),
                    });
                }
            }
            // Exactly once: no offset may be committed twice.
            let mut checkpoint = self.latest_checkpoint(&timeline).await?;
            if crate::protocol::checkpoint_covers(&checkpoint, &req.offsets)
                && !is_disabled(Mutation::CheckpointFilter)
            {
                return Ok(CoordinatorResponse::AlreadyCommitted {
                    checkpoint: checkpoint.to_sink_json(),
                });
            }
            verify_files(storage, &instant, &req.write_stats).await?;
            for topic in &req.offsets {
                for r in &topic.ranges {
                    checkpoint.set(&topic.topic, r.partition, r.last + 1);
                }
            }
            let mut commit = CommitMetadata::new(operation);
            for stat in req.write_stats.iter().cloned() {
                commit.add_write_stat(stat);
            }
            commit.set_schema(&req.schema);
            if !checkpoint.is_empty() {
                checkpoint.write_to(&mut commit.extra_metadata)?;
            }
            let body = Bytes::from(commit.to_json_pretty()?);
            // Fencing: a coordinator whose lease was lost (e.g. paused past its lease) must not commit.
            self.fence(guard).await?;
            let outcome = if is_disabled(Mutation::AtomicCommitCreate) {
                storage.put(&commit_file, body).await?;
                PutOutcome::Created
            } else {
                storage.put_if_absent(&commit_file, body).await?
            };
            match outcome {
                PutOutcome::Created => self.remember_checkpoint(instant.clone(), checkpoint),
                PutOutcome::AlreadyExists => {
                    return Err(WriteError::InstantExists {
                        instant: instant.to_string(),
                        file: commit_file,
                    })
                }
            }
            // Markers and heartbeat in one request (S3): a leftover would only be cleaned later.
            let marker_dir = format!(".hoodie/.temp/{instant}/");
            let mut done: Vec<String> = listed
                .iter()
                .filter(|o| o.path.starts_with(&marker_dir))
                .map(|o| o.path.clone())
                .collect();
            done.push(heartbeat_path(&instant));
            storage.delete_many(&done).await?;
            tracing::info!(%instant, files = req.write_stats.len(), "instant committed");
            let committed = timeline.with_instant(Instant::new(
                instant.clone(),
                Action::Commit,
                State::Completed,
            ));
            self.inline_services(guard, &committed, &listed).await;
            Ok(CoordinatorResponse::Committed {
                instant: instant.to_string(),
            })
        }
    }
}
