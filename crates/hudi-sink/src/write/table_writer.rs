//! [`TableWriter`]: creates a table and writes instants into it (insert, upsert, delete).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use arrow_select::concat::concat_batches;
use arrow_select::interleave::interleave;
use arrow_select::take::take;
use bytes::Bytes;
use parquet::schema::types::SchemaDescriptor;

use super::merge::{fold_incoming, plan_file_group, FileGroupPlan, Source, Winner};
use super::ordering::OrderingComparator;
use super::WriteError;

mod append;
use crate::base_file::reader::read_base_file;
use crate::base_file::writer::{BaseFileWriter, WrittenBaseFile};
use crate::clock::Clock;
use crate::config::write_config::{IndexConfig, WriteConfig, WriteOperation};
use crate::index::bucket::{self, BucketIndexConfig};
use crate::record::keygen::{KeyGenConfig, KeyGenerator};
use crate::schema::avro::AvroSchema;
use crate::schema::meta::{self, META_COLUMNS};
use crate::storage::{join_path, PutOutcome, Storage};
use crate::table::commit::{CommitMetadata, OperationType, WriteStat};
use crate::table::file_name::{marker_path, BaseFileName, MarkerType, WriteToken};
use crate::table::fs_view::{FileSlice, FileSystemView};
use crate::table::instant::{Action, Instant, InstantTime, State};
use crate::table::partition_metadata::{metafile_path, PartitionMetadata};
use crate::table::properties::{TableProperties, TableType};
use crate::table::timeline::Timeline;

/// The data column Hudi treats as a delete marker.
pub const IS_DELETED_FIELD: &str = "_hoodie_is_deleted";

/// Most rows encoded per Parquet write call when filling new file groups (the size check runs between calls).
const INSERT_CHUNK_ROWS: usize = 4096;
/// Rows of the first call, which measures the bytes per row.
const FIRST_CHUNK_ROWS: usize = 256;
/// Fewest rows per call, so that a nearly full file still makes progress.
const MIN_CHUNK_ROWS: usize = 16;

/// The table schema in every form the writer needs, derived once from the Avro schema.
#[derive(Debug, Clone)]
pub struct TableSchema {
    /// The data schema as Hudi stores it in every commit.
    pub avro: AvroSchema,
    /// Compact JSON of `avro` (`extraMetadata.schema`).
    pub avro_json: String,
    /// Compact JSON of the schema with the meta fields (`parquet.avro.schema` footer).
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
        Ok(Self {
            avro_json: avro.to_json_string(),
            avro_with_meta_json: with_meta.to_json_string(),
            avro,
            data,
            file,
            parquet,
        })
    }
}

/// What happened to the incoming rows of one write. `records_in` always equals the sum of the others.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct WriteCounts {
    /// Rows handed to the writer.
    pub records_in: u64,
    /// New keys written.
    pub inserted: u64,
    /// Stored records replaced.
    pub updated: u64,
    /// Stored records deleted.
    pub deleted: u64,
    /// Incoming rows superseded by a later or larger version in the same write.
    pub deduped: u64,
    /// Incoming versions older than the stored one (ignored).
    pub ignored_older: u64,
    /// Deletes of keys that were not stored.
    pub delete_misses: u64,
}

impl WriteCounts {
    fn add_plan(&mut self, plan: &FileGroupPlan) {
        self.inserted += plan.inserted;
        self.updated += plan.updated;
        self.deleted += plan.deleted;
        self.ignored_older += plan.ignored_older;
        self.delete_misses += plan.delete_misses;
    }

    /// Whether every incoming row is accounted for.
    pub fn balanced(&self) -> bool {
        self.records_in
            == self.inserted
                + self.updated
                + self.deleted
                + self.deduped
                + self.ignored_older
                + self.delete_misses
    }
}

/// A completed write.
#[derive(Debug, Clone)]
pub struct WriteResult {
    /// The instant that was committed.
    pub instant: InstantTime,
    /// The commit metadata as written to `<instant>.commit`.
    pub commit: CommitMetadata,
    /// Row accounting.
    pub counts: WriteCounts,
}

/// Incoming rows keyed, placed and folded: ready to be routed into file groups at some instant.
#[derive(Debug)]
pub struct PreparedWrite {
    /// The operation.
    pub operation: WriteOperation,
    /// All incoming rows, concatenated (data columns).
    pub batch: RecordBatch,
    /// Surviving versions per partition path, in first-arrival order: `(record key, winner)`.
    pub partitions: BTreeMap<String, Vec<(String, Winner)>>,
    /// Keys deleted by Kafka tombstones, in whatever partition they are stored (one count each).
    pub tombstones: Vec<String>,
    /// Keys whose tombstone was followed by a record: its partition gets the new version, other partitions'
    /// versions are deleted (not counted again).
    pub shadow_tombstones: Vec<String>,
    /// Row accounting so far (records in, deduped).
    pub counts: WriteCounts,
    /// Rows whose key or partition path could not be computed (row index, reason).
    pub rejected: Vec<(usize, crate::record::keygen::KeyError)>,
}

/// The in-process single writer of one table. See the module doc of [`crate::write`].
#[derive(Debug)]
pub struct TableWriter {
    storage: Arc<dyn Storage>,
    clock: Arc<dyn Clock>,
    config: WriteConfig,
    properties: TableProperties,
    schema: TableSchema,
    keygen: KeyGenerator,
    ordering: Option<(usize, OrderingComparator)>,
    is_deleted: Option<usize>,
    bucket: Option<BucketIndexConfig>,
    /// The latest slice of every file group, kept across batches (a warm Lambda lists no partition) and synced
    /// from the timeline by every bucketed write.
    view: tokio::sync::Mutex<FileSystemView>,
    /// Partitions whose `.hoodie_partition_metadata` this writer saw or wrote: not checked again while warm
    /// (at most [`MAX_KNOWN_PARTITIONS`], then forgotten and checked again).
    known_partitions: std::sync::Mutex<BTreeSet<String>>,
}

/// Partitions a writer remembers as having their metadata file.
const MAX_KNOWN_PARTITIONS: usize = 10_000;

