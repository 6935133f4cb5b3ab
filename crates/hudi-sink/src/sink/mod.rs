//! The writer side of the exactly-once path: one Kafka batch in, one committed instant out.
//!
//! ```text
//! source   KafkaBatch ─ drop offsets below the table's checkpoint
//! prepare  decode and route (route.rs: bad → dead letters) ─ key, place, fold ─ offsets   (prepare.rs, once)
//! attempt  Begin ─ heartbeat ─ base files ─ dead letters ─ Commit ─┬ Committed        → done (ESM commits offsets)
//!  (attempt.rs, per try)                                           ├ Conflict         → Abort, retry, fresh instant
//!                                                                  ├ AlreadyCommitted → Abort, re-filter, prepare
//!                                                                  │                    again, retry
//!                                                                  └ RolledBack       → retry, fresh instant
//! ```
//!
//! A batch is prepared once: a retry after a conflict or a rolled-back instant writes the same preparation
//! with a fresh instant. Only an `AlreadyCommitted` answer changes the batch (the records below the new
//! checkpoint are dropped), and then it is prepared again from the records left. Retries are bounded
//! (`hudi.sink.commit.max.attempts`), spaced by a jittered backoff, and never started inside
//! `hudi.sink.deadline.reserve.ms` of the invocation's deadline (docs/architecture.md, "The
//! writer-coordinator protocol").
//!
//! Every record of the batch ends in exactly one bucket of [`SinkReport`]: skipped (already committed),
//! written, deduped, deleted, ignored (older than stored), delete miss, or dead-lettered. Dead-lettered
//! records still advance the checkpoint: they are in the dead-letter output, not lost, and never retried
//! forever. A batch whose records are all dead letters still commits (an instant without files) so that the
//! checkpoint moves past them.

mod attempt;
pub mod config;
mod connect;
mod debezium_avro;
mod heartbeat;
pub mod kafka_columns;
pub mod parts;
mod prepare;
mod report;
mod route;
#[cfg(test)]
mod tests;
mod values;
mod window;

use std::sync::Arc;
use std::time::Duration;

use crate::clock::Clock;
use crate::dead_letter::DeadLetterSink;
use crate::protocol::TopicOffsets;
use crate::source::event::KafkaBatch;
use crate::table::commit::Checkpoint;
use crate::table::timeline::Timeline;
use crate::transport::CoordinatorClient;
use crate::write::{TableWriter, WriteError};

use attempt::Attempt;
pub use config::{SchemaEvolution, SinkConfig, ValueFormat};
pub use connect::DeferredTable;
pub use parts::BatchParts;
pub use report::{ProcessOptions, SinkReport};

/// Writes Kafka batches into one table through a coordinator.
#[derive(Debug)]
pub struct KafkaSink {
    /// The table's writer; empty until the first batch creates the table (see [`DeferredTable`]).
    writer: tokio::sync::OnceCell<TableWriter>,
    /// How to create the table from the first batch, for a sink started before its table existed.
    deferred: Option<DeferredTable>,
    coordinator: Arc<dyn CoordinatorClient>,
    dead_letters: Arc<dyn DeadLetterSink>,
    clock: Arc<dyn Clock>,
    config: SinkConfig,
    writer_id: String,
    /// State of the backoff jitter generator; seedable so that a simulation replays the same sleeps.
    jitter: std::sync::atomic::AtomicU64,
    /// Window memberships taken so far: each attempt joins under a new member name.
    members: std::sync::atomic::AtomicU64,
    /// This process's part of its member names (random, or from the jitter seed): a writer id may come back
    /// in a new process (a Lambda environment restarts its runtime), whose counter starts again at 0.
    member_nonce: std::sync::atomic::AtomicU32,
    /// Writer schemas of registry-framed Avro values (`None`: JSON values or bare Avro).
    registry: Option<Arc<crate::registry::SchemaRegistry>>,
    /// The registry subject whose latest version is the schema of JSON values (`None`: the schema file).
    latest: Option<Arc<crate::registry::latest::LatestWatch>>,
    /// Avro read plans compiled so far.
    plans: values::PlanCache,
    /// Whether dropped fields of values were warned about (once per process; the metric counts every batch).
    warned_ignored: std::sync::atomic::AtomicBool,
    /// Batches prepared so far (the tests check that a retry reuses its preparation).
    #[cfg(test)]
    preparations: std::sync::atomic::AtomicU32,
}

