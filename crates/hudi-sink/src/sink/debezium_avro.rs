//! Registry-framed Avro Debezium values: told from JSON ones by their framing, read through their writer
//! schemas.
//!
//! ```text
//! value ─┬ valueSchemaMetadata AVRO, or first byte 0 (Confluent) / 3 (Glue) → Avro (below); JSON never starts so
//!        └ anything else                                                   → the JSON forms (record/debezium)
//! ids of the batch ─ fetch (registry/) ─ compile the Envelope (record/debezium/avro.rs) ─ evolve the table
//!                  with its flat schema ─ plan flat schema → table schema, per id
//! ```
//!
//! As for `hudi.sink.value.format=avro`, fetching happens before the write (an unavailable registry fails the
//! invocation), a value whose framing is broken or whose id is unknown is a dead letter of stage `schema`, and
//! a writer schema that is no Debezium record, or a datum that is no change event, one of stage `envelope`.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use crate::record::debezium::{AvroEnvelope, Connector};
use crate::record::decode::{AvroPlan, RecordDecoder};
use crate::registry::{Lookup, SchemaId};
use crate::source::event::{KafkaBatch, Payload, SchemaMetadata};
use crate::write::WriteError;

use super::config::SchemaEvolution;
use super::values::{locate, locate_id, Appended, Refusal};
use super::KafkaSink;

/// How one writer schema's values are read: its compiled envelope and the plan of its flat schema, or the
/// refusal every value naming it gets.
pub(super) type AvroPlans = HashMap<SchemaId, Result<(Arc<AvroEnvelope>, Arc<AvroPlan>), Refused>>;

/// Why the values of a writer schema are not read.
#[derive(Debug, Clone)]
pub(super) enum Refused {
    /// The registry refused the id, or the flat schema cannot be read into the table (stage `schema`).
    Schema(String),
    /// The writer schema is no Debezium record (stage `envelope`).
    Envelope(String),
}

/// Whether a Debezium value is registry-framed Avro: the ESM says so, or its first byte is a registry's
/// magic byte (0 Confluent, 3 Glue), which no JSON text starts with.
pub(super) fn is_avro(metadata: Option<&SchemaMetadata>, value: &[u8]) -> bool {
    match metadata {
        Some(m) => m.data_format.eq_ignore_ascii_case("AVRO"),
        None => matches!(value.first(), Some(0 | 3)),
    }
}

/// Adds the writer schema ids of `batch`'s registry-framed Avro values to `ids`.
pub(super) fn avro_ids(batch: &KafkaBatch, ids: &mut BTreeSet<SchemaId>) {
    ids.extend(batch.records.iter().filter_map(|r| match r.payload() {
        Payload::Value(v) if is_avro(r.value_schema.as_ref(), v) => {
            locate_id(r.value_schema.as_ref(), v).ok()
        }
        _ => None,
    }));
}

impl KafkaSink {
    /// Fetches and compiles the writer schemas `ids` of a batch's Avro values, evolving the table with each flat
    /// schema first (in id order, so that every attempt of the batch evolves it alike).
    pub(super) async fn debezium_avro_plans(
        &self,
        connector: Connector,
        ids: BTreeSet<SchemaId>,
    ) -> Result<AvroPlans, WriteError> {
        let mut plans = HashMap::with_capacity(ids.len());
        if ids.is_empty() {
            return Ok(plans);
        }
        let Some(registry) = &self.registry else {
            return Err(WriteError::Config {
                reason: "registry-framed Avro Debezium values need a registry \
                         (hoodie.streamer.schemaprovider.registry.url for Confluent; Glue needs the `glue` \
                         feature)"
                    .to_string(),
            });
        };
        let found = registry.lookup_all(&ids).await?;
        let mut compiled = Vec::with_capacity(found.len());
        for (id, lookup) in found {
            let envelope = match lookup {
                Lookup::Found(writer) => AvroEnvelope::compile(connector, &writer)
                    .map(Arc::new)
                    .map_err(|e| Refused::Envelope(format!("{id}: {e}"))),
                Lookup::Refused(reason) => Err(Refused::Schema(reason)),
            };
            compiled.push((id, envelope));
        }
        if self.config.schema_evolution == SchemaEvolution::Evolve {
            for (id, envelope) in &compiled {
                let Ok(envelope) = envelope else {
                    continue;
                };
                match self.table()?.evolve_schema(envelope.flat_schema()) {
                    Ok(changes) if changes.is_empty() => {}
                    Ok(changes) => {
                        tracing::info!(schema = %id, ?changes, "Debezium writer schema evolved the table schema")
                    }
                    // As for registry Avro: a flat schema the table cannot read at all makes dead letters;
                    // one it reads but whose change Hudi refuses fails the invocation.
                    Err(WriteError::Evolution(refused)) => {
                        let schema = self.table()?.schema();
                        if self
                            .plan(Some(*id), envelope.flat_schema(), &schema)
                            .is_ok()
                        {
                            return Err(WriteError::Evolution(refused));
                        }
                    }
                    Err(other) => return Err(other),
                }
            }
        }
        let schema = self.table()?.schema();
        for (id, envelope) in compiled {
            let entry = envelope.and_then(|envelope| {
                self.plan(Some(id), envelope.flat_schema(), &schema)
                    .map(|plan| (envelope, plan))
                    .map_err(|reason| {
                        Refused::Schema(format!("{id} cannot be read into the table: {reason}"))
                    })
            });
            plans.insert(id, entry);
        }
        Ok(plans)
    }
}

/// Flattens one registry-framed Avro value and appends its row to `decoder` (and its prior, as
/// `values::read_debezium` does).
pub(super) fn read(
    plans: &AvroPlans,
    decoder: &mut RecordDecoder,
    metadata: Option<&SchemaMetadata>,
    value: &[u8],
    priors: bool,
) -> Result<Appended, Refusal> {
    let schema = |reason: String| Refusal::Decode(RecordDecoder::schema_refusal(reason));
    let framed = locate(metadata, value).map_err(schema)?;
    let (envelope, plan) = match plans.get(&framed.id) {
        Some(Ok(entry)) => entry,
        Some(Err(Refused::Schema(reason))) => return Err(schema(reason.clone())),
        Some(Err(Refused::Envelope(reason))) => {
            return Err(Refusal::Envelope {
                not_json: false,
                reason: reason.clone(),
            })
        }
        None => {
            return Err(schema(format!(
                "{} was not looked up (internal error)",
                framed.id
            )))
        }
    };
    let (row, prior) =
        envelope
            .flatten_rows(&framed.body, priors)
            .map_err(|e| Refusal::Envelope {
                not_json: false,
                reason: e.to_string(),
            })?;
    decoder.append_avro(plan, &row).map_err(Refusal::Decode)?;
    Ok(match prior {
        Some(prior) if decoder.append_avro(plan, &prior).is_ok() => Appended::RowAndPrior,
        _ => Appended::Row,
    })
}
