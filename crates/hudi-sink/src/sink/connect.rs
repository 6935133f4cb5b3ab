//! Debezium values that carry their Connect schema (the JsonConverter's `{"schema":…,"payload":…}`).
//!
//! ```text
//! no schema file, no registry ─┬ no table yet  → the batch's first Connect schema creates it (DeferredTable)
//!                              └ every batch   → each distinct Connect schema evolves the table, in batch order
//! every Debezium batch         → per value: its Connect schema's decimal columns (or, without one, the
//!                                table's) are read from Debezium's base64 encoding
//! ```
//!
//! A Connect schema that does not map to Avro makes dead letters (stage `schema`) of the values carrying it;
//! a change Hudi refuses fails the invocation before anything is written, as a registry schema's does.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::clock::Clock;
use crate::record::debezium::connect;
use crate::record::debezium::Connector;
use crate::schema::avro::AvroSchema;
use crate::source::event::{KafkaBatch, Payload};
use crate::storage::Storage;
use crate::write::{TableWriter, WriteConfig, WriteError};

use super::config::SchemaEvolution;
use super::parts::BatchParts;
use super::KafkaSink;

/// A Debezium table that does not exist yet and has no schema file or registry: the first batch's Connect
/// schema gives its columns, and the table is created then.
#[derive(Debug)]
pub struct DeferredTable {
    storage: Arc<dyn Storage>,
    clock: Arc<dyn Clock>,
    config: WriteConfig,
    connector: Connector,
    kafka_columns: bool,
}

impl DeferredTable {
    /// The table `config` describes at `storage`, to be created with `connector`'s meta columns (and the
    /// Kafka columns when `kafka_columns`).
    pub fn new(
        storage: Arc<dyn Storage>,
        clock: Arc<dyn Clock>,
        config: WriteConfig,
        connector: Connector,
        kafka_columns: bool,
    ) -> Self {
        DeferredTable {
            storage,
            clock,
            config,
            connector,
            kafka_columns,
        }
    }
}

/// The table schema of a Connect row: the meta columns first, the Kafka columns last when asked for.
fn table_schema(
    connector: Connector,
    row: &AvroSchema,
    kafka_columns: bool,
) -> Result<AvroSchema, WriteError> {
    let schema = crate::record::debezium::table_schema(connector, row)
        .map_err(|reason| WriteError::Config { reason })?;
    match kafka_columns {
        true => super::kafka_columns::with_kafka_columns(&schema),
        false => Ok(schema),
    }
}

/// The Connect schemas of one batch, each read once, and the table's decimal columns for values without one.
#[derive(Debug, Default)]
pub(super) struct ConnectSchemas {
    by_text: HashMap<String, Result<BTreeMap<String, u32>, String>>,
    table_decimals: BTreeMap<String, u32>,
}

impl ConnectSchemas {
    /// The decimal columns of `value` and their scales: its Connect schema's, else the table's; the refusal
    /// of a Connect schema that does not map.
    pub(super) fn decimals_of(&self, value: &[u8]) -> Result<&BTreeMap<String, u32>, String> {
        match connect::schema_text(value) {
            None => Ok(&self.table_decimals),
            Some(text) => match self.by_text.get(text) {
                Some(Ok(decimals)) => Ok(decimals),
                Some(Err(reason)) => Err(reason.clone()),
                None => Err("the value's Connect schema was not read (internal error)".into()),
            },
        }
    }
}

/// The distinct Connect schema texts of a batch, in the order they first appear.
#[derive(Debug, Default)]
pub(super) struct SchemaTexts {
    seen: std::collections::HashSet<String>,
    /// The texts, in order.
    pub texts: Vec<String>,
}

impl SchemaTexts {
    /// Adds the texts of `batch` (a part of the batch) not seen yet.
    pub(super) fn add(&mut self, batch: &KafkaBatch) {
        for record in &batch.records {
            if let Payload::Value(value) = record.payload() {
                if let Some(text) = connect::schema_text(value) {
                    if !self.seen.contains(text) {
                        self.seen.insert(text.to_string());
                        self.texts.push(text.to_string());
                    }
                }
            }
        }
    }
}

