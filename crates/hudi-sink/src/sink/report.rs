//! What one batch did, and the limits of one invocation.
//!
//! Every record of the batch ends in exactly one bucket of [`SinkReport`] (docs/architecture.md, "Dead
//! letters"): skipped (already committed), written, deduped, deleted, ignored (older than stored), delete
//! miss, dead-lettered, or a Debezium tombstone (the delete event before it did the delete).

use crate::write::WriteCounts;

/// What one batch did. `records_in` = `skipped` + `dead_lettered` + `tombstones_skipped` + the write
/// counts' records − the rows moved to another partition (each wrote a delete besides its row).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct SinkReport {
    /// Records delivered in the batch.
    pub records_in: u64,
    /// Records below the checkpoint (already committed by an earlier delivery).
    pub skipped: u64,
    /// Records that went to the dead-letter output.
    pub dead_lettered: u64,
    /// `hudi.sink.value.format=debezium`: tombstones, which write nothing (the delete event before each
    /// one deleted the row), so that a delete is counted once.
    pub tombstones_skipped: u64,
    /// Fields of written values that the table schema lacks, dropped: JSON members and Avro writer fields
    /// (a producer ahead of the table under `pinned`, or writing to the wrong table).
    pub ignored_fields: u64,
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
    /// Interval commit: milliseconds from the submit of the contribution to seeing it committed.
    pub window_wait_ms: Option<u64>,
    /// Interval commit: how many contributions the window's commit took.
    pub contributions_per_instant: Option<u32>,
    /// Interval commit: how many members the window's commit left out.
    pub excluded_members: Option<u32>,
    /// Interval commit: how many times a join was told to wait for the next interval slot (each a sleep).
    pub slot_waits: u32,
    /// Now minus the oldest record timestamp of the delivered batch, milliseconds (how far behind the
    /// stream this invocation is); `None` when no record carried a timestamp.
    pub max_lag_ms: Option<u64>,
}

/// Per-invocation limits of [`KafkaSink::process_with`](super::KafkaSink::process_with).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcessOptions {
    /// When the invocation will be stopped, epoch milliseconds on the sink's clock (the Lambda context's
    /// deadline). No begin, commit or retry starts within `hudi.sink.deadline.reserve.ms` of it.
    pub deadline_ms: Option<i64>,
    /// More records are ready behind this batch (a backfill; a full event-source batch). Under the interval
    /// commit such a batch does not wait for the next interval slot: the interval bounds how often small
    /// batches commit, not how fast a backlog is read.
    pub backlog: bool,
}

impl SinkReport {
    /// Adds `r`'s counts to these (a total over batches or tables); the instant becomes `r`'s if it has one.
    pub fn absorb(&mut self, r: &SinkReport) {
        self.records_in += r.records_in;
        self.skipped += r.skipped;
        self.dead_lettered += r.dead_lettered;
        self.tombstones_skipped += r.tombstones_skipped;
        self.ignored_fields += r.ignored_fields;
        self.counts.records_in += r.counts.records_in;
        self.counts.inserted += r.counts.inserted;
        self.counts.updated += r.counts.updated;
        self.counts.deleted += r.counts.deleted;
        self.counts.deduped += r.counts.deduped;
        self.counts.ignored_older += r.counts.ignored_older;
        self.counts.delete_misses += r.counts.delete_misses;
        self.counts.moved += r.counts.moved;
        self.files += r.files;
        self.bytes += r.bytes;
        self.conflicts += r.conflicts;
        self.retries += r.retries;
        self.slot_waits += r.slot_waits;
        self.lock_wait_ms += r.lock_wait_ms;
        if r.instant.is_some() {
            self.instant.clone_from(&r.instant);
        }
    }

    /// Whether every record is accounted for exactly once (a row moved to another partition counts twice
    /// in the write counts: its row and the delete of its older partition's version).
    pub fn balanced(&self) -> bool {
        let c = &self.counts;
        self.records_in + c.moved
            == self.skipped
                + self.dead_lettered
                + self.tombstones_skipped
                + c.inserted
                + c.updated
                + c.deleted
                + c.deduped
                + c.ignored_older
                + c.delete_misses
    }
}
