//! `submit` and `close`: a member's contribution, and the one commit of every contribution of a window
//! (docs/architecture.md, "Interval commit").
//!
//! ```text
//! submit  contribution.<m>.json ─ list the window ─ every member submitted? close : Waiting{end}
//! close   <t> committed? the member's answer
//!         window.json ─ marked closing < 3 s ago by another closer? Waiting (it is closing)
//!         ─ list the window: members all submitted, or past their lease? else Waiting
//!         ─ window.json closing ─ list .hoodie/ ─ read contributions ─ resolve ─ whole files
//!         ─ excluded files (by markers) ─ metadata
//!         ─ lock: list .hoodie/, unchanged? ─ delete excluded files ─ fence ─ <t>.commit ─ inline services
//!         ─ unlock ─ markers, heartbeat, window objects
//! ```
//!
//! Every step before the lock only reads, or marks the window closing; under the lock the commit takes four
//! requests whatever the number of contributions. When the listing under the lock differs from the one the
//! decision was made on (a late contribution, a leaving joiner, a commit), the close starts over.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;

use crate::lock::LockGuard;
use crate::mutation::{is_disabled, Mutation};
use crate::protocol::{Contribution, CoordinatorResponse, SubmitRequest};
use crate::storage::{ObjectMeta, PutOutcome, Storage};
use crate::table::commit::{Checkpoint, CommitMetadata, OperationType};
use crate::table::file_name::heartbeat_path;
use crate::table::instant::{Action, Instant, InstantTime, State};
use crate::table::timeline::Timeline;
use crate::write::WriteError;
use std::sync::Arc;

use super::super::conflict::CompletedWrite;
use super::super::Coordinator;
use super::join::bad_request;
use super::resolve::{resolve, Exclusion, Resolution, WindowOf};
use super::{
    contribution_path, is_valid_member, window_dir, window_object_path, windows_in, WindowListing,
    WindowObject, WindowRecord, WINDOW_METADATA_KEY,
};

/// How a close attempt ended.
enum Closing {
    /// This call committed the window: its record and checkpoint.
    Committed(WindowRecord, Checkpoint),
    /// The window is committed (by another closer) or gone: the commit file answers.
    Settled,
    /// Rolled back: nothing of it completes.
    RolledBack,
    /// Rolled back because it had nothing to commit: every contribution was left out (with why, by member;
    /// the table's checkpoint is unchanged), or another window took its slot.
    Emptied(BTreeMap<String, String>, Checkpoint),
    /// Not due yet: ask again then (epoch ms).
    Wait(i64),
    /// What the decision was based on changed before the lock: decide again.
    Changed,
}

/// When a member waiting for others asks again: at the window's end, then at doubling intervals after it
/// (250 ms, 500 ms, …), never after the moment the missing members can be excluded.
fn next_question(now: i64, end_ms: i64, exclude_at: i64) -> i64 {
    if now < end_ms {
        return end_ms;
    }
    (now + (now - end_ms).max(250)).min(exclude_at.max(now + 1))
}

impl Coordinator {
    /// Serves `submit`: stores the contribution, and closes the window if it was the last one missing.
    pub(crate) async fn submit(
        &self,
        req: SubmitRequest,
        end_ms: i64,
    ) -> Result<CoordinatorResponse, WriteError> {
        let exclude_at = if req.exclude_ms > 0 {
            req.exclude_ms
        } else {
            end_ms + self.config.heartbeat_tolerance.as_millis() as i64
        };
        let instant = InstantTime::parse(&req.instant)?;
        let member = req.contribution.member.clone();
        if !is_valid_member(&member) {
            return Err(bad_request(format!("member name {member:?}")));
        }
        let body = serde_json::to_vec(&req.contribution).map_err(|e| bad_request(e.to_string()))?;
        self.storage
            .put(&contribution_path(&instant, &member), Bytes::from(body))
            .await?;
        let listed = self.storage.list(&window_dir(&instant)).await?;
        let window = windows_in(&listed).remove(&instant).unwrap_or_default();
        if !window.has_object {
            return self.close_request(&instant, &member).await;
        }
        let opened = instant.to_millis().unwrap_or(0);
        let early = opened + super::window_join_grace_ms(req.interval_ms, req.backlog);
        let now = self.clock.now_millis();
        if (window.missing().next().is_none() && now >= early)
            || is_disabled(Mutation::WindowMembership)
        {
            // The last contribution came after any earlier closer listed the members: that closer can only
            // wait or start over, so this one closes at once, whatever mark it left.
            return self.close_window(&instant, &member, true).await;
        }
        if window.missing().next().is_none() {
            // Every member submitted, but the window is younger than the join grace: others may still come.
            return Ok(CoordinatorResponse::Waiting {
                instant: instant.to_string(),
                until_ms: early,
            });
        }
        Ok(CoordinatorResponse::Waiting {
            instant: instant.to_string(),
            until_ms: next_question(now, end_ms, exclude_at),
        })
    }