impl KafkaSink {
    /// The table's writer; a deferred table is created first, from the first Connect schema of the batch
    /// that maps (or opened, when another writer created it meanwhile).
    pub(super) async fn open_deferred(
        &self,
        parts: &dyn BatchParts,
    ) -> Result<&TableWriter, WriteError> {
        if let Some(writer) = self.writer.get() {
            return Ok(writer);
        }
        let Some(deferred) = &self.deferred else {
            return self.table();
        };
        self.writer
            .get_or_try_init(|| async {
                let mut row = None;
                for index in 0..parts.parts() {
                    let mut texts = SchemaTexts::default();
                    texts.add(&*parts.load(index)?);
                    row = texts.texts.iter().find_map(|text| connect::parse(text).ok());
                    if row.is_some() {
                        break;
                    }
                }
                let row = row.ok_or_else(|| WriteError::Config {
                        reason: "the table does not exist yet and no value of this batch carries a \
                                 Connect schema that gives its columns (the JsonConverter's \
                                 schemas.enable=true); give a schema file \
                                 (hoodie.streamer.schemaprovider.source.schema.file) or a registry subject"
                            .into(),
                    })?;
                let schema = table_schema(deferred.connector, &row.row, deferred.kafka_columns)?;
                let writer = TableWriter::create_or_open(
                    deferred.storage.clone(),
                    deferred.clock.clone(),
                    deferred.config.clone(),
                    Some(schema),
                )
                .await?;
                if deferred.kafka_columns {
                    super::kafka_columns::check_table(&writer.schema().data)?;
                }
                crate::record::debezium::check_table(deferred.connector, &writer.schema().data)
                    .map_err(|reason| WriteError::Config { reason })?;
                tracing::info!("the table was created from the first batch's Connect schema");
                Ok(writer)
            })
            .await
    }

    /// Reads the Connect schemas of a batch (`texts`). Without a schema file or registry they are the table's
    /// schema: each evolves the table in batch order (under `hudi.sink.schema.evolution=evolve`), and a
    /// change Hudi refuses fails the invocation.
    pub(super) fn connect_schemas(
        &self,
        connector: Connector,
        texts: Vec<String>,
    ) -> Result<ConnectSchemas, WriteError> {
        let writer = self.table()?;
        let from_values = self.latest.is_none() && writer.config().schema_file.is_none();
        let mut by_text = HashMap::new();
        for text in texts {
            let parsed = connect::parse(&text);
            if let (Ok(schema), true) = (&parsed, from_values) {
                let table = table_schema(connector, &schema.row, self.config.append_kafka_columns)?;
                match self.config.schema_evolution {
                    SchemaEvolution::Evolve => {
                        let changes = writer.evolve_schema(&table)?;
                        if !changes.is_empty() {
                            tracing::info!(?changes, "a Connect schema evolved the table schema");
                        }
                    }
                    SchemaEvolution::Pinned => {
                        if let Ok(e) =
                            crate::schema::evolution::evolve(&writer.schema().avro, &table)
                        {
                            if !e.changes.is_empty() {
                                tracing::warn!(
                                    changes = ?e.changes,
                                    "hudi.sink.schema.evolution=pinned: a Connect schema differs from the \
                                     table schema; these changes are not applied"
                                );
                            }
                        }
                    }
                }
            }
            let decimals = match parsed {
                Ok(schema) => Ok(schema.decimals),
                Err(e) if from_values => Err(e.to_string()),
                // The schema file or registry reads the row: the value's own schema is not needed.
                Err(_) => Ok(connect::table_decimals(&writer.schema().avro)),
            };
            by_text.insert(text, decimals);
        }
        Ok(ConnectSchemas {
            by_text,
            table_decimals: connect::table_decimals(&writer.schema().avro),
        })
    }
}
