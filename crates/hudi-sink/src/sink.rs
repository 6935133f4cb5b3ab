//! The writer side of the exactly-once path: one Kafka batch in, one committed instant out.
//!
//! ```text
//! batch ─ drop offsets below the checkpoint ─ decode (bad → dead letters) ─ key, place, fold
//!   ─ Begin ─ heartbeat ─ base files ─ dead letters ─ Commit ─┬ Committed        → done (ESM commits offsets)
//!                                                             ├ Conflict         → Abort, retry, fresh instant
//!                                                             ├ AlreadyCommitted → Abort, re-filter, retry
//!                                                             └ RolledBack       → retry, fresh instant
//! ```
//!
//! Every record of the batch ends in exactly one bucket of [`SinkReport`]: skipped (already committed),
//! written, deduped, deleted, ignored (older than stored), delete miss, or dead-lettered. Dead-lettered
//! records still advance the checkpoint: they are in the dead-letter output, not lost, and never retried
//! forever. A batch whose records are all dead letters still commits (an instant without files) so that the
//! checkpoint moves past them.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::clock::Clock;
use crate::config::write_config::ConfigError;
use crate::commit::{parse_checkpoint, write_heartbeat};
use crate::dead_letter::{DeadLetter, DeadLetterSink, DeadLetterStage};
use crate::protocol::{
    checkpoint_covers, CommitRequest, CoordinatorRequest, CoordinatorResponse, OffsetRange,
    TopicOffsets,
};
use crate::record::decode::JsonDecoder;
use crate::source::event::{KafkaBatch, Payload};
use crate::storage::Storage;
use crate::table::commit::OperationType;
use crate::table::instant::InstantTime;
use crate::table::timeline::Timeline;
use crate::transport::CoordinatorClient;
use crate::write::{TableWriter, WriteCounts, WriteError};

/// `hudi.sink.*` settings of the writer.
#[derive(Debug, Clone)]
pub struct SinkConfig {
    /// `hudi.sink.coordinator.function`: the coordinator Lambda (absent = in-process coordinator).
    pub coordinator_function: Option<String>,
    /// `hudi.sink.dead.letter.path`: where dead letters go (`s3://…` or a directory); when absent,
    /// [`crate::dead_letter::dead_letter_location`] picks the error table's path or the table default.
    pub dead_letter_path: Option<String>,
    /// `hudi.sink.commit.max.attempts`: begin/commit rounds before the invocation fails.
    pub max_attempts: u32,
    /// `hudi.sink.heartbeat.interval.ms`.
    pub heartbeat_interval: Duration,
    /// `hudi.sink.heartbeat.tolerable.misses`: a write is failed after this many missed heartbeats.
    pub heartbeat_tolerable_misses: u32,
    /// `hudi.sink.retry.backoff.ms`: base of the jittered backoff between attempts.
    pub retry_backoff: Duration,
    /// `hudi.sink.deadline.reserve.ms`: time kept free before the invocation deadline; no begin, commit or
    /// retry starts inside it, so the function fails with a clear error instead of being killed mid-step.
    pub deadline_reserve: Duration,
}

impl Default for SinkConfig {
    fn default() -> Self {
        Self {
            coordinator_function: None,
            dead_letter_path: None,
            max_attempts: 5,
            heartbeat_interval: Duration::from_secs(10),
            heartbeat_tolerable_misses: 6,
            retry_backoff: Duration::from_millis(100),
            deadline_reserve: Duration::from_secs(10),
        }
    }
}

const SINK_KEYS: &[&str] = &[
    "hudi.sink.coordinator.function",
    "hudi.sink.dead.letter.path",
    "hudi.sink.commit.max.attempts",
    "hudi.sink.heartbeat.interval.ms",
    "hudi.sink.heartbeat.tolerable.misses",
    "hudi.sink.retry.backoff.ms",
    // Remote-call deadlines, read by `bootstrap::ClientTimeouts`.
    "hudi.sink.aws.connect.timeout.ms",
    "hudi.sink.s3.attempt.timeout.ms",
    "hudi.sink.s3.operation.timeout.ms",
    "hudi.sink.dynamodb.attempt.timeout.ms",
    "hudi.sink.dynamodb.operation.timeout.ms",
    "hudi.sink.coordinator.attempt.timeout.ms",
    "hudi.sink.coordinator.operation.timeout.ms",
    "hudi.sink.deadline.reserve.ms",
];

