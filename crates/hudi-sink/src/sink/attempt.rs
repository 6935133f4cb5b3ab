//! One attempt to write and commit a prepared batch: the writer's side of `begin` and `commit`.
//!
//! ```text
//! Begin ─ checkpoint covers the offsets? → Abort, AlreadyCommitted
//!   ─ heartbeat ─ markers, base files ─ dead letters ─ Commit ─┬ Committed        → Done
//!                                                              ├ Conflict         → Abort, Conflict
//!                                                              ├ AlreadyCommitted → Abort, AlreadyCommitted
//!                                                              └ RolledBack       → RolledBack
//! ```
//!
//! An attempt holds no lock: the coordinator takes it for each request. Its instant is given back (`abort`)
//! whenever it will not be committed, so that nothing of it survives; a rolled-back one is gone already.

use std::time::Duration;

use crate::commit::parse_checkpoint;
use crate::protocol::{checkpoint_covers, CommitRequest, CoordinatorRequest, CoordinatorResponse};
use crate::table::commit::{Checkpoint, OperationType};
use crate::table::instant::InstantTime;
use crate::table::timeline::Timeline;
use crate::write::WriteError;

use super::heartbeat::heartbeat;
use super::prepare::Prepared;
use super::{KafkaSink, ProcessOptions, SinkReport};

/// How an attempt ended.
pub(super) enum Attempt {
    /// Committed: the report of the attempt (the batch fills in the rest).
    Done(SinkReport),
    /// The coordinator refused the commit for a conflict (the reason it gave); the instant was aborted.
    Conflict(String),
    /// The table's checkpoint already covers some of the offsets; the instant was aborted.
    AlreadyCommitted(Checkpoint),
    /// The instant was rolled back (its heartbeat expired).
    RolledBack(String),
}

/// An instant the coordinator began.
struct Begun {
    instant: String,
    time: InstantTime,
    base_instant: Option<String>,
    pending: Vec<String>,
    checkpoint: String,
    heartbeat_ms: Option<i64>,
}

pub(super) fn unexpected(request: &'static str, answer: &CoordinatorResponse) -> WriteError {
    WriteError::Protocol {
        request,
        answer: format!("{answer:?}"),
    }
}

impl KafkaSink {
    /// Writes and commits `prepared` with a fresh instant. `timeline` is the one the batch loaded for its
    /// checkpoint, before the begin.
    pub(super) async fn attempt(
        &self,
        prepared: &Prepared,
        options: &ProcessOptions,
        timeline: &Timeline,
    ) -> Result<Attempt, WriteError> {
        let begun = self.begin().await?;
        // Someone may have committed these offsets since we filtered: give the instant back and re-filter.
        let current = parse_checkpoint(&begun.checkpoint)?;
        if checkpoint_covers(&current, &prepared.offsets)
            && !crate::mutation::is_disabled(crate::mutation::Mutation::CheckpointFilter)
        {
            self.abort(&begun.instant).await?;
            return Ok(Attempt::AlreadyCommitted(current));
        }
        let beat = heartbeat(
            self.table()?.storage().clone(),
            self.clock.clone(),
            begun.time.clone(),
            self.config.heartbeat_interval,
            begun.heartbeat_ms,
        );
        // The batch's timeline still shows the table as of the instant's base when its latest commit is that
        // base and nothing but newer writes is pending: then the write need not list `.hoodie/` again.
        let (stats, counts) = if shows_base(timeline, begun.base_instant.as_deref()) {
            self.table()?
                .write_files_with_timeline(&begun.time, &prepared.write, timeline)
                .await?
        } else {
            self.table()?
                .write_files(&begun.time, &prepared.write)
                .await?
        };
        let report = self.store_letters(prepared, counts, &stats).await?;
        let op = operation_of(self.table()?.config().operation);
        // Not committing in time is safe (the instant is rolled back once its heartbeat expires), being
        // killed halfway through the commit request is too, but a clear error is better for the operator.
        self.check_deadline(options, "commit", Duration::ZERO)?;
        let commit_started = std::time::Instant::now();
        let answer = self
            .coordinator
            .call(CoordinatorRequest::Commit(CommitRequest {
                instant: begun.instant.clone(),
                base_instant: begun.base_instant,
                pending: begun.pending,
                operation: op.as_str().to_string(),
                write_stats: stats,
                schema: self.table()?.schema().avro_json.clone(),
                offsets: prepared.offsets.clone(),
                last_heartbeat_ms: beat.last_stored_ms(),
            }))
            .await?;
        let commit_latency_ms =
            u64::try_from(commit_started.elapsed().as_millis()).unwrap_or(u64::MAX);
        match answer {
            CoordinatorResponse::Committed { instant } => Ok(Attempt::Done(SinkReport {
                instant: Some(instant),
                commit_latency_ms,
                ..report
            })),
            CoordinatorResponse::Conflict { reason } => {
                self.abort(&begun.instant).await?;
                Ok(Attempt::Conflict(reason))
            }
            CoordinatorResponse::AlreadyCommitted { checkpoint } => {
                self.abort(&begun.instant).await?;
                Ok(Attempt::AlreadyCommitted(parse_checkpoint(&checkpoint)?))
            }
            CoordinatorResponse::RolledBack { instant } => Ok(Attempt::RolledBack(instant)),
            other => Err(unexpected("commit", &other)),
        }
    }

