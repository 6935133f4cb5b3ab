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
use crate::coordinator::{parse_checkpoint, write_heartbeat};
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
    /// `hudi.sink.dead.letter.path`: where dead letters go (`s3://…` or a directory).
    pub dead_letter_path: Option<String>,
    /// `hudi.sink.commit.max.attempts`: begin/commit rounds before the invocation fails.
    pub max_attempts: u32,
    /// `hudi.sink.heartbeat.interval.ms`.
    pub heartbeat_interval: Duration,
    /// `hudi.sink.heartbeat.tolerable.misses`: a write is failed after this many missed heartbeats.
    pub heartbeat_tolerable_misses: u32,
    /// `hudi.sink.retry.backoff.ms`: base of the jittered backoff between attempts.
    pub retry_backoff: Duration,
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
}

/// Writes the heartbeat of an instant every interval until dropped.
struct Heartbeat(tokio::task::JoinHandle<()>);

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn heartbeat(
    storage: Arc<dyn Storage>,
    clock: Arc<dyn Clock>,
    instant: InstantTime,
    every: Duration,
) -> Heartbeat {
    Heartbeat(tokio::spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            if let Err(e) = write_heartbeat(storage.as_ref(), clock.as_ref(), &instant).await {
                tracing::warn!(%instant, error = %e, "heartbeat failed");
            }
        }
    }))
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
        }
    }

    /// The table writer.
    pub fn writer(&self) -> &TableWriter {
        &self.writer
    }

    /// Writes one batch exactly once. Returns only after the commit is durable (or when nothing was left to
    /// write); any error means the batch must be redelivered, which is always safe.
    pub async fn process(&self, mut batch: KafkaBatch) -> Result<SinkReport, WriteError> {
        let storage = self.writer.storage().clone();
        let records_in = batch.len() as u64;
        let mut skipped = 0u64;
        // The table's checkpoint as this writer sees it; the coordinator re-checks at commit.
        let timeline = Timeline::load(storage.as_ref()).await?;
        if let Some((_, checkpoint)) = timeline.latest_checkpoint(storage.as_ref()).await? {
            skipped += batch.drop_committed(&checkpoint) as u64;
        }
        let mut conflicts = 0;
        let mut attempt = 0;
        loop {
            if batch.is_empty() {
                return Ok(SinkReport {
                    records_in,
                    skipped,
                    ..SinkReport::default()
                });
            }
            attempt += 1;
            match self.attempt(&batch).await? {
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
            let jitter = (uuid::Uuid::new_v4().as_u128() % (base as u128 + 1)) as u64;
            tokio::time::sleep(Duration::from_millis(base / 2 + jitter / 2)).await;
        }
    }

    async fn attempt(&self, batch: &KafkaBatch) -> Result<Attempt, WriteError> {
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
        } = begun
        else {
            return Err(unexpected("begin", &begun));
        };
        let instant_time = InstantTime::parse(&instant).map_err(crate::table::TableError::from)?;
        // Someone may have committed these offsets since we filtered: give the instant back and re-filter.
        let current = parse_checkpoint(&checkpoint)?;
        if checkpoint_covers(&current, &offsets) {
            self.abort(&instant).await?;
            return Ok(Attempt::AlreadyCommitted(current));
        }
        let _beat = heartbeat(
            storage.clone(),
            self.clock.clone(),
            instant_time.clone(),
            self.config.heartbeat_interval,
        );
        let (stats, counts) = self.writer.write_files(&instant_time, &prepared).await?;
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
        let answer = self
            .coordinator
            .call(CoordinatorRequest::Commit(CommitRequest {
                instant: instant.clone(),
                base_instant,
                operation: op.as_str().to_string(),
                write_stats: stats,
                schema: schema.avro_json.clone(),
                offsets,
            }))
            .await?;
        match answer {
            CoordinatorResponse::Committed { instant } => Ok(Attempt::Done(SinkReport {
                dead_lettered,
                counts,
                instant: Some(instant),
                files,
                bytes,
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