impl KafkaSink {
    /// A sink writing through `writer` and committing through `coordinator`.
    pub fn new(
        writer: TableWriter,
        coordinator: Arc<dyn CoordinatorClient>,
        dead_letters: Arc<dyn DeadLetterSink>,
        clock: Arc<dyn Clock>,
        config: SinkConfig,
        writer_id: impl Into<String>,
    ) -> Self {
        let writer = tokio::sync::OnceCell::new_with(Some(writer));
        Self::build(
            writer,
            None,
            coordinator,
            dead_letters,
            clock,
            config,
            writer_id,
        )
    }

    fn build(
        writer: tokio::sync::OnceCell<TableWriter>,
        deferred: Option<DeferredTable>,
        coordinator: Arc<dyn CoordinatorClient>,
        dead_letters: Arc<dyn DeadLetterSink>,
        clock: Arc<dyn Clock>,
        config: SinkConfig,
        writer_id: impl Into<String>,
    ) -> Self {
        Self {
            writer,
            deferred,
            coordinator,
            dead_letters,
            clock,
            config,
            writer_id: writer_id.into(),
            jitter: std::sync::atomic::AtomicU64::new(uuid::Uuid::new_v4().as_u128() as u64),
            members: std::sync::atomic::AtomicU64::new(0),
            member_nonce: std::sync::atomic::AtomicU32::new(uuid::Uuid::new_v4().as_u128() as u32),
            registry: None,
            latest: None,
            plans: Default::default(),
            warned_ignored: std::sync::atomic::AtomicBool::new(false),
            #[cfg(test)]
            preparations: std::sync::atomic::AtomicU32::new(0),
        }
    }

    /// What followed this table's commits since the last call, once: the catalog sync and the failed commit
    /// steps and inline services, when the coordinator runs in this process (else empty: the coordinator
    /// function prints its own). For the writer's metrics.
    pub fn take_after_commit_report(&self) -> crate::commit::AfterCommitReport {
        self.coordinator.take_after_commit_report()
    }

    /// Seeds the backoff jitter, so that a deterministic simulation replays the same retry timing.
    pub fn with_jitter_seed(self, seed: u64) -> Self {
        self.jitter
            .store(seed, std::sync::atomic::Ordering::Relaxed);
        self.member_nonce.store(
            (seed >> 32) as u32 ^ seed as u32,
            std::sync::atomic::Ordering::Relaxed,
        );
        self
    }

    /// Reads registry-framed Avro values with the writer schemas `registry` fetches.
    pub fn with_registry(mut self, registry: Arc<crate::registry::SchemaRegistry>) -> Self {
        self.registry = Some(registry);
        self
    }

    /// JSON values take their schema from this registry subject's latest version, asked for at most once
    /// per `hudi.sink.schema.registry.refresh.ms`; a new version evolves the table schema before the batch
    /// is decoded.
    pub fn with_latest_schema(mut self, watch: Arc<crate::registry::latest::LatestWatch>) -> Self {
        self.latest = Some(watch);
        self
    }