/// The `hoodie.properties` of a new table written from `config`.
fn new_table_properties(
    config: &WriteConfig,
    schema: &TableSchema,
    keygen: &KeyGenConfig,
) -> Result<TableProperties, WriteError> {
    let mut p = TableProperties::new_v6_cow(&config.table_name)?;
    p.database = config.database_name.clone();
    p.record_key_fields = config.record_key_fields.clone();
    p.partition_fields = config.partition_fields.clone();
    p.precombine_field = config.precombine_field.clone();
    p.key_generator_class = Some(keygen.kind.class_name().to_string());
    p.hive_style_partitioning = Some(config.hive_style_partitioning);
    if config.table_type == TableType::MergeOnRead {
        // Every reader merges base and logs by the rule these name (docs/architecture.md, "Merge-on-read"):
        // with an ordering field the larger value wins (Spark and hudi-rs agree only for this payload),
        // without one the later commit.
        p.table_type = TableType::MergeOnRead;
        let (payload, strategy) = match &config.precombine_field {
            Some(_) => (
                "org.apache.hudi.common.model.DefaultHoodieRecordPayload",
                "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5",
            ),
            None => (
                "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload",
                "ce9acb64-bde0-424c-9b91-f6ebba25356d",
            ),
        };
        p.set_other("hoodie.compaction.payload.class", payload)?;
        p.set_other("hoodie.compaction.record.merger.strategy", strategy)?;
    }
    p.url_encode_partitioning = Some(config.url_encode_partitions);
    // hudi-rs reads property values raw and Java unescapes backslashes: store the create schema only when
    // both read it the same way.
    if !schema.avro_json.contains('\\') && schema.avro_json.is_ascii() {
        p.create_schema = Some(schema.avro_json.clone());
    }
    if let IndexConfig::Bucket {
        num_buckets,
        hash_fields,
    } = &config.index
    {
        // Hudi does not persist the bucket layout; a writer with another count would corrupt the table.
        p.set_other("hoodie.index.type", "BUCKET")?;
        p.set_other("hoodie.bucket.index.num.buckets", &num_buckets.to_string())?;
        if !hash_fields.is_empty() {
            p.set_other("hoodie.bucket.index.hash.field", &hash_fields.join(","))?;
        }
    }
    Ok(p)
}

fn table_err(storage: &dyn Storage, reason: impl Into<String>) -> WriteError {
    WriteError::Table {
        base_path: storage.base_uri().to_string(),
        reason: reason.into(),
    }
}

/// A merge-on-read table's readers merge by the rule of its payload class: refuses a table whose rule
/// readers do not share (another payload) or whose ordering field is not the configured precombine field,
/// since the writer folds each batch by that field.
fn check_merge_mode(
    storage: &dyn Storage,
    props: &TableProperties,
    config: &WriteConfig,
) -> Result<(), WriteError> {
    use crate::log_file::scan::MergeMode;
    if !props.is_merge_on_read() {
        return Ok(());
    }
    let mode = MergeMode::from_table_properties(&props.as_map())
        .map_err(|e| table_err(storage, format!("merge-on-read table: {e}")))?;
    let ordering = match &mode {
        MergeMode::EventTime { ordering_field } => Some(ordering_field.as_str()),
        MergeMode::CommitTime => None,
    };
    if ordering != config.precombine_field.as_deref() {
        return Err(table_err(
            storage,
            format!(
                "readers merge this table's records by {} but hoodie.datasource.write.precombine.field is {:?}",
                ordering.map_or("commit time".to_string(), |f| format!("ordering field {f}")),
                config.precombine_field
            ),
        ));
    }
    Ok(())
}

/// Refuses a configuration that disagrees with what the table on storage was written with.
fn check_compatible(
    storage: &dyn Storage,
    props: &TableProperties,
    config: &WriteConfig,
    keygen: &KeyGenConfig,
) -> Result<(), WriteError> {
    let mismatch = |what: &str, table: String, config: String| {
        table_err(
            storage,
            format!("{what} of the table is {table:?} but the configuration says {config:?}"),
        )
    };
    if props.name != config.table_name {
        return Err(mismatch(
            "hoodie.table.name",
            props.name.clone(),
            config.table_name.clone(),
        ));
    }
    if props.table_type != config.table_type {
        return Err(mismatch(
            "hoodie.table.type",
            props.table_type.to_string(),
            config.table_type.to_string(),
        ));
    }
    if props.record_key_fields != config.record_key_fields {
        return Err(mismatch(
            "the record key fields",
            props.record_key_fields.join(","),
            config.record_key_fields.join(","),
        ));
    }
    if props.partition_fields != config.partition_fields {
        return Err(mismatch(
            "the partition fields",
            props.partition_fields.join(","),
            config.partition_fields.join(","),
        ));
    }
    if props.hive_style_partitioning_or_default() != config.hive_style_partitioning {
        return Err(mismatch(
            "hive_style_partitioning",
            props.hive_style_partitioning_or_default().to_string(),
            config.hive_style_partitioning.to_string(),
        ));
    }
    if props.url_encode_partitioning_or_default() != config.url_encode_partitions {
        return Err(mismatch(
            "partitionpath.urlencode",
            props.url_encode_partitioning_or_default().to_string(),
            config.url_encode_partitions.to_string(),
        ));
    }
    if let Some(class) = &props.key_generator_class {
        if class.rsplit('.').next() != keygen.kind.class_name().rsplit('.').next() {
            return Err(mismatch(
                "the key generator",
                class.clone(),
                keygen.kind.class_name().to_string(),
            ));
        }
    }
    let stored_buckets = props.other().get("hoodie.bucket.index.num.buckets");
    let configured = match &config.index {
        IndexConfig::Bucket { num_buckets, .. } => Some(num_buckets.to_string()),
        IndexConfig::None => None,
    };
    if let (Some(stored), Some(configured)) = (stored_buckets, &configured) {
        if stored != configured {
            return Err(mismatch(
                "hoodie.bucket.index.num.buckets",
                stored.to_string(),
                configured.clone(),
            ));
        }
    }
    if stored_buckets.is_some() && configured.is_none() {
        return Err(table_err(
            storage,
            "the table uses the bucket index; configure hoodie.index.type=BUCKET with its bucket count",
        ));
    }
    let stored_hash = props
        .other()
        .get("hoodie.bucket.index.hash.field")
        .unwrap_or("");
    if let IndexConfig::Bucket { hash_fields, .. } = &config.index {
        if stored_buckets.is_some() && stored_hash != hash_fields.join(",") {
            return Err(mismatch(
                "hoodie.bucket.index.hash.field",
                stored_hash.to_string(),
                hash_fields.join(","),
            ));
        }
    }
    Ok(())
}

