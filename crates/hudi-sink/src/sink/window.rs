//! One attempt of a prepared batch under the interval commit: the member's side of `join`, `submit` and
//! `close` (docs/architecture.md, "Interval commit"; the coordinator's side is `commit/window`).
//!
//! ```text
//! Join ─┬ Waiting{next slot} → sleep, Join again (never with a backlog: `ProcessOptions::backlog`)
//!       └ Joined{t, base, checkpoint, end, lease}
//!   ─ checkpoint covers the offsets? → withdraw, AlreadyCommitted
//!   ─ heartbeat of t ─ markers, files (each upload checks the lease) ─ dead letters
//!   ─ Submit ─┬ WindowCommitted          → Done
//!             ├ Excluded                 → AlreadyCommitted (offsets covered) or Conflict (retry)
//!             ├ RolledBack               → RolledBack (retry)
//!             └ Waiting{until} → sleep until then, Close ─ (the same answers)
//! ```
//!
//! Waiting reads the window's commit file once about one write's time after the submit (the other members
//! joined about as early and write about as long), then at doubling gaps up to the time the coordinator
//! named, when it asks the coordinator again (which closes the window if it is due); never a tight loop;
//! a wait that would run into the invocation's deadline fails the batch instead (it is redelivered, and a
//! contribution that was committed meanwhile is found in the checkpoint).

use std::time::Duration;

use crate::commit::parse_checkpoint;
use crate::commit::window::member_name;
use crate::protocol::{
    checkpoint_covers, Contribution, CoordinatorRequest, CoordinatorResponse, JoinRequest,
    SubmitRequest,
};
use crate::table::instant::InstantTime;
use crate::table::timeline::Timeline;
use crate::write::lease::{with_lease, Lease};
use crate::write::WriteError;

use super::attempt::{operation_of, shows_base, unexpected, Attempt};
use super::heartbeat::heartbeat;
use super::prepare::Prepared;
use super::{KafkaSink, ProcessOptions, SinkReport};

/// The earliest first look for the window's commit after the submit: about what a close takes (a dozen
/// requests and the lock).
const FIRST_LOOK: Duration = Duration::from_millis(250);

/// A window this member joined.
struct Joined {
    instant: String,
    time: InstantTime,
    base_instant: Option<String>,
    checkpoint: String,
    end_ms: i64,
    lease_ms: i64,
    /// Opened for a backlog: no join grace at the close.
    backlog: bool,
    /// When the join was answered.
    at: tokio::time::Instant,
}

impl Joined {
    /// When the window's missing members are excluded: the lease's margin once more after the lease.
    fn exclude_ms(&self) -> i64 {
        self.lease_ms + (self.lease_ms - self.end_ms)
    }
}

/// A write that outlived its lease is too late for its window: the window's close excludes this member and
/// deletes its files (by their markers), and the batch is written again in a later window, like a conflict.
/// Any other error fails the batch.
fn lease_expired(e: WriteError) -> Result<Attempt, WriteError> {
    match e {
        WriteError::LeaseExpired { instant, lease_ms } => Ok(Attempt::Conflict(format!(
            "the lease of window {instant} ended at {lease_ms} before this member submitted"
        ))),
        other => Err(other),
    }
}

