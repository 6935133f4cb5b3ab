//! Decode and route: where each record of the batch goes.
//!
//! ```text
//! record ─┬ below a checkpoint      → counted as already committed, nothing else
//!         ├ value that decodes      → the decoder's rows (its batch position kept)
//!         ├ value that does not     → dead letter (stage not_json, not_object, decode, not_avro, schema)
//!         ├ undecodable base64      → dead letter (stage base64)
//!         ├ tombstone with a key    → delete by key (bucket index), else dead letter (stage key)
//!         ├ tombstone without a key → dead letter
//!         └ debezium: tombstone     → skipped (the `op=d` event before it deleted the row); a value that
//!                                     is no change event → dead letter (stage envelope or not_json; an
//!                                     Avro value whose framing or schema id fails: stage schema); an
//!                                     update with a before row → its row, then that row as a delete
//!                                     (a prior: written only if it names another partition)
//! ```
//!
//! Nothing is dropped here: every record lands in exactly one of the rows, the tombstones, the letters or the
//! count of those already committed (docs/architecture.md, "Dead letters").

use crate::dead_letter::{DeadLetter, DeadLetterStage};
use crate::record::decode::RecordDecoder;
use crate::source::event::{KafkaBatch, KafkaRecord, Payload};
use crate::source::offsets::{CommittedFilter, OffsetRanges};

use super::kafka_columns::KafkaRow;

use super::values::{read_debezium, read_value, Appended, Refusal, Values};

/// The records of a batch, routed, part after part.
#[derive(Debug, Default)]
pub(super) struct Routed {
    /// Batch position of each decoded row, in row order (over all parts: a part's first record follows the
    /// previous part's last).
    pub positions: Vec<u64>,
    /// Rows that delete the before image of the row above them (Debezium updates with a before row):
    /// `TableWriter::prepare_records` writes one only when it names another partition.
    pub priors: Vec<usize>,
    /// Record key and batch position of each tombstone that deletes by key.
    pub tombstones: Vec<(String, u64)>,
    /// Records that cannot be written.
    pub letters: Vec<DeadLetter>,
    /// Debezium tombstones: the delete event before each one deleted the row, so they write nothing.
    pub skipped: u64,
    /// Records of the batch, in every part.
    pub records: u64,
    /// Records the checkpoint covers (already committed): not routed.
    pub committed: u64,
    /// The Kafka columns of each decoded row (`hoodie.streamer.source.kafka.append.offsets`; else empty).
    pub kafka_rows: Vec<KafkaRow>,
    /// First and last offset per topic-partition of the records routed (those the checkpoint does not cover).
    pub offsets: OffsetRanges,
    /// The oldest record timestamp of the batch (> 0), epoch milliseconds.
    pub oldest_ms: Option<i64>,
}

/// How the records of a batch are routed (what the table and settings ask of them).
#[derive(Debug, Clone, Copy)]
pub(super) struct RouteRules {
    /// The table has an index (`hoodie.index.type=BUCKET`), so a tombstone can find its record by key.
    pub bucketed: bool,
    /// A row can move to another partition (a partition path column outside the record key), so Debezium
    /// updates append priors.
    pub movable: bool,
    /// The rows carry the Kafka columns.
    pub kafka_columns: bool,
}

/// Routes every record of `part` (whose first record has batch position `base`) that `committed` does not
/// cover, appending the values to `decoder` as `values` reads them.
pub(super) fn route(
    routed: &mut Routed,
    part: &KafkaBatch,
    base: u64,
    committed: &mut CommittedFilter<impl Fn(&str, i32) -> Option<i64>>,
    decoder: &mut RecordDecoder,
    values: &Values,
    rules: RouteRules,
) {
    let RouteRules {
        bucketed,
        movable,
        kafka_columns,
    } = rules;
    for (index, record) in part.records.iter().enumerate() {
        routed.records += 1;
        if record.timestamp_ms > 0 {
            routed.oldest_ms = Some(
                routed
                    .oldest_ms
                    .map_or(record.timestamp_ms, |t| t.min(record.timestamp_ms)),
            );
        }
        if committed.covers(record) {
            routed.committed += 1;
            continue;
        }
        routed.offsets.add(record);
        let pos = base + index as u64;
        let rows_before = routed.positions.len();
        route_record(routed, record, pos, decoder, values, bucketed, movable);
        if kafka_columns {
            for _ in rows_before..routed.positions.len() {
                routed.kafka_rows.push(KafkaRow::of(record));
            }
        }
    }
}

/// Routes one record (batch position `pos`).
fn route_record(
    routed: &mut Routed,
    record: &KafkaRecord,
    pos: u64,
    decoder: &mut RecordDecoder,
    values: &Values,
    bucketed: bool,
    movable: bool,
) {
    if values.is_debezium() {
        match record.payload() {
            Payload::Tombstone => routed.skipped += 1,
            Payload::Undecodable(e) => routed.letters.push(DeadLetter::base64(record, e)),
            Payload::Value(bytes) => {
                match read_debezium(
                    values,
                    decoder,
                    record.value_schema.as_ref(),
                    bytes,
                    movable,
                ) {
                    Ok(Appended::Row) => routed.positions.push(pos),
                    Ok(Appended::RowAndPrior) => {
                        routed.positions.push(pos);
                        routed.priors.push(routed.positions.len());
                        routed.positions.push(pos);
                    }
                    Ok(Appended::Nothing) => routed.skipped += 1,
                    Err(Refusal::Envelope { not_json, reason }) => routed
                        .letters
                        .push(DeadLetter::envelope(record, not_json, reason)),
                    Err(Refusal::Decode(e)) => routed
                        .letters
                        .push(DeadLetter::from_decode_error(record, &e)),
                }
            }
        }
        return;
    }
    match record.payload() {
        Payload::Undecodable(e) => routed.letters.push(DeadLetter::base64(record, e)),
        Payload::Tombstone => match record.key.as_deref().map(std::str::from_utf8) {
            Some(Ok(key)) if !key.is_empty() && bucketed => {
                routed.tombstones.push((key.to_string(), pos))
            }
            Some(Ok(key)) if !key.is_empty() => routed.letters.push(tombstone_letter(
                record,
                "tombstone on a table without an index (hoodie.index.type=BUCKET) cannot find its record",
            )),
            Some(Ok(_)) | None => routed.letters.push(DeadLetter::keyless_tombstone(record)),
            Some(Err(_)) => routed.letters.push(tombstone_letter(
                record,
                "tombstone key is not UTF-8, so it cannot name a record key",
            )),
        },
        Payload::Value(bytes) => {
            match read_value(values, decoder, record.value_schema.as_ref(), bytes) {
                Ok(()) => routed.positions.push(pos),
                Err(e) => routed
                    .letters
                    .push(DeadLetter::from_decode_error(record, &e)),
            }
        }
    }
}

/// A dead letter for a tombstone whose key cannot be used.
fn tombstone_letter(record: &KafkaRecord, reason: &str) -> DeadLetter {
    let mut letter = DeadLetter::keyless_tombstone(record);
    letter.stage = DeadLetterStage::Key;
    letter.reason = reason.to_string();
    letter
}