impl TableWriter {
    /// Opens the table at `storage`, creating it with `schema` when it does not exist yet.
    ///
    /// An existing table must agree with `config` (name, keys, partitioning, key generator, bucket count)
    /// and, when `schema` is given, with its latest committed schema (no schema evolution yet).
    pub async fn create_or_open(
        storage: Arc<dyn Storage>,
        clock: Arc<dyn Clock>,
        config: WriteConfig,
        schema: Option<AvroSchema>,
    ) -> Result<Self, WriteError> {
        let keygen_config = KeyGenConfig::from_properties(&config.properties)?;
        let properties = match TableProperties::load(storage.as_ref()).await {
            Ok(p) => Some(p),
            Err(e) if e.is_not_found() => None,
            Err(e) => return Err(e.into()),
        };
        let (properties, table_schema) = match properties {
            Some(props) => {
                props.validate_writable()?;
                check_compatible(storage.as_ref(), &props, &config, &keygen_config)?;
                let timeline = Timeline::load(storage.as_ref()).await?;
                let stored = match timeline.latest_schema(storage.as_ref()).await? {
                    Some(s) => Some(s),
                    None => props.create_schema.clone(),
                };
                let stored = stored.map(|s| AvroSchema::parse(&s)).transpose()?;
                let avro = match (stored, schema) {
                    (Some(stored), Some(given)) => {
                        if stored.to_json_value() != given.to_json_value() {
                            return Err(table_err(
                                storage.as_ref(),
                                "the given schema differs from the table's latest schema (schema evolution is not supported yet)",
                            ));
                        }
                        stored
                    }
                    (Some(stored), None) => stored,
                    (None, Some(given)) => given,
                    (None, None) => {
                        return Err(table_err(
                            storage.as_ref(),
                            "the table has no schema yet; give one (hoodie.streamer.schemaprovider.source.schema.file)",
                        ))
                    }
                };
                (props, TableSchema::try_new(avro)?)
            }
            None => {
                let avro = schema.ok_or_else(|| {
                    table_err(
                        storage.as_ref(),
                        "no table here and no schema to create one (hoodie.streamer.schemaprovider.source.schema.file)",
                    )
                })?;
                let table_schema = TableSchema::try_new(avro)?;
                let props = new_table_properties(&config, &table_schema, &keygen_config)?;
                props.create(storage.as_ref(), clock.as_ref()).await?;
                // Another creator may have won the race: use what is stored and check it.
                let stored = TableProperties::load(storage.as_ref()).await?;
                stored.validate_writable()?;
                check_compatible(storage.as_ref(), &stored, &config, &keygen_config)?;
                (stored, table_schema)
            }
        };
        check_merge_mode(storage.as_ref(), &properties, &config)?;
        let keygen = KeyGenerator::try_new(keygen_config, &table_schema.data)?;
        let ordering = match &config.precombine_field {
            Some(field) => {
                let (idx, f) = table_schema.data.column_with_name(field).ok_or_else(|| {
                    WriteError::Config {
                        reason: format!("precombine field {field} is not a column of the schema"),
                    }
                })?;
                Some((idx, OrderingComparator::try_new(field, f.data_type())?))
            }
            None => None,
        };
        let is_deleted = match table_schema.data.column_with_name(IS_DELETED_FIELD) {
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
        let bucket = match &config.index {
            IndexConfig::Bucket {
                num_buckets,
                hash_fields,
            } => Some(BucketIndexConfig::try_new(
                *num_buckets,
                hash_fields.clone(),
                &config.record_key_fields,
            )?),
            IndexConfig::None => None,
        };
        Ok(Self {
            storage,
            clock,
            config,
            properties,
            schema: table_schema,
            keygen,
            ordering,
            is_deleted,
            bucket,
            view: tokio::sync::Mutex::new(FileSystemView::new()),
            known_partitions: std::sync::Mutex::new(BTreeSet::new()),
        })
    }

    /// The table schema.
    pub fn schema(&self) -> &TableSchema {
        &self.schema
    }

    /// The write configuration.
    pub fn config(&self) -> &WriteConfig {
        &self.config
    }

    /// The table properties as loaded.
    pub fn properties(&self) -> &TableProperties {
        &self.properties
    }

    /// The storage the table lives in.
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }

    /// Writes one instant with the configured operation.
    pub async fn write(&self, batches: &[RecordBatch]) -> Result<WriteResult, WriteError> {
        self.write_with(self.config.operation, batches, BTreeMap::new())
            .await
    }

    /// Writes one instant: prepare, begin, write files, commit. `extra_metadata` goes into the commit's
    /// `extraMetadata` next to the schema (e.g. the Kafka checkpoint).
    pub async fn write_with(
        &self,
        operation: WriteOperation,
        batches: &[RecordBatch],
        extra_metadata: BTreeMap<String, String>,
    ) -> Result<WriteResult, WriteError> {
        let prepared = self.prepare(operation, batches)?;
        let instant = self.begin().await?;
        let (stats, counts) = self.write_files(&instant, &prepared).await?;
        let commit = self
            .commit(&instant, operation, stats, extra_metadata)
            .await?;
        Ok(WriteResult {
            instant,
            commit,
            counts,
        })
    }

    /// Keys, places and folds the incoming rows. Fails on the first row that cannot be keyed.
    pub fn prepare(
        &self,
        operation: WriteOperation,
        batches: &[RecordBatch],
    ) -> Result<PreparedWrite, WriteError> {
        let batch = self.concat(batches)?;
        let prepared = self.prepare_records(operation, batch, None, &[])?;
        match prepared.rejected.first() {
            Some((row, source)) => Err(WriteError::Record {
                row: *row,
                source: source.clone(),
            }),
            None => Ok(prepared),
        }
    }

    /// Concatenates incoming batches after checking they have the table's data schema.
    pub fn concat(&self, batches: &[RecordBatch]) -> Result<RecordBatch, WriteError> {
        for b in batches {
            if b.schema().fields() != self.schema.data.fields() {
                return Err(WriteError::Data {
                    reason: format!(
                        "batch schema {:?} differs from table schema {:?}",
                        b.schema(),
                        self.schema.data
                    ),
                });
            }
        }
        concat_batches(&self.schema.data, batches).map_err(|source| WriteError::Arrow {
            context: "concatenate incoming batches",
            source,
        })
    }