    /// Stores the batch's dead letters (before the commit) and reports what the attempt wrote.
    pub(super) async fn store_letters(
        &self,
        prepared: &Prepared,
        counts: crate::write::WriteCounts,
        stats: &[crate::table::commit::WriteStat],
    ) -> Result<SinkReport, WriteError> {
        if !prepared.letters.is_empty() {
            self.dead_letters.write(&prepared.letters).await?;
        }
        Ok(SinkReport {
            dead_lettered: prepared.letters.len() as u64,
            tombstones_skipped: prepared.tombstones_skipped,
            ignored_fields: prepared.ignored_fields,
            counts,
            files: stats.len() as u64,
            bytes: stats
                .iter()
                .map(|s| s.file_size_in_bytes.max(0) as u64)
                .sum(),
            ..SinkReport::default()
        })
    }

    /// Asks the coordinator for a new instant.
    async fn begin(&self) -> Result<Begun, WriteError> {
        let answer = self
            .coordinator
            .call(CoordinatorRequest::Begin {
                writer: self.writer_id.clone(),
            })
            .await?;
        let CoordinatorResponse::Begun {
            instant,
            base_instant,
            pending,
            checkpoint,
            heartbeat_ms,
        } = answer
        else {
            return Err(unexpected("begin", &answer));
        };
        let time = InstantTime::parse(&instant).map_err(crate::table::TableError::from)?;
        Ok(Begun {
            instant,
            time,
            base_instant,
            pending,
            checkpoint,
            heartbeat_ms,
        })
    }

    /// Gives `instant` back: the coordinator rolls it back now.
    async fn abort(&self, instant: &str) -> Result<(), WriteError> {
        match self
            .coordinator
            .call(CoordinatorRequest::Abort {
                instant: instant.to_string(),
            })
            .await?
        {
            CoordinatorResponse::Done => Ok(()),
            other => Err(unexpected("abort", &other)),
        }
    }
}

/// The Hudi operation type of a write operation.
pub(super) fn operation_of(operation: crate::write::WriteOperation) -> OperationType {
    match operation {
        crate::write::WriteOperation::Insert => OperationType::Insert,
        crate::write::WriteOperation::Upsert => OperationType::Upsert,
        crate::write::WriteOperation::Delete => OperationType::Delete,
    }
}

/// Whether `timeline` shows the committed table as of `base` (the instant's base at begin): same latest
/// commit and nothing but writes pending, none of them older than the base: one may have completed since,
/// below the base (after a newer compaction, `commit/conflict.rs` `writer_base`, or another engine's write,
/// which completes out of instant order).
pub(super) fn shows_base(timeline: &Timeline, base: Option<&str>) -> bool {
    timeline.latest_completed().map(|i| i.time.as_str()) == base
        && timeline
            .pending()
            .iter()
            .all(|i| i.action.is_write() && base.is_none_or(|b| i.time.as_str() > b))
}
