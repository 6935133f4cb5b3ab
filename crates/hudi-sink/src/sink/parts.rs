//! Batch parts: a batch read one part at a time, so that only one part's values are in memory while the
//! batch is decoded.
//!
//! ```text
//! parts ─ (JSON or bare Avro: nothing) ─ writer schemas and Connect schemas of every part (values.rs)
//!       ─ part 0, 1, … loaded in turn: checkpoint filter ─ route into one decoder ─ part dropped
//!       ─ rows keyed and folded (prepare.rs) ─ a part loaded again only for a row it cannot key
//! ```
//!
//! A Lambda invocation is one part, already in memory ([`KafkaBatch`] is its own [`BatchParts`]). A backfill of
//! event files gives each file as a part ([`BatchParts::load`] reads and parses it), so that a batch of many
//! files holds its decoded rows but never every file's values at once. The parts of one batch are its records
//! in part order: positions, offsets and the checkpoint filter are over that order, exactly as if the parts
//! were one batch (docs/architecture.md, "The writer-coordinator protocol").

use std::borrow::Cow;

use crate::source::event::KafkaBatch;
use crate::source::offsets::CommittedFilter;
use crate::table::commit::Checkpoint;
use crate::write::WriteError;

/// The records of one batch, as parts loaded one at a time, in delivery order. Every load of a part gives the
/// same records (a part may be loaded more than once: to read its schemas, to decode it, to dead-letter a row
/// it cannot key, and again when the checkpoint moved).
pub trait BatchParts: Send + Sync {
    /// Number of parts.
    fn parts(&self) -> usize;
    /// Part `index` (`< parts()`).
    fn load(&self, index: usize) -> Result<Cow<'_, KafkaBatch>, WriteError>;
    /// Bytes of the batch's payload (what `hudi.sink.backlog.bytes` compares), known without loading.
    fn payload_bytes(&self) -> u64;
}

/// A batch in memory is one part.
impl BatchParts for KafkaBatch {
    fn parts(&self) -> usize {
        1
    }

    fn load(&self, index: usize) -> Result<Cow<'_, KafkaBatch>, WriteError> {
        match index {
            0 => Ok(Cow::Borrowed(self)),
            _ => Err(part_error(index, "a batch in memory has one part")),
        }
    }

    fn payload_bytes(&self) -> u64 {
        KafkaBatch::payload_bytes(self)
    }
}

/// Payloads in memory, each a part of one batch (a backfill's batches, a test's).
impl BatchParts for Vec<KafkaBatch> {
    fn parts(&self) -> usize {
        self.len()
    }

    fn load(&self, index: usize) -> Result<Cow<'_, KafkaBatch>, WriteError> {
        self.get(index)
            .map(Cow::Borrowed)
            .ok_or_else(|| part_error(index, format!("the batch has {} parts", self.len())))
    }

    fn payload_bytes(&self) -> u64 {
        self.iter().map(KafkaBatch::payload_bytes).sum()
    }
}

/// The error of a part that cannot be loaded (the batch fails; nothing of it is written).
pub fn part_error(index: usize, reason: impl std::fmt::Display) -> WriteError {
    WriteError::Config {
        reason: format!("batch part {index}: {reason}"),
    }
}

/// The checkpoint filter of a batch: a record is already committed when one of the checkpoints it is filtered
/// by covers it.
pub(super) fn committed(
    checkpoints: &[Checkpoint],
) -> CommittedFilter<impl Fn(&str, i32) -> Option<i64> + '_> {
    CommittedFilter::new(move |topic, partition| {
        checkpoints
            .iter()
            .filter_map(|c| c.get(topic, partition))
            .max()
    })
}