    /// Keys, places and folds incoming rows and Kafka tombstones, in arrival order.
    ///
    /// `positions[i]` is the arrival position of data row `i` (default: its index); `tombstones` are
    /// `(record key, position)` of tombstones (records without a value). Per key, in arrival order: a
    /// tombstone deletes whatever came before it; a record after a tombstone recreates the key whatever the
    /// stored ordering value; otherwise the larger ordering value wins, ties go to the later record. Rows
    /// whose key or partition cannot be computed are returned in `rejected` (with their row index) and take
    /// no part in the write.
    pub fn prepare_records(
        &self,
        operation: WriteOperation,
        batch: RecordBatch,
        positions: Option<&[u64]>,
        tombstones: &[(String, u64)],
    ) -> Result<PreparedWrite, WriteError> {
        let rows = batch.num_rows();
        let position = |row: usize| {
            positions
                .and_then(|p| p.get(row).copied())
                .unwrap_or(row as u64)
        };
        let mut last_tombstone: HashMap<&str, u64> = HashMap::new();
        for (key, pos) in tombstones {
            let e = last_tombstone.entry(key.as_str()).or_insert(*pos);
            *e = (*e).max(*pos);
        }
        let mut keys = vec![String::new(); rows];
        let mut deletes = vec![false; rows];
        let mut forced = vec![false; rows];
        let mut rejected = Vec::new();
        let mut counts = WriteCounts::default();
        let is_deleted = self
            .is_deleted
            .map(|i| batch.column(i).as_boolean().clone());
        let mut by_partition: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        // One partition-path buffer for all rows: a path is copied only the first time it is seen.
        let mut part = String::new();
        for row in 0..rows {
            let mut key = String::new();
            part.clear();
            if let Err(e) = self
                .keygen
                .record_key(&batch, row, &mut key)
                .and_then(|()| self.keygen.partition_path(&batch, row, &mut part))
            {
                rejected.push((row, e));
                continue;
            }
            counts.records_in += 1;
            let pos = position(row);
            match last_tombstone.get(key.as_str()) {
                // A later tombstone deletes this version whatever its ordering value.
                Some(t) if *t > pos => {
                    counts.deduped += 1;
                    continue;
                }
                Some(_) => forced[row] = true,
                None => {}
            }
            let flagged = is_deleted
                .as_ref()
                .is_some_and(|a| a.is_valid(row) && a.value(row));
            if operation == WriteOperation::Delete {
                // The delete operation removes keys whatever their ordering value.
                deletes[row] = true;
                forced[row] = true;
            } else {
                deletes[row] = flagged;
            }
            keys[row] = key;
            match by_partition.get_mut(part.as_str()) {
                Some(rows_in_part) => rows_in_part.push(row),
                None => {
                    by_partition.insert(part.clone(), vec![row]);
                }
            }
        }
        // Tombstones: one effective delete per key; repeated tombstones and tombstones followed by a record
        // of the same key (which recreates it) are superseded.
        let recreated: std::collections::HashSet<&str> = (0..rows)
            .filter(|r| forced[*r] && operation != WriteOperation::Delete)
            .map(|r| keys[r].as_str())
            .collect();
        let mut effective_tombstones = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (key, _) in tombstones {
            counts.records_in += 1;
            if !seen.insert(key.as_str()) || recreated.contains(key.as_str()) {
                counts.deduped += 1;
            } else {
                effective_tombstones.push(key.clone());
            }
        }
        // Recreated keys still delete their other partitions' versions.
        let mut shadow_tombstones: Vec<String> = tombstones
            .iter()
            .filter(|(k, _)| recreated.contains(k.as_str()))
            .map(|(k, _)| k.clone())
            .collect();
        shadow_tombstones.sort();
        shadow_tombstones.dedup();

        let ordering = self
            .ordering
            .map(|(idx, cmp)| (batch.column(idx).clone(), cmp));
        let mut partitions = BTreeMap::new();
        for (part, rows_in_part) in by_partition {
            let winners = if operation == WriteOperation::Insert && self.bucketed().is_none() {
                // Plain inserts append every row (Hudi does not combine before insert by default). Every
                // partition takes this branch and each row is in one partition: its key can be moved.
                rows_in_part
                    .iter()
                    .map(|&row| {
                        (
                            std::mem::take(&mut keys[row]),
                            Winner {
                                row,
                                delete: deletes[row],
                                force: forced[row],
                            },
                        )
                    })
                    .collect()
            } else {
                let folded = fold_incoming(
                    &keys,
                    &deletes,
                    &forced,
                    &rows_in_part,
                    ordering.as_ref().map(|(col, cmp)| (col, *cmp)),
                );
                counts.deduped += folded.superseded;
                folded.winners
            };
            partitions.insert(part, winners);
        }
        Ok(PreparedWrite {
            operation,
            batch,
            partitions,
            tombstones: effective_tombstones,
            shadow_tombstones,
            counts,
            rejected,
        })
    }

    fn bucketed(&self) -> Option<&BucketIndexConfig> {
        self.bucket.as_ref()
    }

    /// Starts an instant: re-reads and re-checks `hoodie.properties`, rolls back failed writes (this is the
    /// single writer, so any pending commit is a failed one), and creates `<t>.commit.requested` and
    /// `<t>.inflight` for a new instant `t` strictly greater than every instant on the timeline.
    pub async fn begin(&self) -> Result<InstantTime, WriteError> {
        let storage = self.storage.as_ref();
        let props = TableProperties::load(storage).await?;
        props.validate_writable()?;
        let keygen_config = KeyGenConfig::from_properties(&self.config.properties)?;
        check_compatible(storage, &props, &self.config, &keygen_config)?;
        let timeline = Timeline::load(storage).await?;
        let action = props.write_action();
        for pending in timeline.pending() {
            if pending.action != action {
                return Err(table_err(
                    storage,
                    format!(
                        "pending {} instant {} from another engine; finish or roll it back first",
                        pending.action, pending.time
                    ),
                ));
            }
            rollback_failed(storage, &pending.time).await?;
        }
        let instant = InstantTime::next_after(self.clock.as_ref(), timeline.last_instant_time());
        create_pending_instant(storage, &instant, action).await?;
        Ok(instant)
    }

    /// Writes the base files of `prepared` for `instant` (markers first) and returns one write stat per file.
    pub async fn write_files(
        &self,
        instant: &InstantTime,
        prepared: &PreparedWrite,
    ) -> Result<(Vec<WriteStat>, WriteCounts), WriteError> {
        self.write_files_on(instant, prepared, None).await
    }

    /// As [`TableWriter::write_files`], with the active timeline the caller loaded instead of loading it again.
    /// `timeline`'s latest completed commit must be the instant's base (the one its begin reported) and no
    /// replacecommit or compaction may be pending on it, so that it shows what a fresh load would.
    pub async fn write_files_with_timeline(
        &self,
        instant: &InstantTime,
        prepared: &PreparedWrite,
        timeline: &Timeline,
    ) -> Result<(Vec<WriteStat>, WriteCounts), WriteError> {
        self.write_files_on(instant, prepared, Some(timeline)).await
    }

    /// Hands the writer's view the metadata of a completed commit the caller read (a window member reads its
    /// window's commit), so that the next write applies it without reading it again.
    pub async fn prime_commit(
        &self,
        time: InstantTime,
        meta: crate::table::commit::CommitMetadata,
    ) {
        self.view.lock().await.prime(time, meta);
    }

    /// The latest file slices as the writer's cached view last synced them (`None` while cold): what a bucketed
    /// write merges into, for checks against [`crate::table::fs_view::latest_file_slices`].
    pub async fn cached_file_slices(&self) -> Option<Vec<FileSlice>> {
        let view = self.view.lock().await;
        view.is_warm().then(|| view.slices().cloned().collect())
    }

    async fn write_files_on(
        &self,
        instant: &InstantTime,
        prepared: &PreparedWrite,
        timeline: Option<&Timeline>,
    ) -> Result<(Vec<WriteStat>, WriteCounts), WriteError> {
        let mut view = self.view.lock().await;
        let result = self
            .write_files_viewed(instant, prepared, timeline, &mut view)
            .await;
        if result.is_err() {
            // Whatever failed may have been the view being behind the table (a file it named is gone): the next
            // batch lists the table again.
            view.invalidate();
        }
        result
    }

