//! Values: how a batch's record values are read, settled before anything is decoded.
//!
//! ```text
//! json             → the JSON reader (with a registry subject URL: its latest version evolves the table first)
//! debezium         → JSON change events flattened (record/debezium); registry-framed Avro ones through
//!                    their writer schemas, fetched and planned as for avro (debezium_avro.rs)
//! avro, registry   → unframe every value (or read the ESM's valueSchemaMetadata, framing already removed)
//!                    ─ fetch unknown writer schemas (registry/) ─ plan per schema id
//! avro, none       → one plan: the table schema as the writer schema
//! ```
//!
//! Registry fetches happen here, before the write: an unavailable registry fails the invocation (nothing is
//! written, the batch is redelivered), while a value whose framing is broken or whose schema id is unknown
//! or does not resolve becomes a dead letter in [`read_value`]. A writer schema that adds nullable fields
//! or widens types evolves the table schema first (`schema/evolution.rs`); one Hudi refuses fails the
//! invocation. Plans are compiled once per schema id and table schema, and kept for the life of the sink.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use crate::record::debezium::{Connector, DebeziumError, Flattened};
use crate::record::decode::{AvroPlan, RecordDecodeError, RecordDecoder};
use crate::registry::latest::LatestWatch;
use crate::registry::{schema_id, unframe, Framed, Lookup, SchemaId};
use crate::schema::avro::AvroSchema;
use crate::source::event::{Payload, SchemaMetadata};
use crate::write::{TableSchema, WriteError};

use super::config::{SchemaEvolution, ValueFormat};
use super::parts::BatchParts;
use super::KafkaSink;

/// How this batch's values are read, and the table schema the reading was settled for (the decoder of
/// the batch is built from it: the plans are compiled against its columns).
#[derive(Debug)]
pub(super) struct Values {
    /// The table schema, evolved with the batch's writer schemas.
    pub schema: Arc<TableSchema>,
    reader: Reader,
}

#[derive(Debug)]
enum Reader {
    /// JSON objects.
    Json,
    /// Registry-framed Avro: the plan, or why none can be made, per writer schema id of the batch.
    Registry(HashMap<SchemaId, Result<Arc<AvroPlan>, String>>),
    /// Bare Avro written with the table schema.
    Bare(Arc<AvroPlan>),
    /// Debezium change events, flattened into the table's rows: JSON (with the batch's Connect schemas), or
    /// registry-framed Avro with the plans of the batch's writer schemas.
    Debezium(
        Connector,
        super::connect::ConnectSchemas,
        super::debezium_avro::AvroPlans,
    ),
}

impl Values {
    /// Whether values are Debezium change events (tombstones are then skipped, not deletes by key).
    pub(super) fn is_debezium(&self) -> bool {
        matches!(self.reader, Reader::Debezium(..))
    }
}

/// The sink's compiled plans, per writer schema id (and the bare one under [`None`]), for the table
/// schema they were compiled against (a new table schema starts a new cache).
pub(super) type PlanCache = std::sync::Mutex<(
    Option<Arc<TableSchema>>,
    HashMap<Option<SchemaId>, Arc<AvroPlan>>,
)>;

