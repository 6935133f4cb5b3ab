//! Offsets of a batch: the per topic-partition ranges a commit covers, and the exactly-once filter that drops
//! what the table's checkpoint already holds.
//!
//! The checkpoint stores, per topic-partition, the **next** offset to read (docs/architecture.md,
//! "Exactly-once"). A redelivered record (ESM retry, rebalance, ESM update) has an offset below it and is
//! dropped; everything at or above it is kept. Offsets may have gaps (compacted topics, transaction markers, ESM
//! filters), so the rule is "offset ≥ checkpoint", never a count of records, and a gap between the checkpoint and
//! the first offset of a batch is not an error.

use std::fmt;
use std::sync::Arc;

use crate::table::commit::Checkpoint;

use super::event::{KafkaBatch, KafkaRecord};

/// A Kafka offset (position in a partition, ≥ 0 in a parsed batch).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Offset(pub i64);

impl Offset {
    /// The offset as Kafka numbers it.
    pub fn value(self) -> i64 {
        self.0
    }

    /// The offset after this one (what a checkpoint stores once this one is committed); `None` at `i64::MAX`.
    pub fn next(self) -> Option<Offset> {
        self.0.checked_add(1).map(Offset)
    }
}

impl fmt::Display for Offset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A partition number of a topic (≥ 0 in a parsed batch).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PartitionId(pub i32);

impl PartitionId {
    /// The partition number.
    pub fn value(self) -> i32 {
        self.0
    }
}

impl fmt::Display for PartitionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A topic and one of its partitions; displays as the ESM's `<topic>-<partition>`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TopicPartition {
    /// Topic name.
    pub topic: String,
    /// Partition.
    pub partition: PartitionId,
}

impl TopicPartition {
    /// A topic-partition.
    pub fn new(topic: impl Into<String>, partition: i32) -> Self {
        TopicPartition {
            topic: topic.into(),
            partition: PartitionId(partition),
        }
    }

    fn is_of(&self, record: &KafkaRecord) -> bool {
        self.partition.0 == record.partition && *self.topic == *record.topic
    }
}

impl fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

/// The offsets one batch holds for one topic-partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetRange {
    /// Which partition.
    pub topic_partition: TopicPartition,
    /// Lowest offset in the batch.
    pub first: Offset,
    /// Highest offset in the batch.
    pub last: Offset,
    /// Number of records (≤ `last - first + 1`: gaps are allowed).
    pub count: usize,
}

impl OffsetRange {
    /// The checkpoint value once this range is committed: `last + 1`.
    pub fn next_offset(&self) -> Option<Offset> {
        self.last.next()
    }
}

impl fmt::Display for OffsetRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} [{}..={}] ({} records)",
            self.topic_partition, self.first, self.last, self.count
        )
    }
}

/// Per topic-partition offset ranges of records seen one at a time, in order of first appearance (what
/// [`KafkaBatch::offset_ranges`] gives, for a batch whose records come in parts).
///
/// Linear in the records: a parsed batch keeps each partition's records together, so each record is compared
/// with the current range only; a partition seen again later (a batch assembled by hand, a later part) is
/// merged by a lookup over the (few) ranges.
#[derive(Debug, Default)]
pub struct OffsetRanges {
    ranges: Vec<OffsetRange>,
    current: Option<usize>,
}

impl OffsetRanges {
    /// Widens `record`'s range to its offset.
    pub fn add(&mut self, record: &KafkaRecord) {
        let ranges = &mut self.ranges;
        let same = self
            .current
            .and_then(|i| ranges.get(i))
            .is_some_and(|r| r.topic_partition.is_of(record));
        if !same {
            let found = ranges.iter().position(|r| r.topic_partition.is_of(record));
            self.current = Some(found.unwrap_or_else(|| {
                ranges.push(OffsetRange {
                    topic_partition: TopicPartition::new(
                        record.topic.to_string(),
                        record.partition,
                    ),
                    first: Offset(record.offset),
                    last: Offset(record.offset),
                    count: 0,
                });
                ranges.len() - 1
            }));
        }
        if let Some(range) = self.current.and_then(|i| ranges.get_mut(i)) {
            range.first = range.first.min(Offset(record.offset));
            range.last = range.last.max(Offset(record.offset));
            range.count += 1;
        }
    }

    /// The ranges, in order of first appearance.
    pub fn finish(self) -> Vec<OffsetRange> {
        self.ranges
    }
}

/// Whether a record's offset is below the next offset a checkpoint holds for its topic-partition (already
/// committed). `next_offset` is asked once per run of records of the same topic-partition, not once per record.
#[derive(Debug)]
pub struct CommittedFilter<F> {
    next_offset: F,
    run: Option<(Arc<str>, i32, Option<i64>)>,
}

impl<F: Fn(&str, i32) -> Option<i64>> CommittedFilter<F> {
    /// The filter of the checkpoint given as a function `(topic, partition) → next offset`.
    pub fn new(next_offset: F) -> Self {
        Self {
            next_offset,
            run: None,
        }
    }

    /// Whether the checkpoint covers `record`.
    pub fn covers(&mut self, record: &KafkaRecord) -> bool {
        let next = match &self.run {
            Some((topic, partition, next))
                if *partition == record.partition && **topic == *record.topic =>
            {
                *next
            }
            _ => {
                let next = (self.next_offset)(&record.topic, record.partition);
                self.run = Some((record.topic.clone(), record.partition, next));
                next
            }
        };
        next.is_some_and(|n| record.offset < n)
    }
}