    async fn write_files_viewed(
        &self,
        instant: &InstantTime,
        prepared: &PreparedWrite,
        timeline: Option<&Timeline>,
        view: &mut FileSystemView,
    ) -> Result<(Vec<WriteStat>, WriteCounts), WriteError> {
        let storage = self.storage.as_ref();
        let mut counts = prepared.counts;
        let mut stats = Vec::new();
        let mut file_index = 0usize;
        let Some(index) = self.bucketed() else {
            if !prepared.tombstones.is_empty() || !prepared.shadow_tombstones.is_empty() {
                return Err(WriteError::Config {
                    reason: "Kafka tombstones need an index to find their records (hoodie.index.type=BUCKET)".into(),
                });
            }
            for (partition, winners) in &prepared.partitions {
                let rows: Vec<(&str, usize)> = winners
                    .iter()
                    .filter(|(_, w)| !w.delete)
                    .map(|(k, w)| (k.as_str(), w.row))
                    .collect();
                counts.delete_misses += (winners.len() - rows.len()) as u64;
                counts.inserted += rows.len() as u64;
                if rows.is_empty() {
                    continue;
                }
                self.ensure_partition_metadata(instant, partition).await?;
                stats.extend(
                    self.write_new_file_groups(
                        instant,
                        partition,
                        &prepared.batch,
                        &rows,
                        &mut file_index,
                    )
                    .await?,
                );
            }
            return Ok((stats, counts));
        };
        let loaded;
        let timeline = match timeline {
            Some(timeline) => timeline,
            None => {
                loaded = Timeline::load(storage).await?;
                &loaded
            }
        };
        view.sync(storage, timeline).await?;
        view.saw_pending(instant);
        let view = &*view;
        let mut groups: BTreeMap<(String, u32), Option<&FileSlice>> = BTreeMap::new();
        for slice in view.slices() {
            if let Some(b) = bucket::bucket_id_from_file_id(&slice.file_id) {
                let entry = groups
                    .entry((slice.partition_path.clone(), b))
                    .or_insert(None);
                if let Some(other) = entry {
                    return Err(table_err(
                        storage,
                        format!(
                            "bucket {b} of partition {:?} has more than one file group ({} and {}); the table is corrupt",
                            slice.partition_path, other.file_name, slice.file_name
                        ),
                    ));
                }
                *entry = Some(slice);
            }
        }
        // Work per (partition, bucket): folded winners, then tombstones in every partition whose bucket file
        // may hold the key (footer min/max and bloom filter prune the others).
        let mut work: BTreeMap<(String, u32), Vec<(&str, Winner)>> = BTreeMap::new();
        for (partition, winners) in &prepared.partitions {
            for (key, w) in winners {
                work.entry((partition.clone(), index.bucket_id(key)))
                    .or_default()
                    .push((key.as_str(), *w));
            }
        }
        let mut footers: HashMap<String, crate::base_file::reader::BaseFileFooter> = HashMap::new();
        // Lookups by hash, so that many tombstones in one bucket (adversarial keys) stay linear: which keys
        // each (partition, bucket) already has, and which stored file groups each bucket has.
        let mut queued: std::collections::HashSet<(&str, u32, &str)> = prepared
            .partitions
            .iter()
            .flat_map(|(partition, winners)| {
                winners
                    .iter()
                    .map(move |(key, _)| (partition.as_str(), index.bucket_id(key), key.as_str()))
            })
            .collect();
        let mut stored_by_bucket: HashMap<u32, Vec<(&String, &FileSlice)>> = HashMap::new();
        for ((partition, gb), slice) in &groups {
            if let Some(slice) = slice {
                stored_by_bucket
                    .entry(*gb)
                    .or_default()
                    .push((partition, *slice));
            }
        }
        for key in prepared
            .tombstones
            .iter()
            .chain(&prepared.shadow_tombstones)
        {
            let b = index.bucket_id(key);
            for &(partition, slice) in stored_by_bucket.get(&b).into_iter().flatten() {
                if !queued.insert((partition.as_str(), b, key.as_str())) {
                    continue;
                }
                let entry = work.entry((partition.clone(), b)).or_default();
                let path = slice.path();
                if !footers.contains_key(&path) && slice.log_files.is_empty() {
                    let footer = crate::base_file::reader::read_footer_from_storage(
                        storage, &path, slice.size,
                    )
                    .await?;
                    footers.insert(path.clone(), footer);
                }
                // A merge-on-read slice with logs may hold the key in a log: only a base-only slice is
                // pruned by its footer.
                if let Some(footer) = footers.get(&path) {
                    if slice.log_files.is_empty() && !footer_may_contain(footer, key)? {
                        continue;
                    }
                }
                entry.push((
                    key.as_str(),
                    Winner {
                        row: super::merge::TOMBSTONE_ROW,
                        delete: true,
                        force: true,
                    },
                ));
            }
        }
        let mut tombstoned: std::collections::HashSet<String> = std::collections::HashSet::new();
        for ((partition, b), winners) in work {
            if winners.is_empty() {
                continue;
            }
            let existing = groups.get(&(partition.clone(), b)).copied().flatten();
            if existing.is_none() && winners.iter().all(|(_, w)| w.delete) {
                // Deletes of keys in a bucket that has no file group: nothing stored to delete.
                counts.delete_misses += winners
                    .iter()
                    .filter(|(_, w)| w.row != super::merge::TOMBSTONE_ROW)
                    .count() as u64;
                continue;
            }
            if let (true, Some(slice)) = (self.properties.is_merge_on_read(), existing) {
                let (stat, applied) = self
                    .append_bucket(
                        instant,
                        &partition,
                        slice,
                        &prepared.batch,
                        &winners,
                        &mut file_index,
                        &mut counts,
                    )
                    .await?;
                tombstoned.extend(applied);
                stats.extend(stat);
                continue;
            }
            self.ensure_partition_metadata(instant, &partition).await?;
            let (stat, applied) = self
                .merge_bucket(
                    instant,
                    &partition,
                    b,
                    existing,
                    &prepared.batch,
                    &winners,
                    &mut file_index,
                    &mut counts,
                )
                .await?;
            tombstoned.extend(applied);
            stats.extend(stat);
        }
        for key in &prepared.tombstones {
            if tombstoned.contains(key) {
                counts.deleted += 1;
            } else {
                counts.delete_misses += 1;
            }
        }
        Ok((stats, counts))
    }

    async fn ensure_partition_metadata(
        &self,
        instant: &InstantTime,
        partition: &str,
    ) -> Result<(), WriteError> {
        let known = |p: &str| {
            self.known_partitions
                .lock()
                .map(|k| k.contains(p))
                .unwrap_or(false)
        };
        if known(partition) {
            return Ok(());
        }
        let path = metafile_path(partition);
        if self.storage.head(&path).await?.is_none() {
            let meta = PartitionMetadata::for_partition(partition, instant.clone());
            self.storage
                .put_if_absent(&path, Bytes::from(meta.to_bytes()))
                .await?;
        }
        if let Ok(mut k) = self.known_partitions.lock() {
            if k.len() >= MAX_KNOWN_PARTITIONS {
                k.clear();
            }
            k.insert(partition.to_string());
        }
        Ok(())
    }