impl SinkConfig {
    /// Reads the `hudi.sink.*` keys; an unknown one is an error naming it.
    pub fn from_properties(props: &BTreeMap<String, String>) -> Result<Self, ConfigError> {
        let mut c = Self::default();
        for (key, value) in props.iter().filter(|(k, _)| k.starts_with("hudi.sink.")) {
            if !SINK_KEYS.contains(&key.as_str()) {
                return Err(ConfigError::UnknownKey { key: key.clone() });
            }
            let num = |v: &str| -> Result<u64, ConfigError> {
                v.trim().parse::<u64>().map_err(|e| ConfigError::Invalid {
                    key: key.clone(),
                    value: v.to_string(),
                    reason: e.to_string(),
                })
            };
            match key.as_str() {
                "hudi.sink.coordinator.function" => {
                    c.coordinator_function =
                        Some(value.trim().to_string()).filter(|v| !v.is_empty())
                }
                "hudi.sink.dead.letter.path" => {
                    c.dead_letter_path = Some(value.trim().to_string()).filter(|v| !v.is_empty())
                }
                "hudi.sink.commit.max.attempts" => {
                    c.max_attempts = num(value)?.clamp(1, 100) as u32
                }
                "hudi.sink.heartbeat.interval.ms" => {
                    c.heartbeat_interval = Duration::from_millis(num(value)?.max(1))
                }
                "hudi.sink.heartbeat.tolerable.misses" => {
                    c.heartbeat_tolerable_misses = num(value)?.max(1) as u32
                }
                "hudi.sink.retry.backoff.ms" => {
                    c.retry_backoff = Duration::from_millis(num(value)?)
                }
                "hudi.sink.deadline.reserve.ms" => {
                    c.deadline_reserve = Duration::from_millis(num(value)?)
                }
                _ => {}
            }
        }
        Ok(c)
    }

    /// How old a heartbeat may get before its write counts as failed.
    pub fn heartbeat_tolerance(&self) -> Duration {
        self.heartbeat_interval * self.heartbeat_tolerable_misses
    }
}

/// What one batch did. `records_in` = `skipped` + `dead_lettered` + the write counts' records.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct SinkReport {
    /// Records delivered in the batch.
    pub records_in: u64,
    /// Records below the checkpoint (already committed by an earlier delivery).
    pub skipped: u64,
    /// Records that went to the dead-letter output.
    pub dead_lettered: u64,
    /// Accounting of the records that were written.
    pub counts: WriteCounts,
    /// The committed instant, if anything was committed.
    pub instant: Option<String>,
    /// Base files written by the committed instant.
    pub files: u64,
    /// Bytes of those files.
    pub bytes: u64,
    /// Commit attempts that met a conflict.
    pub conflicts: u32,
    /// Attempts beyond the first.
    pub retries: u32,
    /// Round trip of the commit request that committed (lock wait included), milliseconds.
    pub commit_latency_ms: u64,
    /// Time the coordinator waited for the table lock over all requests of the batch, milliseconds.
    pub lock_wait_ms: u64,
    /// Now minus the oldest record timestamp of the delivered batch, milliseconds (how far behind the
    /// stream this invocation is); `None` when no record carried a timestamp.
    pub max_lag_ms: Option<u64>,
}

/// Per-invocation limits of [`KafkaSink::process_with`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcessOptions {
    /// When the invocation will be stopped, epoch milliseconds on the sink's clock (the Lambda context's
    /// deadline). No begin, commit or retry starts within `hudi.sink.deadline.reserve.ms` of it.
    pub deadline_ms: Option<i64>,
}

impl SinkReport {
    /// Whether every record is accounted for exactly once.
    pub fn balanced(&self) -> bool {
        let c = &self.counts;
        self.records_in
            == self.skipped
                + self.dead_lettered
                + c.inserted
                + c.updated
                + c.deleted
                + c.deduped
                + c.ignored_older
                + c.delete_misses
    }
}