    /// Serves `close`: the member's answer if the window committed, else a close if it is due.
    pub(crate) async fn close_request(
        &self,
        instant: &InstantTime,
        member: &str,
    ) -> Result<CoordinatorResponse, WriteError> {
        if let Some(answer) = self.answer_if_settled(instant, member).await? {
            return Ok(answer);
        }
        self.close_window(instant, member, false).await
    }

    /// The member's answer from the window's commit file, `None` while there is none.
    async fn answer_if_settled(
        &self,
        instant: &InstantTime,
        member: &str,
    ) -> Result<Option<CoordinatorResponse>, WriteError> {
        let action = self.write_action().await?;
        let file = format!(
            ".hoodie/{}",
            Instant::new(instant.clone(), action, State::Completed).file_name()
        );
        match self.storage.get(&file).await {
            Ok(bytes) => {
                let commit = CommitMetadata::from_json(&bytes)?;
                let record =
                    WindowRecord::from_extra_metadata(&commit.extra_metadata).unwrap_or_default();
                let checkpoint = Checkpoint::from_extra_metadata(&commit.extra_metadata, None)?
                    .unwrap_or_default();
                Ok(Some(member_answer(instant, &record, &checkpoint, member)))
            }
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Closes window `instant` for `member`; `takeover`: without leaving it to a closer that marked it
    /// closing recently.
    async fn close_window(
        &self,
        instant: &InstantTime,
        member: &str,
        takeover: bool,
    ) -> Result<CoordinatorResponse, WriteError> {
        for attempt in 0..3 {
            // Its own mark does not hold back a closer that starts over.
            match self.try_close(instant, takeover || attempt > 0).await? {
                Closing::Committed(record, checkpoint) => {
                    return Ok(member_answer(instant, &record, &checkpoint, member));
                }
                Closing::Settled => {
                    return match self.answer_if_settled(instant, member).await? {
                        Some(answer) => Ok(answer),
                        None => Ok(CoordinatorResponse::RolledBack {
                            instant: instant.to_string(),
                        }),
                    }
                }
                Closing::RolledBack => {
                    return Ok(CoordinatorResponse::RolledBack {
                        instant: instant.to_string(),
                    })
                }
                // A member left out is told why, so that it knows what refused it (a conflict that calls for a
                // fresh look at the table, say); the others start over.
                Closing::Emptied(excluded, checkpoint) => {
                    return Ok(match excluded.get(member) {
                        Some(reason) => CoordinatorResponse::Excluded {
                            instant: instant.to_string(),
                            reason: reason.clone(),
                            checkpoint: checkpoint.to_sink_json(),
                        },
                        None => CoordinatorResponse::RolledBack {
                            instant: instant.to_string(),
                        },
                    })
                }
                Closing::Wait(until_ms) => {
                    return Ok(CoordinatorResponse::Waiting {
                        instant: instant.to_string(),
                        until_ms,
                    })
                }
                Closing::Changed => continue,
            }
        }
        Ok(CoordinatorResponse::Waiting {
            instant: instant.to_string(),
            until_ms: self.clock.now_millis() + 250,
        })
    }

    /// One attempt to close window `instant` (the module doc's steps). A window another closer marked
    /// closing less than [`CLOSE_TAKEOVER_MS`] ago is left to it, unless `takeover`.
    async fn try_close(
        &self,
        instant: &InstantTime,
        takeover: bool,
    ) -> Result<Closing, WriteError> {
        let action = self.check_writable().await?;
        let Some(mut window) = self.window_object(instant).await? else {
            return Ok(Closing::Settled);
        };
        // Members that did not submit are excluded a whole grace after the end (their lease ended half-way).
        let exclude_at = window.end_ms + self.grace_of(&window);
        let membership = !is_disabled(Mutation::WindowMembership);
        let takeover_at = window.closing_ms.saturating_add(super::CLOSE_TAKEOVER_MS);
        if window.closing && !takeover && self.clock.now_millis() < takeover_at {
            return Ok(Closing::Wait(takeover_at));
        }
        if !window.closing {
            let listed = self.storage.list(&window_dir(instant)).await?;
            let members = windows_in(&listed).remove(instant).unwrap_or_default();
            if let Some(wait) = self.not_due(instant, &members, &window, exclude_at, membership) {
                return Ok(Closing::Wait(wait));
            }
            window.closing = true;
            window.closing_ms = self.clock.now_millis();
            let body = serde_json::to_vec(&window).map_err(|e| bad_request(e.to_string()))?;
            self.storage
                .put(&window_object_path(instant), Bytes::from(body))
                .await?;
        }
        let listed = self.storage.list(crate::table::timeline::META_DIR).await?;
        let timeline = Timeline::from_listing(&listed)?;
        if timeline.is_completed_commit(instant) {
            return Ok(Closing::Settled);
        }
        if !timeline.contains(instant) || timeline.is_retired(instant) {
            return Ok(Closing::RolledBack);
        }
        let members = windows_in(&listed).remove(instant).unwrap_or_default();
        // Members that joined before the mark and are still writing are waited for; a joiner that came
        // after it leaves soon.
        if let Some(wait) = self.not_due(instant, &members, &window, exclude_at, membership) {
            return Ok(Closing::Wait(wait));
        }
        let decided =
            Decided::new(self, instant, action, &window, &members, &timeline, &listed).await?;
        let guard = self.lock().await?;
        let result = self.commit_window(&guard, instant, &decided).await;
        let result = self.unlock(guard, result).await?;
        if let Closing::Committed(..) = &result {
            let submitted = decided
                .members
                .contributions
                .iter()
                .map(|m| crate::write::lease::member_stage(m))
                .collect();
            self.clean_up_window(instant, &submitted).await;
            let written = decided
                .resolution
                .accepted
                .iter()
                .flat_map(|c| c.write_stats.iter().map(|s| s.partition_path.clone()))
                .collect();
            self.after_release(Some((instant.clone(), written))).await;
        }
        Ok(result)
    }

    /// `Some(when to ask again)` while a member has not submitted and may still (its exclusion time is
    /// not reached); `None` when the window can close.
    fn not_due(
        &self,
        instant: &InstantTime,
        members: &WindowListing,
        window: &WindowObject,
        exclude_at: i64,
        membership: bool,
    ) -> Option<i64> {
        let now = self.clock.now_millis();
        if !membership {
            return None;
        }
        if members.missing().next().is_some() && now < exclude_at {
            return Some(next_question(now, window.end_ms, exclude_at));
        }
        // Early (before the end): not before the join grace.
        let early = instant.to_millis().unwrap_or(0)
            + super::window_join_grace_ms(window.interval_ms, window.backlog);
        (now < early.min(window.end_ms)).then_some(early.min(window.end_ms))
    }

    /// Under the lock: the listing still shows what the decision was made on; then the excluded files go,
    /// the lease is proven and `<t>.commit` is created.
    async fn commit_window(
        &self,
        guard: &LockGuard,
        instant: &InstantTime,
        decided: &Decided,
    ) -> Result<Closing, WriteError> {
        let storage = self.storage.as_ref();
        let listed = storage.list(crate::table::timeline::META_DIR).await?;
        let timeline = Timeline::from_listing(&listed)?;
        if timeline.is_completed_commit(instant) {
            return Ok(Closing::Settled);
        }
        if !timeline.contains(instant) || timeline.is_retired(instant) {
            return Ok(Closing::RolledBack);
        }
        let members = windows_in(&listed).remove(instant).unwrap_or_default();
        let completed: Vec<&InstantTime> = timeline
            .completed_commits()
            .iter()
            .map(|i| &i.time)
            .collect();
        if members.members != decided.members.members
            || members.contributions != decided.members.contributions
            || completed != decided.completed.iter().collect::<Vec<_>>()
        {
            return Ok(Closing::Changed);
        }
        // One write instant per slot: a window opened in this window's slot by a coordinator that was paused
        // past its lease may have completed first; then this one gives way (a backlog's window need not).
        let slot = |t: &InstantTime| {
            t.to_millis()
                .map(|ms| super::slot_of(ms, decided.interval_ms))
        };
        let same_slot = decided.interval_ms > 0
            && !decided.backlog
            && !is_disabled(Mutation::SlotRule)
            && timeline.completed_commits().iter().any(|c| {
                c.action == decided.action && c.time != *instant && slot(&c.time) == slot(instant)
            });
        if decided.resolution.accepted.is_empty() || same_slot {
            // Nothing to commit: the window is rolled back, and its members start over (those whose
            // offsets were committed find them in the checkpoint).
            self.rollback_fenced(guard, instant).await?;
            let excluded = decided
                .resolution
                .excluded
                .iter()
                .map(|(m, why)| (m.clone(), why.to_string()))
                .collect();
            return Ok(Closing::Emptied(
                excluded,
                decided.resolution.checkpoint.clone(),
            ));
        }
        // Base files of excluded members that landed since the decision are named by their markers too.
        let mut doomed = decided.doomed.clone();
        for object in listed
            .iter()
            .filter(|o| o.path.starts_with(&decided.marker_dir))
        {
            if let Ok(marker) = crate::table::file_name::Marker::parse(&object.path) {
                let path = marker.data_file_path();
                let base_of_window =
                    crate::table::file_name::BaseFileName::parse(&marker.data_file_name)
                        .is_ok_and(|n| n.instant_time == *instant);
                if base_of_window
                    && !decided.accepted_paths.contains(&path)
                    && !doomed.contains(&path)
                {
                    doomed.push(path);
                }
            }
        }
        if !doomed.is_empty() {
            storage.delete_many(&doomed).await?;
        }
        self.fence(guard).await?;
        let outcome = if is_disabled(Mutation::AtomicCommitCreate) {
            storage
                .put(&decided.commit_file, decided.body.clone())
                .await?;
            PutOutcome::Created
        } else {
            storage
                .put_if_absent(&decided.commit_file, decided.body.clone())
                .await?
        };
        if outcome == PutOutcome::AlreadyExists {
            return Ok(Closing::Settled);
        }
        self.remember(
            instant.clone(),
            decided.resolution.checkpoint.clone(),
            decided.schema.clone(),
        );
        tracing::info!(
            %instant,
            contributions = decided.resolution.accepted.len(),
            excluded = decided.record.excluded.len(),
            files = decided.accepted_paths.len(),
            "window committed"
        );
        let committed = timeline.with_instant(Instant::new(
            instant.clone(),
            decided.action,
            State::Completed,
        ));
        self.after_commit(guard, &committed, &listed).await;
        Ok(Closing::Committed(
            decided.record.clone(),
            decided.resolution.checkpoint.clone(),
        ))
    }

    /// After the commit: the markers of every member that submitted (it uploads nothing after its
    /// submission), the heartbeat and the window's objects, in one request; a leftover is deleted by the next
    /// window's open. The markers of members that did not submit stay: a straggler's upload may still land
    /// after them, and the next open deletes the file they name (`rollback.rs`, `sweep_unlisted`). Whose
    /// file a marker names is in the file's write token (`write/lease.rs`, `member_stage`).
    async fn clean_up_window(&self, instant: &InstantTime, submitted: &BTreeSet<u64>) {
        let storage = self.storage.as_ref();
        let mut done = Vec::new();
        let markers = format!("{}/", crate::table::file_name::marker_dir(instant));
        for prefix in [markers, window_dir(instant)] {
            match storage.list(&prefix).await {
                Ok(listed) => done.extend(listed.into_iter().map(|o| o.path).filter(|p| {
                    crate::table::file_name::Marker::parse(p).map_or(true, |m| {
                        writer_stage(&m.data_file_name).is_some_and(|s| submitted.contains(&s))
                    })
                })),
                Err(e) => tracing::warn!(%instant, error = %e, "window clean-up: listing failed"),
            }
        }
        done.push(heartbeat_path(instant));
        if let Err(e) = storage.delete_many(&done).await {
            tracing::warn!(%instant, error = %e, "window clean-up failed; the next open retries");
        }
    }
}

/// The close decided before the lock: what the commit takes and what goes.
struct Decided {
    action: Action,
    /// The schema the commit carries (`commit/schema.rs`).
    schema: Option<String>,
    /// The window's interval (0 when unknown: no slot check).
    interval_ms: u64,
    /// Opened for a backlog: it may share its slot (no slot check).
    backlog: bool,
    members: WindowListing,
    /// Completed commit-like instants the decision saw.
    completed: Vec<InstantTime>,
    resolution: Resolution,
    record: WindowRecord,
    accepted_paths: BTreeSet<String>,
    /// Files of excluded members (named by markers of the window).
    doomed: Vec<String>,
    marker_dir: String,
    commit_file: String,
    body: Bytes,
}

impl Decided {
    #[allow(clippy::too_many_arguments)]
    async fn new(
        coordinator: &Coordinator,
        instant: &InstantTime,
        action: Action,
        window: &WindowObject,
        members: &WindowListing,
        timeline: &Timeline,
        listed: &[ObjectMeta],
    ) -> Result<Self, WriteError> {
        let storage = coordinator.storage.as_ref();
        let paths: Vec<String> = members
            .contributions
            .iter()
            .map(|m| contribution_path(instant, m))
            .collect();
        let bodies = get_all(&coordinator.storage, paths).await?;
        let mut contributions = Vec::new();
        for (member, bytes) in members.contributions.iter().zip(bodies) {
            let contribution: Contribution =
                serde_json::from_slice(&bytes).map_err(|e| WriteError::Table {
                    base_path: storage.base_uri().to_string(),
                    reason: format!("unreadable contribution {member} of window {instant}: {e}"),
                })?;
            if contribution.member != *member {
                return Err(bad_request(format!(
                    "contribution object of {member} names member {}",
                    contribution.member
                )));
            }
            // A withdrawn member (it left before writing) has nothing to commit.
            if !contribution.offsets.is_empty() || !contribution.write_stats.is_empty() {
                contributions.push(contribution);
            }
        }
        let base = window
            .base_instant
            .as_deref()
            .map(InstantTime::parse)
            .transpose()?;
        let pending = window
            .pending
            .iter()
            .map(|t| InstantTime::parse(t))
            .collect::<Result<Vec<_>, _>>()?;
        let completed = timeline.completed_commits();
        let mut after_base = Vec::new();
        for done in completed
            .iter()
            .filter(|d| base.as_ref().is_none_or(|b| d.time > *b) || pending.contains(&d.time))
        {
            after_base.push(completed_write(coordinator, timeline, done).await?);
        }
        let (checkpoint, committed_schema) = coordinator.latest(timeline).await?;
        let planned = coordinator.planned_groups(timeline, action).await?;
        let resolution = resolve(
            WindowOf {
                instant,
                base: base.as_ref(),
                pending: &pending,
                action,
                planned: &planned,
            },
            contributions,
            checkpoint,
            &completed,
            &after_base,
        );
        let mut excluded: BTreeMap<String, String> = resolution
            .excluded
            .iter()
            .map(|(m, why)| (m.clone(), why.to_string()))
            .collect();
        for late in members.missing() {
            excluded.insert(late.clone(), Exclusion::Late.to_string());
        }
        let record = WindowRecord {
            end_ms: window.end_ms,
            members: resolution
                .accepted
                .iter()
                .map(|c| (c.member.clone(), c.offsets.clone()))
                .collect(),
            excluded,
            backlog: window.backlog,
        };
        let stats: Vec<_> = resolution
            .accepted
            .iter()
            .flat_map(|c| c.write_stats.iter().cloned())
            .collect();
        verify_all(&coordinator.storage, instant, &stats).await?;
        let accepted_paths: BTreeSet<String> = stats.iter().map(|s| s.path.clone()).collect();
        let marker_dir = format!("{}/", crate::table::file_name::marker_dir(instant));
        let markers: Vec<ObjectMeta> = listed
            .iter()
            .filter(|o| o.path.starts_with(&marker_dir))
            .cloned()
            .collect();
        let doomed =
            crate::write::files_named_by_markers(storage, instant, &markers, &accepted_paths)
                .await?;
        let schema = crate::commit::schema::commit_schema(
            committed_schema.as_deref(),
            resolution.accepted.iter().map(|c| c.schema.as_str()),
        )?;
        let body = window_commit_body(&resolution, &record, schema.as_deref())?;
        let commit_file = format!(
            ".hoodie/{}",
            Instant::new(instant.clone(), action, State::Completed).file_name()
        );
        Ok(Self {
            action,
            interval_ms: window.interval_ms,
            backlog: window.backlog,
            members: members.clone(),
            completed: completed.iter().map(|i| i.time.clone()).collect(),
            resolution,
            record,
            accepted_paths,
            doomed,
            marker_dir,
            commit_file,
            body,
            schema,
        })
    }
}

/// How many requests of one close run at once (a window of many members has many contributions and files).
const CLOSE_CONCURRENCY: usize = 16;

/// Runs `op` on every path, at most [`CLOSE_CONCURRENCY`] at a time; the results in the order of `paths`.
/// The tasks are aborted if the close is dropped (a crash, a deadline).
async fn for_all<T, F, Fut>(
    storage: &Arc<dyn Storage>,
    paths: Vec<String>,
    op: F,
) -> Result<Vec<T>, WriteError>
where
    T: Send + 'static,
    F: Fn(Arc<dyn Storage>, String) -> Fut,
    Fut: std::future::Future<Output = Result<T, WriteError>> + Send + 'static,
{
    let mut out: Vec<Option<T>> = (0..paths.len()).map(|_| None).collect();
    let mut tasks = tokio::task::JoinSet::new();
    let mut pending = paths.into_iter().enumerate();
    loop {
        while tasks.len() < CLOSE_CONCURRENCY {
            let Some((i, path)) = pending.next() else {
                break;
            };
            let fut = op(storage.clone(), path);
            tasks.spawn(async move { (i, fut.await) });
        }
        let Some(done) = tasks.join_next().await else {
            break;
        };
        let (i, result) = done.map_err(|e| WriteError::Table {
            base_path: storage.base_uri().to_string(),
            reason: format!("a close request task failed: {e}"),
        })?;
        out[i] = Some(result?);
    }
    Ok(out.into_iter().flatten().collect())
}

/// The bodies of `paths`, read concurrently.
async fn get_all(
    storage: &Arc<dyn Storage>,
    paths: Vec<String>,
) -> Result<Vec<bytes::Bytes>, WriteError> {
    for_all(storage, paths, |s, p| async move { Ok(s.get(&p).await?) }).await
}

/// Every file of `stats` exists with exactly its stated size (checked concurrently; docs/architecture.md,
/// "Exactly-once": only whole files are committed).
async fn verify_all(
    storage: &Arc<dyn Storage>,
    instant: &InstantTime,
    stats: &[crate::table::commit::WriteStat],
) -> Result<(), WriteError> {
    let found = for_all(
        storage,
        stats.iter().map(|s| s.path.clone()).collect(),
        |s, p| async move { Ok(s.head(&p).await?) },
    )
    .await?;
    for (stat, meta) in stats.iter().zip(found) {
        match meta {
            Some(m) if m.size as i64 == stat.file_size_in_bytes => {}
            other => {
                return Err(WriteError::Table {
                    base_path: storage.base_uri().to_string(),
                    reason: format!(
                        "file {} of instant {instant} has size {:?}, expected {}",
                        stat.path,
                        other.map(|m| m.size),
                        stat.file_size_in_bytes
                    ),
                })
            }
        }
    }
    Ok(())
}

/// What the completed commit `done` changed (its stats, and a replacecommit's replaced groups).
async fn completed_write(
    coordinator: &Coordinator,
    timeline: &Timeline,
    done: &Instant,
) -> Result<CompletedWrite, WriteError> {
    coordinator.completed_write(timeline, done).await
}

/// The write-token stage of a data file's name (base or log file): the member that wrote it.
fn writer_stage(file_name: &str) -> Option<u64> {
    if let Ok(base) = crate::table::file_name::BaseFileName::parse(file_name) {
        return base
            .write_token
            .parse::<crate::table::file_name::WriteToken>()
            .ok()
            .map(|t| t.stage_id);
    }
    crate::log_file::LogFileName::parse(file_name)
        .ok()
        .map(|l| l.write_token.stage_id)
}

/// The commit metadata of a window: every accepted contribution's stats, the first one's operation,
/// `schema` (the widest: `commit/schema.rs`), the checkpoint and the window record.
fn window_commit_body(
    resolution: &Resolution,
    record: &WindowRecord,
    schema: Option<&str>,
) -> Result<Bytes, WriteError> {
    let first = resolution.accepted.iter().find(|c| !c.schema.is_empty());
    let operation: OperationType = first
        .map(|c| c.operation.as_str())
        .unwrap_or("UPSERT")
        .parse()?;
    let mut commit = CommitMetadata::new(operation);
    for stat in resolution
        .accepted
        .iter()
        .flat_map(|c| c.write_stats.iter().cloned())
    {
        commit.add_write_stat(stat);
    }
    if let Some(schema) = schema {
        commit.set_schema(schema);
    }
    if !resolution.checkpoint.is_empty() {
        resolution.checkpoint.write_to(&mut commit.extra_metadata)?;
    }
    let record_json = serde_json::to_string(record).map_err(|e| bad_request(e.to_string()))?;
    commit
        .extra_metadata
        .insert(WINDOW_METADATA_KEY.into(), record_json);
    Ok(Bytes::from(commit.to_json_pretty()?))
}

/// A member's answer from its window's record.
pub(crate) fn member_answer(
    instant: &InstantTime,
    record: &WindowRecord,
    checkpoint: &Checkpoint,
    member: &str,
) -> CoordinatorResponse {
    if record.members.contains_key(member) {
        return CoordinatorResponse::WindowCommitted {
            instant: instant.to_string(),
            contributions: record.members.len() as u32,
            excluded: record.excluded.len() as u32,
        };
    }
    CoordinatorResponse::Excluded {
        instant: instant.to_string(),
        reason: record
            .excluded
            .get(member)
            .cloned()
            .unwrap_or_else(|| "not in the window's commit".into()),
        checkpoint: checkpoint.to_sink_json(),
    }
}

#[cfg(test)]
mod tests {
    use super::{next_question, writer_stage};

    #[test]
    fn a_markers_file_names_its_member_by_the_write_token_stage() {
        let stage = crate::write::lease::member_stage("w-1a2b3c4d.7");
        assert!(stage > 0 && stage < (1 << 31));
        assert_eq!(stage, crate::write::lease::member_stage("w-1a2b3c4d.7"));
        assert_ne!(stage, crate::write::lease::member_stage("w-1a2b3c4d.8"));
        let base = format!("00000001-x_3-{stage}-0_20261201000000000.parquet");
        assert_eq!(writer_stage(&base), Some(stage));
        let log = format!(".00000001-x_20261130000000000.log.2_0-{stage}-0");
        assert_eq!(writer_stage(&log), Some(stage));
        assert_eq!(writer_stage("not-a-data-file"), None);
    }

    #[test]
    fn waiting_members_ask_at_the_end_then_at_doubling_intervals_until_exclusion() {
        let end = 10_000;
        let exclude = 70_000;
        assert_eq!(next_question(1_000, end, exclude), end);
        let mut now = end;
        let mut asked = Vec::new();
        while now < exclude {
            now = next_question(now, end, exclude);
            asked.push(now - end);
        }
        assert_eq!(
            asked,
            vec![250, 500, 1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000]
        );
    }
}