    /// The next jitter value (SplitMix64 over the seeded state).
    fn next_jitter(&self) -> u64 {
        let state = self
            .jitter
            .fetch_add(0x9E37_79B9_7F4A_7C15, std::sync::atomic::Ordering::Relaxed)
            .wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A sink whose table does not exist yet: the first batch creates it (a Debezium table without a schema
    /// file or registry, whose columns come from the Connect schema its values carry).
    pub fn deferred(
        table: DeferredTable,
        coordinator: Arc<dyn CoordinatorClient>,
        dead_letters: Arc<dyn DeadLetterSink>,
        clock: Arc<dyn Clock>,
        config: SinkConfig,
        writer_id: impl Into<String>,
    ) -> Self {
        let writer = tokio::sync::OnceCell::new();
        Self::build(
            writer,
            Some(table),
            coordinator,
            dead_letters,
            clock,
            config,
            writer_id,
        )
    }

    /// The table writer (`None` while a deferred table is not created yet).
    pub fn writer(&self) -> Option<&TableWriter> {
        self.writer.get()
    }

    /// The table writer, or the error of a deferred table not created yet.
    fn table(&self) -> Result<&TableWriter, WriteError> {
        self.writer.get().ok_or_else(|| WriteError::Config {
            reason: "the table is not created yet (internal error: the batch creates it first)"
                .into(),
        })
    }

    /// Writes one batch exactly once. Returns only after the commit is durable (or when nothing was left to
    /// write); any error means the batch must be redelivered, which is always safe.
    pub async fn process(&self, batch: KafkaBatch) -> Result<SinkReport, WriteError> {
        self.process_with(batch, ProcessOptions::default()).await
    }

    /// [`process`](Self::process) within the limits of `options`: with a deadline, a step that could not
    /// finish in time is not started and the batch fails with [`WriteError::Deadline`] instead.
    pub async fn process_with(
        &self,
        batch: KafkaBatch,
        options: ProcessOptions,
    ) -> Result<SinkReport, WriteError> {
        self.process_parts(&batch, options).await
    }

    /// [`process_with`](Self::process_with) for a batch read one part at a time (`parts.rs`): only one
    /// part's values are in memory at once.
    pub async fn process_parts(
        &self,
        parts: &dyn BatchParts,
        mut options: ProcessOptions,
    ) -> Result<SinkReport, WriteError> {
        if self.config.backlog_bytes > 0 && !options.backlog {
            options.backlog = parts.payload_bytes() >= self.config.backlog_bytes;
        }
        let (result, lock_wait_ms) =
            crate::telemetry::with_lock_wait(self.process_batch(parts, options)).await;
        let (mut report, oldest) = result?;
        report.lock_wait_ms = lock_wait_ms;
        report.max_lag_ms =
            oldest.map(|t| u64::try_from(self.clock.now_millis().saturating_sub(t)).unwrap_or(0));
        Ok(report)
    }

    /// Fails with [`WriteError::Deadline`] when fewer than `needed` (plus the reserve) milliseconds are left.
    fn check_deadline(
        &self,
        options: &ProcessOptions,
        step: &'static str,
        needed: Duration,
    ) -> Result<(), WriteError> {
        let Some(deadline) = options.deadline_ms else {
            return Ok(());
        };
        let remaining_ms = deadline.saturating_sub(self.clock.now_millis());
        let needed_ms =
            u64::try_from((needed + self.config.deadline_reserve).as_millis()).unwrap_or(u64::MAX);
        if remaining_ms < 0 || (remaining_ms as u64) < needed_ms {
            return Err(WriteError::Deadline {
                step,
                remaining_ms,
                needed_ms,
            });
        }
        Ok(())
    }

    /// The batch loop: source (what the table's checkpoint covers is left out), prepare once, then attempts
    /// until one commits, the attempts run out or the deadline comes near. Returns the report and the oldest
    /// record timestamp of the batch.
    async fn process_batch(
        &self,
        parts: &dyn BatchParts,
        options: ProcessOptions,
    ) -> Result<(SinkReport, Option<i64>), WriteError> {
        let storage = self.open_deferred(parts).await?.storage().clone();
        // The checkpoints the batch is filtered by: the table's as this writer sees it (the coordinator
        // re-checks at commit), then each newer one an attempt was refused with.
        let mut checkpoints = Vec::new();
        // The same listing shows the open window of the interval commit.
        let listed = storage.list(crate::table::timeline::META_DIR).await?;
        let mut timeline =
            Timeline::from_listing(&listed).map_err(crate::table::TableError::from)?;
        let windowed = !self.config.commit_interval.is_zero();
        let mut seen = if windowed {
            crate::commit::window::open_window(&listed, &timeline)
        } else {
            None
        };
        // Under the interval commit the window's checkpoint comes with the join (one read less per batch).
        if !windowed {
            if let Some((_, checkpoint)) = timeline.latest_checkpoint(storage.as_ref()).await? {
                if !crate::mutation::is_disabled(crate::mutation::Mutation::CheckpointFilter) {
                    checkpoints.push(checkpoint);
                }
            }
        }
        // Writer schemas are settled before anything is written: an unavailable registry fails here.
        let values = self.values_of(parts).await?;
        let mut conflicts = 0;
        let mut attempt = 0;
        let mut slot_waits = 0;
        // How long the last attempt took: a new one is started only if as much time is left.
        let mut last_attempt = Duration::ZERO;
        // The batch made ready to write; `None` until the first attempt, and again once the checkpoint moved
        // past some of its records.
        let mut prepared: Option<prepare::Prepared> = None;
        loop {
            let started = std::time::Instant::now();
            let ready = match prepared.take() {
                Some(ready) => ready,
                None => self.prepare(parts, &values, &checkpoints)?,
            };
            let (records_in, skipped, oldest) =
                (ready.records_in, ready.committed, ready.oldest_ms);
            if ready.is_empty() {
                let report = SinkReport {
                    records_in,
                    skipped,
                    ..SinkReport::default()
                };
                return Ok((report, oldest));
            }
            self.check_deadline(&options, "begin", last_attempt)?;
            attempt += 1;
            let outcome = if windowed {
                self.attempt_window(
                    &ready,
                    &options,
                    &timeline,
                    seen.take().as_ref(),
                    &mut slot_waits,
                )
                .await?
            } else {
                self.attempt(&ready, &options, &timeline).await?
            };
            last_attempt = started.elapsed();
            let look_again = match &outcome {
                Attempt::Conflict(reason) => {
                    crate::commit::conflict::is_planned_by_compaction(reason)
                }
                _ => false,
            };
            match outcome {
                Attempt::Done(mut report) => {
                    report.records_in = records_in;
                    report.skipped = skipped;
                    report.conflicts = conflicts;
                    report.retries = attempt - 1;
                    report.slot_waits = slot_waits;
                    return Ok((report, oldest));
                }
                Attempt::Conflict(reason) => {
                    conflicts += 1;
                    prepared = Some(ready);
                    tracing::info!(attempt, %reason, "commit conflict; retrying with a fresh instant");
                }
                Attempt::AlreadyCommitted(checkpoint) => {
                    // The preparation holds records the new checkpoint covers: prepare the rest again.
                    let moved = covers_some(&checkpoint, &ready.offsets);
                    if moved {
                        checkpoints.push(checkpoint);
                    } else {
                        prepared = Some(ready);
                    }
                    tracing::info!(attempt, moved, "offsets already committed; re-filtered");
                }
                Attempt::RolledBack(instant) => {
                    prepared = Some(ready);
                    tracing::warn!(
                        attempt,
                        %instant,
                        "instant was rolled back (its heartbeat expired, or its window committed nothing); retrying"
                    );
                }
            }
            // The next attempt looks at the table again when what refused this one need not move the base a
            // stale timeline is checked against: another engine's compaction planned meanwhile.
            if look_again {
                timeline = Timeline::load(storage.as_ref())
                    .await
                    .map_err(crate::table::TableError::from)?;
            }
            if attempt >= self.config.max_attempts {
                return Err(WriteError::Table {
                    base_path: storage.base_uri().to_string(),
                    reason: format!(
                        "gave up after {attempt} commit attempts ({conflicts} conflicts)"
                    ),
                });
            }
            // Jittered exponential backoff so that competing writers do not collide again in lockstep.
            let base = self.config.retry_backoff.as_millis() as u64 * (1u64 << attempt.min(6));
            let jitter = self.next_jitter() % (base + 1);
            let backoff = Duration::from_millis(base / 2 + jitter / 2);
            self.check_deadline(&options, "retry", backoff + last_attempt)?;
            tokio::time::sleep(backoff).await;
        }
    }
}

/// Whether `checkpoint` covers an offset of `offsets` (a preparation holding them must be made again).
fn covers_some(checkpoint: &Checkpoint, offsets: &[TopicOffsets]) -> bool {
    offsets.iter().any(|t| {
        t.ranges.iter().any(|r| {
            checkpoint
                .get(&t.topic, r.partition)
                .is_some_and(|next| r.first < next)
        })
    })
}
