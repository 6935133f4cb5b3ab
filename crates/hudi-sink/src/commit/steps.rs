//! `commit`: the steps that complete a writer's instant, in order, under the table lock.
//!
//! ```text
//!  1 parse the request            instant, base, operation
//!  2 table writable?              hoodie.properties
//!  3 list .hoodie/                the timeline, and the instant's markers
//!  4 a retried commit?            <t>.commit exists: Committed if the same stats, else an error
//!  5 roll back expired writes     (the timeline is read again if that changed it)
//!  6 retired or rolled back?      RolledBack
//!  7 conflicts                    Conflict (see `conflict.rs`)
//!  8 checkpoint                   AlreadyCommitted if it covers an offset; else advanced past the offsets
//!  9 whole files                  every file exists with its stated size
//! 10 metadata                     write stats, schema, checkpoint
//! 11 fence, create <t>.commit     create-if-absent: the commit is durable from here
//! 12 clean up                     markers and heartbeat in one request
//! 13 after the commit             `after.rs`: inline services (then, after unlock, clustering)
//! ```
//!
//! Steps 4, 6, 7 and 8 may end the commit with an answer instead of an error ([`Stop::Answer`]); every
//! answer and error is one the protocol had before the steps were named (`protocol.rs`).

use crate::write::verify::verify_files;
use bytes::Bytes;

use crate::lock::LockGuard;
use crate::mutation::{is_disabled, Mutation};
use crate::protocol::{checkpoint_covers, CommitRequest, CoordinatorResponse};
use crate::storage::{ObjectMeta, PutOutcome};
use crate::table::commit::{Checkpoint, CommitMetadata, OperationType, WriteStat};
use crate::table::file_name::heartbeat_path;
use crate::table::instant::{Action, Instant, InstantTime, State};
use crate::table::planned_groups::PlannedGroups;
use crate::table::properties::TableProperties;
use crate::table::timeline::Timeline;
use crate::write::WriteError;

use super::checkpoint::advance;
use super::conflict::{Candidate, CompletedWrite, Conflict};
use super::Coordinator;

/// Why the steps stopped before `<t>.commit` was written: an answer for the writer, or an error.
#[derive(Debug)]
enum Stop {
    /// The protocol's answer (`committed` for a retried commit, `rolled_back`, `conflict`,
    /// `already_committed`).
    Answer(CoordinatorResponse),
    /// A failure: the request fails and may be repeated.
    Error(WriteError),
}

impl<E: Into<WriteError>> From<E> for Stop {
    fn from(e: E) -> Self {
        Stop::Error(e.into())
    }
}

impl From<Conflict> for Stop {
    fn from(conflict: Conflict) -> Self {
        Stop::Answer(CoordinatorResponse::Conflict {
            reason: conflict.to_string(),
        })
    }
}

/// A commit request with its fields parsed.
#[derive(Debug)]
struct Proposed {
    instant: InstantTime,
    base: Option<InstantTime>,
    /// Writes pending below the base when the writer began.
    pending: Vec<InstantTime>,
    operation: OperationType,
    /// `commit`, or `deltacommit` on merge-on-read tables.
    action: Action,
    /// `.hoodie/<t>.commit` (or `.deltacommit`).
    commit_file: String,
    request: CommitRequest,
}

fn parse_instant(text: &str) -> Result<InstantTime, WriteError> {
    Ok(InstantTime::parse(text)?)
}

/// Write stats in a canonical order (partition, path), to compare two commits' files.
fn sorted(stats: impl IntoIterator<Item = WriteStat>) -> Vec<WriteStat> {
    let mut stats: Vec<WriteStat> = stats.into_iter().collect();
    stats.sort_by(|a, b| (&a.partition_path, &a.path).cmp(&(&b.partition_path, &b.path)));
    stats
}

