//! Prepare: a batch made ready to write, once per batch (docs/architecture.md, "The writer-coordinator
//! protocol").
//!
//! ```text
//! records ─ decode and route (route.rs) ─ key, partition path, fold per key (TableWriter::prepare_records)
//!   ─ key errors → dead letters ─ offsets per topic-partition
//! ```
//!
//! The result depends on the batch's records and the writer's schema and settings only, never on the
//! instant, so every attempt of the batch writes the same preparation. Only dropping records (the
//! checkpoint moved past some of them) calls for preparing again.

use std::collections::BTreeMap;

use crate::dead_letter::DeadLetter;
use crate::protocol::{OffsetRange, TopicOffsets};
use crate::record::decode::RecordDecoder;
use crate::source::event::KafkaBatch;
use crate::write::{PreparedWrite, WriteError};

use super::route::route;
use super::values::Values;
use super::KafkaSink;

/// A batch ready to write: the rows folded per key, its dead letters and the offsets it consumes.
#[derive(Debug)]
pub(super) struct Prepared {
    /// What the table writer writes.
    pub write: PreparedWrite,
    /// Records that cannot be written (stored before the commit).
    pub letters: Vec<DeadLetter>,
    /// First and last offset per topic-partition of the batch's records.
    pub offsets: Vec<TopicOffsets>,
    /// Fields of the batch's values that the table schema lacks, dropped (`RecordDecoder::ignored_fields`).
    pub ignored_fields: u64,
    /// Debezium tombstones, which write nothing.
    pub tombstones_skipped: u64,
}

impl KafkaSink {
    /// Decodes (as `values` says), routes, keys and folds the records of `batch`.
    pub(super) fn prepare(
        &self,
        batch: &KafkaBatch,
        values: &Values,
    ) -> Result<Prepared, WriteError> {
        #[cfg(test)]
        self.preparations
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let schema = &values.schema;
        let mut decoder = RecordDecoder::try_new(schema.data.clone(), &schema.avro)?;
        let config = self.table()?.config();
        let bucketed = config.index != crate::write::IndexConfig::None;
        let movable = !config.partition_fields_outside_key().is_empty();
        let routed = route(batch, &mut decoder, values, bucketed, movable);
        let mut letters = routed.letters;
        let ignored_fields = decoder.ignored_fields();
        if ignored_fields > 0
            && !self
                .warned_ignored
                .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            tracing::warn!(
                ignored_fields,
                "values carry fields the table schema lacks: they are dropped (counted in IgnoredFields; \
                 warned once)"
            );
        }
        let mut data = decoder.finish()?;
        if self.config.append_kafka_columns {
            data = super::kafka_columns::fill(data, &batch.records, &routed.positions)?;
        }
        let operation = self.table()?.config().operation;
        let write = self.table()?.prepare_records(
            operation,
            data,
            Some(&routed.positions),
            &routed.tombstones,
            &routed.priors,
        )?;
        for (row, e) in &write.rejected {
            if let Some(record) = routed
                .positions
                .get(*row)
                .and_then(|p| batch.records.get(*p as usize))
            {
                letters.push(DeadLetter::from_key_error(record, e));
            }
        }
        Ok(Prepared {
            write,
            letters,
            offsets: offsets_of(batch),
            ignored_fields,
            tombstones_skipped: routed.skipped,
        })
    }
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
impl KafkaSink {
    /// How many times a batch was prepared.
    pub(super) fn preparations(&self) -> u32 {
        self.preparations.load(std::sync::atomic::Ordering::Relaxed)
    }
}