impl KafkaBatch {
    /// Per topic-partition offset ranges, in order of first appearance ([`OffsetRanges`]).
    pub fn offset_ranges(&self) -> Vec<OffsetRange> {
        let mut ranges = OffsetRanges::default();
        for record in &self.records {
            ranges.add(record);
        }
        ranges.finish()
    }

    /// Drops the records the table already holds: those whose offset is below the checkpoint's next offset for
    /// their topic-partition. Partitions absent from the checkpoint keep every record. Returns how many were
    /// dropped.
    pub fn drop_committed(&mut self, checkpoint: &Checkpoint) -> usize {
        self.drop_committed_by(|topic, partition| checkpoint.get(topic, partition))
    }

    /// [`KafkaBatch::drop_committed`] with the checkpoint as a function `(topic, partition) → next offset`
    /// ([`CommittedFilter`]).
    pub fn drop_committed_by(&mut self, next_offset: impl Fn(&str, i32) -> Option<i64>) -> usize {
        let before = self.records.len();
        let mut committed = CommittedFilter::new(next_offset);
        self.records.retain(|record| !committed.covers(record));
        let dropped = before - self.records.len();
        if dropped > 0 {
            tracing::debug!(dropped, "dropped records already covered by the checkpoint");
        }
        dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::event::EventSource;

    fn record(topic: &str, partition: i32, offset: i64) -> KafkaRecord {
        KafkaRecord {
            topic: topic.into(),
            partition,
            offset,
            timestamp_ms: 0,
            timestamp_type: None,
            key: None,
            value: Some(bytes::Bytes::from_static(b"{}")),
            headers: Vec::new(),
            raw_key_b64: None,
            raw_value_b64: Some("e30=".into()),
            base64_error: None,
            value_schema: None,
        }
    }

    fn batch(records: Vec<KafkaRecord>) -> KafkaBatch {
        KafkaBatch {
            source: EventSource::SelfManaged {
                bootstrap_servers: "h:9092".into(),
            },
            records,
        }
    }

    fn offsets(b: &KafkaBatch) -> Vec<(String, i32, i64)> {
        b.records
            .iter()
            .map(|r| (r.topic.to_string(), r.partition, r.offset))
            .collect()
    }

    #[test]
    fn ranges_per_topic_partition_with_gaps() {
        let b = batch(vec![
            record("a", 0, 10),
            record("a", 0, 12),
            record("a", 0, 15),
            record("a", 1, 3),
            record("b", 0, 7),
            record("a", 1, 4), // seen again later: merged
        ]);
        let ranges = b.offset_ranges();
        assert_eq!(ranges.len(), 3);
        assert_eq!(ranges[0].topic_partition, TopicPartition::new("a", 0));
        assert_eq!(
            (ranges[0].first, ranges[0].last, ranges[0].count),
            (Offset(10), Offset(15), 3)
        );
        assert_eq!(ranges[0].next_offset(), Some(Offset(16)));
        assert_eq!(
            (ranges[1].first, ranges[1].last, ranges[1].count),
            (Offset(3), Offset(4), 2)
        );
        assert_eq!(ranges[2].to_string(), "b-0 [7..=7] (1 records)");
        assert!(batch(vec![]).offset_ranges().is_empty());
        assert_eq!(Offset(i64::MAX).next(), None);
    }

    #[test]
    fn drop_committed_keeps_offsets_at_or_above_the_checkpoint() {
        let mut b = batch(vec![
            record("a", 0, 10),
            record("a", 0, 12),
            record("a", 0, 15),
            record("a", 1, 3),
            record("b", 0, 7),
            record("b", 0, 8),
        ]);
        let mut cp = Checkpoint::new();
        cp.set("a", 0, 13); // 10, 12 committed; 13, 14 never existed (gap)
        cp.set("a", 1, 3); // nothing committed yet in this batch
        cp.set("b", 0, 100); // checkpoint beyond the batch: all dropped
        assert_eq!(b.drop_committed(&cp), 4);
        assert_eq!(offsets(&b), vec![("a".into(), 0, 15), ("a".into(), 1, 3)]);
        // Partitions without a checkpoint keep everything.
        let mut b = batch(vec![record("c", 0, 0), record("c", 0, 1)]);
        assert_eq!(b.drop_committed(&cp), 0);
        assert_eq!(b.len(), 2);
    }

    #[test]
    fn drop_committed_by_asks_once_per_run() {
        use std::cell::Cell;
        let calls = Cell::new(0);
        let mut b = batch(vec![
            record("a", 0, 1),
            record("a", 0, 2),
            record("a", 0, 3),
            record("a", 1, 1),
            record("a", 1, 2),
        ]);
        let dropped = b.drop_committed_by(|_, p| {
            calls.set(calls.get() + 1);
            Some(if p == 0 { 3 } else { 0 })
        });
        assert_eq!(dropped, 2);
        assert_eq!(calls.get(), 2);
        assert_eq!(
            offsets(&b),
            vec![("a".into(), 0, 3), ("a".into(), 1, 1), ("a".into(), 1, 2)]
        );
    }
}