impl Coordinator {
    /// Serves `commit`: the steps under the lock, then the after-release work of a committed instant.
    pub(super) async fn commit(
        &self,
        req: CommitRequest,
    ) -> Result<CoordinatorResponse, WriteError> {
        let written: std::collections::BTreeSet<String> = req
            .write_stats
            .iter()
            .map(|s| s.partition_path.clone())
            .collect();
        let guard = self.lock().await?;
        let result = match self.commit_locked(&guard, req).await {
            Ok(answer) | Err(Stop::Answer(answer)) => Ok(answer),
            Err(Stop::Error(e)) => Err(e),
        };
        let response = self.unlock(guard, result).await?;
        if let CoordinatorResponse::Committed { instant } = &response {
            let known = InstantTime::parse(instant).ok().map(|t| (t, written));
            self.after_release(known).await;
        }
        Ok(response)
    }

    /// The steps of the module doc, in order.
    async fn commit_locked(
        &self,
        guard: &LockGuard,
        request: CommitRequest,
    ) -> Result<CoordinatorResponse, Stop> {
        let action = self.check_writable().await?;
        let proposed = parse_request(request, action)?;
        let (listed, timeline) = self.list_timeline().await?;
        self.answer_retried_commit(&proposed, &timeline).await?;
        let timeline = self
            .roll_back_expired_writes(guard, &proposed, timeline)
            .await?;
        refuse_retired(&proposed, &timeline, &listed)?;
        self.check_conflicts(&proposed, &timeline).await?;
        let (checkpoint, schema) = self.next_checkpoint(&proposed, &timeline).await?;
        verify_files(
            self.storage.as_ref(),
            &proposed.instant,
            &proposed.request.write_stats,
        )
        .await?;
        let body = commit_metadata(&proposed, &checkpoint, schema.as_deref())?;
        self.create_commit_file(guard, &proposed, body, checkpoint, schema)
            .await?;
        self.clean_up_committed(&proposed, &listed).await?;
        let committed = timeline.with_instant(Instant::new(
            proposed.instant.clone(),
            proposed.action,
            State::Completed,
        ));
        self.after_commit(guard, &committed, &listed).await;
        Ok(CoordinatorResponse::Committed {
            instant: proposed.instant.to_string(),
        })
    }

    /// Step 2: the table properties allow this sink to write (checked before every commit); the action of
    /// the table's writes.
    pub(super) async fn check_writable(&self) -> Result<Action, WriteError> {
        let props = TableProperties::load(self.storage.as_ref()).await?;
        props.validate_writable()?;
        let action = props.write_action();
        let _ = self.write_action.set(action);
        Ok(action)
    }

    /// Step 3: one listing of `.hoodie/`: the timeline, and the instant's markers to delete once committed
    /// (its writer has written them all before asking for the commit).
    async fn list_timeline(&self) -> Result<(Vec<ObjectMeta>, Timeline), WriteError> {
        let listed = self.storage.list(crate::table::timeline::META_DIR).await?;
        let timeline = Timeline::from_listing(&listed)?;
        Ok((listed, timeline))
    }

    /// Step 4: a retry of a commit whose answer was lost finds `<t>.commit`: `committed` only if it is the
    /// same commit (the same write stats), an error otherwise.
    async fn answer_retried_commit(
        &self,
        proposed: &Proposed,
        timeline: &Timeline,
    ) -> Result<(), Stop> {
        if !timeline.is_completed_commit(&proposed.instant) {
            return Ok(());
        }
        let stored = CommitMetadata::from_json(&self.storage.get(&proposed.commit_file).await?)?;
        if sorted(stored.write_stats().cloned()) == sorted(proposed.request.write_stats.clone()) {
            return Err(Stop::Answer(CoordinatorResponse::Committed {
                instant: proposed.instant.to_string(),
            }));
        }
        Err(Stop::Error(WriteError::InstantExists {
            instant: proposed.instant.to_string(),
            file: proposed.commit_file.clone(),
        }))
    }

