//! The Kafka side: one event source mapping (ESM) invocation as a [`KafkaBatch`], its offsets, and the
//! exactly-once filter against the table's checkpoint.
//!
//! ```text
//!  payload bytes ──KafkaBatch::from_slice──▶ KafkaBatch { source, records }
//!        │                                      │ drop_committed(&Checkpoint)   (redelivery ⇒ no duplicates)
//!        │ EventError: the invocation fails     │ offset_ranges()               (what the commit will cover)
//!        ▼                                      ▼ record.payload()              (Value | Tombstone | Undecodable)
//! ```
//!
//! Two kinds of failure, never mixed up (docs/architecture.md, "Dead letters"):
//! - **Envelope** problems ([`EventError`]): the payload is not JSON, not a Kafka event, a required field is
//!   missing or has the wrong type, a `topic-partition` key disagrees with its records, or offsets go backwards.
//!   Nothing of such a payload can be trusted, so the whole invocation fails (the ESM retries it).
//! - **Record** problems: a key or value whose base64 does not decode stays in the batch as
//!   [`Payload::Undecodable`] (with its original base64 text) so that it becomes a dead letter; it never fails
//!   the batch and is never dropped.
//!
//! Invariants of a parsed [`KafkaBatch`]: records appear in delivery order (the event's `records` entries in
//! document order, each entry's array in order); within one topic-partition offsets strictly increase (gaps
//! allowed: compaction, transaction markers, ESM filters); partitions and offsets are ≥ 0; timestamps are the exact
//! JSON integers (no floating point on the way, unlike `aws_lambda_events`' `MillisecondTimestamp`).

pub mod event;
pub mod offsets;

pub use event::{
    Base64Error, EventError, EventSource, KafkaBatch, KafkaRecord, Payload, RecordPart,
    TimestampType,
};
pub use offsets::{Offset, OffsetRange, PartitionId, TopicPartition};