impl KafkaSink {
    /// Settles how `batch`'s values are read: fetches the writer schemas it names, evolves the table schema
    /// with them (a change Hudi refuses fails the invocation before anything is written) and compiles
    /// their plans.
    pub(super) async fn values_of(&self, parts: &dyn BatchParts) -> Result<Values, WriteError> {
        match self.config.value_format {
            ValueFormat::Json => {
                if let Some(watch) = &self.latest {
                    self.take_latest(watch).await?;
                }
                Ok(Values {
                    schema: self.table()?.schema(),
                    reader: Reader::Json,
                })
            }
            ValueFormat::Debezium(connector) => {
                if let Some(watch) = &self.latest {
                    self.take_latest(watch).await?;
                }
                // One pass over the parts for both kinds of schema a change event may carry.
                let mut texts = super::connect::SchemaTexts::default();
                let mut ids = BTreeSet::new();
                for index in 0..parts.parts() {
                    let part = parts.load(index)?;
                    texts.add(&part);
                    super::debezium_avro::avro_ids(&part, &mut ids);
                }
                let connect = self.connect_schemas(connector, texts.texts)?;
                let avro = self.debezium_avro_plans(connector, ids).await?;
                Ok(Values {
                    schema: self.table()?.schema(),
                    reader: Reader::Debezium(connector, connect, avro),
                })
            }
            ValueFormat::AvroBare => {
                let schema = self.table()?.schema();
                // Bare values are written with the source schema: the table's without the Kafka columns.
                let writer = match self.config.append_kafka_columns {
                    true => Cow::Owned(super::kafka_columns::without_kafka_columns(&schema.avro)),
                    false => Cow::Borrowed(&schema.avro),
                };
                let plan =
                    self.plan(None, &writer, &schema)
                        .map_err(|reason| WriteError::Config {
                            reason: format!("the table schema cannot read bare Avro: {reason}"),
                        })?;
                Ok(Values {
                    schema,
                    reader: Reader::Bare(plan),
                })
            }
            ValueFormat::AvroRegistry => {
                let mut ids: BTreeSet<SchemaId> = BTreeSet::new();
                for index in 0..parts.parts() {
                    let part = parts.load(index)?;
                    ids.extend(part.records.iter().filter_map(|r| match r.payload() {
                        Payload::Value(v) => locate_id(r.value_schema.as_ref(), v).ok(),
                        _ => None,
                    }));
                }
                let mut plans = HashMap::with_capacity(ids.len());
                if ids.is_empty() {
                    return Ok(Values {
                        schema: self.table()?.schema(),
                        reader: Reader::Registry(plans),
                    });
                }
                let Some(registry) = &self.registry else {
                    return Err(WriteError::Config {
                        reason: "hudi.sink.value.format=avro reads registry-framed values, but no \
                                 registry is configured (hoodie.streamer.schemaprovider.registry.url for \
                                 Confluent; Glue needs the `glue` feature)"
                            .to_string(),
                    });
                };
                let found = registry.lookup_all(&ids).await?;
                // Every writer schema first evolves the table (in id order, so that every attempt of the
                // batch evolves it the same way); the plans are compiled against the result.
                if self.config.schema_evolution == SchemaEvolution::Evolve {
                    for (id, lookup) in &found {
                        let Lookup::Found(writer) = lookup else {
                            continue;
                        };
                        match self.table()?.evolve_schema(writer) {
                            Ok(changes) if changes.is_empty() => {}
                            Ok(changes) => {
                                tracing::info!(schema = %id, ?changes, "writer schema evolved the table schema")
                            }
                            // A writer schema whose values the table cannot read at all (a required
                            // table field it lacks) makes dead letters below; one whose values it reads
                            // but whose change Hudi refuses fails the invocation.
                            Err(WriteError::Evolution(refused)) => {
                                if self
                                    .plan(Some(*id), writer, &self.table()?.schema())
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
                for (id, lookup) in found {
                    let plan = match lookup {
                        Lookup::Found(writer) => {
                            self.plan(Some(id), &writer, &schema).map_err(|reason| {
                                format!("{id} cannot be read into the table: {reason}")
                            })
                        }
                        Lookup::Refused(reason) => Err(reason),
                    };
                    plans.insert(id, plan);
                }
                Ok(Values {
                    schema,
                    reader: Reader::Registry(plans),
                })
            }
        }
    }

    /// Evolves the table with the registry subject's latest version when it is due to be asked and new
    /// (`registry/latest.rs`). A change Hudi refuses fails the invocation and the version stays untaken, so
    /// every batch fails until it is fixed.
    async fn take_latest(&self, watch: &LatestWatch) -> Result<(), WriteError> {
        let now = self.clock.now_millis();
        let Some(new) = watch.poll(now).await? else {
            return Ok(());
        };
        // A Debezium subject's schema is the envelope (or the row): the table's is its row with the meta
        // columns.
        let schema = match self.config.value_format {
            ValueFormat::Debezium(connector) => Arc::new(
                crate::record::debezium::table_schema(connector, &new.schema)
                    .map_err(|reason| WriteError::Config { reason })?,
            ),
            _ => new.schema.clone(),
        };
        match self.config.schema_evolution {
            SchemaEvolution::Evolve => {
                let changes = self.table()?.evolve_schema(&schema)?;
                if !changes.is_empty() {
                    tracing::info!(
                        version = ?new.version, ?changes,
                        "the registry subject's latest version evolved the table schema"
                    );
                }
            }
            SchemaEvolution::Pinned => {
                match crate::schema::evolution::evolve(&self.table()?.schema().avro, &schema) {
                    Ok(e) if e.changes.is_empty() => {}
                    Ok(e) => tracing::warn!(
                        version = ?new.version,
                        changes = ?e.changes,
                        "hudi.sink.schema.evolution=pinned: the registry subject's latest version differs \
                         from the table schema; these changes are not applied"
                    ),
                    Err(e) => tracing::warn!(
                        version = ?new.version,
                        reason = %e.reason,
                        field = %e.path,
                        "hudi.sink.schema.evolution=pinned: the registry subject's latest version could \
                         not evolve the table schema"
                    ),
                }
            }
        }
        watch.taken(&new, now);
        Ok(())
    }

    /// The plan of writer schema `id` against `table`, compiled on first use.
    pub(super) fn plan(
        &self,
        id: Option<SchemaId>,
        writer: &AvroSchema,
        table: &Arc<TableSchema>,
    ) -> Result<Arc<AvroPlan>, String> {
        {
            let mut cache = self.plans.lock().unwrap_or_else(|p| p.into_inner());
            if !cache.0.as_ref().is_some_and(|t| Arc::ptr_eq(t, table)) {
                *cache = (Some(table.clone()), HashMap::new());
            }
            if let Some(plan) = cache.1.get(&id) {
                return Ok(plan.clone());
            }
        }
        if self.config.schema_evolution == SchemaEvolution::Pinned {
            // Once per writer schema: what the pinned table schema does not store.
            match crate::schema::evolution::evolve(&table.avro, writer) {
                Ok(e) if e.changes.is_empty() => {}
                Ok(e) => tracing::warn!(
                    schema = ?id,
                    changes = ?e.changes,
                    "hudi.sink.schema.evolution=pinned: the writer schema differs from the table's; \
                     values are read in the table schema and these changes are not applied"
                ),
                Err(e) => tracing::warn!(
                    schema = ?id,
                    reason = %e.reason,
                    field = %e.path,
                    "hudi.sink.schema.evolution=pinned: the writer schema could not evolve the table; \
                     values are read in the table schema where they resolve"
                ),
            }
        }
        let decoder =
            RecordDecoder::try_new(table.data.clone(), &table.avro).map_err(|e| e.to_string())?;
        let plan = Arc::new(decoder.compile_avro(writer).map_err(|e| e.to_string())?);
        if !plan.skipped_fields().is_empty() {
            tracing::warn!(
                schema = ?id,
                fields = ?plan.skipped_fields(),
                "the writer schema has fields the table schema lacks: their values are dropped \
                 (counted in IgnoredFields)"
            );
        }
        let mut cache = self.plans.lock().unwrap_or_else(|p| p.into_inner());
        if cache.0.as_ref().is_some_and(|t| Arc::ptr_eq(t, table)) {
            cache.1.insert(id, plan.clone());
        }
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
    match &values.reader {
        Reader::Json => decoder.append(value),
        Reader::Debezium(..) => Err(RecordDecoder::schema_refusal(
            "Debezium values are read by read_debezium (internal error)",
        )),
        Reader::Bare(plan) => decoder.append_avro(plan, value),
        Reader::Registry(plans) => {
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

/// Why a Debezium value is not written.
#[derive(Debug)]
pub(super) enum Refusal {
    /// Not a change event the sink applies (`not_json`: not JSON at all).
    Envelope { not_json: bool, reason: String },
    /// The flattened row does not fit the table schema.
    Decode(RecordDecodeError),
}

/// What one Debezium value added to the decoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Appended {
    /// Nothing: a tombstone written as a value (JSON `null`, or a Connect `payload` of null), skipped.
    Nothing,
    /// Its row.
    Row,
    /// Its row, then the update's before image as a delete (`Flattened::Row`'s `prior`).
    RowAndPrior,
}

/// Flattens one Debezium value and appends its row to `decoder`, and after it, with `priors` (a table whose
/// partition path has a column outside the record key, so that an update can move a row), the delete of an
/// update's before image when the event has one (a before image that does not decode is left out: the row
/// is written as it would be without it). `metadata`: the record's `valueSchemaMetadata`, as for
/// [`read_value`].
pub(super) fn read_debezium(
    values: &Values,
    decoder: &mut RecordDecoder,
    metadata: Option<&SchemaMetadata>,
    value: &[u8],
    priors: bool,
) -> Result<Appended, Refusal> {
    let Reader::Debezium(connector, connect, avro) = &values.reader else {
        return Err(Refusal::Envelope {
            not_json: false,
            reason: "the value format is not debezium (internal error)".into(),
        });
    };
    if super::debezium_avro::is_avro(metadata, value) {
        return super::debezium_avro::read(avro, decoder, metadata, value, priors);
    }
    let decimals = connect
        .decimals_of(value)
        .map_err(|reason| Refusal::Decode(RecordDecoder::schema_refusal(reason)))?;
    match crate::record::debezium::flatten_with(*connector, value, decimals, priors) {
        Ok(Flattened::Tombstone) => Ok(Appended::Nothing),
        Ok(Flattened::Row { json, prior, .. }) => {
            decoder.append(&json).map_err(Refusal::Decode)?;
            Ok(match prior {
                Some(prior) if decoder.append(&prior).is_ok() => Appended::RowAndPrior,
                _ => Appended::Row,
            })
        }
        Err(DebeziumError::Decimal {
            column,
            value,
            reason,
        }) => Err(Refusal::Decode(RecordDecoder::value_refusal(
            &column,
            value,
            "a Connect decimal",
            reason.to_string(),
        ))),
        Err(e) => Err(Refusal::Envelope {
            not_json: matches!(e, DebeziumError::NotJson(_)),
            reason: e.to_string(),
        }),
    }
}

/// The writer schema's id and the Avro body of a value: from the ESM's metadata when it is there (the ESM
/// removed the framing), else from the value's own framing.
pub(super) fn locate<'a>(
    metadata: Option<&SchemaMetadata>,
    value: &'a [u8],
) -> Result<Framed<'a>, String> {
    match metadata {
        Some(m) => Ok(Framed {
            id: metadata_id(m)?,
            body: Cow::Borrowed(value),
        }),
        None => unframe(value).map_err(|e| e.to_string()),
    }
}

/// The writer schema's id alone, as [`locate`] finds it, without inflating a zlib body.
pub(super) fn locate_id(
    metadata: Option<&SchemaMetadata>,
    value: &[u8],
) -> Result<SchemaId, String> {
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