    /// New file groups for inserts (no index), split at `hoodie.parquet.max.file.size`.
    async fn write_new_file_groups(
        &self,
        instant: &InstantTime,
        partition: &str,
        batch: &RecordBatch,
        rows: &[(&str, usize)],
        file_index: &mut usize,
    ) -> Result<Vec<WriteStat>, WriteError> {
        let mut stats = Vec::new();
        let mut start = 0;
        while start < rows.len() {
            let file_id = crate::table::file_name::new_file_id();
            let file_name = base_file_name(&file_id, *file_index, instant)?;
            self.put_marker(instant, partition, &file_name, MarkerType::Create)
                .await?;
            let mut writer = self.new_file_writer()?;
            let mut seq = 0u64;
            let mut end = start;
            while end < rows.len() {
                // Size the next chunk from the bytes per row so far, so that files end close to the limit.
                let size = writer.estimated_size() as u64;
                let chunk = match size.checked_div((end - start) as u64) {
                    None => FIRST_CHUNK_ROWS,
                    Some(per_row) => {
                        let room = self.config.max_file_size.saturating_sub(size);
                        ((room / per_row.max(1)) as usize).clamp(MIN_CHUNK_ROWS, INSERT_CHUNK_ROWS)
                    }
                };
                let chunk_end = (end + chunk).min(rows.len());
                let sources: Vec<Source> = rows[end..chunk_end]
                    .iter()
                    .map(|(_, r)| Source::Insert(*r))
                    .collect();
                let keys: Vec<&str> = rows[end..chunk_end].iter().map(|(k, _)| *k).collect();
                let out = self.build_output(
                    instant,
                    partition,
                    &file_name,
                    *file_index,
                    &mut seq,
                    None,
                    batch,
                    &sources,
                    &keys,
                )?;
                writer.write(&out)?;
                end = chunk_end;
                if writer.estimated_size() as u64 >= self.config.max_file_size {
                    break;
                }
            }
            let written = writer.finish()?;
            let inserts = (end - start) as u64;
            stats.push(
                self.put_base_file(
                    partition, &file_id, &file_name, written, None, inserts, 0, 0,
                )
                .await?,
            );
            *file_index += 1;
            start = end;
        }
        Ok(stats)
    }

    /// Merges a bucket's winners into its file group (or creates the group) and writes the new slice.
    #[allow(clippy::too_many_arguments)]
    async fn merge_bucket(
        &self,
        instant: &InstantTime,
        partition: &str,
        bucket_id: u32,
        existing: Option<&FileSlice>,
        batch: &RecordBatch,
        winners: &[(&str, Winner)],
        file_index: &mut usize,
        counts: &mut WriteCounts,
    ) -> Result<(Option<WriteStat>, Vec<String>), WriteError> {
        let stored = match existing {
            Some(slice) => {
                let path = join_path(&[partition, &slice.file_name]);
                let data = self.storage.get(&path).await?;
                let (_, batches) = read_base_file(data)?;
                let stored = concat_batches(
                    &self.schema.file,
                    &conform_batches(&self.schema.file, batches)?,
                )
                .map_err(|source| WriteError::Arrow {
                    context: "concatenate stored file",
                    source,
                })?;
                Some(stored)
            }
            None => None,
        };
        let stored_keys: Vec<&str> = match &stored {
            Some(s) => {
                let col = s.column(2).as_string::<i32>();
                (0..col.len()).map(|i| col.value(i)).collect()
            }
            None => Vec::new(),
        };
        let ordering = self.ordering.map(|(idx, cmp)| {
            let meta_offset = META_COLUMNS.len();
            (
                stored
                    .as_ref()
                    .map(|s| s.column(meta_offset + idx).clone())
                    .unwrap_or_else(|| batch.column(idx).clone()),
                batch.column(idx).clone(),
                cmp,
            )
        });
        let plan = plan_file_group(
            &stored_keys,
            winners,
            ordering.as_ref().map(|(s, i, c)| (s, i, *c)),
        );
        counts.add_plan(&plan);
        let changed =
            plan.updated + plan.inserted + plan.deleted + plan.tombstone_deletes.len() as u64;
        if changed == 0 {
            // Nothing to write for this group (only ignored versions or deletes of absent keys).
            return Ok((None, Vec::new()));
        }
        let (file_id, prev_commit, marker) = match existing {
            Some(slice) => (
                slice.file_id.clone(),
                Some(slice.base_instant.to_string()),
                MarkerType::Merge,
            ),
            None => (
                bucket::new_bucket_file_id(bucket_id),
                None,
                MarkerType::Create,
            ),
        };
        let file_name = base_file_name(&file_id, *file_index, instant)?;
        self.put_marker(instant, partition, &file_name, marker)
            .await?;
        let key_of_row: HashMap<usize, &str> = winners.iter().map(|(k, w)| (w.row, *k)).collect();
        let keys: Vec<&str> = plan
            .rows
            .iter()
            .map(|s| match s {
                Source::Stored(r) | Source::Update { stored: r, .. } => stored_keys[*r],
                Source::Insert(r) => key_of_row.get(r).copied().unwrap_or_default(),
            })
            .collect();
        let mut seq = 0u64;
        let out = self.build_output(
            instant,
            partition,
            &file_name,
            *file_index,
            &mut seq,
            stored.as_ref(),
            batch,
            &plan.rows,
            &keys,
        )?;
        let mut writer = self.new_file_writer()?;
        writer.write(&out)?;
        let written = writer.finish()?;
        let stat = self
            .put_base_file(
                partition,
                &file_id,
                &file_name,
                written,
                prev_commit,
                plan.inserted,
                plan.updated,
                plan.deleted + plan.tombstone_deletes.len() as u64,
            )
            .await?;
        *file_index += 1;
        Ok((Some(stat), plan.tombstone_deletes))
    }

    /// A writer for one base file of this table (also used by clustering, which writes outside
    /// [`TableWriter::write_files`]).
    pub(crate) fn new_file_writer(&self) -> Result<BaseFileWriter, WriteError> {
        Ok(BaseFileWriter::try_new(
            self.schema.file.clone(),
            self.schema.parquet.clone(),
            self.schema.avro_with_meta_json.clone(),
            &self.config.base_file,
        )?)
    }

    /// Checks a batch read from a stored base file against the table's file schema and relabels it with
    /// that schema (clustering rewrites stored files).
    pub(crate) fn conform_stored_batch(
        &self,
        batch: RecordBatch,
    ) -> Result<RecordBatch, WriteError> {
        let mut conformed = conform_batches(&self.schema.file, vec![batch])?;
        conformed.pop().ok_or_else(|| WriteError::Data {
            reason: "conforming a stored batch returned no batch".into(),
        })
    }

