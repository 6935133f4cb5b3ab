//! The table schema as the writer holds it: every derived form ([`TableSchema`]), the key generator and
//! column positions that go with it ([`Shape`], replaced whole when the schema evolves), evolving it
//! (`schema/evolution.rs`), catching up with a schema another writer committed, and projecting rows written
//! under an older schema (`schema/project.rs`). See docs/architecture.md, "Schema evolution".

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::schema::types::SchemaDescriptor;

use super::{TableWriter, IS_DELETED_FIELD};
use crate::record::keygen::{KeyGenConfig, KeyGenerator};
use crate::schema::avro::AvroSchema;
use crate::schema::meta::{self, META_COLUMNS};
use crate::table::timeline::Timeline;
use crate::write::ordering::OrderingComparator;
use crate::write::WriteConfig;
use crate::write::WriteError;

/// The table schema in every form the writer needs, derived once from the Avro schema.
#[derive(Debug, Clone)]
pub struct TableSchema {
    /// The data schema as Hudi stores it in every commit.
    pub avro: AvroSchema,
    /// Compact JSON of `avro` in Spark's decimal form (`extraMetadata.schema`, `hoodie.table.create.schema`).
    pub avro_json: String,
    /// Compact JSON of the schema with the meta fields, in Spark's decimal form (`parquet.avro.schema` footer).
    pub avro_with_meta_json: String,
    /// Arrow schema of incoming data (data columns only).
    pub data: SchemaRef,
    /// Arrow schema of base files (meta columns, then data columns).
    pub file: SchemaRef,
    /// Parquet schema of base files (physical types as parquet-avro writes them).
    pub parquet: SchemaDescriptor,
}

impl TableSchema {
    /// Derives every form from the Avro data schema.
    pub fn try_new(avro: AvroSchema) -> Result<Self, WriteError> {
        meta::check_user_schema(&avro)?;
        let data = Arc::new(crate::schema::arrow::avro_to_arrow(&avro)?);
        let mut fields: Vec<Arc<Field>> = META_COLUMNS
            .iter()
            .map(|name| Arc::new(Field::new(*name, DataType::Utf8, true)))
            .collect();
        fields.extend(data.fields().iter().cloned());
        let file = Arc::new(Schema::new(fields));
        let with_meta = meta::with_meta_fields(&avro);
        let parquet = crate::schema::parquet::parquet_schema_for(&file, &with_meta)?;
        // What Hudi's Java readers parse: decimals in Spark's form (`schema::spark_form`).
        let written = crate::schema::spark_form::spark_form(&avro);
        Ok(Self {
            avro_json: written.to_json_string(),
            avro_with_meta_json: meta::with_meta_fields(&written).to_json_string(),
            avro,
            data,
            file,
            parquet,
        })
    }
}

/// The table schema with the key generator and column positions derived from it: one value, so that a
/// write sees them all from the same schema even while another task evolves it.
#[derive(Debug)]
pub(super) struct Shape {
    pub(super) schema: Arc<TableSchema>,
    pub(super) keygen: KeyGenerator,
    pub(super) ordering: Option<(usize, OrderingComparator)>,
    pub(super) is_deleted: Option<usize>,
    /// Under a Debezium payload: the `_change_operation_type` column, whose `d` makes a row a delete.
    pub(super) op_deleted: Option<usize>,
    /// Under `PostgresDebeziumAvroPayload`: the TOAST placeholder check (`write::toast`).
    pub(super) toast: Option<crate::write::toast::Toast>,
}

impl Shape {
    pub(super) fn try_new(schema: TableSchema, config: &WriteConfig) -> Result<Self, WriteError> {
        let keygen_config = KeyGenConfig::from_properties(&config.properties)?;
        let keygen = KeyGenerator::try_new(keygen_config, &schema.data)?;
        let ordering = match &config.precombine_field {
            Some(field) => {
                let (idx, f) =
                    schema
                        .data
                        .column_with_name(field)
                        .ok_or_else(|| WriteError::Config {
                            reason: format!(
                                "precombine field {field} is not a column of the schema"
                            ),
                        })?;
                Some((
                    idx,
                    OrderingComparator::for_payload(
                        field,
                        f.data_type(),
                        config.payload_class.as_deref(),
                    )?,
                ))
            }
            None => None,
        };
        let is_deleted = match schema.data.column_with_name(IS_DELETED_FIELD) {
            Some((idx, f)) if f.data_type() == &DataType::Boolean => Some(idx),
            Some((_, f)) => {
                return Err(WriteError::Config {
                    reason: format!(
                        "{IS_DELETED_FIELD} must be boolean, found {}",
                        f.data_type()
                    ),
                })
            }
            None => None,
        };
        let op_deleted = match config.payload_class.as_deref() {
            Some(p) if crate::record::debezium::connector_of_payload(p).is_some() => {
                let op = crate::record::debezium::OP_COLUMN;
                match schema.data.column_with_name(op) {
                    Some((idx, f)) if f.data_type() == &DataType::Utf8 => Some(idx),
                    _ => {
                        return Err(WriteError::Config {
                            reason: format!("payload {p} needs a string column {op}"),
                        })
                    }
                }
            }
            _ => None,
        };
        let toast = match config.payload_class.as_deref() {
            Some(p)
                if crate::record::debezium::connector_of_payload(p)
                    == Some(crate::record::debezium::Connector::Postgres)
                    && !crate::mutation::is_disabled(crate::mutation::Mutation::ToastBackfill) =>
            {
                let unavailable =
                    crate::write::toast::Unavailable::from_properties(&config.properties)?;
                Some(crate::write::toast::Toast::new(unavailable, &schema.data))
            }
            _ => None,
        };
        Ok(Self {
            schema: Arc::new(schema),
            keygen,
            ordering,
            is_deleted,
            op_deleted,
            toast,
        })
    }
}