/// Writes Kafka batches into one table through a coordinator.
#[derive(Debug)]
pub struct KafkaSink {
    writer: TableWriter,
    coordinator: Arc<dyn CoordinatorClient>,
    dead_letters: Arc<dyn DeadLetterSink>,
    clock: Arc<dyn Clock>,
    config: SinkConfig,
    writer_id: String,
    /// State of the backoff jitter generator; seedable so that a simulation replays the same sleeps.
    jitter: std::sync::atomic::AtomicU64,
}

/// Writes the heartbeat of an instant every interval until dropped.
struct Heartbeat {
    task: tokio::task::JoinHandle<()>,
    /// Content of the newest heartbeat known to be stored (epoch ms).
    last: Arc<std::sync::atomic::AtomicI64>,
}

/// `Heartbeat::last` before any heartbeat is known to be stored.
const NO_HEARTBEAT: i64 = i64::MIN;

impl Heartbeat {
    /// The newest heartbeat known to be stored, for the commit request.
    fn last_stored_ms(&self) -> Option<i64> {
        Some(self.last.load(std::sync::atomic::Ordering::SeqCst)).filter(|ms| *ms != NO_HEARTBEAT)
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// `first` is the heartbeat the coordinator stored with the instant, if it said.
fn heartbeat(
    storage: Arc<dyn Storage>,
    clock: Arc<dyn Clock>,
    instant: InstantTime,
    every: Duration,
    first: Option<i64>,
) -> Heartbeat {
    let last = Arc::new(std::sync::atomic::AtomicI64::new(
        first.unwrap_or(NO_HEARTBEAT),
    ));
    let stored = last.clone();
    let task = tokio::spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            match write_heartbeat(storage.as_ref(), clock.as_ref(), &instant).await {
                Ok(ms) => {
                    stored.fetch_max(ms, std::sync::atomic::Ordering::SeqCst);
                }
                Err(e) => tracing::warn!(%instant, error = %e, "heartbeat failed"),
            }
        }
    });
    Heartbeat { task, last }
}