    /// Step 5: rolls back expired writes (the committing instant's reported heartbeat saves its read), and
    /// reads the timeline again only if that changed it (under the lock nobody else changes it).
    async fn roll_back_expired_writes(
        &self,
        guard: &LockGuard,
        proposed: &Proposed,
        timeline: Timeline,
    ) -> Result<Timeline, WriteError> {
        if is_disabled(Mutation::RollbackBeforeCommit) {
            return Ok(timeline);
        }
        let reported = proposed
            .request
            .last_heartbeat_ms
            .map(|ms| (&proposed.instant, ms));
        let rolled_back = self.rollback_expired(guard, &timeline, reported).await?;
        if rolled_back.is_empty() {
            Ok(timeline)
        } else {
            Ok(Timeline::load(self.storage.as_ref()).await?)
        }
    }

    /// Step 7: optimistic concurrency ([`super::conflict`]). The metadata of the commits completed after the
    /// base is read one commit at a time, up to the first conflict.
    async fn check_conflicts(&self, proposed: &Proposed, timeline: &Timeline) -> Result<(), Stop> {
        if is_disabled(Mutation::OccCheck) {
            return Ok(());
        }
        let candidate = Candidate::new(
            &proposed.instant,
            proposed.base.as_ref(),
            &proposed.request.write_stats,
        )
        .pending(&proposed.pending)
        .deltacommit(proposed.action == Action::DeltaCommit);
        let completed = timeline.completed_commits();
        candidate.check_order(completed.iter().copied())?;
        for done in completed {
            if candidate.is_after_base(done) {
                let done = self.completed_write(timeline, done).await?;
                candidate.check_against(&done)?;
            }
        }
        let planned = self.planned_groups(timeline, proposed.action).await?;
        candidate.check_planned(&planned)?;
        Ok(())
    }

    /// The groups the compactions pending on `timeline` plan, for a commit of `action` (nothing but for
    /// deltacommits); each plan is read once while this coordinator is warm.
    pub(super) async fn planned_groups(
        &self,
        timeline: &Timeline,
        action: Action,
    ) -> Result<PlannedGroups, WriteError> {
        if action != Action::DeltaCommit {
            return Ok(PlannedGroups::default());
        }
        let mut known = self.planned.lock().await;
        *known = PlannedGroups::load(self.storage.as_ref(), timeline, Some(&known)).await?;
        Ok(known.clone())
    }

    /// What the completed commit `done` changed: its write stats, and for a replacecommit the file groups
    /// it replaced.
    pub(super) async fn completed_write(
        &self,
        timeline: &Timeline,
        done: &Instant,
    ) -> Result<CompletedWrite, WriteError> {
        let storage = self.storage.as_ref();
        let (written, replaced) = if done.action == Action::ReplaceCommit {
            let meta = timeline.replace_commit_metadata(storage, done).await?;
            let replaced = meta
                .replaced_file_groups()
                .map(|(p, f)| (p.to_string(), f.to_string()))
                .collect();
            (meta.commit.write_stats().cloned().collect(), replaced)
        } else {
            let meta = timeline.commit_metadata(storage, done).await?;
            (meta.write_stats().cloned().collect(), Vec::new())
        };
        Ok(CompletedWrite {
            instant: done.clone(),
            written,
            replaced,
        })
    }

    /// Step 8: exactly once, no offset may be committed twice: `already_committed` when the table's
    /// checkpoint covers an offset of the request, else the checkpoint advanced past its offsets. With it,
    /// the schema the commit carries: the latest committed one evolved with the request's (`schema.rs`).
    async fn next_checkpoint(
        &self,
        proposed: &Proposed,
        timeline: &Timeline,
    ) -> Result<(Checkpoint, Option<String>), Stop> {
        let (mut checkpoint, committed) = self.latest(timeline).await?;
        if checkpoint_covers(&checkpoint, &proposed.request.offsets)
            && !is_disabled(Mutation::CheckpointFilter)
        {
            return Err(Stop::Answer(CoordinatorResponse::AlreadyCommitted {
                checkpoint: checkpoint.to_sink_json(),
            }));
        }
        advance(&mut checkpoint, &proposed.request.offsets);
        let schema =
            super::schema::commit_schema(committed.as_deref(), [proposed.request.schema.as_str()])?;
        Ok((checkpoint, schema))
    }