    /// Builds the output rows of one file: meta columns (kept for stored rows, new for written ones) and data
    /// columns gathered from the stored file and the incoming batch without re-sorting.
    #[allow(clippy::too_many_arguments)]
    fn build_output(
        &self,
        instant: &InstantTime,
        partition: &str,
        file_name: &str,
        file_index: usize,
        seq: &mut u64,
        stored: Option<&RecordBatch>,
        incoming: &RecordBatch,
        rows: &[Source],
        keys: &[&str],
    ) -> Result<RecordBatch, WriteError> {
        let t = instant.as_str();
        let n = rows.len();
        // Written straight into the column buffers: no string per row.
        let mut commit_time = StringBuilder::with_capacity(n, n * t.len());
        let mut seqno = StringBuilder::with_capacity(n, n * (t.len() + 12));
        let stored_meta = stored.map(|s| {
            (
                s.column(0).as_string::<i32>(),
                s.column(1).as_string::<i32>(),
            )
        });
        let prefix = format!("{t}_{file_index}_");
        for src in rows {
            match (src, &stored_meta) {
                (Source::Stored(r), Some((ct, sq))) => {
                    commit_time.append_value(ct.value(*r));
                    seqno.append_value(sq.value(*r));
                }
                _ => {
                    commit_time.append_value(t);
                    // Writing into a column buffer cannot fail.
                    let _ = write!(seqno, "{prefix}{seq}");
                    seqno.append_value("");
                    *seq += 1;
                }
            }
        }
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(commit_time.finish()),
            Arc::new(seqno.finish()),
            Arc::new(StringArray::from_iter_values(keys.iter())),
            Arc::new(StringArray::from_iter_values(std::iter::repeat_n(
                partition, n,
            ))),
            Arc::new(StringArray::from_iter_values(std::iter::repeat_n(
                file_name, n,
            ))),
        ];
        let meta_offset = META_COLUMNS.len();
        let indices: Vec<(usize, usize)> = rows
            .iter()
            .map(|s| match s {
                Source::Stored(r) => (0, *r),
                Source::Update { incoming, .. } | Source::Insert(incoming) => (1, *incoming),
            })
            .collect();
        for col in 0..self.schema.data.fields().len() {
            let inc = incoming.column(col);
            let array = match stored {
                Some(s) => {
                    let st = s.column(meta_offset + col);
                    interleave(&[st.as_ref(), inc.as_ref()], &indices).map_err(|source| {
                        WriteError::Arrow {
                            context: "merge columns",
                            source,
                        }
                    })?
                }
                None => {
                    let idx = arrow_array::UInt32Array::from_iter_values(
                        indices.iter().map(|(_, r)| *r as u32),
                    );
                    take(inc.as_ref(), &idx, None).map_err(|source| WriteError::Arrow {
                        context: "gather rows",
                        source,
                    })?
                }
            };
            columns.push(array);
        }
        RecordBatch::try_new(self.schema.file.clone(), columns).map_err(|source| {
            WriteError::Arrow {
                context: "assemble base file rows",
                source,
            }
        })
    }

    async fn put_marker(
        &self,
        instant: &InstantTime,
        partition: &str,
        file_name: &str,
        marker: MarkerType,
    ) -> Result<(), WriteError> {
        let path = marker_path(instant, partition, file_name, marker);
        crate::write::lease::check()?;
        self.storage.put(&path, Bytes::new()).await?;
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    async fn put_base_file(
        &self,
        partition: &str,
        file_id: &str,
        file_name: &str,
        written: WrittenBaseFile,
        prev_commit: Option<String>,
        inserts: u64,
        updates: u64,
        deletes: u64,
    ) -> Result<WriteStat, WriteError> {
        let path = join_path(&[partition, file_name]);
        let size = written.data.len() as u64;
        crate::write::lease::check()?;
        if crate::write::lease::in_window() {
            // Under a window, a name is never reused: another member's file of the same group is not replaced.
            if self.storage.put_if_absent(&path, written.data).await? == PutOutcome::AlreadyExists {
                return Err(WriteError::InstantExists {
                    instant: crate::write::lease::instant().unwrap_or_default(),
                    file: path,
                });
            }
        } else {
            self.storage.put(&path, written.data).await?;
        }
        crate::write::lease::check_after_upload(self.storage.as_ref(), &path).await?;
        let mut stat = WriteStat::new(file_id, partition, &path);
        if let Some(prev) = prev_commit {
            stat.prev_commit = prev;
        }
        stat.num_writes = written.num_rows as i64;
        stat.num_inserts = inserts as i64;
        stat.num_update_writes = updates as i64;
        stat.num_deletes = deletes as i64;
        stat.total_write_bytes = size as i64;
        stat.file_size_in_bytes = size as i64;
        Ok(stat)
    }

    /// Completes `instant`: verifies every file of the stats exists with its size, writes `<t>.commit`
    /// with one atomic create-if-absent, then deletes the instant's markers.
    pub async fn commit(
        &self,
        instant: &InstantTime,
        operation: WriteOperation,
        stats: Vec<WriteStat>,
        extra_metadata: BTreeMap<String, String>,
    ) -> Result<CommitMetadata, WriteError> {
        let storage = self.storage.as_ref();
        crate::commit::verify_files(storage, instant, &stats).await?;
        let op = match operation {
            WriteOperation::Insert => OperationType::Insert,
            WriteOperation::Upsert => OperationType::Upsert,
            WriteOperation::Delete => OperationType::Delete,
        };
        let mut commit = CommitMetadata::new(op);
        for stat in stats {
            commit.add_write_stat(stat);
        }
        commit
            .extra_metadata
            .insert("schema".into(), self.schema.avro_json.clone());
        commit.extra_metadata.extend(extra_metadata);
        let file = Instant::new(
            instant.clone(),
            self.properties.write_action(),
            State::Completed,
        )
        .file_name();
        let path = format!(".hoodie/{file}");
        let body = Bytes::from(commit.to_json_pretty()?);
        if storage.put_if_absent(&path, body.clone()).await? == PutOutcome::AlreadyExists {
            let existing = storage.get(&path).await?;
            if existing != body {
                return Err(WriteError::InstantExists {
                    instant: instant.to_string(),
                    file: path,
                });
            }
        }
        delete_markers(storage, instant).await?;
        Ok(commit)
    }
}

/// Creates `<t>.commit.requested` and `<t>.inflight` (copy-on-write; `<t>.deltacommit.requested` and
/// `<t>.deltacommit.inflight` for merge-on-read), all empty, each with create-if-absent: an existing file
/// means another writer took the same instant.
pub(crate) async fn create_pending_instant(
    storage: &dyn Storage,
    instant: &InstantTime,
    action: Action,
) -> Result<(), WriteError> {
    for state in [State::Requested, State::Inflight] {
        let file = Instant::new(instant.clone(), action, state).file_name();
        let path = format!(".hoodie/{file}");
        if storage.put_if_absent(&path, Bytes::new()).await? == PutOutcome::AlreadyExists {
            return Err(WriteError::InstantExists {
                instant: instant.to_string(),
                file: path,
            });
        }
    }
    Ok(())
}

/// Whether a base file may hold `key`: inside its min/max key range (Java order) and in its bloom filter.
fn footer_may_contain(
    footer: &crate::base_file::reader::BaseFileFooter,
    key: &str,
) -> Result<bool, WriteError> {
    use crate::base_file::writer::java_string_cmp;
    use std::cmp::Ordering;
    if footer.num_rows == 0 {
        return Ok(false);
    }
    if let (Some(min), Some(max)) = (footer.min_record_key(), footer.max_record_key()) {
        if java_string_cmp(key, min) == Ordering::Less
            || java_string_cmp(key, max) == Ordering::Greater
        {
            return Ok(false);
        }
    }
    Ok(match footer.bloom_filter()? {
        Some(bloom) => bloom.might_contain(key.as_bytes()),
        None => true,
    })
}

/// `<fileId>_<task>-<stage>-0_<t>.parquet`: Hudi's write token shape with the file's index in the instant as task,
/// and as stage the window member's number (0 outside a window): members of one window write the same file
/// group under the same instant, and their files must not share a name.
fn base_file_name(
    file_id: &str,
    file_index: usize,
    instant: &InstantTime,
) -> Result<String, WriteError> {
    let token = WriteToken::new(file_index as u64, crate::write::lease::stage(), 0);
    Ok(BaseFileName::new_parquet(file_id, &token, instant.clone())?.file_name())
}

