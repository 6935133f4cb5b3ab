//! Values: how a batch's record values are read, settled before anything is decoded.
//!
//! ```text
//! json             → the JSON reader
//! avro, registry   → unframe every value (or read the ESM's valueSchemaMetadata, framing already removed)
//!                    ─ fetch unknown writer schemas (registry/) ─ plan per schema id
//! avro, none       → one plan: the table schema as the writer schema
//! ```
//!
//! Registry fetches happen here, before the write: an unavailable registry fails the invocation (nothing is
//! written, the batch is redelivered), while a value whose framing is broken or whose schema id is unknown
//! or does not resolve becomes a dead letter in [`read_value`]. Plans are compiled once per schema id and
//! kept for the life of the sink.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use crate::record::decode::{AvroPlan, RecordDecodeError, RecordDecoder};
use crate::registry::{schema_id, unframe, Framed, Lookup, SchemaId};
use crate::source::event::{KafkaBatch, Payload, SchemaMetadata};
use crate::write::WriteError;

use super::config::ValueFormat;
use super::KafkaSink;

/// How this batch's values are read.
#[derive(Debug)]
pub(super) enum Values {
    /// JSON objects.
    Json,
    /// Registry-framed Avro: the plan, or why none can be made, per writer schema id of the batch.
    Registry(HashMap<SchemaId, Result<Arc<AvroPlan>, String>>),
    /// Bare Avro written with the table schema.
    Bare(Arc<AvroPlan>),
}

/// The sink's compiled plans, per writer schema id (and the bare one under [`None`]).
pub(super) type PlanCache = std::sync::Mutex<HashMap<Option<SchemaId>, Arc<AvroPlan>>>;

impl KafkaSink {
    /// Settles how `batch`'s values are read: fetches the writer schemas it names and compiles their plans.
    pub(super) async fn values_of(&self, batch: &KafkaBatch) -> Result<Values, WriteError> {
        match self.config.value_format {
            ValueFormat::Json => Ok(Values::Json),
            ValueFormat::AvroBare => {
                let schema = &self.writer.schema().avro;
                Ok(Values::Bare(self.plan(None, schema).map_err(|reason| {
                    WriteError::Config {
                        reason: format!("the table schema cannot read bare Avro: {reason}"),
                    }
                })?))
            }
            ValueFormat::AvroRegistry => {
                let ids: BTreeSet<SchemaId> = batch
                    .records
                    .iter()
                    .filter_map(|r| match r.payload() {
                        Payload::Value(v) => locate_id(r.value_schema.as_ref(), v).ok(),
                        _ => None,
                    })
                    .collect();
                let mut plans = HashMap::with_capacity(ids.len());
                if ids.is_empty() {
                    return Ok(Values::Registry(plans));
                }
                let Some(registry) = &self.registry else {
                    return Err(WriteError::Config {
                        reason: "hudi.sink.value.format=avro reads registry-framed values, but no \
                                 registry is configured (hoodie.streamer.schemaprovider.registry.url for \
                                 Confluent; Glue needs the `glue` feature)"
                            .to_string(),
                    });
                };
                for (id, lookup) in registry.lookup_all(&ids).await? {
                    let plan = match lookup {
                        Lookup::Found(schema) => self.plan(Some(id), &schema).map_err(|reason| {
                            format!("{id} cannot be read into the table: {reason}")
                        }),
                        Lookup::Refused(reason) => Err(reason),
                    };
                    plans.insert(id, plan);
                }
                Ok(Values::Registry(plans))
            }
        }
    }

    /// The plan of writer schema `id`, compiled on first use.
    fn plan(
        &self,
        id: Option<SchemaId>,
        writer: &crate::schema::avro::AvroSchema,
    ) -> Result<Arc<AvroPlan>, String> {
        if let Some(plan) = self
            .plans
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
        {
            return Ok(plan.clone());
        }
        let schema = self.writer.schema();
        let decoder =
            RecordDecoder::try_new(schema.data.clone(), &schema.avro).map_err(|e| e.to_string())?;
        let plan = Arc::new(decoder.compile_avro(writer).map_err(|e| e.to_string())?);
        self.plans
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, plan.clone());
        Ok(plan)
    }
}

/// Appends one value to `decoder` as `values` says; a refusal names the stage (framing, schema, datum).
/// `metadata` is the record's `valueSchemaMetadata`: under the ESM's schema-registry integration the value
/// holds the JSON rendering (`EventRecordFormat=JSON`, read with `hudi.sink.value.format=json`) or the body
/// without its framing (`SOURCE`, read with `avro`).
pub(super) fn read_value(
    values: &Values,
    decoder: &mut RecordDecoder,
    metadata: Option<&SchemaMetadata>,
    value: &[u8],
) -> Result<(), RecordDecodeError> {
    match values {
        Values::Json => decoder.append(value),
        Values::Bare(plan) => decoder.append_avro(plan, value),
        Values::Registry(plans) => {
            let framed = locate(metadata, value).map_err(RecordDecoder::schema_refusal)?;
            match plans.get(&framed.id) {
                Some(Ok(plan)) => decoder.append_avro(plan, &framed.body),
                Some(Err(reason)) => Err(RecordDecoder::schema_refusal(reason.clone())),
                None => Err(RecordDecoder::schema_refusal(format!(
                    "{} was not looked up (internal error)",
                    framed.id
                ))),
            }
        }
    }
}

/// The writer schema's id and the Avro body of a value: from the ESM's metadata when it is there (the ESM
/// removed the framing), else from the value's own framing.
fn locate<'a>(metadata: Option<&SchemaMetadata>, value: &'a [u8]) -> Result<Framed<'a>, String> {
    match metadata {
        Some(m) => Ok(Framed {
            id: metadata_id(m)?,
            body: Cow::Borrowed(value),
        }),
        None => unframe(value).map_err(|e| e.to_string()),
    }
}

/// The writer schema's id alone, as [`locate`] finds it, without inflating a zlib body.
fn locate_id(metadata: Option<&SchemaMetadata>, value: &[u8]) -> Result<SchemaId, String> {
    match metadata {
        Some(m) => metadata_id(m),
        None => schema_id(value).map_err(|e| e.to_string()),
    }
}

/// The writer schema named by the ESM's `valueSchemaMetadata`.
fn metadata_id(m: &SchemaMetadata) -> Result<SchemaId, String> {
    if !m.data_format.eq_ignore_ascii_case("AVRO") {
        return Err(format!(
            "the event source mapping delivers this value as {:?} (valueSchemaMetadata); \
             hudi.sink.value.format=avro reads Avro only",
            m.data_format
        ));
    }
    let id = m.schema_id.trim();
    if let Ok(n) = id.parse::<i32>() {
        Ok(SchemaId::Confluent(n))
    } else if let Ok(u) = uuid::Uuid::parse_str(id) {
        Ok(SchemaId::Glue(u))
    } else {
        Err(format!(
            "valueSchemaMetadata.schemaId {id:?} is neither a Confluent id nor a Glue version id"
        ))
    }
}