    /// Step 11: fencing (a coordinator whose lease was lost, e.g. paused past it, must not commit), then
    /// `<t>.commit`, created if absent. From here the commit is durable; its checkpoint is remembered.
    async fn create_commit_file(
        &self,
        guard: &LockGuard,
        proposed: &Proposed,
        body: Bytes,
        checkpoint: Checkpoint,
        schema: Option<String>,
    ) -> Result<(), WriteError> {
        self.fence(guard).await?;
        let storage = self.storage.as_ref();
        let outcome = if is_disabled(Mutation::AtomicCommitCreate) {
            storage.put(&proposed.commit_file, body).await?;
            PutOutcome::Created
        } else {
            storage.put_if_absent(&proposed.commit_file, body).await?
        };
        match outcome {
            PutOutcome::Created => {
                self.remember(proposed.instant.clone(), checkpoint, schema);
                Ok(())
            }
            PutOutcome::AlreadyExists => Err(WriteError::InstantExists {
                instant: proposed.instant.to_string(),
                file: proposed.commit_file.clone(),
            }),
        }
    }

    /// Step 12: the instant's markers and heartbeat, in one request (S3); a leftover would only be cleaned
    /// later.
    async fn clean_up_committed(
        &self,
        proposed: &Proposed,
        listed: &[ObjectMeta],
    ) -> Result<(), WriteError> {
        let marker_dir = format!(".hoodie/.temp/{}/", proposed.instant);
        let mut done: Vec<String> = listed
            .iter()
            .filter(|o| o.path.starts_with(&marker_dir))
            .map(|o| o.path.clone())
            .collect();
        done.push(heartbeat_path(&proposed.instant));
        self.storage.delete_many(&done).await?;
        tracing::info!(
            instant = %proposed.instant,
            files = proposed.request.write_stats.len(),
            "instant committed"
        );
        Ok(())
    }
}

/// Step 1: the request's instant, base instant and operation.
fn parse_request(request: CommitRequest, action: Action) -> Result<Proposed, WriteError> {
    let instant = parse_instant(&request.instant)?;
    let base = request
        .base_instant
        .as_deref()
        .map(parse_instant)
        .transpose()?;
    let pending = request
        .pending
        .iter()
        .map(|t| parse_instant(t))
        .collect::<Result<Vec<_>, _>>()?;
    let operation: OperationType = request.operation.parse()?;
    let commit_file = format!(
        ".hoodie/{}",
        Instant::new(instant.clone(), action, State::Completed).file_name()
    );
    Ok(Proposed {
        instant,
        base,
        pending,
        operation,
        action,
        commit_file,
        request,
    })
}

/// Step 6: a rolled-back instant never completes (`rolled_back`). A rollback retires the time before it
/// deletes anything, so a retired instant is refused even when a rollback that lost its lease half-way has
/// not removed its timeline files yet.
fn refuse_retired(
    proposed: &Proposed,
    timeline: &Timeline,
    listed: &[ObjectMeta],
) -> Result<(), Stop> {
    let retired = format!(
        "{}{}",
        crate::table::timeline::RETIRED_DIR,
        proposed.instant
    );
    if !timeline.contains(&proposed.instant) || listed.iter().any(|o| o.path == retired) {
        return Err(Stop::Answer(CoordinatorResponse::RolledBack {
            instant: proposed.instant.to_string(),
        }));
    }
    Ok(())
}

/// Step 10: the commit's metadata: the write stats, the schema and (when there is one) the checkpoint.
fn commit_metadata(
    proposed: &Proposed,
    checkpoint: &Checkpoint,
    schema: Option<&str>,
) -> Result<Bytes, WriteError> {
    let mut commit = CommitMetadata::new(proposed.operation);
    for stat in proposed.request.write_stats.iter().cloned() {
        commit.add_write_stat(stat);
    }
    commit.set_schema(schema.unwrap_or(&proposed.request.schema));
    if !checkpoint.is_empty() {
        checkpoint.write_to(&mut commit.extra_metadata)?;
    }
    Ok(Bytes::from(commit.to_json_pretty()?))
}
