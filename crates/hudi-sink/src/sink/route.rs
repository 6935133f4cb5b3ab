//! Decode and route: where each record of the batch goes.
//!
//! ```text
//! record ─┬ value that decodes      → the decoder's rows (its batch position kept)
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
//! Nothing is dropped here: every record lands in exactly one of the rows, the tombstones or the letters
//! (docs/architecture.md, "Dead letters").

use crate::dead_letter::{DeadLetter, DeadLetterStage};
use crate::record::decode::RecordDecoder;
use crate::source::event::{KafkaBatch, KafkaRecord, Payload};

use super::values::{read_debezium, read_value, Appended, Refusal, Values};

/// The records of a batch, routed.
#[derive(Debug, Default)]
pub(super) struct Routed {
    /// Batch position of each decoded row, in row order.
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
}

/// Routes every record of `batch`, appending the values to `decoder` as `values` reads them. `bucketed`: the
/// table has an index (`hoodie.index.type=BUCKET`), so a tombstone can find its record by key. `movable`: a
/// row can move to another partition (a partition path column outside the record key), so Debezium updates
/// append priors.
pub(super) fn route(
    batch: &KafkaBatch,
    decoder: &mut RecordDecoder,
    values: &Values,
    bucketed: bool,
    movable: bool,
) -> Routed {
    let mut routed = Routed::default();
    for (pos, record) in batch.records.iter().enumerate() {
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
                        Ok(Appended::Row) => routed.positions.push(pos as u64),
                        Ok(Appended::RowAndPrior) => {
                            routed.positions.push(pos as u64);
                            routed.priors.push(routed.positions.len());
                            routed.positions.push(pos as u64);
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
            continue;
        }
        match record.payload() {
            Payload::Undecodable(e) => routed.letters.push(DeadLetter::base64(record, e)),
            Payload::Tombstone => match record.key.as_deref().map(std::str::from_utf8) {
                Some(Ok(key)) if !key.is_empty() && bucketed => {
                    routed.tombstones.push((key.to_string(), pos as u64))
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
            Payload::Value(bytes) => match read_value(values, decoder, record.value_schema.as_ref(), bytes) {
                Ok(()) => routed.positions.push(pos as u64),
                Err(e) => routed
                    .letters
                    .push(DeadLetter::from_decode_error(record, &e)),
            },
        }
    }
    routed
}

/// A dead letter for a tombstone whose key cannot be used.
fn tombstone_letter(record: &KafkaRecord, reason: &str) -> DeadLetter {
    let mut letter = DeadLetter::keyless_tombstone(record);
    letter.stage = DeadLetterStage::Key;
    letter.reason = reason.to_string();
    letter
}