impl TableWriter {
    /// The table schema as this writer writes it now (it changes only by evolving).
    pub fn schema(&self) -> Arc<TableSchema> {
        self.shape().schema.clone()
    }

    pub(super) fn shape(&self) -> Arc<Shape> {
        self.shape.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Evolves the table schema with the writer schema `writer` under Hudi's schema-on-write rules
    /// ([`crate::schema::evolution`]): from now on this writer decodes, writes and commits the evolved
    /// schema (the next commit's `extraMetadata.schema`). Returns what changed, empty when `writer` fits the
    /// table as it is; a change Hudi refuses is an error naming the field and both schemas, and changes
    /// nothing.
    pub fn evolve_schema(&self, writer: &AvroSchema) -> Result<Vec<String>, WriteError> {
        let mut slot = self.shape.write().unwrap_or_else(|p| p.into_inner());
        let evolved = crate::schema::evolution::evolve(&slot.schema.avro, writer)?;
        if evolved.changes.is_empty() {
            return Ok(Vec::new());
        }
        let shape = Shape::try_new(TableSchema::try_new(evolved.schema)?, &self.config)?;
        tracing::info!(changes = ?evolved.changes, "table schema evolved");
        *slot = Arc::new(shape);
        Ok(evolved.changes)
    }

    /// Evolves this writer's schema with the latest schema committed to the table (another writer may have
    /// evolved it), before a write that merges into stored file groups or clustering rewrites them, so that
    /// it never drops a column it does not know yet. `applied` is the schema the writer's view read with the
    /// commits it applied; without one (the view listed the table) the latest commit's is read, once per new
    /// latest commit.
    pub(crate) async fn catch_up_schema(
        &self,
        timeline: &Timeline,
        applied: Option<&str>,
    ) -> Result<(), WriteError> {
        if crate::mutation::is_disabled(crate::mutation::Mutation::StoredColumnsKept) {
            return Ok(());
        }
        let (committed, latest) = match applied {
            Some(schema) => (Some(schema.to_string()), None),
            None => {
                let Some(latest) = timeline.completed_commits().last().map(|i| i.time.clone())
                else {
                    return Ok(());
                };
                if *self.schema_seen.lock().unwrap_or_else(|p| p.into_inner())
                    == Some(latest.clone())
                {
                    return Ok(());
                }
                let schema = timeline.latest_schema(self.storage.as_ref()).await?;
                (schema, Some(latest))
            }
        };
        if let Some(committed) = committed {
            if committed != self.schema().avro_json {
                self.evolve_schema(&AvroSchema::parse(&committed)?)?;
            }
        }
        if latest.is_some() {
            *self.schema_seen.lock().unwrap_or_else(|p| p.into_inner()) = latest;
        }
        Ok(())
    }
}

/// Batches read from a stored base file, in the table's file schema: a file written before the schema
/// evolved is projected into it (`schema/project.rs`). A file with a column the schema lacks was written
/// under a newer schema than this writer's: refused, never rewritten without that column.
pub(super) fn conform_batches(
    schema: &SchemaRef,
    batches: Vec<RecordBatch>,
) -> Result<Vec<RecordBatch>, WriteError> {
    batches
        .into_iter()
        .map(|b| {
            let dropped = crate::schema::project::dropped_columns(&b.schema(), schema);
            if !dropped.is_empty()
                && !crate::mutation::is_disabled(crate::mutation::Mutation::StoredColumnsKept)
            {
                return Err(WriteError::Data {
                    reason: format!(
                        "a stored base file has columns {dropped:?} that the writer's table schema lacks \
                         (the table schema evolved after this writer read it); the batch fails and its \
                         redelivery reads the table schema again"
                    ),
                });
            }
            crate::schema::project::conform(&b, schema).map_err(|reason| WriteError::Data {
                reason: format!("a stored base file cannot be read in the table schema: {reason}"),
            })
        })
        .collect()
}

/// Incoming rows in the writer's current data schema (they differ only when the schema evolved after they
/// were decoded).
pub(super) fn project_incoming(
    batch: &RecordBatch,
    schema: &TableSchema,
) -> Result<RecordBatch, WriteError> {
    crate::schema::project::conform(batch, &schema.data).map_err(|reason| WriteError::Data {
        reason: format!("incoming rows in the evolved table schema: {reason}"),
    })
}
