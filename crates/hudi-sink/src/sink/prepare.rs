//! Prepare: a batch made ready to write, once per batch (docs/architecture.md, "The writer-coordinator
//! protocol").
//!
//! ```text
//! records ─ decode and route (route.rs) ─ key, partition path, fold per key (TableWriter::prepare_records)
//!   ─ key errors → dead letters ─ offsets per topic-partition
//! ```
//!
//! The result depends on the batch's records, the checkpoint it is prepared against and the writer's schema
//! and settings only, never on the instant, so every attempt of the batch writes the same preparation. Only a
//! checkpoint that moved past some of its records calls for preparing again. The parts of the batch
//! (`parts.rs`) are decoded one after the other into one decoder.

use std::collections::BTreeMap;

use crate::dead_letter::DeadLetter;
use crate::protocol::{OffsetRange, TopicOffsets};
use crate::record::decode::RecordDecoder;
use crate::record::keygen::KeyError;
use crate::table::commit::Checkpoint;
use crate::write::{PreparedWrite, WriteError};

use super::parts::{committed, BatchParts};
use super::route::{route, RouteRules, Routed};
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
    /// Records of the batch, in every part.
    pub records_in: u64,
    /// Records the checkpoint the batch was prepared against covers: not prepared.
    pub committed: u64,
    /// The oldest record timestamp of the batch (> 0), epoch milliseconds.
    pub oldest_ms: Option<i64>,
}

impl Prepared {
    /// Whether the checkpoint covers every record (nothing is left to write).
    pub fn is_empty(&self) -> bool {
        self.committed == self.records_in
    }
}

impl KafkaSink {
    /// Decodes (as `values` says), routes, keys and folds the records of `parts` that no checkpoint of
    /// `checkpoints` covers, one part in memory at a time.
    pub(super) fn prepare(
        &self,
        parts: &dyn BatchParts,
        values: &Values,
        checkpoints: &[Checkpoint],
    ) -> Result<Prepared, WriteError> {
        #[cfg(test)]
        self.preparations
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let schema = &values.schema;
        let mut decoder = RecordDecoder::try_new(schema.data.clone(), &schema.avro)?;
        let config = self.table()?.config();
        let rules = RouteRules {
            bucketed: config.index != crate::write::IndexConfig::None,
            movable: !config.partition_fields_outside_key().is_empty(),
            kafka_columns: self.config.append_kafka_columns,
        };
        let mut routed = Routed::default();
        let mut committed = committed(checkpoints);
        // Batch position of each part's first record.
        let mut bases = Vec::with_capacity(parts.parts());
        for index in 0..parts.parts() {
            let part = parts.load(index)?;
            // Each part numbered from 0 under this switch.
            let base = match crate::mutation::is_disabled(crate::mutation::Mutation::PartPositions)
            {
                true => 0,
                false => routed.records,
            };
            bases.push(base);
            route(
                &mut routed,
                &part,
                base,
                &mut committed,
                &mut decoder,
                values,
                rules,
            );
        }
        let mut letters = std::mem::take(&mut routed.letters);
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
        if rules.kafka_columns {
            data = super::kafka_columns::fill(data, &std::mem::take(&mut routed.kafka_rows))?;
        }
        let operation = self.table()?.config().operation;
        let write = self.table()?.prepare_records(
            operation,
            data,
            Some(&routed.positions),
            &routed.tombstones,
            &routed.priors,
        )?;
        letters.extend(key_letters(
            parts,
            &bases,
            &routed.positions,
            &write.rejected,
        )?);
        Ok(Prepared {
            write,
            letters,
            offsets: offsets_of(routed.offsets.finish()),
            ignored_fields,
            tombstones_skipped: routed.skipped,
            records_in: routed.records,
            committed: routed.committed,
            oldest_ms: routed.oldest_ms,
        })
    }
}

/// The dead letters of the rows that cannot be keyed: each part that holds one is loaded again (rows are
/// rarely refused, so a batch of parts keeps none of its values for them).
fn key_letters(
    parts: &dyn BatchParts,
    bases: &[u64],
    positions: &[u64],
    rejected: &[(usize, KeyError)],
) -> Result<Vec<DeadLetter>, WriteError> {
    let mut by_part: BTreeMap<usize, Vec<(u64, &KeyError)>> = BTreeMap::new();
    for (row, e) in rejected {
        let Some(&pos) = positions.get(*row) else {
            continue;
        };
        // The last part whose first record is at or before the position.
        let part = bases.partition_point(|b| *b <= pos).saturating_sub(1);
        by_part.entry(part).or_default().push((pos, e));
    }
    let mut letters = Vec::new();
    for (index, rows) in by_part {
        let part = parts.load(index)?;
        let base = bases.get(index).copied().unwrap_or(0);
        for (pos, e) in rows {
            if let Some(record) = pos
                .checked_sub(base)
                .and_then(|i| usize::try_from(i).ok())
                .and_then(|i| part.records.get(i))
            {
                letters.push(DeadLetter::from_key_error(record, e));
            }
        }
    }
    Ok(letters)
}

/// First and last offset per topic-partition of the records routed, grouped by topic.
fn offsets_of(ranges: Vec<crate::source::offsets::OffsetRange>) -> Vec<TopicOffsets> {
    let mut by_topic: BTreeMap<String, Vec<OffsetRange>> = BTreeMap::new();
    for r in ranges {
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