impl KafkaSink {
    /// Writes `prepared` as a member of the open window (`seen`: the one the batch's listing showed).
    pub(super) async fn attempt_window(
        &self,
        prepared: &Prepared,
        options: &ProcessOptions,
        timeline: &Timeline,
        seen: Option<&InstantTime>,
        slot_waits: &mut u32,
    ) -> Result<Attempt, WriteError> {
        let nonce = self.member_nonce.load(std::sync::atomic::Ordering::Relaxed);
        let member = member_name(
            &format!("{}-{nonce:08x}", self.writer_id),
            self.members
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        );
        let joined = match self
            .join(&member, seen, &prepared.offsets, options, slot_waits)
            .await?
        {
            Ok(joined) => joined,
            Err(covered) => return Ok(Attempt::AlreadyCommitted(covered)),
        };
        let current = parse_checkpoint(&joined.checkpoint)?;
        if checkpoint_covers(&current, &prepared.offsets)
            && !crate::mutation::is_disabled(crate::mutation::Mutation::CheckpointFilter)
        {
            // Leave with an empty contribution, so that the window does not wait for this member.
            let empty = self.contribution(&member, Vec::new(), Vec::new())?;
            self.coordinator
                .call(CoordinatorRequest::Submit(SubmitRequest {
                    instant: joined.instant.clone(),
                    end_ms: joined.end_ms,
                    exclude_ms: joined.exclude_ms(),
                    interval_ms: self.interval_ms(),
                    backlog: joined.backlog,
                    contribution: empty,
                }))
                .await?;
            return Ok(Attempt::AlreadyCommitted(current));
        }
        let _beat = heartbeat(
            self.table()?.storage().clone(),
            self.clock.clone(),
            joined.time.clone(),
            self.config.heartbeat_interval,
            None,
        );
        let lease = Lease::new(
            self.clock.clone(),
            joined.instant.clone(),
            joined.lease_ms,
            &member,
        );
        let write = async {
            if shows_base(timeline, joined.base_instant.as_deref()) {
                self.table()?
                    .write_files_with_timeline(&joined.time, &prepared.write, timeline)
                    .await
            } else {
                self.table()?
                    .write_files(&joined.time, &prepared.write)
                    .await
            }
        };
        let (stats, counts) = match with_lease(lease.clone(), write).await {
            Ok(written) => written,
            Err(e) => return lease_expired(e),
        };
        let report = self.store_letters(prepared, counts, &stats).await?;
        // A contribution submitted after the lease could name files the close already deleted.
        if let Err(e) = lease.check() {
            return lease_expired(e);
        }
        let contribution = self.contribution(&member, stats, prepared.offsets.clone())?;
        // The other members joined about when this one did and write about as long: the first look for the
        // commit comes that long after the submit, then at doubling gaps, up to the coordinator's time.
        let mut gap = joined.at.elapsed().max(FIRST_LOOK);
        let submitted = std::time::Instant::now();
        let submitted_ms = self.clock.now_millis();
        let mut answer = self
            .coordinator
            .call(CoordinatorRequest::Submit(SubmitRequest {
                instant: joined.instant.clone(),
                end_ms: joined.end_ms,
                exclude_ms: joined.exclude_ms(),
                interval_ms: self.interval_ms(),
                backlog: joined.backlog,
                contribution,
            }))
            .await?;
        loop {
            match answer {
                CoordinatorResponse::WindowCommitted {
                    instant,
                    contributions,
                    excluded,
                } => {
                    let waited = self.clock.now_millis().saturating_sub(submitted_ms);
                    return Ok(Attempt::Done(SinkReport {
                        instant: Some(instant),
                        commit_latency_ms: u64::try_from(submitted.elapsed().as_millis())
                            .unwrap_or(u64::MAX),
                        window_wait_ms: Some(u64::try_from(waited).unwrap_or(0)),
                        contributions_per_instant: Some(contributions),
                        excluded_members: Some(excluded),
                        ..report
                    }));
                }
                CoordinatorResponse::Excluded {
                    reason, checkpoint, ..
                } => {
                    let checkpoint = parse_checkpoint(&checkpoint)?;
                    if checkpoint_covers(&checkpoint, &prepared.offsets) {
                        return Ok(Attempt::AlreadyCommitted(checkpoint));
                    }
                    return Ok(Attempt::Conflict(reason));
                }
                CoordinatorResponse::RolledBack { instant } => {
                    return Ok(Attempt::RolledBack(instant))
                }
                CoordinatorResponse::Waiting { until_ms, .. } => {
                    let soon = self
                        .clock
                        .now_millis()
                        .saturating_add(i64::try_from(gap.as_millis()).unwrap_or(i64::MAX));
                    let next = soon.min(until_ms);
                    self.sleep_until(options, "window wait", next).await?;
                    answer = match self.read_window_commit(&joined.time, &member).await? {
                        Some(settled) => settled,
                        // Not yet, and not the coordinator's time yet: look again later.
                        None if next < until_ms => {
                            gap *= 2;
                            CoordinatorResponse::Waiting {
                                instant: joined.instant.clone(),
                                until_ms,
                            }
                        }
                        None => {
                            self.coordinator
                                .call(CoordinatorRequest::Close {
                                    instant: joined.instant.clone(),
                                    member: member.clone(),
                                })
                                .await?
                        }
                    };
                }
                other => return Err(unexpected("submit", &other)),
            }
        }
    }