/// Checks that batches read from a stored base file have the table's file schema.
fn conform_batches(
    schema: &SchemaRef,
    batches: Vec<RecordBatch>,
) -> Result<Vec<RecordBatch>, WriteError> {
    batches
        .into_iter()
        .map(|b| {
            if b.schema().fields().len() != schema.fields().len() {
                return Err(WriteError::Data {
                    reason: format!(
                        "stored base file has {} columns, the table schema {}",
                        b.schema().fields().len(),
                        schema.fields().len()
                    ),
                });
            }
            for (stored, expected) in b.schema().fields().iter().zip(schema.fields()) {
                if stored.name() != expected.name() || !stored.data_type().equals_datatype(expected.data_type()) {
                    return Err(WriteError::Data {
                        reason: format!(
                            "stored column {} {} differs from table column {} {} (schema evolution is not supported yet)",
                            stored.name(),
                            stored.data_type(),
                            expected.name(),
                            expected.data_type()
                        ),
                    });
                }
            }
            RecordBatch::try_new(schema.clone(), b.columns().to_vec()).map_err(|source| WriteError::Arrow {
                context: "conform stored batch",
                source,
            })
        })
        .collect()
}

/// Rolls back a failed commit: its data files first (named by its markers: a writer writes the marker before
/// the file), then its markers, then its `.inflight` and `.commit.requested`, so that a crash half-way leaves
/// a pending instant that the next writer rolls back again. The time is retired first; a file uploaded
/// after the marker listing (a zombie writer) is removed by the scheduled sweep of retired times, and until
/// then archival stays below the time. No listing of the table: the cost follows the failed write.
pub(crate) async fn rollback_failed(
    storage: &dyn Storage,
    instant: &InstantTime,
) -> Result<(), WriteError> {
    // Retire the time first, so that even a rollback that stops half-way never sees its time reused.
    let retired = format!("{}{instant}", crate::table::timeline::RETIRED_DIR);
    storage.put(&retired, Bytes::new()).await?;
    let dir = format!("{}/", crate::table::file_name::marker_dir(instant));
    let markers = storage.list(&dir).await?;
    let files = files_named_by_markers(storage, instant, &markers, &BTreeSet::new()).await?;
    storage.delete_many(&files).await?;
    let mut rest: Vec<String> = markers.into_iter().map(|m| m.path).collect();
    let window = storage
        .list(&crate::commit::window::window_dir(instant))
        .await?;
    rest.extend(window.into_iter().map(|o| o.path));
    // Both actions' pending files: the instant is a commit on copy-on-write tables, a deltacommit on
    // merge-on-read ones (absent keys cost nothing in the one request).
    for action in [Action::Commit, Action::DeltaCommit] {
        for state in [State::Inflight, State::Requested] {
            let file = Instant::new(instant.clone(), action, state).file_name();
            rest.push(format!(".hoodie/{file}"));
        }
    }
    rest.push(crate::table::file_name::heartbeat_path(instant));
    // Markers before the instant files (one request on S3; absent keys are fine).
    storage.delete_many(&rest).await?;
    tracing::info!(instant = %instant, files = files.len(), "rolled back failed instant");
    Ok(())
}

/// The data files written by `instant` that its markers among `markers` name, except those in `keep`: a base
/// file by the instant in its name, a log file by the instant in its first block's header (a marker may name
/// a log version another instant took first; see `append.rs`), whatever a damaged marker may name.
pub(crate) async fn files_named_by_markers(
    storage: &dyn Storage,
    instant: &InstantTime,
    markers: &[crate::storage::ObjectMeta],
    keep: &BTreeSet<String>,
) -> Result<Vec<String>, WriteError> {
    let mut files = Vec::new();
    for marker in markers {
        let Ok(parsed) = crate::table::file_name::Marker::parse(&marker.path) else {
            continue;
        };
        let path = parsed.data_file_path();
        if parsed.instant_time != *instant || keep.contains(&path) || files.contains(&path) {
            continue;
        }
        let ours = BaseFileName::parse(&parsed.data_file_name)
            .is_ok_and(|name| name.instant_time == *instant)
            || (crate::log_file::LogFileName::parse(&parsed.data_file_name).is_ok()
                && !crate::mutation::is_disabled(
                    crate::mutation::Mutation::RollbackDeletesLogFiles,
                )
                && log_file_written_by(storage, &path, instant).await?);
        if ours {
            files.push(path);
        }
    }
    Ok(files)
}

/// Whether the log file at `path` holds blocks of `instant` (its first block's INSTANT_TIME header). A log
/// file is named after its slice, not its writer, and a marker may name a version another writer took
/// first (see `append.rs`): only the header proves whose it is. An absent or unreadable file is not ours.
async fn log_file_written_by(
    storage: &dyn Storage,
    path: &str,
    instant: &InstantTime,
) -> Result<bool, WriteError> {
    Ok(log_file_instant(storage, path).await?.as_ref() == Some(instant))
}

/// Deletes every data file of the table written by an instant `doomed` picks, found by one listing of the
/// whole table (which also covers files whose marker was never written): base files by the instant in their
/// name, merge-on-read log files by the instant in their first block's header (a log is named after its
/// slice, so each one is read: this runs only in the scheduled sweep, while some time is retired).
pub(crate) async fn delete_data_files(
    storage: &dyn Storage,
    doomed: impl Fn(&InstantTime) -> bool,
) -> Result<(), WriteError> {
    for obj in storage.list("").await? {
        if obj.path.starts_with(".hoodie/") {
            continue;
        }
        let name = obj.path.rsplit('/').next().unwrap_or(&obj.path);
        if let Ok(parsed) = BaseFileName::parse(name) {
            if doomed(&parsed.instant_time) {
                storage.delete(&obj.path).await?;
            }
        } else if crate::log_file::LogFileName::parse(name).is_ok() {
            if let Some(instant) = log_file_instant(storage, &obj.path).await? {
                if doomed(&instant) {
                    storage.delete(&obj.path).await?;
                }
            }
        }
    }
    Ok(())
}

/// The INSTANT_TIME header of the first block of the log file at `path` (`None`: absent or unreadable).
async fn log_file_instant(
    storage: &dyn Storage,
    path: &str,
) -> Result<Option<InstantTime>, WriteError> {
    let bytes = match storage.get(path).await {
        Ok(b) => b,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let Ok(blocks) = crate::log_file::block::read_blocks(path, &bytes) else {
        tracing::warn!(path, "unreadable log file left in place");
        return Ok(None);
    };
    Ok(blocks
        .first()
        .and_then(|b| b.header.get(&crate::log_file::HeaderKey::InstantTime))
        .and_then(|t| InstantTime::parse(t).ok()))
}

pub(crate) async fn delete_markers(
    storage: &dyn Storage,
    instant: &InstantTime,
) -> Result<(), WriteError> {
    let prefix = format!(".hoodie/.temp/{instant}/");
    for obj in storage.list(&prefix).await? {
        storage.delete(&obj.path).await?;
    }
    Ok(())
}