fn unexpected(request: &'static str, answer: &CoordinatorResponse) -> WriteError {
    WriteError::Protocol {
        request,
        answer: format!("{answer:?}"),
    }
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
        Self {
            writer,
            coordinator,
            dead_letters,
            clock,
            config,
            writer_id: writer_id.into(),
            jitter: std::sync::atomic::AtomicU64::new(uuid::Uuid::new_v4().as_u128() as u64),
        }
    }

    /// Seeds the backoff jitter, so that a deterministic simulation replays the same retry timing.
    pub fn with_jitter_seed(self, seed: u64) -> Self {
        self.jitter
            .store(seed, std::sync::atomic::Ordering::Relaxed);
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

    /// The table writer.
    pub fn writer(&self) -> &TableWriter {
        &self.writer
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
        let oldest = batch
            .records
            .iter()
            .map(|r| r.timestamp_ms)
            .filter(|t| *t > 0)
            .min();
        let (result, lock_wait_ms) =
            crate::telemetry::with_lock_wait(self.process_batch(batch, options)).await;
        let mut report = result?;
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

    async fn process_batch(
        &self,
        mut batch: KafkaBatch,
        options: ProcessOptions,
    ) -> Result<SinkReport, WriteError> {
        let storage = self.writer.storage().clone();
        let records_in = batch.len() as u64;
        let mut skipped = 0u64;
        // The table's checkpoint as this writer sees it; the coordinator re-checks at commit.
        let timeline = Timeline::load(storage.as_ref()).await?;
        if let Some((_, checkpoint)) = timeline.latest_checkpoint(storage.as_ref()).await? {
            if !crate::mutation::is_disabled(crate::mutation::Mutation::CheckpointFilter) {
                skipped += batch.drop_committed(&checkpoint) as u64;
            }
        }
        let mut conflicts = 0;
        let mut attempt = 0;
        // How long the last attempt took: a new one is started only if as much time is left.
        let mut last_attempt = Duration::ZERO;
        loop {
            if batch.is_empty() {
                return Ok(SinkReport {
                    records_in,
                    skipped,
                    ..SinkReport::default()
                });
            }
            self.check_deadline(&options, "begin", last_attempt)?;
            attempt += 1;
            let started = std::time::Instant::now();
            let outcome = self.attempt(&batch, &options, &timeline).await?;
            last_attempt = started.elapsed();
            match outcome {
                Attempt::Done(mut report) => {
                    report.records_in = records_in;
                    report.skipped = skipped;
                    report.conflicts = conflicts;
                    report.retries = attempt - 1;
                    return Ok(report);
                }
                Attempt::Conflict(reason) => {
                    conflicts += 1;
                    tracing::info!(attempt, %reason, "commit conflict; retrying with a fresh instant");
                }
                Attempt::AlreadyCommitted(checkpoint) => {
                    let dropped = batch.drop_committed(&checkpoint) as u64;
                    skipped += dropped;
                    tracing::info!(attempt, dropped, "offsets already committed; re-filtered");
                }
                Attempt::RolledBack(instant) => {
                    tracing::warn!(attempt, %instant, "instant was rolled back (heartbeat expired); retrying");
                }
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

    /// `timeline` is the one the batch loaded for its checkpoint, before the begin.
    async fn attempt(
        &self,
        batch: &KafkaBatch,
        options: &ProcessOptions,
        timeline: &Timeline,
    ) -> Result<Attempt, WriteError> {
        let storage = self.writer.storage().clone();
        let schema = self.writer.schema();
        let mut decoder = JsonDecoder::try_new(schema.data.clone(), &schema.avro)?;
        let mut positions = Vec::new();
        let mut tombstones = Vec::new();
        let mut letters: Vec<DeadLetter> = Vec::new();
        let bucketed = self.writer.config().index != crate::config::write_config::IndexConfig::None;
        for (pos, record) in batch.records.iter().enumerate() {
            match record.payload() {
                Payload::Undecodable(e) => letters.push(DeadLetter::base64(record, e)),
                Payload::Tombstone => match record.key.as_deref().map(std::str::from_utf8) {
                    Some(Ok(key)) if !key.is_empty() && bucketed => {
                        tombstones.push((key.to_string(), pos as u64))
                    }
                    Some(Ok(key)) if !key.is_empty() => letters.push(tombstone_letter(
                        record,
                        "tombstone on a table without an index (hoodie.index.type=BUCKET) cannot find its record",
                    )),
                    Some(Ok(_)) | None => letters.push(DeadLetter::keyless_tombstone(record)),
                    Some(Err(_)) => letters.push(tombstone_letter(
                        record,
                        "tombstone key is not UTF-8, so it cannot name a record key",
                    )),
                },
                Payload::Value(bytes) => match decoder.append(bytes) {
                    Ok(()) => positions.push(pos as u64),
                    Err(e) => letters.push(DeadLetter::from_decode_error(record, &e)),
                },
            }
        }
        let data = decoder.finish()?;
        let operation = self.writer.config().operation;
        let prepared =
            self.writer
                .prepare_records(operation, data, Some(&positions), &tombstones)?;
        for (row, e) in &prepared.rejected {
            if let Some(record) = positions
                .get(*row)
                .and_then(|p| batch.records.get(*p as usize))
            {
                letters.push(DeadLetter::from_key_error(record, e));
            }
        }
        let offsets = offsets_of(batch);

        let begun = self
            .coordinator
            .call(CoordinatorRequest::Begin {
                writer: self.writer_id.clone(),
            })
            .await?;
        let CoordinatorResponse::Begun {
            instant,
            base_instant,
            checkpoint,
            heartbeat_ms,
        } = begun
        else {
            return Err(unexpected("begin", &begun));
        };
        let instant_time = InstantTime::parse(&instant).map_err(crate::table::TableError::from)?;
        // Someone may have committed these offsets since we filtered: give the instant back and re-filter.
        let current = parse_checkpoint(&checkpoint)?;
        if checkpoint_covers(&current, &offsets)
            && !crate::mutation::is_disabled(crate::mutation::Mutation::CheckpointFilter)
        {
            self.abort(&instant).await?;
            return Ok(Attempt::AlreadyCommitted(current));
        }
        let beat = heartbeat(
            storage.clone(),
            self.clock.clone(),
            instant_time.clone(),
            self.config.heartbeat_interval,
            heartbeat_ms,
        );
        // The batch's timeline still shows the table as of the instant's base when its latest commit is that
        // base and nothing but commits is pending (commits complete only in instant order, so none older can
        // complete later): then the write need not list `.hoodie/` again.
        let (stats, counts) = if shows_base(timeline, base_instant.as_deref()) {
            self.writer
                .write_files_with_timeline(&instant_time, &prepared, timeline)
                .await?
        } else {
            self.writer.write_files(&instant_time, &prepared).await?
        };
        let dead_lettered = letters.len() as u64;
        if !letters.is_empty() {
            self.dead_letters.write(&letters).await?;
        }
        let files = stats.len() as u64;
        let bytes = stats
            .iter()
            .map(|s| s.file_size_in_bytes.max(0) as u64)
            .sum();
        let op = match operation {
            crate::config::write_config::WriteOperation::Insert => OperationType::Insert,
            crate::config::write_config::WriteOperation::Upsert => OperationType::Upsert,
            crate::config::write_config::WriteOperation::Delete => OperationType::Delete,
        };
        // Not committing in time is safe (the instant is rolled back once its heartbeat expires), being
        // killed halfway through the commit request is too, but a clear error is better for the operator.
        self.check_deadline(options, "commit", Duration::ZERO)?;
        let commit_started = std::time::Instant::now();
        let answer = self
            .coordinator
            .call(CoordinatorRequest::Commit(CommitRequest {
                instant: instant.clone(),
                base_instant,
                operation: op.as_str().to_string(),
                write_stats: stats,
                schema: schema.avro_json.clone(),
                offsets,
                last_heartbeat_ms: beat.last_stored_ms(),
            }))
            .await?;
        let commit_latency_ms =
            u64::try_from(commit_started.elapsed().as_millis()).unwrap_or(u64::MAX);
        match answer {
            CoordinatorResponse::Committed { instant } => Ok(Attempt::Done(SinkReport {
                dead_lettered,
                counts,
                instant: Some(instant),
                files,
                bytes,
                commit_latency_ms,
                ..SinkReport::default()
            })),
            CoordinatorResponse::Conflict { reason } => {
                self.abort(&instant).await?;
                Ok(Attempt::Conflict(reason))
            }
            CoordinatorResponse::AlreadyCommitted { checkpoint } => {
                self.abort(&instant).await?;
                Ok(Attempt::AlreadyCommitted(parse_checkpoint(&checkpoint)?))
            }
            CoordinatorResponse::RolledBack { instant } => Ok(Attempt::RolledBack(instant)),
            other => Err(unexpected("commit", &other)),
        }
    }

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

/// Whether `timeline` shows the committed table as of `base` (the latest completed instant at begin): same latest
/// commit, and no pending replacecommit or compaction that could complete below it.
fn shows_base(timeline: &Timeline, base: Option<&str>) -> bool {
    timeline.latest_completed().map(|i| i.time.as_str()) == base
        && timeline
            .pending()
            .iter()
            .all(|i| i.action == crate::table::instant::Action::Commit)
}

/// A dead letter for a tombstone whose key cannot be used.
fn tombstone_letter(record: &crate::source::event::KafkaRecord, reason: &str) -> DeadLetter {
    let mut letter = DeadLetter::keyless_tombstone(record);
    letter.stage = DeadLetterStage::Key;
    letter.reason = reason.to_string();
    letter
}

enum Attempt {
    Done(SinkReport),
    Conflict(String),
    AlreadyCommitted(crate::table::commit::Checkpoint),
    RolledBack(String),
}

/// First and last offset per topic-partition of the records left in the batch, grouped by topic.
fn offsets_of(batch: &KafkaBatch) -> Vec<TopicOffsets> {
    let mut by_topic: BTreeMap<String, Vec<OffsetRange>> = BTreeMap::new();
    for r in batch.offset_ranges() {
        by_topic
            .entry(r.topic_partition.topic)
            .or_default()
            .push(OffsetRange {
                partition: r.topic_partition.partition.value(),
                first: r.first.value(),
                last: r.last.value(),
            });
    }
    by_topic
        .into_iter()
        .map(|(topic, ranges)| TopicOffsets { topic, ranges })
        .collect()
}

#[cfg(test)]
mod deadline_tests {
    //! The deadline: which step is refused when, on a manual clock, with a scripted coordinator in front of
    //! a real in-process one (memory storage and lock).

    use std::sync::Mutex;

    use async_trait::async_trait;

    use super::*;
    use crate::clock::ManualClock;
    use crate::config::write_config::WriteConfig;
    use crate::commit::{Coordinator, CoordinatorConfig};
    use crate::dead_letter::StorageDeadLetterSink;
    use crate::lock::{LeaseOptions, MemoryLock};
    use crate::schema::avro::AvroSchema;
    use crate::storage::memory::MemoryStorage;
    use crate::transport::InProcessClient;

    const NOW: i64 = 1_764_412_800_000;
    const SCHEMA: &str = r#"{"type":"record","name":"r","fields":[
        {"name":"id","type":"string"},{"name":"ts","type":"long"}]}"#;

    /// Passes requests to a real coordinator, after moving the clock on `Begin` (a slow write) and, if
    /// asked, answering the first commit with a conflict.
    #[derive(Debug)]
    struct Scripted {
        inner: InProcessClient,
        clock: Arc<ManualClock>,
        advance_on_begin_ms: i64,
        conflict_first_commit: bool,
        seen: Mutex<Vec<&'static str>>,
    }

    #[async_trait]
    impl CoordinatorClient for Scripted {
        async fn call(
            &self,
            request: CoordinatorRequest,
        ) -> Result<CoordinatorResponse, WriteError> {
            let op = match &request {
                CoordinatorRequest::Begin { .. } => "begin",
                CoordinatorRequest::Commit(_) => "commit",
                CoordinatorRequest::Abort { .. } => "abort",
                CoordinatorRequest::Services => "services",
            };
            let first_commit = {
                let mut seen = self.seen.lock().map_err(|e| WriteError::Config {
                    reason: e.to_string(),
                })?;
                seen.push(op);
                op == "commit" && seen.iter().filter(|o| **o == "commit").count() == 1
            };
            if first_commit && self.conflict_first_commit {
                return Ok(CoordinatorResponse::Conflict {
                    reason: "scripted".into(),
                });
            }
            let answer = self.inner.call(request).await;
            if op == "begin" {
                self.clock.advance(self.advance_on_begin_ms);
            }
            answer
        }
    }

    struct Setup {
        sink: KafkaSink,
        storage: Arc<MemoryStorage>,
        client: Arc<Scripted>,
    }

    async fn setup(
        advance_on_begin_ms: i64,
        conflict_first_commit: bool,
        backoff_ms: u64,
    ) -> Setup {
        let clock = Arc::new(ManualClock::new(NOW));
        let storage = Arc::new(MemoryStorage::new("mem://deadline/t"));
        let config = WriteConfig::from_properties_text(
            "hoodie.table.name=t\nhoodie.base.path=mem://deadline/t\n\
             hoodie.datasource.write.recordkey.field=id\n\
             hoodie.datasource.write.precombine.field=ts\n\
             hoodie.index.type=BUCKET\nhoodie.bucket.index.num.buckets=2\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let schema = AvroSchema::parse(SCHEMA).unwrap_or_else(|e| panic!("{e}"));
        let writer =
            TableWriter::create_or_open(storage.clone(), clock.clone(), config, Some(schema))
                .await
                .unwrap_or_else(|e| panic!("{e}"));
        let coordinator = Coordinator::new(
            storage.clone(),
            Arc::new(MemoryLock::new("t", LeaseOptions::default())),
            clock.clone(),
            CoordinatorConfig::default(),
        );
        let client = Arc::new(Scripted {
            inner: InProcessClient::new(coordinator),
            clock: clock.clone(),
            advance_on_begin_ms,
            conflict_first_commit,
            seen: Mutex::new(Vec::new()),
        });
        let config = SinkConfig {
            deadline_reserve: Duration::from_secs(10),
            retry_backoff: Duration::from_millis(backoff_ms),
            ..SinkConfig::default()
        };
        let dead_letters = Arc::new(StorageDeadLetterSink::new(Arc::new(MemoryStorage::new(
            "mem://deadline/dl",
        ))));
        let sink = KafkaSink::new(writer, client.clone(), dead_letters, clock, config, "w");
        Setup {
            sink,
            storage,
            client,
        }
    }

    fn batch() -> KafkaBatch {
        let event = serde_json::json!({
            "eventSource": "SelfManagedKafka",
            "bootstrapServers": "k:9092",
            "records": {"t-0": [
                {"topic": "t", "partition": 0, "offset": 7, "timestamp": NOW - 4_000,
                 "timestampType": "CREATE_TIME", "key": null, "headers": [],
                 "value": "eyJpZCI6ImEiLCJ0cyI6MX0="},
                {"topic": "t", "partition": 0, "offset": 8, "timestamp": NOW - 2_500,
                 "timestampType": "CREATE_TIME", "key": null, "headers": [],
                 "value": "eyJpZCI6ImIiLCJ0cyI6Mn0="}
            ]}
        });
        KafkaBatch::from_value(event).unwrap_or_else(|e| panic!("{e}"))
    }

    async fn completed(storage: &Arc<MemoryStorage>) -> usize {
        Timeline::load(storage.as_ref())
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .completed_commits()
            .len()
    }

    fn seen(client: &Scripted) -> Vec<&'static str> {
        client.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }

    fn until(ms_from_now: i64) -> ProcessOptions {
        ProcessOptions {
            deadline_ms: Some(NOW + ms_from_now),
        }
    }

    #[tokio::test]
    async fn with_time_enough_the_batch_commits_and_reports_its_lag() {
        let s = setup(1_000, false, 1).await;
        let report = s.sink.process_with(batch(), until(60_000)).await;
        let report = report.unwrap_or_else(|e| panic!("{e}"));
        assert!(report.instant.is_some() && report.balanced(), "{report:?}");
        assert_eq!(report.counts.inserted, 2);
        // Oldest record 4 s before NOW, batch finished 1 s after NOW (the clock moved on Begin).
        assert_eq!(report.max_lag_ms, Some(5_000));
        assert_eq!(seen(&s.client), ["begin", "commit"]);
        assert_eq!(completed(&s.storage).await, 1);
        // Without a deadline nothing is checked: a write of 30 s (under the heartbeat tolerance) commits.
        let s = setup(30_000, false, 1).await;
        let report = s
            .sink
            .process(batch())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(report.instant.is_some());
    }

    #[tokio::test]
    async fn no_begin_inside_the_reserve() {
        let s = setup(0, false, 1).await;
        let err = s.sink.process_with(batch(), until(9_999)).await;
        match err {
            Err(WriteError::Deadline {
                step: "begin",
                remaining_ms: 9_999,
                needed_ms: 10_000,
            }) => {}
            other => panic!("{other:?}"),
        }
        assert!(seen(&s.client).is_empty());
        assert_eq!(completed(&s.storage).await, 0);
        // A deadline already passed is refused the same way.
        let err = s.sink.process_with(batch(), until(-5)).await;
        assert!(
            matches!(err, Err(WriteError::Deadline { step: "begin", .. })),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn no_commit_when_the_write_ate_the_time() {
        // The write takes 55 s of a 60 s budget: 5 s left is inside the 10 s reserve.
        let s = setup(55_000, false, 1).await;
        let err = s.sink.process_with(batch(), until(60_000)).await;
        match &err {
            Err(
                e @ WriteError::Deadline {
                    step: "commit",
                    remaining_ms: 5_000,
                    needed_ms: 10_000,
                },
            ) => {
                let text = e.to_string();
                assert!(
                    text.contains("not starting the commit") && text.contains("redelivered"),
                    "{text}"
                );
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(seen(&s.client), ["begin"]);
        assert_eq!(completed(&s.storage).await, 0);
    }

    #[tokio::test]
    async fn no_retry_that_cannot_finish() {
        // The first commit conflicts 3 s into a 15 s budget: the retry would need its backoff (at least
        // half of 2 x 4 s) + the last attempt's duration + the 10 s reserve, more than the 12 s left.
        let s = setup(3_000, true, 4_000).await;
        let err = s.sink.process_with(batch(), until(15_000)).await;
        assert!(
            matches!(err, Err(WriteError::Deadline { step: "retry", .. })),
            "{err:?}"
        );
        assert_eq!(seen(&s.client), ["begin", "commit", "abort"]);
        assert_eq!(completed(&s.storage).await, 0);
        // With time enough the same conflict is retried and committed.
        let s = setup(3_000, true, 1).await;
        let report = s.sink.process_with(batch(), until(600_000)).await;
        let report = report.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((report.conflicts, report.retries), (1, 1));
        assert_eq!(
            seen(&s.client),
            ["begin", "commit", "abort", "begin", "commit"]
        );
        assert_eq!(completed(&s.storage).await, 1);
    }
}