    /// Joins the open window, waiting for the next slot when this one's window has closed; `Err` with the
    /// checkpoint when it covers `offsets` already.
    async fn join(
        &self,
        member: &str,
        seen: Option<&InstantTime>,
        offsets: &[crate::protocol::TopicOffsets],
        options: &ProcessOptions,
        slot_waits: &mut u32,
    ) -> Result<Result<Joined, crate::table::commit::Checkpoint>, WriteError> {
        let mut seen = seen.map(|t| t.to_string());
        loop {
            let answer = self
                .coordinator
                .call(CoordinatorRequest::Join(JoinRequest {
                    writer: self.writer_id.clone(),
                    member: member.to_string(),
                    interval_ms: self.interval_ms(),
                    seen: seen.take(),
                    offsets: offsets.to_vec(),
                    backlog: options.backlog,
                }))
                .await?;
            match answer {
                CoordinatorResponse::Joined {
                    instant,
                    base_instant,
                    checkpoint,
                    end_ms,
                    lease_ms,
                    backlog,
                } => {
                    let time =
                        InstantTime::parse(&instant).map_err(crate::table::TableError::from)?;
                    return Ok(Ok(Joined {
                        instant,
                        time,
                        base_instant,
                        checkpoint,
                        end_ms,
                        lease_ms,
                        backlog,
                        at: tokio::time::Instant::now(),
                    }));
                }
                CoordinatorResponse::Waiting { until_ms, .. } => {
                    *slot_waits += 1;
                    // The writers waiting for a slot spread their wake-ups over the window's join grace (a
                    // tenth of the interval, at most 500 ms), so that the first opens the window and the others
                    // find it without queueing for the lock, yet all join before the first can close it.
                    let spread =
                        u64::try_from(crate::commit::window::join_grace_ms(self.interval_ms()))
                            .unwrap_or(1)
                            .max(1);
                    let jitter = i64::try_from(self.next_jitter() % spread).unwrap_or(0);
                    self.sleep_until(options, "join", until_ms + jitter).await?;
                }
                CoordinatorResponse::AlreadyCommitted { checkpoint } => {
                    return Ok(Err(parse_checkpoint(&checkpoint)?));
                }
                other => return Err(unexpected("join", &other)),
            }
        }
    }

    /// The member's answer from the window's commit file when it exists (one read; the writer's view keeps
    /// the metadata, so that the next batch does not read it again); `None` while it does not.
    async fn read_window_commit(
        &self,
        time: &InstantTime,
        member: &str,
    ) -> Result<Option<CoordinatorResponse>, WriteError> {
        let action = self.table()?.properties().write_action();
        let file = format!(
            ".hoodie/{}",
            crate::table::instant::Instant::new(
                time.clone(),
                action,
                crate::table::instant::State::Completed
            )
            .file_name()
        );
        let bytes = match self.table()?.storage().get(&file).await {
            Ok(bytes) => bytes,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let meta = crate::table::commit::CommitMetadata::from_json(&bytes)
            .map_err(crate::table::TableError::from)?;
        let record = crate::commit::window::WindowRecord::from_extra_metadata(&meta.extra_metadata)
            .unwrap_or_default();
        let checkpoint =
            crate::table::commit::Checkpoint::from_extra_metadata(&meta.extra_metadata, None)
                .map_err(crate::table::TableError::from)?
                .unwrap_or_default();
        let answer = crate::commit::window::member_answer(time, &record, &checkpoint, member);
        self.table()?.prime_commit(time.clone(), meta).await;
        Ok(Some(answer))
    }

    /// `hudi.sink.commit.interval.ms`, at least 1.
    fn interval_ms(&self) -> u64 {
        u64::try_from(self.config.commit_interval.as_millis())
            .unwrap_or(u64::MAX)
            .max(1)
    }

    fn contribution(
        &self,
        member: &str,
        write_stats: Vec<crate::table::commit::WriteStat>,
        offsets: Vec<crate::protocol::TopicOffsets>,
    ) -> Result<Contribution, WriteError> {
        let table = self.table()?;
        Ok(Contribution {
            member: member.to_string(),
            operation: operation_of(table.config().operation).as_str().to_string(),
            write_stats,
            schema: table.schema().avro_json.clone(),
            offsets,
        })
    }

    /// Sleeps until `until_ms` on the sink's clock, unless that runs into the invocation's deadline.
    async fn sleep_until(
        &self,
        options: &ProcessOptions,
        step: &'static str,
        until_ms: i64,
    ) -> Result<(), WriteError> {
        let wait = Duration::from_millis(
            u64::try_from(until_ms.saturating_sub(self.clock.now_millis())).unwrap_or(0),
        );
        self.check_deadline(options, step, wait)?;
        tokio::time::sleep(wait).await;
        Ok(())
    }
}
